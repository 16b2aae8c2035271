//! float32 GEMM with bfloat16 products and float32 sums (`set_float32_matmul_precision("medium")`),
//! on AVX512_BF16's `vdpbf16ps`.
//!
//! `vdpbf16ps` multiplies 32 pairs of bfloat16 values and adds each pair's two products into one
//! of 16 float32 lanes: twice the multiply-adds of a float32 FMA per instruction. So the operands
//! are packed as *pair words*: one 32-bit word holds two bfloat16 values of consecutive `k`, the
//! even one in the low half (`_mm512_cvtne2ps_pbh` rounds to nearest even). A panel of width `W`
//! (`MR` rows of `A` or `NR` columns of `B`) is `ceil(kc / 2)` steps of `W` words, step-major; an
//! odd `k` is padded with a zero in both operands.
//!
//! The micro-kernel holds a 12×32 block of `C` in 24 zmm accumulators; per pair step it loads two
//! vectors of the `B` panel (32 columns), broadcasts twelve pair words of the `A` panel and issues
//! 24 `vdpbf16ps`: the same instruction count as the float32 kernel's step, for two steps of `k`.
//!
//! Blocking (per thread): `NC` columns × `KC` steps of `B` packed (256 pair steps × 512 columns ×
//! 4 bytes = 512 KB, in L2), then for every 12 rows of `A` one packed 12×KC panel (12 KB, in L1),
//! swept across the `B` block; when `B` has several such blocks, all of `A` is packed once per
//! product instead (NOTE [bf16 A packed once]). Packing converts as it copies, so a transposed operand costs one
//! pass: rows of pair words are interleaved from two rows of floats when the panel's width is the
//! contiguous direction, and transposed 16×16 in registers when `k` is.
//!
//! It shares `Problem` and the packing buffers (`lines`, `BUFFERS`) with the float32 kernel in
//! `mod.rs`.

use std::arch::x86_64::*;

use super::avx512::lanes;
use super::tiles::{next, Range};
use super::{lines, team, BUFFERS};
use crate::ops::linalg::{Band, Problem};

/// Rows of `C` per micro-kernel call.
const MR: usize = 12;
/// Columns of `C` per micro-kernel call (two zmm vectors of float32).
pub(super) const NR: usize = 32;
/// Steps of `k` per packed block (even: a block boundary never splits a pair).
const KC: usize = 512;
/// Columns of `B` per packed block.
const NC: usize = 512;
/// Pair steps before the end of a kernel call at which its tile of `C` is prefetched (NOTE
/// [Prefetching C]: about 1,200 cycles).
const C_AHEAD: usize = 96;
/// Below this many multiply-adds a second thread costs more than it saves.
const PAR_MIN_WORK: usize = 1 << 20;

/// `C = A · B` with bfloat16 products and float32 sums, for one [`Problem`] (`C` row-major).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX512_BF16; `p.a` and `p.b` must be valid for
/// reads at their shapes and strides, `p.c` for writes of `p.m` rows of `p.n` values at stride
/// `p.ldc`, and `p.c` must not overlap `p.a` or `p.b`; `m`, `k` and `n` must be nonzero.
pub(crate) unsafe fn sgemm(p: Problem<f32>) {
    debug_assert!(p.m > 0 && p.k > 0 && p.n > 0);
    // SAFETY: the caller's contract.
    unsafe { sgemm_threads(p, crate::parallel::threads(), PAR_MIN_WORK) }
}

/// The multiply on up to `threads` members of the GEMM team when it has `min_work` multiply-adds
/// or more (tests force the team on small shapes through this), else on this thread.
///
/// # Safety
/// As for `sgemm`, with `m`, `n` and `k` nonzero.
unsafe fn sgemm_threads(p: Problem<f32>, threads: usize, min_work: usize) {
    let Problem { m, k, n, .. } = p;
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    // As for float32: a caller on a rayon worker, or one that finds the team busy, runs serially
    // (NOTE [Why a team and not rayon]).
    let alone = threads < 2 || m * n * k < min_work || row_panels.max(col_panels) < 2;
    PACKED_A.with(|cell| {
        let mut buf = cell.borrow_mut();
        if !alone && rayon::current_thread_index().is_none() {
            if let Some(mut team) = team::try_acquire() {
                let members = team.members(threads);
                if members >= 2 {
                    // SAFETY: the caller's contract; `team` is held and fields `members`.
                    unsafe { on_team(p, &mut team, members, &mut buf) };
                    return;
                }
            }
        }
        let packed = packed_a_words(&p).map(|words| {
            let dst = lines::<u32>(&mut buf, words).as_mut_ptr();
            for r in 0..row_panels {
                // SAFETY: the caller's contract; `dst` holds `words` words.
                unsafe { pack_a_panel(&p, dst, r) };
            }
            PackedA(dst)
        });
        // SAFETY: the caller's contract is `serial`'s; `packed` holds every panel of `A`.
        unsafe { serial(p, packed) }
    })
}

// NOTE [bf16 A packed once]: the bands below sweep `C` one `NC`-column block of `B` at a time, and
// each block used to pack (convert and interleave) every panel of `A` again: 8 times for n = 4096,
// each time a strided read of twelve rows of `A` from memory. On 4096³ (one thread) `pack` took 16%
// of the multiply's time, the kernel the rest. So when `B` has more than one block of columns,
// all of `A` is converted once per product, before the bands, into one buffer of the calling
// thread (on the team, its panels are claimed by the members, then the bands start), and the
// bands read their panels from it: contiguous words that the hardware prefetcher streams. The
// buffer takes `2·m·k` bytes, up to `A_ONCE_MAX` words (32 MB: 4096 × 4096), and is kept for the
// next product like the other packing buffers. The packed words, the kernel calls and their order
// are the same, so are the bits. Layout: block `pc` of `k` (a multiple of `KC`), row panel `r`
// at word `(pc / 2)·panels·MR + r·kp·MR`, `kp` the block's pair steps.

/// The most words of `A` packed once per product (NOTE [bf16 A packed once]).
const A_ONCE_MAX: usize = 1 << 23;

thread_local! {
    /// `A` packed once per product (NOTE [bf16 A packed once]), kept between calls.
    static PACKED_A: std::cell::RefCell<Vec<super::Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// All of `A` packed (NOTE [bf16 A packed once]), for every band of columns of one product.
#[derive(Clone, Copy)]
struct PackedA(*mut u32);
// SAFETY: members write disjoint panels of the buffer (each claimed once) before any reads it.
unsafe impl Send for PackedA {}
// SAFETY: as for `Send`.
unsafe impl Sync for PackedA {}

/// The words of `A` packed once, when `p` packs `A` for more than one block of columns and it fits
/// `A_ONCE_MAX`.
fn packed_a_words(p: &Problem<f32>) -> Option<usize> {
    let words = p.m.div_ceil(MR) * MR * p.k.div_ceil(2);
    (p.n > NC && words <= A_ONCE_MAX).then_some(words)
}

/// Word offset of panel `r` of block `pc` of `A` packed once (NOTE [bf16 A packed once]).
fn packed_at(p: &Problem<f32>, pc: usize, r: usize) -> usize {
    let kp = KC.min(p.k - pc).div_ceil(2);
    (pc / 2) * p.m.div_ceil(MR) * MR + r * kp * MR
}

/// Packs row panel `r` of `A`, every block of `k`, into `dst` at its place (NOTE [bf16 A packed
/// once]).
///
/// # Safety
/// As for `sgemm`; `dst` must hold `packed_a_words(p)` words, and no other thread touch panel `r`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_a_panel(p: &Problem<f32>, dst: *mut u32, r: usize) {
    let (ir, rows) = (r * MR, MR.min(p.m - r * MR));
    for pc in (0..p.k).step_by(KC) {
        let kc = KC.min(p.k - pc);
        let a_rows = p.a.wrapping_offset(ir as isize * p.rsa + pc as isize * p.csa);
        // SAFETY: the panel's `kp × MR` words lie in `dst` (the layout of the NOTE); rows
        // `ir..ir+rows` and columns `pc..pc+kc` lie inside `A`.
        unsafe {
            let panel = std::slice::from_raw_parts_mut(dst.add(packed_at(p, pc, r)), kc.div_ceil(2) * MR);
            pack::<MR>(panel, kc, rows, a_rows, p.rsa, p.csa);
        }
    }
}

// NOTE [bf16 bands on the team]: the bfloat16 multiply splits `C` into bands, columns first (a
// column band packs only its own part of `B`, the large, reused operand, while `A`'s panels are
// packed per block either way), each computed by `serial` as a product of its own. The bands are
// units claimed by the GEMM team's members (NOTE [Claimed tiles]: own range from the front, others'
// from the back), so a helper that is parked or descheduled delays nothing and the product never
// waits in rayon's queue or wakes its pool. A column band is at most `NC` columns (on a large
// product the members then balance over several bands); narrower bands would repack `A` once
// more each. Every value of `C` is summed as by one thread: a band starts on a panel boundary and
// runs the same `KC` steps through the same kernel.

/// `C = A · B` by the members of `team`, in bands (NOTE [bf16 bands on the team]).
///
/// # Safety
/// As for `sgemm_threads`, with `members` at most what `team.members` returned.
unsafe fn on_team(p: Problem<f32>, team: &mut team::Guard, members: usize, buf: &mut Vec<super::Line>) {
    let (row_panels, col_panels) = (p.m.div_ceil(MR), p.n.div_ceil(NR));
    let by_cols = col_panels >= members || col_panels >= row_panels;
    let (panels, width, len) = if by_cols { (col_panels, NR, p.n) } else { (row_panels, MR, p.m) };
    let share = panels.div_ceil(members);
    let unit = if by_cols { share.min(NC / NR) } else { share } * width;
    let whole = Band(p);
    // Column bands all read every panel of `A`: packed once first when it would be packed more
    // than once (NOTE [bf16 A packed once]), each panel by one member.
    let packed = if by_cols { packed_a_words(&p) } else { None }.map(|words| {
        let dst = PackedA(lines::<u32>(buf, words).as_mut_ptr());
        let ranges = Range::split(row_panels, members);
        team.run(members, true, &|id| {
            let (mut victim, whole, dst) = (id, &whole, &dst);
            while let Some(r) = next(&ranges, id, &mut victim) {
                // SAFETY: the CPU features are the caller's precondition; panel `r` is claimed by
                // one member only, and `dst` holds `words` words.
                unsafe { pack_a_panel(&whole.0, dst.0, r) };
            }
        });
        dst
    });
    let ranges = Range::split(len.div_ceil(unit), members);
    team.run(members, true, &|id| {
        let mut victim = id;
        while let Some(u) = next(&ranges, id, &mut victim) {
            let (start, size) = (u * unit, unit.min(len - u * unit));
            let band = if by_cols { whole.cols(start, size) } else { whole.rows(start, size) };
            // SAFETY: the CPU features are the caller's precondition; each band is a sub-block of
            // the caller's valid operands, and each unit (a range of rows or columns of `C`) is
            // claimed by one member only; `packed` (column bands only) holds all of `A`, written
            // before this job was posted.
            unsafe { serial(band.0, packed) }
        }
    });
}

/// One thread's multiply: pack a block of `B`, then one panel of `A` at a time (or read it from
/// `packed`, all of `A` packed once), and sweep the micro-kernel.
///
/// # Safety
/// As for `sgemm`, with no other thread touching this band of `C`; `packed`, if any, holds all of
/// this band's `A` (all rows) packed by `pack_a_panel`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn serial(p: Problem<f32>, packed: Option<PackedA>) {
    BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (abuf, bbuf) = &mut *bufs;
        let kp_max = KC.min(p.k).div_ceil(2);
        let ap: &mut [u32] = lines(abuf, MR * kp_max);
        let bp: &mut [u32] = lines(bbuf, NC.min(p.n.div_ceil(NR) * NR) * kp_max);
        for jc in (0..p.n).step_by(NC) {
            let nc = NC.min(p.n - jc);
            for pc in (0..p.k).step_by(KC) {
                let kc = KC.min(p.k - pc);
                let kp = kc.div_ceil(2);
                let b_block = p.b.wrapping_offset(pc as isize * p.rsb + jc as isize * p.csb);
                if p.csb == 1 {
                    // SAFETY: rows `pc..pc+kc` and columns `jc..jc+nc` lie inside `B`; `bp` holds
                    // `nc.div_ceil(NR)` panels of `kp × NR` words; the CPU features are this
                    // function's.
                    unsafe { pack_b_rows(bp, kc, nc, b_block, p.rsb, kp) };
                } else {
                    for (q, panel) in bp.chunks_exact_mut(kp * NR).take(nc.div_ceil(NR)).enumerate() {
                        let cols = NR.min(nc - q * NR);
                        // SAFETY: rows `pc..pc+kc` and columns `jc+q·NR..+cols` lie inside `B`;
                        // the panel holds `kp × NR` words; the CPU features are this function's.
                        unsafe {
                            pack::<NR>(
                                panel,
                                kc,
                                cols,
                                b_block.wrapping_offset((q * NR) as isize * p.csb),
                                p.csb,
                                p.rsb,
                            )
                        };
                    }
                }
                for ir in (0..p.m).step_by(MR) {
                    let rows = MR.min(p.m - ir);
                    let a_panel = match packed {
                        Some(all) => all.0.wrapping_add(packed_at(&p, pc, ir / MR)).cast_const(),
                        None => {
                            let a_rows = p.a.wrapping_offset(ir as isize * p.rsa + pc as isize * p.csa);
                            // SAFETY: rows `ir..ir+rows` and columns `pc..pc+kc` lie inside `A`;
                            // `ap` holds `kp_max × MR >= kp × MR` words.
                            unsafe { pack::<MR>(&mut ap[..kp * MR], kc, rows, a_rows, p.rsa, p.csa) };
                            ap.as_ptr()
                        }
                    };
                    for jr in (0..nc).step_by(NR) {
                        let tile = Tile {
                            kp,
                            a: a_panel,
                            b: bp.as_ptr().wrapping_add(jr * kp),
                            c: p.c.wrapping_add(ir * p.ldc + jc + jr),
                            ldc: p.ldc,
                            rows,
                            cols: NR.min(nc - jr),
                            accumulate: pc > 0,
                        };
                        // SAFETY: `a` is a packed kp×MR panel, `b` a packed kp×NR panel of `bp`,
                        // and the `rows × cols` corner of `C` at `c` is inside this band.
                        unsafe { kernel(tile) };
                    }
                }
            }
        }
    });
}

/// Rounds a float32 to bfloat16 bits as `vcvtne2ps2bf16` does: to nearest, ties to even; a NaN
/// stays a (quiet) NaN; a denormal input becomes a zero of its sign.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    if b & 0x7F80_0000 == 0 {
        return ((b >> 16) & 0x8000) as u16;
    }
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

/// Packs `kc` steps of `width` lines (rows of `A` or columns of `B`) into a panel of `kc / 2` pair
/// steps of `W` words: `dst[s·W + j]` holds values `2s` and `2s + 1` of line `j`, line `j`'s value
/// `t` being at `src[j·ls + t·ks]`. Lines `width..W` and a missing odd value are zeros.
///
/// # Safety
/// `src` must be valid for `width` lines of `kc` values at those strides; `dst` must hold
/// `ceil(kc / 2) × W` words; the CPU must support AVX-512F, AVX-512BW and AVX512_BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn pack<const W: usize>(
    dst: &mut [u32],
    kc: usize,
    width: usize,
    src: *const f32,
    ls: isize,
    ks: isize,
) {
    debug_assert!(dst.len() >= kc.div_ceil(2) * W && width <= W);
    if ls == 1 {
        // SAFETY: forwarded contract.
        unsafe { pack_interleave::<W>(dst, kc, width, src, ks) }
    } else if ks == 1 {
        // SAFETY: forwarded contract.
        unsafe { pack_transpose::<W>(dst, kc, width, src, ls) }
    } else {
        for s in 0..kc.div_ceil(2) {
            let step = &mut dst[s * W..(s + 1) * W];
            for (j, w) in step.iter_mut().enumerate() {
                *w = if j < width {
                    let line = src.wrapping_offset(j as isize * ls);
                    // SAFETY: value `2s < kc` of line `j < width`.
                    let lo = bf16_bits(unsafe { *line.wrapping_offset((2 * s) as isize * ks) });
                    let hi = if 2 * s + 1 < kc {
                        // SAFETY: value `2s + 1 < kc` of line `j`.
                        bf16_bits(unsafe { *line.wrapping_offset((2 * s + 1) as isize * ks) })
                    } else {
                        0
                    };
                    u32::from(lo) | (u32::from(hi) << 16)
                } else {
                    0
                };
            }
        }
    }
}

/// Two rows of 16 floats (value `t` and `t + 1` of 16 lines) to 16 pair words.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn interleave(even: __m512, odd: __m512) -> __m512i {
    // `cvtne2ps(odd, even)` puts the 16 rounded even values in the low half and the odd ones in
    // the high half; the permutation zips them into (even, odd) pairs.
    // SAFETY: a 512-bit vector reinterpreted as another.
    let both: __m512i = unsafe { std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(odd, even)) };
    let zip = _mm512_set_epi16(
        31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
        16, 0,
    );
    _mm512_permutexvar_epi16(zip, both)
}

/// `pack` when the lines are contiguous (`ls == 1`): each pair step zips two rows of floats.
///
/// # Safety
/// As for `pack`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_interleave<const W: usize>(dst: &mut [u32], kc: usize, width: usize, src: *const f32, ks: isize) {
    for s in 0..kc.div_ceil(2) {
        let even = src.wrapping_offset((2 * s) as isize * ks);
        let odd = src.wrapping_offset((2 * s + 1) as isize * ks);
        for v in 0..W.div_ceil(16) {
            let valid = lanes(width.saturating_sub(16 * v));
            // SAFETY: masked-off lanes are not read; the lanes kept are values `2s` (and `2s + 1`
            // when below `kc`) of lines `16v + l < width`.
            let e = unsafe { _mm512_maskz_loadu_ps(valid, even.wrapping_add(16 * v)) };
            let o = if 2 * s + 1 < kc {
                // SAFETY: as above.
                unsafe { _mm512_maskz_loadu_ps(valid, odd.wrapping_add(16 * v)) }
            } else {
                _mm512_setzero_ps()
            };
            let w = interleave(e, o);
            // SAFETY: words `s·W + 16v ..` up to `s·W + W` lie in `dst` (`W - 16v` lanes kept).
            unsafe { _mm512_mask_storeu_epi32(dst.as_mut_ptr().add(s * W + 16 * v).cast(), lanes(W - 16 * v), w) };
        }
    }
}

// NOTE [bf16 B packed by rows]: a row-major `B` was packed panel by panel, each panel reading
// 128 bytes from each of the block's `KC` rows (16 KB apart at n = 4096): a new page and a new
// line per row, in an order the hardware prefetcher does not follow, so packing ran at memory
// latency (on 4096³, with `A` packed once, `pack_interleave`'s two loads held 19% of the
// multiply's samples). `pack_b_rows` packs the whole `KC × NC` block one pair of rows at a time
// instead, reading both rows from end to end (2 KB each) and writing 32 words to each panel: the
// same words, read in the order they lie in memory.

/// Packs the `kc × nc` block of a `B` whose columns are contiguous (rows `ks` apart) into
/// `nc.div_ceil(NR)` panels of `steps × NR` words (as `pack::<NR>` of each panel, then zero pair
/// steps up to `steps >= ceil(kc / 2)`), a pair of rows at a time (NOTE [bf16 B packed by rows]).
///
/// # Safety
/// `src` must be valid for `kc` rows of `nc` values, rows `ks` apart; `dst` must hold
/// `nc.div_ceil(NR) × steps × NR` words; the CPU must support AVX-512F, AVX-512BW and
/// AVX512_BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn pack_b_rows(dst: &mut [u32], kc: usize, nc: usize, src: *const f32, ks: isize, steps: usize) {
    let kp = kc.div_ceil(2);
    let vectors = nc.div_ceil(NR) * (NR / 16);
    debug_assert!(dst.len() >= vectors / 2 * steps * NR && steps >= kp);
    for s in 0..kp {
        let even = src.wrapping_offset((2 * s) as isize * ks);
        let odd = src.wrapping_offset((2 * s + 1) as isize * ks);
        for v in 0..vectors {
            // Vectors past `nc` (the last panel's padding) load nothing and store zeros.
            let valid = lanes(nc.saturating_sub(16 * v));
            // SAFETY: masked-off lanes are not read; the lanes kept are values `16v + l < nc` of
            // rows `2s` (and `2s + 1` when below `kc`).
            let e = unsafe { _mm512_maskz_loadu_ps(valid, even.wrapping_add(16 * v)) };
            let o = if 2 * s + 1 < kc {
                // SAFETY: as above.
                unsafe { _mm512_maskz_loadu_ps(valid, odd.wrapping_add(16 * v)) }
            } else {
                _mm512_setzero_ps()
            };
            let at = (v / 2) * steps * NR + s * NR + 16 * (v % 2);
            // SAFETY: panel `v / 2`, step `s`, words `16·(v % 2)..+16`: inside `dst`.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(at).cast(), interleave(e, o)) };
        }
    }
    // Pair steps `kp..steps` of every panel (padding for the AMX kernel's 16-step tiles) are zeros.
    for panel in dst.chunks_exact_mut(steps * NR).take(vectors / 2) {
        panel[kp * NR..].fill(0);
    }
}

/// Transposes 16 vectors of 16 words (`r[i]` lane `j` → `out[j]` lane `i`).
#[target_feature(enable = "avx512f")]
pub(super) fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
    let mut a = [_mm512_setzero_si512(); 16];
    for i in 0..8 {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    // b[4j + q], 128-bit lane L: rows 4j..4j+4 of column 4L + q.
    let mut b = [_mm512_setzero_si512(); 16];
    for j in 0..4 {
        b[4 * j] = _mm512_unpacklo_epi64(a[4 * j], a[4 * j + 2]);
        b[4 * j + 1] = _mm512_unpackhi_epi64(a[4 * j], a[4 * j + 2]);
        b[4 * j + 2] = _mm512_unpacklo_epi64(a[4 * j + 1], a[4 * j + 3]);
        b[4 * j + 3] = _mm512_unpackhi_epi64(a[4 * j + 1], a[4 * j + 3]);
    }
    // Column 4L + q gathers 128-bit lane L of b[q], b[4 + q], b[8 + q], b[12 + q].
    let mut out = [_mm512_setzero_si512(); 16];
    for q in 0..4 {
        let u0 = _mm512_shuffle_i32x4::<0b01_00_01_00>(b[q], b[4 + q]);
        let u1 = _mm512_shuffle_i32x4::<0b11_10_11_10>(b[q], b[4 + q]);
        let u2 = _mm512_shuffle_i32x4::<0b01_00_01_00>(b[8 + q], b[12 + q]);
        let u3 = _mm512_shuffle_i32x4::<0b11_10_11_10>(b[8 + q], b[12 + q]);
        out[q] = _mm512_shuffle_i32x4::<0b10_00_10_00>(u0, u2);
        out[4 + q] = _mm512_shuffle_i32x4::<0b11_01_11_01>(u0, u2);
        out[8 + q] = _mm512_shuffle_i32x4::<0b10_00_10_00>(u1, u3);
        out[12 + q] = _mm512_shuffle_i32x4::<0b11_01_11_01>(u1, u3);
    }
    out
}

/// `pack` when `k` is contiguous (`ks == 1`): 32 values of 16 lines become 16 lines of 16 pair
/// words, transposed in registers into 16 pair steps.
///
/// # Safety
/// As for `pack`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_transpose<const W: usize>(dst: &mut [u32], kc: usize, width: usize, src: *const f32, ls: isize) {
    let kp = kc.div_ceil(2);
    for g in 0..W.div_ceil(16) {
        let lines = width.saturating_sub(16 * g).min(16);
        let keep = lanes(W - 16 * g);
        for c in 0..kc.div_ceil(32) {
            let vals = (kc - 32 * c).min(32);
            let (lo_mask, hi_mask) = (lanes(vals), lanes(vals.saturating_sub(16)));
            let mut r = [_mm512_setzero_si512(); 16];
            for (j, x) in r.iter_mut().enumerate().take(lines) {
                let line = src.wrapping_offset((16 * g + j) as isize * ls).wrapping_add(32 * c);
                // SAFETY: masked-off lanes are not read; the lanes kept are values
                // `32c .. 32c + vals <= kc` of line `16g + j < width`.
                let (lo, hi) = unsafe {
                    (_mm512_maskz_loadu_ps(lo_mask, line), _mm512_maskz_loadu_ps(hi_mask, line.wrapping_add(16)))
                };
                // Rounded values 32c.. in order, so word `s` holds the pair of step 16c + s.
                // SAFETY: a 512-bit vector reinterpreted as another.
                *x = unsafe { std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo)) };
            }
            let t = transpose16(r);
            for (s, w) in t.iter().enumerate().take(kp - 16 * c) {
                // SAFETY: step `16c + s < kp`; words `16g ..` of it, `W - 16g` lanes kept, lie in
                // `dst`.
                unsafe { _mm512_mask_storeu_epi32(dst.as_mut_ptr().add((16 * c + s) * W + 16 * g).cast(), keep, *w) };
            }
        }
    }
}

/// One call of the micro-kernel: `C[..rows, ..cols] (+)= A_panel · B_panel`.
#[derive(Clone, Copy)]
struct Tile {
    /// Pair steps.
    kp: usize,
    /// The packed panel of `A`: `MR` pair words per step.
    a: *const u32,
    /// The packed panel of `B`: `NR` pair words per step.
    b: *const u32,
    /// The corner of row-major `C` (row stride `ldc`); only its `rows × cols` values are touched.
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    /// Add to `C` (`true`) or overwrite it.
    accumulate: bool,
}

/// Runs the narrowest instance of `block` that covers the tile.
///
/// # Safety
/// The CPU must support AVX-512F and AVX512_BF16; `a` must be valid for `kp × MR` words, `b` for
/// `kp × NR`, and `c` for `rows` rows of `cols` values at stride `ldc`, with no other thread
/// touching them.
unsafe fn kernel(t: Tile) {
    let run: unsafe fn(Tile) = match (t.rows.div_ceil(4), t.cols > 16) {
        (3, true) => block::<12, 2>,
        (3, false) => block::<12, 1>,
        (2, true) => block::<8, 2>,
        (2, false) => block::<8, 1>,
        (_, true) => block::<4, 2>,
        (_, false) => block::<4, 1>,
    };
    // SAFETY: the caller's contract is `block`'s, with `R >= rows` and `16·V >= cols`.
    unsafe { run(t) }
}

/// The loop behind `kernel` for `R` rows (of the 12) and `V` vectors of 16 columns.
///
/// # Safety
/// As for `kernel`, with `rows <= R` and `cols <= 16·V`.
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn block<const R: usize, const V: usize>(t: Tile) {
    let Tile { kp, a, b, c, ldc, rows, cols, accumulate } = t;
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    let (mut a, mut b) = (a, b);
    let mut step = |a: *const u32, b: *const u32| {
        let mut bv = [_mm512_setzero_si512(); V];
        for (v, x) in bv.iter_mut().enumerate() {
            // SAFETY: `b` points at this step's NR = 32 words and `v < 2`.
            *x = unsafe { _mm512_loadu_si512(b.add(16 * v).cast()) };
        }
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: `i < R <= MR`, and `a` points at this step's MR words.
            let ai = _mm512_set1_epi32(unsafe { *a.add(i) } as i32);
            // SAFETY: 512-bit vectors reinterpreted as vectors of 32 bfloat16 values.
            let ai = unsafe { std::mem::transmute::<__m512i, __m512bh>(ai) };
            for (x, r) in bv.iter().zip(row.iter_mut()) {
                // SAFETY: as above.
                let bx = unsafe { std::mem::transmute::<__m512i, __m512bh>(*x) };
                *r = _mm512_dpbf16_ps(*r, ai, bx);
            }
        }
    };
    // The tile of `C` is prefetched `C_AHEAD` pair steps before the end (NOTE [Prefetching C]).
    let ahead = kp.min(C_AHEAD);
    for _ in 0..kp - ahead {
        step(a, b);
        // Wrapping: after the last step these point one step past the panels and are not read.
        a = a.wrapping_add(MR);
        b = b.wrapping_add(NR);
    }
    super::avx512::prefetch_c(c, ldc, rows, cols);
    for _ in 0..ahead {
        step(a, b);
        a = a.wrapping_add(MR);
        b = b.wrapping_add(NR);
    }
    for (i, row) in acc.iter().enumerate().take(rows) {
        let p = c.wrapping_add(i * ldc);
        for (v, &x) in row.iter().enumerate() {
            // A masked-off lane is neither read nor written (and cannot fault).
            let (m, q) = (lanes(cols.saturating_sub(16 * v)), p.wrapping_add(16 * v));
            // SAFETY: row `i < rows` of `C`; the mask keeps the access to its first `cols` values,
            // which the caller guarantees valid and this thread's alone.
            let y = if accumulate { _mm512_add_ps(x, unsafe { _mm512_maskz_loadu_ps(m, q) }) } else { x };
            // SAFETY: as for the load.
            unsafe { _mm512_mask_storeu_ps(q, m, y) };
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn have() -> bool {
        crate::ops::matmul_precision::vdpbf16ps_available()
    }

    /// `x` rounded to bfloat16, as a float64.
    pub(in super::super) fn bf(x: f32) -> f64 {
        f32::from_bits(u32::from(bf16_bits(x)) << 16) as f64
    }

    #[test]
    fn scalar_rounding_matches_the_instruction() {
        if !have() {
            return;
        }
        let mut xs: Vec<f32> = vec![0.0, -0.0, 1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN];
        xs.extend([1e-40f32, -1e-40, f32::MIN_POSITIVE, 1.0 + 2f32.powi(-8), 1.0 + 3.0 * 2f32.powi(-8)]);
        let mut s: u32 = 12345;
        for _ in 0..4000 {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            xs.push(f32::from_bits(s));
        }
        xs.resize(xs.len().div_ceil(16) * 16, 0.5);
        for chunk in xs.chunks_exact(16) {
            let mut out = [0u16; 32];
            // SAFETY: AVX512_BF16 was detected; `chunk` holds 16 floats and `out` 32 halves.
            unsafe {
                let v = _mm512_loadu_ps(chunk.as_ptr());
                let r: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(v, v));
                _mm512_storeu_si512(out.as_mut_ptr().cast(), r);
            }
            for (x, &hw) in chunk.iter().zip(&out[..16]) {
                let sw = bf16_bits(*x);
                assert!(sw == hw || (x.is_nan() && (hw & 0x7FC0) == 0x7FC0 && (sw & 0x7FC0) == 0x7FC0), "{x:e}");
            }
        }
    }

    /// Every packing path (zip, transpose, strided) against the scalar definition.
    #[test]
    fn packings_agree_with_the_definition() {
        if !have() {
            return;
        }
        let data: Vec<f32> = (0..80 * 90).map(|i| ((i * 7919) % 1009) as f32 * 0.37 - 150.0).collect();
        for &(kc, width) in &[(1usize, 1usize), (2, 12), (7, 5), (32, 16), (33, 17), (64, 32), (71, 29), (512, 12)] {
            for &(ls, ks) in &[(1isize, 90isize), (90, 1), (3, 7 * 90 / 64)] {
                if (width as isize - 1) * ls + (kc as isize - 1) * ks >= data.len() as isize {
                    continue;
                }
                let kp = kc.div_ceil(2);
                let want = |w: usize| -> Vec<u32> {
                    let mut v = vec![0u32; kp * w];
                    for s in 0..kp {
                        for j in 0..width {
                            let at = |t: usize| data[(j as isize * ls + t as isize * ks) as usize];
                            let hi = if 2 * s + 1 < kc { bf16_bits(at(2 * s + 1)) } else { 0 };
                            v[s * w + j] = u32::from(bf16_bits(at(2 * s))) | (u32::from(hi) << 16);
                        }
                    }
                    v
                };
                if width <= MR {
                    let mut got = vec![u32::MAX; kp * MR];
                    // SAFETY: the features were detected; the lines lie in `data` (checked above).
                    unsafe { pack::<MR>(&mut got, kc, width, data.as_ptr(), ls, ks) };
                    assert_eq!(got, want(MR), "MR kc={kc} width={width} ls={ls} ks={ks}");
                }
                let mut got = vec![u32::MAX; kp * NR];
                // SAFETY: as above.
                unsafe { pack::<NR>(&mut got, kc, width, data.as_ptr(), ls, ks) };
                assert_eq!(got, want(NR), "NR kc={kc} width={width} ls={ls} ks={ks}");
            }
        }
    }

    /// The whole-block packing of a row-major `B` gives each panel as `pack::<NR>` does, padding
    /// the last one with zeros.
    #[test]
    fn row_packing_of_b_matches_panel_packing() {
        if !have() {
            return;
        }
        let ks = 150usize;
        let data: Vec<f32> = (0..80 * ks).map(|i| ((i * 7919) % 1013) as f32 * 0.41 - 200.0).collect();
        for &(kc, nc) in &[(1usize, 1usize), (2, 32), (7, 33), (33, 64), (64, 150), (79, 100), (80, 16)] {
            let (kp, panels) = (kc.div_ceil(2), nc.div_ceil(NR));
            let mut got = vec![u32::MAX; panels * kp * NR];
            // SAFETY: the features were detected; `kc` rows of `nc <= ks` values lie in `data`.
            unsafe { pack_b_rows(&mut got, kc, nc, data.as_ptr(), ks as isize, kp) };
            for q in 0..panels {
                let mut want = vec![u32::MAX; kp * NR];
                let cols = NR.min(nc - q * NR);
                // SAFETY: as above.
                unsafe { pack::<NR>(&mut want, kc, cols, data.as_ptr().add(q * NR), 1, ks as isize) };
                assert_eq!(got[q * kp * NR..(q + 1) * kp * NR], want[..], "kc={kc} nc={nc} panel {q}");
            }
        }
    }

    /// The product equals the float64 product of the bfloat16-rounded operands (the only rounding
    /// left is float32 summation), for edge tiles, block boundaries and transposed operands.
    #[test]
    fn matches_the_product_of_rounded_operands() {
        if !have() {
            return;
        }
        let shapes = [(1, 1, 1), (13, 5, 33), (12, 32, 32), (64, 1000, 100), (7, 1025, 530), (30, 3, 600)];
        // SAFETY: the features were detected; `assert_rounded_product` passes valid operands.
        assert_rounded_product(&shapes, |p| unsafe { sgemm(p) });
    }

    /// Runs `run` on the test operands of each shape, plain and transposed, and checks `C` (row
    /// stride `n + 3`, NaN-filled) against the float64 product of the bfloat16-rounded operands,
    /// within float32 summation's error, and that nothing past column `n` was written.
    pub(in super::super) fn assert_rounded_product(shapes: &[(usize, usize, usize)], run: impl Fn(Problem<f32>)) {
        for &(m, k, n) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let (a, b, (rsa, csa), (rsb, csb)) = operands(m, k, n, ta, tb);
                let ldc = n + 3;
                let mut c = vec![f32::NAN; m * ldc];
                run(Problem { m, k, n, a: a.as_ptr(), rsa, csa, b: b.as_ptr(), rsb, csb, c: c.as_mut_ptr(), ldc });
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut mag) = (0.0f64, 0.0f64);
                        for t in 0..k {
                            let x = bf(a[(i as isize * rsa + t as isize * csa) as usize])
                                * bf(b[(t as isize * rsb + j as isize * csb) as usize]);
                            want += x;
                            mag += x.abs();
                        }
                        let got = c[i * ldc + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-6 * mag + 1e-30,
                            "{m}x{k}x{n} ta={ta} tb={tb} at ({i},{j}): {got} vs {want}"
                        );
                    }
                    for j in n..ldc.min(n + 3) {
                        assert!(i * ldc + j >= c.len() || c[i * ldc + j].is_nan(), "wrote past column {n}");
                    }
                }
            }
        }
    }

    /// A matrix's (row, column) strides in elements.
    pub(in super::super) type Strides = (isize, isize);

    /// The test operands of an `m×k·k×n` product and their (row, column) strides: `A` stored
    /// transposed when `ta`, `B` when `tb`.
    pub(in super::super) fn operands(
        m: usize,
        k: usize,
        n: usize,
        ta: bool,
        tb: bool,
    ) -> (Vec<f32>, Vec<f32>, Strides, Strides) {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 23) as f32 / 11.3 - 1.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 19) as f32 / 9.7 - 1.0).collect();
        let sa = if ta { (1, m as isize) } else { (k as isize, 1) };
        let sb = if tb { (1, k as isize) } else { (n as isize, 1) };
        (a, b, sa, sb)
    }

    /// Operands of an `m×k·k×n` product (transposed storage when `ta`/`tb`) and `C`'s bits after
    /// `run` computes it (`C` with row stride `n + 3`, NaN-filled).
    pub(in super::super) fn product_bits(
        m: usize,
        k: usize,
        n: usize,
        ta: bool,
        tb: bool,
        run: impl Fn(Problem<f32>),
    ) -> Vec<u32> {
        let (a, b, (rsa, csa), (rsb, csb)) = operands(m, k, n, ta, tb);
        let ldc = n + 3;
        let mut c = vec![f32::NAN; m * ldc];
        run(Problem { m, k, n, a: a.as_ptr(), rsa, csa, b: b.as_ptr(), rsb, csb, c: c.as_mut_ptr(), ldc });
        c.iter().map(|x| x.to_bits()).collect()
    }

    /// Bands on the team (1–3 members, forced on small shapes; column bands, row bands, several
    /// bands per member) give the bits of one thread, which `matches_the_product_of_rounded_operands`
    /// ties to the rounded operands' product.
    #[test]
    fn team_bands_match_serial_bits() {
        if !have() {
            return;
        }
        // SAFETY: the features were detected; `assert_team_bits` passes valid operands.
        assert_team_bits(|p| unsafe { serial(p, None) }, |p, threads| unsafe { sgemm_threads(p, threads, 0) });
    }

    /// For shapes whose bands fall in both directions and several per member, `on_team(p, threads)`
    /// (1–3 members) gives the bits of `alone(p)`, plain and with either operand transposed.
    pub(in super::super) fn assert_team_bits(alone: impl Fn(Problem<f32>), on_team: impl Fn(Problem<f32>, usize)) {
        let shapes = [(13, 5, 33), (64, 1000, 100), (100, 40, 20), (7, 1025, 1100), (30, 3, 1600), (260, 70, 40)];
        for &(m, k, n) in &shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true)] {
                let want = product_bits(m, k, n, ta, tb, &alone);
                for threads in 1..=3 {
                    let got = product_bits(m, k, n, ta, tb, |p| on_team(p, threads));
                    assert!(got == want, "{m}x{k}x{n} ta={ta} tb={tb} threads={threads}: bits differ from serial");
                }
            }
        }
    }

    /// bfloat16 products from many threads and from inside rayon's pool, beside float32 ones, all
    /// finish (the team is taken by one product at a time; the others, and those on rayon's
    /// workers, run serially) with one thread's bits. A watchdog turns a hang into a failure.
    #[test]
    fn concurrent_bf16_products_do_not_deadlock() {
        use rayon::prelude::*;
        if !have() {
            return;
        }
        let shapes = [(64, 300, 100), (100, 64, 1030), (300, 90, 20)];
        // SAFETY: the features were detected; `product_bits` passes valid operands.
        let wants: Vec<Vec<u32>> = shapes
            .iter()
            .map(|&(m, k, n)| product_bits(m, k, n, false, false, |p| unsafe { serial(p, None) }))
            .collect();
        let run_one = move |i: usize, wants: &[Vec<u32>]| {
            let (m, k, n) = shapes[i % shapes.len()];
            let got = product_bits(m, k, n, false, false, |p| {
                if i % 3 == 2 {
                    // A float32 product takes the team too.
                    // SAFETY: AVX-512F comes with AVX512_BF16; `C` is only compared for bf16 runs.
                    unsafe { super::super::sgemm_threads(p, 2, 0) };
                } else {
                    // SAFETY: the features were detected.
                    unsafe { sgemm_threads(p, 2 + i % 2, 0) };
                }
            });
            i % 3 == 2 || got == wants[i % shapes.len()]
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let wants = std::sync::Arc::new(wants);
            let handles: Vec<_> = (0..6)
                .map(|t| {
                    let wants = wants.clone();
                    std::thread::spawn(move || (0..30).all(|i| run_one(t + i, &wants)))
                })
                .collect();
            let in_pool = (0..48).into_par_iter().all(|i| run_one(i, &wants));
            let outside = handles.into_iter().all(|h| h.join().unwrap_or(false));
            let _ = tx.send(in_pool && outside);
        });
        match rx.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(ok) => assert!(ok, "a concurrent bf16 product gave different bits"),
            Err(_) => panic!("concurrent bf16 products did not finish in 120 s: deadlock"),
        }
    }
}
