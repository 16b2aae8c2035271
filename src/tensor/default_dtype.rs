//! The default floating-point dtype (`tg.set_default_dtype`): what factories make without a dtype,
//! what Python floats become, and what integer and bool operands are computed in when an operation
//! needs a float (`/`, `sqrt`, `int_tensor + 1.5`). float32 unless set; process-wide, as PyTorch's.

use std::sync::atomic::{AtomicBool, Ordering};

use super::dtype::DType;
use crate::error::{Error, Result};

static FLOAT64: AtomicBool = AtomicBool::new(false);

/// The default floating-point dtype.
pub fn default_float() -> DType {
    if FLOAT64.load(Ordering::Relaxed) {
        DType::Float64
    } else {
        DType::Float32
    }
}

/// Sets the default floating-point dtype; only floating-point dtypes are accepted.
pub fn set_default_float(dtype: DType) -> Result<()> {
    match dtype {
        DType::Float32 => FLOAT64.store(false, Ordering::Relaxed),
        DType::Float64 => FLOAT64.store(true, Ordering::Relaxed),
        other => {
            return Err(Error::Type(format!(
                "only floating-point types are supported as the default type (got {other})"
            )))
        }
    }
    Ok(())
}
