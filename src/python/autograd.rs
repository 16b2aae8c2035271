//! Autograd entry points for Python: the graph node object (`grad_fn`), grad mode, anomaly mode,
//! `backward` / `grad`, and the hooks the core calls back (user location, Ctrl-C).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::tensor::{tensor_list, PyTensor};
use crate::autograd::node::Node;
use crate::autograd::{anomaly, engine, grad_mode, saved};
use crate::error::{Error, Result};
use crate::Tensor;

/// `(shape, dtype, saved_version, current_version)` of a saved tensor.
type SavedInfo = (Vec<usize>, String, u64, u64);

/// A node of the backward graph, as seen from Python (`t.grad_fn`).
#[pyclass(name = "Node", module = "tapegrad", frozen)]
pub struct PyNode {
    pub(crate) node: Arc<Node>,
    /// This object's own address, once made (see `wrap`).
    me: AtomicUsize,
}

// One Python object per node: see NOTE [One Python object per core object] in `identity.rs`.
impl PyNode {
    /// The Python object of a node: its live wrapper, or a new one.
    pub(crate) fn wrap(py: Python<'_>, node: Arc<Node>) -> PyResult<Py<PyNode>> {
        if let Some(obj) = super::identity::live_wrapper(py, &node.wrapper) {
            return Ok(obj);
        }
        let obj = Py::new(py, PyNode { node, me: AtomicUsize::new(0) })?;
        let this = obj.get();
        this.me.store(super::identity::register(&obj, &this.node.wrapper), Ordering::Release);
        Ok(obj)
    }
}

impl Drop for PyNode {
    fn drop(&mut self) {
        super::identity::unregister(&self.node.wrapper, *self.me.get_mut());
    }
}

#[pymethods]
impl PyNode {
    /// See NOTE [Cycles through Rust] in `tensor.rs`: a hook on the node's output may hold this
    /// node object (`h = y.grad_fn; y.register_hook(lambda g: h)`).
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> std::result::Result<(), pyo3::PyTraverseError> {
        if Arc::strong_count(&self.node) == 1 {
            visit_node(&self.node, &visit)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        if Arc::strong_count(&self.node) == 1 {
            clear_node(&self.node);
        }
    }

    fn name(&self) -> String {
        self.node.name().to_string()
    }
    /// Runs the node's backward formula on one gradient per output of its forward operation and
    /// returns the gradients of its inputs (one tensor when it has one input), as PyTorch's nodes do.
    #[pyo3(signature = (*grads))]
    fn __call__(&self, py: Python<'_>, grads: Vec<Option<Py<PyTensor>>>) -> PyResult<Py<PyAny>> {
        let n = self.node.num_outputs();
        if grads.len() != n {
            return Err(Error::Type(format!(
                "{} expected {n} arguments, got {} instead",
                self.node.name(),
                grads.len()
            ))
            .into());
        }
        let grads: Vec<Option<Tensor>> = grads.into_iter().map(|g| g.map(|g| g.get().inner.clone())).collect();
        let node = self.node.clone();
        let out = super::gateway::enter(py, super::gateway::Cost::Heavy, || node.apply(grads))?;
        let mut wrapped =
            out.into_iter().map(|g| g.map(|g| PyTensor::wrap(py, g)).transpose()).collect::<PyResult<Vec<_>>>()?;
        if wrapped.len() == 1 {
            return Ok(wrapped.remove(0).into_pyobject(py)?.into_any().unbind());
        }
        Ok(PyTuple::new(py, wrapped)?.into_any().unbind())
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .node
            .next_edges()
            .iter()
            .map(|e| match e {
                Some(e) => Ok((Some(PyNode::wrap(py, e.node.clone())?), e.input_nr).into_pyobject(py)?.into_any()),
                None => Ok((py.None(), 0usize).into_pyobject(py)?.into_any()),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    /// The leaf behind an AccumulateGrad node.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        self.node.formula().accumulates_into().map(|t| PyTensor::wrap(py, t.clone())).transpose()
    }
    /// `(shape, dtype, saved_version, current_version)` for each saved tensor; None once released.
    #[getter]
    fn _saved_tensors_info(&self) -> Option<Vec<SavedInfo>> {
        self.node.with_saved(|saved| {
            saved.map(|s| {
                s.iter()
                    .map(|st| {
                        let (shape, dtype) = st.meta();
                        (shape, dtype.name().to_string(), st.saved_version(), st.current_version())
                    })
                    .collect()
            })
        })
    }
    #[getter]
    fn _sequence_nr(&self) -> u64 {
        self.node.sequence_nr()
    }
    #[getter]
    fn _id(&self) -> usize {
        Arc::as_ptr(&self.node) as usize
    }
    /// Registers `hook(grad_inputs, grad_outputs)`, run after this node computed the gradients of
    /// its inputs; it may return replacements (a tuple) or None.
    fn register_hook(&self, hook: Py<PyAny>) -> PyHookHandle {
        let f = Arc::new(PyNodeHook { callable: parking_lot::Mutex::new(Some(hook)) });
        PyHookHandle { handle: self.node.register_node_hook(false, f) }
    }
    /// Registers `hook(grad_outputs)`, run before this node with the gradients of its outputs; it
    /// may return replacements (a tuple) or None.
    fn register_prehook(&self, hook: Py<PyAny>) -> PyHookHandle {
        let f = Arc::new(PyNodeHook { callable: parking_lot::Mutex::new(Some(hook)) });
        PyHookHandle { handle: self.node.register_node_hook(true, f) }
    }
    /// A dict that lives with the node, for the user's own data.
    #[getter]
    fn metadata(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let stored = self.node.metadata.get_or_init(|| Box::new(PyDict::new(py).unbind()));
        match stored.downcast_ref::<Py<PyDict>>() {
            Some(d) => Ok(d.clone_ref(py)),
            None => Err(Error::Autograd("this node's metadata is not a dict".into()).into()),
        }
    }
    #[getter]
    fn created_at(&self) -> Option<String> {
        self.node.created_at().map(str::to_string)
    }
    fn __repr__(&self) -> String {
        format!("<{} object at {:#x}>", self.node.name(), Arc::as_ptr(&self.node) as usize)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().is_ok_and(|o| Arc::ptr_eq(&o.get().node, &self.node))
    }
    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.node) as isize
    }
}

/// What `Tensor.register_hook` returns.
#[pyclass(name = "RemovableHandle", module = "tapegrad", frozen)]
pub struct PyHookHandle {
    handle: crate::autograd::HookHandle,
}

#[pymethods]
impl PyHookHandle {
    fn remove(&self) {
        self.handle.remove()
    }
}

/// A Python callable as a core gradient hook. It runs with the GIL; its exception travels through
/// the engine unchanged. The callable sits behind its own small lock so that Python's collector
/// can see it (through the tensor or node that holds the hook, NOTE [Cycles through Rust] in
/// `tensor.rs`) and break a cycle by taking it out; a cleared hook keeps the gradient as it is.
pub(crate) struct PyGradHook {
    callable: parking_lot::Mutex<Option<Py<PyAny>>>,
}

impl PyGradHook {
    /// Reports the callable to the collector.
    pub(crate) fn visit(&self, visit: &pyo3::PyVisit<'_>) -> std::result::Result<(), pyo3::PyTraverseError> {
        if let Some(guard) = self.callable.try_lock() {
            if let Some(obj) = guard.as_ref() {
                visit.call(obj)?;
            }
        }
        Ok(())
    }

    /// Takes the callable out (breaking a cycle); it is dropped after this hook's lock.
    pub(crate) fn clear(&self) {
        let taken = self.callable.lock().take();
        drop(taken);
    }

    fn callable(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.callable.lock().as_ref().map(|c| c.clone_ref(py))
    }
}

impl crate::autograd::HookFn for PyGradHook {
    fn call(&self, g: &Tensor) -> Result<Option<Tensor>> {
        Python::attach(|py| -> PyResult<Option<Tensor>> {
            let Some(hook) = self.callable(py) else { return Ok(None) };
            let r = hook.bind(py).call1((PyTensor::wrap(py, g.clone())?,))?;
            if r.is_none() {
                return Ok(None);
            }
            super::tensor::expect_tensor(&r, "a hook's return value").map(Some)
        })
        .map_err(super::errors::external)
    }

    fn call_undefined(&self) -> Result<Option<Tensor>> {
        Python::attach(|py| -> PyResult<Option<Tensor>> {
            let Some(hook) = self.callable(py) else { return Ok(None) };
            let r = hook.bind(py).call1((py.None(),))?;
            if r.is_none() {
                return Ok(None);
            }
            super::tensor::expect_tensor(&r, "a hook's return value").map(Some)
        })
        .map_err(super::errors::external)
    }

    fn name(&self) -> String {
        Python::attach(|py| {
            let Some(hook) = self.callable(py) else { return "hook".to_string() };
            let hook = hook.bind(py);
            match hook.getattr("__name__").and_then(|n| n.extract::<String>()) {
                Ok(name) => name,
                Err(_) => hook.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "hook".to_string()),
            }
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The Python hook behind a core hook, when it is one.
pub(crate) fn python_hook(h: &crate::autograd::GradHook) -> Option<&PyGradHook> {
    h.as_any().downcast_ref::<PyGradHook>()
}

/// What a node holds that Python's collector must see: a Python function's ctx and the Python
/// hooks on its outputs (each only when the node is its only owner, so the count stays exact).
pub(crate) fn visit_node(node: &Node, visit: &pyo3::PyVisit<'_>) -> std::result::Result<(), pyo3::PyTraverseError> {
    super::function::visit_python_ctx(node, visit)?;
    if let Some(hooks) = node.node_hooks.try_lock() {
        for (_, h) in hooks.iter() {
            if let Some(p) = h.f.as_any().downcast_ref::<PyNodeHook>() {
                if let Some(guard) = p.callable.try_lock() {
                    if let Some(obj) = guard.as_ref() {
                        visit.call(obj)?;
                    }
                }
            }
        }
    }
    if let Some(hooks) = node.pre_hooks.try_lock() {
        for (_, h) in hooks.iter() {
            if let crate::autograd::hooks::PreHook::User(_, h) = h {
                if Arc::strong_count(h) == 1 {
                    if let Some(p) = python_hook(h) {
                        p.visit(visit)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Breaks the cycles `visit_node` reported through hooks (the ctx clears itself).
pub(crate) fn clear_node(node: &Node) {
    let node_hooks = node.node_hooks.lock().clone();
    for (_, h) in &node_hooks {
        if let Some(p) = h.f.as_any().downcast_ref::<PyNodeHook>() {
            let taken = p.callable.lock().take();
            drop(taken);
        }
    }
    drop(node_hooks);
    let hooks = node.pre_hooks.lock().clone();
    for (_, h) in &hooks {
        if let crate::autograd::hooks::PreHook::User(_, h) = h {
            if let Some(p) = python_hook(h) {
                p.clear();
            }
        }
    }
    drop(hooks);
}

/// Visits the Python hooks of a leaf's own hook list.
pub(crate) fn visit_leaf_hooks(
    hooks: &[(u64, crate::autograd::GradHook)],
    visit: &pyo3::PyVisit<'_>,
) -> std::result::Result<(), pyo3::PyTraverseError> {
    for (_, h) in hooks {
        if Arc::strong_count(h) == 1 {
            if let Some(p) = python_hook(h) {
                p.visit(visit)?;
            }
        }
    }
    Ok(())
}

/// Registers a Python callable as a gradient hook of `t`.
pub(crate) fn register_hook(t: &Tensor, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
    let f: crate::autograd::GradHook = Arc::new(PyGradHook { callable: parking_lot::Mutex::new(Some(hook)) });
    Ok(PyHookHandle { handle: t.register_hook(f)? })
}

#[pyfunction]
fn _set_grad_enabled(flag: bool) -> bool {
    grad_mode::set_grad_enabled(flag)
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    grad_mode::grad_mode_flag()
}

/// Sets inference mode on this thread; returns the previous value.
#[pyfunction]
fn _set_inference_mode(flag: bool) -> bool {
    grad_mode::set_inference_mode(flag)
}

/// Whether inference mode is on on this thread.
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    grad_mode::is_inference_mode_enabled()
}

#[pymethods]
impl PyTensor {
    /// True for a tensor made under inference mode (or a view or detached alias of one).
    fn is_inference(&self) -> bool {
        self.inner.storage().is_inference()
    }

    /// Registers `hook(tensor)`, run on this leaf after each gradient is accumulated into its
    /// `.grad`; it must return None.
    fn register_post_accumulate_grad_hook(&self, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
        let f = Arc::new(PyPostAccumulateHook { callable: hook });
        Ok(PyHookHandle { handle: self.inner.register_post_accumulate_grad_hook(f)? })
    }
}

#[pyfunction]
fn _set_anomaly_enabled(flag: bool) -> bool {
    anomaly::set_enabled(flag)
}

#[pyfunction]
fn _set_anomaly_check_nan(flag: bool) -> bool {
    anomaly::set_check_nan(flag)
}

#[pyfunction]
fn _is_anomaly_enabled() -> bool {
    anomaly::is_enabled()
}

fn optional_tensors(obj: &Bound<'_, PyAny>, n: usize, like: &[Tensor]) -> PyResult<Vec<Option<Tensor>>> {
    if obj.is_none() {
        return Ok(vec![None; n]);
    }
    let items: Vec<Bound<'_, PyAny>> =
        if obj.cast::<PyTensor>().is_ok() { vec![obj.clone()] } else { obj.try_iter()?.collect::<PyResult<_>>()? };
    if items.len() != n {
        return Err(Error::Autograd(format!(
            "grad_tensors should have the same length as tensors: got {} gradients for {n} tensors",
            items.len()
        ))
        .into());
    }
    items
        .iter()
        .enumerate()
        .map(
            |(i, o)| {
                if o.is_none() {
                    Ok(None)
                } else {
                    super::convert::tensor_arg(o, Some(like[i].dtype())).map(Some)
                }
            },
        )
        .collect()
}

#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs=None))]
fn _run_backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: &Bound<'_, PyAny>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let roots = tensor_list(tensors, "tensors")?;
    let grads = optional_tensors(grad_tensors, roots.len(), &roots)?;
    run_backward(py, &roots, &grads, retain_graph, create_graph, inputs)
}

/// `Tensor.backward` and `autograd.backward`: accumulates into `.grad`, with PyTorch's checks and its
/// warning that `create_graph` links each leaf to its own gradient.
pub(crate) fn run_backward(
    py: Python<'_>,
    roots: &[Tensor],
    grads: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let inputs = match inputs {
        Some(i) if !i.is_none() => Some(tensor_list(i, "inputs")?),
        _ => None,
    };
    if inputs.as_ref().is_some_and(|i| i.is_empty()) {
        return Err(Error::Autograd("'inputs' argument to backward() cannot be empty.".into()).into());
    }
    if create_graph {
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            c"Using backward() with create_graph=True will create a reference cycle between the parameter and \
              its gradient which can cause a memory leak. We recommend using autograd.grad when creating the \
              graph to avoid this. If you have to use this function, make sure to reset the .grad fields of \
              your parameters to None after use to break the cycle and avoid the leak.",
            1,
        )?;
    }
    super::gateway::enter(py, super::gateway::Cost::Heavy, || {
        engine::backward(roots, grads, retain_graph, create_graph, inputs.as_deref())
    })?;
    Ok(())
}

/// `grad` with respect to gradient edges: `edges` is a list of `(node, input_nr)`.
#[pyfunction]
fn _run_grad_edges(
    py: Python<'_>,
    outputs: &Bound<'_, PyAny>,
    edges: Vec<(Py<PyNode>, usize)>,
    grad_outputs: &Bound<'_, PyAny>,
    retain_graph: bool,
    create_graph: bool,
) -> PyResult<Vec<Option<Py<PyTensor>>>> {
    let roots = tensor_list(outputs, "outputs")?;
    let grads = optional_tensors(grad_outputs, roots.len(), &roots)?;
    let edges: Vec<crate::autograd::Edge> =
        edges.iter().map(|(n, nr)| crate::autograd::Edge { node: n.get().node.clone(), input_nr: *nr }).collect();
    let result = py.detach(|| engine::grad_at_edges(&roots, &edges, &grads, retain_graph, create_graph))?;
    result.into_iter().map(|g| g.map(|g| PyTensor::wrap(py, g)).transpose()).collect()
}

/// A backward run from gradient edges (`GradientEdge` given as outputs): `roots` and `capture` are
/// lists of `(node, input_nr)`; with `capture` None every leaf reached accumulates (`backward`),
/// otherwise the gradients flowing at the captured edges are returned (`grad`).
#[pyfunction]
#[pyo3(signature = (roots, grad_outputs, retain_graph, create_graph, capture=None))]
fn _run_from_edges(
    py: Python<'_>,
    roots: Vec<(Py<PyNode>, usize)>,
    grad_outputs: Vec<Bound<'_, PyAny>>,
    retain_graph: bool,
    create_graph: bool,
    capture: Option<Vec<(Py<PyNode>, usize)>>,
) -> PyResult<Vec<Option<Py<PyTensor>>>> {
    let to_edges = |v: &[(Py<PyNode>, usize)]| -> Vec<crate::autograd::Edge> {
        v.iter().map(|(n, nr)| crate::autograd::Edge { node: n.get().node.clone(), input_nr: *nr }).collect()
    };
    let roots = to_edges(&roots);
    if grad_outputs.len() != roots.len() {
        return Err(Error::autograd(format!(
            "grad_tensors should have the same length as tensors: got {} gradients for {} tensors",
            grad_outputs.len(),
            roots.len()
        ))
        .into());
    }
    let grads: Vec<Option<Tensor>> = grad_outputs
        .iter()
        .zip(&roots)
        .map(|(o, e)| {
            if o.is_none() {
                return Ok(None);
            }
            let dtype = e.node.output_meta.get(e.input_nr).map(|m| m.dtype);
            super::convert::tensor_arg(o, dtype).map(Some)
        })
        .collect::<PyResult<_>>()?;
    let capture: Vec<Option<crate::autograd::Edge>> =
        capture.as_deref().map(|c| to_edges(c).into_iter().map(Some).collect()).unwrap_or_default();
    let result = super::gateway::enter(py, super::gateway::Cost::Heavy, || {
        engine::run_from_edges(&roots, &grads, retain_graph, create_graph, &capture)
    })?;
    result.into_iter().map(|g| g.map(|g| PyTensor::wrap(py, g)).transpose()).collect()
}

/// The edge a gradient for `t` travels along: `(node, input_nr)`; a leaf's accumulator is made
/// if needed. An error for a tensor that does not require grad.
#[pyfunction]
fn _gradient_edge(py: Python<'_>, t: PyRef<'_, PyTensor>) -> PyResult<(Py<PyNode>, usize)> {
    match crate::autograd::node::gradient_edge(&t.inner) {
        Some(e) => Ok((PyNode::wrap(py, e.node)?, e.input_nr)),
        None => Err(Error::Autograd(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients".into(),
        )
        .into()),
    }
}

/// Bumps `t`'s version counter, as an in-place write would.
#[pyfunction]
fn _increment_version(t: PyRef<'_, PyTensor>) {
    t.inner.storage().bump_version(std::borrow::Cow::Borrowed("increment_version"), anomaly::current_location());
}

#[pyfunction]
fn _run_grad(
    py: Python<'_>,
    outputs: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyAny>,
    grad_outputs: &Bound<'_, PyAny>,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<Py<PyTensor>>>> {
    let roots = tensor_list(outputs, "outputs")?;
    let ins = tensor_list(inputs, "inputs")?;
    let grads = optional_tensors(grad_outputs, roots.len(), &roots)?;
    let result = super::gateway::enter(py, super::gateway::Cost::Heavy, || {
        engine::grad(&roots, &ins, &grads, retain_graph, create_graph, allow_unused)
    })?;
    result.into_iter().map(|g| g.map(|g| PyTensor::wrap(py, g)).transpose()).collect()
}

/// The user's Python location, for anomaly mode. The lookup runs Python code, so a signal handler
/// may raise in it (Ctrl-C's KeyboardInterrupt); the core cannot carry that error from here, so a
/// KeyboardInterrupt is handed back to the interpreter as a pending SIGINT (raised again at the
/// next check) and any other error is reported as unraisable, never silently dropped.
fn user_location() -> Option<String> {
    Python::attach(|py| {
        let found = (|| -> PyResult<String> {
            super::helpers::helpers(py)?.user_location.bind(py).call0()?.extract::<String>()
        })();
        match found {
            Ok(location) => Some(location),
            Err(e) => {
                if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                    // SAFETY: a documented C-API call, made with the GIL held.
                    unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                } else {
                    e.write_unraisable(py, None);
                }
                None
            }
        }
    })
}

/// Raises KeyboardInterrupt inside long Rust loops when the user pressed Ctrl-C.
fn check_interrupt() -> Result<()> {
    Python::attach(|py| {
        py.check_signals().map_err(|e| {
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                Error::Interrupted
            } else {
                // A signal handler of the user's raised something else: carry it as it is.
                super::errors::external(e)
            }
        })
    })
}

/// A Python callable as a node hook (`Node.register_hook` / `register_prehook`); the lock lets the
/// collector take it out to break a cycle, as for `PyGradHook`.
struct PyNodeHook {
    callable: parking_lot::Mutex<Option<Py<PyAny>>>,
}

fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    let items =
        grads.iter().map(|g| g.clone().map(|g| PyTensor::wrap(py, g)).transpose()).collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

impl crate::autograd::hooks::NodeHookFn for PyNodeHook {
    fn call(
        &self,
        grad_inputs: Option<&[Option<Tensor>]>,
        grad_outputs: &[Option<Tensor>],
    ) -> Result<Option<Vec<Option<Tensor>>>> {
        Python::attach(|py| -> PyResult<Option<Vec<Option<Tensor>>>> {
            let Some(hook) = self.callable.lock().as_ref().map(|c| c.clone_ref(py)) else { return Ok(None) };
            let outs = grads_tuple(py, grad_outputs)?;
            let r = match grad_inputs {
                Some(ins) => hook.bind(py).call1((grads_tuple(py, ins)?, outs))?,
                None => hook.bind(py).call1((outs,))?,
            };
            if r.is_none() {
                return Ok(None);
            }
            let items: Vec<Bound<'_, PyAny>> = match r.cast::<PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) => match r.cast::<pyo3::types::PyList>() {
                    Ok(l) => l.iter().collect(),
                    Err(_) => {
                        return Err(Error::Type(format!(
                            "a node hook must return a tuple of gradients or None, got {}",
                            r.get_type().name()?
                        ))
                        .into())
                    }
                },
            };
            items
                .iter()
                .map(|o| {
                    if o.is_none() {
                        Ok(None)
                    } else {
                        super::tensor::expect_tensor(o, "a node hook's gradient").map(Some)
                    }
                })
                .collect::<PyResult<Vec<_>>>()
                .map(Some)
        })
        .map_err(super::errors::external)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A Python callable run with the leaf after its `.grad` was accumulated.
struct PyPostAccumulateHook {
    callable: Py<PyAny>,
}

impl crate::autograd::hooks::PostAccumulateHookFn for PyPostAccumulateHook {
    fn call(&self, leaf: &Tensor) -> Result<()> {
        Python::attach(|py| -> PyResult<()> {
            let r = self.callable.bind(py).call1((PyTensor::wrap(py, leaf.clone())?,))?;
            if !r.is_none() {
                return Err(Error::Autograd("Tensor post accumulate grad hooks should return None.".into()).into());
            }
            Ok(())
        })
        .map_err(super::errors::external)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Queues `callback()` to run when the backward pass running on this thread has finished.
#[pyfunction]
fn _queue_callback(callback: Py<PyAny>) -> PyResult<()> {
    let f: engine::FinalCallback =
        Box::new(move || Python::attach(|py| callback.bind(py).call0().map(drop)).map_err(super::errors::external));
    Ok(engine::queue_callback(f)?)
}

/// The random generator's state, opaque (checkpointing restores it to recompute identically).
#[pyclass(name = "_RngState", module = "tapegrad", frozen)]
pub struct PyRngState(crate::tensor::random::RngState);

#[pyfunction]
fn _get_rng_state() -> PyRngState {
    PyRngState(crate::tensor::random::rng_state())
}

#[pyfunction]
fn _set_rng_state(state: PyRef<'_, PyRngState>) {
    crate::tensor::random::set_rng_state(&state.0);
}

/// Whether the backward run going on on this thread captures gradients (`grad`, `inputs=`).
#[pyfunction]
fn _current_backward_captures() -> bool {
    engine::current_backward_captures()
}

/// A number unique to the backward run going on on this thread, or None.
#[pyfunction]
fn _current_backward_id() -> Option<u64> {
    engine::current_backward_id()
}

/// Python saved-tensor hooks (`tg.autograd.graph.saved_tensors_hooks`).
struct PySavedHooks {
    pack: Py<PyAny>,
    unpack: Arc<Py<PyAny>>,
    check_version: bool,
}

/// What a Python pack hook returned, and the unpack hook to give it back.
struct PyPacked {
    value: Py<PyAny>,
    unpack: Arc<Py<PyAny>>,
}

impl saved::SavedTensorHooks for PySavedHooks {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn saved::PackedTensor>> {
        Python::attach(|py| {
            let arg = PyTensor::wrap(py, t.clone())?;
            let value = self.pack.bind(py).call1((arg,))?.unbind();
            Ok(Arc::new(PyPacked { value, unpack: self.unpack.clone() }) as Arc<dyn saved::PackedTensor>)
        })
        .map_err(super::errors::external)
    }

    fn checks_version(&self) -> bool {
        self.check_version
    }
}

impl saved::PackedTensor for PyPacked {
    fn unpack(&self) -> Result<Tensor> {
        Python::attach(|py| {
            let out = self.unpack.bind(py).call1((self.value.bind(py),))?;
            match out.cast::<PyTensor>() {
                Ok(t) => Ok(t.get().inner.clone()),
                Err(_) => Err(Error::Type(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    out.get_type().name()?
                ))
                .into()),
            }
        })
        .map_err(super::errors::external)
    }
}

/// Makes `(pack, unpack)` the innermost saved-tensor hooks of this thread.
#[pyfunction]
#[pyo3(signature = (pack, unpack, check_version=true))]
fn _push_saved_tensors_hooks(pack: Bound<'_, PyAny>, unpack: Bound<'_, PyAny>, check_version: bool) -> PyResult<()> {
    if !pack.is_callable() || !unpack.is_callable() {
        return Err(Error::Type("saved_tensors_hooks: pack_hook and unpack_hook must be callable".into()).into());
    }
    saved::push_saved_tensor_hooks(Arc::new(PySavedHooks {
        pack: pack.unbind(),
        unpack: Arc::new(unpack.unbind()),
        check_version,
    }));
    Ok(())
}

/// Removes the innermost saved-tensor hooks of this thread.
#[pyfunction]
fn _pop_saved_tensors_hooks() -> PyResult<()> {
    match saved::pop_saved_tensor_hooks() {
        Some(hooks) => {
            drop(hooks);
            Ok(())
        }
        None => Err(Error::Autograd("no saved-tensor hooks to remove on this thread".into()).into()),
    }
}

pub(crate) fn install_hooks() {
    anomaly::set_location_hook(user_location);
    engine::set_interrupt_hook(check_interrupt);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_check_nan, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_run_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(_queue_callback, m)?)?;
    m.add_function(wrap_pyfunction!(_current_backward_id, m)?)?;
    m.add_function(wrap_pyfunction!(_current_backward_captures, m)?)?;
    m.add_function(wrap_pyfunction!(_get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(_set_rng_state, m)?)?;
    m.add_class::<PyRngState>()?;
    m.add_function(wrap_pyfunction!(_run_grad_edges, m)?)?;
    m.add_function(wrap_pyfunction!(_run_from_edges, m)?)?;
    m.add_function(wrap_pyfunction!(_gradient_edge, m)?)?;
    m.add_function(wrap_pyfunction!(_increment_version, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    Ok(())
}
