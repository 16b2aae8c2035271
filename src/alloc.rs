//! The process's allocator: glibc's `malloc` for blocks below 256 KiB, those of up to 1 KiB kept
//! on per-thread lists when freed (NOTE [Small-block cache]); for blocks of 256 KiB or more our own
//! mappings, on transparent huge pages from 2 MB, kept for reuse by a loop that frees and requests
//! the same sizes step after step (NOTE [Large-block cache]).
//!
//! NOTE [Large-block cache]: a training step frees and requests the same large buffers every
//! step (W4: a 64 MB weight gradient, 4 MB activations). glibc hands blocks above its mmap
//! threshold back to the kernel at free, so every step mapped them again and took a zero-fill page
//! fault per 4 KB page: 16,386 faults per W4 step, about 30 ms of its 137 on this machine's VM.
//! Two measures, both for blocks of `LARGE` bytes or more (smaller ones stay with `malloc`, whose
//! heap reuses them already):
//! - Huge pages: a block of `HUGE` bytes or more is mapped on a 2 MB boundary and advised
//!   `MADV_HUGEPAGE` (THP runs in "madvise" mode here), so its first touch takes one fault per
//!   2 MB instead of one per 4 KB: faulting 64 MB in costs 3.7 ms instead of 29-34 ms.
//! - A cache of freed blocks, reused for requests of the same page-rounded size, under a rule that
//!   keeps "memory goes back when the graph is dropped" true (tests/python/reliability/test_leaks.py):
//!   1. A size is cached only once it *recurs*: a block of that size was freed and then the size
//!      was requested again, twice (`RECUR`). A loop does that from its third step on; a graph
//!      built once or twice and dropped does not, so its memory is unmapped at once, as before.
//!   2. The cache holds at most the recent peak of live large bytes (a peak that decays by an
//!      eighth per `SWEEP` period): it can never more than double what the program recently had
//!      live.
//!   3. A sweeper thread (started with the first large block) unmaps every cached block that has
//!      not been reused for one to two `SWEEP` periods (0.5 s), or, for a size that has recurred
//!      many times, up to `LONG_LIFE` periods (NOTE [Idle life of a cached block]): after a loop
//!      ends and its graph is dropped, resident memory returns to the baseline within about a
//!      second (a short loop) to three and a half (a long one). A size keeps its recurrence for
//!      `FORGET` periods (10 s), so a loop whose steps take seconds still reuses what it frees and
//!      requests again within a step or from one step to the next.
//!   4. `release_cached()` (Python: `tapegrad._tapegrad._release_cached_memory()`) unmaps the
//!      whole cache at once.
//!
//! PyTorch's CPU allocator does not cache (its CUDA one caches until `empty_cache()`); this rule
//! takes the reuse of the CUDA one without holding memory past the loop that needs it.
//!
//! The state lives behind one `std::sync::Mutex` (a futex: it never allocates, so it may be taken
//! inside the allocator), taken only on the large path, and never across a system call: blocks to
//! unmap are collected in a fixed array and unmapped after the lock is released. Nothing here
//! allocates or panics.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Blocks of this many bytes or more take the large path. 256 KiB and not 1 MiB (the first
/// choice): W6's backward frees and requests 256×256 float32 gradients on the pool's threads, whose
/// glibc arenas gave them back to the kernel and faulted them in again, ~20,000 minor faults per
/// step; through the cache, 0, and W6 82-87 -> 55 ms per step (quiet Zen 5, CI-profile build; W1,
/// whose 400 KB weight gradient now takes this path too, unchanged at 0.180 ms per step).
pub const LARGE: usize = 1 << 18;
/// Blocks of this many bytes or more are mapped on a huge-page boundary and advised huge pages.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE: usize = 2 << 20;
const PAGE: usize = 4096;
/// How many freed blocks the cache holds at most: W6 frees a few hundred 256 KB blocks per step
/// (with 64 slots the cache churned and 8,000 faults per step remained).
const SLOTS: usize = 512;
/// How many sizes the recurrence table remembers.
const SIZES: usize = 64;
/// A size is cached once it has recurred this many times (freed, then requested again).
const RECUR: u8 = 2;
/// The sweeper's period.
const SWEEP: Duration = Duration::from_millis(500);
/// Sizes not seen for this many sweeps lose their recurrence.
const FORGET: u64 = 20;
/// The most sweeps a cached block of a size that recurred `LONG_RETURNS` times or more survives
/// idle (NOTE [Idle life of a cached block]).
const LONG_LIFE: u64 = 6;
/// Recurrences of a size after which its blocks get one more sweep of idle life, per this many.
const LONG_RETURNS: u8 = 4;

// NOTE [Idle life of a cached block]: with one idle sweep for every block, a training loop that
// pauses between rounds for more than 0.5-1 s (an evaluation, a log line, a benchmark's harness)
// found its blocks unmapped, and its next step took ~1,800 page faults (~10 ms of W4's ~85,
// steps.py --pause 1). A size that has recurred many times belongs to a loop that is likely to go
// on, so its blocks live longer: one idle sweep per `LONG_RETURNS` recurrences, from 1 up to
// `LONG_LIFE` sweeps (3-3.5 s; W4 reaches it after 24 steps). A graph built once or twice still
// caches nothing (rule 1), a short loop's blocks still go within about a second, and a long loop's
// within 3.5 s of its end; the cap on cached bytes (rule 2) is unchanged, so the memory held during
// a pause is at most what the loop itself had live. Blocks kept that long must not crowd out the
// next loop's: a free over the cap evicts the block idle longest, if it is idle since before the
// current sweep period (test_alloc_cache.py: a loop of 256 KB blocks right after one of 1-3 MiB
// blocks faulted 2,000 times per step until the older blocks' life ran out).
fn idle_life(returns: u8) -> u64 {
    (u64::from(returns) / u64::from(LONG_RETURNS)).clamp(1, LONG_LIFE)
}

#[derive(Clone, Copy)]
struct Block {
    ptr: *mut u8,
    len: usize,
    /// The sweep epoch of its free.
    epoch: u64,
    /// Sweeps it may stay idle (NOTE [Idle life of a cached block]).
    life: u64,
}

#[derive(Clone, Copy)]
struct SizeSeen {
    len: usize,
    returns: u8,
    freed_since_request: bool,
    epoch: u64,
}

struct State {
    blocks: [Option<Block>; SLOTS],
    sizes: [Option<SizeSeen>; SIZES],
    cached: usize,
    live: usize,
    peak: usize,
    epoch: u64,
}

// SAFETY: the raw pointers are addresses of mappings only this module reads or unmaps, always
// under the mutex.
unsafe impl Send for State {}

static STATE: Mutex<State> =
    Mutex::new(State { blocks: [None; SLOTS], sizes: [None; SIZES], cached: 0, live: 0, peak: 0, epoch: 0 });

/// 0: the sweeper is not started; 1: being started; 2: running.
static SWEEPER: AtomicU8 = AtomicU8::new(0);
/// Large blocks mapped (live or cached) by this module, in bytes; for tests and statistics.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

#[inline(always)]
fn is_large(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= PAGE
}

fn round_len(size: usize) -> usize {
    // `size` is at most isize::MAX (Layout's rule), so this cannot overflow.
    (size + PAGE - 1) & !(PAGE - 1)
}

impl State {
    fn seen(&mut self, len: usize) -> &mut SizeSeen {
        let epoch = self.epoch;
        let i = match self.sizes.iter().position(|s| matches!(s, Some(s) if s.len == len)) {
            Some(i) => i,
            None => {
                // A free slot, or else the size seen longest ago.
                let i =
                    self.sizes.iter().position(Option::is_none).unwrap_or_else(|| {
                        (0..SIZES).min_by_key(|&i| self.sizes[i].map_or(0, |s| s.epoch)).unwrap_or(0)
                    });
                self.sizes[i] = Some(SizeSeen { len, returns: 0, freed_since_request: false, epoch });
                i
            }
        };
        let s = self.sizes[i].as_mut().unwrap_or_else(|| unreachable!());
        s.epoch = epoch;
        s
    }

    /// A request for `len` bytes: a cached block of that length, if any (the most recently freed).
    fn take(&mut self, len: usize) -> Option<*mut u8> {
        let seen = self.seen(len);
        if seen.freed_since_request {
            seen.freed_since_request = false;
            seen.returns = seen.returns.saturating_add(1);
        }
        self.live += len;
        self.peak = self.peak.max(self.live);
        let i = (0..SLOTS)
            .filter(|&i| matches!(self.blocks[i], Some(b) if b.len == len))
            .max_by_key(|&i| self.blocks[i].map_or(0, |b| b.epoch))?;
        let b = self.blocks[i].take()?;
        self.cached -= b.len;
        Some(b.ptr)
    }

    /// A free of `len` bytes at `ptr`: kept (true), or to be unmapped by the caller, with
    /// `evicted` the block the cache gave up for it, if any.
    fn keep(&mut self, ptr: *mut u8, len: usize, evicted: &mut Option<Block>) -> bool {
        self.live -= len;
        let seen = self.seen(len);
        seen.freed_since_request = true;
        let returns = seen.returns;
        if returns < RECUR {
            return false;
        }
        if self.cached + len > self.peak {
            // Over the cap: the block idle longest gives way if it was freed before this sweep
            // period (an earlier loop's, kept by its idle life: NOTE [Idle life of a cached block]).
            let epoch = self.epoch;
            let stale = (0..SLOTS)
                .filter(|&i| matches!(self.blocks[i], Some(b) if b.epoch < epoch))
                .min_by_key(|&i| self.blocks[i].map_or(0, |b| b.epoch));
            if let Some(i) = stale {
                *evicted = self.blocks[i].take();
                self.cached -= evicted.map_or(0, |b| b.len);
            }
            if self.cached + len > self.peak {
                return false;
            }
        }
        let life = idle_life(returns);
        let epoch = self.epoch;
        let i = match self.blocks.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                let oldest = (0..SLOTS).min_by_key(|&i| self.blocks[i].map_or(0, |b| b.epoch)).unwrap_or(0);
                *evicted = self.blocks[oldest].take();
                self.cached -= evicted.map_or(0, |b| b.len);
                oldest
            }
        };
        self.blocks[i] = Some(Block { ptr, len, epoch, life });
        self.cached += len;
        true
    }

    /// Removes into `out` the cached blocks idle for longer than their life at epoch `now`
    /// (freed before `now - life`); all of them for `now == u64::MAX`.
    fn drain(&mut self, now: u64, out: &mut [Option<Block>; SLOTS]) {
        for (slot, o) in self.blocks.iter_mut().zip(out.iter_mut()) {
            if matches!(slot, Some(b) if b.epoch < now.saturating_sub(b.life) || now == u64::MAX) {
                *o = slot.take();
                self.cached -= o.map_or(0, |b| b.len);
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod os {
    use super::{HUGE, PAGE};

    /// A fresh zeroed mapping of `len` bytes (a multiple of the page), 2 MB-aligned and advised
    /// huge pages from `HUGE` bytes on; null on failure.
    pub fn map(len: usize) -> *mut u8 {
        let extra = if len >= HUGE { HUGE - PAGE } else { 0 };
        let Some(total) = len.checked_add(extra) else { return std::ptr::null_mut() };
        // SAFETY: an anonymous private mapping at an address of the kernel's choice touches no
        // existing memory.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let start = p as usize;
        if extra == 0 {
            return p.cast();
        }
        let aligned = (start + HUGE - 1) & !(HUGE - 1);
        let head = aligned - start;
        let tail = total - head - len;
        // SAFETY: both ranges lie inside the mapping just made and outside [aligned, aligned+len).
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            // Advice only: a kernel without THP refuses it, and the block works the same.
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        aligned as *mut u8
    }

    /// Gives a mapping made by `map` back to the kernel.
    ///
    /// # Safety
    /// `ptr` and `len` are a block `map` returned, no longer used.
    pub unsafe fn unmap(ptr: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { libc::munmap(ptr.cast(), len) };
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use super::PAGE;
    use std::alloc::{GlobalAlloc, Layout, System};

    /// A zeroed block of `len` bytes (a multiple of the page), page-aligned; null on failure.
    pub fn map(len: usize) -> *mut u8 {
        match Layout::from_size_align(len, PAGE) {
            // SAFETY: `len` is nonzero (at least `LARGE`).
            Ok(l) => unsafe { System.alloc_zeroed(l) },
            Err(_) => std::ptr::null_mut(),
        }
    }

    /// Gives a block made by `map` back.
    ///
    /// # Safety
    /// `ptr` and `len` are a block `map` returned, no longer used.
    pub unsafe fn unmap(ptr: *mut u8, len: usize) {
        // SAFETY: the caller's contract; `map` used this layout.
        unsafe { System.dealloc(ptr, Layout::from_size_align_unchecked(len, PAGE)) };
    }
}

fn unmap_all(blocks: &[Option<Block>]) -> usize {
    let mut bytes = 0;
    for b in blocks.iter().flatten() {
        // SAFETY: a cached block is a mapping of this module that nothing uses any more.
        unsafe { os::unmap(b.ptr, b.len) };
        MAPPED.fetch_sub(b.len, Ordering::Relaxed);
        bytes += b.len;
    }
    bytes
}

/// One sweep (NOTE [Large-block cache], rule 3): unmaps blocks idle since the sweep before last
/// and forgets sizes not seen for as long.
fn sweep() {
    let mut out = [None; SLOTS];
    {
        let mut s = state();
        s.epoch += 1;
        let now = s.epoch;
        s.drain(now, &mut out);
        let forget = s.epoch.saturating_sub(FORGET);
        for slot in s.sizes.iter_mut() {
            if matches!(slot, Some(z) if z.epoch < forget) {
                *slot = None;
            }
        }
        s.peak = s.live.max(s.peak - s.peak / 8);
    }
    unmap_all(&out);
}

fn start_sweeper() {
    if SWEEPER.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return;
    }
    crate::at_fork::register();
    let spawned = std::thread::Builder::new().name("tapegrad-alloc-sweep".into()).spawn(|| loop {
        std::thread::sleep(SWEEP);
        sweep();
    });
    // Without a sweeper (no threads left), blocks stay cached until `release_cached`; try again
    // with the next large block.
    SWEEPER.store(if spawned.is_ok() { 2 } else { 0 }, Ordering::Release);
}

// The allocator across fork (NOTE [Locks across fork] in `at_fork.rs`): the forking thread holds
// the cache's lock across the fork, and the child forgets its parent's sweeper so that its next
// large block starts one of its own. (The child's cached blocks are its copies of the parent's,
// its own to reuse or unmap.)
thread_local! {
    /// The lock held by this thread across a fork.
    static HELD_ACROSS_FORK: std::cell::RefCell<Option<std::sync::MutexGuard<'static, State>>> =
        const { std::cell::RefCell::new(None) };
}

pub(crate) fn before_fork() {
    let guard = state();
    HELD_ACROSS_FORK.with(|h| *h.borrow_mut() = Some(guard));
}

pub(crate) fn after_fork(child: bool) {
    HELD_ACROSS_FORK.with(|h| h.borrow_mut().take());
    if child {
        SWEEPER.store(0, Ordering::Release);
    }
}

/// Unmaps every cached block; returns the bytes given back (NOTE [Large-block cache], rule 4).
pub fn release_cached() -> usize {
    let mut out = [None; SLOTS];
    state().drain(u64::MAX, &mut out);
    unmap_all(&out)
}

/// Bytes of large blocks the cache holds, and bytes of large blocks mapped (live or cached).
pub fn cached_and_mapped() -> (usize, usize) {
    (state().cached, MAPPED.load(Ordering::Relaxed))
}

#[cold]
#[inline(never)]
fn large_alloc(len: usize, zeroed: bool) -> *mut u8 {
    if SWEEPER.load(Ordering::Acquire) == 0 {
        start_sweeper();
    }
    if let Some(p) = state().take(len) {
        if zeroed {
            // SAFETY: the cached block is `len` writable bytes nobody else uses.
            unsafe { ptr::write_bytes(p, 0, len) };
        }
        return p;
    }
    let p = os::map(len);
    if p.is_null() {
        // The request failed: it is not live.
        state().live -= len;
    } else {
        MAPPED.fetch_add(len, Ordering::Relaxed);
    }
    p
}

#[cold]
#[inline(never)]
fn large_free(ptr: *mut u8, len: usize) {
    let mut evicted = None;
    let kept = state().keep(ptr, len, &mut evicted);
    if !kept {
        unmap_all(&[Some(Block { ptr, len, epoch: 0, life: 0 })]);
    }
    unmap_all(&[evicted]);
}

// NOTE [Small-block cache]: a graph of small tensors is thousands of small blocks made during
// forward and freed together when backward releases the graph (W2: ~19,000 blocks of 16 to 600
// bytes per round of 1,000 operations). glibc's per-thread cache holds 7 blocks per size, so
// nearly every one of those frees and the next round's mallocs took glibc's slow paths
// (`_int_free`, `_int_malloc`, consolidation): a quarter of W2's instructions (callgrind), 16% of
// its samples (perf). So blocks of up to `SMALL_MAX` bytes, aligned to at most 16, are rounded up
// to a multiple of 16 bytes and kept, when freed, on a per-thread list per size, up to
// `SMALL_KEEP` bytes per thread: the next graph takes them back at the cost of a list pop. (An
// earlier try kept 64 blocks per size, which a graph overflows at once, and gained nothing; the
// bound here is a whole small graph's worth.)
// - The lists hold glibc blocks of exactly the class size, so a block freed on another thread
//   than its allocating one is reused there, or handed to `free`, as glibc would.
// - At thread exit the thread's lists are handed back to glibc (the thread-local's destructor,
//   registered through glibc, which does not allocate through this allocator); a free that comes
//   after that goes straight to glibc.
// - Nothing here allocates, takes a lock or runs user code; a list is touched only inside one
//   non-reentrant `try_with`.

/// Blocks up to this many bytes take the small path.
const SMALL_MAX: usize = 1024;
/// Size step of the small classes (glibc's malloc alignment on 64-bit targets).
const GRAIN: usize = 16;
const CLASSES: usize = SMALL_MAX / GRAIN;
/// Bytes of freed small blocks a thread keeps at most.
const SMALL_KEEP: usize = 4 << 20;

struct SmallLists {
    heads: [*mut u8; CLASSES],
    bytes: usize,
}

impl Drop for SmallLists {
    fn drop(&mut self) {
        for head in &mut self.heads {
            let mut p = std::mem::replace(head, ptr::null_mut());
            while !p.is_null() {
                // SAFETY: every block on a list is a malloc block of at least one pointer whose
                // first word is the next block's address (written by `small_free`).
                let next = unsafe { *(p as *mut *mut u8) };
                // SAFETY: the block came from `libc::malloc` and is on no other list.
                unsafe { libc::free(p as *mut libc::c_void) };
                p = next;
            }
        }
        self.bytes = 0;
    }
}

thread_local! {
    static SMALL: std::cell::UnsafeCell<SmallLists> =
        const { std::cell::UnsafeCell::new(SmallLists { heads: [ptr::null_mut(); CLASSES], bytes: 0 }) };
}

/// The small class of a request, or None.
#[inline(always)]
fn small_class(layout: &Layout) -> Option<usize> {
    // `size` is nonzero for every request a GlobalAlloc receives.
    (layout.size() <= SMALL_MAX && layout.align() <= GRAIN).then(|| (layout.size().max(1) - 1) / GRAIN)
}

#[inline(always)]
fn small_alloc(class: usize) -> *mut u8 {
    let cached = SMALL
        .try_with(|l| {
            // SAFETY: only this thread reaches its lists, and never reentrantly (nothing below calls
            // out); a listed block's first word is the next block's address.
            let l = unsafe { &mut *l.get() };
            let p = l.heads[class];
            if !p.is_null() {
                // SAFETY: `p` heads the list: its first word is the next block's address.
                l.heads[class] = unsafe { *(p as *mut *mut u8) };
                l.bytes -= (class + 1) * GRAIN;
            }
            p
        })
        .unwrap_or(ptr::null_mut());
    if !cached.is_null() {
        return cached;
    }
    // SAFETY: a plain malloc of the class size (16-aligned on this target).
    unsafe { libc::malloc((class + 1) * GRAIN) as *mut u8 }
}

#[inline(always)]
fn small_free(ptr: *mut u8, class: usize) {
    let size = (class + 1) * GRAIN;
    let kept = SMALL
        .try_with(|l| {
            // SAFETY: as in `small_alloc`; `ptr` is a block of `size >= 16` bytes its owner gave up.
            let l = unsafe { &mut *l.get() };
            if l.bytes + size > SMALL_KEEP {
                return false;
            }
            // SAFETY: the block is the caller's to give up, at least 16 bytes and 16-aligned.
            unsafe { *(ptr as *mut *mut u8) = l.heads[class] };
            l.heads[class] = ptr;
            l.bytes += size;
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: a block from `libc::malloc` (small blocks never come from elsewhere).
        unsafe { libc::free(ptr as *mut libc::c_void) };
    }
}

/// The global allocator (NOTE [Large-block cache], NOTE [Small-block cache]).
pub struct TapegradAlloc;

// SAFETY: small blocks are malloc blocks of their class size, handed to one owner at a time (a
// list pops a block before returning it and takes it back only at its owner's dealloc); other
// blocks below `LARGE` are the system allocator's, unchanged; large blocks are whole page-aligned
// mappings of at least the requested size, handed to one owner at a time (the cache removes a
// block before returning it, and takes it back only at its owner's dealloc).
unsafe impl GlobalAlloc for TapegradAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = small_class(&layout) {
            small_alloc(class)
        } else if is_large(&layout) {
            large_alloc(round_len(layout.size()), false)
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = small_class(&layout) {
            let p = small_alloc(class);
            if !p.is_null() {
                // SAFETY: the block holds at least `layout.size()` bytes.
                unsafe { ptr::write_bytes(p, 0, layout.size()) };
            }
            p
        } else if is_large(&layout) {
            large_alloc(round_len(layout.size()), true)
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(class) = small_class(&layout) {
            small_free(ptr, class);
        } else if is_large(&layout) {
            large_free(ptr, round_len(layout.size()));
        } else {
            // SAFETY: the caller's contract: `ptr` came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract makes this layout valid (same alignment, size rounded
        // up to the alignment fits isize).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let (old_small, new_small) = (small_class(&layout), small_class(&new_layout));
        if old_small.is_some() && old_small == new_small {
            return ptr; // the block already holds the class's bytes
        }
        match (old_small.is_some() || is_large(&layout), new_small.is_some() || is_large(&new_layout)) {
            // SAFETY: the caller's contract, passed on (both blocks are the system allocator's).
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            (true, true)
                if is_large(&layout) && is_large(&new_layout) && round_len(layout.size()) == round_len(new_size) =>
            {
                ptr
            }
            _ => {
                // SAFETY: `new_layout` has a nonzero size (the caller's contract).
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and are distinct;
                    // `ptr` is the caller's block of `layout`.
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}
