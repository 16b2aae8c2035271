//! NumPy arrays to tensors and back (always a copy), including arrays of more dimensions than
//! rust-numpy's typed arrays take. Each NumPy dtype tapegrad has converts to the same dtype; every
//! other one is refused with a `TypeError` naming it.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::error::Error;
use crate::python::gateway::{enter, Cost};
use crate::Tensor;

/// The most dimensions rust-numpy's typed arrays take (it panics past them); NumPy itself and
/// tapegrad allow more, so larger arrays cross the boundary flattened and are reshaped on the
/// other side (NumPy refuses past its own limit, 64, with a `ValueError`).
const RUST_NUMPY_MAX_DIMS: usize = 32;

/// A tensor from a NumPy array of a supported dtype (copied).
pub(crate) fn tensor_from_numpy(arr: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    if ndim > RUST_NUMPY_MAX_DIMS {
        let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
        let flat = tensor_from_numpy(&arr.call_method1("reshape", (-1,))?)?;
        enter(arr.py(), Cost::Metadata, || crate::tensor::layout::checked_numel(&shape))?;
        let layout = crate::tensor::layout::Layout::contiguous(&shape);
        return Ok(Tensor::from_parts(flat.storage().clone(), layout, flat.dtype(), None));
    }
    macro_rules! try_type {
        ($t:ty) => {
            if let Ok(a) = arr.cast::<PyArrayDyn<$t>>() {
                let ro = a.try_readonly().map_err(|e| Error::Value(e.to_string()))?;
                let view = ro.as_array();
                // A broadcast NumPy array can be far larger than its memory (NOTE [Allocations that cannot succeed]).
                let dtype = <$t as crate::tensor::element::Element>::DTYPE;
                enter(arr.py(), Cost::Metadata, || crate::tensor::create::check_alloc(view.shape(), dtype))?;
                return Ok(Tensor::from_array(view.to_owned()));
            }
        };
    }
    try_type!(f32);
    try_type!(f64);
    try_type!(i64);
    try_type!(bool);
    try_type!(i32);
    try_type!(i16);
    try_type!(i8);
    try_type!(u8);
    let dtype = arr.getattr("dtype")?;
    // Never a silent reinterpretation: a non-native byte order is refused (PyTorch refuses it too).
    if !dtype.getattr("isnative")?.extract::<bool>()? {
        return Err(Error::Type(format!(
            "can't convert a NumPy array of dtype {} to a tensor: its byte order is not the machine's; \
             convert it first with arr.astype(arr.dtype.newbyteorder('='))",
            dtype.str()?
        ))
        .into());
    }
    let name: String = dtype.getattr("name")?.extract()?;
    if name == "float16" {
        // rust-numpy has no float16 element without an extra feature: read the bits as uint16.
        let bits = arr.call_method1("view", ("uint16",))?;
        let a = bits.cast::<PyArrayDyn<u16>>()?;
        let ro = a.try_readonly().map_err(|e| Error::Value(e.to_string()))?;
        let view = ro.as_array();
        let dtype = crate::DType::Float16;
        enter(arr.py(), Cost::Metadata, || crate::tensor::create::check_alloc(view.shape(), dtype))?;
        return Ok(Tensor::from_array(view.map(|&b| half::f16::from_bits(b))));
    }
    // Every other dtype (uint16/32/64, float128, complex, object, strings, datetimes...) is refused
    // by name: there is no exact conversion to one of tapegrad's dtypes.
    Err(Error::Type(format!(
        "can't convert a NumPy array of dtype {name} to a tensor: tapegrad has bool, uint8, int8, int16, \
         int32, int64, float16, float32 and float64 (bfloat16 has no NumPy dtype)"
    ))
    .into())
}
/// `dispatch_all!` over the dtypes rust-numpy has elements for (all but the 16-bit floats, which
/// `to_numpy` handles first).
macro_rules! numpy_dtypes {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            crate::DType::Float16 | crate::DType::BFloat16 => unreachable!("handled above"),
            crate::DType::Float32 => {
                type $T = f32;
                $body
            }
            crate::DType::Float64 => {
                type $T = f64;
                $body
            }
            crate::DType::Bool => {
                type $T = bool;
                $body
            }
            other => crate::dispatch_int!(other, $T => $body, _ => unreachable!("an integer dtype")),
        }
    };
}

/// The data as a new NumPy array.
pub(crate) fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let cost = Cost::Elements(t.numel());
    match t.dtype() {
        crate::DType::BFloat16 => {
            return Err(Error::Type(
                "Got unsupported ScalarType BFloat16: NumPy has no bfloat16 dtype; \
                 convert with t.float() first"
                    .into(),
            )
            .into())
        }
        crate::DType::Float16 => {
            // As bits (see tensor_from_numpy), viewed back as float16.
            let bits = enter(py, cost, || t.to_array::<half::f16>())?.mapv(|x| x.to_bits());
            let flat = t.ndim() > RUST_NUMPY_MAX_DIMS;
            let arr = if flat {
                bits.into_raw_vec_and_offset().0.into_pyarray(py).into_any()
            } else {
                bits.into_pyarray(py).into_any()
            };
            let arr = arr.call_method1("view", ("float16",))?;
            return if flat { arr.call_method1("reshape", (PyTuple::new(py, t.shape())?,)) } else { Ok(arr) };
        }
        _ => {}
    }
    if t.ndim() > RUST_NUMPY_MAX_DIMS {
        let flat = numpy_dtypes!(t.dtype(), T => enter(py, cost, || t.to_vec::<T>())?.into_pyarray(py).into_any());
        return flat.call_method1("reshape", (PyTuple::new(py, t.shape())?,));
    }
    Ok(numpy_dtypes!(t.dtype(), T => enter(py, cost, || t.to_array::<T>())?.into_pyarray(py).into_any()))
}
