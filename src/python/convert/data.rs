//! `tg.tensor(data)`: a tensor from Python data (numbers, nested lists and tuples, NumPy arrays
//! and scalars, tensors), with PyTorch's dtype inference and its refusal of ints past int64.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

use super::{scalar, tensor_from_numpy};
use crate::error::Error;
use crate::python::gateway::{enter, Cost};
use crate::python::tensor::PyTensor;
use crate::tensor::dtype::{DType, Scalar};
use crate::Tensor;

/// Refuses Python numbers in `[lo, hi]` that an integer dtype `d` cannot hold, as PyTorch's
/// `tensor(..., dtype=...)` does; a uint8 takes negative integers down to -255, which wrap (PyTorch
/// allows that for unsigned types).
fn check_fits(lo: f64, hi: f64, float: bool, d: DType) -> PyResult<()> {
    let (min, max) = match d {
        DType::UInt8 => (0.0, 255.0),
        DType::Int8 => (-128.0, 127.0),
        DType::Int16 => (-32768.0, 32767.0),
        DType::Int32 => (-2147483648.0, 2147483647.0),
        _ => return Ok(()),
    };
    let min = if d == DType::UInt8 && !float { -max } else { min };
    if lo < min || hi > max {
        return Err(Error::Dtype(format!("value cannot be converted to type {} without overflow", d.name())).into());
    }
    Ok(())
}

/// `tg.tensor(data)`: Python floats become float32, ints int64, bools bool; arrays keep their dtype.
pub(crate) fn tensor_from_data(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let py = data.py();
    let t = if let Ok(t) = data.cast::<PyTensor>() {
        let t = &t.get().inner;
        enter(py, Cost::Elements(t.numel()), || t.clone_data())?
    } else if data.is_instance_of::<PyInt>() && !data.is_instance_of::<PyBool>() && data.extract::<i64>().is_err() {
        return Err(int_overflow(data)?);
    } else if let Some(s) = scalar(data).filter(|_| !data.hasattr("shape").unwrap_or(false)) {
        // Made directly in a requested float dtype: going through float32 first would round
        // `tensor(1e-300, dtype=float64)` to 0.
        let direct = dtype.filter(|d| d.is_float() || !s.natural_dtype().is_float());
        if let Some(d) = dtype {
            check_fits(s.as_f64(), s.as_f64(), matches!(s, Scalar::Float(_)), d)?;
        }
        enter(py, Cost::Metadata, || Tensor::scalar_tensor(s, direct.unwrap_or(s.natural_dtype())))?
    } else {
        let np = py.import("numpy")?;
        // NumPy scalars keep their dtype too, as in PyTorch: np.float64(x) gives a float64 tensor.
        let is_array = data.is_instance(&np.getattr("ndarray")?)? || data.is_instance(&np.getattr("generic")?)?;
        let arr = np.call_method1("asarray", (data,))?;
        let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
        // NumPy makes Python ints past int64 uint64, float64 or object; PyTorch refuses them,
        // unless a float among the data makes the whole float.
        if !is_array && matches!(kind.as_str(), "u" | "f" | "O") {
            let big = kind == "O" || {
                let magnitude = np.call_method1("abs", (&arr,))?;
                let above = magnitude.rich_compare(9.2e18, pyo3::basic::CompareOp::Ge)?;
                np.call_method1("any", (above,))?.is_truthy()?
            };
            if big {
                let mut scan = IntScan::default();
                scan.visit(data, 0)?;
                if let (Some(v), false) = (scan.big, scan.float) {
                    return Err(int_overflow(&v)?);
                }
            }
        }
        // Ints past int64 beside a float: NumPy keeps objects, PyTorch makes them all float.
        let (arr, kind) = if !is_array && kind == "O" && {
            let mut scan = IntScan::default();
            scan.visit(data, 0)?;
            scan.float
        } {
            (np.call_method1("asarray", (data, "float64"))?, "f".to_string())
        } else {
            (arr, kind)
        };
        // Python floats default to float32, unless a dtype was asked for: then they are converted
        // once, straight from float64 (so `tensor([1e-300], dtype=float64)` keeps its value).
        let arr = match dtype {
            // (NumPy has no bfloat16: float32 first, as PyTorch converts a Python float.)
            Some(d) if !is_array && d.is_float() && kind != "O" && kind != "U" && kind != "S" => {
                arr.call_method1("astype", (if d == DType::BFloat16 { "float32" } else { d.name() },))?
            }
            // Python numbers into an integer dtype must fit it, as in PyTorch (a NumPy array or a
            // tensor is cast instead, wrapping).
            Some(d) if !is_array && d.is_int() && matches!(kind.as_str(), "i" | "f" | "b") => {
                if arr.getattr("size")?.extract::<usize>()? > 0 {
                    let lo: f64 = np.call_method1("min", (&arr,))?.extract()?;
                    let hi: f64 = np.call_method1("max", (&arr,))?.extract()?;
                    check_fits(lo, hi, kind == "f", d)?;
                }
                arr
            }
            None if !is_array && kind == "f" => {
                arr.call_method1("astype", (crate::tensor::default_dtype::default_float().name(),))?
            }
            _ => arr,
        };
        if kind == "O" || kind == "U" || kind == "S" {
            return Err(Error::Type(format!(
                "tensor(): could not infer a dtype from an object of type {}: expected numbers, nested lists of numbers, or a NumPy array",
                data.get_type().name()?
            )).into());
        }
        tensor_from_numpy(&arr)?
    };
    match dtype {
        Some(d) if d != t.dtype() => enter(py, Cost::Elements(t.numel()), || t.to_dtype(d)),
        _ => Ok(t),
    }
}

/// What nested lists and tuples of Python numbers hold: the first int outside int64 (bools are
/// ints in Python, and always fit), and whether there is a float (which makes the data float).
#[derive(Default)]
struct IntScan<'py> {
    big: Option<Bound<'py, PyAny>>,
    float: bool,
}

impl<'py> IntScan<'py> {
    fn visit(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        if obj.is_instance_of::<PyFloat>() {
            self.float = true;
        } else if obj.is_instance_of::<PyInt>() {
            if self.big.is_none() && !obj.is_instance_of::<PyBool>() && obj.extract::<i64>().is_err() {
                self.big = Some(obj.clone());
            }
        } else if depth < 64 && (obj.is_instance_of::<pyo3::types::PyList>() || obj.is_instance_of::<PyTuple>()) {
            for item in obj.try_iter()? {
                self.visit(&item?, depth + 1)?;
            }
        }
        Ok(())
    }
}

fn int_overflow(v: &Bound<'_, PyAny>) -> PyResult<PyErr> {
    Ok(PyErr::from(Error::Overflow(format!(
        "value {} cannot be converted to a tensor: it is outside int64 (tapegrad's integer dtype)",
        v.str()?
    ))))
}
