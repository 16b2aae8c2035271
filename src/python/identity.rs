//! NOTE [One Python object per core object]: as in PyTorch, a tensor and a graph node each have at
//! most one live Python object: `x.grad is x.grad`, `y.grad_fn is y.grad_fn`, and a weak reference
//! to either lives as long as its Python object. The core object keeps the address of its wrapper
//! (an `AtomicUsize` slot), a borrowed reference: it keeps nothing alive, so it is invisible to the
//! collector (`__traverse__` does not report it). It is written only with the GIL held: set when a
//! wrapper is made, cleared by that wrapper's drop (which runs before its memory is freed), and
//! ignored while its object is being deallocated (reference count 0), when a fresh wrapper
//! replaces it.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;
use pyo3::PyClass;

/// The live wrapper whose address is in `slot`, if any.
pub(crate) fn live_wrapper<T: PyClass>(py: Python<'_>, slot: &AtomicUsize) -> Option<Py<T>> {
    let known = slot.load(Ordering::Acquire);
    if known == 0 {
        return None;
    }
    let obj = known as *mut pyo3::ffi::PyObject;
    // SAFETY: a non-zero slot is the address of this object's wrapper, which clears the slot in its
    // drop, before its memory is freed; we hold the GIL, so it cannot be freed meanwhile. A count of
    // 0 means it is being deallocated: not to be revived.
    if unsafe { pyo3::ffi::Py_REFCNT(obj) } == 0 {
        return None;
    }
    // SAFETY: `obj` is a live object (above); a new strong reference is taken.
    let wrapper = unsafe { Bound::from_borrowed_ptr(py, obj) };
    // SAFETY: only `register` writes the slot, with the address of a `T`.
    Some(unsafe { wrapper.cast_into_unchecked::<T>() }.unbind())
}

/// Records `obj` as the live wrapper in `slot`; returns the address to clear in the wrapper's drop.
pub(crate) fn register<T: PyClass>(obj: &Py<T>, slot: &AtomicUsize) -> usize {
    let addr = obj.as_ptr() as usize;
    slot.store(addr, Ordering::Release);
    addr
}

/// In a wrapper's drop: clears `slot` if it still names this wrapper (`me`); a newer wrapper may
/// have replaced it.
pub(crate) fn unregister(slot: &AtomicUsize, me: usize) {
    if me != 0 {
        let _ = slot.compare_exchange(me, 0, Ordering::AcqRel, Ordering::Acquire);
    }
}
