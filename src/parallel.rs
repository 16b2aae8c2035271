//! The thread pool behind every parallel kernel, the engine's parallel batches and the GEMM's
//! thread count; `tg.set_num_threads` / `tg.get_num_threads`.
//!
//! NOTE [A pool of our own]: rayon's global pool can be neither resized nor replaced, and after
//! `fork()` its threads do not exist in the child: the child's first parallel call queues work for
//! workers that will never run it and waits forever (a DataLoader-style worker process, a
//! `multiprocessing` pool with the default start method on Linux). So tapegrad runs its parallel
//! work in a pool it owns:
//! - built on first use (`RAYON_NUM_THREADS` or the cores available to the process, as rayon's
//!   default), rebuilt at the size `set_num_threads` asks;
//! - forgotten in a forked child (the child's fork handler bumps the generation), which builds a
//!   fresh one on its first parallel call: the parent's pool object is leaked there, since dropping
//!   it would signal threads that do not exist;
//! - the lock guarding it is held across a fork by the forking thread and released on both sides,
//!   so a fork never copies it held by a thread that does not exist in the child (NOTE [Locks
//!   across fork] in `at_fork.rs`).
//!
//! Every parallel iterator runs inside [`install`]; code already running on one of the pool's
//! workers (a nested parallel kernel) stays in that pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};

struct Pool {
    pool: Arc<ThreadPool>,
    /// The fork generation it was built in.
    generation: usize,
}

static POOL: RwLock<Option<Pool>> = RwLock::new(None);
/// Threads asked for by `set_num_threads` (0: rayon's default).
static WANTED: AtomicUsize = AtomicUsize::new(0);
/// Bumped in every forked child.
static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// Runs `op` inside the pool, so that the parallel iterators it starts use the pool's threads.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        // Already on a worker (of our pool: the crate starts no other): stay there.
        return op();
    }
    pool().install(op)
}

/// The number of threads parallel work uses.
pub fn threads() -> usize {
    match rayon::current_thread_index() {
        Some(_) => rayon::current_num_threads(),
        None => pool().current_num_threads(),
    }
}

/// Sets the number of threads parallel work uses from now on (`n >= 1`); work already running
/// finishes on the old pool, whose threads then exit.
pub fn set_threads(n: usize) -> crate::Result<()> {
    if n == 0 {
        return Err(crate::Error::Value("set_num_threads expects a positive integer".into()));
    }
    crate::at_fork::register();
    let pool = build(n)?;
    WANTED.store(n, Ordering::Relaxed);
    // The old pool drops outside the lock (its drop only signals its threads to stop).
    let _old = POOL.write().replace(Pool { pool, generation: GENERATION.load(Ordering::Relaxed) });
    Ok(())
}

/// Whether `set_threads(1)` was called last: one atomic load, for paths too short to take the
/// pool's lock (`threads()`).
pub(crate) fn one_thread() -> bool {
    WANTED.load(Ordering::Relaxed) == 1
}

/// The fork generation: changes in a forked child (for other thread teams that must forget the
/// parent's threads, such as the GEMM's).
pub fn fork_generation() -> usize {
    GENERATION.load(Ordering::Relaxed)
}

fn pool() -> Arc<ThreadPool> {
    let generation = GENERATION.load(Ordering::Relaxed);
    if let Some(p) = POOL.read().as_ref() {
        if p.generation == generation {
            return p.pool.clone();
        }
    }
    crate::at_fork::register();
    let mut slot = POOL.write();
    if let Some(p) = slot.as_ref() {
        if p.generation == generation {
            return p.pool.clone();
        }
    }
    let pool = build(WANTED.load(Ordering::Relaxed)).unwrap_or_else(|_| {
        // Threads could not be spawned: run the work on the calling thread alone.
        Arc::new(ThreadPoolBuilder::new().num_threads(1).use_current_thread().build().expect("a pool of the caller"))
    });
    if let Some(stale) = slot.replace(Pool { pool: pool.clone(), generation }) {
        if stale.generation != generation {
            // A parent's pool in a forked child: its threads do not exist here (see the NOTE).
            std::mem::forget(stale);
        }
    }
    pool
}

fn build(n: usize) -> crate::Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("tapegrad-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| crate::Error::OutOfMemory(format!("could not start the thread pool: {e}")))
}

/// Takes the slot's lock for a fork (NOTE [Locks across fork] in `at_fork.rs`).
pub(crate) fn before_fork() {
    std::mem::forget(POOL.write());
}

/// Releases the lock `before_fork` took; a child also forgets the parent's pool.
pub(crate) fn after_fork(child: bool) {
    // SAFETY: `before_fork` took the write lock on this thread and forgot its guard (in a child, this
    // thread is the only one).
    unsafe { POOL.force_unlock_write() };
    if child {
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }
}
