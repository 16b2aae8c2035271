//! Packing: copies a block of `A` or `B` (any strides, so transposed views cost no extra copy)
//! into the panel order the micro-kernel reads, zero-padding partial panels.
//!
//! NOTE [Packing at memory speed]: the packing routines are compiled for AVX-512 (they run only
//! where the kernel does, behind the same runtime detection) and written with its intrinsics, so
//! that a copy moves whole 64-byte vectors. Before (2026-11-24), the copy loops sat outside any
//! `target_feature` function and compiled to 16-byte SSE moves, and a `B` with contiguous columns
//! (the `w.t()` of every backward) was read with two 16-lane gathers per step, one element from
//! each of 32 cache lines: together 16% of W4's time. A contiguous-columns `B` is now read 16
//! values (one cache line) of 16 columns at a time and turned in registers (`transpose16`).
//! A row-major `B` is read panel by panel, two lines of each of `kc` rows 16 KB apart (W4's
//! 4096-column weights), a pattern the hardware prefetcher follows badly: 9 GB/s from memory,
//! against 15 GB/s with the next panel's two lines of each row prefetched as the row is copied
//! (`benches/gemm_pack.rs`; 37 against 34 GB/s when the block is in cache). Reading row by row
//! instead and dealing each row out to the panels was slower both ways (7.4 and 26.5 GB/s).
//! A transposed operand (a column-contiguous `B`, or the `h.T` of a weight gradient as `A`) read
//! from L3 (W6's backward: each saved activation and weight last touched a whole forward pass
//! before) is read across `kc` rows a line each, more streams than the hardware prefetcher keeps:
//! each step now prefetches its row's line two panels (or two 16-step blocks) on. One thread,
//! 256³ from 64 rotating operands (16 MB), µs, three alternations (session 12, Intel): `h.T @ g`
//! 204–216 → 193–203, `g @ w.T` 200–218 → 194–200; with warm operands unchanged (173–191 against
//! 176–187).
//! The layouts, and so the products' bits, are unchanged.

use std::arch::x86_64::*;

use super::avx512::{lanes, MR, NR};

/// Packs the `mc × kc` block of `A` at `a` into `ceil(mc / MR)` panels of `kc × MR` values,
/// k-major (the MR values of one step of `k` are adjacent).
///
/// # Safety
/// The CPU must support AVX-512F; `a` must be valid for `mc` rows at stride `rsa` and `kc` columns
/// at stride `csa`, and `dst` must hold `ceil(mc / MR) × kc × MR` values.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pack_a(mc: usize, kc: usize, a: *const f32, rsa: isize, csa: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * MR).take(mc.div_ceil(MR)).enumerate() {
        let r0 = p * MR;
        let rows = MR.min(mc - r0);
        let base = a.wrapping_offset(r0 as isize * rsa);
        if rsa == 1 {
            // Columns of A are contiguous (a transposed view): one run of `rows` per step, loaded
            // as one vector (lanes past `rows` read as zeros, so a partial panel is padded).
            // SAFETY: `rows` values from `base` at stride `csa` for each of the `kc` steps are
            // rows `r0..r0+rows < mc` of the block; `panel` holds `kc × MR` values.
            unsafe { copy_steps(kc, rows, base, csa, panel) };
            continue;
        }
        if rows < MR {
            panel.fill(0.0);
        }
        // Rows contiguous (or general strides): read each row once, scatter into the steps.
        for i in 0..rows {
            let src = base.wrapping_offset(i as isize * rsa);
            for k in 0..kc {
                // SAFETY: row `r0 + i < mc` and column `k < kc` of the block.
                let v = unsafe { *src.offset(k as isize * csa) };
                // SAFETY: `k < kc` and `i < rows <= MR`, so the index is below the panel's `kc × MR`.
                unsafe { *panel.get_unchecked_mut(k * MR + i) = v };
            }
        }
    }
}

/// One panel of `A` from contiguous columns: step `k` of the panel is the `rows` values at
/// `src + k·csa`, zero-padded to `MR`.
///
/// # Safety
/// AVX-512F; `src + k·csa + i` valid for `k < kc`, `i < rows <= MR`; `panel` holds `kc × MR`.
#[target_feature(enable = "avx512f")]
unsafe fn copy_steps(kc: usize, rows: usize, src: *const f32, csa: isize, panel: &mut [f32]) {
    const { assert!(MR == 12) };
    let out = panel.as_mut_ptr();
    if rows == MR {
        // A full panel: 8 + 4 values per step, each move touching only the step's own values (a
        // masked 16-lane move here measured 40% slower: it spans more cache lines).
        for k in 0..kc {
            let s = src.wrapping_offset(k as isize * csa);
            // The line two panels on of this step (a hint: it cannot fault; NOTE [Packing at
            // memory speed]).
            _mm_prefetch::<_MM_HINT_T0>(s.wrapping_add(2 * MR).cast());
            // SAFETY: the 12 values of step `k` (rows `0..12` of the panel) and the step's 12
            // slots of the panel.
            unsafe {
                let lo = _mm256_loadu_ps(s);
                let hi = _mm_loadu_ps(s.add(8));
                _mm256_storeu_ps(out.add(k * MR), lo);
                _mm_storeu_ps(out.add(k * MR + 8), hi);
            }
        }
        return;
    }
    let load = lanes(rows);
    for k in 0..kc {
        // SAFETY: the mask keeps the load to the `rows` valid values of step `k` (masked-off
        // lanes are not read and cannot fault); the store to the step's 12 slots of the panel.
        unsafe {
            let v = _mm512_maskz_loadu_ps(load, src.wrapping_offset(k as isize * csa));
            _mm512_mask_storeu_ps(out.add(k * MR), lanes(MR), v);
        }
    }
}

/// Packs the `kc × nc` block of `B` at `b` into `ceil(nc / NR)` panels of `kc × NR` values,
/// k-major (the NR values of one row of the panel are adjacent).
///
/// # Safety
/// The CPU must support AVX-512F; `b` must be valid for `kc` rows at stride `rsb` and `nc` columns
/// at stride `csb`, and `dst` must hold `ceil(nc / NR) × kc × NR` values.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pack_b(kc: usize, nc: usize, b: *const f32, rsb: isize, csb: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * NR).take(nc.div_ceil(NR)).enumerate() {
        let c0 = p * NR;
        let cols = NR.min(nc - c0);
        let base = b.wrapping_offset(c0 as isize * csb);
        let out = panel.as_mut_ptr();
        if csb == 1 {
            // Rows contiguous (the common case): two vector moves per step, masked when the panel
            // is partial (masked-off lanes load as zeros: the padding).
            let m0 = lanes(cols);
            let m1 = lanes(cols.saturating_sub(16));
            for k in 0..kc {
                let src = base.wrapping_offset(k as isize * rsb);
                // The next panel's two lines of this row (a hint: it cannot fault).
                _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(NR).cast());
                _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(NR + 16).cast());
                // SAFETY: row `k < kc` of the block holds `cols` contiguous values (`csb == 1`)
                // from `src`; the masks keep the loads to them. The stores are step `k` of the
                // panel, which holds `kc × NR` values.
                unsafe {
                    let lo = _mm512_maskz_loadu_ps(m0, src);
                    let hi = _mm512_maskz_loadu_ps(m1, src.wrapping_add(16));
                    _mm512_storeu_ps(out.add(k * NR), lo);
                    _mm512_storeu_ps(out.add(k * NR + 16), hi);
                }
            }
        } else if rsb == 1 {
            // Columns contiguous (a transposed view, `g @ w.t()` in every backward of `mm`).
            // SAFETY: columns `c0..c0+cols` of the block each hold `kc` contiguous values at
            // stride `csb`; the panel holds `kc × NR` values.
            unsafe { transpose_panel(kc, cols, base, csb, panel) };
        } else {
            if cols < NR {
                panel.fill(0.0);
            }
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

/// One kc×32 panel of a `B` whose columns are contiguous (row stride 1, column stride `csb`),
/// `cols <= 32` of them (the rest padded with zeros): for every 16 steps and each half of the
/// panel, sixteen 16-value runs (one per column: a cache line when aligned) are loaded and
/// transposed in registers into the sixteen steps' rows.
///
/// # Safety
/// The CPU must support AVX-512F; `b + j·csb + k` must be valid for `j < cols`, `k < kc`, and
/// `panel` must hold `kc × NR` values.
#[target_feature(enable = "avx512f")]
unsafe fn transpose_panel(kc: usize, cols: usize, b: *const f32, csb: isize, panel: &mut [f32]) {
    let out = panel.as_mut_ptr();
    for k0 in (0..kc).step_by(16) {
        let steps = 16.min(kc - k0);
        let m = lanes(steps);
        for half in 0..NR / 16 {
            let mut r = [_mm512_setzero_ps(); 16];
            for (j, v) in r.iter_mut().enumerate() {
                let col = 16 * half + j;
                if col < cols {
                    let at = b.wrapping_offset(col as isize * csb).wrapping_add(k0);
                    // The column's line two blocks of steps on (a hint: it cannot fault).
                    _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(32).cast());
                    // SAFETY: steps `k0..k0+steps` of column `col < cols` (masked to them).
                    *v = unsafe { _mm512_maskz_loadu_ps(m, at) };
                }
            }
            let t = transpose16(r);
            for (s, v) in t.iter().enumerate().take(steps) {
                // SAFETY: step `k0 + s < kc`, columns `16·half..+16` of the panel.
                unsafe { _mm512_storeu_ps(out.add((k0 + s) * NR + 16 * half), *v) };
            }
        }
    }
}

/// The transpose of a 16×16 matrix of f32 held as 16 rows: `out[j]` lane `i` = `r[i]` lane `j`.
/// Four rounds of shuffles: 32-bit and 64-bit interleaves within 128-bit lanes, then two rounds of
/// 128-bit lane shuffles.
#[target_feature(enable = "avx512f")]
fn transpose16(r: [__m512; 16]) -> [__m512; 16] {
    let mut t = [_mm512_setzero_ps(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4i + c], lane L: column 4L + c, rows 4i..4i+3.
    let mut u = [_mm512_setzero_ps(); 16];
    let pd = _mm512_castps_pd;
    let ps = _mm512_castpd_ps;
    for i in 0..4 {
        let (a0, a1, a2, a3) = (pd(t[4 * i]), pd(t[4 * i + 1]), pd(t[4 * i + 2]), pd(t[4 * i + 3]));
        u[4 * i] = ps(_mm512_unpacklo_pd(a0, a2));
        u[4 * i + 1] = ps(_mm512_unpackhi_pd(a0, a2));
        u[4 * i + 2] = ps(_mm512_unpacklo_pd(a1, a3));
        u[4 * i + 3] = ps(_mm512_unpackhi_pd(a1, a3));
    }
    let mut out = [_mm512_setzero_ps(); 16];
    for c in 0..4 {
        let v0 = _mm512_shuffle_f32x4::<0x44>(u[c], u[4 + c]);
        let v1 = _mm512_shuffle_f32x4::<0xEE>(u[c], u[4 + c]);
        let w0 = _mm512_shuffle_f32x4::<0x44>(u[8 + c], u[12 + c]);
        let w1 = _mm512_shuffle_f32x4::<0xEE>(u[8 + c], u[12 + c]);
        out[c] = _mm512_shuffle_f32x4::<0x88>(v0, w0);
        out[4 + c] = _mm512_shuffle_f32x4::<0xDD>(v0, w0);
        out[8 + c] = _mm512_shuffle_f32x4::<0x88>(v1, w1);
        out[12 + c] = _mm512_shuffle_f32x4::<0xDD>(v1, w1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar packing both routines must reproduce: panel `q`, step `k`, lane `l` holds the
    /// operand's value at (`k`, `q·width + l`) of the `steps × across` block, 0 past the block.
    fn reference(steps: usize, across: usize, width: usize, at: impl Fn(usize, usize) -> f32) -> Vec<f32> {
        let panels = across.div_ceil(width);
        let mut out = vec![0.0; panels * steps * width];
        for q in 0..panels {
            for k in 0..steps {
                for l in 0..width {
                    if q * width + l < across {
                        out[(q * steps + k) * width + l] = at(k, q * width + l);
                    }
                }
            }
        }
        out
    }

    /// Every packing path (contiguous rows, contiguous columns, general strides) against the
    /// scalar reference, on odd sizes: partial panels, `kc` not a multiple of 16, offsets that
    /// break cache-line alignment.
    #[test]
    fn packing_matches_the_scalar_layout() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let src: Vec<f32> = (0..200_000).map(|i| i as f32 * 0.5 - 7.0).collect();
        for &(steps, across) in &[(1, 1), (5, 13), (16, 32), (17, 33), (31, 12), (40, 70), (384, 45)] {
            for (ld, off) in [(across, 0), (across + 3, 1), (steps.max(across) + 5, 7)] {
                for (rs, cs) in [(ld as isize, 1isize), (1, ld as isize), (2, 2 * ld as isize)] {
                    let at = |k: usize, j: usize| src[off + (k as isize * rs + j as isize * cs) as usize];
                    let need = off + ((steps - 1) as isize * rs + (across - 1) as isize * cs) as usize;
                    assert!(need < src.len());
                    let base = src[off..].as_ptr();
                    // B: `steps` = kc rows, `across` = nc columns.
                    let want = reference(steps, across, NR, at);
                    let mut got = vec![f32::NAN; want.len()];
                    // SAFETY: AVX-512F was detected; the block lies inside `src` (checked above).
                    unsafe { pack_b(steps, across, base, rs, cs, &mut got) };
                    assert!(got == want, "pack_b kc={steps} nc={across} rs={rs} cs={cs}");
                    // A: `across` = mc rows, `steps` = kc columns; `A[i][k]` = at(k, i), so the
                    // row stride is `cs` and the column stride `rs`.
                    let want = reference(steps, across, MR, at);
                    let mut got = vec![f32::NAN; want.len()];
                    // SAFETY: as above.
                    unsafe { pack_a(across, steps, base, cs, rs, &mut got) };
                    assert!(got == want, "pack_a mc={across} kc={steps} rsa={cs} csa={rs}");
                }
            }
        }
    }
}
