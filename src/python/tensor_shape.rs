//! `Tensor`'s shape and view methods (`t`, `T`, `transpose`, `permute`, `reshape`, `view`,
//! `flatten`, `unsqueeze`, `squeeze`, `expand`, `narrow`), `contiguous` and `clone`, and
//! `tg.cat`/`tg.stack`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::shape_args;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{tensor_list, PyTensor};
use crate::error::Error;
use crate::Tensor;

/// Which dimensions `squeeze` drops.
enum SqueezeArg {
    All,
    One(isize),
    Some(Vec<isize>),
}

impl SqueezeArg {
    fn apply(&self, t: &Tensor) -> crate::Result<Tensor> {
        match self {
            SqueezeArg::All => t.squeeze(),
            SqueezeArg::One(d) => t.squeeze_dim(*d),
            SqueezeArg::Some(ds) => t.squeeze_dims(ds),
        }
    }
}

/// `squeeze`'s `dim`: None, an int, or a tuple or list of ints.
fn squeeze_arg(dim: Option<&Bound<'_, PyAny>>, op: &str) -> PyResult<SqueezeArg> {
    Ok(match dim {
        None => SqueezeArg::All,
        Some(d) if d.is_none() => SqueezeArg::All,
        Some(d) if d.is_instance_of::<PyTuple>() || d.is_instance_of::<pyo3::types::PyList>() => SqueezeArg::Some(
            d.extract::<Vec<isize>>()
                .map_err(|_| PyErr::from(Error::Type(format!("{op}(): dim must be an int or a tuple of ints"))))?,
        ),
        Some(d) => SqueezeArg::One(d.extract().map_err(|_| {
            PyErr::from(Error::Type(format!(
                "{op}(): dim must be an int or a tuple of ints, not {}",
                d.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )))
        })?),
    })
}

/// Runs an in-place shape operation (NOTE [In-place shape operations] in `ops/inplace.rs`): the
/// core makes the tensor's new self, which takes the old one's place in this object.
fn restride<'py>(
    slf: &Bound<'py, PyTensor>,
    op: &'static str,
    view: impl FnOnce(&Tensor) -> crate::Result<Tensor> + Send,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = slf.get().inner.clone();
    let new = enter(slf.py(), Cost::Metadata, || t.restride_(op, view))?;
    PyTensor::swap_inner(slf, new);
    Ok(slf.clone())
}

#[pymethods]
impl PyTensor {
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.t())
    }
    #[getter(T)]
    fn big_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let n = self.inner.ndim() as isize;
        let dims: Vec<isize> = (0..n).rev().collect();
        enter_tensor(py, Cost::Metadata, || self.inner.permute(&dims))
    }
    fn transpose(&self, py: Python<'_>, dim0: isize, dim1: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.transpose(dim0, dim1))
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = shape_args(dims)?;
        enter_tensor(py, Cost::Metadata, || self.inner.permute(&dims))
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let shape = shape_args(shape)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.reshape(&shape))
    }
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let shape = shape_args(shape)?;
        enter_tensor(py, Cost::Metadata, || self.inner.view(&shape))
    }
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = super::tensor::expect_tensor(other, "view_as's argument")?;
        let shape: Vec<isize> = o.shape().iter().map(|&d| d as isize).collect();
        enter_tensor(py, Cost::Metadata, || self.inner.view(&shape))
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: isize, end_dim: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.flatten(start_dim, end_dim))
    }
    fn unsqueeze(&self, py: Python<'_>, dim: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.unsqueeze(dim))
    }
    /// Drops the dimensions of size 1: all of them, `dim` (an int) or each of `dim` (a tuple or
    /// list of ints); a named dimension whose size is not 1 stays. A view.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(1, 2, 1).squeeze((0, 2)).shape
    /// (2,)
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dims = squeeze_arg(dim, "squeeze")?;
        enter_tensor(py, Cost::Metadata, || dims.apply(&self.inner))
    }

    /// `t()` in place: the tensor itself becomes its transpose (a 0-d or 1-d tensor stays as it
    /// is). As every in-place operation it bumps `_version`; on a tensor with history its
    /// `grad_fn` becomes the transpose's. Refused on a leaf that requires grad (outside `no_grad`).
    ///
    /// >>> import tapegrad as tg
    /// >>> x = tg.tensor([[1, 2, 3], [4, 5, 6]])
    /// >>> x.t_() is x, x.shape, x._version
    /// (True, (3, 2), 1)
    fn t_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        let n = slf.get().inner.ndim();
        if n > 2 {
            return Err(Error::shape(format!("t_() expects a tensor with <= 2 dimensions, but self is {n}D")).into());
        }
        restride(slf, "t_", |t| t.t())
    }
    /// `transpose(dim0, dim1)` in place (see `t_`).
    ///
    /// >>> import tapegrad as tg
    /// >>> x = tg.zeros(2, 3, 4)
    /// >>> x.transpose_(0, 2).shape, x.stride()
    /// ((4, 3, 2), (1, 4, 12))
    fn transpose_<'py>(slf: &Bound<'py, Self>, dim0: isize, dim1: isize) -> PyResult<Bound<'py, Self>> {
        restride(slf, "transpose_", move |t| t.transpose(dim0, dim1))
    }
    /// `transpose_`, NumPy's spelling.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).swapaxes_(0, 1).shape
    /// (3, 2)
    fn swapaxes_<'py>(slf: &Bound<'py, Self>, axis0: isize, axis1: isize) -> PyResult<Bound<'py, Self>> {
        restride(slf, "swapaxes_", move |t| t.transpose(axis0, axis1))
    }
    /// `transpose_`, another spelling.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).swapdims_(0, 1).shape
    /// (3, 2)
    fn swapdims_<'py>(slf: &Bound<'py, Self>, dim0: isize, dim1: isize) -> PyResult<Bound<'py, Self>> {
        restride(slf, "swapdims_", move |t| t.transpose(dim0, dim1))
    }
    /// `unsqueeze(dim)` in place (see `t_`).
    ///
    /// >>> import tapegrad as tg
    /// >>> x = tg.zeros(2, 3)
    /// >>> x.unsqueeze_(1).shape
    /// (2, 1, 3)
    fn unsqueeze_<'py>(slf: &Bound<'py, Self>, dim: isize) -> PyResult<Bound<'py, Self>> {
        restride(slf, "unsqueeze_", move |t| t.unsqueeze(dim))
    }
    /// `squeeze(dim)` in place (see `t_`): every size-1 dimension, `dim` (an int) or each of `dim`
    /// (a tuple of ints).
    ///
    /// >>> import tapegrad as tg
    /// >>> x = tg.zeros(1, 2, 1, 3)
    /// >>> x.squeeze_((0, 2)).shape
    /// (2, 3)
    #[pyo3(signature = (dim=None))]
    fn squeeze_<'py>(slf: &Bound<'py, Self>, dim: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Self>> {
        let dims = squeeze_arg(dim, "squeeze_")?;
        restride(slf, "squeeze_", move |t| dims.apply(t))
    }
    /// The offset of the first element in the tensor's storage, in elements.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.arange(6).view(2, 3)[1].storage_offset()
    /// 3
    fn storage_offset(&self) -> usize {
        self.inner.layout().offset
    }
    /// The size in bytes of one element.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, dtype=tg.float64).element_size()
    /// 8
    /// >>> tg.zeros(2, dtype=tg.bfloat16).element_size()
    /// 2
    fn element_size(&self) -> usize {
        self.inner.dtype().size()
    }
    /// The size in bytes of one element (`element_size()`).
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2).itemsize
    /// 4
    #[getter]
    fn itemsize(&self) -> usize {
        self.element_size()
    }
    /// The bytes the tensor's elements take: `numel() * itemsize`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).nbytes
    /// 24
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.numel().saturating_mul(self.element_size())
    }
    /// The address of the tensor's first element (0 for a tensor without storage). Views of one
    /// storage differ by their offsets: `t[1].data_ptr() - t.data_ptr() == t.stride(0) * itemsize`.
    ///
    /// >>> import tapegrad as tg
    /// >>> t = tg.zeros(3, 2)
    /// >>> t[1].data_ptr() - t.data_ptr()
    /// 8
    fn data_ptr(&self) -> usize {
        let guard = self.inner.storage().read();
        let offset = self.inner.layout().offset;
        crate::dispatch_all!(self.inner.dtype(), T => {
            use crate::tensor::element::Element;
            match T::slice(&guard) {
                Some(s) if !s.is_empty() => (s.as_ptr() as usize).saturating_add(offset * std::mem::size_of::<T>()),
                _ => 0,
            }
        })
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let sizes = shape_args(sizes)?;
        enter_tensor(py, Cost::Metadata, || self.inner.expand_signed(&sizes))
    }
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = super::tensor::expect_tensor(other, "expand_as's argument")?;
        enter_tensor(py, Cost::Metadata, || self.inner.expand_as(&o))
    }
    fn narrow(&self, py: Python<'_>, dim: isize, start: isize, length: isize) -> PyResult<Py<PyAny>> {
        // Signed, as in PyTorch: a negative start counts from the end, a negative length is a
        // RuntimeError (not the OverflowError of PyO3's conversion to an unsigned integer).
        let Ok(length) = usize::try_from(length) else {
            return Err(Error::Value("narrow(): length must be non-negative.".into()).into());
        };
        let size = match crate::tensor::layout::wrap_dim(dim, self.inner.ndim()) {
            Ok(d) if self.inner.ndim() > 0 => self.inner.shape()[d],
            _ => 0,
        };
        let start = if start < 0 { start + size as isize } else { start };
        let Ok(start) = usize::try_from(start) else {
            return Err(Error::Index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -(size as isize)
            ))
            .into());
        };
        enter_tensor(py, Cost::Metadata, || self.inner.narrow(dim, start, length))
    }
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = &slf.get().inner;
        if t.layout().is_contiguous() {
            return Ok(slf.into_any().unbind());
        }
        enter_tensor(slf.py(), Cost::Elements(t.numel()), || t.contiguous())
    }
    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.clone_tensor())
    }
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors, "cat's tensors")?;
    enter_tensor(py, Cost::Elements(ts.iter().map(Tensor::numel).sum()), || Tensor::cat(&ts, dim))
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors, "stack's tensors")?;
    enter_tensor(py, Cost::Elements(ts.iter().map(Tensor::numel).sum()), || Tensor::stack(&ts, dim))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    Ok(())
}
