//! The PyO3 bindings: conversion, the Python-function node, error mapping. No math lives here;
//! each method converts its arguments, calls the core through the gateway (`gateway.rs`: the GIL
//! and the error mapping are decided there), and converts the result.

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
mod roof;
mod tensor;
mod tensor_arith;
mod tensor_cell;
mod tensor_compose;
mod tensor_exchange;
mod tensor_index;
mod tensor_inplace;
mod tensor_math;
mod tensor_nn;
mod tensor_protocol;
mod tensor_reduce;
mod tensor_scatter;
mod tensor_shape;
mod tensor_sort;
mod tensor_unary;
// bf16 (issue 19): the float32 matmul precision setting.
mod precision;
// The size of the thread pool (set_num_threads / get_num_threads).
mod threads;
// issue 19: the allocator's large-block cache (private helpers).
mod alloc;

use pyo3::prelude::*;

/// The private native module `tapegrad._tapegrad`; `python/tapegrad/__init__.py` re-exports it.
#[pymodule]
fn _tapegrad(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Before any thread of ours exists (NOTE [Locks across fork]).
    crate::at_fork::register();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<convert::PyDType>()?;
    m.add_class::<convert::PyDevice>()?;
    m.add_class::<autograd::PyNode>()?;
    m.add_class::<autograd::PyHookHandle>()?;
    m.add_class::<ctx::PyCtx>()?;
    convert::register(m)?;
    factories::register(m)?;
    autograd::register(m)?;
    function::register(m)?;
    tensor_arith::register(m)?;
    tensor_shape::register(m)?;
    errors::init(m.py())?;
    tensor_math::register(m)?;
    helpers::register(m)?;
    tensor_nn::register(m)?;
    optim::register(m)?;
    tensor_protocol::register(m)?;
    tensor_compose::register(m)?;
    tensor_scatter::register(m)?;
    linalg::register(m)?;
    tensor_exchange::register(m)?;
    forward::register(m)?;
    precision::register(m)?;
    roof::register(m)?;
    threads::register(m)?;
    alloc::register(m)?;
    autograd::install_hooks();
    gateway::install_host_lock();
    crate::autograd::anomaly::set_warning_hook(errors::warn_user);
    Ok(())
}
