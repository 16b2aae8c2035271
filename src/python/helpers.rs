//! The Python helpers the bindings call, handed over explicitly by the package at import
//! (`tapegrad/__init__.py` calls `_install_helpers`) instead of being looked up by module and
//! attribute name: renaming or moving a private Python name then fails at import, loudly, not at
//! the first call that needs it.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Every helper, as the package handed it over.
pub(crate) struct Helpers {
    /// `tapegrad._function._Spec`: what `Function.apply` learns about a class.
    pub(crate) function_spec: Py<PyAny>,
    /// `tapegrad._function._SavedMapping`: `ctx.saved_variables`.
    pub(crate) saved_mapping: Py<PyAny>,
    /// `tapegrad._function._NeedsInputGrad`: `ctx.needs_input_grad`.
    pub(crate) needs_input_grad: Py<PyAny>,
    /// `tapegrad._anomaly.user_location`: the user's stack for anomaly mode.
    pub(crate) user_location: Py<PyAny>,
    /// `tapegrad.SavedTensorModifiedError`, for bindings that build it (`errors.rs` still looks it
    /// up by name; switching it over is a one-line change there).
    #[allow(dead_code)]
    pub(crate) saved_tensor_modified_error: Py<PyAny>,
    /// `tapegrad._types.max_result`, for `max(dim)`'s named tuple (`tensor_ops.rs` still looks it
    /// up by name; switching it over is a one-line change there).
    #[allow(dead_code)]
    pub(crate) max_result: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// The helpers; an error when the native module was imported without its package.
pub(crate) fn helpers(py: Python<'_>) -> PyResult<&Helpers> {
    HELPERS.get(py).ok_or_else(|| {
        crate::error::Error::Autograd(
            "tapegrad's Python helpers are not installed: import the package (`import tapegrad`), \
             not its native module alone"
                .into(),
        )
        .into()
    })
}

/// Called once by the package at import. A second call (a reload) keeps the first set.
#[pyfunction]
#[pyo3(signature = (*, function_spec, saved_mapping, needs_input_grad, user_location, saved_tensor_modified_error, max_result))]
fn _install_helpers(
    py: Python<'_>,
    function_spec: Py<PyAny>,
    saved_mapping: Py<PyAny>,
    needs_input_grad: Py<PyAny>,
    user_location: Py<PyAny>,
    saved_tensor_modified_error: Py<PyAny>,
    max_result: Py<PyAny>,
) -> PyResult<()> {
    for (name, f) in [
        ("function_spec", &function_spec),
        ("saved_mapping", &saved_mapping),
        ("needs_input_grad", &needs_input_grad),
        ("user_location", &user_location),
        ("saved_tensor_modified_error", &saved_tensor_modified_error),
        ("max_result", &max_result),
    ] {
        if !f.bind(py).is_callable() {
            return Err(crate::error::Error::Type(format!("_install_helpers: {name} must be callable")).into());
        }
    }
    let _ = HELPERS.set(
        py,
        Helpers {
            function_spec,
            saved_mapping,
            needs_input_grad,
            user_location,
            saved_tensor_modified_error,
            max_result,
        },
    );
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_install_helpers, m)?)?;
    Ok(())
}
