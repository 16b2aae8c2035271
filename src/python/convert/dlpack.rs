//! DLPack: `t.__dlpack__()`, `t.__dlpack_device__()` and `tg.from_dlpack(obj)`, without copies.
//!
//! NOTE [DLPack]: DLPack is a small, stable C ABI (`dlpack.h`): a `DLTensor` (address, device,
//! dtype, shape, strides in elements, byte offset) inside a managed struct with a deleter, passed
//! in a `PyCapsule` named `dltensor` (DLPack 0.x, `DLManagedTensor`) or `dltensor_versioned`
//! (DLPack 1.x, `DLManagedTensorVersioned`, which adds a version and flags such as read-only).
//! The structs are written out below rather than taken from a crate: they are a few plain
//! `#[repr(C)]` structs, and the crates we found (none in the build's dependency set) would add
//! a dependency for them alone.
//! Export: the managed struct is boxed together with a strong reference to the tensor's storage
//! and its shape/strides arrays; the deleter frees the box on any thread: holding the GIL, the
//! release of a foreign owner is immediate (`drop_export`); without it, deferred to PyO3's next
//! attach (NOTE [Foreign buffers]), never a wait for the GIL.
//! The capsule's own destructor calls the deleter only while the capsule is unconsumed (its name
//! unchanged), as the protocol asks. `max_version >= (1, 0)` gets a versioned capsule (read-only
//! storages set the read-only flag); older consumers get the 0.x capsule, which a read-only storage
//! refuses (it cannot say "read-only").
//! Import: the capsule is checked (name, CPU device, dtype, non-negative strides, alignment)
//! *before* it is consumed, so a refused capsule stays the producer's to free; then it is renamed
//! `used_dltensor[_versioned]` and the managed struct's deleter is moved into a capsule of our
//! own (its destructor calls the deleter), which becomes the storage's foreign owner. That capsule
//! is a Python object, so when the last tensor dies on a thread not attached to Python its
//! release waits for the next attach (PyO3's reference pool): the producer's deleter (NumPy's takes
//! the GIL) always runs attached, and never under a tensor's lock.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::exchange::{exchange_dtype, exchange_names, span, wrap_foreign, EXCHANGE_DTYPES};
use crate::tensor::layout::Layout;
use crate::tensor::storage::{ForeignOwner, Storage};
use crate::Tensor;

/// `kDLCPU`.
pub(crate) const DL_CPU: i32 = 1;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 1 << 1;

const NAME_LEGACY: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What an exported capsule keeps alive.
struct Keep {
    _storage: Arc<Storage>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// The boxes behind exported pointers: the managed struct first, so a pointer to it is a pointer
/// to the box.
#[repr(C)]
struct ExportLegacy {
    managed: DLManagedTensor,
    keep: Keep,
}

#[repr(C)]
struct ExportVersioned {
    managed: DLManagedTensorVersioned,
    keep: Keep,
}

/// Drops an export's box. A consumer usually calls the deleter holding the GIL (NumPy does, from
/// its array's deallocation) but outside any PyO3 call, where PyO3 would defer the release of a
/// foreign owner to its next attach; when this thread holds the GIL the drop runs attached, so the
/// release is immediate. Without the GIL it is deferred (never a wait for the GIL).
fn drop_export<T>(value: T) {
    // SAFETY: both calls only read the interpreter's and this thread's state.
    let holds_gil = unsafe { ffi::Py_IsInitialized() != 0 && ffi::PyGILState_Check() == 1 };
    if holds_gil {
        Python::attach(|_| drop(value));
    } else {
        drop(value);
    }
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if !p.is_null() {
        // SAFETY: `p` came from `Box::into_raw` of an `ExportLegacy` (its first field) and the
        // protocol calls the deleter once.
        drop_export(unsafe { Box::from_raw(p as *mut ExportLegacy) });
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if !p.is_null() {
        // SAFETY: as `delete_legacy`.
        drop_export(unsafe { Box::from_raw(p as *mut ExportVersioned) });
    }
}

/// The destructor of an exported capsule: frees the managed struct unless a consumer took it.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL on a capsule we made; `IsValid` sets no error.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME_VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            delete_versioned(p);
        } else if ffi::PyCapsule_IsValid(capsule, NAME_LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, NAME_LEGACY.as_ptr()) as *mut DLManagedTensor;
            delete_legacy(p);
        }
    }
}

/// `t.__dlpack__(...)`: a capsule over `t`'s memory (a copy's, when `copy` is true).
pub(crate) fn export(
    py: Python<'_>,
    t: &Tensor,
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Py<PyAny>> {
    if stream.is_some_and(|s| !s.is_none()) {
        return Err(PyBufferError::new_err("stream must be None for a CPU tensor"));
    }
    if let Some((dev, id)) = dl_device {
        if (dev, id) != (DL_CPU, 0) {
            return Err(PyBufferError::new_err(format!(
                "can't export to DLPack device ({dev}, {id}): tapegrad tensors live on the CPU, (1, 0)"
            )));
        }
    }
    if t.requires_grad() && crate::autograd::grad_mode::is_grad_enabled() {
        return Err(PyBufferError::new_err("Can't export tensors that require gradient, use tensor.detach()"));
    }
    let copied = copy == Some(true);
    let t = if copied {
        crate::python::gateway::enter(py, crate::python::gateway::Cost::Elements(t.numel()), || t.clone_data())?
    } else {
        t.detach()
    };
    let row = exchange_dtype(t.dtype());
    let l = t.layout().clone();
    let (base, len, writable) = {
        let guard = t.storage().read();
        (guard.data_ptr(), guard.len(), guard.is_writable())
    };
    if l.numel() > 0 && l.storage_extent() > len {
        return Err(PyRuntimeError::new_err("tensor layout reaches past the end of its storage"));
    }
    let data = if l.numel() == 0 { base } else { base + l.offset * row.itemsize } as *mut c_void;
    let versioned = max_version.is_some_and(|(major, _)| major >= 1);
    if !versioned && !writable {
        return Err(PyBufferError::new_err(
            "can't export a read-only tensor as a DLPack 0.x capsule, which can't mark it read-only; \
             the consumer must ask for DLPack 1.0 (max_version=(1, 0))",
        ));
    }
    let mut keep = Keep {
        _storage: t.storage().clone(),
        shape: l.shape.iter().map(|&n| n as i64).collect(),
        strides: l.strides.iter().map(|&s| s as i64).collect(),
    };
    let dl_tensor = DLTensor {
        data,
        device: DLDevice { device_type: DL_CPU, device_id: 0 },
        ndim: l.ndim() as i32,
        dtype: DLDataType { code: row.dl_code, bits: (row.itemsize * 8) as u8, lanes: 1 },
        shape: keep.shape.as_mut_ptr(),
        strides: keep.strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // The boxed vectors' heap buffers do not move when `keep` moves into the box.
    let (ptr, name) = if versioned {
        let flags = if writable { 0 } else { FLAG_READ_ONLY } | if copied { FLAG_IS_COPIED } else { 0 };
        let b = Box::new(ExportVersioned {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags,
                dl_tensor,
            },
            keep,
        });
        (Box::into_raw(b) as *mut c_void, NAME_VERSIONED)
    } else {
        let b = Box::new(ExportLegacy {
            managed: DLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_legacy) },
            keep,
        });
        (Box::into_raw(b) as *mut c_void, NAME_LEGACY)
    };
    // SAFETY: a valid pointer and a static name; on failure the box is freed here.
    unsafe {
        let capsule = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
        if capsule.is_null() {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, capsule).unbind())
    }
}

/// `tg.from_dlpack(obj)`: `obj` is a DLPack capsule or has `__dlpack__`.
pub(crate) fn import(py: Python<'_>, obj: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<Tensor> {
    let capsule = if obj.is_instance_of::<PyCapsule>() {
        obj.clone()
    } else if obj.hasattr("__dlpack__")? {
        if obj.hasattr("__dlpack_device__")? {
            let device = obj.call_method0("__dlpack_device__")?;
            let (dev, id): (i32, i32) = device.extract().map_err(|_| {
                PyTypeError::new_err("__dlpack_device__() must return a (device_type, device_id) pair of ints")
            })?;
            if dev != DL_CPU {
                return Err(PyBufferError::new_err(format!(
                    "tg.from_dlpack: the object lives on DLPack device ({dev}, {id}); tapegrad reads CPU memory only \
                     (device type 1)"
                )));
            }
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("max_version", (1, 0))?;
        if let Some(c) = copy {
            kwargs.set_item("copy", c)?;
        }
        match obj.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(c) => c,
            // A producer from before DLPack 1.0 takes no keywords.
            Err(e) if e.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
            Err(e) => return Err(e),
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "tg.from_dlpack expects an object with __dlpack__ or a DLPack capsule, got {}",
            obj.get_type().name()?
        )));
    };
    let t = consume(py, &capsule)?;
    if copy == Some(true) {
        return crate::python::gateway::enter(py, crate::python::gateway::Cost::Elements(t.numel()), || t.clone_data());
    }
    Ok(t)
}

/// The part of a capsule's tensor that is checked before consuming it.
struct Checked {
    dtype: crate::DType,
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

/// Checks a `DLTensor` and works out its region.
///
/// # Safety
/// `t` points to a live `DLTensor` whose shape (and strides, if not null) arrays hold `ndim` entries.
unsafe fn check_tensor(t: &DLTensor) -> PyResult<Checked> {
    if t.device.device_type != DL_CPU {
        return Err(PyBufferError::new_err(format!(
            "tg.from_dlpack: the tensor lives on DLPack device ({}, {}); tapegrad reads CPU memory only",
            t.device.device_type, t.device.device_id
        )));
    }
    let row = EXCHANGE_DTYPES
        .iter()
        .find(|e| e.dl_code == t.dtype.code && e.itemsize * 8 == t.dtype.bits as usize && t.dtype.lanes == 1)
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "tg.from_dlpack: unsupported DLPack dtype (code {}, bits {}, lanes {}); tapegrad's dtypes are {}",
                t.dtype.code,
                t.dtype.bits,
                t.dtype.lanes,
                exchange_names()
            ))
        })?;
    if t.ndim < 0 || (t.ndim > 0 && t.shape.is_null()) {
        return Err(PyBufferError::new_err("tg.from_dlpack: the capsule's tensor has an invalid shape"));
    }
    let ndim = t.ndim as usize;
    // SAFETY: the caller's contract.
    let shape_i: &[i64] = if ndim == 0 { &[] } else { unsafe { std::slice::from_raw_parts(t.shape, ndim) } };
    let mut shape = Vec::with_capacity(ndim);
    for &n in shape_i {
        if n < 0 {
            return Err(PyBufferError::new_err("tg.from_dlpack: the capsule's tensor has a negative size"));
        }
        shape.push(n as usize);
    }
    let strides = if t.strides.is_null() || ndim == 0 {
        crate::tensor::layout::contiguous_strides(&shape)
    } else {
        // SAFETY: the caller's contract.
        let s: &[i64] = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        if s.iter().zip(&shape).any(|(&st, &n)| st < 0 && n > 1) {
            return Err(PyBufferError::new_err(
                "tg.from_dlpack: tensors with negative strides are not supported; copy the source first",
            ));
        }
        s.iter().map(|&st| st.max(0) as usize).collect()
    };
    crate::tensor::layout::checked_numel(&shape)?;
    let len = span(&shape, &strides)
        .filter(|&n| n.checked_mul(row.itemsize).is_some_and(|b| b <= isize::MAX as usize))
        .ok_or_else(|| PyBufferError::new_err("tg.from_dlpack: the tensor's extent overflows"))?;
    let ptr = (t.data as *mut u8).wrapping_add(t.byte_offset as usize);
    if len > 0 && (t.data.is_null() || !(ptr as usize).is_multiple_of(row.itemsize)) {
        return Err(PyBufferError::new_err(
            "tg.from_dlpack: the tensor's address is null or not aligned to its element size",
        ));
    }
    Ok(Checked { dtype: row.dtype, ptr, len, layout: Layout { shape: shape.into(), strides, offset: 0 } })
}

/// Consumes a capsule (see NOTE [DLPack]).
fn consume(py: Python<'_>, capsule: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let cap = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__dlpack__() returned {}, not a capsule",
            capsule.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let raw = cap.as_ptr();
    // SAFETY: `raw` is a live capsule; `IsValid` sets no error.
    let (versioned, legacy) = unsafe {
        (
            ffi::PyCapsule_IsValid(raw, NAME_VERSIONED.as_ptr()) == 1,
            ffi::PyCapsule_IsValid(raw, NAME_LEGACY.as_ptr()) == 1,
        )
    };
    if !versioned && !legacy {
        // SAFETY: as above; a null name reads as "unnamed".
        let name = unsafe {
            let n = ffi::PyCapsule_GetName(raw);
            if n.is_null() {
                ffi::PyErr_Clear();
                String::new()
            } else {
                CStr::from_ptr(n).to_string_lossy().into_owned()
            }
        };
        return Err(if name.starts_with("used_") {
            PyRuntimeError::new_err(
                "tg.from_dlpack: this DLPack capsule was already consumed (a capsule can make one tensor only)",
            )
        } else {
            PyTypeError::new_err(format!("tg.from_dlpack: not a DLPack capsule (its name is {name:?})"))
        });
    }
    let name = if versioned { NAME_VERSIONED } else { NAME_LEGACY };
    // SAFETY: the name was just checked.
    let managed = unsafe { ffi::PyCapsule_GetPointer(raw, name.as_ptr()) };
    if managed.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: the capsule's name promises the struct behind the pointer; it is only
    // read until the capsule is renamed, after which it is ours to delete.
    let (checked, writable) = unsafe {
        if versioned {
            let m = &*(managed as *const DLManagedTensorVersioned);
            if m.version.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "tg.from_dlpack: DLPack version {}.{} is not supported (tapegrad reads 1.x)",
                    m.version.major, m.version.minor
                )));
            }
            (check_tensor(&m.dl_tensor)?, m.flags & FLAG_READ_ONLY == 0)
        } else {
            let m = &*(managed as *const DLManagedTensor);
            (check_tensor(&m.dl_tensor)?, true)
        }
    };
    let used = if versioned { USED_VERSIONED } else { USED_LEGACY };
    // SAFETY: a live capsule and a static name. From here on the struct is ours to delete.
    if unsafe { ffi::PyCapsule_SetName(raw, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let addr = managed as usize;
    // SAFETY: the struct is ours since the rename, and this runs once (by the owner capsule's
    // destructor, or below if that capsule could not be made).
    let delete = move |addr: usize| unsafe {
        if versioned {
            let m = addr as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        } else {
            let m = addr as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    };
    // The owner: a capsule whose destructor runs the producer's deleter (NOTE [DLPack]).
    let owner_capsule =
        match PyCapsule::new_with_value_and_destructor(py, addr, c"tapegrad.dlpack_owner", move |addr: usize, _ctx| {
            delete(addr)
        }) {
            Ok(c) => c,
            Err(e) => {
                delete(addr);
                return Err(e);
            }
        };
    let owner: ForeignOwner = Box::new(owner_capsule.into_any().unbind());
    // SAFETY: the producer keeps the memory valid until its deleter runs, which the owner does
    // when the storage goes; dtype, extent and alignment were checked.
    unsafe { wrap_foreign(checked.dtype, checked.ptr, checked.len, writable, checked.layout, owner) }
}

/// `(1, 0)`: CPU, device 0.
pub(crate) fn device(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, [DL_CPU, 0])
}
