//! The team's multiply for small and mid shapes (W1's products, W6's 256³): units of `C` that the
//! members claim, so that the product never waits for a helper (NOTE [Claimed tiles]).

use std::sync::atomic::{AtomicU64, Ordering};

use super::avx512::{self, MR, NR};
use super::edge::Edge;
use super::{a_panel, blk, in_place_b, lines, pack, team, Problem, BUFFERS};

/// At most this many multiply-adds take this path (larger products share packed blocks of `B`
/// instead, NOTE [Shared panels]: there a member's private copy of its columns of `B` would not
/// stay in its L2).
const MAX_WORK: usize = 1 << 26;
/// A member's copy of its columns of `B` for all of `k` holds at most this many values (1 MB, half
/// a Zen 5 core's L2).
const CACHE_MAX: usize = 1 << 18;
/// Units per member the rows are cut into, so that a member that comes late (or is descheduled)
/// leaves little for the others to wait for.
const UNITS_PER_MEMBER: usize = 8;

// NOTE [Claimed tiles]: in a loop of small products with Python between them (W1, W6's forward),
// a static split of `C` made two threads slower than one (W1 0.200 -> 0.274 ms/step; MM256 in
// `compare.py` 0.196 ms median against 0.125 on one thread): whenever the helper was parked, or
// descheduled by a third runnable thread (another process, NumPy's OpenBLAS threads spinning after
// a call), the caller finished its half and then waited for the helper's whole half. Here `C` is cut
// into units (a group of `MR`-row panels × a group of `NR`-column panels, all of `k`), each member
// owns a contiguous range of them and claims them from its front, and a member whose range is empty
// steals from the back of the others'. The caller starts at once and a revocable post lets it take
// the helper's job back if the helper has not started it: a late helper costs nothing, a helper
// that comes does part of the work, and the caller waits at most for the one unit a helper has in
// hand. No barrier: each member packs, into its own buffer, the columns of `B` of the units it
// takes, for all of `k` (the ranges are column-major, so a member packs one column group, plus one
// more if it steals), and `A` is read in place (row-major) or packed one panel at a time.
// Column groups follow the members when `A` is read in place or `C` is wider than tall (no packing
// done twice); otherwise there is one (every member packs all of `B`, which is then the smaller
// operand). Every value of `C` is summed as in `serial` (the same `KC` steps, the same kernel):
// bit-for-bit the one-thread result.
//
// A short `C` (`IN_PLACE_B_MAX_M` rows) with a row-major `B` reads `B` in place: the kernel takes
// `B`'s row stride as its step (`Tile::bks`), and only a partial last panel (its rows would run
// past `n`) is packed, once per member, and a member that steals a unit of another group packs
// nothing. (Every column panel a group of its own, for finer units, was slower: 64×1000×100 in
// 0.033 ms against 0.031, each unit's panel of `A` then read from L2 once per column panel.)
// W1's 64×1000×100, profiled on main (`perf`, 2026-11-24):
// the kernel 77% of both threads' samples, packing `B` 9% (each member packed its 64 columns for
// all 1000 steps to serve 64 rows), packing the 4-row edge panel of `A` 3%; and the helper, whose
// group held the 4-column edge panel, spent as long in that panel's 12×16 block as in its whole
// 12×32 one: the kernel walked one pointer down an in-place `A`'s rows, a chain of 12 dependent
// adds per step, so the 12-FMA block took as long as the 24-FMA one (fixed in `avx512.rs`). The
// panel split then gave the members 128 and 98 cycles per step of `k`, and a member that ran out
// could only steal a unit by packing the other group's 64 columns.

/// How `C` is cut into units.
#[derive(Clone, Copy)]
struct Plan {
    /// `NR`-column panels per column group, and column groups.
    group_panels: usize,
    /// `MR`-row panels per unit, and units per column group.
    unit_panels: usize,
    row_units: usize,
}

impl Plan {
    fn units(&self, n: usize) -> usize {
        n.div_ceil(NR).div_ceil(self.group_panels) * self.row_units
    }
}

/// The plan for `p` on `members` threads, or `None` if `p` belongs on the shared path.
fn plan(p: &Problem<f32>, members: usize) -> Option<Plan> {
    let (row_panels, col_panels) = (p.m.div_ceil(MR), p.n.div_ceil(NR));
    if p.m * p.n * p.k > MAX_WORK {
        return None;
    }
    let groups = if p.csa == 1 || p.n > p.m { members.min(col_panels) } else { 1 };
    let group_panels = col_panels.div_ceil(groups);
    if p.k * group_panels * NR > CACHE_MAX {
        return None;
    }
    let groups = col_panels.div_ceil(group_panels);
    let want = (UNITS_PER_MEMBER * members).div_ceil(groups);
    let unit_panels = row_panels.div_ceil(want.min(row_panels));
    Some(Plan { group_panels, unit_panels, row_units: row_panels.div_ceil(unit_panels) })
}

/// A member's range of units, `front | back << 32`: its owner claims from the front, the others
/// steal from the back. One cache line each, so claims on different ranges do not contend.
#[repr(align(64))]
pub(super) struct Range(AtomicU64);

impl Range {
    /// `units` split into `members` contiguous ranges, one per member.
    pub(super) fn split(units: usize, members: usize) -> Vec<Range> {
        (0..members).map(|i| Range::new(units * i / members, units * (i + 1) / members)).collect()
    }

    fn new(front: usize, back: usize) -> Self {
        Range(AtomicU64::new(front as u64 | (back as u64) << 32))
    }

    fn claim(&self, from_back: bool) -> Option<usize> {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let (front, back) = (v & 0xffff_ffff, v >> 32);
            if front >= back {
                return None;
            }
            let (next, unit) = if from_back { (front | (back - 1) << 32, back - 1) } else { (v + 1, front) };
            match self.0.compare_exchange_weak(v, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(unit as usize),
                Err(now) => v = now,
            }
        }
    }
}

/// The next unit for member `id`: the front of its own range, else the back of another's (starting
/// from `victim`, which is kept for the next call); `None` when every range is empty.
pub(super) fn next(ranges: &[Range], id: usize, victim: &mut usize) -> Option<usize> {
    if let Some(u) = ranges[id].claim(false) {
        return Some(u);
    }
    loop {
        *victim = (*victim + 1) % ranges.len();
        if *victim == id {
            return None;
        }
        if let Some(u) = ranges[*victim].claim(true) {
            // Come back to this victim first next time.
            *victim = (*victim + ranges.len() - 1) % ranges.len();
            return Some(u);
        }
    }
}

/// A job of this path, shared by its members.
struct Job<'a> {
    p: Problem<f32>,
    plan: Plan,
    ranges: &'a [Range],
    /// The product's narrow edge, computed with the units of the last column group (their rows
    /// share cache lines with it: NOTE [Narrow edge]).
    edge: Option<&'a Edge>,
}
// SAFETY: members write disjoint units of `C` (each unit is claimed once); `A` and `B` are only
// read.
unsafe impl Sync for Job<'_> {}

/// `C = A · B` on up to `members` members of `team`. Returns `false` (and does nothing) if `p` does
/// not fit this path.
///
/// # Safety
/// The CPU must support AVX-512F; the operands as for `sgemm`, with `m`, `n` and `k` nonzero, and
/// `members` at most what `team.members` returned; `edge`'s product is `p` with its columns.
pub(super) unsafe fn run(p: Problem<f32>, team: &mut team::Guard, members: usize, edge: Option<&Edge>) -> bool {
    let Some(plan) = plan(&p, members) else {
        return false;
    };
    let ranges = Range::split(plan.units(p.n), members);
    let job = Job { p, plan, ranges: &ranges, edge };
    team.run(members, true, &|id| {
        // SAFETY: AVX-512F and the operands are this function's preconditions.
        unsafe { member(&job, id) }
    });
    true
}

/// Claims and computes units until none is left: first from this member's range, then from the
/// others'.
///
/// # Safety
/// As for `run`.
unsafe fn member(job: &Job, id: usize) {
    let Job { p, plan, ranges, edge: narrow } = *job;
    let group_cols = plan.group_panels * NR;
    let last_group = p.n.div_ceil(group_cols) - 1;
    let kc_max = blk().kc.min(p.k);
    let direct_a = p.csa == 1;
    let in_place_b = in_place_b(&p);
    BUFFERS.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (abuf, bbuf) = &mut *bufs;
        let ap: &mut [f32] = lines(abuf, MR * kc_max);
        // Block `pc` of the group's columns starts at `pc × group_cols` (the blocks before it hold
        // `pc` steps of `k` each), its panel `q` `kc × NR` values further on per panel.
        let bc: &mut [f32] = lines(bbuf, p.k * if in_place_b { NR } else { group_cols });
        let mut packed_group = usize::MAX;
        // With `B` in place, the only panel packed is the last one when it is partial (its rows
        // run past `n`): `kc × NR` values per block `pc` from `pc × NR`.
        let edge = p.n - p.n % NR;
        let mut edge_packed = false;
        let mut victim = id;
        loop {
            let Some(unit) = next(ranges, id, &mut victim) else {
                return;
            };
            let (group, row_unit) = (unit / plan.row_units, unit % plan.row_units);
            let j0 = group * group_cols;
            let cols = group_cols.min(p.n - j0);
            if in_place_b {
                if !edge_packed && j0 + cols > edge {
                    let src = p.b.wrapping_add(edge);
                    // SAFETY: columns `edge..n` (fewer than `NR`) of all `k` rows lie inside `B`;
                    // `bc` holds `k × NR` values, one packed panel; AVX-512F is the precondition.
                    unsafe { pack::pack_b(p.k, p.n - edge, src, p.rsb, 1, bc) };
                    edge_packed = true;
                }
            } else if group != packed_group {
                for pc in (0..p.k).step_by(blk().kc) {
                    let kc = blk().kc.min(p.k - pc);
                    let src = p.b.wrapping_offset(pc as isize * p.rsb + j0 as isize * p.csb);
                    let dst = &mut bc[pc * group_cols..pc * group_cols + kc * cols.div_ceil(NR) * NR];
                    // SAFETY: rows `pc..pc+kc` and columns `j0..j0+cols` lie inside `B`; `dst`
                    // holds `ceil(cols / NR)` panels of `kc × NR`; AVX-512F is the precondition.
                    unsafe { pack::pack_b(kc, cols, src, p.rsb, p.csb, dst) };
                }
                packed_group = group;
            }
            let r0 = row_unit * plan.unit_panels * MR;
            let r1 = p.m.min(r0 + plan.unit_panels * MR);
            if let Some(narrow) = narrow.filter(|_| group == last_group) {
                // SAFETY: the caller's contract; rows `r0..r1` are this unit's, which no other
                // member computes.
                unsafe { narrow.rows(r0, r1) };
            }
            for pc in (0..p.k).step_by(blk().kc) {
                let kc = blk().kc.min(p.k - pc);
                let block = bc.as_ptr().wrapping_add(pc * group_cols);
                for ir in (r0..r1).step_by(MR) {
                    let rows = MR.min(r1 - ir);
                    // SAFETY: rows `ir..ir+rows` and columns `pc..pc+kc` lie in `A`; `ap` holds one
                    // `KC × MR` panel; AVX-512F as for this function.
                    let (apanel, strides) = unsafe { a_panel(&p, ir, rows, pc, kc, direct_a, ap) };
                    for jr in (0..cols).step_by(NR) {
                        let (b, bks) = if !in_place_b {
                            (block.wrapping_add(jr * kc), NR)
                        } else if j0 + jr < edge {
                            (p.b.wrapping_offset(pc as isize * p.rsb).wrapping_add(j0 + jr), p.rsb as usize)
                        } else {
                            (bc.as_ptr().wrapping_add(pc * NR), NR)
                        };
                        let tile = avx512::Tile {
                            kc,
                            a: apanel,
                            ars: strides.0,
                            aks: strides.1,
                            b,
                            bks,
                            c: p.c.wrapping_add(ir * p.ldc + j0 + jr),
                            ldc: p.ldc,
                            rows,
                            cols: NR.min(cols - jr),
                            accumulate: pc > 0,
                        };
                        // SAFETY: AVX-512F is the precondition; `apanel` is a panel of `kc` steps
                        // of `A`; `b` a packed `kc × NR` panel of this group's block `pc`, or
                        // `kc` rows of `NR` values of `B` itself (the panel is whole: `j0 + jr +
                        // NR <= edge <= n`), or the packed edge panel's block `pc`; and the corner
                        // of `C` lies in this unit, which no other member writes.
                        unsafe { avx512::kernel(tile) };
                    }
                }
            }
        }
    });
}
