//! Single-precision matrix multiply: a blocked, packed GEMM around an AVX-512 micro-kernel, split
//! across the rayon pool; `matrixmultiply` where AVX-512 is absent and for f64.
//!
//! Blocking (the BLIS scheme, mirrored for row-major `C` because the kernel broadcasts `A` and
//! vectorizes along the columns of `B`):
//! - `KC` steps of `k` per pass: one packed 12×KC panel of `A` (18 KB) stays in L1 while the
//!   kernel sweeps the packed KC×NC block of `B` (768 KB, in the 2 MB L2);
//! - `MC` rows of `A` packed per pass (2.3 MB, in L3);
//! - threads split `C` into column (or row) bands, each with its own packing buffers, so they
//!   share nothing but the read-only inputs; bands are whole panels wide.
//!
//! NOTE [Why a hand-written SGEMM]: float32 matrix multiply bounds the heavy workloads (README,
//! "Performance"), so its speed is theirs. This kernel reaches 164 GFLOP/s on one core for 2048³,
//! about 85% of the core's FMA peak; PyTorch's (oneDNN/MKL) reaches about 175 per core on the same
//! machine. `matrixmultiply`, the kernel before it (and still the fallback), took 89.3 ms for a
//! threaded 2048³ on both cores (the measurement in `ops/linalg.rs`), about 96 GFLOP/s per core.

mod avx512;
mod bf16;
mod pack;

use std::cell::RefCell;

use rayon::prelude::*;

use super::linalg::Problem;
use avx512::{MR, NR};

const KC: usize = 384;
const MC: usize = 1536;
const NC: usize = 512;
/// Below this many multiply-adds a second thread costs more than it saves. Measured on a quiet
/// 2-core Zen 5 (`benches/compare.py`, 2026-11-24): W1's 64×1000×100 (6.4M) ran at 154 GFLOP/s on two
/// threads against 192 on one (each band packs a whole copy of the other operand, which a small
/// product does not repay), and W1 itself went from 0.227 to 0.191 ms/step with it on one. 256³
/// (16.8M) alone is also faster on one thread (0.129 against 0.146 ms), but W6, whose forward is a
/// sequence of them, went from 80 to 105 ms/step when they ran serially: so the line sits between.
const PAR_MIN_WORK: usize = 1 << 23;

/// A 64-byte-aligned chunk, so packed panels start on cache-line boundaries.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

thread_local! {
    /// Packing buffers of this thread, reused across calls: (A block, B block).
    static BUFFERS: RefCell<(Vec<Line>, Vec<Line>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn lines(buf: &mut Vec<Line>, floats: usize) -> &mut [f32] {
    let need = floats.div_ceil(16);
    if buf.len() < need {
        buf.resize(need, Line([0.0; 16]));
    }
    // SAFETY: `Line` is 16 f32 with no padding (size 64 = 16 × 4), so the vector is `need × 16`
    // initialised f32 values.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<f32>(), floats) }
}

// SAFETY: a `Problem` crosses threads only inside `sgemm`, as a band of `C` disjoint from every
// other band; `A` and `B` are only read.
unsafe impl Send for Problem<f32> {}
// SAFETY: as for `Send`: shared `Problem`s are only read, and their bands of `C` are disjoint.
unsafe impl Sync for Problem<f32> {}

impl Problem<f32> {
    /// Rows `r0..r0+rows` of `C` (and `A`).
    fn rows(self, r0: usize, rows: usize) -> Self {
        Problem {
            m: rows,
            a: self.a.wrapping_offset(r0 as isize * self.rsa),
            c: self.c.wrapping_add(r0 * self.ldc),
            ..self
        }
    }

    /// Columns `c0..c0+cols` of `C` (and `B`).
    fn cols(self, c0: usize, cols: usize) -> Self {
        Problem { n: cols, b: self.b.wrapping_offset(c0 as isize * self.csb), c: self.c.wrapping_add(c0), ..self }
    }
}

/// `C = A · B` for one [`Problem`]: an m×k `A` and k×n `B` with element strides, into row-major
/// `C` (row stride `ldc`).
///
/// # Safety
/// `p.a` and `p.b` must be valid for reads at their shapes and strides, `p.c` for writes of `p.m`
/// rows of `p.n` values at stride `p.ldc`, and `p.c` must not overlap `p.a` or `p.b`.
pub(crate) unsafe fn sgemm(p: Problem<f32>) {
    let Problem { m, k, n, .. } = p;
    if m == 0 || n == 0 {
        return;
    }
    if crate::ops::matmul_precision::use_bf16_products() {
        // SAFETY: AVX-512F/BW and AVX512_BF16 were detected; the caller's contract is `bf16::sgemm`'s.
        unsafe { bf16::sgemm(p) };
        return;
    }
    if !std::arch::is_x86_feature_detected!("avx512f") || k == 0 {
        // SAFETY: the caller's contract is `matrixmultiply::sgemm`'s (with beta 0, `C` is only
        // written), on every band of rows.
        unsafe { super::linalg::in_row_bands(p, serial_fallback) };
        return;
    }
    let threads = crate::parallel::threads();
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    if threads < 2 || m * n * k < PAR_MIN_WORK || row_panels.max(col_panels) < 2 {
        // SAFETY: AVX-512F was detected above; the operands are the caller's.
        unsafe { serial(p) };
        return;
    }
    // Split into bands of whole panels, one per thread. Each band packs its own share of one
    // operand and all of the other, so split the dimension whose split duplicates the smaller
    // packing (columns duplicate A's m·k, rows duplicate B's k·n), provided it has a panel for
    // every thread.
    let by_cols = if row_panels < threads {
        true
    } else if col_panels < threads {
        false
    } else {
        m * k <= k * n
    };
    let (panels, width, len) = if by_cols { (col_panels, NR, n) } else { (row_panels, MR, m) };
    let parts = threads.min(panels);
    let per = panels.div_ceil(parts) * width;
    crate::parallel::install(|| {
        (0..parts).into_par_iter().for_each(|t| {
            let start = t * per;
            if start < len {
                let size = per.min(len - start);
                // SAFETY: AVX-512F was detected above; each band is a sub-block of the caller's valid
                // operands, and bands are disjoint ranges of rows or columns of `C`.
                unsafe { serial(if width == NR { p.cols(start, size) } else { p.rows(start, size) }) }
            }
        })
    });
}

/// One thread's `matrixmultiply::sgemm`, where AVX-512 is absent.
///
/// # Safety
/// As for `sgemm`.
unsafe fn serial_fallback(p: Problem<f32>) {
    // SAFETY: the caller's contract is `matrixmultiply::sgemm`'s (with beta 0, `C` is only written).
    unsafe {
        matrixmultiply::sgemm(p.m, p.k, p.n, 1.0, p.a, p.rsa, p.csa, p.b, p.rsb, p.csb, 0.0, p.c, p.ldc as isize, 1)
    }
}

/// One thread's multiply: pack, then sweep the micro-kernel over the blocks.
///
/// A row-major `A` is read in place (the kernel takes its strides) instead of packed: packing it
/// is a transpose costing about a cycle per element, a quarter of a small multiply's time (the
/// seed's 64×1000·1000×100); only its last, partial panel is packed, to pad it with zeros.
///
/// # Safety
/// The CPU must support AVX-512F; the operands as for `sgemm`, with no other thread touching this
/// band of `C`.
unsafe fn serial(p: Problem<f32>) {
    BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (abuf, bbuf) = &mut *bufs;
        let direct_a = p.csa == 1;
        let ap = lines(abuf, if direct_a { MR } else { MC.min(p.m.div_ceil(MR) * MR) } * KC.min(p.k));
        let bp = lines(bbuf, NC.min(p.n.div_ceil(NR) * NR) * KC.min(p.k));
        // Addresses are computed with wrapping arithmetic (they stay inside the operands, which the
        // loop bounds ensure); the unsafe blocks are where they are read or written.
        for ic in (0..p.m).step_by(MC) {
            let mc = MC.min(p.m - ic);
            for pc in (0..p.k).step_by(KC) {
                let kc = KC.min(p.k - pc);
                let a_block = p.a.wrapping_offset(ic as isize * p.rsa + pc as isize * p.csa);
                if !direct_a {
                    // SAFETY: rows `ic..ic+mc` and columns `pc..pc+kc` lie inside `A`; `ap` holds
                    // `ceil(mc / MR)` panels of `kc × MR` (sized above for `MC` rows and `KC` steps).
                    unsafe { pack::pack_a(mc, kc, a_block, p.rsa, p.csa, ap) };
                }
                for jc in (0..p.n).step_by(NC) {
                    let nc = NC.min(p.n - jc);
                    let b_block = p.b.wrapping_offset(pc as isize * p.rsb + jc as isize * p.csb);
                    // SAFETY: rows `pc..pc+kc` and columns `jc..jc+nc` lie inside `B`; `bp` holds
                    // `ceil(nc / NR)` panels of `kc × NR`; AVX-512F is the caller's precondition.
                    unsafe { pack::pack_b(kc, nc, b_block, p.rsb, p.csb, bp) };
                    for ir in (0..mc).step_by(MR) {
                        let rows = MR.min(mc - ir);
                        let (apanel, strides) = if !direct_a {
                            (ap.as_ptr().wrapping_add(ir * kc), (1, MR))
                        } else if rows == MR {
                            (a_block.wrapping_offset(ir as isize * p.rsa), (p.rsa as usize, 1))
                        } else {
                            let a_rows = a_block.wrapping_offset(ir as isize * p.rsa);
                            // SAFETY: the last `rows < MR` rows of this block of `A`, read along
                            // its contiguous rows; `ap` holds at least one `kc × MR` panel.
                            unsafe { pack::pack_a(rows, kc, a_rows, p.rsa, 1, ap) };
                            (ap.as_ptr(), (1, MR))
                        };
                        for jr in (0..nc).step_by(NR) {
                            let tile = avx512::Tile {
                                kc,
                                a: apanel,
                                ars: strides.0,
                                aks: strides.1,
                                b: bp.as_ptr().wrapping_add(jr * kc),
                                c: p.c.wrapping_add((ic + ir) * p.ldc + jc + jr),
                                ldc: p.ldc,
                                rows,
                                cols: NR.min(nc - jr),
                                accumulate: pc > 0,
                            };
                            // SAFETY: AVX-512F is the caller's precondition; `apanel` is a packed
                            // (or in-place, row-major) panel of `kc` steps of `A`, `b` a packed
                            // `kc × NR` panel of `bp`, and the `rows × cols` corner of `C` at `c` is
                            // inside this thread's band.
                            unsafe { avx512::kernel(tile) };
                        }
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `sgemm` against an f64 triple loop for one shape, with `A` and/or `B` transposed.
    fn check(m: usize, k: usize, n: usize, ta: bool, tb: bool) {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 19) as f32 / 9.0 - 1.0).collect();
        // `ta`: A is stored k×m and read through transposed strides (likewise `tb`).
        let (rsa, csa) = if ta { (1, m as isize) } else { (k as isize, 1) };
        let (rsb, csb) = if tb { (1, k as isize) } else { (n as isize, 1) };
        let ldc = n + 3;
        let mut c = vec![f32::NAN; m * ldc];
        let p = Problem { m, k, n, a: a.as_ptr(), rsa, csa, b: b.as_ptr(), rsb, csb, c: c.as_mut_ptr(), ldc };
        // SAFETY: `a`, `b` and `c` are vectors of exactly the sizes these shapes and strides reach.
        unsafe { sgemm(p) };
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|p| {
                        let av = a[(i as isize * rsa + p as isize * csa) as usize] as f64;
                        let bv = b[(p as isize * rsb + j as isize * csb) as usize] as f64;
                        av * bv
                    })
                    .sum();
                let got = c[i * ldc + j] as f64;
                assert!(
                    (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{m}x{k}x{n} ta={ta} tb={tb} at ({i},{j}): {got} vs {want}"
                );
            }
            for j in n..ldc.min(n + 3) {
                if i * ldc + j < c.len() {
                    assert!(c[i * ldc + j].is_nan(), "wrote past column {n} in row {i}");
                }
            }
        }
    }

    #[test]
    fn matches_f64_reference_on_edges_blocks_and_strides() {
        for &(m, k, n) in
            &[(1, 1, 1), (13, 5, 33), (12, 32, 32), (64, 1000, 100), (100, 64, 10), (7, 400, 530), (1537, 3, 17)]
        {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                check(m, k, n, ta, tb);
            }
        }
    }
}
