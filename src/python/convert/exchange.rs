//! Zero-copy exchange with NumPy: `tg.from_numpy` makes a tensor over the array's memory, and
//! `t.numpy()` / `np.asarray(t)` / `t.__array_interface__` give NumPy a view of the tensor's memory.
//! DLPack (`dlpack.rs`) uses the same dtype table and the same foreign buffers.
//!
//! NOTE [Sharing memory with NumPy]: a tensor made by `tg.from_numpy(a)` has a storage whose
//! buffer is `a`'s memory (`Data::Foreign`, NOTE [Foreign buffers]) and whose owner is a strong
//! reference to `a`, so `a`'s memory lives as long as any tensor or view over it. Going the other
//! way, NumPy is handed the tensor's storage through the array interface of a small holder object
//! (`SharedMemory`) that keeps the storage alive; NumPy stores the holder as the array's `base`.
//! We picked `__array_interface__` over the buffer protocol: it is a plain dict (shape, byte
//! strides, type string, address, read-only flag) that NumPy, and the libraries that accept
//! anything NumPy accepts, read directly; it needs no `Py_buffer` bookkeeping or release callback,
//! and it has no dimension limit below NumPy's own (rust-numpy's typed arrays stop at 32).
//! The rules: the storage's address is read under its lock and the lock is released before any
//! Python object is made; a read-only NumPy array gives a read-only storage (in-place writes to
//! its tensors are refused, PyTorch instead warns and lets them write, which is undefined
//! behaviour for memory that is really read-only); an unaligned array, negative strides or strides
//! that are not whole elements are refused (PyTorch refuses the latter two too). Writes made through
//! NumPy do not bump the tensor's version counter (the same in PyTorch).

use std::sync::Arc;

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::tensor::layout::Layout;
use crate::tensor::storage::{Data, ForeignOwner, Storage};
use crate::{DType, Tensor};

/// How one tapegrad dtype crosses the boundary: NumPy's kind and item size, DLPack's type code and
/// bits. NOTE [Adding a dtype] (storage.rs): a new dtype adds its row here, and its arm in
/// `wrap_foreign` (the only place that names the element type).
pub(crate) struct ExchangeDType {
    pub(crate) dtype: DType,
    /// NumPy's `dtype.kind`: `f`, `i`, `u` or `b`.
    pub(crate) kind: u8,
    /// Bytes per element.
    pub(crate) itemsize: usize,
    /// DLPack's `DLDataTypeCode` (0 int, 1 uint, 2 float, 6 bool).
    pub(crate) dl_code: u8,
}

/// The dtypes that are shared without a copy (all of tapegrad's).
pub(crate) const EXCHANGE_DTYPES: &[ExchangeDType] = &[
    ExchangeDType { dtype: DType::Float32, kind: b'f', itemsize: 4, dl_code: 2 },
    ExchangeDType { dtype: DType::Float64, kind: b'f', itemsize: 8, dl_code: 2 },
    ExchangeDType { dtype: DType::Int64, kind: b'i', itemsize: 8, dl_code: 0 },
    ExchangeDType { dtype: DType::Bool, kind: b'b', itemsize: 1, dl_code: 6 },
    ExchangeDType { dtype: DType::UInt8, kind: b'u', itemsize: 1, dl_code: 1 },
    ExchangeDType { dtype: DType::Int8, kind: b'i', itemsize: 1, dl_code: 0 },
    ExchangeDType { dtype: DType::Int16, kind: b'i', itemsize: 2, dl_code: 0 },
    ExchangeDType { dtype: DType::Int32, kind: b'i', itemsize: 4, dl_code: 0 },
    ExchangeDType { dtype: DType::Float16, kind: b'f', itemsize: 2, dl_code: 2 },
    // NumPy has no bfloat16: kind 0 matches no NumPy dtype, and `interface` refuses to describe one
    // (as `numpy()` of a bfloat16 tensor is refused); DLPack has it (code 4, kDLBfloat).
    ExchangeDType { dtype: DType::BFloat16, kind: 0, itemsize: 2, dl_code: 4 },
];

/// The table's row for `dtype`.
pub(crate) fn exchange_dtype(dtype: DType) -> &'static ExchangeDType {
    EXCHANGE_DTYPES.iter().find(|e| e.dtype == dtype).expect("every dtype has an exchange row")
}

/// The names of the dtypes shared without a copy, for error messages.
pub(crate) fn exchange_names() -> String {
    EXCHANGE_DTYPES.iter().map(|e| e.dtype.to_string()).collect::<Vec<_>>().join(", ")
}

/// Elements spanned by a strided region (element strides), or `None` on overflow: 0 when it has no
/// elements, else one past its farthest element.
pub(crate) fn span(shape: &[usize], strides: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut last = 0usize;
    for (&n, &s) in shape.iter().zip(strides) {
        last = last.checked_add((n - 1).checked_mul(s)?)?;
    }
    last.checked_add(1)
}

/// A tensor over foreign memory: `len` elements of `dtype` at `ptr`, laid out by `layout`, kept
/// alive by `owner`. Bool memory is checked to hold only 0 and 1 (any other byte is not a valid
/// `bool` in Rust).
///
/// # Safety
/// `ptr` must be valid for reads (and writes when `writable`) of `len` elements and aligned, and
/// stay so while `owner` lives.
pub(crate) unsafe fn wrap_foreign(
    dtype: DType,
    ptr: *mut u8,
    len: usize,
    writable: bool,
    layout: Layout,
    owner: ForeignOwner,
) -> PyResult<Tensor> {
    if dtype == DType::Bool && len > 0 {
        // SAFETY: the caller's contract, read as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        if bytes.iter().any(|&b| b > 1) {
            return Err(PyValueError::new_err(
                "can't share a bool array whose bytes are not all 0 or 1 (it was written through a view of \
                 another dtype); convert it first with arr.astype(bool)",
            ));
        }
    }
    // SAFETY: the caller's contract, passed on.
    let buffer = unsafe { crate::dispatch_all!(dtype, T => foreign_buffer::<T>(ptr, len, writable, owner)) };
    Ok(Tensor::from_parts(Arc::new(Storage::new(buffer)), layout, dtype, None))
}

/// A buffer of `T` over foreign memory.
///
/// # Safety
/// As `Data::foreign`.
unsafe fn foreign_buffer<T: crate::tensor::element::Element>(
    ptr: *mut u8,
    len: usize,
    writable: bool,
    owner: ForeignOwner,
) -> crate::tensor::storage::Buffer {
    // SAFETY: the caller's contract.
    T::data_buffer(unsafe { Data::foreign(ptr as *mut T, len, writable, owner) })
}

/// `tg.from_numpy(a)`: a tensor sharing `a`'s memory (NOTE [Sharing memory with NumPy]).
pub(crate) fn share_numpy(arr: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let py = arr.py();
    let a = arr.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            arr.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let descr = a.dtype();
    if descr.is_native_byteorder() == Some(false) {
        return Err(PyTypeError::new_err(format!(
            "can't convert a NumPy array of dtype {} to a tensor: its byte order is not the machine's; \
             convert it first with arr.astype(arr.dtype.newbyteorder('='))",
            descr.str()?
        )));
    }
    let (kind, itemsize) = (descr.kind(), descr.itemsize());
    let row = EXCHANGE_DTYPES
        .iter()
        .find(|e| e.kind == kind && e.itemsize == itemsize && !descr.has_fields() && !descr.has_subarray())
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "can't share the memory of a NumPy array of dtype {}: tapegrad's dtypes are {}; \
                 tg.tensor(arr) copies it into one of them",
                descr.str().map(|s| s.to_string()).unwrap_or_default(),
                exchange_names()
            ))
        })?;
    let shape = a.shape().to_vec();
    let mut strides = Vec::with_capacity(shape.len());
    for &s in a.strides() {
        if s < 0 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are \
                 not supported. (Make a copy of the array with array.copy() first.)",
            ));
        }
        if !(s as usize).is_multiple_of(itemsize) {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to \
                 reallocate the memory.",
            ));
        }
        strides.push(s as usize / itemsize);
    }
    let len = span(&shape, &strides).ok_or_else(|| PyValueError::new_err("the array's extent overflows"))?;
    crate::tensor::layout::checked_numel(&shape)?;
    // SAFETY: `a` is a live ndarray; its object header is read, not written.
    let (data, flags) = unsafe {
        let p = a.as_array_ptr();
        ((*p).fields.data as *mut u8, (*p).fields.flags)
    };
    if len > 0 && !a.is_aligned() {
        return Err(PyValueError::new_err(
            "can't share the memory of an unaligned NumPy array (its address or strides are not a multiple of \
             the element size); copy it first with arr.copy()",
        ));
    }
    let writable = flags & numpy::npyffi::flags::NPY_ARRAY_WRITEABLE != 0;
    if !writable {
        let warnings = py.import("warnings")?;
        warnings.call_method1(
            "warn",
            (
                "The given NumPy array is not writable: the tensor shares its memory and is read-only too \
                 (writing to it in place raises). Copy the array (or make it writable) before converting it \
                 if the tensor must be written.",
                py.get_type::<pyo3::exceptions::PyUserWarning>(),
                1,
            ),
        )?;
    }
    let layout = Layout { shape: shape.into(), strides: strides.into(), offset: 0 };
    let owner: ForeignOwner = Box::new(arr.clone().unbind());
    // SAFETY: NumPy keeps `len` elements (the array's extent) valid at `data` while the array, which
    // the owner holds, lives; the dtype and alignment were checked above.
    unsafe { wrap_foreign(row.dtype, data, len, writable, layout, owner) }
}

/// Holds a storage for NumPy: the `base` of every array `t.numpy()` returns (NOTE [Sharing memory
/// with NumPy]). Its interface is rebuilt at each read from fields no Python code can change, so a
/// caller that edits the dict it got cannot point a later array at other memory.
#[pyclass(name = "_SharedMemory", module = "tapegrad._tapegrad", frozen)]
pub(crate) struct SharedMemory {
    _storage: Arc<Storage>,
    interface: Interface,
}

/// The fields of an array interface.
struct Interface {
    addr: usize,
    shape: Vec<usize>,
    /// In bytes.
    strides: Vec<usize>,
    typestr: String,
    read_only: bool,
}

impl Interface {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", &self.typestr)?;
        d.set_item("data", (self.addr, self.read_only))?;
        d.set_item("strides", PyTuple::new(py, &self.strides)?)?;
        Ok(d)
    }
}

#[pymethods]
impl SharedMemory {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.interface.to_dict(py)
    }
}

/// NumPy's type string for a dtype (native byte order).
fn typestr(row: &ExchangeDType) -> String {
    let order = if row.itemsize == 1 {
        '|'
    } else if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    format!("{order}{}{}", row.kind as char, row.itemsize)
}

/// `t`'s array interface: its memory, shape and byte strides, and whether it is read-only.
fn interface(t: &Tensor) -> PyResult<Interface> {
    if t.dtype() == DType::BFloat16 {
        return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16"));
    }
    let row = exchange_dtype(t.dtype());
    let l = t.layout();
    // Read under the storage's lock, which is released before any Python object is made.
    let (base, len, writable) = {
        let guard = t.storage().read();
        (guard.data_ptr(), guard.len(), guard.is_writable())
    };
    if l.numel() > 0 && l.storage_extent() > len {
        return Err(PyRuntimeError::new_err("tensor layout reaches past the end of its storage"));
    }
    Ok(Interface {
        addr: if l.numel() == 0 { base } else { base + l.offset * row.itemsize },
        shape: l.shape.to_vec(),
        strides: l.strides.iter().map(|s| s * row.itemsize).collect(),
        typestr: typestr(row),
        read_only: !writable,
    })
}

/// `t.__array_interface__`.
pub(crate) fn array_interface<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyDict>> {
    interface(t)?.to_dict(py)
}

/// NumPy's descriptor of a dtype that NumPy has (`interface` has refused bfloat16 already).
fn numpy_descr(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, numpy::PyArrayDescr>> {
    use numpy::Element;
    Ok(match dtype {
        DType::Float32 => f32::get_dtype(py),
        DType::Float64 => f64::get_dtype(py),
        DType::Int64 => i64::get_dtype(py),
        DType::Int32 => i32::get_dtype(py),
        DType::Int16 => i16::get_dtype(py),
        DType::Int8 => i8::get_dtype(py),
        DType::UInt8 => u8::get_dtype(py),
        DType::Bool => bool::get_dtype(py),
        DType::Float16 => {
            let api = &numpy::npyffi::PY_ARRAY_API;
            // SAFETY: NPY_HALF is a built-in type number; a new reference comes back (or NULL with an error set).
            let d = unsafe { api.PyArray_DescrFromType(py, numpy::npyffi::NPY_TYPES::NPY_HALF as std::ffi::c_int) };
            if d.is_null() {
                return Err(PyErr::fetch(py));
            }
            // SAFETY: a new, non-null reference to an array descriptor.
            unsafe { Bound::from_owned_ptr(py, d.cast::<pyo3::ffi::PyObject>()).cast_into_unchecked() }
        }
        DType::BFloat16 => return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16")),
    })
}

/// A NumPy array over `t`'s memory (no copy); its `base` is a `_SharedMemory` that keeps the storage
/// alive. Made with NumPy's C API (`PyArray_NewFromDescr` over the tensor's pointer, shape and byte
/// strides): going through `numpy.asarray` and the holder's `__array_interface__` dict took about
/// twice as long (2.0 µs against PyTorch's 0.9 µs for a 3-element tensor).
pub(crate) fn share_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    use numpy::npyffi::{flags::NPY_ARRAY_WRITEABLE, NpyTypes, PY_ARRAY_API};
    let interface = interface(t)?;
    let descr = numpy_descr(py, t.dtype())?;
    let mut dims: Vec<numpy::npyffi::npy_intp> = interface.shape.iter().map(|&d| d as _).collect();
    let mut strides: Vec<numpy::npyffi::npy_intp> = interface.strides.iter().map(|&s| s as _).collect();
    let (addr, flags) = (interface.addr, if interface.read_only { 0 } else { NPY_ARRAY_WRITEABLE });
    let holder = Bound::new(py, SharedMemory { _storage: t.storage().clone(), interface })?;
    // SAFETY: `addr` with `dims` and byte `strides` stays inside the storage (`interface` checked the
    // extent), which the holder, set as the array's base below, keeps alive as long as the array.
    // NewFromDescr steals the descriptor; SetBaseObject steals the holder (on failure too).
    unsafe {
        let subtype = numpy::npyffi::get_type_object(py, NpyTypes::PyArray_Type);
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            descr.into_ptr().cast(),
            dims.len() as std::ffi::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            addr as *mut std::ffi::c_void,
            flags,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr().cast(), holder.into_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}
