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
/// Steps of `k` before the end at which the tile of `C` is prefetched (NOTE [Prefetching C]).
const C_AHEAD: usize = 128;

/// One call of the micro-kernel: `C[..rows, ..cols] (+)= A_panel · B_panel`.
#[derive(Clone, Copy)]
pub(super) struct Tile {
    /// Steps of `k`.
    pub(super) kc: usize,
    /// The panel of `A`: value `i` of step `p` is at `a[i·ars + p·aks]` (packed: `ars = 1`,
    /// `aks = MR`; a row-major `A` read in place: `ars` = its row stride, `aks = 1`).
    pub(super) a: *const f32,
    pub(super) ars: usize,
    pub(super) aks: usize,
    /// The kc×32 panel of `B`: 32 contiguous values per step, `bks` values apart (packed: `NR`;
    /// a row-major `B` read in place: its row stride).
    pub(super) b: *const f32,
    pub(super) bks: usize,
    /// The corner of row-major `C`, row stride `ldc`; only its `rows × cols` values are touched.
    pub(super) c: *mut f32,
    pub(super) ldc: usize,
    pub(super) rows: usize,
    pub(super) cols: usize,
    /// Add to `C` (`true`) or overwrite it.
    pub(super) accumulate: bool,
}

/// `C[..rows, ..cols] (+)= A_panel · B_panel` for one panel of `A` (twelve values per step) and
/// one packed kc×32 panel of `B` (32 values per step). `C` is row-major with row stride `ldc`;
/// only the `rows × cols` corner is read or written.
///
/// Edge blocks (fewer than 12 rows or 17 columns) run a narrower instance of the same loop, so a
/// 4-row remainder costs a third of a full block instead of all of it.
///
/// # Safety
/// The CPU must support AVX-512F; `a` must be valid for the `kc` steps of `MR` values its strides
/// reach (of `4·ceil(rows / 4)` rows: the instance run reads no more), `b` for `kc` steps of `NR`
/// values `bks` apart, and `c` for `rows` rows of `cols` values at stride `ldc`, with no
/// other thread touching them.
pub(super) unsafe fn kernel(t: Tile) {
    let packed = t.ars == 1 && t.aks == MR && t.bks == NR && super::blk().packed_loop;
    let run: unsafe fn(Tile) = match (t.rows.div_ceil(4), t.cols > 16, packed) {
        (3, true, false) => block::<12, 2, false>,
        (3, false, false) => block::<12, 1, false>,
        (2, true, false) => block::<8, 2, false>,
        (2, false, false) => block::<8, 1, false>,
        (_, true, false) => block::<4, 2, false>,
        (_, false, false) => block::<4, 1, false>,
        (3, true, true) => block::<12, 2, true>,
        (3, false, true) => block::<12, 1, true>,
        (2, true, true) => block::<8, 2, true>,
        (2, false, true) => block::<8, 1, true>,
        (_, true, true) => block::<4, 2, true>,
        (_, false, true) => block::<4, 1, true>,
    };
    // SAFETY: the caller's contract is `block`'s, and the instance chosen has `R >= rows` (rows
    // are at most MR = 12) and `16·V >= cols`; `PACKED` only with the packed strides.
    unsafe { run(t) }
}

/// The mask of lanes `0..n` of a vector (all sixteen from `n = 16`).
pub(super) fn lanes(n: usize) -> __mmask16 {
    if n >= 16 {
        0xFFFF
    } else {
        ((1u32 << n) - 1) as __mmask16
    }
}

/// Prefetches a tile of `C` of `rows` rows and `cols <= 32` columns at `c` (row stride `ldc`)
/// into L1 (NOTE [Prefetching C]): each row's first and last values, and its middle line when the
/// row is wider than 16 (a row spans at most three lines). A prefetch never faults, so any address
/// is sound; the float32 and bfloat16 kernels share it.
#[inline(always)]
pub(super) fn prefetch_c(c: *const f32, ldc: usize, rows: usize, cols: usize) {
    for i in 0..rows {
        let p = c.wrapping_add(i * ldc);
        // SAFETY: `prefetcht0` is a hint: it reads no memory architecturally and cannot fault.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast());
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(cols - 1).cast());
            if cols > 16 {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(16).cast());
            }
        }
    }
}

/// `kc` steps of a micro-kernel loop, four per iteration: `$step` for `u` in 0..4, then `$advance`
/// with `n` = 4; the remainder one at a time (`u` = 0, `n` = 1); `$prefetch` runs `C_AHEAD` steps
/// before the end (NOTE [Prefetching C]). A macro, so that every step is inlined and the
/// accumulators stay in registers (the packed and in-place loops).
macro_rules! by_fours {
    ($kc:expr, $prefetch:expr, |$u:ident| $step:expr, |$n:ident| $advance:expr) => {{
        let ahead = $kc.min(C_AHEAD);
        for (phase, steps) in [(0, $kc - ahead), (1, ahead)] {
            if phase == 1 {
                $prefetch;
            }
            for _ in 0..steps / 4 {
                for $u in 0..4 {
                    $step;
                }
                let $n = 4;
                $advance;
            }
            for _ in 0..steps % 4 {
                let $u = 0;
                $step;
                let $n = 1;
                $advance;
            }
        }
    }};
}

/// The general loop of `block` (any strides of `A`, any step of `B`), into `acc`.
///
/// # Safety
/// As for `block`.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn general<const R: usize, const V: usize>(acc: &mut [[__m512; V]; R], t: Tile) {
    let Tile { kc, a, ars, aks, b, bks, c, ldc, rows, cols, .. } = t;
    // One pointer per row of the panel, each stepped on its own: written as `a.add(i * ars)` from
    // one pointer, the compiler walked it down the rows and back every step, a loop-carried chain
    // of `R` dependent adds that held an in-place `A` (`ars` = its row stride) at `R` cycles per
    // step, twice the FMA time of a `V = 1` edge block (NOTE [Claimed tiles]).
    let mut a_rows = [a; R];
    for (i, r) in a_rows.iter_mut().enumerate() {
        *r = a.wrapping_add(i * ars);
    }
    let mut b = b;
    let mut step = |a_rows: &mut [*const f32; R], b: *const f32| {
        let mut bv = [_mm512_setzero_ps(); V];
        for (v, x) in bv.iter_mut().enumerate() {
            // SAFETY: `b` points at this step's NR = 32 values of the panel and `v < 2`.
            *x = unsafe { _mm512_loadu_ps(b.add(16 * v)) };
        }
        for (row, r) in acc.iter_mut().zip(a_rows.iter_mut()) {
            // SAFETY: row `i < R` of the panel at this step (the caller's contract).
            let ai = _mm512_set1_ps(unsafe { **r });
            for (x, acc) in bv.iter().zip(row.iter_mut()) {
                *acc = _mm512_fmadd_ps(ai, *x, *acc);
            }
            // Wrapping: after the last step these point one step past the panel and are not read.
            *r = r.wrapping_add(aks);
        }
    };
    // NOTE [Prefetching C]: the tile of `C` is read (when accumulating) and written after the
    // last step; on a large product it is in L3 or memory by then, and 24 lines fetched at the
    // end stall the core for a memory latency per call. They are prefetched `C_AHEAD` steps
    // before the end (about 1,500 cycles: more than a memory latency, less than the time the
    // streaming panel of `B` takes to push them out of L1).
    let ahead = kc.min(C_AHEAD);
    for _ in 0..kc - ahead {
        step(&mut a_rows, b);
        b = b.wrapping_add(bks);
    }
    prefetch_c(c, ldc, rows, cols);
    for _ in 0..ahead {
        step(&mut a_rows, b);
        b = b.wrapping_add(bks);
    }
}

/// The loop of `block` for a row-major `A` read in place (`aks = 1`) and `B` packed or read in
/// place (any `bks`), into `acc` (NOTE [In-place loop]).
///
/// # Safety
/// As for `block`.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn in_place<const R: usize, const V: usize, const B_IN_PLACE: bool>(acc: &mut [[__m512; V]; R], t: Tile) {
    // NOTE [In-place loop]: the general loop steps one pointer per row of `A` every step (a dozen
    // scalar adds per step beside 24 FMAs). Here rows `4g..4g + 4` are read from one base pointer
    // `g` and the row stride `s` (bytes) or `3s` as an index (`[base + s]`, `[base + 2s]`, `[base +
    // 3s]`), four steps per iteration at constant displacements: three pointer adds per four steps.
    // The FMAs, their operands and their order are the general loop's, and so are the bits.
    // The four steps of `B` are at `0`, `bks`, `2 bks` and `3 bks` from one pointer: constant
    // displacements for a packed panel (`bks = NR`), offsets held in registers for a `B` read in
    // place (`B_IN_PLACE`: W1's `x @ w1`, which ran the general loop before, session 13). One
    // instance for both lost 4-10% on packed panels (256³, 64×100×1000 with `B` transposed).
    let Tile { kc, a, ars, b, c, ldc, rows, cols, .. } = t;
    let bks = if B_IN_PLACE { t.bks } else { NR };
    let s = ars * 4;
    let s3 = 3 * s;
    let mut bases = [a; 3];
    for (g, base) in bases.iter_mut().enumerate() {
        *base = a.wrapping_add(4 * g * ars);
    }
    macro_rules! step {
        ($bases:expr, $u:expr, $b:expr) => {{
            let (bases, u, b): ([*const f32; 3], usize, *const f32) = ($bases, $u, $b);
            let mut bv = [_mm512_setzero_ps(); V];
            for (v, x) in bv.iter_mut().enumerate() {
                // SAFETY: `b` points at this step's NR = 32 values of the panel, `v < 2`.
                *x = unsafe { _mm512_loadu_ps(b.add(16 * v)) };
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let base = bases[i / 4].cast::<u8>();
                let at = match i % 4 {
                    0 => base,
                    1 => base.wrapping_add(s),
                    2 => base.wrapping_add(2 * s),
                    _ => base.wrapping_add(s3),
                };
                // SAFETY: row `i < R` of the panel at step `u` of this group (the caller's contract).
                let ai = _mm512_set1_ps(unsafe { *at.cast::<f32>().add(u) });
                for (x, acc) in bv.iter().zip(row.iter_mut()) {
                    *acc = _mm512_fmadd_ps(ai, *x, *acc);
                }
            }
        }};
    }
    let mut b = b;
    by_fours!(kc, prefetch_c(c, ldc, rows, cols), |u| step!(bases, u, b.wrapping_add(u * bks)), |n| {
        for base in bases.iter_mut() {
            *base = base.wrapping_add(n);
        }
        b = b.wrapping_add(n * bks);
    });
}

/// The loop behind `kernel` for `R` rows (of the 12-row panel) and `V` vectors of 16 columns;
/// `PACKED`: the packed strides (NOTE [Packed loop]).
///
/// # Safety
/// As for `kernel`, with `rows <= R` and `cols <= 16·V`.
#[target_feature(enable = "avx512f")]
unsafe fn block<const R: usize, const V: usize, const PACKED: bool>(t: Tile) {
    let Tile { kc, a, b, c, ldc, rows, cols, accumulate, .. } = t;
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    if PACKED {
        // NOTE [Packed loop]: packed operands (`ars = 1`, `aks = MR`, `bks = NR`) are read from
        // one pointer each at constant offsets, four steps per iteration: two pointer adds and
        // the loop's count per four steps, against a dozen address adds and `lea`s per step in
        // the general loop below. The FMAs, their operands and their order are the same, and so
        // are the bits.
        // A macro rather than a closure, so that every step is inlined and `acc` stays in registers.
        macro_rules! step {
            ($a:expr, $b:expr) => {{
                let (a, b): (*const f32, *const f32) = ($a, $b);
                let mut bv = [_mm512_setzero_ps(); V];
                for (v, x) in bv.iter_mut().enumerate() {
                    // SAFETY: `b` points at this step's NR = 32 values of the packed panel, `v < 2`.
                    *x = unsafe { _mm512_loadu_ps(b.add(16 * v)) };
                }
                for (i, row) in acc.iter_mut().enumerate() {
                    // SAFETY: value `i < R <= MR` of this step of the packed panel of `A`.
                    let ai = _mm512_set1_ps(unsafe { *a.add(i) });
                    for (x, acc) in bv.iter().zip(row.iter_mut()) {
                        *acc = _mm512_fmadd_ps(ai, *x, *acc);
                    }
                }
            }};
        }
        let (mut a, mut b) = (a, b);
        by_fours!(kc, prefetch_c(c, ldc, rows, cols), |u| step!(a.wrapping_add(u * MR), b.wrapping_add(u * NR)), |n| {
            a = a.wrapping_add(n * MR);
            b = b.wrapping_add(n * NR);
        });
    } else if t.aks == 1 && super::blk().packed_loop {
        // SAFETY: as for this function (`bks = NR` for the packed instance).
        unsafe {
            if t.bks == NR {
                in_place::<R, V, false>(&mut acc, t)
            } else {
                in_place::<R, V, true>(&mut acc, t)
            }
        };
    } else {
        // SAFETY: as for this function.
        unsafe { general(&mut acc, t) };
    }
    for (i, row) in acc.iter().enumerate().take(rows) {
        let p = c.wrapping_add(i * ldc);
        for (v, &x) in row.iter().enumerate() {
            // A masked-off lane is neither read nor written (and cannot fault), so the address of
            // the second vector may lie past the row's end when `cols <= 16`.
            let (m, q) = (lanes(cols.saturating_sub(16 * v)), p.wrapping_add(16 * v));
            // SAFETY: row `i < rows` of `C`; the mask `m` keeps the access to its first `cols`
            // values, which the caller guarantees valid and this thread's alone.
            let y = if accumulate { _mm512_add_ps(x, unsafe { _mm512_maskz_loadu_ps(m, q) }) } else { x };
            // SAFETY: as for the load.
            unsafe { _mm512_mask_storeu_ps(q, m, y) };
        }
    }
}
