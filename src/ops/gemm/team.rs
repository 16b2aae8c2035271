//! The GEMM team: the calling thread plus persistent helper threads that run one multiply together,
//! meeting at spin barriers around the packed blocks of `B` they share, or claiming units of `C`.
//!
//! NOTE [Why a team and not rayon]: the threads of a shared-panel multiply must run at the same
//! time: each packs part of a block of `B` that all of them read, and none may go on before all
//! have packed. Rayon's tasks give no such guarantee: a task may wait in a queue until a worker
//! is free, and in backward the engine calls the GEMM from rayon workers that run other branches
//! (W6), so a barrier between two rayon tasks can stall or deadlock. The team cannot hang:
//! - its helpers are threads of their own, so every member of a job is running or runnable;
//! - it serves one multiply at a time, taken with a `try_lock`: a second, concurrent GEMM (another
//!   Python thread, another branch) does not wait for it but runs serially on its own thread;
//! - a caller on a rayon worker never takes it (`sgemm` checks): there the pool's other workers
//!   run sibling branches, and a helper would only add a third thread to two busy cores;
//! - a forked child, which has none of the parent's helpers, forgets them and starts its own;
//! - a panic inside a job would leave the others waiting at a barrier, so it aborts the process
//!   (the kernels do not panic: no indexing that can fail, and allocation failure aborts anyway).
//!
//! Helpers spin briefly after a job (`SPIN_FOR`: a loop of products issues them microseconds
//! apart), then yield the core (to `YIELD_FOR`), then park until the next job. Yielding keeps the
//! helper ready for the next product of a step with Python between its products (W1: two products
//! 30–60 µs apart) while giving the core to any other runnable thread of the machine, ours (the
//! Python thread, rayon's workers) or not. Waking a parked helper costs the caller a futex wake and
//! often a core: the woken helper may be placed on the caller's core and preempt it. Measured on W1
//! (2026-11-24, three interleaved passes, fastest of 5 rounds): 20 µs of spinning and yielding until
//! 60 µs, 0.136–0.206 ms/step (the slow passes parked between products); until 200 µs, 0.133–0.138;
//! spinning all 200 µs, 0.133–0.135; one thread, 0.181–0.185.
//!
//! A job of claimed tiles (NOTE [Claimed tiles] in `tiles.rs`) is revocable: the caller posts it,
//! works, and takes it back from a helper that has not started it, so a helper that is parked or
//! descheduled delays nothing. A job whose members meet at barriers waits for every member.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::Line;

/// How long an idle helper spins (then yields the core until `YIELD_FOR`), before parking.
const SPIN_FOR: Duration = Duration::from_micros(20);
const YIELD_FOR: Duration = Duration::from_micros(200);

/// A job: every member calls it with its index (the caller is member 0).
type Job = dyn Fn(usize) + Sync + 'static;

/// A helper's slot: `IDLE` (nothing for it), `POSTED` (the caller posted a job and may still take
/// it back), `TAKEN` (the helper runs it; it stores `IDLE` when done).
#[repr(align(64))]
struct Helper {
    state: AtomicUsize,
    thread: Thread,
}

const IDLE: usize = 0;
const POSTED: usize = 1;
const TAKEN: usize = 2;

pub(super) struct Team {
    busy: AtomicBool,
    /// The posted job, its lifetime erased: set by the holder of `busy` before it posts it to the
    /// helpers, and borrowed by a helper only between taking it (`POSTED` -> `TAKEN`) and storing
    /// `IDLE`, which the holder awaits (or takes the job back) before its borrow ends.
    job: UnsafeCell<Option<*const Job>>,
    /// Grown (never shrunk) by the holder of `busy`.
    helpers: UnsafeCell<Vec<Arc<Helper>>>,
    /// Shared packing buffer (blocks of `B`), used only by the holder of `busy` and its job.
    buffer: UnsafeCell<Vec<Line>>,
}

// SAFETY: the `UnsafeCell`s are written only by the thread holding `busy` (an acquire/release
// try-lock), and read by helpers only between taking a posted job (acquiring the holder's release
// of `POSTED`, made after the write) and storing `IDLE` (awaited by the holder before the next
// write).
unsafe impl Sync for Team {}

static TEAM: Team = Team {
    busy: AtomicBool::new(false),
    job: UnsafeCell::new(None),
    helpers: UnsafeCell::new(Vec::new()),
    buffer: UnsafeCell::new(Vec::new()),
};

/// The process whose threads the helpers are.
static OWNER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Exclusive use of the team until dropped.
pub(super) struct Guard(());

/// The team, if no other multiply holds it.
pub(super) fn try_acquire() -> Option<Guard> {
    TEAM.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok().map(|_| Guard(()))
}

impl Drop for Guard {
    fn drop(&mut self) {
        TEAM.busy.store(false, Ordering::Release);
    }
}

/// Aborts the process if dropped during a panic (see the NOTE: a member that unwinds would leave
/// the others at a barrier forever).
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("tapegrad: a GEMM team member panicked; aborting instead of hanging the others");
            std::process::abort();
        }
    }
}

impl Guard {
    /// The shared packing buffer.
    pub(super) fn buffer(&mut self) -> &mut Vec<Line> {
        // SAFETY: this guard holds `busy`, so no other thread touches the buffer.
        unsafe { &mut *TEAM.buffer.get() }
    }

    /// Runs `job(0)` here and posts `job(1)` .. `job(members - 1)` to helpers, and returns when
    /// every posted job has finished or, when `revocable`, was taken back before a helper started
    /// it. `members` must not exceed what [`Guard::members`] returned.
    ///
    /// A job whose members meet at a barrier must not be revocable: each member must run. A
    /// revocable job must be done, whole, by whichever members come: then a helper that is slow to
    /// wake (parked, descheduled) costs the caller nothing (NOTE [Claimed tiles]).
    pub(super) fn run<'a>(&mut self, members: usize, revocable: bool, job: &'a (dyn Fn(usize) + Sync + 'a)) {
        // SAFETY: this guard holds `busy`.
        let helpers = unsafe { &*TEAM.helpers.get() };
        let used = &helpers[..members - 1];
        // SAFETY: as above; the erased borrow is used only until every helper has stored `IDLE`
        // or had its post taken back, which this function ensures below.
        unsafe { *TEAM.job.get() = Some(std::mem::transmute::<&'a (dyn Fn(usize) + Sync + 'a), *const Job>(job)) };
        for h in used {
            h.state.store(POSTED, Ordering::Release);
            // Cheap unless the helper is parked (then a futex wake, which the work below hides).
            h.thread.unpark();
        }
        {
            let _abort = AbortOnUnwind;
            job(0);
        }
        for h in used {
            if revocable && h.state.compare_exchange(POSTED, IDLE, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                continue;
            }
            let mut spins = 0u32;
            while h.state.load(Ordering::Acquire) != IDLE {
                pause(&mut spins);
            }
        }
        // SAFETY: as above; no helper holds the job any more.
        unsafe { *TEAM.job.get() = None };
    }

    /// Makes sure `members - 1` helpers exist; returns how many members the team can field
    /// (at most `members`).
    pub(super) fn members(&mut self, members: usize) -> usize {
        // SAFETY: this guard holds `busy`.
        let helpers = unsafe { &mut *TEAM.helpers.get() };
        // A forked child (Python's `multiprocessing`) inherits the list but not the threads: it
        // would wait for them forever, so it forgets them (their handles name the parent's
        // threads: leaked, not dropped) and starts helpers of its own.
        let pid = std::process::id();
        if !helpers.is_empty() && OWNER.load(Ordering::Relaxed) != pid {
            std::mem::forget(std::mem::take(helpers));
        }
        OWNER.store(pid, Ordering::Relaxed);
        while helpers.len() + 1 < members {
            let id = helpers.len() + 1;
            let (tx, rx) = std::sync::mpsc::channel();
            let spawned = std::thread::Builder::new().name(format!("tapegrad-gemm-{id}")).spawn(move || {
                let me = Arc::new(Helper { state: AtomicUsize::new(IDLE), thread: std::thread::current() });
                if tx.send(me.clone()).is_ok() {
                    serve(&me, id);
                }
            });
            match spawned.ok().and_then(|_| rx.recv().ok()) {
                Some(h) => helpers.push(h),
                None => break,
            }
        }
        members.min(helpers.len() + 1)
    }
}

/// Busy-wait step: spin first, then yield the core to whatever else is runnable.
fn pause(spins: &mut u32) {
    if *spins < 2000 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// A helper's life: wait for a posted job, take it, run it, report, repeat.
fn serve(me: &Helper, id: usize) {
    let first = id == 1;
    if first {
        HELPER_AWAKE.store(true, Ordering::Relaxed);
    }
    loop {
        let since = Instant::now();
        let mut n = 0u32;
        loop {
            if me.state.load(Ordering::Relaxed) == POSTED
                && me.state.compare_exchange(POSTED, TAKEN, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                break;
            }
            n = n.wrapping_add(1);
            let waited = if n < 256 && !n.is_multiple_of(32) { Duration::ZERO } else { since.elapsed() };
            if waited >= YIELD_FOR {
                // A stale unpark makes this return at once; the loop re-checks the state.
                if first {
                    HELPER_AWAKE.store(false, Ordering::Relaxed);
                }
                std::thread::park();
                if first {
                    HELPER_AWAKE.store(true, Ordering::Relaxed);
                }
            } else if waited >= SPIN_FOR {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the state was `POSTED` (released after the job was written) and is now `TAKEN`:
        // the caller keeps the job alive until this helper stores `IDLE` below.
        let job = unsafe { (*TEAM.job.get()).expect("a posted job") };
        {
            let _abort = AbortOnUnwind;
            // SAFETY: as above.
            unsafe { (*job)(id) };
        }
        me.state.store(IDLE, Ordering::Release);
    }
}

/// A reusable spin barrier for the members of one job.
pub(super) struct Barrier {
    members: usize,
    arrived: AtomicUsize,
    round: AtomicUsize,
}

impl Barrier {
    pub(super) fn new(members: usize) -> Self {
        Barrier { members, arrived: AtomicUsize::new(0), round: AtomicUsize::new(0) }
    }

    /// Returns once all members have called `wait` for this round; what each wrote before is
    /// visible to all after.
    pub(super) fn wait(&self) {
        let round = self.round.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.members {
            self.arrived.store(0, Ordering::Relaxed);
            self.round.store(round.wrapping_add(1), Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.round.load(Ordering::Acquire) == round {
                pause(&mut spins);
            }
        }
    }
}

/// Whether the first helper is not parked (spinning, yielding or running a job). Inherited by a
/// forked child, whose helpers are not the parent's: `Guard::helper_awake` checks the owner.
static HELPER_AWAKE: AtomicBool = AtomicBool::new(false);

/// Runs `work(i)` for every `i < chunks`, each once, on the calling thread and, when the team is
/// free and its helper awake (not parked: it ran a product in the last `YIELD_FOR`), on the helper
/// too: the caller claims chunks from the front and the helper from the back, and a helper that
/// is slow to come leaves them all to the caller (a revocable job, as NOTE [Claimed tiles]).
/// Claimed from both ends, each chunk goes to the same core pass after pass (up to the chunk or
/// two where they meet), so a tensor's halves stay in that core's cache (one shared counter handed
/// them out anew each pass, and the lines moved between the cores). For mid-sized element-wise
/// work (NOTE [Element-wise work on the team] in `ops/kernel.rs`). `work` must not panic (a panic in a
/// helper aborts the process, see the NOTE above). Returns `false`, having done nothing, when the
/// helper is not at hand (the caller then does the work in one piece).
pub(crate) fn for_chunks(chunks: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
    let team = if !(2..=u32::MAX as usize).contains(&chunks)
        || !HELPER_AWAKE.load(Ordering::Relaxed)
        || crate::parallel::one_thread()
        || rayon::current_thread_index().is_some()
    {
        None
    } else {
        try_acquire()
    };
    match team {
        Some(mut team) if team.helper_awake() => {
            // Chunks claimed so far from the front (low half) and from the back (high half). A
            // claim is good while the two sum to less than `chunks`: every claim adds one, so the
            // front's `f` and the back's `chunks - 1 - b` are never the same chunk.
            let claimed = AtomicU64::new(0);
            team.run(2, true, &|id| loop {
                let old = claimed.fetch_add(if id == 0 { 1 } else { 1 << 32 }, Ordering::Relaxed);
                let (front, back) = (old as u32 as usize, (old >> 32) as usize);
                if front + back >= chunks {
                    return;
                }
                work(if id == 0 { front } else { chunks - 1 - back });
            });
            true
        }
        _ => false,
    }
}

impl Guard {
    /// Whether this process has a helper and it is not parked (waking one costs the caller a
    /// futex wake, more than a mid-sized element-wise pass gains).
    fn helper_awake(&self) -> bool {
        // SAFETY: this guard holds `busy`.
        let helpers = unsafe { &*TEAM.helpers.get() };
        HELPER_AWAKE.load(Ordering::Relaxed)
            && !helpers.is_empty()
            && OWNER.load(Ordering::Relaxed) == std::process::id()
    }
}
