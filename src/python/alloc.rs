//! `_release_cached_memory` and `_cached_memory`: the global allocator's large-block cache (NOTE
//! [Large-block cache] in `src/alloc.rs`). Private: not part of the API.

use pyo3::prelude::*;

/// Unmaps every large block the allocator keeps for reuse; returns the bytes given back.
#[pyfunction]
fn _release_cached_memory() -> usize {
    crate::alloc::release_cached()
}

/// `(cached, mapped)`: bytes of large blocks kept for reuse, and of large blocks mapped (live or
/// kept).
#[pyfunction]
fn _cached_memory() -> (usize, usize) {
    crate::alloc::cached_and_mapped()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_release_cached_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_cached_memory, m)?)
}
