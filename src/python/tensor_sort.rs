//! Sorting, selection and scan methods (`ops/sort.rs`): sort, argsort, topk, kthvalue, median,
//! mode, cumsum, cumprod, cummax, cummin, flip and roll. Each converts its arguments and calls the
//! core; pairs come back as the named tuples of `tapegrad._types`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple};

use super::convert::{parse_dtype, shape_args};
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::Tensor;

/// A refusal raised as `TypeError` (through the core's `Error`).
fn type_err(msg: impl Into<String>) -> PyErr {
    Error::Type(msg.into()).into()
}

fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(PyTensor::wrap(py, t)?.into_any())
}

/// The named tuple `tapegrad._types.<name>_result` holding `pair`.
fn named(py: Python<'_>, name: &str, pair: (Tensor, Tensor)) -> PyResult<Py<PyAny>> {
    let cls = py.import("tapegrad._types")?.getattr(format!("{name}_result"))?;
    Ok(cls.call1((PyTensor::wrap(py, pair.0)?, PyTensor::wrap(py, pair.1)?))?.unbind())
}

/// An int argument (not a bool).
fn int_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(type_err(format!("{what} must be an int, got {}", obj.get_type().name()?)));
    }
    obj.extract()
}

/// An int or a sequence of ints.
fn ints_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    if obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        return Ok(vec![int_arg(obj, what)?]);
    }
    let items = obj.try_iter().map_err(|_| {
        type_err(format!(
            "{what} must be an int or a tuple of ints, got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    items.map(|x| int_arg(&x?, what)).collect()
}

/// `dim` arguments: None, an int, or a sequence of ints.
fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match dim.filter(|d| !d.is_none()) {
        None => Ok(None),
        Some(d) => Ok(Some(ints_arg(d, "dim")?.into_iter().map(|d| d as isize).collect())),
    }
}

/// The input cast to `dtype` first when one is given (cumsum's `dtype=`).
fn with_dtype(t: &Tensor, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    match dtype.filter(|d| !d.is_none()) {
        Some(d) => Ok(t.to_dtype(parse_dtype(d)?)?),
        None => Ok(t.clone()),
    }
}

#[pymethods]
impl PyTensor {
    /// Sorted values along `dim` and the indices they came from (`(values, indices)`). NaN sorts
    /// as the largest value; the sort is always stable.
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false), text_signature = "($self, dim=-1, descending=False, *, stable=False)")]
    fn sort(&self, py: Python<'_>, dim: isize, descending: bool, stable: bool) -> PyResult<Py<PyAny>> {
        let _ = stable;
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.sort(dim, descending))?;
        named(py, "sort", pair)
    }
    /// The indices that sort the tensor along `dim` (stable).
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false), text_signature = "($self, dim=-1, descending=False, *, stable=False)")]
    fn argsort(&self, py: Python<'_>, dim: isize, descending: bool, stable: bool) -> PyResult<Py<PyAny>> {
        let _ = stable;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.argsort(dim, descending))
    }
    /// The `k` largest (`largest=False`: smallest) values along `dim` and their indices, sorted.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true), text_signature = "($self, k, dim=-1, largest=True, sorted=True)")]
    fn topk(
        &self,
        py: Python<'_>,
        k: &Bound<'_, PyAny>,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted;
        let k = int_arg(k, "topk(): k")?;
        if self.inner.dtype() == crate::tensor::dtype::DType::Bool {
            return Err(crate::error::Error::NotImplemented("topk does not support bool dtypes on CPU".into()).into());
        }
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.topk(k, dim, largest))?;
        named(py, "topk", pair)
    }
    /// The `k`-th smallest value along `dim` (k counts from 1) and its index.
    #[pyo3(signature = (k, dim=-1, keepdim=false), text_signature = "($self, k, dim=-1, keepdim=False)")]
    fn kthvalue(&self, py: Python<'_>, k: &Bound<'_, PyAny>, dim: isize, keepdim: bool) -> PyResult<Py<PyAny>> {
        let k = int_arg(k, "kthvalue(): k")?;
        refuse_bool(&self.inner, "kthvalue_cpu")?;
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.kthvalue(k, dim, keepdim))?;
        named(py, "kthvalue", pair)
    }
    /// The lower median: of all elements, or `(values, indices)` along `dim`. NaN propagates.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn median(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        refuse_bool(&self.inner, if dim.is_none() { "median_cpu" } else { "median_out" })?;
        match dim {
            None => wrap(py, enter(py, Cost::Elements(self.inner.numel()), || self.inner.median_all())?),
            Some(d) => {
                let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.median_dim(d, keepdim))?;
                named(py, "median", pair)
            }
        }
    }
    /// The most frequent value along `dim` (the smallest of equally frequent ones) and the index
    /// of its last occurrence.
    #[pyo3(signature = (dim=-1, keepdim=false), text_signature = "($self, dim=-1, keepdim=False)")]
    fn mode(&self, py: Python<'_>, dim: isize, keepdim: bool) -> PyResult<Py<PyAny>> {
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.mode(dim, keepdim))?;
        named(py, "mode", pair)
    }
    /// Cumulative sum along `dim` (int64 for integer and bool inputs unless `dtype` is given).
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, py: Python<'_>, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let x = with_dtype(&self.inner, dtype)?;
        // With `dtype`, the result stays in it (a narrow integer one wraps), as in PyTorch.
        let (want, keep) = (x.dtype(), dtype.is_some_and(|d| !d.is_none()));
        enter_tensor(py, Cost::Elements(x.numel()), || {
            x.cumsum(dim).and_then(|r| if keep { r.to_dtype(want) } else { Ok(r) })
        })
    }
    /// Cumulative product along `dim` (int64 for integer and bool inputs unless `dtype` is given).
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(&self, py: Python<'_>, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let x = with_dtype(&self.inner, dtype)?;
        // With `dtype`, the result stays in it (a narrow integer one wraps), as in PyTorch.
        let (want, keep) = (x.dtype(), dtype.is_some_and(|d| !d.is_none()));
        enter_tensor(py, Cost::Elements(x.numel()), || {
            x.cumprod(dim).and_then(|r| if keep { r.to_dtype(want) } else { Ok(r) })
        })
    }
    /// Running maximum along `dim` and where each was reached: `(values, indices)`.
    fn cummax(&self, py: Python<'_>, dim: isize) -> PyResult<Py<PyAny>> {
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.cum_extreme(dim, true))?;
        named(py, "cummax", pair)
    }
    /// Running minimum along `dim` and where each was reached: `(values, indices)`.
    fn cummin(&self, py: Python<'_>, dim: isize) -> PyResult<Py<PyAny>> {
        let pair = enter(py, Cost::Elements(self.inner.numel()), || self.inner.cum_extreme(dim, false))?;
        named(py, "cummin", pair)
    }
    /// A copy with the order of elements reversed along `dims` (`t.flip(0, 1)` or `t.flip([0, 1])`).
    #[pyo3(signature = (*dims))]
    fn flip(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = shape_args(dims)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.flip(&dims))
    }
    /// Elements shifted by `shifts` along `dims`, wrapping around (no dims: the flattened tensor).
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(&self, py: Python<'_>, shifts: &Bound<'_, PyAny>, dims: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let shifts = ints_arg(shifts, "roll(): shifts")?;
        let dims: Vec<isize> = match dims.filter(|d| !d.is_none()) {
            Some(d) => ints_arg(d, "roll(): dims")?.into_iter().map(|d| d as isize).collect(),
            None => vec![],
        };
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.roll(&shifts, &dims))
    }
    /// Whether all elements (over `dim`, when given) are non-zero.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.all(dims.as_deref(), keepdim))
    }
    /// Whether any element (over `dim`, when given) is non-zero.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.any(dims.as_deref(), keepdim))
    }
    /// The number of non-zero elements (over `dim`, when given), as int64.
    #[pyo3(signature = (dim=None))]
    fn count_nonzero(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.count_nonzero(dims.as_deref()))
    }
    /// The smallest and largest elements (over `dim`, when given): `(min, max)`.
    #[pyo3(signature = (*, dim=None, keepdim=false))]
    fn aminmax(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dim.map(|d| vec![d]);
        let pair = enter(py, Cost::Elements(self.inner.numel()), || {
            Ok((self.inner.amin(dims.as_deref(), keepdim)?, self.inner.amax(dims.as_deref(), keepdim)?))
        })?;
        named(py, "aminmax", pair)
    }
    /// `|self - other| <= atol + rtol * |other|`, elementwise.
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn isclose(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<Py<PyAny>> {
        let o = other.inner.clone();
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.isclose(&o, rtol, atol, equal_nan))
    }
    /// True when every element is close to the other tensor's (see `isclose`).
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn allclose(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let o = other.inner.clone();
        enter(py, Cost::Elements(self.inner.numel()), || {
            Ok(self.inner.isclose(&o, rtol, atol, equal_nan)?.all(None, false)?.item()? != 0.0)
        })
    }
    /// True when both tensors have the same shape and equal elements.
    fn equal(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<bool> {
        let o = other.inner.clone();
        enter(py, Cost::Elements(self.inner.numel()), || self.inner.equal(&o))
    }
}

/// PyTorch has no bool kernel for the sorting-based selections (`median`, `kthvalue`).
fn refuse_bool(t: &crate::Tensor, kernel: &str) -> PyResult<()> {
    if t.dtype() == crate::tensor::dtype::DType::Bool {
        return Err(super::tensor_pairwise::not_implemented_for(kernel, t.dtype()));
    }
    Ok(())
}
