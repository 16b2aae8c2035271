//! Dtype and device arguments: the `tg.dtype` objects (one per dtype), reading a dtype from a
//! `tg.dtype`, a NumPy dtype, a type or a name, and the CPU-only `tg.device`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt};

use crate::error::Error;
use crate::tensor::dtype::DType;

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
    /// True for the dtypes that hold negative values (all but `bool` and `uint8`).
    #[getter]
    fn is_signed(&self) -> bool {
        self.dt.is_signed()
    }
    /// Bit width of one element.
    #[getter]
    fn bits(&self) -> usize {
        8 * self.dt.size()
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

static DTYPES: PyOnceLock<[Py<PyDType>; 10]> = PyOnceLock::new();

/// The shared Python object for a dtype.
pub(crate) fn dtype_object(py: Python<'_>, dt: DType) -> Py<PyDType> {
    let all =
        DTYPES.get_or_init(py, || DType::ALL.map(|dt| Py::new(py, PyDType { dt }).expect("creating a dtype object")));
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
        PyErr::from(Error::Type(format!(
            "unsupported dtype {name:?}: tapegrad has bool, uint8, int8, int16, int32, int64, float16, bfloat16, \
             float32 and float64"
        )))
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

/// One `result_type` operand: which group it is in (tensor with dimensions, 0-dim tensor, Python
/// scalar) and its dtype.
fn operand_group(obj: &Bound<'_, PyAny>) -> PyResult<(usize, DType)> {
    if let Ok(t) = obj.cast::<crate::python::tensor::PyTensor>() {
        let t = &t.get().inner;
        return Ok((if t.ndim() == 0 { 1 } else { 0 }, t.dtype()));
    }
    match super::scalar::scalar(obj) {
        Some(s) => Ok((2, s.natural_dtype())),
        None => Err(Error::Type(format!(
            "result_type() expects tensors or Python numbers (bool, int, float), got {}",
            obj.get_type().name()?
        ))
        .into()),
    }
}

/// The dtype an arithmetic operation on `tensor1` and `tensor2` (tensors or Python numbers)
/// computes in, by PyTorch's promotion rules.
///
/// >>> import tapegrad as tg
/// >>> tg.result_type(tg.tensor([1], dtype=tg.uint8), tg.tensor([1], dtype=tg.int8))
/// tapegrad.int16
/// >>> tg.result_type(tg.tensor([1, 2]), 1.5)
/// tapegrad.float32
#[pyfunction]
pub(crate) fn result_type(
    py: Python<'_>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
) -> PyResult<Py<PyDType>> {
    let mut groups: [Option<DType>; 3] = [None; 3];
    for obj in [tensor1, tensor2] {
        let (g, dt) = operand_group(obj)?;
        groups[g] = Some(groups[g].map_or(dt, |d| d.promote(dt)));
    }
    let dt = DType::result_type(groups[0], groups[1], groups[2]).unwrap_or(DType::Float32);
    Ok(dtype_object(py, dt))
}

/// The smallest dtype both `type1` and `type2` convert to without losing their category (PyTorch's
/// `promote_types`).
///
/// >>> import tapegrad as tg
/// >>> tg.promote_types(tg.float16, tg.bfloat16)
/// tapegrad.float32
#[pyfunction]
pub(crate) fn promote_types(
    py: Python<'_>,
    type1: &Bound<'_, PyAny>,
    type2: &Bound<'_, PyAny>,
) -> PyResult<Py<PyDType>> {
    Ok(dtype_object(py, parse_dtype(type1)?.promote(parse_dtype(type2)?)))
}

/// Adds the dtype objects (`tg.float32` and the others, by name) and `result_type` /
/// `promote_types` to the module; PyTorch's aliases (`tg.half`, `tg.int`...) are set in Python.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for dt in DType::ALL {
        m.add(dt.name(), dtype_object(m.py(), dt))?;
    }
    m.add_function(pyo3::wrap_pyfunction!(result_type, m)?)?;
    m.add_function(pyo3::wrap_pyfunction!(promote_types, m)?)?;
    Ok(())
}
