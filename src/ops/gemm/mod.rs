//! Single-precision matrix multiply: a blocked, packed GEMM around an AVX-512 micro-kernel, run by
//! the calling thread and a persistent team of helper threads (`team.rs`); `matrixmultiply` where
//! AVX-512 is absent and for f64.
//!
//! Blocking (the BLIS scheme, mirrored for row-major `C` because the kernel broadcasts `A` and
//! vectorizes along the columns of `B`):
//! - `KC` steps of `k` per pass: one packed 12×KC panel of `A` (18 KB) stays in L1 while the
//!   kernel sweeps the packed KC×NC block of `B` (768 KB, in the core's 1 MB L2);
//! - `MC` rows of `A` packed per pass (2.3 MB, in L3);
//! - on several threads the members of the team share each packed block of `B` and split the rows
//!   (or the panels) of `C` between them (NOTE [Shared panels], NOTE [Why a team and not rayon]);
//! - packing runs at AVX-512 width (NOTE [Packing at memory speed] in `pack.rs`), and the next block of
//!   a large `B` is prefetched while the kernel runs (NOTE [Prefetching ahead]).
//!
//! NOTE [Why a hand-written SGEMM]: float32 matrix multiply bounds the heavy workloads (README,
//! "Performance"), so its speed is theirs. This kernel reaches 164 GFLOP/s on one core for 2048³,
//! about 85% of the core's FMA peak; PyTorch's (oneDNN/MKL) reaches about 175 per core on the same
//! machine. `matrixmultiply`, the kernel before it (and still the fallback), took 89.3 ms for a
//! threaded 2048³ on both cores (the measurement in `ops/linalg.rs`), about 96 GFLOP/s per core.

mod amx;
mod avx512;
mod bf16;
mod edge;
mod pack;
mod team;
mod tiles;

use std::cell::RefCell;

use super::linalg::Problem;
use avx512::{MR, NR};

pub(crate) use amx::available as amx_available;
pub(crate) use team::for_chunks;

/// The blocking of the float32 kernel: `KC` steps of `k`, `MC` rows of `A` and `NC` columns of `B`
/// per pass (the serial path), `NC_TEAM` columns of a block of `B` shared by the team (NOTE
/// [Shared panels]), and whether the serial path packs a row-major `A` instead of reading it in
/// place. Chosen once per process by CPU (NOTE [Blocking by CPU]).
#[derive(Clone, Copy, Debug)]
struct Blocking {
    kc: usize,
    mc: usize,
    nc: usize,
    nc_team: usize,
    /// From this many multiply-adds, the serial path packs a row-major `A` (`usize::MAX`: never).
    pack_a_min: usize,
    /// The micro-kernel's loop for packed operands (NOTE [Packed loop] in `avx512.rs`).
    packed_loop: bool,
}

/// The blocking tuned on Zen 5 (sessions 1–9), and the default on every CPU but Intel's.
const ZEN5: Blocking =
    Blocking { kc: 384, mc: 1536, nc: 512, nc_team: 512, pack_a_min: usize::MAX, packed_loop: false };

/// Intel (measured on a 2-core Xeon with AMX, L1d 48 KB, L2 2 MB per core): the same blocks, a
/// row-major `A` packed from 2³⁰ multiply-adds on the serial path, the packed loop (NOTE [Blocking
/// by CPU]).
const INTEL: Blocking = Blocking { pack_a_min: 1 << 30, packed_loop: true, ..ZEN5 };

// NOTE [Blocking by CPU]: the blocking and the kernel's loop were tuned on Zen 5; the first Intel
// machine (session 10, Xeon with AVX-512 on two full-width FMA ports, L1d 48 KB, L2 2 MB) ran
// 4096³ at 66–70% of its FMA roof on one thread where Zen 5 reaches 91–95%, and 256³ (in cache) at
// 77%. No PMU in that VM, so causes were found by timing (`gemm_libs`, one thread, configurations
// alternated in one locked session, through `TAPEGRAD_GEMM_BLOCKING` below):
// - larger blocks for the larger L2 lost: `NC` 1024 63% against 68%, `KC` 512 with `NC` 768 61%;
//   `KC` 256 and 512 alone within noise (66–69%). The blocks stay as on Zen 5.
// - the general loop spends about a dozen scalar `add`/`lea` per step on its twelve row pointers
//   of `A`; on Intel those share ports 0 and 5 with the 512-bit FMAs (Zen 5 has separate integer
//   pipes). With packed `A` the packed loop (NOTE [Packed loop] in `avx512.rs`) spends two per four
//   steps: 1000×64×100 with `A` transposed (always packed) 144.7–149.9 → 151.4–164.5 GFLOP/s over
//   four alternations of `gemm_libs`. With `compare.py` (main's wheel and this one alternated
//   twice, 23:42–23:47): 4096³ on one thread 163.7 and 157.8 → 183.0 and 179.3 GFLOP/s (68% → 76%
//   of the roof; PyTorch's MKL 180–187 in the same passes), 1000×64×100 with `A` transposed 259 and
//   265 → 283 and 304, 256³ unchanged (docs/performance.md, "Blocking by CPU").
// - packing a row-major `A` costs about a cycle per value, so only on large products (2³⁰
//   multiply-adds: 1024³; 256³ lost 5% with it) with `n` ≥ `PACK_A_MIN_N` (session 11). The
//   serial path packs each block of `A` once for all of `n`; the team takes its blocks of `B` with
//   `k` outermost there, and each member packs the rows it sweeps once per block of `k` (NOTE
//   [Packing A once]). Session 11, two threads (`/tmp/mm32.py`-style best of 1.5 s, wheels
//   alternated): 4096³ 330–340 → 361–381 GFLOP/s, 256×4096×4096 (members split `B`'s panels, each
//   packs all of `A`) 253–269 → 281–290, 256×1024×4096 293–298 → 316–317.
// - an `A` read in place (smaller products) runs the in-place loop (NOTE [In-place loop] in
//   `avx512.rs`): three pointer adds per four steps. Session 11: 256³ 307–312 → 325–348 GFLOP/s on
//   two threads, 169–171 → 183–188 on one; 4096×4096×256 on one thread 130–134 → 158–175;
//   64×1000×100 130–133 → 138–140.
// Zen 5 keeps `ZEN5` exactly: the same blocks and loops, plus a branch or two per kernel call on
// `packed_loop`. The choice is read once per process from the CPUID vendor. `TAPEGRAD_GEMM_BLOCKING=kc,mc,nc,nc_team,pack_a_min,packed_loop` (six integers,
// all but the last nonzero) overrides it, for tuning on a new machine; the bits of a product
// depend on `kc` (the order of the sums), never on the thread count.

/// The CPU's vendor string (CPUID leaf 0: EBX, EDX, ECX), such as `GenuineIntel` or
/// `AuthenticAMD`. CPUID exits to the hypervisor in a VM: callers cache what they derive from it.
pub(crate) fn cpu_vendor() -> [u8; 12] {
    let v = std::arch::x86_64::__cpuid(0);
    let mut out = [0u8; 12];
    for (i, w) in [v.ebx, v.edx, v.ecx].into_iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Whether a row-major `A` is packed for the packed loop: from `pack_a_min` multiply-adds, and
/// with at least `PACK_A_MIN_N` columns of `B` to reuse each packed panel on (NOTE [Blocking by
/// CPU]).
fn pack_row_major_a(p: &Problem<f32>) -> bool {
    p.csa == 1 && p.m * p.k * p.n >= blk().pack_a_min && p.n >= PACK_A_MIN_N
}

/// Packing a panel of `A` costs about a cycle per value, paid back over `n / NR` kernel calls:
/// below 1024 columns it lost (one thread, 4096×4096×`n`, GFLOP/s packed against in place: `n` =
/// 256 143 / 171, 512 164 / 174, 1024 174 / 169, 2048² 178 / 169).
const PACK_A_MIN_N: usize = 1024;

/// Up to this many rows of `C`, a row-major `B` is read in place instead of packed, on the serial
/// path and on claimed tiles (NOTE [Claimed tiles]): each value of `B` then serves few rows, and
/// packing it cost as much as a fifth of the product. Only a partial last panel (its rows would run
/// past `n`) is packed.
const IN_PLACE_B_MAX_M: usize = 96;

/// Whether `B` is read in place rather than packed (`IN_PLACE_B_MAX_M`): a row-major `B` and a
/// short `C`.
fn in_place_b(p: &Problem<f32>) -> bool {
    p.csb == 1 && p.m <= IN_PLACE_B_MAX_M
}

/// This process's blocking (NOTE [Blocking by CPU]).
fn blk() -> &'static Blocking {
    static CHOSEN: std::sync::OnceLock<Blocking> = std::sync::OnceLock::new();
    CHOSEN.get_or_init(|| {
        let mut b = if cpu_vendor() == *b"GenuineIntel" { INTEL } else { ZEN5 };
        if let Ok(s) = std::env::var("TAPEGRAD_GEMM_BLOCKING") {
            let v: Vec<usize> = s.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            if v.len() == 6 && v[..5].iter().all(|&x| x > 0) {
                b = Blocking { kc: v[0], mc: v[1], nc: v[2], nc_team: v[3], pack_a_min: v[4], packed_loop: v[5] == 1 };
            }
        }
        b
    })
}

/// From this many values of `B` (8 MB), the next block of `B` is prefetched while the kernel
/// sweeps the current one (NOTE [Prefetching ahead]); a smaller `B` is likely in cache already.
const PREFETCH_B_MIN: usize = 1 << 21;
/// The most values of `A` a team member keeps packed for a whole product (8 MB; NOTE [Packing A
/// once]): W4's `h.T @ g` takes 2048 × 256 per member.
const A_ONCE_MAX: usize = 1 << 21;
/// Below this many multiply-adds the team (a second thread) is not used. Measured on the 2-core
/// Zen 5 (2026-11-24, load average about 2, other engineers' jobs beside):
/// - 256³ (16.8M), product alone (`benches/compare.py` MM256, fastest round): 0.071 ms on two threads
///   against 0.128 on one (81% of the two-core roof); W6, whose forward is a sequence of them, 80.9
///   to 82.5 ms/step against 96.2 to 96.6 for the rayon bands of before (medians 94–96 against
///   105–106): above the line.
/// - W1's 64×1000×100 and its backward products (6.4M): with the static split of NOTE [Shared
///   panels], W1 went from 0.200 to 0.274 ms/step on the team (the caller waited for a helper that
///   had to wake up for each product), so the line was 2²³. With claimed tiles (NOTE [Claimed
///   tiles]) and helpers that yield up to 200 µs before parking: the products alone 0.035–0.041
///   ms against 0.067 on one thread (`compare.py` MM rows with NumPy's and torch's threads quiet),
///   W1 0.133–0.135 ms/step against 0.182–0.188 (fastest rounds, three interleaved passes; on a
///   core shared with another process, 0.184–0.189 against 0.182–0.187: no loss): above the line.
const PAR_MIN_WORK: usize = 1 << 22;

/// A 64-byte-aligned chunk of 16 four-byte words, so packed panels start on cache-line
/// boundaries.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// What a packing buffer holds: `f32` values (this kernel) or bfloat16 pair words (`bf16`).
trait Word: Copy {}
impl Word for f32 {}
impl Word for u32 {}

thread_local! {
    /// Packing buffers of this thread, reused across calls and by both kernels: (A, B).
    static BUFFERS: RefCell<(Vec<Line>, Vec<Line>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The first `n` words of `buf`, grown (zero-filled) to hold them.
fn lines<T: Word>(buf: &mut Vec<Line>, n: usize) -> &mut [T] {
    const { assert!(std::mem::size_of::<T>() == 4 && std::mem::align_of::<T>() <= 4) };
    let need = n.div_ceil(16);
    if buf.len() < need {
        buf.resize(need, Line([0; 16]));
    }
    // SAFETY: `Line` is 16 four-byte words with no padding (size 64), so the vector holds
    // `need × 16 >= n` initialised words, and `T` (`f32` or `u32`) is four bytes, no stricter
    // aligned than `Line`, and valid for every bit pattern.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), n) }
}

// NOTE [Prefetching ahead]: on the large products the next block of `B` comes from memory (W4's
// weights, 16 and 64 MB, read once per product), and packing it stalls for a memory latency per
// row of the block between two sweeps of arithmetic: `pack_b` reads a 4096×4096 row-major `B` block
// by block at 9.4 GB/s (`benches/gemm_pack.rs`), a quarter of the copy bandwidth. So while the
// kernel sweeps one block, each thread prefetches (to L2) the part of the next block that it will
// pack, a few dozen lines between two kernel calls, over the last quarter of the block's calls
// only: the lines fetched push the current block out of the 1 MB L2, and its remaining sweeps then
// read it from L3. Only for a `B` of `PREFETCH_B_MIN` values or more. Measured (`gemm_libs`,
// 2026-11-24 12:58, load 0.7–2.0, GFLOP/s without / with): one thread 256×4096×4096 220 / 225,
// 256×1024×4096 232 / 235, with `B` transposed 225 / 235; two threads within ±3% either way. The
// bench's `B` stays in L3 between rounds, W4's weights do not. Without the size limit, W1's
// 64×1000×100 (a 400 KB `B`, in L2) lost 10% (183 against 202 GFLOP/s; 172 with the prefetch over
// all of the block's calls). Prefetching the next panel of an `A` read in place (to L1 over the
// panel's calls, or during its last call only) gained nothing on 4096³ (one thread 84–85% with,
// 86% without), so it is not done. Prefetches never fault, so the
// addresses are computed with wrapping arithmetic.

/// A strided region of an operand to fetch into cache ahead of its use: `runs` runs of `len`
/// contiguous values, `stride` values apart.
#[derive(Clone, Copy)]
struct Ahead {
    base: *const f32,
    runs: usize,
    stride: isize,
    len: usize,
}

impl Ahead {
    const NONE: Ahead = Ahead { base: std::ptr::null(), runs: 0, stride: 0, len: 0 };

    /// The `rows × cols` block at `base` of an operand with strides `rs`, `cs`, walked along
    /// whichever of the two is contiguous (nothing when neither is).
    fn block(base: *const f32, rows: usize, cols: usize, rs: isize, cs: isize) -> Ahead {
        match (rs, cs) {
            (_, 1) => Ahead { base, runs: rows, stride: rs, len: cols },
            (1, _) => Ahead { base, runs: cols, stride: cs, len: rows },
            _ => Ahead::NONE,
        }
    }

    /// Part `t` of `parts` of the next block of `B`, prefetched over the last quarter of the
    /// current block's kernel calls only: the lines fetched evict the current block from L2, which
    /// its remaining sweeps then read from L3.
    fn late(&self, t: usize, parts: usize) {
        let start = parts - parts / 4;
        if t >= start {
            self.part(t - start, parts - start);
        }
    }

    /// Prefetches part `t` of `parts` of the region to L2, line by line.
    fn part(&self, t: usize, parts: usize) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        if self.len == 0 {
            return;
        }
        // Lines per run: one address every 16 values, the last clamped to the run's last value
        // (so an unaligned run's last line is fetched and nothing past the run is).
        let per = self.len.div_ceil(16) + 1;
        let total = self.runs * per;
        for x in total * t / parts..total * (t + 1) / parts {
            let (r, l) = (x / per, x % per);
            let at = self.base.wrapping_offset(r as isize * self.stride).wrapping_add((16 * l).min(self.len - 1));
            // SAFETY: a prefetch is a hint: it does not fault on any address.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(at.cast()) };
        }
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
    // With `k == 0` every path below writes zeros; the bfloat16 kernels need a nonzero `k`.
    if k > 0 && crate::ops::matmul_precision::use_bf16_products() {
        if amx::available() {
            // SAFETY: `available` held; the caller's contract is `amx::sgemm`'s.
            unsafe { amx::sgemm(p) };
        } else {
            // SAFETY: AVX-512F/BW and AVX512_BF16 were detected; the caller's contract is `bf16::sgemm`'s.
            unsafe { bf16::sgemm(p) };
        }
        return;
    }
    if !std::arch::is_x86_feature_detected!("avx512f") || k == 0 {
        // SAFETY: the caller's contract is `matrixmultiply::sgemm`'s (with beta 0, `C` is only
        // written), on every band of rows.
        unsafe { super::linalg::in_row_bands(p, serial_fallback) };
        return;
    }
    let threads = crate::parallel::threads();
    // SAFETY: AVX-512F was detected above; the operands are the caller's.
    unsafe { sgemm_threads(p, threads, PAR_MIN_WORK) }
}

/// The AVX-512 multiply on up to `threads` threads when it has `min_work` multiply-adds or more
/// (tests force the shared path on small shapes through this).
///
/// # Safety
/// The CPU must support AVX-512F; the operands as for `sgemm`, with `m`, `n` and `k` nonzero.
unsafe fn sgemm_threads(p: Problem<f32>, threads: usize, min_work: usize) {
    // SAFETY: as for this function.
    unsafe { sgemm_team(p, threads, min_work, true) }
}

/// `sgemm_threads`, with the claimed-tiles path allowed or not (tests run both on small shapes).
/// The last few columns are computed along another axis (NOTE [Narrow edge] in `edge.rs`: on
/// claimed tiles with the units whose rows they share, else by the caller at the end), the rest
/// by the paths below.
///
/// # Safety
/// As for `sgemm_threads`.
unsafe fn sgemm_team(p: Problem<f32>, threads: usize, min_work: usize, claimed: bool) {
    // SAFETY: as for this function.
    let edge = unsafe { edge::Edge::of(&p) };
    let p = edge.as_ref().map_or(p, edge::Edge::rest);
    let Problem { m, k, n, .. } = p;
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    // A caller on a rayon worker runs serially (NOTE [Why a team and not rayon]).
    let alone = threads < 2 || m * n * k < min_work || row_panels.max(col_panels) < 2;
    if !alone && rayon::current_thread_index().is_none() {
        if let Some(mut team) = team::try_acquire() {
            // Small and mid shapes: units claimed by whichever members come (NOTE [Claimed tiles]).
            if claimed {
                let members = team.members(threads);
                // SAFETY: as for this function; `team` is held and fields `members`.
                if members >= 2 && unsafe { tiles::run(p, &mut team, members, edge.as_ref()) } {
                    return;
                }
            }
            // Rows when `A` must be packed (each member then packs only its own rows) or `C` is
            // tall; else panels (each member reads all of `A` in place and packs only the panels
            // of `B` it uses: no barrier). Measured on 2 threads (GFLOP/s, rows against panels,
            // `gemm_libs`, the same minute): 64×1000×100 314 / 373, 64×100×1000 (B transposed)
            // 342 / 382, 256³ 513 / 532, 256×1024×4096 448 / 466; but 1000×64×100 with `A`
            // transposed 370 / 341, 4096×256×4096 likewise 484 / 450, 4096³ 472 / 465.
            let split_rows = row_panels >= threads && (p.csa != 1 || m >= 1024 || col_panels < threads);
            let members = team.members(threads.min(if split_rows { row_panels } else { col_panels }));
            if members >= 2 {
                // SAFETY: as for this function; `team` is held.
                unsafe { shared(p, &mut team, members, split_rows) };
                if let Some(edge) = edge {
                    // SAFETY: as for this function; the members are done.
                    unsafe { edge.all_rows() };
                }
                return;
            }
        }
    }
    // SAFETY: AVX-512F is this function's precondition; the operands are the caller's.
    unsafe { serial(p) };
    if let Some(edge) = edge {
        // SAFETY: as for this function.
        unsafe { edge.all_rows() };
    }
}

/// Rows `ir..ir + rows` and columns `pc..pc + kc` of `A` as the kernel reads them, with their (row,
/// column) strides: in place when `direct` (row-major `A`) and the panel has 4, 8 or 12 rows, else
/// packed into `ap` (the per-panel choice of `shared` and of `tiles`).
///
/// # Safety
/// The rows and columns lie in `A`; `ap` holds one `KC × MR` panel; the CPU supports AVX-512F.
#[inline(always)]
unsafe fn a_panel(
    p: &Problem<f32>,
    ir: usize,
    rows: usize,
    pc: usize,
    kc: usize,
    direct: bool,
    ap: &mut [f32],
) -> (*const f32, (usize, usize)) {
    let a_rows = p.a.wrapping_offset(ir as isize * p.rsa + pc as isize * p.csa);
    // A partial panel of 4 or 8 rows is read in place too: the kernel's instance for it reads no
    // other rows (`avx512::kernel`), so only a panel of 1-3, 5-7 or 9-11 rows needs zero padding.
    if direct && rows.is_multiple_of(4) {
        return (a_rows, (p.rsa as usize, 1));
    }
    // SAFETY: the caller's contract.
    unsafe { pack::pack_a(rows, kc, a_rows, p.rsa, p.csa, ap) };
    (ap.as_ptr(), (1, MR))
}

/// A `Problem` handed to the members of a team job.
#[derive(Clone, Copy)]
struct Shared {
    p: Problem<f32>,
    /// The two packing blocks of `B` (`2 × block` floats), in the team's buffer.
    b: *mut f32,
    block: usize,
}
// SAFETY: members write disjoint rows (or panels) of `C` and disjoint panels of the `B` blocks,
// separated by barriers from the reads of the others; `A` and `B` are only read.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

/// The team's multiply (NOTE [Shared panels]).
///
/// # Safety
/// As for `sgemm_threads`, with `members` at most what `team.members` returned.
unsafe fn shared(p: Problem<f32>, team: &mut team::Guard, members: usize, split_rows: bool) {
    let block = blk().nc_team.min(p.n.div_ceil(NR) * NR) * blk().kc.min(p.k);
    let b = lines::<f32>(team.buffer(), 2 * block).as_mut_ptr();
    let job = Shared { p, b, block };
    let barrier = team::Barrier::new(members);
    team.run(members, false, &|id| {
        // SAFETY: AVX-512F is this function's precondition; the job's buffer holds two blocks.
        unsafe { member(job, id, members, split_rows, &barrier) }
    });
}

// NOTE [Shared panels]: two threads share each packed block of `B` (the BLIS scheme) instead of
// each packing a private copy of the operand its band of `C` does not split (the split before this
// one: whole bands per rayon task). For each `KC × NC_TEAM` block of `B`, taken columns outermost
// (so a column block of `C` stays in L3 across the steps of `k`; `k` outermost where `A` is packed
// for the packed loop, NOTE [Blocking by CPU]), every member packs its share of
// the block's panels into one buffer, all meet at a barrier, and each then sweeps its own rows of
// `C` (rows of `A`: read in place when row-major, else packed one 12-row panel at a time into its
// own buffer) against the whole block. The buffer is double: a member that is ahead packs the next
// block into the other half while the others still read this one, so one barrier per block
// suffices (to pack block i + 2 into a half, a member must have passed barrier i + 1, which every
// member reaches only after finishing block i). With fewer 12-row panels than members (a short
// `C`), members split the block's `NR`-column panels instead and read only what they packed, each
// in a region of the buffer of its own whatever the block's size: no
// barrier at all.
//
// Every value of `C` is summed in the same order as in `serial` (the same `KC` blocks, the same
// kernel), so the result does not depend on the number of threads: the tests compare bits.

// NOTE [Packing A once]: an `A` that must be packed (a transposed view: `h.T @ g`, the weight
// gradient in every backward of `mm`, where `k` is the batch: 256 in W4) used to be packed again,
// panel by panel, for every `NC_TEAM`-column block of `B`: 8 times for n = 4096, each time reading
// 48 bytes from each of the `k` rows of `h` per panel (a gather bound by L3 latency, not by the
// width of the moves). When `k` fits one `KC` block, each member now packs all of its panels into a
// buffer of its own on the first block of `B` (each just before its first use, as before) and reads
// them from there on the others: up to `A_ONCE_MAX` values per member (W4: 2052 × 256, 2 MB).
// With several blocks of `k` (columns of `B` outermost) that would take every panel of all of `k`,
// so it is not done, except where the blocks are taken with `k` outermost (a row-major `A` packed
// for the packed loop: NOTE [Blocking by CPU]), where the panels of one block of `k` are kept. The packed values, the kernel calls and their order are unchanged, and so are
// the bits. Measured (`gemm_libs`, two threads, GFLOP/s, 2026-11-24 16:12, load 1.8–2.1, two runs
// each, alternated): 4096×256×4096 478–484 → 508, 1024×256×4096 461–491 → 517–522, 4096×256×1024
// 490–499 → 503–506; one thread (the serial path, which packs each `MC` block once already) unchanged.

/// One member's part of a team multiply.
///
/// # Safety
/// AVX-512F; `job` as built by `shared`, run by `members` members with distinct `id`s that all
/// call `barrier.wait()` the same number of times.
unsafe fn member(job: Shared, id: usize, members: usize, split_rows: bool, barrier: &team::Barrier) {
    let Shared { p, b, block } = job;
    let part = |total: usize| (total * id / members, total * (id + 1) / members);
    let (r0, r1) = if split_rows {
        let (q0, q1) = part(p.m.div_ceil(MR));
        (q0 * MR, (q1 * MR).min(p.m))
    } else {
        (0, p.m)
    };
    let direct_a = p.csa == 1;
    let kc_max = blk().kc.min(p.k);
    let cold_b = p.k * p.n >= PREFETCH_B_MIN;
    // This member's panels of the block of `B` at columns `jc`: `q0..q1` of its `panels`.
    let share = |jc: usize| {
        let nc = blk().nc_team.min(p.n - jc);
        let panels = nc.div_ceil(NR);
        // Without barriers each member must keep to one region of the buffer in every block:
        // its share of the largest block's panels, at the largest block's panel size.
        let (q0, q1) = if split_rows {
            part(panels)
        } else {
            let (q0, q1) = part(block / (kc_max * NR));
            (q0.min(panels), q1.min(panels))
        };
        (nc, panels, q0, q1)
    };
    // The part of `B` this member packs for the block at (`pc`, `jc`) (NOTE [Prefetching ahead]).
    let source = |pc: usize, jc: usize| {
        let (nc, _, q0, q1) = share(jc);
        let cols = (q1 * NR).min(nc).saturating_sub(q0 * NR);
        let at = p.b.wrapping_offset(pc as isize * p.rsb + (jc + q0 * NR) as isize * p.csb);
        Ahead::block(at, blk().kc.min(p.k - pc), cols, p.rsb, p.csb)
    };
    // Blocks of `k` outermost: a row-major `A` large enough for the packed loop (NOTE [Blocking
    // by CPU]); this member packs the rows it sweeps (all of them when the members split the
    // panels of `B`) once per block of `k` (NOTE [Packing A once]).
    let k_outer = pack_row_major_a(&p) && (r1 - r0).div_ceil(MR) * MR * kc_max <= A_ONCE_MAX;
    // The blocks of `B` in the order they are packed: (`pc`, `jc`) pairs.
    let order: Vec<(usize, usize)> = if k_outer {
        (0..p.k).step_by(blk().kc).flat_map(|pc| (0..p.n).step_by(blk().nc_team).map(move |jc| (pc, jc))).collect()
    } else {
        (0..p.n).step_by(blk().nc_team).flat_map(|jc| (0..p.k).step_by(blk().kc).map(move |pc| (pc, jc))).collect()
    };
    BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        // An `A` that must be packed, with one block of `k` (or with blocks of `k` outermost): all
        // of this member's panels are packed on the first block of `B` of each block of `k`, and
        // read from the buffer for the others (NOTE [Packing A once]).
        let a_once = k_outer || (p.csa != 1 && p.k <= blk().kc && (r1 - r0) * p.k <= A_ONCE_MAX);
        let my_panels = if a_once { (r1 - r0).div_ceil(MR) } else { 1 };
        let ap: &mut [f32] = lines(&mut bufs.0, my_panels * MR * kc_max);
        let mut half = 0;
        for (i, &(pc, jc)) in order.iter().enumerate() {
            let (nc, panels, q0, q1) = share(jc);
            let kc = blk().kc.min(p.k - pc);
            let bp = b.wrapping_add(half * block);
            half ^= 1;
            let own = q0 * NR * if split_rows { kc } else { kc_max };
            if q1 > q0 {
                let cols = (q1 * NR).min(nc) - q0 * NR;
                let src = p.b.wrapping_offset(pc as isize * p.rsb + (jc + q0 * NR) as isize * p.csb);
                // SAFETY: this member's panels `q0..q1` of the block: `(q1 - q0) × kc × NR`
                // values from `own` (at most `q1 × kc_max × NR <= block`) of this half, which no
                // other member reads or writes until the next barrier (and, split by panels,
                // ever), nor reads from its older block any more (NOTE [Shared panels]).
                let dst = unsafe { std::slice::from_raw_parts_mut(bp.add(own), (q1 - q0) * kc * NR) };
                // SAFETY: rows `pc..pc+kc` and columns `jc+q0·NR..+cols` lie inside `B`;
                // AVX-512F is this function's precondition.
                unsafe { pack::pack_b(kc, cols, src, p.rsb, p.csb, dst) };
            }
            let next = match order.get(i + 1) {
                Some(&(pc, jc)) => source(pc, jc),
                None => Ahead::NONE,
            };
            // Panel `q` of the block is at `bp + first + q × kc × NR`.
            let (j0, j1, first) = if split_rows {
                barrier.wait();
                (0, panels, 0)
            } else {
                (q0, q1, own - q0 * kc * NR)
            };
            let calls = (r1 - r0).div_ceil(MR) * (j1 - j0);
            let mut call = 0;
            for ir in (r0..r1).step_by(MR) {
                let rows = MR.min(r1 - ir);
                let (apanel, strides) = if a_once {
                    // This member's panel `(ir - r0) / MR` of the buffer (`my_panels` panels
                    // of `kc × MR`), packed on the first block of `B` and kept for the others.
                    let at = (ir - r0) / MR * MR * kc;
                    let panel = &mut ap[at..at + MR * kc];
                    if jc == 0 {
                        // The first block of `B` of this block of `k` (in either order).
                        // SAFETY: rows `ir..ir+rows` and columns `pc..pc+kc` lie in `A`;
                        // `panel` holds one `kc × MR` panel; AVX-512F is this function's
                        // precondition.
                        unsafe { a_panel(&p, ir, rows, pc, kc, false, panel) };
                    }
                    (panel.as_ptr(), (1, MR))
                } else {
                    // SAFETY: rows `ir..ir+rows` and columns `pc..pc+kc` lie in `A`; `ap` holds
                    // one `KC × MR` panel; AVX-512F is this function's precondition.
                    unsafe { a_panel(&p, ir, rows, pc, kc, direct_a, ap) }
                };
                for q in j0..j1 {
                    if cold_b {
                        next.late(call, calls);
                    }
                    call += 1;
                    let jr = q * NR;
                    let tile = avx512::Tile {
                        kc,
                        a: apanel,
                        ars: strides.0,
                        aks: strides.1,
                        b: bp.wrapping_add(first + jr * kc).cast_const(),
                        bks: NR,
                        c: p.c.wrapping_add(ir * p.ldc + jc + jr),
                        ldc: p.ldc,
                        rows,
                        cols: NR.min(nc - jr),
                        accumulate: pc > 0,
                    };
                    // SAFETY: AVX-512F is the caller's precondition; `apanel` is a panel of
                    // `kc` steps of `A`, `b` a packed `kc × NR` panel of this block (packed
                    // before the barrier, or by this member), and the corner of `C` lies in
                    // this member's rows (or panels), which no other member writes.
                    unsafe { avx512::kernel(tile) };
                }
            }
        }
    });
}

/// Packs a block as the kernel does, for `benches/gemm_pack.rs` (through `roof::pack_for_bench`, feature
/// `bench`):
/// `pack_a` of an `outer × inner` block of `A` when `a` (rows × steps), else `pack_b` (steps ×
/// columns). Returns `false`, doing nothing, without AVX-512F.
///
/// # Safety
/// `src` must be valid for the block at strides `rs`, `cs`, and `dst` hold its packed panels.
#[cfg(feature = "bench")]
pub(crate) unsafe fn pack_for_bench(
    a: bool,
    outer: usize,
    inner: usize,
    src: *const f32,
    rs: isize,
    cs: isize,
    dst: &mut [f32],
) -> bool {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return false;
    }
    // SAFETY: AVX-512F was detected; the operands are the caller's.
    unsafe {
        if a {
            pack::pack_a(outer, inner, src, rs, cs, dst)
        } else {
            pack::pack_b(outer, inner, src, rs, cs, dst)
        }
    }
    true
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
        let direct_a = p.csa == 1 && !pack_row_major_a(&p);
        let cold_b = p.k * p.n >= PREFETCH_B_MIN;
        // A `B` too large to stay in cache is packed whatever `m` (its blocks then stream
        // contiguously, and are prefetched ahead).
        let in_place_b = in_place_b(&p) && !cold_b;
        let ap: &mut [f32] =
            lines(abuf, if direct_a { MR } else { blk().mc.min(p.m.div_ceil(MR) * MR) } * blk().kc.min(p.k));
        let bp: &mut [f32] = lines(bbuf, blk().nc.min(p.n.div_ceil(NR) * NR) * blk().kc.min(p.k));
        // Addresses are computed with wrapping arithmetic (they stay inside the operands, which the
        // loop bounds ensure); the unsafe blocks are where they are read or written.
        // The block of `B` packed after the one at (`ic`, `pc`, `jc`) (NOTE [Prefetching ahead]).
        let next_b = |ic: usize, pc: usize, jc: usize| {
            let (pc, jc) = if jc + blk().nc < p.n {
                (pc, jc + blk().nc)
            } else if pc + blk().kc < p.k {
                (pc + blk().kc, 0)
            } else if ic + blk().mc < p.m {
                (0, 0)
            } else {
                return Ahead::NONE;
            };
            let at = p.b.wrapping_offset(pc as isize * p.rsb + jc as isize * p.csb);
            Ahead::block(at, blk().kc.min(p.k - pc), blk().nc.min(p.n - jc), p.rsb, p.csb)
        };
        for ic in (0..p.m).step_by(blk().mc) {
            let mc = blk().mc.min(p.m - ic);
            for pc in (0..p.k).step_by(blk().kc) {
                let kc = blk().kc.min(p.k - pc);
                let a_block = p.a.wrapping_offset(ic as isize * p.rsa + pc as isize * p.csa);
                if !direct_a {
                    // SAFETY: rows `ic..ic+mc` and columns `pc..pc+kc` lie inside `A`; `ap` holds
                    // `ceil(mc / MR)` panels of `kc × MR` (sized above for `MC` rows and `KC` steps);
                    // AVX-512F is this function's precondition.
                    unsafe { pack::pack_a(mc, kc, a_block, p.rsa, p.csa, ap) };
                }
                for jc in (0..p.n).step_by(blk().nc) {
                    let nc = blk().nc.min(p.n - jc);
                    let b_block = p.b.wrapping_offset(pc as isize * p.rsb + jc as isize * p.csb);
                    // Read in place, the block's whole panels are not packed: only a partial last
                    // one, at the start of `bp`.
                    let whole = if in_place_b { nc - nc % NR } else { 0 };
                    if nc > whole {
                        // SAFETY: rows `pc..pc+kc` and columns `jc+whole..jc+nc` lie inside `B`;
                        // `bp` holds `ceil(nc / NR)` panels of `kc × NR`; AVX-512F is the caller's
                        // precondition.
                        unsafe { pack::pack_b(kc, nc - whole, b_block.wrapping_add(whole), p.rsb, p.csb, bp) };
                    }
                    let next = next_b(ic, pc, jc);
                    let calls = mc.div_ceil(MR) * nc.div_ceil(NR);
                    let mut call = 0;
                    for ir in (0..mc).step_by(MR) {
                        let rows = MR.min(mc - ir);
                        let (apanel, strides) = if !direct_a {
                            (ap.as_ptr().wrapping_add(ir * kc), (1, MR))
                        } else if rows == MR {
                            (a_block.wrapping_offset(ir as isize * p.rsa), (p.rsa as usize, 1))
                        } else {
                            let a_rows = a_block.wrapping_offset(ir as isize * p.rsa);
                            // SAFETY: the last `rows < MR` rows of this block of `A`, read along
                            // its contiguous rows; `ap` holds at least one `kc × MR` panel;
                            // AVX-512F is this function's precondition.
                            unsafe { pack::pack_a(rows, kc, a_rows, p.rsa, 1, ap) };
                            (ap.as_ptr(), (1, MR))
                        };
                        for jr in (0..nc).step_by(NR) {
                            if cold_b {
                                next.late(call, calls);
                            }
                            call += 1;
                            let (b, bks) = if jr < whole {
                                (b_block.wrapping_add(jr), p.rsb as usize)
                            } else {
                                (bp.as_ptr().wrapping_add((jr - whole) * kc), NR)
                            };
                            let tile = avx512::Tile {
                                kc,
                                a: apanel,
                                ars: strides.0,
                                aks: strides.1,
                                b,
                                bks,
                                c: p.c.wrapping_add((ic + ir) * p.ldc + jc + jr),
                                ldc: p.ldc,
                                rows,
                                cols: NR.min(nc - jr),
                                accumulate: pc > 0,
                            };
                            // SAFETY: AVX-512F is the caller's precondition; `apanel` is a packed
                            // (or in-place, row-major) panel of `kc` steps of `A`, `b` a packed
                            // `kc × NR` panel of `bp` or `kc` rows of `NR` values of `B` itself
                            // (`jr + NR <= whole`), and the `rows × cols` corner of `C` at `c` is
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

    fn avx512() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
    }

    /// Operands for `m×k·k×n` (transposed storage when `ta`/`tb`), `C` with row stride `n + 3`.
    struct Case {
        p: Problem<f32>,
        _a: Vec<f32>,
        _b: Vec<f32>,
        c: Vec<f32>,
    }

    fn case(m: usize, k: usize, n: usize, ta: bool, tb: bool, seed: usize) -> Case {
        let a: Vec<f32> = (0..m * k).map(|i| (((i + seed) * 7919) % 23) as f32 / 11.0 - 1.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (((i + seed) * 104_729) % 19) as f32 / 9.0 - 1.0).collect();
        let (rsa, csa) = if ta { (1, m as isize) } else { (k as isize, 1) };
        let (rsb, csb) = if tb { (1, k as isize) } else { (n as isize, 1) };
        let ldc = n + 3;
        let mut c = vec![f32::NAN; m * ldc];
        let p = Problem { m, k, n, a: a.as_ptr(), rsa, csa, b: b.as_ptr(), rsb, csb, c: c.as_mut_ptr(), ldc };
        Case { p, _a: a, _b: b, c }
    }

    /// The bits of the case's `C` (all `m` rows at stride `n + 3`) after `run` multiplies into it.
    fn case_bits(
        m: usize,
        k: usize,
        n: usize,
        ta: bool,
        tb: bool,
        seed: usize,
        run: impl FnOnce(Problem<f32>),
    ) -> Vec<u32> {
        let mut t = case(m, k, n, ta, tb, seed);
        t.p.c = t.c.as_mut_ptr();
        run(t.p);
        t.c.iter().map(|x| x.to_bits()).collect()
    }

    /// The one-thread product's bits (the serial path and the narrow edge), for comparison with
    /// a threaded one of the same case.
    fn serial_bits(m: usize, k: usize, n: usize, ta: bool, tb: bool, seed: usize) -> Vec<u32> {
        // SAFETY: AVX-512F was checked by the caller; the case's vectors fit its shapes and strides.
        case_bits(m, k, n, ta, tb, seed, |p| unsafe { sgemm_team(p, 1, usize::MAX, false) })
    }

    /// The narrow edge (NOTE [Narrow edge]): the last `n % 16 <= 8` columns along `k` (row-major
    /// `A`, `k >= 128`, `B` either way) or along `m` (`A` transposed), against the f64 reference
    /// and with the same bits on 1–3 threads (the team forced on small shapes).
    #[test]
    fn narrow_edge_matches_reference_and_thread_counts() {
        if !avx512() {
            return;
        }
        let shapes = [
            (64, 1000, 100, false, false),
            (1000, 64, 100, true, false),
            (7, 130, 17, false, false),
            (5, 129, 24, false, true),
            (130, 300, 52, false, false),
            (70, 200, 40, true, false),
            (33, 3, 19, true, true),
            (17, 1, 100, true, false),
        ];
        for &(m, k, n, ta, tb) in &shapes {
            let c = case(m, k, n, ta, tb, 0);
            // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
            assert!(unsafe { edge::Edge::of(&c.p) }.is_some(), "{m}x{k}x{n} takes the edge path");
            check(m, k, n, ta, tb);
            // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
            let bits = |threads: usize| case_bits(m, k, n, ta, tb, 1, |p| unsafe { sgemm_threads(p, threads, 0) });
            let want = bits(1);
            for threads in 2..=3 {
                assert!(bits(threads) == want, "{m}x{k}x{n} ta={ta} tb={tb}: {threads} threads differ from one");
            }
        }
    }

    /// The team's split (rows or panels, 1–3 members, forced on small shapes) gives the serial
    /// kernel's bits, which `check` ties to the f64 reference; odd sizes, block edges, strided `C`
    /// and every transpose.
    #[test]
    fn threaded_split_matches_serial_bits() {
        if !avx512() {
            return;
        }
        let shapes = [
            (1, 1, 1),
            (13, 5, 33),
            (12, 7, 100),
            (25, 385, 61),
            (64, 1000, 100),
            (1000, 64, 100),
            (64, 100, 1000),
            (37, 769, 1100),
            (250, 130, 1030),
            (5, 50, 3000),
            // `A` packed once per product (NOTE [Packing A once]): one block of `k` (at and just
            // past `KC`), several blocks of `B`, a partial last panel of each member's rows.
            (61, 384, 1100),
            (100, 385, 600),
            (30, 17, 1537),
            (20, 70, 45),
            (96, 33, 64),
        ];
        for &(m, k, n) in &shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let want = serial_bits(m, k, n, ta, tb, 0);
                for threads in 1..=3 {
                    for claimed in [false, true] {
                        // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
                        let got = case_bits(m, k, n, ta, tb, 0, |p| unsafe { sgemm_team(p, threads, 0, claimed) });
                        assert!(
                            got == want,
                            "{m}x{k}x{n} ta={ta} tb={tb} threads={threads} claimed={claimed}: bits differ from serial"
                        );
                    }
                }
            }
        }
        check(37, 769, 1100, true, false);
        check(61, 384, 1100, true, false);
    }

    /// Claimed tiles with a helper that is parked (a pause before each product), descheduled
    /// (more busy threads than cores) or spinning (back to back): whichever members do the units,
    /// the bits are the serial ones.
    #[test]
    fn claimed_tiles_match_serial_bits_whoever_computes() {
        if !avx512() {
            return;
        }
        // 300×400×100: two blocks of `k` and a partial panel of `B`.
        let shapes = [
            (256, 256, 256, false, false),
            (64, 1000, 100, false, false),
            (1000, 64, 100, true, false),
            (300, 400, 100, false, false),
        ];
        let wants: Vec<Vec<u32>> = shapes.iter().map(|&(m, k, n, ta, tb)| serial_bits(m, k, n, ta, tb, 2)).collect();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for round in 0..3 {
            // Round 1: two threads spinning beside the product, so helper and caller are
            // descheduled at random points.
            let hogs: Vec<_> = (0..if round == 1 { 2 } else { 0 })
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            for i in 0..60 {
                let (m, k, n, ta, tb) = shapes[i % shapes.len()];
                if round == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
                let got = case_bits(m, k, n, ta, tb, 2, |p| unsafe { sgemm_team(p, 2, 0, true) });
                assert!(got == wants[i % shapes.len()], "{m}x{k}x{n} round {round}: bits differ from serial");
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for h in hogs {
                h.join().unwrap();
            }
            stop.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A `B` large enough for the next block to be prefetched (`PREFETCH_B_MIN`), over several
    /// blocks of `k` and of columns, with a partial last block of each: every transpose gives the
    /// serial bits on 1–3 threads, and the f64 reference.
    #[test]
    fn prefetched_blocks_match_serial_bits_and_reference() {
        if !avx512() {
            return;
        }
        let (m, k, n) = (30, 2 * blk().kc + 5, 6 * blk().nc + 70);
        assert!(k * n >= PREFETCH_B_MIN);
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let want = serial_bits(m, k, n, ta, tb, 2);
            for threads in 1..=3 {
                // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
                let got = case_bits(m, k, n, ta, tb, 2, |p| unsafe { sgemm_threads(p, threads, 0) });
                assert!(got == want, "{m}x{k}x{n} ta={ta} tb={tb} threads={threads}: bits differ from serial");
            }
            check(m, k, n, ta, tb);
        }
    }

    /// A product large enough for a row-major `A` to be packed where `pack_a_min` says so (Intel:
    /// NOTE [Blocking by CPU]) gives the same bits on the serial path and on the team's (blocks
    /// of `k` outermost), with a partial last panel and block of `k`; and its first 512 columns,
    /// computed alone (too few columns to pack `A`: read in place, NOTE [In-place loop] on
    /// Intel), give the same bits again. (512, a multiple of 16: a narrower product with a narrow
    /// edge of its own would sum its last columns along `k`, NOTE [Narrow edge].)
    #[test]
    fn packed_and_in_place_a_give_the_same_bits() {
        if !avx512() {
            return;
        }
        let (m, k, n) = (1030, 1030, 1030);
        assert!(m * k * n >= 1 << 30);
        let want = serial_bits(m, k, n, false, false, 3);
        let ldc = n + 3;
        for (cols, threads) in [(n, 2), (512, 1), (512, 2)] {
            let mut t = case(m, k, n, false, false, 3);
            t.p.n = cols;
            t.p.c = t.c.as_mut_ptr();
            // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides (a
            // narrower `n` reads and writes fewer columns of the same rows).
            unsafe { sgemm_team(t.p, threads, 0, false) };
            for i in 0..m {
                let got: Vec<u32> = t.c[i * ldc..i * ldc + cols].iter().map(|x| x.to_bits()).collect();
                assert!(got == want[i * ldc..i * ldc + cols], "{cols} columns on {threads} threads: row {i} differs");
            }
        }
    }

    /// Concurrent GEMMs from many threads and from inside rayon's pool finish (the team is taken
    /// by one at a time, the others run serially) and give the serial bits. A watchdog turns a
    /// hang into a failure.
    #[test]
    fn concurrent_gemms_do_not_deadlock() {
        use rayon::prelude::*;
        if !avx512() {
            return;
        }
        let shapes = [(64, 300, 100, false, false), (100, 64, 130, true, false), (70, 90, 520, false, true)];
        let wants: Vec<Vec<u32>> = shapes.iter().map(|&(m, k, n, ta, tb)| serial_bits(m, k, n, ta, tb, 1)).collect();
        let run_one = move |i: usize, wants: &[Vec<u32>]| {
            let (m, k, n, ta, tb) = shapes[i % shapes.len()];
            // SAFETY: AVX-512F was detected; the case's vectors fit its shapes and strides.
            case_bits(m, k, n, ta, tb, 1, |p| unsafe { sgemm_threads(p, 2 + i % 2, 0) }) == wants[i % shapes.len()]
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let wants = std::sync::Arc::new(wants);
            let mut handles = Vec::new();
            for t in 0..8 {
                let wants = wants.clone();
                handles.push(std::thread::spawn(move || (0..40).all(|i| run_one(t + i, &wants))));
            }
            // From rayon's workers, nested inside a parallel iterator, while the threads above run.
            let in_pool = (0..64).into_par_iter().all(|i| run_one(i, &wants));
            let outside = handles.into_iter().all(|h| h.join().unwrap_or(false));
            let _ = tx.send(in_pool && outside);
        });
        match rx.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(ok) => assert!(ok, "a concurrent GEMM gave different bits"),
            Err(_) => panic!("concurrent GEMMs did not finish in 120 s: deadlock"),
        }
    }
}
