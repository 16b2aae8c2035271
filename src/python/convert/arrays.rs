//! NumPy arrays to tensors and back (always a copy), including arrays of more dimensions than
//! rust-numpy's typed arrays take and dtypes tapegrad widens exactly or refuses.

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
    let np = arr.py().import("numpy")?;
    let dtype = arr.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
    // Never a silent reinterpretation: a non-native byte order is refused (as PyTorch does), and
    // so are values the target dtype cannot hold.
    if !dtype.getattr("isnative")?.extract::<bool>()? {
        return Err(Error::Type(format!(
            "can't convert a NumPy array of dtype {} to a tensor: its byte order is not the machine's; \
             convert it first with arr.astype(arr.dtype.newbyteorder('='))",
            dtype.str()?
        ))
        .into());
    }
    if kind == "u" && itemsize == 8 {
        let above = arr.rich_compare(i64::MAX as u64, pyo3::basic::CompareOp::Gt)?;
        let too_big = np.call_method1("any", (above,))?.is_truthy()?;
        if too_big {
            return Err(Error::Overflow(
                "can't convert a uint64 array holding values above 2**63 - 1 to a tensor: tapegrad's integer dtype is int64".into()).into());
        }
    }
    if kind == "f" && itemsize > 8 {
        return Err(Error::Type(format!(
            "can't convert an array of dtype {} to a tensor without losing precision: tapegrad has float32 and float64",
            dtype.str()?
        ))
        .into());
    }
    let target = match kind.as_str() {
        // Exact widenings (uint8/int32 to int64, float16 to float32) until tapegrad has those dtypes.
        "i" | "u" => "int64",
        "f" => "float32",
        "b" => "bool",
        _ => {
            return Err(Error::Type(format!(
                "can't convert an array of dtype {} to a tensor: tapegrad has float32, float64, int64 and bool",
                arr.getattr("dtype")?.str()?
            ))
            .into())
        }
    };
    // `asarray`, not `ascontiguousarray`: the latter makes a 0-d array 1-d.
    let kwargs = pyo3::types::PyDict::new(arr.py());
    kwargs.set_item("dtype", target)?;
    kwargs.set_item("order", "C")?;
    let converted = np.call_method("asarray", (arr,), Some(&kwargs))?;
    tensor_from_numpy(&converted)
}

/// The data as a new NumPy array.
pub(crate) fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let cost = Cost::Elements(t.numel());
    if t.ndim() > RUST_NUMPY_MAX_DIMS {
        let flat =
            crate::dispatch_all!(t.dtype(), T => enter(py, cost, || t.to_vec::<T>())?.into_pyarray(py).into_any());
        return flat.call_method1("reshape", (PyTuple::new(py, t.shape())?,));
    }
    Ok(crate::dispatch_all!(t.dtype(), T => enter(py, cost, || t.to_array::<T>())?.into_pyarray(py).into_any()))
}
