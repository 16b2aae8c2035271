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

mod avx512;
mod pack;

use std::cell::RefCell;

use rayon::prelude::*;

use avx512::{MR, NR};

const KC: usize = 384;
const MC: usize = 1536;
const NC: usize = 512;
/// Below this many multiply-adds a second thread costs more than it saves.
const PAR_MIN_WORK: usize = 1 << 20;

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

/// The operands of one multiply; raw pointers so that bands of `C` can go to other threads.
#[derive(Clone, Copy)]
struct Problem {
    m: usize,
    k: usize,
    n: usize,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    c: *mut f32,
    ldc: usize,
}

// SAFETY: a `Problem` is only sent to another thread as a band of `C` disjoint from every other
// band (see `sgemm`); `A` and `B` are only read.
unsafe impl Send for Problem {}
unsafe impl Sync for Problem {}

impl Problem {
    /// Rows `r0..r0+rows` of `C` (and `A`).
    fn rows(self, r0: usize, rows: usize) -> Problem {
        Problem {
            m: rows,
            a: self.a.wrapping_offset(r0 as isize * self.rsa),
            c: self.c.wrapping_add(r0 * self.ldc),
            ..self
        }
    }

    /// Columns `c0..c0+cols` of `C` (and `B`).
    fn cols(self, c0: usize, cols: usize) -> Problem {
        Problem { n: cols, b: self.b.wrapping_offset(c0 as isize * self.csb), c: self.c.wrapping_add(c0), ..self }
    }
}

/// `C = A · B` for an m×k `A` and k×n `B` with element strides, into row-major `C` (row stride
/// `ldc`).
///
/// # Safety
/// `a` and `b` must be valid for their shapes and strides, `c` for `m` rows of `n` values at stride
/// `ldc`, and `c` must not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: *const f32,
    rsa: isize,
    csa: isize,
    b: *const f32,
    rsb: isize,
    csb: isize,
    c: *mut f32,
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    if !std::arch::is_x86_feature_detected!("avx512f") || k == 0 {
        matrixmultiply::sgemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, ldc as isize, 1);
        return;
    }
    let p = Problem { m, k, n, a, rsa, csa, b, rsb, csb, c, ldc };
    let threads = rayon::current_num_threads();
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    if threads < 2 || m * n * k < PAR_MIN_WORK || row_panels.max(col_panels) < 2 {
        serial(p);
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
    (0..parts).into_par_iter().for_each(|t| {
        let start = t * per;
        if start < len {
            let size = per.min(len - start);
            // SAFETY: bands are disjoint ranges of rows or columns of `C`.
            unsafe { serial(if width == NR { p.cols(start, size) } else { p.rows(start, size) }) }
        }
    });
}

/// One thread's multiply: pack, then sweep the micro-kernel over the blocks.
///
/// A row-major `A` is read in place (the kernel takes its strides) instead of packed: packing it
/// is a transpose costing about a cycle per element, a quarter of a small multiply's time (the
/// seed's 64×1000·1000×100); only its last, partial panel is packed, to pad it with zeros.
unsafe fn serial(p: Problem) {
    BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (abuf, bbuf) = &mut *bufs;
        let direct_a = p.csa == 1;
        let ap = lines(abuf, if direct_a { MR } else { MC.min(p.m.div_ceil(MR) * MR) } * KC.min(p.k));
        let bp = lines(bbuf, NC.min(p.n.div_ceil(NR) * NR) * KC.min(p.k));
        for ic in (0..p.m).step_by(MC) {
            let mc = MC.min(p.m - ic);
            for pc in (0..p.k).step_by(KC) {
                let kc = KC.min(p.k - pc);
                let a_block = p.a.offset(ic as isize * p.rsa + pc as isize * p.csa);
                if !direct_a {
                    pack::pack_a(mc, kc, a_block, p.rsa, p.csa, ap);
                }
                for jc in (0..p.n).step_by(NC) {
                    let nc = NC.min(p.n - jc);
                    pack::pack_b(kc, nc, p.b.offset(pc as isize * p.rsb + jc as isize * p.csb), p.rsb, p.csb, bp);
                    for ir in (0..mc).step_by(MR) {
                        let rows = MR.min(mc - ir);
                        let (apanel, strides) = if !direct_a {
                            (ap.as_ptr().add(ir * kc), (1, MR))
                        } else if rows == MR {
                            (a_block.offset(ir as isize * p.rsa), (p.rsa as usize, 1))
                        } else {
                            pack::pack_a(rows, kc, a_block.offset(ir as isize * p.rsa), p.rsa, 1, ap);
                            (ap.as_ptr(), (1, MR))
                        };
                        for jr in (0..nc).step_by(NR) {
                            avx512::kernel(
                                kc,
                                apanel,
                                strides,
                                bp.as_ptr().add(jr * kc),
                                p.c.add((ic + ir) * p.ldc + jc + jr),
                                p.ldc,
                                rows,
                                NR.min(nc - jr),
                                pc > 0,
                            );
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
        unsafe { sgemm(m, k, n, a.as_ptr(), rsa, csa, b.as_ptr(), rsb, csb, c.as_mut_ptr(), ldc) };
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
