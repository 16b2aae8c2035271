//! The factory functions (`tg.tensor`, `tg.zeros`, `tg.arange`, ...): each reads its arguments,
//! makes the tensor through the gateway and marks it as requiring grad if asked.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::{check_device, parse_dtype, scalar, sizes, tensor_from_data};
use super::gateway::{enter, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::tensor::default_dtype::default_float;
use crate::tensor::dtype::{DType, Scalar};
use crate::Tensor;

fn opt_dtype(dtype: Option<&Bound<'_, PyAny>>, default: DType) -> PyResult<DType> {
    match dtype {
        Some(d) if !d.is_none() => parse_dtype(d),
        _ => Ok(default),
    }
}

/// Makes a factory's tensor through the gateway, then marks it as requiring grad if asked.
fn finish(
    py: Python<'_>,
    cost: Cost,
    requires_grad: bool,
    make: impl FnOnce() -> crate::Result<Tensor> + Send,
) -> PyResult<Py<PyTensor>> {
    let t = enter(py, cost, || {
        let t = make()?;
        if requires_grad {
            t.set_requires_grad(true)?;
        }
        Ok(t)
    })?;
    PyTensor::wrap(py, t)
}

/// The cost of making a tensor of this shape (saturating: the core refuses impossible sizes).
fn elements(shape: &[usize]) -> Cost {
    Cost::Elements(shape.iter().fold(1usize, |n, &d| n.saturating_mul(d)))
}

/// A new tensor holding a copy of `data` (a number, nested lists, a NumPy array or a tensor).
/// Python floats become float32, ints int64, bools bool; arrays keep their dtype.
///
/// >>> import tapegrad as tg
/// >>> tg.tensor([[1, 2], [3, 4]])
/// tensor([[1, 2],
///         [3, 4]])
/// >>> tg.tensor([1.5], dtype=tg.float64, requires_grad=True)
/// tensor([1.5000], dtype=tapegrad.float64, requires_grad=True)
#[pyfunction]
#[pyo3(signature = (data, dtype=None, requires_grad=false, device=None))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let dt = match dtype {
        Some(d) if !d.is_none() => Some(parse_dtype(d)?),
        _ => None,
    };
    let t = tensor_from_data(data, dt)?;
    finish(py, Cost::Metadata, requires_grad, || Ok(t))
}

/// A tensor of zeros; the shape as ints or as one sequence (float32 unless `dtype` is given).
///
/// >>> import tapegrad as tg
/// >>> tg.zeros(2, 3).shape
/// (2, 3)
/// >>> tg.zeros((2,), dtype=tg.int64)
/// tensor([0, 0])
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, default_float())?);
    finish(py, elements(&shape), requires_grad, || Tensor::zeros(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn ones(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, default_float())?);
    finish(py, elements(&shape), requires_grad, || Tensor::ones(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn empty(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    zeros(py, shape, dtype, requires_grad, device)
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn randn(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, default_float())?);
    finish(py, elements(&shape), requires_grad, || Tensor::randn(&shape, dtype))
}

#[pyfunction]
#[pyo3(name = "rand", signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn rand_uniform(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, default_float())?);
    finish(py, elements(&shape), requires_grad, || Tensor::rand(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (shape, fill_value, dtype=None, requires_grad=false, device=None))]
fn full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let s = scalar(fill_value).ok_or_else(|| Error::Type("full(): fill_value must be a number".into()))?;
    let shape = sizes(&PyTuple::new(py, [shape])?)?;
    let dtype = opt_dtype(dtype, s.natural_dtype())?;
    finish(py, elements(&shape), requires_grad, || Tensor::full(&shape, s, dtype))
}

#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, dtype=None, requires_grad=false, device=None))]
fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let num = |o: &Bound<'_, PyAny>| {
        scalar(o).ok_or_else(|| PyErr::from(Error::Type("arange(): bounds must be numbers".into())))
    };
    let (s, e) = match end.filter(|e| !e.is_none()) {
        Some(e) => (num(start)?, num(e)?),
        None => (Scalar::Int(0), num(start)?),
    };
    let st = match step.filter(|s| !s.is_none()) {
        Some(x) => num(x)?,
        None => Scalar::Int(1),
    };
    let all_int = [s, e, st].iter().all(|v| matches!(v, Scalar::Int(_)));
    let dt = opt_dtype(dtype, if all_int { DType::Int64 } else { default_float() })?;
    if dt == DType::Bool {
        return Err(Error::NotImplemented("\"arange_cpu\" not implemented for 'Bool'".into()).into());
    }
    // The element count, as far as it can be known before the core checks the bounds.
    let count = ((e.as_f64() - s.as_f64()) / st.as_f64()).abs();
    let cost = Cost::Elements(if count.is_finite() { count as usize } else { 0 });
    finish(py, cost, requires_grad, || Tensor::arange_scalar(s, e, st, dt))
}

#[pyfunction]
#[pyo3(signature = (n, m=None, dtype=None, requires_grad=false, device=None))]
fn eye(
    py: Python<'_>,
    n: isize,
    m: Option<isize>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    // Signed so that a negative size is a RuntimeError, as in PyTorch, not the OverflowError of
    // PyO3's conversion to an unsigned integer.
    let size = |v: isize, what: &str| {
        usize::try_from(v)
            .map_err(|_| PyErr::from(Error::Value(format!("{what} must be greater or equal to 0, got {v}"))))
    };
    let (n, m) = (size(n, "n")?, size(m.unwrap_or(n), "m")?);
    let dtype = opt_dtype(dtype, default_float())?;
    finish(py, elements(&[n, m]), requires_grad, || Tensor::eye(n, m, dtype))
}

#[pyfunction]
fn manual_seed(seed: u64) {
    crate::manual_seed(seed)
}

/// The default floating-point dtype: what factories make without a `dtype`, what Python floats
/// become, and what integers are computed in when an operation needs a float.
///
/// >>> import tapegrad as tg
/// >>> tg.get_default_dtype()
/// tapegrad.float32
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> Py<super::convert::PyDType> {
    super::convert::dtype_object(py, default_float())
}

/// Sets the default floating-point dtype (`tg.float32` or `tg.float64`; anything else is a
/// `TypeError`). Process-wide, as in PyTorch.
///
/// >>> import tapegrad as tg
/// >>> tg.set_default_dtype(tg.float64)
/// >>> tg.tensor([1.5]).dtype, tg.zeros(1).dtype, (tg.tensor([1]) / 2).dtype
/// (tapegrad.float64, tapegrad.float64, tapegrad.float64)
/// >>> tg.set_default_dtype(tg.float32)
#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let dt = parse_dtype(d)?;
    crate::tensor::default_dtype::set_default_float(dt).map_err(PyErr::from)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(rand_uniform, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    Ok(())
}
