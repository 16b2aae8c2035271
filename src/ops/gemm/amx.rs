//! float32 GEMM with bfloat16 products and float32 sums on AMX tiles
//! (`set_float32_matmul_precision("medium")` on CPUs with AMX-BF16: Intel Xeon from Sapphire Rapids).
//!
//! NOTE [Why AMX for "medium"]: on Intel's AVX-512 cores `vdpbf16ps` (the kernel of `bf16.rs`)
//! issues on one port where a float32 FMA issues on two, so it does the float32 kernel's
//! multiply-adds per cycle at best, and packing makes it slower (measured on this project's first
//! Intel machine, session 10: 4096³ 224 GFLOP/s in bfloat16 against 334 in float32, 0.67×). AMX's
//! `tdpbf16ps` multiplies a 16×32 tile of `A` by a 32×16 tile of `B` into a 16×16 tile of float32
//! sums: 8,192 multiply-adds in 16 cycles, 16 times the float32 FMA rate of the core. So where AMX
//! is present, "medium" runs here; `bf16.rs` keeps the CPUs (AMD Zen 4 and 5) where `vdpbf16ps`
//! runs at twice the float32 rate.
//!
//! The tiles: eight registers `tmm0`–`tmm7` of 16 rows × 64 bytes, all configured full size.
//! `tmm0`–`tmm3` hold a 32×32 block of `C` (2 × 2 tiles), `tmm4`/`tmm5` two 16-row tiles of `A`,
//! `tmm6`/`tmm7` two 16-column tiles of `B`; each chunk of 32 steps of `k` loads the four operand
//! tiles and issues four `tdpbf16ps`.
//!
//! Layouts. `tdpbf16ps` wants `A` by rows (row `i` of a tile: 16 pair words, `k` = 2w and 2w + 1
//! in word `w`) and `B` by pair steps (row `s` of a tile: the pair words of steps 2s, 2s + 1 for
//! 16 columns). The second is exactly the panel layout of `bf16.rs` (`NR` = 32 pair words per
//! step), so `B` is packed by the same code, each panel's steps padded with zeros to a multiple
//! of 16; a tile is 16 steps of half a panel, loaded with a row stride of 128 bytes. `A` is packed
//! once per product into 1 KB tiles (`pack_a_panel`): 16 rows × 16 pair words per chunk of 32
//! steps of `k`, zeros past `m` and `k`. Padding is zeros in both operands, so it adds zeros.
//!
//! Numerics: as `vdpbf16ps`, the operands are rounded to bfloat16 to nearest even and the products
//! summed in float32; AMX flushes bfloat16 denormal inputs and float32 denormal results to zero.
//! The order of the sums within a chunk is the hardware's; across chunks and blocks it is fixed,
//! so every value of `C` has the same bits on any number of threads.
//!
//! Each thread that multiplies loads the tile configuration (`ldtilecfg`) at the start of its part
//! and releases the tiles (`tilerelease`) at its end, so a thread holds no tile state (8 KB that
//! the kernel saves at every context switch) outside a multiply. Linux grants a process the tile
//! registers on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); `available` asks once, and without
//! the grant "medium" does not use this kernel.

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::avx512::lanes;
use super::bf16::{pack, pack_b_rows, transpose16, NR};
use super::tiles::{next, Range};
use super::{lines, team, Line};
use crate::ops::linalg::{Band, Problem};

/// Rows of `C` per kernel call (two tiles).
const MR: usize = 32;
/// Steps of `k` per packed block of `B` (a multiple of 32, the steps of one tile).
const KC: usize = 512;
/// Columns of `B` per packed block: `KC / 2 × NC` pair words = 512 KB, in L2 (2 MB per core).
const NC: usize = 512;
/// Words of one tile (16 rows of 64 bytes).
const TILE: usize = 256;
/// The most words of `A` packed at once (32 MB); a taller `A` is multiplied in slabs of rows.
const A_MAX: usize = 1 << 23;
/// Below this many multiply-adds a second thread costs more than it saves.
const PAR_MIN_WORK: usize = 1 << 21;

/// Whether this process can run the AMX kernel: the CPU has AMX-TILE and AMX-BF16 (and the
/// AVX-512 that packing uses), and Linux granted the tile registers (asked once).
pub(crate) fn available() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        // CPUID leaf 7, sub-leaf 0: EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
        let edx = __cpuid_count(7, 0).edx;
        let cpu = edx & (1 << 22) != 0 && edx & (1 << 24) != 0;
        cpu && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512bf16")
            && request_tiles()
    })
}

/// Asks Linux for the tile data registers (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`);
/// true when granted. Without the grant, the first tile instruction would kill the process.
#[cfg(target_os = "linux")]
fn request_tiles() -> bool {
    const SYS_ARCH_PRCTL: std::ffi::c_long = 158;
    const ARCH_REQ_XCOMP_PERM: std::ffi::c_long = 0x1023;
    const XFEATURE_XTILEDATA: std::ffi::c_long = 18;
    extern "C" {
        fn syscall(number: std::ffi::c_long, ...) -> std::ffi::c_long;
    }
    // SAFETY: this `arch_prctl` only changes which state components the process may use.
    unsafe { syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn request_tiles() -> bool {
    false
}

/// The tile configuration: palette 1, every register 16 rows of 64 bytes.
#[repr(C, align(64))]
struct Config([u8; 64]);

const CONFIG: Config = {
    let mut c = [0u8; 64];
    c[0] = 1;
    let mut t = 0;
    while t < 8 {
        c[16 + 2 * t] = 64; // bytes per row of register t (little-endian u16)
        c[48 + t] = 16; // rows of register t
        t += 1;
    }
    Config(c)
};

/// The tile registers configured on this thread until dropped (then released).
struct Tiles(());

impl Tiles {
    /// # Safety
    /// `available()` must have returned true.
    unsafe fn configure() -> Self {
        // SAFETY: the grant and the CPU features are the caller's precondition; `CONFIG` is a
        // valid palette-1 configuration.
        unsafe { asm!("ldtilecfg [{}]", in(reg) CONFIG.0.as_ptr(), options(nostack, readonly, preserves_flags)) };
        Tiles(())
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: the tiles were configured by `configure` on this thread.
        unsafe { asm!("tilerelease", options(nostack, nomem, preserves_flags)) };
    }
}

/// `C = A · B` with bfloat16 products and float32 sums, for one [`Problem`] (`C` row-major).
///
/// # Safety
/// `available()` must have returned true; `p.a` and `p.b` must be valid for reads at their shapes
/// and strides, `p.c` for writes of `p.m` rows of `p.n` values at stride `p.ldc`, and `p.c` must
/// not overlap `p.a` or `p.b`; `m`, `k` and `n` must be nonzero.
pub(crate) unsafe fn sgemm(p: Problem<f32>) {
    // SAFETY: the caller's contract.
    unsafe { sgemm_threads(p, crate::parallel::threads(), PAR_MIN_WORK) }
}

thread_local! {
    /// `A` packed (`pack_a_panel`), kept between calls like the other packing buffers.
    static PACKED_A: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `A` packed for one product: `chunks` tiles per 16-row panel, panel after panel.
#[derive(Clone, Copy)]
struct PackedA {
    at: *mut u32,
    chunks: usize,
}
// SAFETY: members write disjoint panels of the buffer (each claimed once) before any reads it.
unsafe impl Send for PackedA {}
// SAFETY: as for `Send`.
unsafe impl Sync for PackedA {}

impl PackedA {
    /// Tile `chunk` of 16-row panel `panel`.
    fn tile(self, panel: usize, chunk: usize) -> *mut u32 {
        self.at.wrapping_add((panel * self.chunks + chunk) * TILE)
    }
}

/// The multiply on up to `threads` members of the GEMM team when it has `min_work` multiply-adds
/// or more, in slabs of rows whose packed `A` fits `A_MAX`.
///
/// # Safety
/// As for `sgemm`.
unsafe fn sgemm_threads(p: Problem<f32>, threads: usize, min_work: usize) {
    let Problem { m, k, .. } = p;
    debug_assert!(m > 0 && k > 0 && p.n > 0);
    let chunks = k.div_ceil(32);
    let slab = (A_MAX / (chunks * TILE * 2)).max(1) * MR;
    PACKED_A.with(|cell| {
        let mut buf = cell.borrow_mut();
        for r0 in (0..m).step_by(slab) {
            let part = Band(p).rows(r0, slab.min(m - r0)).0;
            let panels = part.m.div_ceil(MR) * 2;
            let packed = PackedA { at: lines::<u32>(&mut buf, panels * chunks * TILE).as_mut_ptr(), chunks };
            // SAFETY: the caller's contract, for a block of its rows; `packed` holds every panel.
            unsafe { slab_product(part, packed, threads, min_work) };
        }
    })
}

// NOTE [AMX bands]: as in `bf16.rs` (NOTE [bf16 bands on the team]), `C` is split into bands
// claimed by the team's members: first the panels of `A` are packed (claimed panel by panel),
// then the bands run the kernel; a band is a range of 32-row steps, or of 32-column panels up to
// `NC`, whichever direction has more. Packing `A` once costs a pass over `A` (`2·m·k` bytes
// written); each band then reads its panels from it.

/// One slab: `A` packed, then the bands, on the team or on this thread.
///
/// # Safety
/// As for `sgemm`, with `m`, `n`, `k` nonzero; `packed` holds `m.div_ceil(MR) × 2 × chunks` tiles.
unsafe fn slab_product(p: Problem<f32>, packed: PackedA, threads: usize, min_work: usize) {
    let (row_steps, col_panels) = (p.m.div_ceil(MR), p.n.div_ceil(NR));
    let panels = row_steps * 2;
    let alone = threads < 2 || p.m * p.n * p.k < min_work || row_steps.max(col_panels) < 2;
    let whole = Band(p);
    if !alone && rayon::current_thread_index().is_none() {
        if let Some(mut team) = team::try_acquire() {
            let members = team.members(threads);
            if members >= 2 {
                let ranges = Range::split(panels, members);
                team.run(members, true, &|id| {
                    let (mut victim, whole) = (id, &whole);
                    while let Some(r) = next(&ranges, id, &mut victim) {
                        // SAFETY: the CPU features are the caller's precondition; panel `r` is
                        // claimed by one member only.
                        unsafe { pack_a_panel(&whole.0, packed, r) };
                    }
                });
                let by_cols = col_panels >= row_steps;
                let (units, width, len) = if by_cols {
                    (col_panels.div_ceil(members).min(NC / NR), NR, p.n)
                } else {
                    (row_steps.div_ceil(members), MR, p.m)
                };
                let unit = units * width;
                let ranges = Range::split(len.div_ceil(unit), members);
                team.run(members, true, &|id| {
                    let mut victim = id;
                    while let Some(u) = next(&ranges, id, &mut victim) {
                        let (start, size) = (u * unit, unit.min(len - u * unit));
                        let (band, first) = if by_cols {
                            (whole.cols(start, size), 0)
                        } else {
                            (whole.rows(start, size), start / MR * 2)
                        };
                        // SAFETY: each unit is a block of `C` claimed by one member only; its
                        // panels of `A` start at `first`, all packed before this job was posted.
                        unsafe { serial(band.0, packed, first) }
                    }
                });
                return;
            }
        }
    }
    for r in 0..panels {
        // SAFETY: the caller's contract; `packed` holds every panel.
        unsafe { pack_a_panel(&p, packed, r) };
    }
    // SAFETY: as above, all of `A` packed.
    unsafe { serial(p, packed, 0) }
}

/// Packs 16-row panel `r` of `A` (all of `k`) into its tiles of `packed`: row `i` of chunk `c`
/// holds the pair words of values `32c ..32c + 32` of row `16r + i` (zeros past `m` and `k`).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX512_BF16; `p.a` must be valid at its shape and
/// strides; `packed` must hold panel `r`, which no other thread touches.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_a_panel(p: &Problem<f32>, packed: PackedA, r: usize) {
    let rows = p.m.saturating_sub(16 * r).min(16);
    let top = p.a.wrapping_offset((16 * r) as isize * p.rsa);
    for c in 0..packed.chunks {
        let dst = packed.tile(r, c);
        let vals = (p.k - 32 * c).min(32);
        let from = top.wrapping_offset((32 * c) as isize * p.csa);
        let mut t = [_mm512_setzero_si512(); 16];
        if p.csa == 1 {
            // Rows of `k` contiguous: each row of the tile is its 32 values rounded, in order.
            let (lo_mask, hi_mask) = (lanes(vals), lanes(vals.saturating_sub(16)));
            for (i, x) in t.iter_mut().enumerate().take(rows) {
                let line = from.wrapping_offset(i as isize * p.rsa);
                // SAFETY: masked-off lanes are not read; the lanes kept are values
                // `32c .. 32c + vals <= k` of row `16r + i < m`.
                let (lo, hi) = unsafe {
                    (_mm512_maskz_loadu_ps(lo_mask, line), _mm512_maskz_loadu_ps(hi_mask, line.wrapping_add(16)))
                };
                // SAFETY: a 512-bit vector reinterpreted as another.
                *x = unsafe { std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo)) };
            }
        } else if rows > 0 {
            // Otherwise packed by pair steps (as `bf16.rs` packs its panels), then transposed.
            let mut steps = [0u32; TILE];
            // SAFETY: rows `16r .. 16r + rows` and values `32c .. 32c + vals` lie inside `A`;
            // `steps` holds 16 steps of 16 words.
            unsafe { pack::<16>(&mut steps, vals, rows, from, p.rsa, p.csa) };
            let mut s = [_mm512_setzero_si512(); 16];
            for (j, x) in s.iter_mut().enumerate() {
                // SAFETY: step `j` of `steps`: 16 words.
                *x = unsafe { _mm512_loadu_si512(steps.as_ptr().add(16 * j).cast()) };
            }
            t = transpose16(s);
        }
        for (i, x) in t.iter().enumerate() {
            // SAFETY: row `i` of tile `c` of panel `r`: 16 words inside `packed`.
            unsafe { _mm512_storeu_si512(dst.add(16 * i).cast(), *x) };
        }
    }
}

/// One thread's part: for each block of `B` (packed here), every 32-row step of `C` against every
/// 32-column panel of the block.
///
/// # Safety
/// As for `sgemm`, with no other thread touching this band of `C`; `packed` holds this band's rows
/// of `A` from 16-row panel `first` on.
unsafe fn serial(p: Problem<f32>, packed: PackedA, first: usize) {
    // SAFETY: `available()` held for the caller of `sgemm`.
    let _tiles = unsafe { Tiles::configure() };
    super::BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let steps_max = KC.min(p.k.div_ceil(32) * 32) / 2;
        let bp: &mut [u32] = lines(&mut bufs.1, NC.min(p.n.div_ceil(NR) * NR) * steps_max);
        for jc in (0..p.n).step_by(NC) {
            let nc = NC.min(p.n - jc);
            for pc in (0..p.k).step_by(KC) {
                let kc = KC.min(p.k - pc);
                let steps = kc.div_ceil(32) * 16;
                // SAFETY: rows `pc..pc+kc` and columns `jc..jc+nc` lie inside `B`; `bp` holds
                // `nc.div_ceil(NR)` panels of `steps × NR` words.
                unsafe { pack_b_block(bp, &p, pc, kc, jc, nc, steps) };
                for ir in (0..p.m).step_by(MR) {
                    let panel = first + ir / 16;
                    for jr in (0..nc).step_by(NR) {
                        let call = Call {
                            chunks: steps / 16,
                            a0: packed.tile(panel, pc / 32),
                            a1: packed.tile(panel + 1, pc / 32),
                            b: bp.as_ptr().wrapping_add(jr * steps),
                            c: p.c.wrapping_add(ir * p.ldc + jc + jr),
                            ldc: p.ldc,
                            rows: MR.min(p.m - ir),
                            cols: NR.min(nc - jr),
                            accumulate: pc > 0,
                        };
                        // SAFETY: the operands are packed panels of this block; the `rows ×
                        // cols` corner of `C` is inside this band; the tiles are configured.
                        unsafe { kernel(call) };
                    }
                }
            }
        }
    });
}

/// Packs the `kc × nc` block of `B` at (`pc`, `jc`) into panels of `steps` pair steps × `NR`
/// words, zeros past `kc` and `nc`.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX512_BF16; the block lies inside `B`; `bp`
/// holds `nc.div_ceil(NR) × steps × NR` words; `steps >= ceil(kc / 2)`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack_b_block(bp: &mut [u32], p: &Problem<f32>, pc: usize, kc: usize, jc: usize, nc: usize, steps: usize) {
    let block = p.b.wrapping_offset(pc as isize * p.rsb + jc as isize * p.csb);
    if p.csb == 1 {
        // SAFETY: forwarded contract.
        unsafe { pack_b_rows(bp, kc, nc, block, p.rsb, steps) };
        return;
    }
    let kp = kc.div_ceil(2);
    for (q, panel) in bp.chunks_exact_mut(steps * NR).take(nc.div_ceil(NR)).enumerate() {
        let cols = NR.min(nc - q * NR);
        // SAFETY: columns `jc + q·NR ..+cols` and rows `pc..pc+kc` lie inside `B`; the panel
        // holds `steps × NR >= kp × NR` words.
        unsafe { pack::<NR>(panel, kc, cols, block.wrapping_offset((q * NR) as isize * p.csb), p.csb, p.rsb) };
        panel[kp * NR..].fill(0);
    }
}

/// One kernel call: `C[..rows, ..cols] (+)= A(32 × 32·chunks) · B(32·chunks × 32)`.
#[derive(Clone, Copy)]
struct Call {
    chunks: usize,
    /// Tiles of the two 16-row panels of `A`, from the block's first chunk (`TILE` words apart).
    a0: *const u32,
    a1: *const u32,
    /// The panel of `B`: `16·chunks` pair steps of `NR` words.
    b: *const u32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
}

/// A 16×16 float32 tile in memory, for the tiles of `C` at its edges.
#[repr(C, align(64))]
struct Edge([f32; 256]);

/// The four tiles of `C` of one call, in the order of `tmm0`..`tmm3`: (row offset, column offset).
const QUARTERS: [(usize, usize); 4] = [(0, 0), (0, 16), (16, 0), (16, 16)];

/// Where a tile of `C` is read and written: its first value and its row stride in bytes.
type Place = (*mut f32, usize);

/// # Safety
/// The tiles must be configured on this thread (`Tiles`); `a0`/`a1` must hold `chunks` tiles each,
/// `b` `16·chunks × NR` words, and `c` `rows` rows of `cols` values at stride `ldc`, this thread's
/// alone.
unsafe fn kernel(t: Call) {
    let whole = |r: usize, c: usize| t.rows >= r + 16 && t.cols >= c + 16;
    if QUARTERS.iter().all(|&(r, c)| whole(r, c)) {
        let at = QUARTERS.map(|(r, c)| (t.c.wrapping_add(r * t.ldc + c), 4 * t.ldc));
        // SAFETY: the four tiles of `C` are whole and this thread's; the rest is the caller's.
        unsafe { run(t, at) };
        return;
    }
    // At the edges of `C`, a tile that is not whole goes through a 16×16 copy (rows of 64 bytes);
    // its lanes past `C` are computed from zero padding and dropped.
    let mut edges = [Edge([0.0; 256]), Edge([0.0; 256]), Edge([0.0; 256]), Edge([0.0; 256])];
    let extent = |r: usize, c: usize| (t.rows.saturating_sub(r).min(16), t.cols.saturating_sub(c).min(16));
    let mut at: [Place; 4] = [(t.c, 0); 4];
    for (q, &(r, c)) in QUARTERS.iter().enumerate() {
        if whole(r, c) {
            at[q] = (t.c.wrapping_add(r * t.ldc + c), 4 * t.ldc);
            continue;
        }
        at[q] = (edges[q].0.as_mut_ptr(), 64);
        let (rows, cols) = extent(r, c);
        if t.accumulate {
            for i in 0..rows {
                // SAFETY: row `r + i < rows` of `C`, values `c..c + cols`.
                let src = unsafe { std::slice::from_raw_parts(t.c.add((r + i) * t.ldc + c), cols) };
                edges[q].0[16 * i..16 * i + cols].copy_from_slice(src);
            }
        }
    }
    // SAFETY: each place is a whole tile of `C` or an `Edge`, this thread's.
    unsafe { run(t, at) };
    for (q, &(r, c)) in QUARTERS.iter().enumerate() {
        if whole(r, c) {
            continue;
        }
        let (rows, cols) = extent(r, c);
        for i in 0..rows {
            // SAFETY: row `r + i < rows` of `C`, values `c..c + cols`: this thread's.
            let dst = unsafe { std::slice::from_raw_parts_mut(t.c.add((r + i) * t.ldc + c), cols) };
            dst.copy_from_slice(&edges[q].0[16 * i..16 * i + cols]);
        }
    }
}

/// The tile work of one call: `C`'s four tiles loaded from (or zeroed), summed into, and stored
/// to `at`.
///
/// # Safety
/// As for `kernel`, each place holding 16 rows of 64 bytes at its stride, this thread's.
unsafe fn run(t: Call, at: [Place; 4]) {
    // SAFETY: the four places hold 16 rows of 64 bytes at their strides (a whole tile of `C`, or
    // an `Edge`); the tiles are configured.
    unsafe {
        if t.accumulate {
            asm!(
                "tileloadd tmm0, [{c0} + {s0}*1]",
                "tileloadd tmm1, [{c1} + {s1}*1]",
                "tileloadd tmm2, [{c2} + {s2}*1]",
                "tileloadd tmm3, [{c3} + {s3}*1]",
                c0 = in(reg) at[0].0, s0 = in(reg) at[0].1,
                c1 = in(reg) at[1].0, s1 = in(reg) at[1].1,
                c2 = in(reg) at[2].0, s2 = in(reg) at[2].1,
                c3 = in(reg) at[3].0, s3 = in(reg) at[3].1,
                options(nostack, readonly, preserves_flags)
            );
        } else {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem, preserves_flags)
            );
        }
    }
    let (mut a0, mut a1, mut b) = (t.a0, t.a1, t.b);
    for _ in 0..t.chunks {
        // SAFETY: one chunk of each operand: tiles of 16 rows of 64 bytes (`A` rows 64 bytes
        // apart, `B` steps 128 bytes apart, its second tile 64 bytes into each step).
        unsafe {
            asm!(
                "tileloadd tmm4, [{a0} + {s64}*1]",
                "tileloadd tmm6, [{b0} + {s128}*1]",
                "tileloadd tmm7, [{b1} + {s128}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tileloadd tmm5, [{a1} + {s64}*1]",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                a0 = in(reg) a0, a1 = in(reg) a1, b0 = in(reg) b, b1 = in(reg) b.wrapping_add(16),
                s64 = in(reg) 64usize, s128 = in(reg) 128usize,
                options(nostack, readonly, preserves_flags)
            );
        }
        a0 = a0.wrapping_add(TILE);
        a1 = a1.wrapping_add(TILE);
        b = b.wrapping_add(16 * NR);
    }
    // SAFETY: as for the loads; the places are writable (this thread's part of `C`, or `edges`).
    unsafe {
        asm!(
            "tilestored [{c0} + {s0}*1], tmm0",
            "tilestored [{c1} + {s1}*1], tmm1",
            "tilestored [{c2} + {s2}*1], tmm2",
            "tilestored [{c3} + {s3}*1], tmm3",
            c0 = in(reg) at[0].0, s0 = in(reg) at[0].1,
            c1 = in(reg) at[1].0, s1 = in(reg) at[1].1,
            c2 = in(reg) at[2].0, s2 = in(reg) at[2].1,
            c3 = in(reg) at[3].0, s3 = in(reg) at[3].1,
            options(nostack, preserves_flags)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::bf16::tests::{assert_rounded_product, assert_team_bits, product_bits};
    use super::*;

    /// The product equals the float64 product of the bfloat16-rounded operands for edge tiles
    /// (`m`, `n` not multiples of 16 or 32), `k` not a multiple of 32, several blocks of `k` and of
    /// columns, and transposed operands.
    #[test]
    fn matches_the_product_of_rounded_operands() {
        if !available() {
            return;
        }
        let shapes = [
            (1, 1, 1),
            (13, 5, 33),
            (16, 32, 16),
            (32, 64, 32),
            (33, 31, 17),
            (64, 1000, 100),
            (7, 1025, 530),
            (30, 3, 600),
            (70, 600, 1100),
        ];
        // SAFETY: `available` held; `assert_rounded_product` passes valid operands.
        assert_rounded_product(&shapes, |p| unsafe { sgemm_threads(p, 1, usize::MAX) });
        // On the team, forced on these small shapes.
        // SAFETY: as above.
        assert_rounded_product(&shapes[1..], |p| unsafe { sgemm_threads(p, 2, 0) });
    }

    /// A tall `A` is multiplied in slabs of rows whose packed tiles fit `A_MAX`.
    #[test]
    fn a_tall_a_in_slabs_matches() {
        if !available() {
            return;
        }
        // 16,400 × 1,100: 35 chunks of `k` × 1,026 panels × 256 words > A_MAX.
        let (m, k, n): (usize, usize, usize) = (16400, 1100, 20);
        assert!(m.div_ceil(MR) * 2 * k.div_ceil(32) * TILE > A_MAX);
        // SAFETY: as above.
        let slabs = product_bits(m, k, n, false, false, |p| unsafe { sgemm_threads(p, 1, usize::MAX) });
        let rows = product_bits(m, k, n, false, false, |p| {
            for r0 in (0..m).step_by(1000) {
                // SAFETY: as above, each block of rows a product of its own (below A_MAX).
                unsafe { sgemm_threads(Band(p).rows(r0, 1000.min(m - r0)).0, 1, usize::MAX) };
            }
        });
        assert!(slabs == rows, "slabs differ from row blocks");
    }

    /// Bands on the team (1–3 members, forced on small shapes; column and row bands) give the bits
    /// of one thread.
    #[test]
    fn team_bands_match_serial_bits() {
        if !available() {
            return;
        }
        // SAFETY: `available` held; `assert_team_bits` passes valid operands.
        assert_team_bits(
            |p| unsafe { sgemm_threads(p, 1, usize::MAX) },
            |p, threads| unsafe { sgemm_threads(p, threads, 0) },
        );
    }
}
