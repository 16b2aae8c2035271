//! `tapegrad.FunctionCtx`, the `ctx` of Python custom functions (API.md §3.2), in Rust so that a
//! call costs no Python-level bookkeeping. Free attributes live in its `__dict__`.
//!
//! Saved values: during `forward` they are kept as given; when `forward` returns, the tensors among
//! them move to the node (version-checked there, released with the graph) and the ctx keeps a
//! template with the other values. Outputs the user stored as attributes are kept without their
//! node (see NOTE [Cycles through Rust] in `tensor.rs`).

use std::sync::{Arc, Weak};

use pyo3::exceptions::{PyAttributeError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use super::tensor::PyTensor;
use crate::autograd::node::{graph_freed_error, Node};
use crate::Tensor;

/// Values given to `save_for_backward`: positional and named.
type RawSaved = (Vec<Py<PyAny>>, Vec<(String, Py<PyAny>)>);
/// The same after packing: tensors replaced by their index among the saved tensors.
type PackedSaved = (Vec<SavedValue>, Vec<(String, SavedValue)>);

enum SavedValue {
    Tensor(usize),
    Object(Py<PyAny>),
}

/// An output kept as a ctx attribute: its data and a weak reference to its node.
struct OutputRef {
    data: Tensor,
    node: Weak<Node>,
    output_nr: usize,
}

/// The ctx of one call of a Python custom function.
#[pyclass(name = "FunctionCtx", module = "tapegrad", dict, subclass)]
pub struct PyCtx {
    pub(crate) names: Arc<[String]>,
    pub(crate) needs: Vec<bool>,
    pub(crate) in_forward: bool,
    to_save: Option<RawSaved>,
    packed: Option<PackedSaved>,
    raw: Option<Vec<Tensor>>,
    node: Option<Weak<Node>>,
    released: bool,
    pub(crate) dirty: Vec<Tensor>,
    pub(crate) non_differentiable: Vec<Tensor>,
    pub(crate) materialize_grads: bool,
    output_refs: Vec<(String, OutputRef)>,
}

impl PyCtx {
    pub(crate) fn new(names: Arc<[String]>) -> Self {
        let needs = vec![false; names.len()];
        PyCtx {
            names,
            needs,
            in_forward: false,
            to_save: None,
            packed: None,
            raw: None,
            node: None,
            released: false,
            dirty: Vec::new(),
            non_differentiable: Vec::new(),
            materialize_grads: true,
            output_refs: Vec::new(),
        }
    }

    /// Splits what `save_for_backward` received into tensors (returned, for the node) and a template.
    pub(crate) fn pack(&mut self, py: Python<'_>) -> Vec<Tensor> {
        let Some((positional, named)) = self.to_save.take() else { return Vec::new() };
        let mut tensors = Vec::new();
        let mut slot = |v: Py<PyAny>| match v.bind(py).cast::<PyTensor>() {
            Ok(t) => {
                tensors.push(t.get().inner.clone());
                SavedValue::Tensor(tensors.len() - 1)
            }
            Err(_) => SavedValue::Object(v),
        };
        let positional: Vec<SavedValue> = positional.into_iter().map(&mut slot).collect();
        let named: Vec<(String, SavedValue)> = named.into_iter().map(|(k, v)| (k, slot(v))).collect();
        self.packed = Some((positional, named));
        self.raw = Some(tensors.clone());
        tensors
    }

    /// The node now owns the saved tensors.
    pub(crate) fn attach(&mut self, node: &Arc<Node>) {
        self.node = Some(Arc::downgrade(node));
        self.raw = None;
    }

    /// Frees the saved values with the graph.
    pub(crate) fn release(&mut self) {
        if self.packed.is_some() {
            self.released = true;
        }
        self.packed = None;
        self.raw = None;
    }

    /// Keeps `value` (an output of `node`) as attribute `name` without owning the node.
    pub(crate) fn keep_output_ref(&mut self, name: String, data: &Tensor, node: &Arc<Node>, output_nr: usize) {
        self.output_refs.retain(|(n, _)| *n != name);
        self.output_refs.push((name, OutputRef { data: data.detach(), node: Arc::downgrade(node), output_nr }));
    }

    fn unpack<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        if self.released {
            return Err(graph_freed_error().into());
        }
        let named_out = PyDict::new(py);
        let Some((positional, named)) = &self.packed else {
            if let Some((positional, named)) = &self.to_save {
                for (k, v) in named {
                    named_out.set_item(k, v.bind(py))?;
                }
                return Ok((PyTuple::new(py, positional.iter().map(|v| v.bind(py)))?, named_out));
            }
            return Ok((PyTuple::empty(py), named_out));
        };
        let tensors = match (&self.node, &self.raw) {
            (Some(w), _) => w.upgrade().ok_or_else(graph_freed_error)?.unpack_saved()?,
            (None, Some(raw)) => raw.clone(),
            (None, None) => Vec::new(),
        };
        let fill = |v: &SavedValue| -> PyResult<Py<PyAny>> {
            match v {
                SavedValue::Tensor(i) => Ok(PyTensor::wrap(py, tensors[*i].clone())?.into_any()),
                SavedValue::Object(o) => Ok(o.clone_ref(py)),
            }
        };
        let pos = positional.iter().map(fill).collect::<PyResult<Vec<_>>>()?;
        for (k, v) in named {
            named_out.set_item(k, fill(v)?)?;
        }
        Ok((PyTuple::new(py, pos)?, named_out))
    }
}

fn helper_class<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyAny>>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    Ok(cell.get_or_try_init(py, || py.import("tapegrad._function")?.getattr(name).map(Bound::unbind))?.bind(py).clone())
}

fn tensors_of(values: &Bound<'_, PyTuple>, what: &str) -> PyResult<Vec<Tensor>> {
    values.iter().map(|v| super::tensor::expect_tensor(&v, what)).collect()
}

#[pymethods]
impl PyCtx {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyCtx::new(Arc::from(Vec::new()))
    }

    /// Keeps values for backward; tensors among them are version-checked when read back.
    #[pyo3(signature = (*values, **named))]
    fn save_for_backward(&mut self, values: &Bound<'_, PyTuple>, named: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        if !self.in_forward {
            return Err(PyRuntimeError::new_err("save_for_backward can only be called inside forward"));
        }
        if self.to_save.is_some() {
            return Err(PyRuntimeError::new_err("save_for_backward can be called at most once in forward"));
        }
        let positional = values.iter().map(Bound::unbind).collect();
        let named = match named {
            Some(d) => d.iter().map(|(k, v)| Ok((k.extract::<String>()?, v.unbind()))).collect::<PyResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        self.to_save = Some((positional, named));
        Ok(())
    }

    #[getter]
    fn saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        Ok(self.unpack(py)?.0)
    }

    #[getter]
    fn saved_variables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static MAPPING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let named = self.unpack(py)?.1;
        helper_class(py, &MAPPING, "_SavedMapping")?.call1((named,))
    }

    #[getter]
    fn needs_input_grad<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static NEEDS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        helper_class(py, &NEEDS, "_NeedsInputGrad")?.call1((self.needs.clone(), names))
    }

    #[pyo3(signature = (*tensors))]
    fn mark_dirty(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        if !self.in_forward {
            return Err(PyRuntimeError::new_err("mark_dirty can only be called inside forward"));
        }
        self.dirty.extend(tensors_of(tensors, "mark_dirty's argument")?);
        Ok(())
    }

    #[pyo3(signature = (*tensors))]
    fn mark_non_differentiable(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        if !self.in_forward {
            return Err(PyRuntimeError::new_err("mark_non_differentiable can only be called inside forward"));
        }
        self.non_differentiable.extend(tensors_of(tensors, "mark_non_differentiable's argument")?);
        Ok(())
    }

    fn set_materialize_grads(&mut self, value: bool) {
        self.materialize_grads = value;
    }

    /// Outputs kept as attributes (stored without their node) are rebuilt on access.
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyTensor>> {
        if let Some((_, r)) = self.output_refs.iter().find(|(n, _)| n == name) {
            let t = r.data.detach();
            if let Some(node) = r.node.upgrade() {
                t.set_history(node, r.output_nr);
            }
            return PyTensor::wrap(py, t);
        }
        Err(PyAttributeError::new_err(format!("'FunctionCtx' object has no attribute '{name}'")))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some((positional, named)) = &self.to_save {
            for v in positional.iter().chain(named.iter().map(|(_, v)| v)) {
                visit.call(v)?;
            }
        }
        if let Some((positional, named)) = &self.packed {
            for v in positional.iter().chain(named.iter().map(|(_, v)| v)) {
                if let SavedValue::Object(o) = v {
                    visit.call(o)?;
                }
            }
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.to_save = None;
        self.packed = None;
    }
}
