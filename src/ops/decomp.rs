//! Matrix decompositions for `tg.linalg`, on `faer` (pure Rust: no system LAPACK, so the wheel
//! stays self-contained; see docs/design.md "Linear algebra" for the measurement against NumPy).
//!
//! These are the forward kernels only: each takes a float32/float64 tensor `[..., m, n]`, runs one
//! `faer` decomposition per matrix of the batch, and returns plain tensors without history. The
//! gradients are written with differentiable tensor operations in `python/tapegrad/linalg.py`, so
//! that double backward works without a second set of formulas.
//!
//! A failure names the batch element, as PyTorch does: `linalg.inv: (Batch element 3): The
//! diagonal element 2 is zero, ...` (`Error::LinAlg`, Python `tapegrad.linalg.LinAlgError`).

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::traits::RealField;
use faer::{MatRef, Side};

use crate::dispatch_float_wide;
use crate::error::{Error, Result};
use crate::tensor::element::{Element, Float};
use crate::tensor::layout::fmt_shape;
use crate::tensor::Tensor;

/// A float type both the tensors and `faer` know.
trait Scalar: Float + RealField {}
impl Scalar for f32 {}
impl Scalar for f64 {}

/// The batch shape, rows and columns of `a`, refusing fewer than two dimensions and non-floats.
fn matrix_dims(a: &Tensor, op: &str) -> Result<(Vec<usize>, usize, usize)> {
    if !a.dtype().is_float() {
        return Err(Error::dtype(format!("{op}: Expected a floating point tensor as input. Got {}", a.dtype())));
    }
    let nd = a.ndim();
    if nd < 2 {
        return Err(Error::shape(format!(
            "{op}: The input tensor A must have at least 2 dimensions, got shape {}",
            fmt_shape(a.shape())
        )));
    }
    Ok((a.shape()[..nd - 2].to_vec(), a.shape()[nd - 2], a.shape()[nd - 1]))
}

fn square_dims(a: &Tensor, op: &str) -> Result<(Vec<usize>, usize)> {
    let (batch, m, n) = matrix_dims(a, op)?;
    if m != n {
        return Err(Error::shape(format!(
            "{op}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    Ok((batch, n))
}

/// The element values of `a` in row-major order.
fn values<T: Scalar>(a: &Tensor) -> Result<Vec<T>> {
    a.with_view(crate::tensor::gather::<T>)
}

/// `(Batch element i): ` when the input is batched, as PyTorch prefixes its messages.
fn where_(batched: bool, i: usize) -> String {
    if batched {
        format!("(Batch element {i}): ")
    } else {
        String::new()
    }
}

/// Runs `f` on every matrix of `a` (`[..., m, n]`) and assembles its per-matrix outputs, one
/// buffer per output, into tensors of shape `batch + tails[k]`.
fn per_matrix<T: Scalar>(
    a: &Tensor,
    batch: &[usize],
    m: usize,
    n: usize,
    tails: &[Vec<usize>],
    mut f: impl FnMut(usize, MatRef<'_, T>, &mut [Vec<T>]) -> Result<()>,
) -> Result<Vec<Tensor>> {
    let count: usize = batch.iter().product();
    for tail in tails {
        let mut shape = batch.to_vec();
        shape.extend(tail);
        crate::tensor::create::check_alloc(&shape, T::DTYPE)?;
    }
    let data = values::<T>(a)?;
    let mut outs: Vec<Vec<T>> = tails.iter().map(|t| Vec::with_capacity(count * t.iter().product::<usize>())).collect();
    for i in 0..count {
        let mat = MatRef::from_row_major_slice(&data[i * m * n..(i + 1) * m * n], m, n);
        f(i, mat, &mut outs)?;
    }
    outs.into_iter()
        .zip(tails)
        .map(|(v, tail)| {
            let mut shape = batch.to_vec();
            shape.extend(tail);
            Tensor::from_vec(v, &shape)
        })
        .collect()
}

/// Appends a matrix to `out` in row-major order.
fn push_mat<T: Scalar>(out: &mut Vec<T>, m: MatRef<'_, T>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            out.push(m[(i, j)]);
        }
    }
}

/// The sign of a permutation given as its forward index array.
fn perm_sign(fwd: &[usize]) -> f64 {
    let mut seen = vec![false; fwd.len()];
    let mut sign = 1.0;
    for start in 0..fwd.len() {
        let mut len = 0;
        let mut j = start;
        while !seen[j] {
            seen[j] = true;
            j = fwd[j];
            len += 1;
        }
        if len > 0 && len % 2 == 0 {
            sign = -sign;
        }
    }
    sign
}

/// The first zero pivot of an LU factorisation, if any (a NaN input gives NaN, not an error, as
/// in PyTorch).
fn zero_pivot<T: Scalar>(u: MatRef<'_, T>) -> Option<usize> {
    (0..u.nrows()).find(|&k| u[(k, k)] == T::zero())
}

fn singular(op: &str, batched: bool, i: usize, k: usize) -> Error {
    Error::LinAlg(format!(
        "{op}: {}The diagonal element {} is zero, the inversion could not be completed because the input matrix is singular.",
        where_(batched, i),
        k + 1
    ))
}

/// The inverse of every square matrix of `a`; a singular matrix is an `Error::LinAlg`.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    let (batch, n) = square_dims(a, "linalg.inv")?;
    let batched = !batch.is_empty();
    dispatch_float_wide!(a.dtype(), "linalg.inv", T => {
        let out = per_matrix::<T>(a, &batch, n, n, &[vec![n, n]], |i, mat, outs| {
            let lu = mat.partial_piv_lu();
            if let Some(k) = zero_pivot(lu.U()) {
                return Err(singular("linalg.inv", batched, i, k));
            }
            push_mat(&mut outs[0], lu.inverse().as_ref());
            Ok(())
        })?;
        Ok(out.into_iter().next().unwrap_or_else(|| unreachable!()))
    })
}

/// `X` with `A X = B` for square `A` `[..., n, n]` and `B` `[..., n, k]` of the same batch shape
/// (the caller broadcasts); a singular `A` is an `Error::LinAlg`.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (batch, n) = square_dims(a, "linalg.solve")?;
    let (bbatch, bn, k) = matrix_dims(b, "linalg.solve")?;
    if bbatch != batch || bn != n || a.dtype() != b.dtype() {
        return Err(Error::shape(format!(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B ({} and {})",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        )));
    }
    let batched = !batch.is_empty();
    dispatch_float_wide!(a.dtype(), "linalg.solve", T => {
        let rhs = values::<T>(b)?;
        let out = per_matrix::<T>(a, &batch, n, n, &[vec![n, k]], |i, mat, outs| {
            let lu = mat.partial_piv_lu();
            if let Some(p) = zero_pivot(lu.U()) {
                return Err(Error::LinAlg(format!(
                    "linalg.solve: {}The solver failed because the input matrix is singular (pivot {} is zero).",
                    where_(batched, i),
                    p + 1
                )));
            }
            let r = MatRef::from_row_major_slice(&rhs[i * n * k..(i + 1) * n * k], n, k);
            push_mat(&mut outs[0], lu.solve(r).as_ref());
            Ok(())
        })?;
        Ok(out.into_iter().next().unwrap_or_else(|| unreachable!()))
    })
}

/// `(sign, log|det|)` of every square matrix of `a`, from its LU factorisation. A singular matrix
/// gives sign 0 and log|det| = -inf, as PyTorch.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (batch, n) = square_dims(a, "linalg.slogdet")?;
    dispatch_float_wide!(a.dtype(), "linalg.slogdet", T => {
        let out = per_matrix::<T>(a, &batch, n, n, &[vec![], vec![]], |_, mat, outs| {
            let lu = mat.partial_piv_lu();
            let mut sign = perm_sign(lu.P().arrays().0);
            let mut logabs = 0.0f64;
            for k in 0..n {
                let p = num_traits::ToPrimitive::to_f64(&lu.U()[(k, k)]).unwrap_or(f64::NAN);
                if p == 0.0 {
                    sign = 0.0;
                    logabs = f64::NEG_INFINITY;
                    break;
                }
                if p < 0.0 {
                    sign = -sign;
                }
                logabs += p.abs().ln();
            }
            outs[0].push(<T as Element>::from_f64(sign));
            outs[1].push(<T as Element>::from_f64(logabs));
            Ok(())
        })?;
        let mut it = out.into_iter();
        match (it.next(), it.next()) {
            (Some(s), Some(l)) => Ok((s, l)),
            _ => unreachable!(),
        }
    })
}

/// The determinant of every square matrix of `a` (the product of its LU pivots).
pub fn det(a: &Tensor) -> Result<Tensor> {
    let (batch, n) = square_dims(a, "linalg.det")?;
    dispatch_float_wide!(a.dtype(), "linalg.det", T => {
        let out = per_matrix::<T>(a, &batch, n, n, &[vec![]], |_, mat, outs| {
            let lu = mat.partial_piv_lu();
            let mut d = <T as Element>::from_f64(perm_sign(lu.P().arrays().0));
            if zero_pivot(lu.U()).is_some() {
                // A zero pivot leaves NaN in the rest of faer's U; the determinant is exactly 0.
                d = <T as Element>::from_f64(0.0);
            } else {
                for k in 0..n {
                    d *= lu.U()[(k, k)];
                }
            }
            outs[0].push(d);
            Ok(())
        })?;
        Ok(out.into_iter().next().unwrap_or_else(|| unreachable!()))
    })
}

/// The Cholesky factor (lower, or upper when `upper`) of every symmetric positive-definite matrix
/// of `a`; only the lower triangle is read (the upper one when `upper`), as PyTorch.
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    let (batch, n) = square_dims(a, "linalg.cholesky")?;
    let batched = !batch.is_empty();
    dispatch_float_wide!(a.dtype(), "linalg.cholesky", T => {
        let out = per_matrix::<T>(a, &batch, n, n, &[vec![n, n]], |i, mat, outs| {
            let side = if upper { Side::Upper } else { Side::Lower };
            let llt = mat.llt(side).map_err(|e| {
                let faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index } = e;
                Error::LinAlg(format!(
                    "linalg.cholesky: {}The factorization could not be completed because the input is not positive-definite (the leading minor of order {} is not positive-definite).",
                    where_(batched, i),
                    index + 1
                ))
            })?;
            let l = llt.L();
            if upper {
                push_mat(&mut outs[0], l.transpose());
            } else {
                push_mat(&mut outs[0], l);
            }
            Ok(())
        })?;
        Ok(out.into_iter().next().unwrap_or_else(|| unreachable!()))
    })
}

/// `(Q, R)` of every matrix of `a` `[..., m, n]`: reduced (`Q` m×k, `R` k×n with k = min(m, n))
/// or complete (`Q` m×m, `R` m×n). `R`'s diagonal signs are those of `faer` (Householder), which
/// are LAPACK's.
pub fn qr(a: &Tensor, complete: bool) -> Result<(Tensor, Tensor)> {
    let (batch, m, n) = matrix_dims(a, "linalg.qr")?;
    let k = m.min(n);
    let (qc, rr) = if complete { (m, m) } else { (k, k) };
    dispatch_float_wide!(a.dtype(), "linalg.qr", T => {
        let out = per_matrix::<T>(a, &batch, m, n, &[vec![m, qc], vec![rr, n]], |_, mat, outs| {
            let f = mat.qr();
            if complete {
                push_mat(&mut outs[0], f.compute_Q().as_ref());
                // faer's R has min(m, n) rows; the complete R is m×n, zero below.
                push_mat(&mut outs[1], f.thin_R());
                outs[1].resize(outs[1].len() + (m - k) * n, <T as Element>::from_f64(0.0));
            } else {
                push_mat(&mut outs[0], f.compute_thin_Q().as_ref());
                push_mat(&mut outs[1], f.thin_R());
            }
            Ok(())
        })?;
        let mut it = out.into_iter();
        match (it.next(), it.next()) {
            (Some(q), Some(r)) => Ok((q, r)),
            _ => unreachable!(),
        }
    })
}

/// Eigenvalues (ascending) and, when `vectors`, eigenvectors (columns) of every symmetric matrix
/// of `a`, reading its lower triangle (upper when `upper`).
pub fn eigh(a: &Tensor, upper: bool, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    let (batch, n) = square_dims(a, "linalg.eigh")?;
    let batched = !batch.is_empty();
    let fail =
        move |i: usize| Error::LinAlg(format!("linalg.eigh: {}The algorithm failed to converge.", where_(batched, i)));
    let tails = if vectors { vec![vec![n], vec![n, n]] } else { vec![vec![n]] };
    dispatch_float_wide!(a.dtype(), "linalg.eigh", T => {
        let out = per_matrix::<T>(a, &batch, n, n, &tails, |i, mat, outs| {
            let side = if upper { Side::Upper } else { Side::Lower };
            if vectors {
                let e = mat.self_adjoint_eigen(side).map_err(|_| fail(i))?;
                outs[0].extend(e.S().column_vector().iter().copied());
                push_mat(&mut outs[1], e.U());
            } else {
                outs[0].extend(mat.self_adjoint_eigenvalues(side).map_err(|_| fail(i))?);
            }
            Ok(())
        })?;
        let mut it = out.into_iter();
        let w = it.next().unwrap_or_else(|| unreachable!());
        Ok((w, it.next()))
    })
}

/// `(U, S, Vh)` of every matrix of `a` `[..., m, n]`, singular values descending: reduced
/// (`U` m×k, `Vh` k×n) or full (`U` m×m, `Vh` n×n). With `vectors` false only `S` is computed.
pub fn svd(a: &Tensor, full: bool, vectors: bool) -> Result<(Option<Tensor>, Tensor, Option<Tensor>)> {
    let (batch, m, n) = matrix_dims(a, "linalg.svd")?;
    let k = m.min(n);
    let batched = !batch.is_empty();
    let fail =
        move |i: usize| Error::LinAlg(format!("linalg.svd: {}The algorithm failed to converge.", where_(batched, i)));
    let (uc, vr) = if full { (m, n) } else { (k, k) };
    let tails = if vectors { vec![vec![k], vec![m, uc], vec![vr, n]] } else { vec![vec![k]] };
    dispatch_float_wide!(a.dtype(), "linalg.svd", T => {
        let out = per_matrix::<T>(a, &batch, m, n, &tails, |i, mat, outs| {
            if !vectors {
                outs[0].extend(mat.singular_values().map_err(|_| fail(i))?);
                return Ok(());
            }
            let s = if full { mat.svd() } else { mat.thin_svd() }.map_err(|_| fail(i))?;
            outs[0].extend(s.S().column_vector().iter().copied());
            push_mat(&mut outs[1], s.U());
            push_mat(&mut outs[2], s.V().transpose());
            Ok(())
        })?;
        let mut it = out.into_iter();
        let s = it.next().unwrap_or_else(|| unreachable!());
        Ok((it.next(), s, it.next()))
    })
}
