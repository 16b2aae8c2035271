//! Bindings of the composed shape operations (`ops/compose.rs`): splitting, repeating, moving
//! dimensions, stacking, padding, triangles and diagonals, with PyTorch's argument spellings.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PySequence, PyTuple};

use super::convert::{scalar, shape_args};
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{expect_tensor, tensor_list, PyTensor};
use crate::error::Error;
use crate::ops::MeshIndexing;
use crate::tensor::dtype::Scalar;
use crate::Tensor;

/// A tuple of new tensor objects.
fn tensor_tuple<'py>(py: Python<'py>, ts: Vec<Tensor>) -> PyResult<Bound<'py, PyTuple>> {
    let objs = ts.into_iter().map(|t| PyTensor::wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, objs)
}

/// An int or a sequence of ints, as PyTorch's `int or tuple of ints` arguments.
enum IntOrList {
    One(isize),
    Many(Vec<isize>),
}

fn int_or_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<IntOrList> {
    if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")? && !obj.is_instance_of::<PySequence>() {
        if let Ok(i) = obj.extract::<isize>() {
            return Ok(IntOrList::One(i));
        }
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().inner;
        if t.ndim() == 0 {
            return Ok(IntOrList::One(t.item_scalar()?.as_i64() as isize));
        }
        return Ok(IntOrList::Many(t.to_vec::<i64>().map_err(PyErr::from)?.iter().map(|&v| v as isize).collect()));
    }
    obj.extract::<Vec<isize>>().map(IntOrList::Many).map_err(|_| {
        PyErr::from(Error::Type(format!(
            "{what} must be an int or a sequence of ints, got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        )))
    })
}

fn non_negative(v: isize, what: &str) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| PyErr::from(Error::value(format!("{what} must be non-negative, got {v}"))))
}

fn dims_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<isize>> {
    Ok(match int_or_list(obj, what)? {
        IntOrList::One(d) => vec![d],
        IntOrList::Many(ds) => ds,
    })
}

#[pymethods]
impl PyTensor {
    /// Pieces of `split_size_or_sections` elements along `dim` (an int: equal pieces, the last
    /// shorter; a list: those sizes, which must add up to the dimension). Views.
    ///
    /// >>> import tapegrad as tg
    /// >>> [p.tolist() for p in tg.arange(5).split(2)]
    /// [[0, 1], [2, 3], [4]]
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        split_size_or_sections: &Bound<'py, PyAny>,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let pieces = match int_or_list(split_size_or_sections, "split_size_or_sections")? {
            IntOrList::One(n) => {
                let n = non_negative(n, "split_size")?;
                enter(py, Cost::Metadata, || self.inner.split(n, dim))?
            }
            IntOrList::Many(sizes) => {
                let sizes = sizes.iter().map(|&s| non_negative(s, "split_sizes")).collect::<PyResult<Vec<_>>>()?;
                enter(py, Cost::Metadata, || self.inner.split_with_sizes(&sizes, dim))?
            }
        };
        tensor_tuple(py, pieces)
    }

    /// At most `chunks` equal pieces along `dim` (each `ceil(n / chunks)` long). Views.
    ///
    /// >>> import tapegrad as tg
    /// >>> [p.tolist() for p in tg.arange(5).chunk(3)]
    /// [[0, 1], [2, 3], [4]]
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk<'py>(&self, py: Python<'py>, chunks: isize, dim: isize) -> PyResult<Bound<'py, PyTuple>> {
        let chunks = usize::try_from(chunks).unwrap_or(0);
        tensor_tuple(py, enter(py, Cost::Metadata, || self.inner.chunk(chunks, dim))?)
    }

    /// `indices_or_sections` pieces along `dim`: an int gives that many nearly equal pieces, a
    /// list gives the split points. Views.
    ///
    /// >>> import tapegrad as tg
    /// >>> [p.tolist() for p in tg.arange(7).tensor_split(3)]
    /// [[0, 1, 2], [3, 4], [5, 6]]
    /// >>> [p.tolist() for p in tg.arange(5).tensor_split([1, 4])]
    /// [[0], [1, 2, 3], [4]]
    #[pyo3(signature = (indices_or_sections, dim=0))]
    fn tensor_split<'py>(
        &self,
        py: Python<'py>,
        indices_or_sections: &Bound<'py, PyAny>,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let pieces = match int_or_list(indices_or_sections, "indices_or_sections")? {
            IntOrList::One(n) => {
                let n = usize::try_from(n).unwrap_or(0);
                enter(py, Cost::Metadata, || self.inner.tensor_split_sections(n, dim))?
            }
            IntOrList::Many(points) => enter(py, Cost::Metadata, || self.inner.tensor_split_indices(&points, dim))?,
        };
        tensor_tuple(py, pieces)
    }

    /// Every slice along `dim`, that dimension removed. Views.
    ///
    /// >>> import tapegrad as tg
    /// >>> [r.tolist() for r in tg.tensor([[1, 2], [3, 4]]).unbind(1)]
    /// [[1, 3], [2, 4]]
    #[pyo3(signature = (dim=0))]
    fn unbind<'py>(&self, py: Python<'py>, dim: isize) -> PyResult<Bound<'py, PyTuple>> {
        tensor_tuple(py, enter(py, Cost::Metadata, || self.inner.unbind(dim))?)
    }

    /// The slice at `index` along `dim`, that dimension removed. A view.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([[1, 2], [3, 4]]).select(1, -1)
    /// tensor([2, 4])
    fn select(&self, py: Python<'_>, dim: isize, index: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.select(dim, index))
    }

    /// The tensor repeated along each dimension (`sizes` may add leading dimensions). A copy.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1, 2]).repeat(2, 2)
    /// tensor([[1, 2, 1, 2],
    ///         [1, 2, 1, 2]])
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let sizes = shape_args(sizes)?.iter().map(|&s| non_negative(s, "repeats")).collect::<PyResult<Vec<_>>>()?;
        let n = self.inner.numel().saturating_mul(sizes.iter().product());
        enter_tensor(py, Cost::Elements(n), || self.inner.repeat(&sizes))
    }

    /// NumPy's `tile`: `repeat`, with `dims` padded by leading ones when shorter than the shape.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([[1, 2]]).tile((2,))
    /// tensor([[1, 2, 1, 2]])
    fn tile(&self, py: Python<'_>, dims: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let reps = dims_of(dims, "dims")?.iter().map(|&s| non_negative(s, "dims")).collect::<PyResult<Vec<_>>>()?;
        let n = self.inner.numel().saturating_mul(reps.iter().product());
        enter_tensor(py, Cost::Elements(n), || self.inner.tile(&reps))
    }

    /// Each element repeated `repeats` times along `dim` (of the flattened tensor when `dim` is
    /// None). `repeats` is an int or a 1-D int64 tensor of one count per element (or one for all);
    /// `output_size`, when given, must be the total.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1, 2]).repeat_interleave(2)
    /// tensor([1, 1, 2, 2])
    /// >>> tg.tensor([[1, 2], [3, 4]]).repeat_interleave(tg.tensor([1, 2]), dim=0)
    /// tensor([[1, 2],
    ///         [3, 4],
    ///         [3, 4]])
    #[pyo3(signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave(
        &self,
        py: Python<'_>,
        repeats: &Bound<'_, PyAny>,
        dim: Option<isize>,
        output_size: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        if let Ok(t) = repeats.cast::<PyTensor>() {
            let r = &t.get().inner;
            if r.ndim() > 1 {
                return Err(PyErr::from(Error::Value("repeat_interleave only accept 1D vector as repeat".into())));
            }
            if r.dtype() != crate::tensor::dtype::DType::Int64 {
                return Err(PyErr::from(Error::Dtype(format!(
                    "repeat_interleave: repeats must be an int64 tensor, got {}",
                    r.dtype()
                ))));
            }
            let counts = r.to_vec::<i64>().map_err(PyErr::from)?;
            let n = self.inner.numel().saturating_add(counts.iter().map(|&c| c.max(0) as usize).sum());
            return enter_tensor(py, Cost::Elements(n), || {
                self.inner.repeat_interleave_counts(&counts, dim, output_size)
            });
        }
        let r = match int_or_list(repeats, "repeats")? {
            IntOrList::One(r) => non_negative(r, "repeats")?,
            IntOrList::Many(_) => {
                return Err(PyErr::from(Error::Type(
                    "repeat_interleave(): repeats must be an int or a tensor, not a sequence".into(),
                )))
            }
        };
        if let Some(o) = output_size {
            let along = match dim {
                None => self.inner.numel(),
                Some(d) => match crate::tensor::layout::wrap_dim(d, self.inner.ndim().max(1)) {
                    Ok(d) if self.inner.ndim() > 0 => self.inner.shape()[d],
                    _ => 1,
                },
            };
            if along.checked_mul(r) != Some(o) {
                return Err(PyErr::from(Error::Value("allocated size does not match required size".into())));
            }
        }
        enter_tensor(py, Cost::Elements(self.inner.numel().saturating_mul(r)), || self.inner.repeat_interleave(r, dim))
    }

    /// Moves dimension(s) `source` to position(s) `destination`. A view.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3, 4).movedim(0, -1).shape
    /// (3, 4, 2)
    fn movedim(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let (s, d) = (dims_of(source, "source")?, dims_of(destination, "destination")?);
        enter_tensor(py, Cost::Metadata, || self.inner.movedim(&s, &d))
    }

    /// `movedim`, NumPy's spelling.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).moveaxis(0, 1).shape
    /// (3, 2)
    fn moveaxis(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        self.movedim(py, source, destination)
    }

    /// `transpose`, NumPy's spelling.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).swapaxes(0, 1).shape
    /// (3, 2)
    fn swapaxes(&self, py: Python<'_>, axis0: isize, axis1: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.transpose(axis0, axis1))
    }

    /// `transpose`, another spelling.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).swapdims(0, 1).shape
    /// (3, 2)
    fn swapdims(&self, py: Python<'_>, dim0: isize, dim1: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.transpose(dim0, dim1))
    }

    /// Dimension `dim` split into `sizes` (one of them may be -1).
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 12).unflatten(1, (3, -1)).shape
    /// (2, 3, 4)
    fn unflatten(&self, py: Python<'_>, dim: isize, sizes: Vec<isize>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.unflatten(dim, &sizes))
    }

    /// The tensor broadcast to `size` (a view; -1 keeps a dimension).
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1, 2]).broadcast_to((2, 2))
    /// tensor([[1, 2],
    ///         [1, 2]])
    fn broadcast_to(&self, py: Python<'_>, size: Vec<isize>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.expand_signed(&size))
    }

    /// The tensor with the shape of `other`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.arange(6).reshape_as(tg.zeros(2, 3)).shape
    /// (2, 3)
    fn reshape_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = expect_tensor(other, "reshape_as's argument")?;
        let shape: Vec<isize> = o.shape().iter().map(|&d| d as isize).collect();
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.reshape(&shape))
    }

    /// The lower triangle (on and below the `diagonal`-th diagonal) of the last two dimensions.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.ones(2, 3).tril()
    /// tensor([[1., 0., 0.],
    ///         [1., 1., 0.]])
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.tril(diagonal))
    }

    /// The upper triangle (on and above the `diagonal`-th diagonal) of the last two dimensions.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.ones(2, 3).triu(1)
    /// tensor([[0., 1., 1.],
    ///         [0., 0., 1.]])
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.triu(diagonal))
    }

    /// The diagonal of dimensions `dim1` and `dim2` (above the main one for `offset > 0`), as the
    /// last dimension. A view.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.arange(6).reshape(2, 3).diagonal(1)
    /// tensor([1, 5])
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, py: Python<'_>, offset: i64, dim1: isize, dim2: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.diagonal(offset, dim1, dim2))
    }

    /// The sum of a matrix's main diagonal.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([[1., 2.], [3., 4.]]).trace()
    /// tensor(5.)
    fn trace(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.inner.dtype() == crate::tensor::dtype::DType::Bool {
            return Err(super::tensor_pairwise::not_implemented_for("trace", self.inner.dtype()));
        }
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.trace())
    }

    /// A matrix's diagonal at `diagonal`, or a square matrix with a vector on that diagonal.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1, 2]).diag()
    /// tensor([[1, 0],
    ///         [0, 2]])
    #[pyo3(signature = (diagonal=0))]
    fn diag(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyAny>> {
        let n = self.inner.numel().saturating_mul(self.inner.numel());
        enter_tensor(py, Cost::Elements(n), || self.inner.diag(diagonal))
    }
}

/// The tensors broadcast to their common shape (views).
///
/// >>> import tapegrad as tg
/// >>> [t.shape for t in tg.broadcast_tensors(tg.zeros(2, 1), tg.zeros(3))]
/// [(2, 3), (2, 3)]
#[pyfunction]
#[pyo3(signature = (*tensors))]
fn broadcast_tensors<'py>(py: Python<'py>, tensors: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyTuple>> {
    let ts = tensor_list(tensors.as_any(), "broadcast_tensors' arguments")?;
    tensor_tuple(py, enter(py, Cost::Metadata, || Tensor::broadcast_tensors(&ts))?)
}

/// Coordinate grids of 1-d tensors; `indexing` is `"ij"` (matrix) or `"xy"` (Cartesian).
///
/// >>> import tapegrad as tg
/// >>> gx, gy = tg.meshgrid(tg.tensor([1, 2]), tg.tensor([3, 4, 5]), indexing="ij")
/// >>> gx.shape, gy[0].tolist()
/// ((2, 3), [3, 4, 5])
#[pyfunction]
#[pyo3(signature = (*tensors, indexing="ij"))]
fn meshgrid<'py>(py: Python<'py>, tensors: &Bound<'py, PyTuple>, indexing: &str) -> PyResult<Bound<'py, PyTuple>> {
    let list = if tensors.len() == 1 && !tensors.get_item(0)?.is_instance_of::<PyTensor>() {
        tensors.get_item(0)?
    } else {
        tensors.clone().into_any()
    };
    let ts = tensor_list(&list, "meshgrid's tensors")?;
    let how = match indexing {
        "ij" => MeshIndexing::Ij,
        "xy" => MeshIndexing::Xy,
        other => {
            return Err(PyErr::from(Error::value(format!(
                "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {other}"
            ))))
        }
    };
    tensor_tuple(py, enter(py, Cost::Metadata, || Tensor::meshgrid(&ts, how))?)
}

/// Runs a stacking function of the core on a list of tensors.
fn stacked(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    what: &str,
    f: fn(&[Tensor]) -> crate::Result<Tensor>,
) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors, what)?;
    enter_tensor(py, Cost::Elements(ts.iter().map(Tensor::numel).sum()), || f(&ts))
}

/// Concatenation along the second dimension (the first for vectors).
///
/// >>> import tapegrad as tg
/// >>> tg.hstack([tg.tensor([1, 2]), tg.tensor([3])])
/// tensor([1, 2, 3])
#[pyfunction]
fn hstack(py: Python<'_>, tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    stacked(py, tensors, "hstack's tensors", Tensor::hstack)
}

/// Concatenation along the first dimension of tensors made at least 2-d.
///
/// >>> import tapegrad as tg
/// >>> tg.vstack([tg.tensor([1, 2]), tg.tensor([3, 4])]).shape
/// (2, 2)
#[pyfunction]
fn vstack(py: Python<'_>, tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    stacked(py, tensors, "vstack's tensors", Tensor::vstack)
}

/// Concatenation along the third dimension of tensors made at least 3-d.
///
/// >>> import tapegrad as tg
/// >>> tg.dstack([tg.tensor([1, 2]), tg.tensor([3, 4])]).shape
/// (1, 2, 2)
#[pyfunction]
fn dstack(py: Python<'_>, tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    stacked(py, tensors, "dstack's tensors", Tensor::dstack)
}

/// Vectors as columns (matrices as they are), side by side.
///
/// >>> import tapegrad as tg
/// >>> tg.column_stack([tg.tensor([1, 2]), tg.tensor([3, 4])]).tolist()
/// [[1, 3], [2, 4]]
#[pyfunction]
fn column_stack(py: Python<'_>, tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    stacked(py, tensors, "column_stack's tensors", Tensor::column_stack)
}

/// `tg.nn.functional.pad` with `mode="constant"`: `pad` holds (before, after) amounts from the
/// last dimension backwards; negative amounts cut.
///
/// >>> import tapegrad as tg
/// >>> tg._tapegrad._pad_constant(tg.tensor([1, 2]), (1, 2), 0)
/// tensor([0, 1, 2, 0, 0])
#[pyfunction]
fn _pad_constant(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    pad: Vec<isize>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let t = expect_tensor(input, "pad's input")?;
    let v = if value.is_none() {
        Scalar::Int(0)
    } else {
        scalar(value).ok_or_else(|| Error::Type("pad's value must be a number".into()))?
    };
    enter_tensor(py, Cost::Elements(t.numel()), || t.pad_constant(&pad, v))
}

/// The tensor with at least `n` dimensions (`tg.atleast_1d/2d/3d` call this per tensor).
///
/// >>> import tapegrad as tg
/// >>> tg._tapegrad._atleast(tg.tensor(1.0), 2).shape
/// (1, 1)
#[pyfunction]
fn _atleast(py: Python<'_>, tensor: &Bound<'_, PyAny>, n: usize) -> PyResult<Py<PyAny>> {
    let t = expect_tensor(tensor, "atleast's argument")?;
    enter_tensor(py, Cost::Metadata, || t.atleast(n))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(broadcast_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(meshgrid, m)?)?;
    m.add_function(wrap_pyfunction!(hstack, m)?)?;
    m.add_function(wrap_pyfunction!(vstack, m)?)?;
    m.add_function(wrap_pyfunction!(dstack, m)?)?;
    m.add_function(wrap_pyfunction!(column_stack, m)?)?;
    m.add_function(wrap_pyfunction!(_pad_constant, m)?)?;
    m.add_function(wrap_pyfunction!(_atleast, m)?)?;
    Ok(())
}
