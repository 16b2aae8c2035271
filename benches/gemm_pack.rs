//! The float32 GEMM's packing routines alone (`src/ops/gemm/pack.rs`), in GB/s of the operand read,
//! against the routines they replaced (kept below as `old_*`, compiled the way they were: outside any
//! `target_feature` function, except the gather), on W4's blocks (NOTE [Packing at memory
//! speed]):
//!
//!     cargo bench --bench gemm_pack
//!
//! "memory" rows walk a 4096×4096 operand block by block (64 MB: each block comes from DRAM, as W4's
//! weights do); "cached" rows pack one block again and again (its source stays in L2/L3), which is
//! the routine's own speed. Each figure is the best of several rounds.

use std::arch::x86_64::*;
use std::time::Instant;

const MR: usize = 12;
const NR: usize = 32;
const KC: usize = 384;
const NC: usize = 512;

/// The `pack_a` before the AVX-512 packing routines (main 07aa3ce, 2026-11-24).
unsafe fn old_pack_a(mc: usize, kc: usize, a: *const f32, rsa: isize, csa: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * MR).take(mc.div_ceil(MR)).enumerate() {
        let r0 = p * MR;
        let rows = MR.min(mc - r0);
        let base = a.wrapping_offset(r0 as isize * rsa);
        if rows < MR {
            panel.fill(0.0);
        }
        if rsa == 1 {
            for (k, step) in panel.chunks_exact_mut(MR).enumerate() {
                let src = base.wrapping_offset(k as isize * csa);
                for (i, v) in step[..rows].iter_mut().enumerate() {
                    *v = unsafe { *src.add(i) };
                }
            }
        } else {
            for i in 0..rows {
                let src = base.wrapping_offset(i as isize * rsa);
                for k in 0..kc {
                    let v = unsafe { *src.offset(k as isize * csa) };
                    unsafe { *panel.get_unchecked_mut(k * MR + i) = v };
                }
            }
        }
    }
}

/// The `pack_b` before (full panels only: the blocks below have no partial one).
unsafe fn old_pack_b(kc: usize, nc: usize, b: *const f32, rsb: isize, csb: isize, dst: &mut [f32]) {
    for (p, panel) in dst.chunks_exact_mut(kc * NR).take(nc.div_ceil(NR)).enumerate() {
        let base = b.wrapping_offset((p * NR) as isize * csb);
        if csb == 1 {
            for (k, step) in panel.chunks_exact_mut(NR).enumerate() {
                let src = unsafe { &*base.wrapping_offset(k as isize * rsb).cast::<[f32; NR]>() };
                step.copy_from_slice(src);
            }
        } else {
            unsafe { old_gather_panel(kc, base, csb as i32, panel) };
        }
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn old_gather_panel(kc: usize, b: *const f32, csb: i32, panel: &mut [f32]) {
    let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let idx0 = _mm512_mullo_epi32(lane, _mm512_set1_epi32(csb));
    let idx1 = _mm512_add_epi32(idx0, _mm512_set1_epi32(16 * csb));
    for (k, step) in panel.chunks_exact_mut(NR).take(kc).enumerate() {
        let src = b.wrapping_add(k);
        let lo = unsafe { _mm512_i32gather_ps::<4>(idx0, src) };
        let hi = unsafe { _mm512_i32gather_ps::<4>(idx1, src) };
        let (lo_dst, hi_dst) = step.split_at_mut(16);
        unsafe { _mm512_storeu_ps(lo_dst.as_mut_ptr(), lo) };
        unsafe { _mm512_storeu_ps(hi_dst.as_mut_ptr(), hi) };
    }
}

/// Best GB/s (bytes of the operand packed per second) of `rounds` runs of `f`, which packs `bytes`.
fn best(bytes: usize, rounds: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t = f64::MAX;
    for _ in 0..rounds {
        let t0 = Instant::now();
        f();
        t = t.min(t0.elapsed().as_secs_f64());
    }
    bytes as f64 / t / 1e9
}

fn main() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        println!("no AVX-512F: the packing routines do not run here");
        return;
    }
    let n = 4096;
    let big: Vec<f32> = (0..n * n).map(|i| (i % 1000) as f32).collect();
    let mut dst = vec![0.0f32; KC * NC.max(1536)];
    let src = big.as_ptr();
    println!("GEMM packing, GB/s of the operand read (best round); `uptime` beside the run for the load");
    println!("{:52} {:>8} {:>8}", "routine and block", "before", "after");
    // B blocks: KC steps × NC columns; NN: B row-major (rs = n, cs = 1); NT: B = w.t() (rs = 1, cs = n).
    for (label, rs, cs) in [("pack_b NN (B row-major)", n as isize, 1isize), ("pack_b NT (B = w.t())", 1, n as isize)] {
        let block = KC * NC * 4;
        let walk = |new: bool, dst: &mut [f32]| {
            for jc in (0..n).step_by(NC) {
                for pc in (0..n).step_by(KC) {
                    let kc = KC.min(n - pc);
                    let at = src.wrapping_offset(pc as isize * rs + jc as isize * cs);
                    // SAFETY: the block lies inside `big`; `dst` holds its panels.
                    unsafe {
                        if new {
                            tapegrad::roof::pack_for_bench(false, kc, NC, at, rs, cs, dst);
                        } else {
                            old_pack_b(kc, NC, at, rs, cs, dst);
                        }
                    }
                }
            }
        };
        let before = best(n * n * 4, 3, || walk(false, &mut dst));
        let after = best(n * n * 4, 3, || walk(true, &mut dst));
        println!("{:52} {before:8.1} {after:8.1}", format!("{label}, 384x512 blocks from memory"));
        let before = best(block, 200, || unsafe { old_pack_b(KC, NC, src, rs, cs, &mut dst) });
        let after = best(block, 200, || unsafe {
            tapegrad::roof::pack_for_bench(false, KC, NC, src, rs, cs, &mut dst);
        });
        println!("{:52} {before:8.1} {after:8.1}", format!("{label}, one 384x512 block, cached"));
    }
    // A = h.t() with h 256×4096 (W4's h.T @ g): rsa = 1, csa = 4096; a 1536-row × 256-step block
    // (serial) and one 12-row panel (what a team member packs per panel).
    let (k, m) = (256, n);
    for (rows, what) in [(1536, "1536x256 block"), (MR, "one 12x256 panel")] {
        let bytes = rows * k * 4;
        let before = best(bytes, 200, || unsafe { old_pack_a(rows, k, src, 1, m as isize, &mut dst) });
        let after = best(bytes, 200, || unsafe {
            tapegrad::roof::pack_for_bench(true, rows, k, src, 1, m as isize, &mut dst);
        });
        println!("{:52} {before:8.1} {after:8.1}", format!("pack_a TN (A = h.t()), {what}, cached"));
    }
    std::hint::black_box(&dst);
}
