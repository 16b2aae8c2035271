//! Forward-mode AD bindings (`tapegrad.autograd.forward_ad` builds on these): dual levels, dual
//! tensors. See NOTE [Dual levels] in `autograd/forward.rs`.

use pyo3::prelude::*;

use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{expect_tensor, PyTensor};
use crate::autograd::forward;

/// Enters a new dual level; returns its index.
#[pyfunction]
fn _enter_dual_level() -> usize {
    forward::enter_level()
}

/// Exits dual level `level` (the last one by default).
#[pyfunction]
#[pyo3(signature = (level=None))]
fn _exit_dual_level(py: Python<'_>, level: Option<i64>) -> PyResult<()> {
    enter(py, Cost::Metadata, || forward::exit_level(level))
}

/// The number of live dual levels.
#[pyfunction]
fn _dual_level_count() -> usize {
    forward::level_count()
}

/// Whether operations on this thread compute tangents (forward grad mode).
#[pyfunction]
fn _is_fwd_grad_enabled() -> bool {
    forward::is_fwd_grad_enabled()
}

/// Sets this thread's forward grad mode; returns the previous one.
#[pyfunction]
fn _set_fwd_grad_enabled(mode: bool) -> bool {
    forward::set_fwd_grad_enabled(mode)
}

/// A dual tensor: a view of `primal` carrying `tangent` at `level`.
#[pyfunction]
#[pyo3(signature = (primal, tangent, level=None))]
fn _make_dual(
    py: Python<'_>,
    primal: &Bound<'_, PyAny>,
    tangent: &Bound<'_, PyAny>,
    level: Option<i64>,
) -> PyResult<Py<PyAny>> {
    let p = expect_tensor(primal, "primal")?;
    let t = expect_tensor(tangent, "tangent")?;
    enter_tensor(py, Cost::Elements(p.numel()), move || p.make_dual(&t, level))
}

/// `(primal, tangent)` of a tensor at `level` (tangent None when it has none).
#[pyfunction]
#[pyo3(signature = (tensor, level=None))]
fn _unpack_dual(
    py: Python<'_>,
    tensor: &Bound<'_, PyAny>,
    level: Option<i64>,
) -> PyResult<(Py<PyAny>, Option<Py<PyAny>>)> {
    let x = expect_tensor(tensor, "tensor")?;
    let (primal, tangent) = enter(py, Cost::Metadata, move || Ok((x.primal(level)?, x.tangent(level)?)))?;
    let primal = PyTensor::wrap(py, primal)?.into_any();
    let tangent = match tangent {
        Some(t) => Some(PyTensor::wrap(py, t)?.into_any()),
        None => None,
    };
    Ok((primal, tangent))
}

/// The rows of the Jacobian of `outputs` with respect to `inputs` from one batched run over the
/// recorded graph (NOTE [Batched rows] in `autograd/jacobian.rs`): per input a tensor
/// `[rows, *input.shape]` or None; None instead of the list when the batched run declines.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, create_graph=false, chunk_size=None))]
fn _jacobian_rows(
    py: Python<'_>,
    outputs: Vec<Bound<'_, PyAny>>,
    inputs: Vec<Bound<'_, PyAny>>,
    create_graph: bool,
    chunk_size: Option<usize>,
) -> PyResult<Option<Vec<Option<Py<PyAny>>>>> {
    let roots = outputs.iter().map(|o| expect_tensor(o, "outputs")).collect::<PyResult<Vec<_>>>()?;
    let ins = inputs.iter().map(|i| expect_tensor(i, "inputs")).collect::<PyResult<Vec<_>>>()?;
    let rows = enter(py, Cost::Heavy, move || {
        crate::autograd::jacobian::jacobian_rows(&roots, &ins, create_graph, chunk_size)
    })?;
    let Some(rows) = rows else { return Ok(None) };
    rows.into_iter()
        .map(|r| r.map(|t| PyTensor::wrap(py, t).map(|t| t.into_any())).transpose())
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

/// Whether the graph behind `outputs` has a custom operation written in Python.
#[pyfunction]
fn _reaches_custom(outputs: Vec<Bound<'_, PyAny>>) -> PyResult<bool> {
    let roots = outputs.iter().map(|o| expect_tensor(o, "outputs")).collect::<PyResult<Vec<_>>>()?;
    Ok(crate::autograd::jacobian::reaches_custom(&roots))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_jacobian_rows, m)?)?;
    m.add_function(wrap_pyfunction!(_reaches_custom, m)?)?;
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_dual_level_count, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_is_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    Ok(())
}
