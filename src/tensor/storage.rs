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

/// The typed element buffer.
#[derive(Debug, Clone)]
pub enum Buffer {
    /// float32 data
    F32(Vec<f32>),
    /// float64 data
    F64(Vec<f64>),
    /// int64 data
    I64(Vec<i64>),
    /// bool data
    Bool(Vec<bool>),
    /// uint8 data
    U8(Vec<u8>),
    /// int8 data
    I8(Vec<i8>),
    /// int16 data
    I16(Vec<i16>),
    /// int32 data
    I32(Vec<i32>),
    /// float16 data
    F16(Vec<half::f16>),
    /// bfloat16 data
    BF16(Vec<half::bf16>),
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
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::Bool(v) => v.len(),
            Buffer::U8(v) => v.len(),
            Buffer::I8(v) => v.len(),
            Buffer::I16(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::F16(v) => v.len(),
            Buffer::BF16(v) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
}

impl Storage {
    /// Wraps a buffer at version 0.
    pub fn new(buffer: Buffer) -> Self {
        Storage {
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
}
