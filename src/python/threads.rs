//! `set_num_threads` / `get_num_threads`: the size of the pool of `parallel.rs`, wrapped with
//! docstrings in `python/tapegrad/_threads.py`. Refusals as PyTorch's: `RuntimeError` for a
//! non-integer or a count below 1, `ValueError` for an integer past int64.

use pyo3::prelude::*;
use pyo3::types::PyBool;

use crate::error::Error;

#[pyfunction]
fn _set_num_threads(py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<()> {
    if n.is_instance_of::<PyBool>() || n.call_method0("__index__").is_err() {
        let kind = n.get_type().name()?;
        return Err(Error::Value(format!("set_num_threads expects an int, but got {kind}")).into());
    }
    let n: i64 =
        n.extract().map_err(|_| Error::InvalidArgument("set_num_threads: the count does not fit int64".into()))?;
    let n = usize::try_from(n).unwrap_or(0);
    // Building a pool spawns threads and dropping the old one waits for nothing: no GIL needed.
    Ok(py.detach(|| crate::parallel::set_threads(n))?)
}

#[pyfunction]
fn _get_num_threads(py: Python<'_>) -> usize {
    py.detach(crate::parallel::threads)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_get_num_threads, m)?)?;
    Ok(())
}
