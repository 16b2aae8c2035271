//! `Tensor`'s reductions: `sum`, `mean`, `max` (whole or along a dim, with indices) and `argmax`.

use pyo3::prelude::*;
use pyo3::types::PyInt;

use super::convert::parse_dtype;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::PyTensor;

/// `dim` arguments: None, an int, or a sequence of ints.
fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) if d.is_instance_of::<PyInt>() => Ok(Some(vec![d.extract()?])),
        Some(d) => {
            let dims: Vec<isize> = d.try_iter()?.map(|x| x?.extract::<isize>()).collect::<PyResult<_>>()?;
            // An empty dim list reduces over every dimension, as in PyTorch.
            Ok(if dims.is_empty() { None } else { Some(dims) })
        }
    }
}

#[pymethods]
impl PyTensor {
    /// `dtype=`: the input is converted to it first, and the sum stays in it (so an integer sum
    /// can wrap in a narrow type), as in PyTorch.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = dtype.filter(|d| !d.is_none()).map(parse_dtype).transpose()?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || {
            let x = match dt {
                Some(d) if d != self.inner.dtype() => self.inner.to_dtype(d)?,
                _ => self.inner.clone(),
            };
            let s = x.sum(dims.as_deref(), keepdim)?;
            match dt {
                Some(d) if d != s.dtype() => s.to_dtype(d),
                _ => Ok(s),
            }
        })
    }
    /// `dtype=`: the input is converted to it first, as in PyTorch.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        let dt = dtype.filter(|d| !d.is_none()).map(parse_dtype).transpose()?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || match dt {
            Some(d) if d != self.inner.dtype() => self.inner.to_dtype(d)?.mean(dims.as_deref(), keepdim),
            _ => self.inner.mean(dims.as_deref(), keepdim),
        })
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        match dim {
            None => enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.max_all()),
            Some(d) => {
                let (v, i) = enter(py, Cost::Elements(self.inner.numel()), || self.inner.max_dim(d, keepdim))?;
                let cls = py.import("tapegrad._types")?.getattr("max_result")?;
                Ok(cls.call1((PyTensor::wrap(py, v)?, PyTensor::wrap(py, i)?))?.unbind())
            }
        }
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.argmax(dim, keepdim))
    }
}
