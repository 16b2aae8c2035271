//! Matrix products, called on strided views directly: a transposed operand costs no copy.
//!
//! Kernels: float32 goes to the hand-written AVX-512 SGEMM in `super::gemm` (see NOTE [Why a
//! hand-written SGEMM] there); float64, and float32 on CPUs without AVX-512 or off x86-64, go to
//! `matrixmultiply` (pure Rust, SIMD with runtime CPU detection, threaded). Integer products are
//! a plain loop (`int_gemm_batched`).
//!
//! Why `matrixmultiply` and not the `gemm` crate for those: measured on this project's 2-core
//! AVX-512 machine (f32, µs per multiply, threaded): 64x1000x100 gemm 176 vs matrixmultiply 157;
//! 1000x64x100 138 vs 93; 256^3 284 vs 208; 256x1024x4096 16,031 vs 14,061; 2048^3 97,962 vs
//! 89,306 (scratch crate, both in one run).

use super::formula::{Need, SingleOutput};
use crate::autograd::node::Node;
use crate::autograd::record::{record_with_jvp, Save};

use crate::error::{Error, Result};
use crate::tensor::element::Float;
use crate::tensor::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;
use rayon::prelude::*;

/// The operands of one multiply `C = A · B`: an m×k `A` and a k×n `B` with element strides, and a
/// row-major m×n `C` with row stride `ldc`. Raw pointers, so that `super::gemm` can hand bands of
/// `C` to other threads.
#[derive(Clone, Copy)]
pub(crate) struct Problem<T> {
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) a: *const T,
    pub(crate) rsa: isize,
    pub(crate) csa: isize,
    pub(crate) b: *const T,
    pub(crate) rsb: isize,
    pub(crate) csb: isize,
    pub(crate) c: *mut T,
    pub(crate) ldc: usize,
}

/// `C = A · B` for one [`Problem`].
trait Gemm: Float {
    /// # Safety
    /// `p.a` and `p.b` must be valid for reads at their shapes and strides, `p.c` for writes of
    /// `p.m` rows of `p.n` values at stride `p.ldc`, and `p.c` must not overlap `p.a` or `p.b`.
    unsafe fn gemm(p: Problem<Self>);
}

/// The float32 product behind `matmul` (see the module's notes on kernels), for the GEMM benchmarks
/// (`roof::sgemm_for_bench`).
///
/// # Safety
/// As for [`Gemm::gemm`].
#[cfg(feature = "bench")]
pub(crate) unsafe fn f32_gemm(p: Problem<f32>) {
    // SAFETY: the caller's contract is `Gemm::gemm`'s.
    unsafe { <f32 as Gemm>::gemm(p) }
}

impl Gemm for f32 {
    unsafe fn gemm(p: Problem<f32>) {
        // SAFETY: the caller upholds `sgemm`'s contract, which is this function's.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            super::gemm::sgemm(p)
        }
        // SAFETY: the caller upholds `matrixmultiply::sgemm`'s contract, which is this function's.
        #[cfg(not(target_arch = "x86_64"))]
        unsafe {
            matrixmultiply::sgemm(p.m, p.k, p.n, 1.0, p.a, p.rsa, p.csa, p.b, p.rsb, p.csb, 0.0, p.c, p.ldc as isize, 1)
        }
    }
}

impl Gemm for f64 {
    unsafe fn gemm(p: Problem<f64>) {
        // SAFETY: the caller's contract is `in_row_bands`'s, and `serial_dgemm`'s below.
        unsafe { in_row_bands(p, serial_dgemm) }
    }
}

/// One thread's `matrixmultiply::dgemm`.
///
/// # Safety
/// As for [`Gemm::gemm`].
unsafe fn serial_dgemm(p: Problem<f64>) {
    // SAFETY: the caller upholds `matrixmultiply::dgemm`'s contract, which is this function's.
    unsafe {
        matrixmultiply::dgemm(p.m, p.k, p.n, 1.0, p.a, p.rsa, p.csa, p.b, p.rsb, p.csb, 0.0, p.c, p.ldc as isize, 1)
    }
}

/// Below this many multiply-adds a product runs on one thread.
const BANDS_MIN_WORK: usize = 1 << 21;

/// A [`Problem`] whose bands go to threads of the pool: each thread takes a band of rows or
/// columns of `C` disjoint from every other one's.
#[derive(Clone, Copy)]
pub(crate) struct Band<T>(pub(crate) Problem<T>);
// SAFETY: the bands handed to threads are disjoint blocks of `C`; `A` and `B` are only read.
unsafe impl<T> Send for Band<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for Band<T> {}

impl<T: Copy> Band<T> {
    /// Rows `r0..r0+rows` of `C` (and `A`).
    pub(crate) fn rows(self, r0: usize, rows: usize) -> Self {
        let p = self.0;
        Band(Problem { m: rows, a: p.a.wrapping_offset(r0 as isize * p.rsa), c: p.c.wrapping_add(r0 * p.ldc), ..p })
    }

    /// Columns `c0..c0+cols` of `C` (and `B`).
    pub(crate) fn cols(self, c0: usize, cols: usize) -> Self {
        let p = self.0;
        Band(Problem { n: cols, b: p.b.wrapping_offset(c0 as isize * p.csb), c: p.c.wrapping_add(c0), ..p })
    }
}

/// `serial` over bands of rows of `C`, one per thread of tapegrad's pool (`parallel.rs`), for a
/// library kernel used without its own threads: `matrixmultiply`'s threads (its `threading`
/// feature) would not survive `fork()` (NOTE [A pool of our own]).
///
/// # Safety
/// As for [`Gemm::gemm`], and `serial` must be sound for every band of rows of a valid problem.
pub(crate) unsafe fn in_row_bands<T: Copy>(p: Problem<T>, serial: unsafe fn(Problem<T>)) {
    let threads = crate::parallel::threads();
    if threads < 2 || p.m < 2 * threads || p.m * p.k * p.n < BANDS_MIN_WORK {
        // SAFETY: the caller's contract.
        return unsafe { serial(p) };
    }
    let per = p.m.div_ceil(threads);
    let whole = Band(p);
    crate::parallel::install(|| {
        (0..threads).into_par_iter().for_each(|t| {
            let r0 = t * per;
            if r0 < whole.0.m {
                let band = whole.rows(r0, per.min(whole.0.m - r0));
                // SAFETY: rows `r0..r0+rows` of the caller's valid problem; bands are disjoint.
                unsafe { serial(band.0) }
            }
        })
    });
}

/// `out[b] = a[b] @ b[b]` over a batch (a 2-D operand is shared by every batch entry).
fn gemm_batched<T: Gemm>(a: &Tensor, b: &Tensor, batch: usize, m: usize, k: usize, n: usize) -> Result<Tensor> {
    crate::tensor::create::check_alloc(&[batch, m, n], T::DTYPE)?;
    if m * n == 0 || k == 0 {
        return Tensor::from_vec(vec![T::zero(); batch * m * n], &out_shape(a.ndim(), batch, m, n));
    }
    // Not zero-filled: the kernels write every element of `C` (beta 0), so a fill would be one more
    // pass over the product's memory (a 64 MB weight gradient in W4).
    let mut out: Vec<T> = Vec::with_capacity(batch * m * n);
    let (a3, b3) = (a.ndim() == 3, b.ndim() == 3);
    let (ars, acs) = (a.strides()[a.ndim() - 2] as isize, a.strides()[a.ndim() - 1] as isize);
    let (brs, bcs) = (b.strides()[b.ndim() - 2] as isize, b.strides()[b.ndim() - 1] as isize);
    let ga = a.storage().read();
    let gb = b.storage().read();
    let sa = T::slice(&ga).ok_or_else(|| Error::dtype("mm: dtype mismatch"))?;
    let sb = T::slice(&gb).ok_or_else(|| Error::dtype("mm: dtype mismatch"))?;
    if (a.numel() > 0 && a.layout().storage_extent() > sa.len())
        || (b.numel() > 0 && b.layout().storage_extent() > sb.len())
    {
        return Err(Error::index("mm: layout reaches past the end of its storage"));
    }
    let spare = &mut out.spare_capacity_mut()[..batch * m * n];
    for i in 0..batch {
        let aoff = a.layout().offset + if a3 { i * a.strides()[0] } else { 0 };
        let boff = b.layout().offset + if b3 { i * b.strides()[0] } else { 0 };
        let dst = &mut spare[i * m * n..(i + 1) * m * n];
        let p = Problem {
            m,
            k,
            n,
            a: sa.as_ptr().wrapping_add(aoff),
            rsa: ars,
            csa: acs,
            b: sb.as_ptr().wrapping_add(boff),
            rsb: brs,
            csb: bcs,
            c: dst.as_mut_ptr().cast::<T>(),
            ldc: n,
        };
        // SAFETY: offsets and strides come from layouts whose extents were checked against the
        // storages above (so `a` and `b` are valid for their shapes and strides), and the read
        // guards keep the storages alive; `dst` is a fresh, exclusive m×n row-major block, which
        // the kernel only writes (never reads).
        unsafe { T::gemm(p) };
    }
    drop((ga, gb));
    // SAFETY: the loop above wrote all `batch` blocks of m×n values (m, n, k > 0 here).
    unsafe { out.set_len(batch * m * n) };
    Tensor::from_vec(out, &out_shape(a.ndim(), batch, m, n))
}

/// Runs a matrix-product kernel written for int64 and the floats on operands of `dt`: narrow
/// integers compute in int64 and wrap back (exact, as products and sums wrap modulo the width),
/// float16 and bfloat16 in float32, rounded once (NOTE [Half-precision compute]).
fn product_kernel(
    a: &Tensor,
    b: &Tensor,
    dt: crate::DType,
    kernel: impl Fn(&Tensor, &Tensor, crate::DType) -> Result<Tensor>,
) -> Result<Tensor> {
    let wide = if dt.is_int() {
        crate::DType::Int64
    } else if dt.is_half() {
        crate::DType::Float32
    } else {
        return kernel(a, b, dt);
    };
    let _off = crate::autograd::GradModeGuard::no_grad();
    // "medium" concerns float32 operands only: float16's 11 bits stay exact.
    let _exact = (dt == crate::DType::Float16).then(super::matmul_precision::ExactScope::new);
    kernel(&a.detach().to_dtype(wide)?, &b.detach().to_dtype(wide)?, wide)?.to_dtype(dt)
}

/// Integer matrix products, which PyTorch allows. A plain loop with wrapping arithmetic, as
/// PyTorch's integer kernels: there is no SIMD kernel for integers here.
fn int_gemm_batched(a: &Tensor, b: &Tensor, batch: usize, m: usize, k: usize, n: usize) -> Result<Tensor> {
    crate::tensor::create::check_alloc(&[batch, m, n], crate::DType::Int64)?;
    let (a3, b3) = (a.ndim() == 3, b.ndim() == 3);
    let out = a.with_view(|va: ndarray::ArrayViewD<i64>| {
        b.with_view(|vb: ndarray::ArrayViewD<i64>| {
            let mut out = vec![0i64; batch * m * n];
            for bi in 0..batch {
                let at = |i: usize, p: usize| if a3 { va[[bi, i, p].as_slice()] } else { va[[i, p].as_slice()] };
                let bt = |p: usize, j: usize| if b3 { vb[[bi, p, j].as_slice()] } else { vb[[p, j].as_slice()] };
                for i in 0..m {
                    for j in 0..n {
                        out[(bi * m + i) * n + j] =
                            (0..k).fold(0i64, |acc, p| acc.wrapping_add(at(i, p).wrapping_mul(bt(p, j))));
                    }
                }
            }
            out
        })
    })??;
    Tensor::from_vec(out, &out_shape(a.ndim(), batch, m, n))
}

fn out_shape(ndim: usize, batch: usize, m: usize, n: usize) -> Vec<usize> {
    if ndim == 3 {
        vec![batch, m, n]
    } else {
        vec![m, n]
    }
}

/// `mm`'s backward. Fields: whether `b` was saved (first) for `a`'s gradient (`product_saves`), and
/// whether each operand was a column-major (transposed row-major) matrix, whose gradient is then
/// computed transposed, in the same layout (NOTE [Gradient layout of a product]).
struct MmBackward {
    saved_b: bool,
    a_col_major: bool,
    b_col_major: bool,
}

// NOTE [Gradient layout of a product]: `nn.Linear` multiplies by `weight.t()`, a column-major view.
// Its gradient `a^T g` computed as written is row-major in the view's shape, so after `t()`'s
// backward the weight's gradient is a transposed view, and the accumulator copies it into the
// weight's row-major layout: a strided copy of every weight gradient, every step (a fifth of W8's
// step before this). Computed as `(g^T a)^T` instead, the product is written row-major in the
// weight's own shape and reaches the accumulator contiguous, with no copy; the multiply reads the
// same operands (only its strides change), so the values are those of the same sums. The same
// holds for the first operand. PyTorch picks the layout of these products the same way.
fn col_major(t: &Tensor) -> bool {
    t.ndim() == 2 && !t.layout().is_contiguous() && t.strides()[0] == 1 && t.strides()[1] == t.shape()[0]
}

impl SingleOutput for MmBackward {
    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let (b, a) = kept_operands(&saved, self.saved_b, need.get(0), need.get(1));
        let ga = need.then(0, || {
            let b = b?;
            if self.a_col_major {
                b.mm(&g.t()?)?.t()
            } else {
                g.mm(&b.t()?)
            }
        })?;
        let gb = need.then(1, || {
            let a = a?;
            if self.b_col_major {
                g.t()?.mm(a)?.t()
            } else {
                a.t()?.mm(&g)
            }
        })?;
        Ok(vec![ga, gb])
    }

    fn input_grads_batched(
        &self,
        node: &Node,
        g: &Tensor,
        need: Need<'_>,
        batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        Some((|| {
            let saved = node.unpack_saved()?;
            let (b, a) = kept_operands(&saved, self.saved_b, need.get(0), need.get(1));
            // g is [batch, m, n]: g b^T is one product over the batch's rows. a^T g: for a column
            // n = 1 (a matrix times a vector) it is one product g[:, :, 0] a, [batch, k]; otherwise
            // one product per matrix of the batch against a^T (a kept in place, broadcast), so that
            // the result is contiguous either way (a transposed layout makes the next formula's
            // element-wise work walk strided memory).
            let ga = need.then(0, || g.matmul(&b?.t()?))?;
            let gb = need.then(1, || {
                let a = a?;
                let (m, n, k) = (g.shape()[1], g.shape()[2], a.shape()[1]);
                if n == 1 {
                    let rows = g.reshape(&[batch as isize, m as isize])?.mm(a)?;
                    return rows.reshape(&[batch as isize, k as isize, 1]);
                }
                a.t()?.unsqueeze(0)?.expand(&[batch, k, m])?.bmm(g)
            })?;
            Ok(vec![ga, gb])
        })())
    }
}

/// The field: whether `b` was saved (first) for `a`'s gradient (`product_saves`).
struct BmmBackward(bool);

/// Forward mode of a product: `d(a b) = da b + a db` (`product` is the product itself).
fn product_jvp(
    tangents: &[Option<Tensor>],
    a: &Tensor,
    b: &Tensor,
    product: fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    let left = tangents[0].as_ref().map(|ta| product(ta, b)).transpose()?;
    let right = tangents[1].as_ref().map(|tb| product(a, tb)).transpose()?;
    Ok(vec![match (left, right) {
        (Some(l), Some(r)) => Some(l.add(&r)?),
        (l, r) => l.or(r),
    }])
}

/// What a product `a @ b` saves: `b` when `a` may need a gradient, `a` when `b` may (in that order),
/// so that an in-place write to an operand whose value no gradient needs does not invalidate the
/// graph; and whether `b` was saved. An operand may be saved without getting an edge (it carries a
/// tangent but does not require grad), so the backward pass reads that flag, not its `need`.
fn product_saves(a: &Tensor, b: &Tensor) -> (Vec<Save>, bool) {
    let mut saves = Vec::new();
    let saved_b = crate::autograd::forward::wants_grad(a);
    if saved_b {
        saves.push(Save::Input(b.clone()));
    }
    if crate::autograd::forward::wants_grad(b) {
        saves.push(Save::Input(a.clone()));
    }
    (saves, saved_b)
}

/// The values `product_saves` kept, as (`b` for `a`'s gradient, `a` for `b`'s gradient).
fn kept_operands(saved: &[Tensor], saved_b: bool, need_a: bool, need_b: bool) -> (Result<&Tensor>, Result<&Tensor>) {
    let missing = || Error::autograd("internal error: a matrix product's backward lacks an operand it needs");
    let b = if need_a && saved_b { saved.first().ok_or_else(missing) } else { Err(missing()) };
    let a = if need_b { saved.get(usize::from(saved_b)).ok_or_else(missing) } else { Err(missing()) };
    (b, a)
}

impl SingleOutput for BmmBackward {
    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let (b, a) = kept_operands(&saved, self.0, need.get(0), need.get(1));
        Ok(vec![need.then(0, || g.bmm(&b?.transpose(1, 2)?))?, need.then(1, || a?.transpose(1, 2)?.bmm(&g))?])
    }

    fn input_grads_batched(
        &self,
        node: &Node,
        g: &Tensor,
        need: Need<'_>,
        _batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        Some((|| {
            let saved = node.unpack_saved()?;
            let (b, a) = kept_operands(&saved, self.0, need.get(0), need.get(1));
            // g is [batch, b, m, n]; matmul broadcasts the operands over the leading batch
            Ok(vec![need.then(0, || g.matmul(&b?.transpose(1, 2)?))?, need.then(1, || a?.transpose(1, 2)?.matmul(g))?])
        })())
    }
}

impl Tensor {
    /// Matrix product of two 2-D tensors.
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() != 2 || other.ndim() != 2 {
            return Err(Error::shape(format!(
                "mm: both arguments must be 2-D matrices, got shapes {} and {}",
                fmt_shape(self.shape()),
                fmt_shape(other.shape())
            )));
        }
        let (m, k) = (self.shape()[0], self.shape()[1]);
        let (k2, n) = (other.shape()[0], other.shape()[1]);
        if k != k2 {
            return Err(Error::shape(format!("mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")));
        }
        let dt = self.dtype().promote(other.dtype());
        let (a, b) = (self.to_dtype(dt)?, other.to_dtype(dt)?);
        let out = product_kernel(&a, &b, dt, |a, b, dt| {
            Ok(if dt == crate::DType::Int64 {
                int_gemm_batched(a, b, 1, m, k, n)?
            } else {
                crate::dispatch_float_wide!(dt, "mm", T => gemm_batched::<T>(a, b, 1, m, k, n)?)
            })
        })?;
        let jvp = |t: &[Option<Tensor>]| product_jvp(t, &a, &b, Tensor::mm);
        record_with_jvp(
            "MmBackward",
            &[&a, &b],
            &[&out],
            || {
                let (saves, saved_b) = product_saves(&a, &b);
                (MmBackward { saved_b, a_col_major: col_major(&a), b_col_major: col_major(&b) }, saves)
            },
            Some(jvp),
        );
        Ok(out)
    }

    /// Batched matrix product of two 3-D tensors with equal batch sizes.
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() != 3
            || other.ndim() != 3
            || self.shape()[0] != other.shape()[0]
            || self.shape()[2] != other.shape()[1]
        {
            return Err(Error::shape(format!(
                "bmm: expected [b, n, k] and [b, k, m] tensors, got shapes {} and {}",
                fmt_shape(self.shape()),
                fmt_shape(other.shape())
            )));
        }
        let (batch, m, k, n) = (self.shape()[0], self.shape()[1], self.shape()[2], other.shape()[2]);
        let dt = self.dtype().promote(other.dtype());
        let (a, b) = (self.to_dtype(dt)?, other.to_dtype(dt)?);
        let out = product_kernel(&a, &b, dt, |a, b, dt| {
            Ok(if dt == crate::DType::Int64 {
                int_gemm_batched(a, b, batch, m, k, n)?
            } else {
                crate::dispatch_float_wide!(dt, "bmm", T => gemm_batched::<T>(a, b, batch, m, k, n)?)
            })
        })?;
        let jvp = |t: &[Option<Tensor>]| product_jvp(t, &a, &b, Tensor::bmm);
        record_with_jvp(
            "BmmBackward",
            &[&a, &b],
            &[&out],
            || {
                let (saves, saved_b) = product_saves(&a, &b);
                (BmmBackward(saved_b), saves)
            },
            Some(jvp),
        );
        Ok(out)
    }

    /// NumPy `matmul`: vectors, matrices and broadcast batches of matrices.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (da, db) = (self.ndim(), other.ndim());
        let mismatch = || {
            Error::shape(format!(
                "matmul: shapes {} and {} cannot be multiplied",
                fmt_shape(self.shape()),
                fmt_shape(other.shape())
            ))
        };
        match (da, db) {
            (0, _) | (_, 0) => Err(Error::shape("both arguments to matmul need to be at least 1D")),
            (1, 1) => {
                if self.shape() != other.shape() {
                    return Err(mismatch());
                }
                let dt = self.dtype().promote(other.dtype());
                if dt.is_half() {
                    // Products and their sum in float32, rounded once (NOTE [Half-precision compute]).
                    return self.unsqueeze(0)?.mm(&other.unsqueeze(1)?)?.reshape(&[]);
                }
                let out = self.mul(other)?.sum(None, false)?;
                // An integer dot product keeps its dtype (the sum alone would make it int64).
                if dt.is_int() && dt != out.dtype() {
                    out.to_dtype(dt)
                } else {
                    Ok(out)
                }
            }
            (2, 2) => self.mm(other),
            (1, _) => self.unsqueeze(0)?.matmul(other)?.squeeze_dim(-2),
            (_, 1) => self.matmul(&other.unsqueeze(1)?)?.squeeze_dim(-1),
            _ => {
                let (n, k) = (self.shape()[da - 2], self.shape()[da - 1]);
                let (k2, m) = (other.shape()[db - 2], other.shape()[db - 1]);
                if k != k2 {
                    return Err(mismatch());
                }
                if db == 2 {
                    // [..., n, k] @ [k, m]: one large multiply over the flattened batch.
                    // The row count is spelled out, not -1: beside k = 0 a -1 is ambiguous and
                    // reshape refuses it, so an empty input would fail.
                    let rows: usize = self.shape()[..da - 1].iter().product();
                    let flat = self.reshape(&[rows as isize, k as isize])?.mm(other)?;
                    let mut shape: Vec<isize> = self.shape()[..da - 1].iter().map(|&d| d as isize).collect();
                    shape.push(m as isize);
                    return flat.reshape(&shape);
                }
                let batch =
                    broadcast_shapes(&self.shape()[..da - 2], &other.shape()[..db - 2]).map_err(|_| mismatch())?;
                let bsz: usize = batch.iter().product();
                let mut sa = batch.clone();
                sa.extend([n, k]);
                let mut sb = batch.clone();
                sb.extend([k, m]);
                let a3 = self.expand(&sa)?.reshape(&[bsz as isize, n as isize, k as isize])?;
                let b3 = other.expand(&sb)?.reshape(&[bsz as isize, k as isize, m as isize])?;
                let mut so: Vec<isize> = batch.iter().map(|&d| d as isize).collect();
                so.extend([n as isize, m as isize]);
                a3.bmm(&b3)?.reshape(&so)
            }
        }
    }
}
