//! Storages over foreign memory (NOTE [Foreign buffers]): kernels read and write it in place, a
//! read-only buffer refuses writes before touching it, the owner lives exactly as long as the
//! storage, and two storages over one memory never give a kernel aliasing slices.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tapegrad::tensor::storage::{Buffer, Data};
use tapegrad::Tensor;

/// Owns a boxed slice and counts its own drops.
struct Owner {
    _mem: Box<[f64]>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tensor of shape `shape` over `values`, kept alive by an `Owner`; returns the memory's address.
fn foreign(values: &[f64], shape: &[usize], writable: bool, drops: &Arc<AtomicUsize>) -> (Tensor, *mut f64) {
    let mut mem: Box<[f64]> = values.to_vec().into_boxed_slice();
    let ptr = mem.as_mut_ptr();
    let owner = Owner { _mem: mem, drops: drops.clone() };
    // SAFETY: the box's memory does not move when the box does, and the owner keeps it alive.
    let data = unsafe { Data::foreign(ptr, values.len(), writable, Box::new(owner)) };
    (Tensor::from_buffer(Buffer::F64(data), shape).unwrap(), ptr)
}

#[test]
fn kernels_read_and_write_foreign_memory_in_place() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (t, ptr) = foreign(&[1.0, 2.0, 3.0, 4.0], &[2, 2], true, &drops);
    assert_eq!(t.sum(None, false).unwrap().item().unwrap(), 10.0);
    t.mul_scalar_(2.0).unwrap();
    // SAFETY: the tensor keeps the memory alive; no kernel runs meanwhile.
    let now = unsafe { std::slice::from_raw_parts(ptr, 4) }.to_vec();
    assert_eq!(now, vec![2.0, 4.0, 6.0, 8.0]);
    // A view writes through to the same memory; the storage's address is the memory's.
    let col = t.transpose(0, 1).unwrap();
    assert_eq!(t.storage().data_ptr(), ptr as usize);
    assert!(col.shares_storage(&t));
    assert!(t.storage().is_foreign());
    drop(t);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "a view keeps the owner alive");
    drop(col);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the last tensor releases the owner once");
}

#[test]
fn read_only_foreign_memory_refuses_writes_before_writing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (t, ptr) = foreign(&[1.0, 2.0], &[2], false, &drops);
    assert!(!t.storage().is_writable());
    let e = t.add_scalar_(1.0).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    let src = Tensor::from_vec(vec![5.0f64, 6.0], &[2]).unwrap();
    assert!(t.copy_(&src).is_err());
    // SAFETY: as above.
    assert_eq!(unsafe { std::slice::from_raw_parts(ptr, 2) }, &[1.0, 2.0]);
    // Reading and out-of-place results are unaffected.
    assert_eq!(t.add_scalar(1.0).unwrap().to_vec::<f64>().unwrap(), vec![2.0, 3.0]);
}

#[test]
fn a_clone_of_a_foreign_buffer_is_owned_memory() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (t, ptr) = foreign(&[1.0, 2.0], &[2], true, &drops);
    let copy: Buffer = t.storage().read().clone();
    assert!(!copy.is_foreign());
    assert_ne!(copy.data_ptr(), ptr as usize);
}

#[test]
fn two_storages_over_one_memory_are_written_through_a_copy() {
    // One memory, two storages (as two `from_numpy` of one array give): `a += b` with b == a's memory
    // must read b before writing a, never through aliasing slices.
    let drops = Arc::new(AtomicUsize::new(0));
    let (a, ptr) = foreign(&[1.0, 2.0, 3.0], &[3], true, &drops);
    struct Nothing;
    // SAFETY: `a` keeps the memory alive for as long as `b` is used below.
    let data = unsafe { Data::foreign(ptr, 3, true, Box::new(Nothing)) };
    let b = Tensor::from_buffer(Buffer::F64(data), &[3]).unwrap();
    assert!(a.storage().overlaps(b.storage()));
    a.add_(&b).unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![2.0, 4.0, 6.0]);
    drop(b);
}
