//! The forward kernels of `tg.linalg`'s decompositions (`ops/decomp.rs`), as private functions of
//! the native module. `python/tapegrad/linalg.py` wraps each in a differentiable operation; these
//! return tensors without history.

use pyo3::prelude::*;

use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{expect_tensor, PyTensor};
use crate::ops::decomp;
use crate::Tensor;

/// A decomposition is cubic in the matrix size: heavy whatever the sizes (NOTE [The gateway]).
const COST: Cost = Cost::Heavy;

fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(PyTensor::wrap(py, t)?.into_any())
}

fn wrap_opt(py: Python<'_>, t: Option<Tensor>) -> PyResult<Py<PyAny>> {
    match t {
        Some(t) => wrap(py, t),
        None => Ok(py.None()),
    }
}

/// The value of the tensor without its history.
fn plain(a: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    Ok(expect_tensor(a, "A")?.detach())
}

#[pyfunction]
fn _linalg_inv(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let a = plain(a)?;
    enter_tensor(py, COST, || decomp::inv(&a))
}

#[pyfunction]
fn _linalg_solve(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (a, b) = (plain(a)?, plain(b)?);
    enter_tensor(py, COST, || decomp::solve(&a, &b))
}

#[pyfunction]
fn _linalg_det(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let a = plain(a)?;
    enter_tensor(py, COST, || decomp::det(&a))
}

#[pyfunction]
fn _linalg_slogdet(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let a = plain(a)?;
    let (s, l) = enter(py, COST, || decomp::slogdet(&a))?;
    Ok((wrap(py, s)?, wrap(py, l)?))
}

#[pyfunction]
fn _linalg_cholesky(py: Python<'_>, a: &Bound<'_, PyAny>, upper: bool) -> PyResult<Py<PyAny>> {
    let a = plain(a)?;
    enter_tensor(py, COST, || decomp::cholesky(&a, upper))
}

#[pyfunction]
fn _linalg_qr(py: Python<'_>, a: &Bound<'_, PyAny>, complete: bool) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let a = plain(a)?;
    let (q, r) = enter(py, COST, || decomp::qr(&a, complete))?;
    Ok((wrap(py, q)?, wrap(py, r)?))
}

#[pyfunction]
fn _linalg_eigh(py: Python<'_>, a: &Bound<'_, PyAny>, upper: bool, vectors: bool) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let a = plain(a)?;
    let (w, v) = enter(py, COST, || decomp::eigh(&a, upper, vectors))?;
    Ok((wrap(py, w)?, wrap_opt(py, v)?))
}

#[pyfunction]
#[allow(clippy::type_complexity)]
fn _linalg_svd(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    full_matrices: bool,
    vectors: bool,
) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
    let a = plain(a)?;
    let (u, s, vh) = enter(py, COST, || decomp::svd(&a, full_matrices, vectors))?;
    Ok((wrap_opt(py, u)?, wrap(py, s)?, wrap_opt(py, vh)?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_linalg_inv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svd, m)?)?;
    Ok(())
}
