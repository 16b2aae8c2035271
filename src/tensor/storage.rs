//! Storage: one buffer and one version counter, shared by every view of it.
//!
//! NOTE [Version counter]: the counter lives in the storage, not in the tensor handle, so every
//! view of the same memory sees every in-place write (PyTorch keeps it in a shared
//! `VersionCounter` for the same reason). Every in-place write, whatever the grad mode, bumps it and
//! records the name of the operation that did, so a stale saved tensor can name its culprit.
//!
//! The buffer sits behind an `RwLock`: kernels read under a (recursive) read lock, in-place writes
//! take the write lock only for the copy into the destination, after the new values are computed.
//! That keeps `x.add_(x)` and writes through overlapping views free of aliasing and deadlock.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::dtype::DType;

// NOTE [Foreign buffers]: a storage's elements live either in a `Vec` the storage owns or in
// memory owned by someone else (a NumPy array given to `tg.from_numpy`, a DLPack producer's
// tensor): `Data::Foreign` is a pointer, a length, a writable flag and an opaque owner that keeps
// the memory alive. The core never looks inside the owner; it only drops it when the storage goes
// (the binding layer's owner is a `Py<PyAny>`: dropped on a thread attached to Python it is
// released at once, elsewhere PyO3 defers the release to the next time a thread attaches, so the
// last tensor may die on any thread). Rules that keep foreign memory sound:
// - A buffer's allocation never moves or changes length once the storage exists: nothing replaces
//   a storage's `Buffer` or grows its `Vec` (resize-like operations make new storages), so a pointer
//   handed out by `Storage::data_ptr` (to NumPy, to a DLPack consumer) stays valid while the
//   storage lives, and foreign memory is never reallocated.
// - A read-only foreign buffer has no mutable slice: `Data::as_mut_slice` is `None`, and
//   `check_inplace` refuses the write first with a message naming the cause.
// - The owner's memory is only read and written under the storage's lock like any buffer; writes
//   made by the other side (NumPy) bypass that lock and the version counter, as they bypass
//   PyTorch's (the user must not race them against a running operation).
// - Dropping a tensor never runs Python code under a tensor's lock (NOTE [No Python under a tensor
//   lock]): the owner goes with the storage, after every guard on it.

/// Keeps foreign memory alive; dropped when its storage is.
pub type ForeignOwner = Box<dyn std::any::Any + Send + Sync>;

/// Memory the storage does not own (NOTE [Foreign buffers]).
pub struct Foreign<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    writable: bool,
    _owner: ForeignOwner,
}

// SAFETY: the memory is only reached through the storage's lock (or by the owner's side, see the
// note), and the owner itself is `Send + Sync`.
unsafe impl<T: Send + Sync> Send for Foreign<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Foreign<T> {}

/// A storage's elements: owned, or foreign memory (NOTE [Foreign buffers]).
pub enum Data<T> {
    /// Memory the storage owns.
    Owned(Vec<T>),
    /// Memory kept alive by another object.
    Foreign(Foreign<T>),
}

impl<T> Data<T> {
    /// Wraps foreign memory: `len` elements of `T` from `ptr`, kept alive by `owner`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads (and, when `writable`, writes) of `len` elements of `T`,
    /// aligned for `T`, hold valid `T` values, and stay so until `owner` is dropped.
    pub unsafe fn foreign(ptr: *mut T, len: usize, writable: bool, owner: ForeignOwner) -> Self {
        let ptr = if len == 0 { std::ptr::NonNull::dangling() } else { std::ptr::NonNull::new(ptr).expect("non-null") };
        Data::Foreign(Foreign { ptr, len, writable, _owner: owner })
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        match self {
            Data::Owned(v) => v,
            // SAFETY: the constructor's contract.
            Data::Foreign(f) => unsafe { std::slice::from_raw_parts(f.ptr.as_ptr(), f.len) },
        }
    }

    /// The elements, mutably; `None` for read-only foreign memory.
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        match self {
            Data::Owned(v) => Some(v),
            // SAFETY: the constructor's contract; `&mut self` excludes every other Rust reader.
            Data::Foreign(f) if f.writable => Some(unsafe { std::slice::from_raw_parts_mut(f.ptr.as_ptr(), f.len) }),
            Data::Foreign(_) => None,
        }
    }

    /// True for foreign memory.
    pub fn is_foreign(&self) -> bool {
        matches!(self, Data::Foreign(_))
    }

    /// False for read-only foreign memory.
    pub fn is_writable(&self) -> bool {
        match self {
            Data::Owned(_) => true,
            Data::Foreign(f) => f.writable,
        }
    }

    /// The address of the first element.
    pub fn as_ptr(&self) -> *const T {
        self.as_slice().as_ptr()
    }
}

impl<T> std::ops::Deref for Data<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> From<Vec<T>> for Data<T> {
    fn from(v: Vec<T>) -> Self {
        Data::Owned(v)
    }
}

/// A clone is always owned memory (a copy of the elements).
impl<T: Clone> Clone for Data<T> {
    fn clone(&self) -> Self {
        Data::Owned(self.as_slice().to_vec())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Data<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Owned(v) => f.debug_tuple("Owned").field(v).finish(),
            Data::Foreign(x) => write!(f, "Foreign({:p}, {} elements, writable: {})", x.ptr, x.len, x.writable),
        }
    }
}

// NOTE [Adding a dtype]: a new element type adds a `Buffer` variant holding `Data<T>`, its arms in
// `dtype`/`len`/`is_foreign`/`is_writable`/`data_ptr` below, an `impl_element!` line in
// `element.rs`, and its NumPy/DLPack codes in the binding's exchange table
// (`src/python/convert/exchange.rs`, `EXCHANGE_DTYPES`).
/// The typed element buffer.
#[derive(Debug, Clone)]
pub enum Buffer {
    /// float32 data
    F32(Data<f32>),
    /// float64 data
    F64(Data<f64>),
    /// int64 data
    I64(Data<i64>),
    /// bool data
    Bool(Data<bool>),
    /// uint8 data
    U8(Data<u8>),
    /// int8 data
    I8(Data<i8>),
    /// int16 data
    I16(Data<i16>),
    /// int32 data
    I32(Data<i32>),
    /// float16 data
    F16(Data<half::f16>),
    /// bfloat16 data
    BF16(Data<half::bf16>),
}

macro_rules! each_buffer {
    ($b:expr, $v:ident => $body:expr) => {
        match $b {
            Buffer::F32($v) => $body,
            Buffer::F64($v) => $body,
            Buffer::I64($v) => $body,
            Buffer::Bool($v) => $body,
            Buffer::U8($v) => $body,
            Buffer::I8($v) => $body,
            Buffer::I16($v) => $body,
            Buffer::I32($v) => $body,
            Buffer::F16($v) => $body,
            Buffer::BF16($v) => $body,
        }
    };
}

impl Buffer {
    /// The buffer's dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::Float32,
            Buffer::F64(_) => DType::Float64,
            Buffer::I64(_) => DType::Int64,
            Buffer::Bool(_) => DType::Bool,
            Buffer::U8(_) => DType::UInt8,
            Buffer::I8(_) => DType::Int8,
            Buffer::I16(_) => DType::Int16,
            Buffer::I32(_) => DType::Int32,
            Buffer::F16(_) => DType::Float16,
            Buffer::BF16(_) => DType::BFloat16,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each_buffer!(self, v => v.len())
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the memory is foreign (NOTE [Foreign buffers]).
    pub fn is_foreign(&self) -> bool {
        each_buffer!(self, v => v.is_foreign())
    }

    /// False for read-only foreign memory.
    pub fn is_writable(&self) -> bool {
        each_buffer!(self, v => v.is_writable())
    }

    /// The address of the first element.
    pub fn data_ptr(&self) -> usize {
        each_buffer!(self, v => v.as_ptr() as usize)
    }
}

/// Who wrote in place last: the operation's name and, under anomaly mode, where.
#[derive(Debug, Clone, Default)]
pub struct WriteRecord {
    /// The in-place operation (`add_`, `copy_`, `MyFnBackward`'s `mark_dirty`...).
    pub op: Cow<'static, str>,
    /// A user-code location, recorded only under anomaly mode.
    pub location: Option<String>,
}

/// A buffer and its version counter.
#[derive(Debug)]
pub struct Storage {
    data: RwLock<Buffer>,
    version: AtomicU64,
    last_write: Mutex<Option<WriteRecord>>,
    /// Made under inference mode: its tensors are inference tensors.
    inference: bool,
    /// The buffer's `is_writable` and `is_foreign`, fixed at creation (the buffer is never replaced),
    /// so the in-place checks take no lock.
    writable: bool,
    foreign: bool,
}

impl Storage {
    /// Wraps a buffer at version 0.
    pub fn new(buffer: Buffer) -> Self {
        let (writable, foreign) = (buffer.is_writable(), buffer.is_foreign());
        Storage {
            writable,
            foreign,
            data: RwLock::new(buffer),
            version: AtomicU64::new(0),
            last_write: Mutex::new(None),
            inference: crate::autograd::grad_mode::is_inference_mode_enabled(),
        }
    }

    /// Read access. Recursive, so a kernel may read two views of the same storage at once.
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, Buffer> {
        self.data.read_recursive()
    }

    /// Write access; callers must also call `bump_version`.
    pub fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Buffer> {
        self.data.write()
    }

    /// True when made under inference mode (its tensors are inference tensors).
    pub fn is_inference(&self) -> bool {
        self.inference
    }

    /// The current version.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Records an in-place write by `op`.
    pub fn bump_version(&self, op: Cow<'static, str>, location: Option<String>) {
        *self.last_write.lock() = Some(WriteRecord { op, location });
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// The last in-place write, if any.
    pub fn last_write(&self) -> Option<WriteRecord> {
        self.last_write.lock().clone()
    }

    /// The buffer's dtype.
    pub fn dtype(&self) -> DType {
        self.read().dtype()
    }

    /// False when the buffer is read-only foreign memory (NOTE [Foreign buffers]).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// True when the buffer is foreign memory.
    pub fn is_foreign(&self) -> bool {
        self.foreign
    }

    /// True when this storage's memory and `other`'s intersect: only possible when both are
    /// foreign views of the same memory (NOTE [Foreign buffers]).
    pub fn overlaps(&self, other: &Storage) -> bool {
        if !self.foreign || !other.foreign {
            return false;
        }
        let range = |s: &Storage| {
            let g = s.read();
            let bytes = g.len() * g.dtype().size();
            (g.is_foreign(), g.data_ptr(), g.data_ptr() + bytes)
        };
        let (fa, a0, a1) = range(self);
        let (fb, b0, b1) = range(other);
        fa && fb && a0 < b1 && b0 < a1
    }

    /// The address of the buffer's first element; stable while the storage lives (NOTE [Foreign
    /// buffers]).
    pub fn data_ptr(&self) -> usize {
        self.read().data_ptr()
    }
}
