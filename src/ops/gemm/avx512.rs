//! The AVX-512 micro-kernel: a 12×32 block of `C` held in 24 zmm registers.
//!
//! Per step of `k` it loads two vectors of the packed `B` panel (32 columns), broadcasts twelve
//! values of the packed `A` panel and issues 24 FMAs: 12 cycles of FMA work on a core with two FMA
//! ports against 14 loads, so the kernel is bound by arithmetic, not by loads. 24 accumulators
//! cover the FMA latency (4 cycles × 2 ports) three times over.

use std::arch::x86_64::*;

/// Rows of `C` per micro-kernel call.
pub(super) const MR: usize = 12;
/// Columns of `C` per micro-kernel call (two zmm vectors of f32).
pub(super) const NR: usize = 32;

/// `C[..rows, ..cols] (+)= A_panel · B_panel` for one packed 12×kc panel of `A` (k-major: twelve
/// values per step) and one packed kc×32 panel of `B` (32 values per step). `C` is row-major with
/// row stride `ldc`; only the `rows × cols` corner is read or written.
///
/// Edge blocks (fewer than 12 rows or 17 columns) run a narrower instance of the same loop, so a
/// 4-row remainder costs a third of a full block instead of all of it.
///
/// # Safety
/// The CPU must support AVX-512F; `a` must hold `kc·MR` values, `b` `kc·NR` values, and `c` must be
/// valid for `rows` rows of `cols` values at stride `ldc`, with no other thread touching them.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn kernel(
    kc: usize,
    a: *const f32,
    (ars, aks): (usize, usize),
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let args = (kc, a, ars, aks, b, c, ldc, rows, cols, accumulate);
    match (rows.div_ceil(4), cols > 16) {
        (3, true) => block::<12, 2>(args),
        (3, false) => block::<12, 1>(args),
        (2, true) => block::<8, 2>(args),
        (2, false) => block::<8, 1>(args),
        (_, true) => block::<4, 2>(args),
        (_, false) => block::<4, 1>(args),
    }
}

type Args = (usize, *const f32, usize, usize, *const f32, *mut f32, usize, usize, usize, bool);

/// The loop behind `kernel` for `R` rows (of the 12-row panel) and `V` vectors of 16 columns.
#[target_feature(enable = "avx512f")]
unsafe fn block<const R: usize, const V: usize>((kc, a, ars, aks, b, c, ldc, rows, cols, accumulate): Args) {
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    let (mut a, mut b) = (a, b);
    for _ in 0..kc {
        let mut bv = [_mm512_setzero_ps(); V];
        for (v, x) in bv.iter_mut().enumerate() {
            *x = _mm512_loadu_ps(b.add(16 * v));
        }
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = _mm512_set1_ps(*a.add(i * ars));
            for (x, r) in bv.iter().zip(row.iter_mut()) {
                *r = _mm512_fmadd_ps(ai, *x, *r);
            }
        }
        a = a.add(aks);
        b = b.add(NR);
    }
    let lanes = |n: usize| -> __mmask16 {
        if n >= 16 {
            0xFFFF
        } else {
            ((1u32 << n) - 1) as __mmask16
        }
    };
    for (i, row) in acc.iter().enumerate().take(rows) {
        let p = c.add(i * ldc);
        for (v, &x) in row.iter().enumerate() {
            // A masked-off lane is neither read nor written (and cannot fault), so the address of
            // the second vector may lie past the row's end when `cols <= 16`.
            let (m, q) = (lanes(cols.saturating_sub(16 * v)), p.wrapping_add(16 * v));
            let y = if accumulate { _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, q)) } else { x };
            _mm512_mask_storeu_ps(q, m, y);
        }
    }
}
