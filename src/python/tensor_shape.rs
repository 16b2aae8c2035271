//! `Tensor`'s shape and view methods (`t`, `T`, `transpose`, `permute`, `reshape`, `view`,
//! `flatten`, `unsqueeze`, `squeeze`, `expand`, `narrow`), `contiguous` and `clone`, and
//! `tg.cat`/`tg.stack`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::convert::shape_args;
use super::gateway::{enter_tensor, Cost};
use super::tensor::{tensor_list, PyTensor};
use crate::error::Error;
use crate::Tensor;

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
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<isize>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || match dim {
            Some(d) => self.inner.squeeze_dim(d),
            None => self.inner.squeeze(),
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
