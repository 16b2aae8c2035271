//! Conversions between Python values and the core's types: dtypes, devices, shapes, scalars,
//! NumPy arrays; and the factory functions that only convert and call the core.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

use super::gateway::{enter, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::tensor::dtype::{DType, Scalar};
use crate::Tensor;

/// `tapegrad.float32` and friends. One instance per dtype, so `t.dtype is tg.float32` holds.
#[pyclass(name = "dtype", module = "tapegrad", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct PyDType {
    pub(crate) dt: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("tapegrad.{}", self.dt.name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dt.is_float()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.dt.size()
    }
    #[getter]
    fn name(&self) -> &'static str {
        self.dt.name()
    }
}

static DTYPES: PyOnceLock<[Py<PyDType>; 4]> = PyOnceLock::new();

/// The shared Python object for a dtype.
pub(crate) fn dtype_object(py: Python<'_>, dt: DType) -> Py<PyDType> {
    let all = DTYPES.get_or_init(py, || {
        [DType::Bool, DType::Int64, DType::Float32, DType::Float64]
            .map(|dt| Py::new(py, PyDType { dt }).expect("creating a dtype object"))
    });
    all[dt as usize].clone_ref(py)
}

/// Reads a dtype argument: a `tg.dtype`, a NumPy dtype or type, or a name.
pub(crate) fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().dt);
    }
    let name: String = if let Ok(s) = obj.extract::<String>() {
        s
    } else if obj.is(obj.py().get_type::<PyFloat>()) {
        "float32".into()
    } else if obj.is(obj.py().get_type::<PyBool>()) {
        "bool".into()
    } else if obj.is(obj.py().get_type::<PyInt>()) {
        "int64".into()
    } else {
        let np = obj.py().import("numpy")?;
        np.call_method1("dtype", (obj,))?.getattr("name")?.extract()?
    };
    DType::from_name(&name).ok_or_else(|| {
        PyErr::from(Error::Type(format!("unsupported dtype {name:?}: tapegrad has float32, float64, int64 and bool")))
    })
}

/// `tapegrad.device`: only the CPU exists.
#[pyclass(name = "device", module = "tapegrad", frozen, eq)]
#[derive(PartialEq)]
pub struct PyDevice {}

#[pymethods]
impl PyDevice {
    #[new]
    fn new(kind: &Bound<'_, PyAny>) -> PyResult<Self> {
        check_device(Some(kind))?;
        Ok(PyDevice {})
    }
    #[getter]
    fn r#type(&self) -> &'static str {
        "cpu"
    }
    fn __repr__(&self) -> &'static str {
        "device(type='cpu')"
    }
    fn __str__(&self) -> &'static str {
        "cpu"
    }
}

/// Accepts `None`, `"cpu"`, `"cpu:0"` or a `tg.device`; anything else is a `RuntimeError` at once.
pub(crate) fn check_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(d) = device else { return Ok(()) };
    if d.is_none() || d.cast::<PyDevice>().is_ok() {
        return Ok(());
    }
    let s: String = d.str()?.extract()?;
    if s == "cpu" || s == "cpu:0" {
        return Ok(());
    }
    Err(Error::Value(format!(
        "device {s:?} is not available: tapegrad runs on the CPU only (tapegrad.cuda_is_available() is False)"
    ))
    .into())
}

/// A Python scalar (bool before int: `True` is an int in Python).
pub(crate) fn scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    // NumPy scalars and 0-d arrays.
    let ty = obj.get_type().name().ok()?.to_string();
    if ty.starts_with("float") {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if ty.starts_with("int") || ty.starts_with("uint") {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if ty == "bool" || ty == "bool_" {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    None
}

/// An operand: a tensor or a scalar.
pub(crate) enum Operand {
    Tensor(Tensor),
    Scalar(Scalar),
}

/// Reads an operand; `None` when the object is neither (the dunder then returns NotImplemented).
pub(crate) fn operand(obj: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(Operand::Tensor(t.get().inner.clone()));
    }
    if let Some(s) = scalar(obj) {
        return Some(Operand::Scalar(s));
    }
    if obj.hasattr("__array__").unwrap_or(false) || obj.is_instance_of::<pyo3::types::PyList>() {
        return tensor_from_data(obj, None).ok().map(Operand::Tensor);
    }
    None
}

/// Reads a tensor argument, accepting scalars and array-likes as well (as PyTorch ops do).
pub(crate) fn tensor_arg(obj: &Bound<'_, PyAny>, like: Option<DType>) -> PyResult<Tensor> {
    match operand(obj) {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => {
            let dtype = like.map(|d| s.result_dtype_with(d)).unwrap_or(s.natural_dtype());
            enter(obj.py(), Cost::Metadata, || Tensor::scalar_tensor(s, dtype))
        }
        None => {
            Err(Error::Type(format!("expected a Tensor, a number or an array-like, got {}", obj.get_type().name()?))
                .into())
        }
    }
}

/// Shape arguments: `f(2, 3)`, `f((2, 3))` or `f([2, 3])`.
pub(crate) fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    let seq = if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
        args.get_item(0)?
    } else {
        args.clone().into_any()
    };
    let mut out = Vec::new();
    for item in seq.try_iter()? {
        let item = item?;
        if item.is_instance_of::<PyBool>() || !item.hasattr("__index__")? {
            return Err(Error::Type(format!("shape entries must be ints, got {}", item.get_type().name()?)).into());
        }
        out.push(item.call_method0("__index__")?.extract::<isize>()?);
    }
    Ok(out)
}

/// Non-negative sizes for factories.
pub(crate) fn sizes(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    shape_args(args)?
        .into_iter()
        .map(|d| {
            usize::try_from(d)
                .map_err(|_| PyErr::from(Error::Value(format!("Trying to create tensor with negative dimension {d}"))))
        })
        .collect()
}

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
            Some(d) if !is_array && kind != "O" && kind != "U" && kind != "S" => {
                arr.call_method1("astype", (d.name(),))?
            }
            None if !is_array && kind == "f" => arr.call_method1("astype", ("float32",))?,
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

fn opt_dtype(dtype: Option<&Bound<'_, PyAny>>, default: DType) -> PyResult<DType> {
    match dtype {
        Some(d) if !d.is_none() => parse_dtype(d),
        _ => Ok(default),
    }
}

/// Makes a factory's tensor through the gateway, then marks it as requiring grad if asked.
fn finish(
    py: Python<'_>,
    cost: Cost,
    requires_grad: bool,
    make: impl FnOnce() -> crate::Result<Tensor> + Send,
) -> PyResult<Py<PyTensor>> {
    let t = enter(py, cost, || {
        let t = make()?;
        if requires_grad {
            t.set_requires_grad(true)?;
        }
        Ok(t)
    })?;
    PyTensor::wrap(py, t)
}

/// The cost of making a tensor of this shape (saturating: the core refuses impossible sizes).
fn elements(shape: &[usize]) -> Cost {
    Cost::Elements(shape.iter().fold(1usize, |n, &d| n.saturating_mul(d)))
}

/// A new tensor holding a copy of `data` (a number, nested lists, a NumPy array or a tensor).
/// Python floats become float32, ints int64, bools bool; arrays keep their dtype.
///
/// >>> import tapegrad as tg
/// >>> tg.tensor([[1, 2], [3, 4]])
/// tensor([[1, 2],
///         [3, 4]])
/// >>> tg.tensor([1.5], dtype=tg.float64, requires_grad=True)
/// tensor([1.5000], dtype=tapegrad.float64, requires_grad=True)
#[pyfunction]
#[pyo3(signature = (data, dtype=None, requires_grad=false, device=None))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let dt = match dtype {
        Some(d) if !d.is_none() => Some(parse_dtype(d)?),
        _ => None,
    };
    let t = tensor_from_data(data, dt)?;
    finish(py, Cost::Metadata, requires_grad, || Ok(t))
}

#[pyfunction]
fn from_numpy(py: Python<'_>, arr: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let np = py.import("numpy")?;
    if !arr.is_instance(&np.getattr("ndarray")?)? {
        return Err(Error::Type(format!("expected np.ndarray (got {})", arr.get_type().name()?)).into());
    }
    PyTensor::wrap(py, tensor_from_numpy(arr)?)
}

/// A tensor of zeros; the shape as ints or as one sequence (float32 unless `dtype` is given).
///
/// >>> import tapegrad as tg
/// >>> tg.zeros(2, 3).shape
/// (2, 3)
/// >>> tg.zeros((2,), dtype=tg.int64)
/// tensor([0, 0])
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, DType::Float32)?);
    finish(py, elements(&shape), requires_grad, || Tensor::zeros(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn ones(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, DType::Float32)?);
    finish(py, elements(&shape), requires_grad, || Tensor::ones(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn empty(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    zeros(py, shape, dtype, requires_grad, device)
}

#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn randn(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, DType::Float32)?);
    finish(py, elements(&shape), requires_grad, || Tensor::randn(&shape, dtype))
}

#[pyfunction]
#[pyo3(name = "rand", signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn rand_uniform(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let (shape, dtype) = (sizes(shape)?, opt_dtype(dtype, DType::Float32)?);
    finish(py, elements(&shape), requires_grad, || Tensor::rand(&shape, dtype))
}

#[pyfunction]
#[pyo3(signature = (shape, fill_value, dtype=None, requires_grad=false, device=None))]
fn full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let s = scalar(fill_value).ok_or_else(|| Error::Type("full(): fill_value must be a number".into()))?;
    let shape = sizes(&PyTuple::new(py, [shape])?)?;
    let dtype = opt_dtype(dtype, s.natural_dtype())?;
    finish(py, elements(&shape), requires_grad, || Tensor::full(&shape, s, dtype))
}

#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, dtype=None, requires_grad=false, device=None))]
fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    let num = |o: &Bound<'_, PyAny>| {
        scalar(o).ok_or_else(|| PyErr::from(Error::Type("arange(): bounds must be numbers".into())))
    };
    let (s, e) = match end.filter(|e| !e.is_none()) {
        Some(e) => (num(start)?, num(e)?),
        None => (Scalar::Int(0), num(start)?),
    };
    let st = match step.filter(|s| !s.is_none()) {
        Some(x) => num(x)?,
        None => Scalar::Int(1),
    };
    let all_int = [s, e, st].iter().all(|v| matches!(v, Scalar::Int(_)));
    let dt = opt_dtype(dtype, if all_int { DType::Int64 } else { DType::Float32 })?;
    // The element count, as far as it can be known before the core checks the bounds.
    let count = ((e.as_f64() - s.as_f64()) / st.as_f64()).abs();
    let cost = Cost::Elements(if count.is_finite() { count as usize } else { 0 });
    finish(py, cost, requires_grad, || Tensor::arange_scalar(s, e, st, dt))
}

#[pyfunction]
#[pyo3(signature = (n, m=None, dtype=None, requires_grad=false, device=None))]
fn eye(
    py: Python<'_>,
    n: isize,
    m: Option<isize>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_device(device)?;
    // Signed so that a negative size is a RuntimeError, as in PyTorch, not the OverflowError of
    // PyO3's conversion to an unsigned integer.
    let size = |v: isize, what: &str| {
        usize::try_from(v)
            .map_err(|_| PyErr::from(Error::Value(format!("{what} must be greater or equal to 0, got {v}"))))
    };
    let (n, m) = (size(n, "n")?, size(m.unwrap_or(n), "m")?);
    let dtype = opt_dtype(dtype, DType::Float32)?;
    finish(py, elements(&[n, m]), requires_grad, || Tensor::eye(n, m, dtype))
}

#[pyfunction]
fn manual_seed(seed: u64) {
    crate::manual_seed(seed)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, dt) in
        [("float32", DType::Float32), ("float64", DType::Float64), ("int64", DType::Int64), ("bool", DType::Bool)]
    {
        m.add(name, dtype_object(m.py(), dt))?;
    }
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(rand_uniform, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    Ok(())
}
