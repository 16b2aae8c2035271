//! The machine's limits, measured: the float32 FMA roof and the memory copy bandwidth.
//!
//! `benches/compare.py` reports every dense workload as a fraction of these (issue 19: machines
//! change from day to day; the roof is the fixed point). They are measurements, not models: a
//! clock-frequency table would be wrong on the next virtual machine.
//!
//! - [`fma_roof`]: each thread runs independent chains of `acc = acc · a + b` in vector registers
//!   (16 chains of 16 lanes with AVX-512, 12 of 8 with AVX2: more chains than FMA latency × FMA
//!   ports on any current core, so the chains never wait on each other). Threads run rounds in
//!   lockstep (a barrier before and after each round), a round's rate is all the threads' FMAs over
//!   the slowest thread's time, and the result is the best round in which the threads ran at once:
//!   what the cores can do together, with a round that another process preempted not counting.
//! - [`copy_bandwidth`]: each thread copies its share of a buffer far larger than the last-level
//!   cache, rounds in lockstep as above; bytes counted are those read plus those written (the
//!   STREAM convention: the write-allocate reads of the destination are not counted).
//!
//! Neither is used by the library itself; both are exposed privately to Python
//! (`tapegrad._tapegrad._roof`, `_copy_bandwidth`) for the benchmark.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The vector instruction set an FMA roof is measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// 512-bit `vfmadd` on zmm registers (AVX-512F).
    Avx512,
    /// 256-bit `vfmadd` on ymm registers (AVX2 + FMA).
    Avx2,
}

impl Isa {
    /// Parses `"avx512"` or `"avx2"`.
    pub fn parse(name: &str) -> Result<Isa> {
        match name {
            "avx512" => Ok(Isa::Avx512),
            "avx2" => Ok(Isa::Avx2),
            _ => Err(Error::InvalidArgument(format!(
                "roof: unknown instruction set {name:?} (expected \"avx512\" or \"avx2\")"
            ))),
        }
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Most threads a measurement may start.
const MAX_THREADS: usize = 1024;
/// Longest measurement, in seconds.
const MAX_SECONDS: f64 = 60.0;
/// Loop iterations of the FMA kernel per round (a few milliseconds on current cores).
const FMA_ITERS: u64 = 1 << 19;

fn check(threads: usize, seconds: f64, what: &str) -> Result<()> {
    if threads == 0 || threads > MAX_THREADS {
        return Err(Error::InvalidArgument(format!(
            "{what}: threads must be between 1 and {MAX_THREADS}, got {threads}"
        )));
    }
    if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
        return Err(Error::InvalidArgument(format!("{what}: seconds must be in (0, {MAX_SECONDS}], got {seconds}")));
    }
    Ok(())
}

/// Runs `work(thread)` on `threads` threads in lockstep rounds until `seconds` have passed (at
/// least three rounds), and returns the time of the best round: the longest of its threads' own
/// times, among the rounds in which the threads really ran at once (each thread's interval overlaps
/// all the others' for at least 90% of the longest), so that neither the barrier's wake-up latency
/// nor a round that another process preempted counts. On a machine too busy for any such round,
/// the shortest round from first start to last end.
fn lockstep(threads: usize, seconds: f64, work: &(dyn Fn(usize) + Sync)) -> Duration {
    let start = Barrier::new(threads + 1);
    let end = Barrier::new(threads + 1);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let spans = parking_lot::Mutex::new(vec![None::<(Instant, Instant)>; threads]);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut best, mut best_span) = (Duration::MAX, Duration::MAX);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (start, end, stop, spans) = (&start, &end, &stop, &spans);
            s.spawn(move || loop {
                start.wait();
                if stop.load(std::sync::atomic::Ordering::Acquire) {
                    return;
                }
                let t0 = Instant::now();
                work(t);
                let t1 = Instant::now();
                spans.lock()[t] = Some((t0, t1));
                end.wait();
            });
        }
        let mut rounds = 0;
        loop {
            start.wait();
            end.wait();
            let round: Vec<(Instant, Instant)> = spans.lock().iter().flatten().copied().collect();
            if let (Some(first), Some(last_start), Some(first_end), Some(last)) = (
                round.iter().map(|r| r.0).min(),
                round.iter().map(|r| r.0).max(),
                round.iter().map(|r| r.1).min(),
                round.iter().map(|r| r.1).max(),
            ) {
                let longest = round.iter().map(|r| r.1 - r.0).max().unwrap_or_default();
                let overlap = first_end.saturating_duration_since(last_start);
                if overlap.as_secs_f64() >= 0.9 * longest.as_secs_f64() {
                    best = best.min(longest);
                }
                best_span = best_span.min(last - first);
            }
            rounds += 1;
            if rounds >= 3 && Instant::now() >= deadline {
                break;
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
        start.wait();
    });
    if best == Duration::MAX {
        best_span
    } else {
        best
    }
}

/// The float32 FMA throughput of `threads` threads with `isa`, in GFLOP/s (an FMA counts as two
/// floating-point operations), measured for about `seconds`.
///
/// Errors: an unknown or unsupported instruction set, `threads` outside `1..=1024`, `seconds`
/// outside `(0, 60]`.
pub fn fma_roof(isa: Isa, threads: usize, seconds: f64) -> Result<f64> {
    check(threads, seconds, "roof")?;
    if !isa.available() {
        return Err(Error::InvalidArgument(format!("roof: this CPU does not support {isa:?}")));
    }
    let kernel = |_t: usize| {
        // SAFETY: `isa.available()` was checked above.
        let r = unsafe { fma_chains(isa, std::hint::black_box(FMA_ITERS)) };
        std::hint::black_box(r);
    };
    let best = lockstep(threads, seconds, &kernel);
    let flops = threads as f64 * FMA_ITERS as f64 * flops_per_iter(isa);
    Ok(flops / best.as_secs_f64() / 1e9)
}

/// Floating-point operations in one iteration of [`fma_chains`].
fn flops_per_iter(isa: Isa) -> f64 {
    match isa {
        Isa::Avx512 => (AVX512_CHAINS * 16 * 2) as f64,
        Isa::Avx2 => (AVX2_CHAINS * 8 * 2) as f64,
    }
}

const AVX512_CHAINS: usize = 16;
const AVX2_CHAINS: usize = 12;

/// # Safety
/// The CPU must support `isa` (see [`Isa::available`]).
unsafe fn fma_chains(isa: Isa, iters: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            // SAFETY: the caller checked the CPU.
            Isa::Avx512 => unsafe { chains_avx512(iters) },
            // SAFETY: the caller checked the CPU.
            Isa::Avx2 => unsafe { chains_avx2(iters) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, iters);
        0.0
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn chains_avx512(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    // `a` just below 1 and `b` small keep every chain finite and normal however long it runs.
    let a = _mm512_set1_ps(0.999_999);
    let b = _mm512_set1_ps(1e-7);
    let mut acc = [_mm512_set1_ps(1.0); AVX512_CHAINS];
    for (i, x) in acc.iter_mut().enumerate() {
        *x = _mm512_add_ps(*x, _mm512_set1_ps(i as f32));
    }
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    let mut sum = _mm512_setzero_ps();
    for x in acc {
        sum = _mm512_add_ps(sum, x);
    }
    _mm512_reduce_add_ps(sum)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn chains_avx2(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let a = _mm256_set1_ps(0.999_999);
    let b = _mm256_set1_ps(1e-7);
    let mut acc = [_mm256_set1_ps(1.0); AVX2_CHAINS];
    for (i, x) in acc.iter_mut().enumerate() {
        *x = _mm256_add_ps(*x, _mm256_set1_ps(i as f32));
    }
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, a, b);
        }
    }
    let mut sum = _mm256_setzero_ps();
    for x in acc {
        sum = _mm256_add_ps(sum, x);
    }
    let mut out = [0f32; 8];
    // SAFETY: `out` holds the 8 floats of one ymm register.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
    out.iter().sum()
}

/// How a copy round writes its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Ordinary stores: the destination's lines are read into the cache first (write-allocate)
    /// and stay there; the fastest copy while both buffers fit in the cache.
    Cached,
    /// Non-temporal (streaming) stores, `vmovntps`: the destination goes to memory without being
    /// read first; the fastest copy beyond the last-level cache. Ordinary stores without AVX-512.
    Streaming,
    /// The faster of the two, each measured in its own rounds (the default).
    Best,
}

impl Store {
    /// Parses `"cached"`, `"streaming"` or `"best"`.
    pub fn parse(name: &str) -> Result<Store> {
        match name {
            "cached" => Ok(Store::Cached),
            "streaming" => Ok(Store::Streaming),
            "best" => Ok(Store::Best),
            _ => Err(Error::InvalidArgument(format!(
                "copy_bandwidth: unknown store {name:?} (expected \"cached\", \"streaming\" or \"best\")"
            ))),
        }
    }
}

/// The memory copy bandwidth of `threads` threads, in GB/s (bytes read plus bytes written per
/// second), copying a buffer of `mbytes` MiB into another as large for about `seconds`, with the
/// stores `store` asks for.
///
/// NOTE [Copy probe]: W7 (one Adam step over 25M parameters, 384 MiB) is compared with this, so it
/// must measure what the memory can do, at W7's size, at the time W7 runs:
/// - The working set is the caller's: 2 × `mbytes` MiB, far beyond the last-level cache for the
///   memory figure, inside it for the in-cache one (`benches/compare.py` asks for both).
/// - Best of both store kinds: `copy_from_slice` (glibc's `memcpy`) reached 40-48 GB/s here on two
///   threads beyond the cache where streaming stores reach 57-62, since the ordinary stores first
///   read every destination line; inside the cache ordinary stores win. The bytes counted are
///   the ones read and written (STREAM's convention), so the streaming copy moves exactly what it
///   counts, as an in-place update like Adam's does (its stores go to lines it has just read).
/// - Best round of several, rounds in lockstep: this VM's memory bandwidth drifts by 2-3x over
///   minutes (W7 read 5.5 ms and 11.4 ms an hour apart, and `torch fused` with it), so the caller
///   measures it beside the workload, round for round, not once at the start of the run.
///
/// Errors: `threads` outside `1..=1024`, `mbytes` outside `1..=16384`, `seconds` outside `(0, 60]`,
/// or the buffers cannot be allocated.
pub fn copy_bandwidth(threads: usize, mbytes: usize, seconds: f64, store: Store) -> Result<f64> {
    check(threads, seconds, "copy_bandwidth")?;
    if mbytes == 0 || mbytes > 16384 {
        return Err(Error::InvalidArgument(format!(
            "copy_bandwidth: mbytes must be between 1 and 16384, got {mbytes}"
        )));
    }
    let len = mbytes << 18; // f32 values in `mbytes` MiB
    let mut src: Vec<f32> = Vec::new();
    let mut dst: Vec<f32> = Vec::new();
    if src.try_reserve_exact(len).is_err() || dst.try_reserve_exact(len).is_err() {
        return Err(Error::OutOfMemory(format!("copy_bandwidth: cannot allocate 2 x {mbytes} MiB")));
    }
    // Written once before timing, so that page faults are not measured.
    src.resize(len, 1.0);
    dst.resize(len, 0.0);
    // Chunks of whole cache lines (16 floats), so every thread's streaming stores are aligned
    // where the buffer is.
    let per = len.div_ceil(threads).next_multiple_of(16);
    // Each thread owns one chunk of `dst`; a mutex per chunk hands it over (uncontended: one
    // thread per chunk).
    let chunks: Vec<parking_lot::Mutex<&mut [f32]>> = dst.chunks_mut(per).map(parking_lot::Mutex::new).collect();
    let work = |t: usize, streaming: bool| {
        if let Some(chunk) = chunks.get(t) {
            let mut d = chunk.lock();
            let n = d.len();
            copy_chunk(&mut d, &src[t * per..t * per + n], streaming);
        }
    };
    let kinds: &[bool] = match store {
        Store::Cached => &[false],
        Store::Streaming => &[true],
        Store::Best => &[false, true],
    };
    // Alternating passes of each kind, so that a drift of the machine reaches both alike.
    const PASSES: usize = 3;
    let slice = seconds / (PASSES * kinds.len()) as f64;
    let mut best = Duration::MAX;
    for _ in 0..PASSES {
        for &streaming in kinds {
            best = best.min(lockstep(threads, slice, &|t| work(t, streaming)));
        }
    }
    drop(chunks);
    std::hint::black_box(&dst);
    Ok(2.0 * (len * 4) as f64 / best.as_secs_f64() / 1e9)
}

/// Copies `src` into `dst` (equal lengths), with streaming stores when asked and AVX-512 is there.
fn copy_chunk(dst: &mut [f32], src: &[f32], streaming: bool) {
    #[cfg(target_arch = "x86_64")]
    if streaming && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the feature was just detected.
        unsafe { copy_streaming(dst, src) };
        return;
    }
    let _ = streaming;
    dst.copy_from_slice(src);
}

/// `dst.copy_from_slice(src)` with `vmovntps` for the 64-byte-aligned part of `dst`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn copy_streaming(dst: &mut [f32], src: &[f32]) {
    use std::arch::x86_64::*;
    let n = dst.len().min(src.len());
    let head = (dst.as_ptr().align_offset(64)).min(n);
    dst[..head].copy_from_slice(&src[..head]);
    let body = (n - head) / 16 * 16;
    let (d, s) = (dst[head..].as_mut_ptr(), src[head..].as_ptr());
    let mut i = 0;
    while i < body {
        // SAFETY: `i + 16 <= body <= n - head`, so both 16-float accesses are in bounds, and
        // `d + i` is 64-byte aligned (`head` aligned it; `i` steps by 64 bytes).
        unsafe { _mm512_stream_ps(d.add(i), _mm512_loadu_ps(s.add(i))) };
        i += 16;
    }
    // Streaming stores are weakly ordered: fence them before the round is timed as done.
    _mm_sfence();
    dst[head + body..n].copy_from_slice(&src[head + body..n]);
}

/// The float32 matrix product that `Tensor::matmul` runs (`ops/gemm`: the hand-written AVX-512
/// kernel, or `matrixmultiply` without AVX-512), on raw operands, for `benches/gemm_libs.rs`: it
/// compares this kernel with the libraries on the same buffers. Not part of the API.
///
/// `C = A · B` with an m×k `A` (element strides `rsa`, `csa`), a k×n `B` (`rsb`, `csb`) and a
/// row-major m×n `C` with row stride `ldc`; threads: the current rayon pool's.
///
/// # Safety
/// `a` and `b` must be valid for reads at their shapes and strides, `c` for writes of `m` rows of
/// `n` values at stride `ldc`, and `c` must not overlap `a` or `b`.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_for_bench(
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
    let p = crate::ops::linalg::Problem { m, k, n, a, rsa, csa, b, rsb, csb, c, ldc };
    // SAFETY: the caller's contract is `f32_gemm`'s.
    unsafe { crate::ops::linalg::f32_gemm(p) }
}

/// The GEMM's packing of one block (`ops/gemm/pack.rs`), for `benches/gemm_pack.rs`: `pack_a` of an
/// `outer`-row × `inner`-step block of `A` when `a`, else `pack_b` of an `outer`-step × `inner`-column
/// block of `B`, from `src` at element strides `rs`, `cs` into `dst`. Returns `false` (nothing
/// done) without AVX-512F. Not part of the API.
///
/// # Safety
/// `src` must be valid for reads of the block at its strides, and `dst` must hold its packed
/// panels: `ceil(outer / 12) × inner × 12` values for `A`, `ceil(inner / 32) × outer × 32` for `B`.
#[doc(hidden)]
pub unsafe fn pack_for_bench(
    a: bool,
    outer: usize,
    inner: usize,
    src: *const f32,
    rs: isize,
    cs: isize,
    dst: &mut [f32],
) -> bool {
    // SAFETY: the caller's contract is `pack_for_bench`'s.
    unsafe { crate::ops::gemm::pack_for_bench(a, outer, inner, src, rs, cs, dst) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_arguments() {
        assert!(Isa::parse("sse").is_err());
        assert!(fma_roof(Isa::Avx2, 0, 0.01).is_err());
        assert!(fma_roof(Isa::Avx2, 1, 0.0).is_err());
        assert!(fma_roof(Isa::Avx2, 1, f64::NAN).is_err());
        assert!(copy_bandwidth(1, 0, 0.01, Store::Best).is_err());
        assert!(copy_bandwidth(1, 1 << 20, 0.01, Store::Best).is_err());
        assert!(Store::parse("nt").is_err());
    }

    #[test]
    fn streaming_copy_copies() {
        // Every length around a cache line and an unaligned start: head, body and tail all copied.
        let src: Vec<f32> = (0..200).map(|i| i as f32).collect();
        for start in 0..3 {
            for n in [0, 1, 15, 16, 17, 63, 64, 65, 150] {
                let mut dst = vec![-1.0f32; 200];
                copy_chunk(&mut dst[start..start + n], &src[..n], true);
                assert_eq!(&dst[start..start + n], &src[..n]);
                assert!(dst[..start].iter().chain(&dst[start + n..]).all(|&x| x == -1.0));
            }
        }
        assert!(copy_bandwidth(2, 1, 0.01, Store::Streaming).unwrap() > 0.0);
    }

    #[test]
    fn chains_compute_the_recurrence() {
        // The kernel's result is the closed form of x <- 0.999999 x + 1e-7 summed over its chains
        // (no timing is checked here).
        for isa in [Isa::Avx2, Isa::Avx512] {
            if !isa.available() {
                continue;
            }
            let (chains, lanes) = match isa {
                Isa::Avx512 => (AVX512_CHAINS, 16),
                Isa::Avx2 => (AVX2_CHAINS, 8),
            };
            let iters = 1000u64;
            let (a, b) = (0.999_999f64, 1e-7f64);
            let want: f64 = (0..chains)
                .map(|i| {
                    let x0 = 1.0 + i as f64;
                    let an = a.powi(iters as i32);
                    lanes as f64 * (x0 * an + b * (1.0 - an) / (1.0 - a))
                })
                .sum();
            // SAFETY: checked above.
            let got = unsafe { fma_chains(isa, iters) } as f64;
            assert!((got - want).abs() <= 1e-4 * want, "{isa:?}: {got} vs {want}");
        }
    }
}
