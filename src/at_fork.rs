//! What tapegrad does around `fork()`: one set of `pthread_atfork` handlers for every process-wide
//! lock a forked child may need.
//!
//! NOTE [Locks across fork]: a fork copies memory, not threads. A lock that another thread holds
//! at that moment is copied held, by a thread the child does not have, and the child's first use of
//! it waits forever (a DataLoader-style worker, a `multiprocessing` pool with Linux's default start
//! method). So the prepare handler takes each such lock on the forking thread (waiting for the
//! holder to leave its short section), and both sides release it after the fork:
//! - the thread pool's slot (`parallel.rs`), then the random generator (`tensor/random.rs`), then the
//!   allocator's large-block cache (`alloc.rs`), in that order because a thread holding one of the
//!   first two may allocate a large block (a new pool's queues, `randn`'s samples) and so take the
//!   last; nothing takes them in the other order;
//! - the child also forgets what the parent's threads were doing for it: the pool (a new one is
//!   built on the first parallel call) and the allocator's sweeper (restarted with the next large
//!   block).
//!
//! Not covered: the locks of tensors and of gradient accumulation (`autograd/accumulate.rs`). A child
//! that uses a tensor another thread of the parent was writing, or running backward into, at the
//! moment of the fork may wait for it forever; such a tensor's contents would be half-written in the
//! child anyway. (The GEMM team's lock is only ever tried: a child forked while it was held runs
//! its products on one thread.)
//!
//! The handlers are registered when the extension module is imported, before any thread of ours
//! exists. Registering them lazily (as first written, from the first large block and the first
//! parallel call) left a window: glibc 2.36 releases its handler-list lock while it runs each
//! prepare handler, so a thread could register, and take a lock, after a fork had read the list and
//! before it copied the process, and the child hung at its first large allocation (CI, one run in
//! about a hundred of `test_large_allocations_in_a_child_forked_while_another_thread_allocates`).
//! A Rust program that links the crate still gets them lazily (`register` is called before those
//! locks are first taken), with that window.

use std::sync::atomic::{AtomicBool, Ordering};

/// Registers the handlers once per process (a forked child inherits them).
///
/// A flag and not a `Once`: a child forked while another thread was inside a `Once` would find it
/// running forever and wait at its first call.
pub fn register() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if REGISTERED.load(Ordering::Acquire) || REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    #[cfg(unix)]
    // SAFETY: three handlers with the C ABI and no arguments, as POSIX asks; they touch only the
    // locks and flags named in the NOTE.
    unsafe {
        libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
    }
}

#[cfg(unix)]
extern "C" fn prepare() {
    crate::parallel::before_fork();
    crate::tensor::random::before_fork();
    crate::alloc::before_fork();
}

#[cfg(unix)]
extern "C" fn parent() {
    release(false);
}

#[cfg(unix)]
extern "C" fn child() {
    release(true);
}

/// Releases what `prepare` took, in the reverse order, on either side of the fork.
#[cfg(unix)]
fn release(in_child: bool) {
    crate::alloc::after_fork(in_child);
    crate::tensor::random::after_fork();
    crate::parallel::after_fork(in_child);
}
