//! `set_float32_matmul_precision` / `get_float32_matmul_precision`: the process-wide setting of
//! `ops/matmul_precision.rs`, wrapped with docstrings in `python/tapegrad/_precision.py`.

use pyo3::prelude::*;

use crate::ops::matmul_precision::{self as mp, MatmulPrecision};

#[pyfunction]
fn _set_float32_matmul_precision(precision: &Bound<'_, PyAny>) -> PyResult<()> {
    let Ok(name) = precision.extract::<String>() else {
        return Err(crate::error::Error::Type(format!(
            "set_float32_matmul_precision expects a str, got {}",
            precision.get_type().name()?
        ))
        .into());
    };
    mp::set_float32_matmul_precision(MatmulPrecision::parse(&name)?);
    Ok(())
}

#[pyfunction]
fn _get_float32_matmul_precision() -> &'static str {
    mp::float32_matmul_precision().name()
}

#[pyfunction]
fn _bf16_matmul_available() -> bool {
    mp::bf16_products_available()
}

/// The kernel of "medium": "amx", "avx512_bf16", or None (exact float32).
#[pyfunction]
fn _bf16_matmul_kernel() -> Option<&'static str> {
    mp::bf16_kernel_name()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_float32_matmul_precision, m)?)?;
    m.add_function(wrap_pyfunction!(_get_float32_matmul_precision, m)?)?;
    m.add_function(wrap_pyfunction!(_bf16_matmul_available, m)?)?;
    m.add_function(wrap_pyfunction!(_bf16_matmul_kernel, m)?)?;
    Ok(())
}
