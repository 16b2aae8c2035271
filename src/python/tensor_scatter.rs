//! Scatter, index_fill, index_put, masked_scatter, take, nonzero, searchsorted, bucketize and
//! unique (`ops/scatter.rs`), with their in-place forms. Each converts its arguments and calls
//! the core; the in-place forms return the tensor itself.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};

use super::convert::scalar;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{expect_tensor, tensor_list, PyTensor};
use crate::error::Error;
use crate::ops::scatter::ScatterReduce;
use crate::{Result, Scalar, Tensor};

/// A refusal raised as `TypeError` (through the core's `Error`).
fn type_err(msg: impl Into<String>) -> PyErr {
    Error::Type(msg.into()).into()
}

/// A refusal raised as `RuntimeError` (through the core's `Error`).
fn value_err(msg: impl Into<String>) -> PyErr {
    Error::value(msg).into()
}

fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(PyTensor::wrap(py, t)?.into_any())
}

/// A tensor, or a Python number made a 0-d tensor of `dtype`.
fn tensor_or_number(obj: &Bound<'_, PyAny>, dtype: crate::DType, what: &str) -> PyResult<Tensor> {
    if let Some(s) = scalar(obj) {
        return Ok(Tensor::scalar_tensor(s, dtype)?);
    }
    expect_tensor(obj, what)
}

/// What scatter writes: `src` (a tensor) or `value` (a number), given positionally or by name.
enum Written {
    Src(Tensor),
    Value(Scalar),
}

fn written(src: Option<&Bound<'_, PyAny>>, value: Option<&Bound<'_, PyAny>>) -> PyResult<Written> {
    let obj = match (src.filter(|s| !s.is_none()), value.filter(|v| !v.is_none())) {
        (Some(_), Some(_)) => return Err(type_err("scatter(): pass either src or value, not both")),
        (None, None) => return Err(type_err("scatter(): missing the src tensor or the value")),
        (Some(o), None) | (None, Some(o)) => o,
    };
    if let Some(s) = scalar(obj) {
        return Ok(Written::Value(s));
    }
    Ok(Written::Src(expect_tensor(obj, "scatter's src")?))
}

fn reduce_arg(reduce: &str) -> PyResult<ScatterReduce> {
    ScatterReduce::from_name(reduce)
        .ok_or_else(|| value_err(format!("reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")))
}

/// scatter's old `reduce=` spellings ('add', 'multiply'), applied with the element's own value.
fn legacy_reduce(reduce: Option<&str>) -> PyResult<Option<ScatterReduce>> {
    match reduce {
        None => Ok(None),
        Some("add") => Ok(Some(ScatterReduce::Sum)),
        Some("multiply") => Ok(Some(ScatterReduce::Prod)),
        Some(r) => Err(value_err(format!("reduce argument must be either add or multiply, got {r}"))),
    }
}

fn scatter_value(t: &Tensor, dim: isize, index: &Tensor, w: Written, reduce: Option<ScatterReduce>) -> Result<Tensor> {
    match (w, reduce) {
        (Written::Src(s), None) => t.scatter(dim, index, &s),
        (Written::Value(v), None) => t.scatter_value(dim, index, v),
        (Written::Src(s), Some(r)) => t.scatter_reduce(dim, index, &s, r, true),
        (Written::Value(v), Some(r)) => {
            let s = Tensor::full(index.shape(), v, t.dtype())?;
            t.scatter_reduce(dim, index, &s, r, true)
        }
    }
}

/// The tensors of `index_put`'s `indices` (a tuple or list of tensors).
fn index_tensors(indices: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if indices.cast::<PyTensor>().is_ok() {
        return Err(type_err("index_put(): indices must be a tuple of tensors, not a tensor"));
    }
    tensor_list(indices, "index_put's indices")
}

#[pymethods]
impl PyTensor {
    /// `self` with `src` (or the number `value`) written at `index` along `dim`.
    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "scatter's index")?;
        let (w, r) = (written(src, value)?, legacy_reduce(reduce)?);
        enter_tensor(py, Cost::Elements(self.inner.numel()), || scatter_value(&self.inner, dim, &idx, w, r))
    }
    /// In-place `scatter`.
    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter_<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().inner.clone();
        let idx = expect_tensor(index, "scatter_'s index")?;
        let (w, r) = (written(src, value)?, legacy_reduce(reduce)?);
        let operand = match &w {
            Written::Src(s) => vec![s.clone()],
            Written::Value(_) => vec![],
        };
        let ops: Vec<&Tensor> = operand.iter().collect();
        enter(slf.py(), Cost::Elements(t.numel()), || {
            t.apply_inplace("scatter_", &ops, |x| scatter_value(x, dim, &idx, w, r))
        })?;
        Ok(slf)
    }
    /// In-place `scatter_add`.
    fn scatter_add_<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let idx = expect_tensor(index, "scatter_add_'s index")?;
        let s = expect_tensor(src, "scatter_add_'s src")?;
        let t = slf.get().inner.clone();
        enter(slf.py(), Cost::Elements(t.numel()), || t.scatter_add_(dim, &idx, &s))?;
        Ok(slf)
    }
    /// `src` at `index` along `dim` combined into `self` by `reduce` ("sum", "prod", "mean",
    /// "amax", "amin"); `include_self`: the element's own value takes part.
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "scatter_reduce's index")?;
        let s = expect_tensor(src, "scatter_reduce's src")?;
        let r = reduce_arg(reduce)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || {
            self.inner.scatter_reduce(dim, &idx, &s, r, include_self)
        })
    }
    /// In-place `scatter_reduce`.
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce_<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let idx = expect_tensor(index, "scatter_reduce_'s index")?;
        let s = expect_tensor(src, "scatter_reduce_'s src")?;
        let r = reduce_arg(reduce)?;
        let t = slf.get().inner.clone();
        enter(slf.py(), Cost::Elements(t.numel()), || t.scatter_reduce_(dim, &idx, &s, r, include_self))?;
        Ok(slf)
    }
    /// `self` with the slices at `index` along `dim` set to `value` (a number or a 0-d tensor).
    fn index_fill(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "index_fill's index")?;
        let v = tensor_or_number(value, self.inner.dtype(), "index_fill's value")?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.index_fill(dim, &idx, &v))
    }
    /// In-place `index_fill`.
    fn index_fill_<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().inner.clone();
        let idx = expect_tensor(index, "index_fill_'s index")?;
        let v = tensor_or_number(value, t.dtype(), "index_fill_'s value")?;
        enter(slf.py(), Cost::Elements(t.numel()), || t.index_fill_(dim, &idx, &v))?;
        Ok(slf)
    }
    /// In-place `index_add`.
    #[pyo3(signature = (dim, index, source, *, alpha=1.0))]
    fn index_add_<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let idx = expect_tensor(index, "index_add_'s index")?;
        let s = expect_tensor(source, "index_add_'s source")?;
        let t = slf.get().inner.clone();
        enter(slf.py(), Cost::Elements(t.numel()), || t.index_add_(dim, &idx, &s, alpha))?;
        Ok(slf)
    }
    /// `self` with the elements where `mask` is true replaced by `source`'s, in order.
    fn masked_scatter(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let m = expect_tensor(mask, "masked_scatter's mask")?;
        let s = expect_tensor(source, "masked_scatter's source")?;
        let full = m.expand(self.inner.shape())?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.masked_scatter(&full, &s))
    }
    /// In-place `masked_scatter`.
    fn masked_scatter_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().inner.clone();
        let m = expect_tensor(mask, "masked_scatter_'s mask")?;
        let s = expect_tensor(source, "masked_scatter_'s source")?;
        let full = m.expand(t.shape())?;
        enter(slf.py(), Cost::Elements(t.numel()), || t.masked_scatter_(&full, &s))?;
        Ok(slf)
    }
    /// `self[indices] = values` out of place (`accumulate`: added).
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<Py<PyAny>> {
        let idx = index_tensors(indices)?;
        let v = tensor_or_number(values, self.inner.dtype(), "index_put's values")?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.index_put(&idx, &v, accumulate))
    }
    /// `self[indices] = values` in place (`accumulate`: `+=`, repeated indices adding up).
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put_<'py>(
        slf: Bound<'py, Self>,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().inner.clone();
        let idx = index_tensors(indices)?;
        let v = tensor_or_number(values, t.dtype(), "index_put_'s values")?;
        enter(slf.py(), Cost::Elements(t.numel()), || t.index_put_acc_(&idx, &v, accumulate))?;
        Ok(slf)
    }
    /// Writes `fill_value` on the main diagonal, in place (`wrap`: restart below a tall matrix's square part).
    #[pyo3(signature = (fill_value, wrap=false))]
    fn fill_diagonal_<'py>(
        slf: Bound<'py, Self>,
        fill_value: &Bound<'_, PyAny>,
        wrap: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let v = scalar(fill_value).ok_or_else(|| type_err("fill_diagonal_(): fill_value must be a number"))?;
        let t = slf.get().inner.clone();
        enter(slf.py(), Cost::Elements(t.numel()), || t.fill_diagonal_(v, wrap))?;
        Ok(slf)
    }
    /// The elements at `index` of the flattened tensor, shaped like `index`.
    fn take(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "take's index")?;
        enter_tensor(py, Cost::Elements(idx.numel()), || self.inner.take(&idx))
    }
    /// `gather` along `dim` after broadcasting (no `dim`: over the flattened tensor).
    #[pyo3(signature = (indices, dim=None))]
    fn take_along_dim(&self, py: Python<'_>, indices: &Bound<'_, PyAny>, dim: Option<isize>) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(indices, "take_along_dim's indices")?;
        enter_tensor(py, Cost::Elements(idx.numel()), || self.inner.take_along_dim(&idx, dim))
    }
    /// The coordinates of the non-zero elements: a `[k, ndim]` int64 tensor, or (`as_tuple`) one
    /// 1-d tensor per dimension.
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let nz = enter(py, Cost::Elements(self.inner.numel()), || self.inner.nonzero())?;
        if !as_tuple {
            return wrap(py, nz);
        }
        if self.inner.ndim() == 0 {
            let k = nz.shape()[0] as isize;
            let col = Tensor::zeros(&[k as usize], crate::DType::Int64)?;
            return Ok(PyTuple::new(py, [PyTensor::wrap(py, col)?])?.into_any().unbind());
        }
        let cols: Vec<Py<PyTensor>> = (0..self.inner.ndim())
            .map(|d| PyTensor::wrap(py, nz.narrow(1, d, 1)?.reshape(&[-1])?.contiguous()?))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, cols)?.into_any().unbind())
    }
    /// The sorted distinct elements; with `return_inverse` and `return_counts`, also the index of
    /// each element's value among them and how often each occurs.
    #[pyo3(signature = (sorted=true, return_inverse=false, return_counts=false, dim=None))]
    fn unique(
        &self,
        py: Python<'_>,
        sorted: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<isize>,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted;
        if dim.is_some() {
            return Err(value_err("unique(): dim is not supported yet; pass dim=None"));
        }
        let (values, inverse, counts) = enter(py, Cost::Elements(self.inner.numel()), || self.inner.unique())?;
        if !return_inverse && !return_counts {
            return wrap(py, values);
        }
        let mut out = vec![wrap(py, values)?];
        if return_inverse {
            out.push(wrap(py, inverse)?);
        }
        if return_counts {
            out.push(wrap(py, counts)?);
        }
        Ok(PyTuple::new(py, out)?.into_any().unbind())
    }
}

/// `right` from searchsorted's two spellings (`right=True` or `side='right'`).
fn side_arg(right: bool, side: Option<&str>) -> PyResult<bool> {
    match side {
        None => Ok(right),
        Some("left") if right => Err(value_err(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
        )),
        Some("left") => Ok(false),
        Some("right") => Ok(true),
        Some(s) => Err(value_err(format!("torch.searchsorted(): side can only be 'left' or 'right' but got {s}"))),
    }
}

/// `searchsorted(sorted_sequence, input, *, right=False, side=None)`: insertion indices (int64).
#[pyfunction]
#[pyo3(signature = (sorted_sequence, input, *, right=false, side=None))]
fn searchsorted(
    py: Python<'_>,
    sorted_sequence: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    right: bool,
    side: Option<&str>,
) -> PyResult<Py<PyAny>> {
    let seq = expect_tensor(sorted_sequence, "searchsorted's sorted_sequence")?;
    if input.is_instance_of::<PyBool>() {
        return Err(type_err("searchsorted(): input must be a tensor or a number, not bool"));
    }
    let v = tensor_or_number(input, seq.dtype(), "searchsorted's input")?;
    let right = side_arg(right, side)?;
    refuse_bool_search(&seq, &v)?;
    enter_tensor(py, Cost::Elements(v.numel()), || seq.searchsorted(&v, right))
}

/// `bucketize(input, boundaries, *, right=False)`: the bucket of each element among 1-d sorted
/// `boundaries`.
#[pyfunction]
#[pyo3(signature = (input, boundaries, *, right=false))]
fn bucketize(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    boundaries: &Bound<'_, PyAny>,
    right: bool,
) -> PyResult<Py<PyAny>> {
    let b = expect_tensor(boundaries, "bucketize's boundaries")?;
    if b.ndim() != 1 {
        return Err(value_err(format!("boundaries tensor must be 1 dimension, but got dim({})", b.ndim())));
    }
    let v = tensor_or_number(input, b.dtype(), "bucketize's input")?;
    refuse_bool_search(&b, &v)?;
    enter_tensor(py, Cost::Elements(v.numel()), || b.searchsorted(&v, right))
}

/// PyTorch's search has no bool kernel.
fn refuse_bool_search(seq: &Tensor, v: &Tensor) -> PyResult<()> {
    for t in [seq, v] {
        if t.dtype() == crate::tensor::dtype::DType::Bool {
            return Err(super::tensor_pairwise::not_implemented_for("searchsorted_out_cpu", t.dtype()));
        }
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(bucketize, m)?)?;
    Ok(())
}
