//! Python scalars and argument sequences: numbers as `Scalar`s, operands (a tensor or a number),
//! tensor arguments, shape arguments and factory sizes.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

use super::tensor_from_data;
use crate::error::Error;
use crate::python::gateway::{enter, Cost};
use crate::python::tensor::PyTensor;
use crate::tensor::dtype::{DType, Scalar};
use crate::Tensor;

/// A Python scalar (bool before int: `True` is an int in Python).
pub(crate) fn scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    // NumPy scalars and 0-d arrays.
    let ty = obj.get_type().name().ok()?.to_string();
    if ty.starts_with("float") {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if ty.starts_with("int") || ty.starts_with("uint") {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if ty == "bool" || ty == "bool_" {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    None
}

/// An operand: a tensor or a scalar.
pub(crate) enum Operand {
    Tensor(Tensor),
    Scalar(Scalar),
}

/// Reads an operand; `None` when the object is neither (the dunder then returns NotImplemented).
pub(crate) fn operand(obj: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(Operand::Tensor(t.get().inner.clone()));
    }
    if let Some(s) = scalar(obj) {
        return Some(Operand::Scalar(s));
    }
    if obj.hasattr("__array__").unwrap_or(false) || obj.is_instance_of::<pyo3::types::PyList>() {
        return tensor_from_data(obj, None).ok().map(Operand::Tensor);
    }
    None
}

/// Reads a tensor argument, accepting scalars and array-likes as well (as PyTorch ops do).
pub(crate) fn tensor_arg(obj: &Bound<'_, PyAny>, like: Option<DType>) -> PyResult<Tensor> {
    match operand(obj) {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => {
            let dtype = like.map(|d| s.result_dtype_with(d)).unwrap_or(s.natural_dtype());
            enter(obj.py(), Cost::Metadata, || Tensor::scalar_tensor(s, dtype))
        }
        None => {
            Err(Error::Type(format!("expected a Tensor, a number or an array-like, got {}", obj.get_type().name()?))
                .into())
        }
    }
}

/// Shape arguments: `f(2, 3)`, `f((2, 3))` or `f([2, 3])`.
pub(crate) fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    let seq = if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
        args.get_item(0)?
    } else {
        args.clone().into_any()
    };
    let mut out = Vec::new();
    for item in seq.try_iter()? {
        let item = item?;
        if item.is_instance_of::<PyBool>() || !item.hasattr("__index__")? {
            return Err(Error::Type(format!("shape entries must be ints, got {}", item.get_type().name()?)).into());
        }
        out.push(item.call_method0("__index__")?.extract::<isize>()?);
    }
    Ok(out)
}

/// Non-negative sizes for factories.
pub(crate) fn sizes(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    shape_args(args)?
        .into_iter()
        .map(|d| {
            usize::try_from(d)
                .map_err(|_| PyErr::from(Error::Value(format!("Trying to create tensor with negative dimension {d}"))))
        })
        .collect()
}
