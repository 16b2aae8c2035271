//! NOTE [Swappable inner tensor]: a Python `Tensor` holds one core tensor, whose layout is fixed
//! (NOTE [In-place shape operations] in `ops/inplace.rs`). For `t_`, `transpose_`, `squeeze_` and
//! `unsqueeze_` the object takes a new core tensor in its place: `TensorCell` is that place. Every
//! method reads it as `&Tensor` (it derefs to the current tensor) with no lock and no reference-count
//! traffic: one atomic load and a branch, so the per-operation cost does not grow. A borrowed
//! `&Tensor` can outlive a swap (a method that releases the GIL, or calls back into Python, which
//! may call `t_()` on the same object), so a replaced tensor is never freed while the object lives:
//! it is kept in a chain freed when the object is dropped. The price is memory: each in-place
//! shape operation on one object keeps the tensor it replaced (a few hundred bytes; the storage is
//! shared) until that object goes. A reader-counted or epoch-based reclamation would free them
//! earlier at a cost on every read; in-place shape operations are rare enough not to pay it.
//! Core code that held the old tensor (a clone taken before the swap, a saved tensor) keeps seeing
//! it with its old shape: as in PyTorch, the version bump makes a saved one stale.

use std::ops::Deref;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::Tensor;

/// A replaced-in tensor and the one it replaced.
struct Swapped {
    tensor: Tensor,
    prev: *mut Swapped,
}

/// The core tensor of a Python `Tensor`: the first one, or the latest swapped in.
pub(crate) struct TensorCell {
    first: Tensor,
    latest: AtomicPtr<Swapped>,
}

impl TensorCell {
    pub(crate) fn new(t: Tensor) -> TensorCell {
        TensorCell { first: t, latest: AtomicPtr::new(ptr::null_mut()) }
    }

    /// Puts `t` in place of the current tensor; the replaced one lives as long as the cell.
    pub(crate) fn replace(&self, t: Tensor) {
        let node = Box::into_raw(Box::new(Swapped { tensor: t, prev: ptr::null_mut() }));
        let mut cur = self.latest.load(Ordering::Acquire);
        loop {
            // SAFETY: `node` is ours until the exchange below publishes it.
            unsafe { (*node).prev = cur };
            match self.latest.compare_exchange_weak(cur, node, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }
}

impl Deref for TensorCell {
    type Target = Tensor;
    #[inline]
    fn deref(&self) -> &Tensor {
        let p = self.latest.load(Ordering::Acquire);
        if p.is_null() {
            &self.first
        } else {
            // SAFETY: a published node is freed only by `drop`, which has the cell exclusively.
            unsafe { &(*p).tensor }
        }
    }
}

impl Drop for TensorCell {
    fn drop(&mut self) {
        let mut p = *self.latest.get_mut();
        while !p.is_null() {
            // SAFETY: every node was made by `Box::into_raw` in `replace` and is freed once, here.
            let node = unsafe { Box::from_raw(p) };
            p = node.prev;
        }
    }
}
