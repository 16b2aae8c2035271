//! `_roof` and `_copy_bandwidth`: the machine's limits for `benches/compare.py` (the measurements
//! are in `src/roof.rs`), built only with the `bench` feature. Private: not part of the API.

use pyo3::prelude::*;

use crate::roof::{copy_bandwidth, fma_roof, Isa, Store};

/// The float32 FMA throughput of `threads` threads using `isa` ("avx512" or "avx2"), in GFLOP/s,
/// measured for about `seconds` without the GIL. ValueError for an unknown instruction set or one
/// this CPU lacks, or arguments out of range.
#[pyfunction]
#[pyo3(signature = (isa, threads, seconds=0.2))]
fn _roof(py: Python<'_>, isa: &str, threads: usize, seconds: f64) -> PyResult<f64> {
    let isa = Isa::parse(isa)?;
    Ok(py.detach(|| fma_roof(isa, threads, seconds))?)
}

/// The memory copy bandwidth of `threads` threads (bytes read plus written per second, in GB/s),
/// copying `mbytes` MiB into a second buffer as large for about `seconds`, without the GIL;
/// `store` is "cached" (ordinary stores), "streaming" (non-temporal stores) or "best" (the faster
/// of the two; NOTE [Copy probe]).
#[pyfunction]
#[pyo3(signature = (threads, mbytes=256, seconds=0.5, store="best"))]
fn _copy_bandwidth(py: Python<'_>, threads: usize, mbytes: usize, seconds: f64, store: &str) -> PyResult<f64> {
    let store = Store::parse(store)?;
    Ok(py.detach(|| copy_bandwidth(threads, mbytes, seconds, store))?)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_roof, m)?)?;
    m.add_function(wrap_pyfunction!(_copy_bandwidth, m)?)
}
