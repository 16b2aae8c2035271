//! Zero-copy exchange of tensors: `numpy()`, `__array__`, `__array_interface__`, `__dlpack__`,
//! `__dlpack_device__`, `tg.from_numpy` and `tg.from_dlpack` (NOTE [Sharing memory with NumPy],
//! NOTE [DLPack]).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::convert::{dlpack, share_numpy, share_to_numpy, to_numpy};
use super::tensor::PyTensor;
use crate::error::Error;

/// PyTorch's refusal of `numpy()` on a tensor that requires grad (grad mode on).
fn check_numpy_allowed(t: &crate::Tensor) -> PyResult<()> {
    // As in PyTorch, under no_grad the values may be read even from a tensor that requires grad.
    if t.requires_grad() && crate::autograd::grad_mode::is_grad_enabled() {
        return Err(Error::Autograd(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.".into(),
        )
        .into());
    }
    Ok(())
}

#[pymethods]
impl PyTensor {
    /// A NumPy array sharing this tensor's memory: writes through either are seen by the other
    /// (views keep their strides and offset). A tensor that requires grad is refused unless
    /// `force=True` (which still shares, as PyTorch's); or use `t.detach().numpy()`.
    ///
    /// >>> import tapegrad as tg
    /// >>> t = tg.zeros(3)
    /// >>> a = t.numpy(); a[0] = 5.0
    /// >>> t
    /// tensor([5., 0., 0.])
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        if !force {
            check_numpy_allowed(&self.inner)?;
        }
        share_to_numpy(py, &self.inner)
    }

    /// NumPy's conversion protocol (NumPy 2): shares memory unless `copy=True` or a `dtype` other
    /// than the tensor's is asked for; `copy=False` with another dtype is a `ValueError`.
    ///
    /// >>> import numpy as np, tapegrad as tg
    /// >>> t = tg.tensor([1, 2])
    /// >>> np.asarray(t, dtype=np.float64)
    /// array([1., 2.])
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        check_numpy_allowed(&self.inner)?;
        let arr = if copy == Some(true) { to_numpy(py, &self.inner)? } else { share_to_numpy(py, &self.inner)? };
        let Some(dtype) = dtype.filter(|d| !d.is_none()) else { return Ok(arr) };
        let np = py.import("numpy")?;
        let wanted = np.call_method1("dtype", (dtype,))?;
        if arr.getattr("dtype")?.eq(&wanted)? {
            return Ok(arr);
        }
        if copy == Some(false) {
            return Err(PyValueError::new_err(format!(
                "Unable to avoid copy while creating an array as requested: the tensor's dtype is {}, not {}",
                self.inner.dtype(),
                wanted.str()?
            )));
        }
        arr.call_method1("astype", (wanted,))
    }

    /// The NumPy array interface (version 3) over this tensor's memory, so that NumPy and the
    /// libraries that read it share the memory. A tensor that requires grad (grad mode on) has none
    /// (`AttributeError`), so `np.asarray` falls back to `__array__`, which refuses it as `numpy()` does.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(2, 3).__array_interface__['shape']
    /// (2, 3)
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        // An AttributeError, not numpy()'s RuntimeError: `hasattr(t, "__array_interface__")` stays
        // a plain False, and NumPy then calls `__array__`, which raises PyTorch's error.
        if check_numpy_allowed(&self.inner).is_err() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "a tensor that requires grad has no __array_interface__; use tensor.detach()",
            ));
        }
        super::convert::array_interface(py, &self.inner)
    }

    /// A DLPack capsule over this tensor's memory (no copy unless `copy=True`). `stream` must be
    /// `None` (CPU); `max_version >= (1, 0)` gives a versioned capsule.
    ///
    /// >>> import numpy as np, tapegrad as tg
    /// >>> t = tg.tensor([1.0, 2.0])
    /// >>> a = np.from_dlpack(t); a[0] = 7.0
    /// >>> t
    /// tensor([7., 2.])
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        dlpack::export(py, &self.inner, stream, max_version, dl_device, copy)
    }

    /// The DLPack device: `(1, 0)`, the CPU.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.zeros(1).__dlpack_device__()
    /// (1, 0)
    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        dlpack::device(py)
    }
}

/// A tensor sharing a NumPy array's memory: writes through either are seen by the other.
///
/// >>> import numpy as np, tapegrad as tg
/// >>> a = np.zeros(3)
/// >>> t = tg.from_numpy(a); t.add_(1.0)
/// tensor([1., 1., 1.], dtype=tapegrad.float64)
/// >>> a
/// array([1., 1., 1.])
#[pyfunction]
fn from_numpy(py: Python<'_>, arr: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    PyTensor::wrap(py, share_numpy(arr)?)
}

/// A tensor sharing the memory of any object with `__dlpack__` (NumPy arrays, PyTorch tensors...)
/// or of a DLPack capsule. `copy=True` copies.
///
/// >>> import numpy as np, tapegrad as tg
/// >>> a = np.arange(3.0)
/// >>> t = tg.from_dlpack(a); a[0] = 9.0
/// >>> t
/// tensor([9., 1., 2.], dtype=tapegrad.float64)
#[pyfunction]
#[pyo3(signature = (obj, *, device=None, copy=None))]
fn from_dlpack(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Py<PyTensor>> {
    if let Some(d) = device.filter(|d| !d.is_none()) {
        super::convert::check_device(Some(d))?;
    }
    PyTensor::wrap(py, dlpack::import(py, obj, copy)?)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_class::<super::convert::SharedMemory>()?;
    Ok(())
}
