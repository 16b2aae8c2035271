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

/// Adds `tg.float32`, `tg.float64`, `tg.int64` and `tg.bool` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, dt) in
        [("float32", DType::Float32), ("float64", DType::Float64), ("int64", DType::Int64), ("bool", DType::Bool)]
    {
        m.add(name, dtype_object(m.py(), dt))?;
    }
    Ok(())
}
