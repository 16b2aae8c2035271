//! `t[...]` and `t[...] = value`: parsing Python index expressions into the core's `IndexItem`s.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyList, PySlice, PyTuple};

use super::convert::tensor_arg;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::ops::IndexItem;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;

fn opt_isize(o: Bound<'_, PyAny>) -> PyResult<Option<isize>> {
    if o.is_none() {
        Ok(None)
    } else {
        Ok(Some(o.call_method0("__index__")?.extract()?))
    }
}

fn item(obj: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(IndexItem::NewAxis);
    }
    if obj.is(py.Ellipsis()) {
        return Ok(IndexItem::Ellipsis);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t: &Tensor = &t.get().inner;
        return match t.dtype() {
            DType::Bool => Ok(IndexItem::Mask(t.clone())),
            // A uint8 tensor is a mask, as PyTorch still takes it (deprecated there).
            DType::UInt8 => Ok(IndexItem::Mask(enter(py, Cost::Elements(t.numel()), || t.to_dtype(DType::Bool))?)),
            DType::Int64 | DType::Int32 if t.numel() == 1 && t.ndim() == 0 => {
                Ok(IndexItem::Int(enter(py, Cost::Metadata, || t.item_scalar())?.as_i64() as isize))
            }
            DType::Int64 => Ok(IndexItem::Tensor(t.clone())),
            DType::Int32 => Ok(IndexItem::Tensor(enter(py, Cost::Elements(t.numel()), || t.to_dtype(DType::Int64))?)),
            other => Err(Error::Index(format!(
                "tensors used as indices must be long, int, byte or bool tensors (got a {other} tensor of shape {:?})",
                t.shape()
            ))
            .into()),
        };
    }
    if obj.is_instance_of::<PyBool>() {
        // As in PyTorch and NumPy: `True` is a 0-d mask (a new axis of size 1), `False` one of size 0.
        let value = Scalar::Bool(obj.extract()?);
        let t = enter(py, Cost::Metadata, || Tensor::full(&[], value, DType::Bool))?;
        return Ok(IndexItem::Mask(t));
    }
    if obj.is_instance_of::<PyInt>() || (obj.hasattr("__index__")? && !obj.hasattr("shape")?) {
        return Ok(IndexItem::Int(obj.call_method0("__index__")?.extract()?));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let step = opt_isize(s.getattr("step")?)?.unwrap_or(1);
        // Refused while parsing, before any later item is read; the core refuses it too, for the Rust API.
        if step <= 0 {
            return Err(Error::SliceStep { step }.into());
        }
        return Ok(IndexItem::Slice {
            start: opt_isize(s.getattr("start")?)?,
            stop: opt_isize(s.getattr("stop")?)?,
            step,
        });
    }
    if obj.is_instance_of::<PyList>() || obj.hasattr("__array__")? {
        let t = super::convert::tensor_from_data(obj, None)?;
        if t.dtype() == DType::Bool {
            return Ok(IndexItem::Mask(t));
        }
        // A NumPy integer scalar (np.int64(1), np.intp) or 0-d integer array is an integer, as in
        // NumPy and PyTorch; a NumPy bool scalar is a 0-d mask above, as Python's bool.
        if t.dtype().is_int() && t.ndim() == 0 {
            return Ok(IndexItem::Int(enter(py, Cost::Metadata, || t.item_scalar())?.as_i64() as isize));
        }
        if t.dtype() == DType::Int64 {
            return Ok(IndexItem::Tensor(t));
        }
        // NumPy integer arrays of any width index as NumPy does: as integers.
        if t.dtype().is_int() {
            return Ok(IndexItem::Tensor(enter(py, Cost::Elements(t.numel()), || t.to_dtype(DType::Int64))?));
        }
        // An empty list is an empty integer index, as in PyTorch.
        if t.numel() == 0 {
            return Ok(IndexItem::Tensor(enter(py, Cost::Metadata, || t.to_dtype(DType::Int64))?));
        }
        return Err(Error::Index(format!(
            "tensors used as indices must be long, int, byte or bool tensors (got {})",
            t.dtype()
        ))
        .into());
    }
    Err(Error::Type(format!(
        "invalid index of type {}: use ints, slices, None, ..., a bool mask or int64 tensors",
        obj.get_type().name()?
    ))
    .into())
}

fn items(key: &Bound<'_, PyAny>) -> PyResult<Vec<IndexItem>> {
    if let Ok(t) = key.cast::<PyTuple>() {
        t.iter().map(|o| item(&o)).collect()
    } else {
        Ok(vec![item(key)?])
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let its = items(key)?;
        // Basic indexing makes a view; a mask or an integer tensor gathers elements into a new tensor.
        let copies = its.iter().any(|i| matches!(i, IndexItem::Mask(_) | IndexItem::Tensor(_)));
        let cost = if copies { Cost::Elements(self.inner.numel()) } else { Cost::Metadata };
        enter_tensor(py, cost, || self.inner.index(&its))
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let its = items(key)?;
        let v = tensor_arg(value, Some(self.inner.dtype()))?;
        enter(py, Cost::Elements(self.inner.numel()), || self.inner.index_put_(&its, &v))
    }
}
