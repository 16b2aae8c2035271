//! Packing: copies a block of `A` or `B` (any strides, so transposed views cost no extra copy)
//! into the panel order the micro-kernel reads, zero-padding partial panels.

use super::avx512::{MR, NR};

/// Packs the `mc × kc` block of `A` at `a` into `ceil(mc / MR)` panels of `kc × MR` values,
/// k-major (the MR values of one step of `k` are adjacent).
///
/// # Safety
/// `a` must be valid for `mc` rows at stride `rsa` and `kc` columns at stride `csa`.
pub(super) unsafe fn pack_a(mc: usize, kc: usize, a: *const f32, rsa: isize, csa: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * MR).take(mc.div_ceil(MR)).enumerate() {
        let r0 = p * MR;
        let rows = MR.min(mc - r0);
        let base = a.wrapping_offset(r0 as isize * rsa);
        if rows < MR {
            panel.fill(0.0);
        }
        if rsa == 1 {
            // Columns of A are contiguous (a transposed view): one run of `rows` per step.
            for (k, step) in panel.chunks_exact_mut(MR).enumerate() {
                let src = base.wrapping_offset(k as isize * csa);
                for (i, v) in step[..rows].iter_mut().enumerate() {
                    // SAFETY: row `r0 + i < mc` and column `k < kc` of the block (`rsa == 1`).
                    *v = unsafe { *src.add(i) };
                }
            }
        } else {
            // Rows contiguous (or general strides): read each row once, scatter into the steps.
            for i in 0..rows {
                let src = base.wrapping_offset(i as isize * rsa);
                for k in 0..kc {
                    // SAFETY: row `r0 + i < mc` and column `k < kc` of the block.
                    let v = unsafe { *src.offset(k as isize * csa) };
                    // SAFETY: `k < kc` and `i < rows <= MR`, so the index is below the panel's
                    // `kc × MR`.
                    unsafe { *panel.get_unchecked_mut(k * MR + i) = v };
                }
            }
        }
    }
}

/// Packs the `kc × nc` block of `B` at `b` into `ceil(nc / NR)` panels of `kc × NR` values,
/// k-major (the NR values of one row of the panel are adjacent).
///
/// # Safety
/// `b` must be valid for `kc` rows at stride `rsb` and `nc` columns at stride `csb`; the CPU must
/// support AVX-512F (the gather path).
pub(super) unsafe fn pack_b(kc: usize, nc: usize, b: *const f32, rsb: isize, csb: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * NR).take(nc.div_ceil(NR)).enumerate() {
        let c0 = p * NR;
        let cols = NR.min(nc - c0);
        let base = b.wrapping_offset(c0 as isize * csb);
        if cols < NR {
            panel.fill(0.0);
        }
        if csb == 1 && cols == NR {
            // The common case, as a fixed-size copy (two vector moves, not a memmove call).
            for (k, step) in panel.chunks_exact_mut(NR).enumerate() {
                // SAFETY: row `k < kc` of the block holds the NR contiguous values at `c0..c0+NR`
                // (`csb == 1`, `cols == NR`); `[f32; NR]` has the alignment of `f32`.
                let src = unsafe { &*base.wrapping_offset(k as isize * rsb).cast::<[f32; NR]>() };
                step.copy_from_slice(src);
            }
        } else if csb == 1 {
            for (k, step) in panel.chunks_exact_mut(NR).enumerate() {
                // SAFETY: row `k < kc` of the block holds `cols` contiguous values (`csb == 1`).
                let src = unsafe { std::slice::from_raw_parts(base.wrapping_offset(k as isize * rsb), cols) };
                step[..cols].copy_from_slice(src);
            }
        } else if rsb == 1 && cols == NR && (NR as isize) * csb < i32::MAX as isize && csb > 0 {
            // Columns contiguous (a transposed view, `g @ w.t()` in every backward of `mm`):
            // two 16-lane gathers per step, one value from each column, written contiguously.
            // SAFETY: AVX-512F is the caller's precondition; the 32 columns `c0..c0+NR` of the
            // block each hold `kc` contiguous values, at stride `csb`, which fits in an `i32`.
            unsafe { gather_panel(kc, base, csb as i32, panel) };
        } else {
            // General strides: read each column once.
            for j in 0..cols {
                let src = base.wrapping_offset(j as isize * csb);
                for k in 0..kc {
                    // SAFETY: row `k < kc` and column `c0 + j < nc` of the block.
                    let v = unsafe { *src.offset(k as isize * rsb) };
                    // SAFETY: `k < kc` and `j < cols <= NR`, so the index is below the panel's
                    // `kc × NR`.
                    unsafe { *panel.get_unchecked_mut(k * NR + j) = v };
                }
            }
        }
    }
}

/// One full kc×32 panel of a `B` whose columns are contiguous (row stride 1, column stride `csb`).
///
/// # Safety
/// The CPU must support AVX-512F; `b` must be valid for 32 columns of `kc` values at stride `csb`,
/// and `panel` must hold `kc × NR` values.
#[target_feature(enable = "avx512f")]
unsafe fn gather_panel(kc: usize, b: *const f32, csb: i32, panel: &mut [f32]) {
    use std::arch::x86_64::*;
    let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let idx0 = _mm512_mullo_epi32(lane, _mm512_set1_epi32(csb));
    let idx1 = _mm512_add_epi32(idx0, _mm512_set1_epi32(16 * csb));
    for (k, step) in panel.chunks_exact_mut(NR).take(kc).enumerate() {
        let src = b.wrapping_add(k);
        // SAFETY: lane `l` reads `src[l·csb]`, value `k < kc` of column `l < 16` of the 32.
        let lo = unsafe { _mm512_i32gather_ps::<4>(idx0, src) };
        // SAFETY: lane `l` reads value `k` of column `16 + l < 32`.
        let hi = unsafe { _mm512_i32gather_ps::<4>(idx1, src) };
        let (lo_dst, hi_dst) = step.split_at_mut(16);
        // SAFETY: `step` is one row of NR = 32 values, so each half holds the 16 stored.
        unsafe { _mm512_storeu_ps(lo_dst.as_mut_ptr(), lo) };
        // SAFETY: as above.
        unsafe { _mm512_storeu_ps(hi_dst.as_mut_ptr(), hi) };
    }
}
