//! The one mapping from the core's `Error` to Python exceptions (STYLE.md 12), and back for
//! Python exceptions that travel through the engine.

use std::sync::Arc;

use pyo3::exceptions::{
    PyAttributeError, PyIndexError, PyMemoryError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use crate::error::{Error, ExternalPayload};

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::External { payload, message } => match payload.0.downcast_ref::<PyErr>() {
                Some(err) => Python::attach(|py| err.clone_ref(py)),
                None => PyRuntimeError::new_err(message),
            },
            Error::Index(m) => PyIndexError::new_err(m),
            Error::Type(m) => PyTypeError::new_err(m),
            Error::Overflow(m) => PyOverflowError::new_err(m),
            Error::Attribute(m) => PyAttributeError::new_err(m),
            e @ Error::SliceStep { .. } => PyValueError::new_err(e.to_string()),
            Error::InvalidArgument(m) => PyValueError::new_err(m),
            Error::OutOfMemory(m) => PyMemoryError::new_err(m),
            Error::NotImplemented(m) => pyo3::exceptions::PyNotImplementedError::new_err(m),
            // No arguments, as the KeyboardInterrupt of Python's default SIGINT handler.
            Error::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err(()),
            Error::SavedTensorModified(info) => {
                let message = info.to_string();
                Python::attach(|py| saved_tensor_error(py, &message, &info).unwrap_or_else(|e| e))
            }
            Error::LinAlg(m) => Python::attach(|py| linalg_error(py, &m).unwrap_or_else(|e| e)),
            Error::Shape(m)
            | Error::Dtype(m)
            | Error::Value(m)
            | Error::Autograd(m)
            | Error::Anomaly(m)
            | Error::CustomFunction(m) => PyRuntimeError::new_err(m),
        }
    }
}

/// `tapegrad.SavedTensorModifiedError`, looked up once when the native module is imported
/// (`init`), so that raising it cannot fail on a lookup and replace the user's error.
static SAVED_TENSOR_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `tapegrad.linalg.LinAlgError` (defined in `tapegrad._errors`), looked up in `init` as well.
static LINALG_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Finds the Python exception classes the mapping raises; called from the module's init, so that
/// a missing class is an import error rather than a surprise at the first error.
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    let errors = py.import("tapegrad._errors")?;
    let cls = errors.getattr("SavedTensorModifiedError")?.cast_into::<PyType>()?;
    SAVED_TENSOR_ERROR.get_or_init(py, || cls.unbind());
    let cls = errors.getattr("LinAlgError")?.cast_into::<PyType>()?;
    LINALG_ERROR.get_or_init(py, || cls.unbind());
    Ok(())
}

/// Builds `tapegrad.linalg.LinAlgError`.
fn linalg_error(py: Python<'_>, message: &str) -> PyResult<PyErr> {
    let Some(cls) = LINALG_ERROR.get(py) else {
        // Only before the module's init has run; a RuntimeError, the class's base, still says it all.
        return Ok(PyRuntimeError::new_err(message.to_string()));
    };
    Ok(PyErr::from_value(cls.bind(py).call1((message,))?))
}

/// Builds `tapegrad.SavedTensorModifiedError` with its structured attributes.
fn saved_tensor_error(py: Python<'_>, message: &str, info: &crate::error::SavedTensorModified) -> PyResult<PyErr> {
    let Some(cls) = SAVED_TENSOR_ERROR.get(py) else {
        // Only before the module's init has run; a RuntimeError, the class's base, still says it all.
        return Ok(PyRuntimeError::new_err(message.to_string()));
    };
    let cls = cls.bind(py);
    let kwargs = PyDict::new(py);
    kwargs.set_item("saved_by", &info.saved_by)?;
    kwargs.set_item("modified_by", &info.modified_by)?;
    kwargs.set_item("saved_version", info.saved_version)?;
    kwargs.set_item("current_version", info.current_version)?;
    kwargs.set_item("shape", info.shape.clone())?;
    kwargs.set_item("dtype", &info.dtype)?;
    let exc = cls.call((message,), Some(&kwargs))?;
    Ok(PyErr::from_value(exc))
}

/// Wraps a Python exception so that it crosses the engine unchanged.
pub(crate) fn external(err: PyErr) -> Error {
    let message = err.to_string();
    Error::External { message, payload: ExternalPayload(Arc::new(err)) }
}

/// Shows a core warning (anomaly mode's failure reports) as a Python `UserWarning`. A warning
/// filter may turn it into an exception, which the core cannot carry from here: a
/// KeyboardInterrupt is handed back as a pending SIGINT, anything else is reported as unraisable.
pub(crate) fn warn_user(message: &str) {
    Python::attach(|py| {
        let text = std::ffi::CString::new(message.replace('\0', "\\0")).unwrap_or_default();
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        if let Err(e) = PyErr::warn(py, &category, &text, 1) {
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                // SAFETY: a documented C-API call, made with the GIL held.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
            } else {
                e.write_unraisable(py, None);
            }
        }
    })
}
