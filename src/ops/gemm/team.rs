//! The GEMM team: the calling thread plus persistent helper threads that run one multiply together,
//! meeting at spin barriers around the packed blocks of `B` they share.
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
//! Helpers spin briefly after a job (`SPIN_FOR`: a forward pass issues its products microseconds
//! apart, and waking a parked thread costs tens of microseconds, about what a 256³ product takes on
//! two cores), then yield the core (to `YIELD_FOR`), then park until the next job. The waits are
//! short because a spinning helper takes a core from whatever runs between the products (the
//! element-wise passes on rayon's workers, other processes): with 30 and 300 µs, W6 (256³ products
//! between `tanh`s, then branches on rayon) measured slower than with 20 and 60 (one run each on a
//! busy machine, so a hint rather than a measurement).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::Line;

/// How long an idle helper spins (then yields the core until `YIELD_FOR`), before parking.
const SPIN_FOR: Duration = Duration::from_micros(20);
const YIELD_FOR: Duration = Duration::from_micros(60);

/// A job: every member calls it with its index (the caller is member 0).
type Job = dyn Fn(usize) + Sync + 'static;

struct Helper {
    /// Bumped by the caller to hand this helper the posted job.
    ticket: AtomicUsize,
    thread: Thread,
}

pub(super) struct Team {
    busy: AtomicBool,
    /// The posted job, its lifetime erased: set by the holder of `busy` before it hands out
    /// tickets, and borrowed by helpers only until they report `done`, which the holder awaits
    /// before its borrow ends.
    job: UnsafeCell<Option<*const Job>>,
    /// Helpers finished with the current job.
    done: AtomicUsize,
    /// Grown (never shrunk) by the holder of `busy`.
    helpers: UnsafeCell<Vec<Arc<Helper>>>,
    /// Shared packing buffer (blocks of `B`), used only by the holder of `busy` and its job.
    buffer: UnsafeCell<Vec<Line>>,
}

// SAFETY: the `UnsafeCell`s are written only by the thread holding `busy` (an acquire/release
// try-lock), and read by helpers only between their ticket (released after the write) and their
// `done` (awaited by the holder before the next write).
unsafe impl Sync for Team {}

static TEAM: Team = Team {
    busy: AtomicBool::new(false),
    job: UnsafeCell::new(None),
    done: AtomicUsize::new(0),
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

    /// Runs `job(0)` here and `job(1)` .. `job(members - 1)` on helpers, all at once, and returns
    /// when all have finished. `members` must not exceed what [`Guard::members`] returned.
    pub(super) fn run<'a>(&mut self, members: usize, job: &'a (dyn Fn(usize) + Sync + 'a)) {
        // SAFETY: this guard holds `busy`.
        let helpers = unsafe { &*TEAM.helpers.get() };
        let used = members - 1;
        debug_assert!(used <= helpers.len());
        // SAFETY: as above; the erased borrow is used only until every helper reports `done`,
        // which this function awaits below.
        unsafe { *TEAM.job.get() = Some(std::mem::transmute::<&'a (dyn Fn(usize) + Sync + 'a), *const Job>(job)) };
        TEAM.done.store(0, Ordering::Relaxed);
        for h in &helpers[..used] {
            h.ticket.fetch_add(1, Ordering::Release);
            h.thread.unpark();
        }
        {
            let _abort = AbortOnUnwind;
            job(0);
        }
        let mut spins = 0u32;
        while TEAM.done.load(Ordering::Acquire) < used {
            pause(&mut spins);
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
                let me = Arc::new(Helper { ticket: AtomicUsize::new(0), thread: std::thread::current() });
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

/// A helper's life: wait for a ticket, run the job, report, repeat.
fn serve(me: &Helper, id: usize) {
    let mut seen = 0usize;
    loop {
        let since = Instant::now();
        let mut n = 0u32;
        loop {
            let t = me.ticket.load(Ordering::Acquire);
            if t != seen {
                seen = t;
                break;
            }
            n = n.wrapping_add(1);
            let waited = if n.is_multiple_of(64) { since.elapsed() } else { Duration::ZERO };
            if waited >= YIELD_FOR {
                // A stale unpark makes this return at once; the loop re-checks the ticket.
                std::thread::park();
            } else if waited >= SPIN_FOR {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the ticket was released after the job was posted, and the caller keeps the job
        // alive until this helper's `done` below.
        let job = unsafe { (*TEAM.job.get()).expect("a posted job") };
        {
            let _abort = AbortOnUnwind;
            // SAFETY: as above.
            unsafe { (*job)(id) };
        }
        TEAM.done.fetch_add(1, Ordering::Release);
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
