//! Python's object protocols for tensors: pickling, `copy.copy`, `copy.deepcopy`, `format()`, and
//! the print settings (`set_printoptions`).
//!
//! A pickled tensor is its values and its `requires_grad` flag, never its graph: unpickling gives a
//! leaf (PyTorch does the same for a non-leaf). The values travel as a NumPy array, so pickles are
//! as portable as NumPy's and carry the exact dtype.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use super::convert::{tensor_from_numpy, to_numpy};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::tensor::format::{print_options, set_print_options, PrintOptions};

/// The function that rebuilds a pickled tensor, handed over when the module is made (a pickle
/// names it as `tapegrad._tapegrad._rebuild_tensor`).
static REBUILD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Rebuild a tensor from the state `Tensor.__reduce__` gave: a NumPy array and `requires_grad`.
#[pyfunction]
fn _rebuild_tensor(py: Python<'_>, values: &Bound<'_, PyAny>, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    let t = tensor_from_numpy(values)?;
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    PyTensor::wrap(py, t)
}

/// A copy of `t`'s values that shares nothing with it and has no history.
fn values_copy(t: &crate::Tensor) -> crate::Result<crate::Tensor> {
    t.clone_data()
}

#[pymethods]
impl PyTensor {
    /// Pickling (and `copy.copy`): the values and `requires_grad`; the result is a leaf.
    ///
    /// >>> import pickle, tapegrad as tg
    /// >>> pickle.loads(pickle.dumps(tg.tensor([1.5, 2.0], requires_grad=True)))
    /// tensor([1.5000, 2.0000], requires_grad=True)
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rebuild = REBUILD.get(py).ok_or_else(|| Error::value("tapegrad is not initialised"))?;
        let values = to_numpy(py, &self.inner)?;
        let args =
            PyTuple::new(py, [values.into_any(), self.inner.requires_grad().into_pyobject(py)?.to_owned().into_any()])?;
        PyTuple::new(py, [rebuild.bind(py).clone(), args.into_any()])
    }

    /// `copy.deepcopy` of a leaf: new storage with the same values, `requires_grad` and a deep copy
    /// of `.grad`. A non-leaf is refused, as in PyTorch: its copy could not keep its history.
    ///
    /// >>> import copy, tapegrad as tg
    /// >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    /// >>> y = copy.deepcopy(x); y is x, y.requires_grad, y.is_leaf
    /// (False, True, True)
    fn __deepcopy__(slf: &Bound<'_, Self>, memo: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let py = slf.py();
        let t = &slf.get().inner;
        if !t.is_leaf() {
            return Err(PyErr::from(Error::autograd(
                "Only tensors created explicitly by the user (graph leaves) support the deepcopy protocol",
            )));
        }
        let copy = values_copy(t)?;
        if t.requires_grad() {
            copy.set_requires_grad(true)?;
        }
        let obj = PyTensor::wrap(py, copy)?;
        if let Ok(memo) = memo.cast::<PyDict>() {
            memo.set_item(slf.as_ptr() as usize, obj.clone_ref(py))?;
        }
        let grad = slf.getattr("grad")?;
        if !grad.is_none() {
            let copy_module = py.import("copy")?;
            let grad_copy = copy_module.call_method1("deepcopy", (grad, memo))?;
            obj.bind(py).setattr("grad", grad_copy)?;
        }
        Ok(obj)
    }

    /// `format(t, spec)`: a 0-d tensor formats as its Python number (`f"{loss:.3f}"`); any tensor
    /// formats with an empty spec as `str(t)`; other specs are refused, as for any object.
    ///
    /// >>> import tapegrad as tg
    /// >>> f"{tg.tensor(3.14159):.3f}", format(tg.tensor(7), "04d")
    /// ('3.142', '0007')
    fn __format__(slf: &Bound<'_, Self>, spec: &str) -> PyResult<String> {
        if slf.get().inner.ndim() == 0 {
            return slf.call_method0("item")?.call_method1("__format__", (spec,))?.extract();
        }
        if spec.is_empty() {
            return slf.str()?.extract();
        }
        Err(Error::Type("unsupported format string passed to Tensor.__format__".into()).into())
    }
}

/// Change how tensors print, for the whole process, as `torch.set_printoptions`: `precision`
/// (digits after the point), `threshold` (more elements than this print summarized), `edgeitems`
/// (entries kept at each end of a summarized dimension), `linewidth` (innermost rows wrap to fit
/// it), `profile` (`"default"`, `"short"`, `"full"`: a base the other arguments adjust) and
/// `sci_mode` (True, False, or None to choose by the values; reset to None when not given).
///
/// >>> import tapegrad as tg
/// >>> tg.set_printoptions(precision=2)
/// >>> tg.tensor([1.23456, 2.5])
/// tensor([1.23, 2.50])
/// >>> tg.set_printoptions(profile="default")
#[pyfunction]
#[pyo3(signature = (precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None))]
fn set_printoptions(
    precision: Option<usize>,
    threshold: Option<f64>,
    edgeitems: Option<usize>,
    linewidth: Option<usize>,
    profile: Option<&str>,
    sci_mode: Option<bool>,
) -> PyResult<()> {
    let mut opts = match profile {
        Some(name) => PrintOptions::profile(name).ok_or_else(|| {
            Error::value(format!("set_printoptions: unknown profile '{name}' (expected default, short or full)"))
        })?,
        None => print_options(),
    };
    if let Some(t) = threshold {
        if t.is_nan() || t < 0.0 {
            return Err(PyErr::from(Error::value(format!(
                "set_printoptions: threshold must be a non-negative number, got {t}"
            ))));
        }
        // An infinite threshold (PyTorch's way to say "never summarize") saturates.
        opts.threshold = if t >= usize::MAX as f64 { usize::MAX } else { t as usize };
    }
    opts.precision = precision.unwrap_or(opts.precision);
    opts.edgeitems = edgeitems.unwrap_or(opts.edgeitems);
    opts.linewidth = linewidth.unwrap_or(opts.linewidth);
    opts.sci_mode = sci_mode;
    set_print_options(opts);
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let rebuild = wrap_pyfunction!(_rebuild_tensor, m)?;
    m.add_function(rebuild.clone())?;
    m.add_function(wrap_pyfunction!(set_printoptions, m)?)?;
    let _ = REBUILD.set(m.py(), rebuild.into_any().unbind());
    Ok(())
}
