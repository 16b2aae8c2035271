//! `tapegrad.FunctionCtx`, the `ctx` of Python custom functions (API.md §3.2), in Rust so that a
//! call costs no Python-level bookkeeping. Free attributes live in its `__dict__`.
//!
//! Saved values: during `forward` they are kept as given; when `forward` returns, the tensors among
//! them move to the node (version-checked there, released with the graph) and the ctx keeps a
//! template with the other values. Outputs the user stored as attributes are kept without their
//! node (see NOTE [Cycles through Rust] in `tensor.rs`).

use std::sync::{Arc, Weak};

use pyo3::prelude::*;
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

// NOTE [Borrowing the ctx]: the ctx is a mutable Python object, and the GIL passes to another
// thread whenever Python code runs, including a finalizer run by a drop or a garbage collection
// triggered by an allocation. A forward that keeps `ctx` where another thread can read it
// (`ctx.needs_input_grad` while `apply` runs) would then meet a borrow still held here. So the ctx
// is borrowed only to copy values in or out; Python objects are made, Python is called and
// displaced values are dropped after the borrow ends.
/// The ctx of one call of a Python custom function.
#[pyclass(name = "FunctionCtx", module = "tapegrad", dict, subclass)]
pub struct PyCtx {
    pub(crate) names: Arc<[String]>,
    /// Inline for the usual few arguments: no allocation per call (NOTE [Per-operation overhead]).
    pub(crate) needs: smallvec::SmallVec<[bool; 8]>,
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
    /// The class's `clear_saved_tensors_on_access`: after forward, `saved_tensors` and
    /// `saved_variables` may each be read once.
    pub(crate) clear_on_access: bool,
    /// Whether `saved_tensors` (0) and `saved_variables` (1) were read after forward.
    accessed: [bool; 2],
    /// What `save_for_forward` received: `saved_tensors` inside `jvp` (freed after it runs).
    pub(crate) for_forward: Option<Vec<Py<PyAny>>>,
    /// True while `jvp` runs.
    pub(crate) in_jvp: bool,
    /// What `forward` returned, as it returned it, from the end of `forward` until `apply` takes it
    /// to build its result (the op itself has moved into the node by then).
    pub(crate) raw_output: Option<Py<PyAny>>,
}

impl PyCtx {
    pub(crate) fn new(names: Arc<[String]>) -> Self {
        let needs = smallvec::smallvec![false; names.len()];
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
            clear_on_access: false,
            accessed: [false; 2],
            for_forward: None,
            in_jvp: false,
            raw_output: None,
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

    /// Whether the ctx itself holds Python objects (NOTE [Untracked ctx] in `function.rs`): values
    /// given to `save_for_backward` that are not tensors, `save_for_forward`'s, `forward`'s result.
    pub(crate) fn holds_python_objects(&self) -> bool {
        let objects =
            |p: &PackedSaved| p.0.iter().chain(p.1.iter().map(|(_, v)| v)).any(|v| matches!(v, SavedValue::Object(_)));
        self.to_save.is_some()
            || self.packed.as_ref().is_some_and(objects)
            || self.for_forward.is_some()
            || self.raw_output.is_some()
    }

    /// True when `save_for_backward` was called: only then has `release` anything to free.
    pub(crate) fn has_saved(&self) -> bool {
        self.packed.is_some()
    }

    /// The node now owns the saved tensors. Returns the ctx's own copies, for the caller to drop
    /// once the ctx is no longer borrowed (NOTE [Borrowing the ctx]).
    #[must_use]
    pub(crate) fn attach(&mut self, node: &Arc<Node>) -> Option<Vec<Tensor>> {
        self.node = Some(Arc::downgrade(node));
        self.raw.take()
    }

    /// Frees the saved values with the graph. Returns them, for the caller to drop once the ctx is
    /// no longer borrowed (their finalizers may read this ctx: NOTE [Borrowing the ctx]).
    #[must_use]
    pub(crate) fn release(&mut self) -> impl Drop {
        if self.packed.is_some() {
            self.released = true;
        }
        Box::new((self.packed.take(), self.raw.take()))
    }

    /// Keeps `value` (an output of `node`) as attribute `name` without owning the node.
    pub(crate) fn keep_output_ref(&mut self, name: String, data: &Tensor, node: &Arc<Node>, output_nr: usize) {
        self.output_refs.retain(|(n, _)| *n != name);
        self.output_refs.push((name, OutputRef { data: data.detach(), node: Arc::downgrade(node), output_nr }));
    }

    /// The saved values, rebuilt. The ctx is borrowed only to copy them out; the Python objects are
    /// made after (NOTE [Borrowing the ctx]).
    fn unpack<'py>(slf: &Bound<'py, PyCtx>) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let py = slf.py();
        enum Copied {
            Template(Vec<SavedValue>, Vec<(String, SavedValue)>, Result<Vec<Tensor>, crate::error::Error>),
            Raw(Vec<Py<PyAny>>, Vec<(String, Py<PyAny>)>),
        }
        let copy = |v: &SavedValue| match v {
            SavedValue::Tensor(i) => SavedValue::Tensor(*i),
            SavedValue::Object(o) => SavedValue::Object(o.clone_ref(py)),
        };
        let (copied, node) = {
            let c = slf.try_borrow()?;
            if c.released {
                return Err(graph_freed_error().into());
            }
            match &c.packed {
                Some((positional, named)) => {
                    let positional = positional.iter().map(copy).collect();
                    let named = named.iter().map(|(k, v)| (k.clone(), copy(v))).collect();
                    let (node, raw) = match (&c.node, &c.raw) {
                        (Some(w), _) => (Some(w.upgrade()), Ok(Vec::new())),
                        (None, Some(raw)) => (None, Ok(raw.clone())),
                        (None, None) => (None, Ok(Vec::new())),
                    };
                    (Copied::Template(positional, named, raw), node)
                }
                None => match &c.to_save {
                    Some((positional, named)) => (
                        Copied::Raw(
                            positional.iter().map(|v| v.clone_ref(py)).collect(),
                            named.iter().map(|(k, v)| (k.clone(), v.clone_ref(py))).collect(),
                        ),
                        None,
                    ),
                    None => (Copied::Raw(Vec::new(), Vec::new()), None),
                },
            }
        };
        let named_out = PyDict::new(py);
        let (positional, named, tensors) = match copied {
            Copied::Raw(positional, named) => {
                for (k, v) in named {
                    named_out.set_item(k, v)?;
                }
                return Ok((PyTuple::new(py, positional)?, named_out));
            }
            Copied::Template(positional, named, tensors) => (positional, named, tensors),
        };
        let tensors = match node {
            Some(Some(node)) => node.unpack_saved()?,
            Some(None) => return Err(graph_freed_error().into()),
            None => tensors?,
        };
        let fill = |v: SavedValue| -> PyResult<Py<PyAny>> {
            match v {
                SavedValue::Tensor(i) => Ok(PyTensor::wrap(py, tensors[i].clone())?.into_any()),
                SavedValue::Object(o) => Ok(o),
            }
        };
        let pos = positional.into_iter().map(fill).collect::<PyResult<Vec<_>>>()?;
        for (k, v) in named {
            named_out.set_item(k, fill(v)?)?;
        }
        Ok((PyTuple::new(py, pos)?, named_out))
    }
}

impl PyCtx {
    /// Records a read of the saved values (`which`: 0 positional, 1 named), refused when
    /// `clear_saved_tensors_on_access` allows one and it was made.
    fn count_access(slf: &Bound<'_, PyCtx>, which: usize, what: &str) -> PyResult<()> {
        let mut c = slf.try_borrow_mut()?;
        if !c.clear_on_access || c.in_forward {
            return Ok(());
        }
        if c.accessed[which] {
            return Err(crate::error::Error::CustomFunction(format!(
                "{what} can only be accessed once when clear_saved_tensors_on_access=True is set on the \
                 autograd.Function. Either access {what} only once, or set clear_saved_tensors_on_access=False."
            ))
            .into());
        }
        c.accessed[which] = true;
        Ok(())
    }
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
            return Err(crate::error::Error::CustomFunction(
                "save_for_backward can only be called inside forward (or setup_context)".into(),
            )
            .into());
        }
        if self.to_save.is_some() {
            return Err(crate::error::Error::CustomFunction(
                "save_for_backward can be called at most once in forward".into(),
            )
            .into());
        }
        let positional = values.iter().map(Bound::unbind).collect();
        let named = match named {
            Some(d) => d.iter().map(|(k, v)| Ok((k.extract::<String>()?, v.unbind()))).collect::<PyResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        self.to_save = Some((positional, named));
        Ok(())
    }

    /// Keeps tensors (or None) for `jvp`, where `saved_tensors` returns them.
    #[pyo3(signature = (*tensors))]
    fn save_for_forward(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        if !self.in_forward {
            return Err(crate::error::Error::CustomFunction(
                "save_for_forward can only be called inside forward (or setup_context)".into(),
            )
            .into());
        }
        if tensors.iter().any(|t| !t.is_none() && t.cast::<PyTensor>().is_err()) {
            return Err(crate::error::Error::Type(
                "save_for_forward expects all arguments to be tensors; you should save non-tensors as attributes \
                 on ctx."
                    .into(),
            )
            .into());
        }
        self.for_forward = Some(tensors.iter().map(Bound::unbind).collect());
        Ok(())
    }

    #[getter]
    fn saved_tensors<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let for_jvp = {
            let c = slf.try_borrow()?;
            if c.in_jvp {
                Some(c.for_forward.as_ref().map(|v| v.iter().map(|o| o.clone_ref(slf.py())).collect::<Vec<_>>()))
            } else {
                None
            }
        };
        if let Some(values) = for_jvp {
            return PyTuple::new(slf.py(), values.unwrap_or_default());
        }
        let positional = PyCtx::unpack(slf)?.0;
        PyCtx::count_access(slf, 0, "saved_tensors")?;
        Ok(positional)
    }

    #[getter]
    fn saved_variables<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let named = PyCtx::unpack(slf)?.1;
        PyCtx::count_access(slf, 1, "saved_variables")?;
        super::helpers::helpers(py)?.saved_mapping.bind(py).call1((named,))
    }

    #[getter]
    fn needs_input_grad<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let (needs, names) = {
            let c = slf.try_borrow()?;
            (c.needs.to_vec(), c.names.clone())
        };
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        super::helpers::helpers(slf.py())?.needs_input_grad.bind(slf.py()).call1((needs, names))
    }

    #[pyo3(signature = (*tensors))]
    fn mark_dirty(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        if !self.in_forward {
            return Err(crate::error::Error::CustomFunction(
                "mark_dirty can only be called inside forward (or setup_context)".into(),
            )
            .into());
        }
        self.dirty.extend(tensors_of(tensors, "mark_dirty's argument")?);
        Ok(())
    }

    #[pyo3(signature = (*tensors))]
    fn mark_non_differentiable(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        if !self.in_forward {
            return Err(crate::error::Error::CustomFunction(
                "mark_non_differentiable can only be called inside forward (or setup_context)".into(),
            )
            .into());
        }
        self.non_differentiable.extend(tensors_of(tensors, "mark_non_differentiable's argument")?);
        Ok(())
    }

    fn set_materialize_grads(&mut self, value: bool) {
        self.materialize_grads = value;
    }

    /// Outputs kept as attributes (stored without their node) are rebuilt on access.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Py<PyTensor>> {
        let found = {
            let c = slf.try_borrow()?;
            c.output_refs.iter().find(|(n, _)| n == name).map(|(_, r)| (r.data.detach(), r.node.clone(), r.output_nr))
        };
        if let Some((t, node, output_nr)) = found {
            if let Some(node) = node.upgrade() {
                t.set_history(node, output_nr);
            }
            return PyTensor::wrap(slf.py(), t);
        }
        Err(crate::error::Error::Attribute(format!("'FunctionCtx' object has no attribute '{name}'")).into())
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
        for v in self.for_forward.iter().flatten() {
            visit.call(v)?;
        }
        if let Some(v) = &self.raw_output {
            visit.call(v)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.to_save = None;
        self.packed = None;
        self.for_forward = None;
        self.raw_output = None;
    }
}
