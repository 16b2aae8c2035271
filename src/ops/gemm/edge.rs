//! The last few columns of `C` (fewer than half a vector) computed along another axis than the
//! micro-kernel's (NOTE [Narrow edge]).

use std::arch::x86_64::*;

use super::avx512::lanes;
use super::Problem;

// NOTE [Narrow edge]: the micro-kernel vectorizes along the columns of `B`, sixteen to a vector,
// so the last `n % 16` columns of `C` cost a whole vector per row and step. For W1's `n = 100` that
// is 4 useful lanes of 16: 4% of the product's work took 13-20% of its time (Intel Xeon, session
// 13: 64×1000×96 in 84-91 µs against 100-104 for 64×1000×100 on one thread, 1000×64×96 with `A`
// transposed 79-82 against 96). Those columns are computed here instead, along an axis that is
// contiguous in `A`:
// - a row-major `A` (`x @ w1`): dot products along `k`, four rows of `A` against four columns of
//   `B` (copied to rows of a small buffer) per block of sixteen accumulators, each summed across
//   its lanes at the end;
// - an `A` stored transposed (`h.T @ g`): sixteen rows of `C` per vector, read from a row of the
//   stored `A`, times a broadcast value of `B`, the vectors written down their column of `C` with
//   a scatter.
// The rest of `C` (`n - n % 16` columns) runs the usual paths. On claimed tiles each unit of the
// last column group computes the edge's values of its rows too: the edge shares cache lines with
// those columns, and a first version, where the caller computed the whole edge before claiming
// units, wrote lines the helper was writing (1000×64×100 on two threads 5% slower than without the
// edge; handed to the first member out of units, 18% slower; with each unit's rows, its best rounds
// 5% faster, its medians within that hour's noise). Elsewhere the caller computes it after the rest.
// The edge's sums are in an order of their own (lanes of `k` for the dot products, one chain over
// all `k` along the rows), the same on every path and thread count, so the product's bits still
// do not depend on the number of threads.
// Measured (session 13, Intel Xeon, release wheels alternated, µs per product, best / median of
// 8 rounds): one thread 64×1000×100 100.2 / 106.4 -> 71.0 / 91.9, 1000×64×100 with `A`
// transposed 90.7 / 97.1 -> 83.3 / 90.8; two threads 58.0 / 59.8 -> 48.7 / 59.6 and 47.3 / 48.6 ->
// 45.1 / 50.1 (this VM's noise was ±10% that hour: the medians on two threads did not move).

/// The narrow last columns of a product (NOTE [Narrow edge]): the whole product, how many columns,
/// and for dot products those columns of `B` as rows of `k` values.
pub(super) struct Edge {
    p: Problem<f32>,
    e: usize,
    bt: Vec<f32>,
}

// SAFETY: members compute the edge's rows of the units they claim, writing values of `C` that no
// other member touches; `A`, `B` and `bt` are only read.
unsafe impl Sync for Edge {}

thread_local! {
    /// `Edge::bt` between products, so that it is not allocated for each.
    static B_ROWS: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Drop for Edge {
    fn drop(&mut self) {
        B_ROWS.set(std::mem::take(&mut self.bt));
    }
}

impl Edge {
    /// The edge of `p`, if this path takes any of its columns: the last `n % 16` when there are
    /// at most eight of them, after at least one whole vector, and `A` is contiguous along `k`
    /// (with enough of `k` to amortize the lane sums: `DOT_MIN_K`) or along `m`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; `p`'s operands as for `sgemm`.
    pub(super) unsafe fn of(p: &Problem<f32>) -> Option<Edge> {
        let e = p.n % 16;
        let along_k = p.csa == 1 && p.k >= DOT_MIN_K && p.rsb.unsigned_abs() <= OFFSETS_MAX;
        let along_m = p.rsa == 1 && p.csa != 1 && p.ldc <= OFFSETS_MAX;
        if p.n <= 16 || !(1..=8).contains(&e) || !(along_k || along_m) {
            return None;
        }
        let mut bt = B_ROWS.take();
        bt.clear();
        if along_k {
            bt.resize(e * p.k, 0.0);
            // SAFETY: the caller's contract; `bt` holds `e` rows of `k`.
            unsafe { columns_as_rows(p, p.n - e, &mut bt) };
        }
        Some(Edge { p: *p, e, bt })
    }

    /// The product without the edge: its first `n - e` columns.
    pub(super) fn rest(&self) -> Problem<f32> {
        Problem { n: self.p.n - self.e, ..self.p }
    }

    /// Writes rows `r0..r1` of the edge's columns of `C`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F; no other thread touches these values of `C`.
    pub(super) unsafe fn rows(&self, r0: usize, r1: usize) {
        let j0 = self.p.n - self.e;
        // SAFETY: the caller's contract; `bt` is packed when `A` is contiguous along `k`.
        unsafe {
            if self.bt.is_empty() {
                along_rows(&self.p, j0, r0, r1)
            } else {
                dots(&self.p, j0, &self.bt, r0, r1)
            }
        }
    }

    /// Writes the edge's columns of `C`, all rows.
    ///
    /// # Safety
    /// As for `rows`.
    pub(super) unsafe fn all_rows(&self) {
        // SAFETY: the caller's contract.
        unsafe { self.rows(0, self.p.m) }
    }
}

/// Steps of `k` from which dot products pay for the sixteen lane sums of each block of four rows
/// by four columns (64 steps would give as many sum operations as multiply-adds).
const DOT_MIN_K: usize = 128;
/// Gathers and scatters take 32-bit offsets: sixteen rows of `B` or of `C` must lie within
/// `i32::MAX` bytes.
const OFFSETS_MAX: usize = 1 << 24;

/// Offsets of sixteen consecutive rows `stride` values apart, in values.
#[target_feature(enable = "avx512f")]
fn sixteen_rows(stride: isize) -> __m512i {
    let rows = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_mullo_epi32(rows, _mm512_set1_epi32(stride as i32))
}

/// Copies columns `j0..n` of `B` into `bt` as rows of `k` values, sixteen steps per gather.
///
/// # Safety
/// The CPU must support AVX-512F; `B` as for `sgemm`, `|rsb| <= OFFSETS_MAX`, `bt` of `(n - j0) × k`.
#[target_feature(enable = "avx512f")]
unsafe fn columns_as_rows(p: &Problem<f32>, j0: usize, bt: &mut [f32]) {
    let down = sixteen_rows(p.rsb);
    for (j, row) in bt.chunks_exact_mut(p.k).enumerate() {
        let col = p.b.wrapping_offset((j0 + j) as isize * p.csb);
        for s in (0..p.k).step_by(16) {
            let m = lanes(p.k - s);
            let at = col.wrapping_offset(s as isize * p.rsb);
            // SAFETY: the unmasked lanes are steps `s.. < k` of column `j0 + j < n` of `B`, and
            // values `s.. < k` of `row`.
            unsafe {
                let v = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), m, down, at);
                _mm512_mask_storeu_ps(row.as_mut_ptr().add(s), m, v);
            }
        }
    }
}

/// `C[i, j0 + j] = A[i, ..] · B[.., j0 + j]` for rows `r0..r1` as dot products along `k`, four
/// rows by four columns at a time; `bt` holds the columns as rows of `k` values.
///
/// # Safety
/// As for `Edge::rows`, with `p.csa == 1`.
#[target_feature(enable = "avx512f")]
unsafe fn dots(p: &Problem<f32>, j0: usize, bt: &[f32], r0: usize, r1: usize) {
    let (k, e) = (p.k, p.n - j0);
    let full = k - k % 16;
    let tail = lanes(k % 16);
    for i0 in (r0..r1).step_by(4) {
        let rows = 4.min(r1 - i0);
        // Rows past `r1` repeat the last row (computed, never stored).
        let a: [*const f32; 4] = std::array::from_fn(|r| p.a.wrapping_offset((i0 + r.min(rows - 1)) as isize * p.rsa));
        for c0 in (0..e).step_by(4) {
            let cols = 4.min(e - c0);
            let b: [*const f32; 4] = std::array::from_fn(|c| bt[(c0 + c.min(cols - 1)) * k..].as_ptr());
            let mut acc = [[_mm512_setzero_ps(); 4]; 4];
            let mut step = |s: usize, m: __mmask16| {
                // SAFETY: values `s..s + 16` (masked to `k`) of each row of `A` and of `bt`.
                let av: [__m512; 4] = std::array::from_fn(|r| unsafe { _mm512_maskz_loadu_ps(m, a[r].add(s)) });
                for (c, &bc) in b.iter().enumerate() {
                    // SAFETY: as above.
                    let bv = unsafe { _mm512_maskz_loadu_ps(m, bc.add(s)) };
                    for r in 0..4 {
                        acc[r][c] = _mm512_fmadd_ps(av[r], bv, acc[r][c]);
                    }
                }
            };
            for s in (0..full).step_by(16) {
                step(s, 0xFFFF);
            }
            if full < k {
                step(full, tail);
            }
            for (r, row) in acc.iter().enumerate().take(rows) {
                for (c, &v) in row.iter().enumerate().take(cols) {
                    // SAFETY: row `i0 + r < m`, column `j0 + c0 + c < n` of `C`.
                    unsafe { *p.c.add((i0 + r) * p.ldc + j0 + c0 + c) = _mm512_reduce_add_ps(v) };
                }
            }
        }
    }
}

/// `C[i, j0 + j] = Σ_s A[i, s] B[s, j0 + j]` for rows `r0..r1` with sixteen rows of `C` per
/// vector (a column of `A` is contiguous): blocks of up to four vectors (as many as the rows left
/// need) by up to four columns.
///
/// # Safety
/// As for `Edge::rows`, with `p.rsa == 1` and `ldc <= OFFSETS_MAX`.
#[target_feature(enable = "avx512f")]
unsafe fn along_rows(p: &Problem<f32>, j0: usize, r0: usize, r1: usize) {
    for i0 in (r0..r1).step_by(64) {
        let rows = 64.min(r1 - i0);
        for c0 in (j0..p.n).step_by(4) {
            let cols = 4.min(p.n - c0);
            // SAFETY: the caller's contract; `V` vectors cover the `rows` rows.
            unsafe {
                match rows.div_ceil(16) {
                    1 => along_rows_block::<1>(p, i0, rows, c0, cols),
                    2 => along_rows_block::<2>(p, i0, rows, c0, cols),
                    3 => along_rows_block::<3>(p, i0, rows, c0, cols),
                    _ => along_rows_block::<4>(p, i0, rows, c0, cols),
                }
            }
        }
    }
}

/// Rows `i0..i0 + rows` (`rows <= 16 V`) and columns `c0..c0 + cols` (`cols <= 4`) of `C`, all
/// of `k`: `V` vectors down each column, one chain of multiply-adds per value.
///
/// # Safety
/// As for `along_rows`, with the block inside `C`.
#[target_feature(enable = "avx512f")]
unsafe fn along_rows_block<const V: usize>(p: &Problem<f32>, i0: usize, rows: usize, c0: usize, cols: usize) {
    let masks: [__mmask16; V] = std::array::from_fn(|v| lanes(rows.saturating_sub(16 * v)));
    let mut acc = [[_mm512_setzero_ps(); V]; 4];
    for s in 0..p.k {
        let col = p.a.wrapping_offset(s as isize * p.csa + i0 as isize);
        // SAFETY: rows `i0 + 16v ..` (masked to the block) of column `s` of `A`.
        let av: [__m512; V] = std::array::from_fn(|v| unsafe { _mm512_maskz_loadu_ps(masks[v], col.add(16 * v)) });
        for (c, row) in acc.iter_mut().enumerate() {
            // Columns past the block's repeat its last (computed, never stored).
            let j = c0 + c.min(cols - 1);
            // SAFETY: step `s < k` of column `j < n` lies in `B`.
            let bv = _mm512_set1_ps(unsafe { *p.b.offset(s as isize * p.rsb + j as isize * p.csb) });
            for (x, &a) in row.iter_mut().zip(av.iter()) {
                *x = _mm512_fmadd_ps(a, bv, *x);
            }
        }
    }
    let down = sixteen_rows(p.ldc as isize);
    for (c, row) in acc.iter().enumerate().take(cols) {
        for (v, &x) in row.iter().enumerate() {
            let at = p.c.wrapping_add((i0 + 16 * v) * p.ldc + c0 + c);
            // SAFETY: the unmasked lanes are rows of the block in column `c0 + c < n` of `C`.
            unsafe { _mm512_mask_i32scatter_ps::<4>(at.cast(), masks[v], down, x) };
        }
    }
}
