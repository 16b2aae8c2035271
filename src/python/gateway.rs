//! The one way a binding calls the core (STYLE.md 11).
//!
//! NOTE [The gateway]: every binding that calls a fallible core function does it through `enter`
//! (or `enter_tensor`, which also wraps the resulting tensor). The gateway owns two decisions, so
//! that no method makes them on its own:
//!
//! 1. **The GIL.** The call says what its work costs (`Cost`). Work that scales with tensor size
//!    runs with the GIL released once it passes `DETACH_OVER` elements, and work that is heavy
//!    whatever the sizes (matrix products, a backward pass) always releases it, so that other
//!    Python threads run meanwhile. Metadata work (a view, a shape, a flag) and small tensors keep
//!    it: giving up and taking back the GIL is two C-API calls and a possible thread switch. Measured
//!    on `x.neg()` of one element, releasing always added about 500 instructions to the 2,200 of the
//!    whole native call (callgrind) and about a quarter to its wall time, and no other thread would
//!    get anything done in that time.
//! 2. **Errors.** The core's `Error` becomes a Python exception in one place, `From<Error> for
//!    PyErr` in `errors.rs`; the gateway applies it.
//!
//! What stays outside: parsing arguments and building results touch Python objects, so they run
//! before and after the call, with the GIL. Infallible metadata getters (`ndim`, `is_leaf`) call
//! nothing that can fail and need no gateway. Code that runs without the GIL must not run Python
//! code while it holds a tensor's lock (NOTE [No Python under a tensor lock]); the core does not, and a Python callback that
//! it reaches (a hook, a warning) takes the GIL itself.
//!
//! A Ctrl-C that arrives while the GIL is released is seen by the interpreter when the call
//! returns, as for any built-in function; the backward pass also checks for it as it goes
//! (`autograd.rs::check_interrupt`).

use pyo3::prelude::*;

use super::tensor::PyTensor;
use crate::{Result, Tensor};

/// Elements above which work proportional to the elements runs with the GIL released.
pub(crate) const DETACH_OVER: usize = 1 << 15;

/// What a core call costs, which decides whether it releases the GIL (NOTE [The gateway]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cost {
    /// Metadata only (views, shapes, flags): keeps the GIL.
    Metadata,
    /// Work proportional to this many elements: releases the GIL above `DETACH_OVER`.
    Elements(usize),
    /// Heavy whatever the sizes (matrix products, backward): always releases the GIL.
    Heavy,
}

impl Cost {
    fn releases_gil(self) -> bool {
        match self {
            Cost::Metadata => false,
            Cost::Elements(n) => n > DETACH_OVER,
            Cost::Heavy => true,
        }
    }
}

/// Runs a core call under the gateway's rule (NOTE [The gateway]): without the GIL when `cost`
/// says so, with its error mapped to the Python exception.
#[inline]
pub(crate) fn enter<T: Send>(py: Python<'_>, cost: Cost, f: impl FnOnce() -> Result<T> + Send) -> PyResult<T> {
    let result = if cost.releases_gil() { py.detach(f) } else { f() };
    result.map_err(PyErr::from)
}

/// `enter` for a call that makes a tensor: returns its Python object.
#[inline]
pub(crate) fn enter_tensor(
    py: Python<'_>,
    cost: Cost,
    f: impl FnOnce() -> Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    let t = enter(py, cost, f)?;
    Ok(PyTensor::wrap(py, t)?.into_any())
}

/// The engine's `HostLock` (NOTE [The host lock in backward] in `engine.rs`): the GIL, taken for a
/// whole small backward whose nodes call Python, and given up around what waits for other threads.
pub(crate) fn install_host_lock() {
    fn with(f: &mut (dyn FnMut() + Send)) {
        Python::attach(|_| f());
    }
    fn without(f: &mut (dyn FnMut() + Send)) {
        // SAFETY: PyGILState_Check only reads the calling thread's state.
        if unsafe { pyo3::ffi::PyGILState_Check() } == 1 {
            Python::attach(|py| py.detach(f));
        } else {
            f();
        }
    }
    crate::autograd::engine::set_host_lock(crate::autograd::engine::HostLock { with, without });
}
