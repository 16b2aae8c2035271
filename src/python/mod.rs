//! The PyO3 bindings: conversion, the Python-function node, error mapping. No math lives here;
//! each method converts its arguments, calls the core through the gateway (`gateway.rs`: the GIL
//! and the error mapping are decided there), and converts the result.

mod alloc;
mod autograd;
mod convert;
mod ctx;
mod errors;
mod factories;
mod forward;
mod function;
mod gateway;
mod helpers;
mod identity;
mod linalg;
mod optim;
mod precision;
#[cfg(feature = "bench")]
mod roof;
mod tensor;
mod tensor_arith;
mod tensor_cell;
mod tensor_compose;
mod tensor_exchange;
mod tensor_index;
mod tensor_inplace;
mod tensor_nn;
mod tensor_pairwise;
mod tensor_protocol;
mod tensor_reduce;
mod tensor_scatter;
mod tensor_shape;
mod tensor_sort;
mod tensor_unary;
mod threads;

use pyo3::prelude::*;

/// Adds one binding file's functions (and module-level values) to the native module.
type Registrar = fn(&Bound<'_, PyModule>) -> PyResult<()>;

/// Every binding file that adds functions, in one table: the tensor families, then autograd and custom
/// functions, then the process-wide settings and private helpers.
const FAMILIES: &[Registrar] = &[
    convert::register,
    factories::register,
    tensor_arith::register,
    tensor_unary::register,
    tensor_pairwise::register,
    tensor_shape::register,
    tensor_compose::register,
    tensor_nn::register,
    tensor_scatter::register,
    tensor_protocol::register,
    tensor_exchange::register,
    linalg::register,
    optim::register,
    autograd::register,
    function::register,
    forward::register,
    helpers::register,
    precision::register,
    threads::register,
    alloc::register,
    #[cfg(feature = "bench")]
    roof::register,
];

/// The private native module `tapegrad._tapegrad`; `python/tapegrad/__init__.py` re-exports it.
#[pymodule]
mod _tapegrad {
    #[pymodule_export]
    use super::autograd::{PyHookHandle, PyNode};
    #[pymodule_export]
    use super::convert::{PyDType, PyDevice};
    #[pymodule_export]
    use super::ctx::PyCtx;
    #[pymodule_export]
    use super::tensor::PyTensor;

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // Before any thread of ours exists (NOTE [Locks across fork]).
        crate::at_fork::register();
        super::errors::init(m.py())?;
        for register in super::FAMILIES {
            register(m)?;
        }
        super::autograd::install_hooks();
        super::gateway::install_host_lock();
        crate::autograd::anomaly::set_warning_hook(super::errors::warn_user);
        Ok(())
    }
}
