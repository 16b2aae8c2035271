//! The one mapping from the core's `Error` to Python exceptions (STYLE.md 12), and back for
//! Python exceptions that travel through the engine.

use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyMemoryError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{Error, ExternalPayload};

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::External { payload, message } => match payload.0.downcast_ref::<PyErr>() {
                Some(err) => Python::attach(|py| err.clone_ref(py)),
                None => PyRuntimeError::new_err(message),
            },
            Error::Index(m) => PyIndexError::new_err(m),
            Error::OutOfMemory(m) => PyMemoryError::new_err(m),
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

/// Builds `tapegrad.linalg.LinAlgError` (defined in `tapegrad._errors`).
fn linalg_error(py: Python<'_>, message: &str) -> PyResult<PyErr> {
    let cls = py.import("tapegrad._errors")?.getattr("LinAlgError")?;
    Ok(PyErr::from_value(cls.call1((message,))?))
}

/// Builds `tapegrad.SavedTensorModifiedError` with its structured attributes.
fn saved_tensor_error(py: Python<'_>, message: &str, info: &crate::error::SavedTensorModified) -> PyResult<PyErr> {
    let cls = py.import("tapegrad._errors")?.getattr("SavedTensorModifiedError")?;
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
