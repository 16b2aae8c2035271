//! `Tensor`'s element-wise functions of one tensor: `neg`, `abs`, `exp`, `log`, `sqrt`, `sin`,
//! `cos`, `tanh`, `sigmoid`, `relu`, and `clamp` (with `clip` and `clamp_`) and its bound rules.

use pyo3::prelude::*;

use super::convert::tensor_arg;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::Tensor;

/// The number bounds of `clamp`: each None or a Python number (the core decides the dtype from
/// their kinds, `Tensor::clamp_result_dtype`).
fn clamp_bounds(
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<crate::Scalar>, Option<crate::Scalar>)> {
    let value = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<crate::Scalar>> {
        let Some(b) = b.filter(|b| !b.is_none()) else { return Ok(None) };
        match super::convert::scalar(b) {
            Some(s) => Ok(Some(s)),
            None => Err(Error::Type(format!("clamp(): a bound must be a number, got {}", b.get_type().name()?)).into()),
        }
    };
    Ok((value(min)?, value(max)?))
}

/// The bounds of `clamp` as tensors when at least one of them is a tensor (a number beside a tensor
/// becomes a 0-d tensor); None when both are numbers or missing.
fn tensor_bounds(
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<(Option<Tensor>, Option<Tensor>)>> {
    let (min, max) = (min.filter(|b| !b.is_none()), max.filter(|b| !b.is_none()));
    let is_tensor = |b: Option<&Bound<'_, PyAny>>| b.is_some_and(|b| b.cast::<PyTensor>().is_ok());
    if !is_tensor(min) && !is_tensor(max) {
        return Ok(None);
    }
    let as_tensor = |b: Option<&Bound<'_, PyAny>>| b.map(|b| tensor_arg(b, None)).transpose();
    Ok(Some((as_tensor(min)?, as_tensor(max)?)))
}

#[pymethods]
impl PyTensor {
    fn neg(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.neg())
    }
    fn abs(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.abs())
    }
    fn exp(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.exp())
    }
    fn log(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.log())
    }
    fn sqrt(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sqrt())
    }
    fn sin(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sin())
    }
    fn cos(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.cos())
    }
    fn tanh(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.tanh())
    }
    fn sigmoid(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sigmoid())
    }
    fn relu(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.relu())
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(bounds) = tensor_bounds(min, max)? {
            let (lo, hi) = bounds;
            let cost = Cost::Elements(self.inner.numel());
            return enter_tensor(py, cost, || self.inner.clamp_tensors(lo.as_ref(), hi.as_ref()));
        }
        let (lo, hi) = clamp_bounds(min, max)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.clamp_scalar(lo, hi))
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (py, t) = (slf.py(), &slf.get().inner);
        let cost = Cost::Elements(t.numel());
        if let Some((lo, hi)) = tensor_bounds(min, max)? {
            enter(py, cost, || t.clamp_tensors_(lo.as_ref(), hi.as_ref()))?;
            return Ok(slf);
        }
        let (lo, hi) = clamp_bounds(min, max)?;
        enter(py, cost, || t.clamp_scalar_(lo, hi))?;
        Ok(slf)
    }
}
