//! Python custom functions: a `CustomOp` whose forward and backward call the user's Python class,
//! and whose backward result is checked before it reaches the engine (count, type, which argument),
//! so a mistake is reported with the function's and the parameter's names.
//!
//! `Function.apply` is this module's `_function_apply`: what it learns about a class (forward's
//! parameter names, the node name, once-differentiability) is computed once by the Python `_Spec`
//! and kept on the class itself (`_tg_function_spec`), so a call with positional arguments does
//! no signature work at all, and a class defined in a loop is freed with what was learned about it.

use std::borrow::Cow;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{intern, PyTraverseError, PyVisit};
use smallvec::SmallVec;

use super::ctx::PyCtx;
use super::errors::external;
use super::tensor::PyTensor;
use crate::autograd::custom::{apply_custom_with_node, BackwardCtx, CustomOp, ForwardCtx};
use crate::autograd::node::Node;
use crate::error::{Error, Result};
use crate::Tensor;

/// What `apply` needs to know about a `Function` subclass, computed once.
struct Spec {
    binder: Py<PyAny>,
    name: String,
    /// `name` + `Backward`, made once rather than per call.
    node_name: String,
    names: Arc<[String]>,
    simple: bool,
    once: bool,
    /// The class attribute that is backward: `backward`, or `vjp` (its other name).
    backward_attr: Py<PyString>,
    /// `clear_saved_tensors_on_access`: backward may read the saved values once.
    clear_on_access: bool,
    /// PyTorch 2's spelling: `forward(*args)` takes no ctx and `setup_context(ctx, inputs, output)`
    /// fills the ctx after it.
    setup_context: bool,
}

/// A class's `Spec`, kept as an attribute of the class itself so that it dies with the class (a
/// class defined per call, as `custom_gradient` does, is freed with everything it learned).
#[pyclass(name = "_FunctionSpec", module = "tapegrad", frozen)]
struct SpecHolder {
    /// The class the spec was computed for: a subclass finds its parent's holder by attribute
    /// lookup and must compute its own.
    owner: usize,
    spec: Arc<Spec>,
}

#[pymethods]
impl SpecHolder {
    fn __traverse__(&self, visit: PyVisit<'_>) -> std::result::Result<(), PyTraverseError> {
        if Arc::strong_count(&self.spec) == 1 {
            visit.call(&self.spec.binder)?;
        }
        Ok(())
    }
}

fn spec_for(cls: &Bound<'_, PyType>) -> PyResult<Arc<Spec>> {
    let py = cls.py();
    let key = cls.as_ptr() as usize;
    if let Ok(holder) = cls.getattr(intern!(py, "_tg_function_spec")) {
        if let Ok(holder) = holder.cast::<SpecHolder>() {
            if holder.get().owner == key {
                return Ok(holder.get().spec.clone());
            }
        }
    }
    let binder = super::helpers::helpers(py)?.function_spec.bind(py).call1((cls,))?;
    let names: Vec<String> = binder.getattr("names")?.extract()?;
    let name: String = binder.getattr("name")?.extract()?;
    let spec = Arc::new(Spec {
        node_name: format!("{name}Backward"),
        name,
        names: Arc::from(names),
        simple: binder.getattr("simple")?.extract()?,
        once: binder.getattr("once")?.extract()?,
        backward_attr: binder.getattr("backward_attr")?.cast_into::<PyString>()?.unbind(),
        clear_on_access: binder.getattr("clear_on_access")?.extract()?,
        setup_context: binder.getattr("setup_context")?.extract()?,
        binder: binder.unbind(),
    });
    let holder = Py::new(py, SpecHolder { owner: key, spec: spec.clone() })?;
    cls.setattr(intern!(py, "_tg_function_spec"), holder)?;
    Ok(spec)
}

/// The arguments of a call into Python, inline for the usual few.
type Args = smallvec::SmallVec<[Py<PyAny>; 6]>;

struct PyFunctionOp {
    cls: Py<PyAny>,
    backward_attr: Py<PyString>,
    ctx: Py<PyCtx>,
    args: Option<Py<PyTuple>>,
    names: Arc<[String]>,
    /// Which arguments of forward are tensors (the op's inputs, in order).
    tensor_pos: SmallVec<[usize; 4]>,
    /// The class's spec (its name, the node's name).
    spec: Arc<Spec>,
    once: bool,
    /// For each value forward returned: is it a tensor? Backward gets one argument per value
    /// (None for the others), as in PyTorch.
    output_is_tensor: SmallVec<[bool; 4]>,
    /// `forward` takes no ctx; `setup_context(ctx, inputs, output)` runs after it.
    setup_context: bool,
    /// forward called `save_for_backward`: releasing the graph has saved values to free (else the
    /// release takes no GIL).
    saved_any: bool,
    /// forward called `save_for_forward`: after the tangents were computed there is something to
    /// free (else `jvp_done` takes no GIL).
    saved_for_forward: bool,
}

impl PyFunctionOp {
    fn forward_py(&mut self, py: Python<'_>, fctx: &mut ForwardCtx, inputs: &[Tensor]) -> PyResult<Vec<Tensor>> {
        let args = self.args.take().ok_or_else(|| crate::error::Error::CustomFunction("forward ran twice".into()))?;
        let args = args.bind(py);
        let ctx = self.ctx.bind(py);
        let mut call: Args = Args::with_capacity(args.len() + 1);
        if !self.setup_context {
            call.push(ctx.clone().into_any().unbind());
        }
        let mut needs: smallvec::SmallVec<[bool; 8]> = smallvec::smallvec![false; self.names.len()];
        let mut k = 0;
        for (j, a) in args.iter().enumerate() {
            if self.tensor_pos.get(k) == Some(&j) {
                needs[j] = fctx.needs_input_grad(k);
                // As PyTorch: forward gets the caller's own tensor objects (grad mode is off), not
                // new detached ones (NOTE [Forward sees the caller's tensors]).
                call.push(a.unbind());
                k += 1;
            } else {
                call.push(a.unbind());
            }
        }
        // The ctx is borrowed only while values move in or out (NOTE [Borrowing the ctx]).
        {
            let mut c = ctx.try_borrow_mut()?;
            c.needs.clear();
            c.needs.extend_from_slice(&needs);
            c.in_forward = true;
        }
        let cls = self.cls.bind(py);
        // As PyTorch: forward computes no tangents (a rule for them is the Function's jvp).
        let mut result = {
            let _fwd_off = crate::autograd::forward::FwdGradGuard::new(false);
            cls.getattr(intern!(py, "forward"))?.call1(PyTuple::new(py, call)?)
        };
        if self.setup_context {
            // As PyTorch: setup_context sees the inputs as the caller gave them (with their
            // history) and forward's output as it returned it, still without history.
            if let Ok(output) = &result {
                let setup = cls.getattr(intern!(py, "setup_context"))?;
                if let Err(e) = setup.call1((ctx, args, output)) {
                    result = Err(e);
                }
            }
        }
        ctx.try_borrow_mut()?.in_forward = false;
        let result = result?;
        let mut outputs = Vec::new();
        if let Ok(t) = result.cast::<PyTensor>() {
            outputs.push(t.get().inner.clone());
            self.output_is_tensor.push(true);
        } else if let Ok(tuple) = result.cast::<PyTuple>() {
            for item in tuple.iter() {
                let t = item.cast::<PyTensor>();
                self.output_is_tensor.push(t.is_ok());
                if let Ok(t) = t {
                    outputs.push(t.get().inner.clone());
                }
            }
        } else if !result.is_none() {
            return Err(crate::error::Error::Type(format!(
                "{}.forward must return a Tensor or a tuple (of Tensors and other values), got {}",
                self.spec.name,
                result.get_type().name()?
            ))
            .into());
        }
        let (saved, dirty, non_differentiable, materialize) = {
            let mut c = ctx.try_borrow_mut()?;
            // For `apply_values`, which builds its result from it (also when a check below fails).
            c.raw_output = Some(result.unbind());
            let saved = c.pack(py);
            self.saved_any = c.has_saved();
            self.saved_for_forward = c.for_forward.is_some();
            (saved, std::mem::take(&mut c.dirty), std::mem::take(&mut c.non_differentiable), c.materialize_grads)
        };
        fctx.save_for_backward(&saved)?;
        // As PyTorch: a tensor that is no input is an error when it is a view, else ignored with a
        // warning.
        // `inputs` are the caller's tensors (NOTE [Forward sees the caller's tensors])
        let is_input = |d: &Tensor| inputs.iter().any(|t| t.same(d));
        const NOT_AN_INPUT: &std::ffi::CStr = c"ctx.mark_dirty() received a tensor that was not an input. Only \
            input Tensors that have been mutated should be passed to ctx.mark_dirty().";
        if dirty.iter().any(|d| !is_input(d) && d.base().is_some()) {
            let msg = format!("{}: {}", self.spec.name, NOT_AN_INPUT.to_string_lossy());
            return Err(crate::error::Error::CustomFunction(msg).into());
        }
        if !dirty.iter().all(is_input) {
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), NOT_AN_INPUT, 1)?;
        }
        let dirty: Vec<Tensor> = dirty.into_iter().filter(is_input).collect();
        if self.setup_context {
            // As PyTorch: with setup_context, an input returned as it is (not marked dirty) may not
            // be saved, for backward or for forward.
            let for_forward: Vec<Tensor> = ctx
                .try_borrow()?
                .for_forward
                .iter()
                .flatten()
                .filter_map(|o| o.bind(py).cast::<PyTensor>().ok().map(|t| t.get().inner.clone()))
                .collect();
            let slot = |t: &Tensor| inputs.iter().position(|i| i.same(t));
            let dirty_slots: Vec<usize> = dirty.iter().filter_map(slot).collect();
            let saved_slots: Vec<usize> = saved.iter().chain(&for_forward).filter_map(slot).collect();
            let as_is = |o: &Tensor| slot(o).filter(|k| !dirty_slots.contains(k));
            if outputs.iter().filter_map(as_is).any(|k| saved_slots.contains(&k)) {
                return Err(crate::error::Error::autograd(
                    "An input that has been returned as-is as output is being saved for backward. This is not \
                     supported if you override setup_context. You should return and save a view of the input \
                     instead, e.g. with x.view_as(x) or setup ctx inside the forward function itself.",
                )
                .into());
            }
        }
        fctx.mark_dirty(&dirty);
        fctx.mark_non_differentiable(&non_differentiable);
        fctx.set_materialize_grads(materialize);
        Ok(outputs)
    }

    /// Calls the class's `jvp(ctx, *tangents)`: one tangent per argument of forward (None for the
    /// arguments that are not tensors), one tangent back per tensor output.
    fn jvp_py(&self, py: Python<'_>, tangents: Vec<Tensor>) -> PyResult<Result<Vec<Option<Tensor>>>> {
        let mut call: Vec<Py<PyAny>> = Vec::with_capacity(self.names.len() + 1);
        track_ctx(self.ctx.bind(py));
        call.push(self.ctx.clone_ref(py).into_any());
        let mut tangents = tangents.into_iter();
        for j in 0..self.names.len() {
            let t = if self.tensor_pos.contains(&j) { tangents.next() } else { None };
            call.push(match t {
                Some(t) => PyTensor::wrap(py, t)?.into_any(),
                None => py.None(),
            });
        }
        let ctx = self.ctx.bind(py);
        ctx.try_borrow_mut()?.in_jvp = true;
        let result = self.cls.bind(py).getattr(intern!(py, "jvp")).and_then(|f| f.call1(PyTuple::new(py, call)?));
        ctx.try_borrow_mut()?.in_jvp = false;
        let result = result?;
        let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = result.cast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = result.cast::<PyList>() {
            l.iter().collect()
        } else {
            vec![result]
        };
        // One per value forward returned; the tangents of its non-tensor values are dropped.
        let items: Vec<Bound<'_, PyAny>> = if items.len() == self.output_is_tensor.len() {
            items.into_iter().zip(&self.output_is_tensor).filter(|(_, &t)| t).map(|(i, _)| i).collect()
        } else {
            items
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            if item.is_none() {
                out.push(None);
                continue;
            }
            match item.cast::<PyTensor>() {
                Ok(t) => out.push(Some(t.get().inner.clone())),
                Err(_) => {
                    return Ok(Err(Error::CustomFunction(format!(
                        "function {}.jvp returned a value of type {} as a tangent; expected a Tensor or None",
                        self.spec.name,
                        item.get_type().name()?
                    ))))
                }
            }
        }
        Ok(Ok(out))
    }

    fn backward_py(&self, py: Python<'_>, grads: Vec<Option<Tensor>>) -> PyResult<Result<Vec<Option<Tensor>>>> {
        let mut call: Args = Args::with_capacity(grads.len() + 1);
        track_ctx(self.ctx.bind(py));
        call.push(self.ctx.clone_ref(py).into_any());
        let mut grads = grads.into_iter();
        for &is_tensor in &self.output_is_tensor {
            let g = if is_tensor { grads.next().flatten() } else { None };
            call.push(match g {
                Some(g) => PyTensor::wrap(py, g)?.into_any(),
                None => py.None(),
            });
        }
        let result = self.cls.bind(py).getattr(self.backward_attr.bind(py))?.call1(PyTuple::new(py, call)?)?;
        let n = self.names.len();
        let mut items: smallvec::SmallVec<[Bound<'_, PyAny>; 4]> = if let Ok(d) = result.cast::<PyDict>() {
            for k in d.keys() {
                let key: String = k.extract()?;
                if !self.names.contains(&key) {
                    return Ok(Err(Error::CustomFunction(format!(
                        "function {}.backward returned a gradient for unknown argument '{key}'; forward's arguments are: {}",
                        self.spec.name,
                        self.names.join(", ")
                    ))));
                }
            }
            self.names
                .iter()
                .map(|k| Ok(d.get_item(k)?.unwrap_or_else(|| py.None().into_bound(py))))
                .collect::<PyResult<_>>()?
        } else if let Ok(t) = result.cast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = result.cast::<PyList>() {
            l.iter().collect()
        } else {
            smallvec::smallvec![result]
        };
        while items.len() > n && items.last().is_some_and(|o| o.is_none()) {
            items.pop();
        }
        if items.len() != n {
            return Ok(Err(Error::CustomFunction(format!(
                "function {}.backward returned an incorrect number of gradients: expected {n} (one per argument of forward: {}), got {}",
                self.spec.name,
                self.names.join(", "),
                items.len()
            ))));
        }
        let mut out = Vec::with_capacity(self.tensor_pos.len());
        for (j, item) in items.iter().enumerate() {
            let is_tensor_input = self.tensor_pos.contains(&j);
            if item.is_none() {
                if is_tensor_input {
                    out.push(None);
                }
                continue;
            }
            let param = &self.names[j];
            if !is_tensor_input {
                return Ok(Err(Error::CustomFunction(format!(
                    "function {}.backward returned a gradient for argument '{param}', but that argument of forward is not a Tensor (return None for it)",
                    self.spec.name
                ))));
            }
            match item.cast::<PyTensor>() {
                Ok(t) => out.push(Some(t.get().inner.clone())),
                Err(_) => {
                    return Ok(Err(Error::CustomFunction(format!(
                        "function {}.backward returned a value of type {} as the gradient for argument '{param}'; expected a Tensor or None",
                        self.spec.name,
                        item.get_type().name()?
                    ))))
                }
            }
        }
        Ok(Ok(out))
    }
}

impl CustomOp for PyFunctionOp {
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.spec.name.clone())
    }

    fn node_name(&self) -> Cow<'static, str> {
        Cow::Owned(self.spec.node_name.clone())
    }

    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Python::attach(|py| self.forward_py(py, ctx, inputs)).map_err(external)
    }

    // NOTE [Forward sees the caller's tensors]: as in PyTorch, `forward` receives the tensor
    // objects the caller passed (with their history and `requires_grad`), under no_grad; what it
    // computes from them has no history, an input it returns unchanged becomes a new output object
    // (an alias: `ForwardRun::output_handles`), and what it does to them on purpose (a hook, an
    // in-place write marked dirty, a backward under enable_grad) reaches the caller's tensors as in
    // PyTorch. Until issue 19 forward got detached copies (one tensor and one Python object per
    // argument per call; README listed it as a difference).
    fn detach_inputs(&self) -> bool {
        false
    }

    fn backward(&self, _ctx: &BackwardCtx<'_>, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.backward_py(py, grads)).map_err(external)?
    }

    fn input_name(&self, i: usize) -> String {
        match self.tensor_pos.get(i).and_then(|&j| self.names.get(j)) {
            Some(p) => format!("argument '{p}'"),
            None => format!("input {i}"),
        }
    }

    fn release(&self) {
        // A ctx that saved nothing has nothing to free here (its attributes go with the node): no
        // GIL round trip per node in backward.
        if !self.saved_any {
            return;
        }
        Python::attach(|py| {
            let released = self.ctx.bind(py).try_borrow_mut().ok().map(|mut c| c.release());
            drop(released);
        });
    }

    fn once_differentiable(&self) -> bool {
        self.once
    }

    fn jvp(&self, tangents: Vec<Tensor>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.jvp_py(py, tangents)).map_err(external)?
    }

    fn jvp_done(&self) {
        if !self.saved_for_forward {
            return;
        }
        // `save_for_forward`'s tensors serve every level's jvp call, then go (outside the ctx's
        // borrow: dropping them may run Python code)
        Python::attach(|py| {
            let dropped = self.ctx.bind(py).try_borrow_mut().ok().and_then(|mut c| c.for_forward.take());
            drop(dropped);
        });
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn output_slots(&self) -> Option<Vec<bool>> {
        (!self.output_is_tensor.iter().all(|&t| t)).then(|| self.output_is_tensor.to_vec())
    }
}

/// The Python ctx held by a node, when the node is a Python custom function (for GC traversal).
pub(crate) fn visit_python_ctx(node: &Node, visit: &PyVisit<'_>) -> std::result::Result<(), PyTraverseError> {
    if let Some(op) = node.formula().custom_op().and_then(|op| op.downcast_ref::<PyFunctionOp>()) {
        visit.call(&op.ctx)?;
        // The class too: a class attribute may hold the output (`F.last = out`).
        visit.call(&op.cls)?;
    }
    Ok(())
}

/// The ctx's `__dict__`, None when no attribute was ever set. Read from the object's dict slot: the
/// attribute lookup of `__dict__` cost about 230 instructions per call of W3 and made an empty dict.
fn ctx_dict<'py>(ctx: &Bound<'py, PyCtx>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let obj = ctx.as_ptr();
    // SAFETY: `obj` is a live object (we hold a reference) whose type object is live with it; a
    // positive `tp_dictoffset` is the offset of its `PyObject *` dict slot, which is null or a
    // dict the object owns, borrowed here for as long as `ctx`.
    unsafe {
        let offset = (*pyo3::ffi::Py_TYPE(obj)).tp_dictoffset;
        if offset > 0 {
            let slot = obj.cast::<u8>().offset(offset).cast::<*mut pyo3::ffi::PyObject>();
            let dict = *slot;
            if dict.is_null() {
                return Ok(None);
            }
            return Ok(Some(Bound::from_borrowed_ptr(ctx.py(), dict).cast_into::<PyDict>()?));
        }
    }
    Ok(Some(ctx.getattr(intern!(ctx.py(), "__dict__"))?.cast_into::<PyDict>()?))
}

/// Whether Python's garbage collector tracks `obj`.
fn is_gc_tracked(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a live object.
    unsafe { pyo3::ffi::PyObject_GC_IsTracked(obj.as_ptr()) != 0 }
}

// NOTE [Untracked ctx]: a Python custom function's ctx lives as long as its node, so a chain of
// calls (W3: 1,000) keeps one ctx per call in the collector's young generation, and each of the
// collections that the chain's allocations set off traversed all of them: about 340 instructions
// per call (callgrind), a fifth of W3's gap to its target. Yet nearly every ctx can be in no cycle:
// only the node and `apply` hold it (its reference count says so), it holds no Python object of
// its own (saved values that are not tensors, `save_for_forward`'s tensors) and its `__dict__` is
// absent or untracked (holds only atomic values such as the `constant` of W3; CPython tracks a dict
// as soon as a container enters it). Such a ctx is untracked once `apply` is done with it. Any
// cycle through it would need a reference to it, and the only ones Python code can get from then
// on are the arguments of `backward` and `jvp`, which track it again first (`track_ctx`). (An
// output's `grad_fn` is a `tg.Node`, not the ctx, docs/differences.md; anything that
// one day hands the ctx out elsewhere must call `track_ctx` first, or a cycle through it leaks.) A ctx
// kept elsewhere during forward (more references) stays tracked. An untracked object is still
// visited, freed and deallocated as usual; only the collector does not look at it.

/// Stops the collector from tracking `ctx` when nothing can make it part of a cycle (NOTE
/// [Untracked ctx]). `ctx` is held by the node and by the caller, and by nothing else.
fn untrack_private_ctx(ctx: &Bound<'_, PyCtx>) -> PyResult<()> {
    // SAFETY: a live object.
    let references = unsafe { pyo3::ffi::Py_REFCNT(ctx.as_ptr()) };
    if references != 2 || ctx.try_borrow().map_or(true, |c| c.holds_python_objects()) {
        return Ok(());
    }
    if ctx_dict(ctx)?.is_some_and(|d| is_gc_tracked(d.as_any())) {
        return Ok(());
    }
    // SAFETY: a live object of a type with garbage-collection support, tracked (checked first).
    unsafe {
        if pyo3::ffi::PyObject_GC_IsTracked(ctx.as_ptr()) != 0 {
            pyo3::ffi::PyObject_GC_UnTrack(ctx.as_ptr().cast());
        }
    }
    Ok(())
}

/// Tracks `ctx` again before Python code gets it (NOTE [Untracked ctx]).
fn track_ctx(ctx: &Bound<'_, PyCtx>) {
    // SAFETY: a live object of a type with garbage-collection support, untracked (checked first).
    unsafe {
        if pyo3::ffi::PyObject_GC_IsTracked(ctx.as_ptr()) == 0 {
            pyo3::ffi::PyObject_GC_Track(ctx.as_ptr().cast());
        }
    }
}

/// Moves outputs that the user kept as ctx attributes out of the ctx's `__dict__` into weak
/// references (see NOTE [Cycles through Rust] in `tensor.rs`).
fn detach_outputs_on_ctx(ctx: &Bound<'_, PyCtx>, outputs: &[Tensor], node: &Arc<Node>) -> PyResult<()> {
    let Some(dict) = ctx_dict(ctx)? else { return Ok(()) };
    // An untracked dict holds no container (CPython tracks a dict when it gets one), so no tensor.
    if dict.is_empty() || !is_gc_tracked(dict.as_any()) {
        return Ok(());
    }
    let mut found = Vec::new();
    for (k, v) in dict.iter() {
        if let Ok(t) = v.cast::<PyTensor>() {
            // Only outputs that carry this node's history would form a cycle (a non-differentiable
            // output stays as it is).
            let has_node = |o: &Tensor| o.grad_fn().is_some_and(|f| Arc::ptr_eq(&f, node));
            if let Some(nr) = outputs.iter().position(|o| o.same(&t.get().inner) && has_node(o)) {
                found.push((k.extract::<String>()?, nr));
            }
        }
    }
    for (k, nr) in found {
        dict.del_item(&k)?;
        ctx.try_borrow_mut()?.keep_output_ref(k, &outputs[nr], node, nr);
    }
    Ok(())
}

/// Runs a custom function on bound argument values.
fn apply_values(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    values: &Bound<'_, PyTuple>,
    names: Arc<[String]>,
    spec: &Arc<Spec>,
) -> PyResult<Py<PyAny>> {
    // inline for the usual few arguments: no allocation per call (NOTE [Per-operation overhead])
    let mut inputs: SmallVec<[Tensor; 4]> = SmallVec::new();
    let mut tensor_pos: SmallVec<[usize; 4]> = SmallVec::new();
    let mut originals: SmallVec<[Bound<'_, PyAny>; 4]> = SmallVec::new();
    for (j, a) in values.iter().enumerate() {
        if let Ok(t) = a.cast::<PyTensor>() {
            inputs.push(t.get().inner.clone());
            tensor_pos.push(j);
            originals.push(a.clone());
        }
    }
    let mut new_ctx = PyCtx::new(names.clone());
    new_ctx.clear_on_access = spec.clear_on_access;
    let ctx = Bound::new(py, new_ctx)?;
    let op = PyFunctionOp {
        cls: cls.clone().into_any().unbind(),
        backward_attr: spec.backward_attr.clone_ref(py),
        ctx: ctx.clone().unbind(),
        args: Some(values.clone().unbind()),
        names,
        tensor_pos,
        spec: spec.clone(),
        once: spec.once,
        output_is_tensor: SmallVec::new(),
        setup_context: spec.setup_context,
        saved_any: false,
        saved_for_forward: false,
    };
    let result = apply_custom_with_node(op, &inputs);
    // forward's own return value (also taken when a later check failed; none when forward failed
    // before returning); dropped, if it is, outside the ctx's borrow
    let raw = ctx.try_borrow_mut().ok().and_then(|mut c| c.raw_output.take());
    let (outputs, node) = result?;
    if let Some(node) = &node {
        let copies = ctx.try_borrow_mut()?.attach(node);
        drop(copies);
        detach_outputs_on_ctx(&ctx, &outputs, node)?;
        untrack_private_ctx(&ctx)?;
    }
    let raw = raw.unwrap_or_else(|| py.None());
    let raw = raw.bind(py);
    // The object to return for output k: the input object itself when a dirty input was returned,
    // forward's own object when its tensor is unchanged, else a new wrapper.
    let finish = |k: usize, original: &Bound<'_, PyAny>| -> PyResult<Py<PyAny>> {
        let out = &outputs[k];
        if let Some(i) = inputs.iter().position(|t| t.same(out)) {
            return Ok(originals[i].clone().unbind());
        }
        if original.cast::<PyTensor>().is_ok_and(|t| t.get().inner.same(out)) {
            return Ok(original.clone().unbind());
        }
        Ok(PyTensor::wrap(py, out.clone())?.into_any())
    };
    if raw.cast::<PyTensor>().is_ok() {
        return finish(0, raw);
    }
    if let Ok(tuple) = raw.cast::<PyTuple>() {
        let mut k = 0;
        let mut items = Vec::with_capacity(tuple.len());
        for item in tuple.iter() {
            if item.cast::<PyTensor>().is_ok() {
                items.push(finish(k, &item)?);
                k += 1;
            } else {
                items.push(item.unbind());
            }
        }
        return Ok(PyTuple::new(py, items)?.into_any().unbind());
    }
    Ok(raw.clone().unbind())
}

/// `Function.apply(*args, **kwargs)`, bound to a class as a classmethod.
#[pyfunction]
#[pyo3(signature = (cls, *args, **kwargs))]
fn _function_apply(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let spec = spec_for(cls)?;
    let no_kwargs = kwargs.is_none_or(|k| k.is_empty());
    if no_kwargs && spec.simple && args.len() == spec.names.len() {
        return apply_values(py, cls, args, spec.names.clone(), &spec);
    }
    let bound = spec.binder.bind(py).call_method1(intern!(py, "bind"), (args, kwargs))?;
    let values = bound.get_item(0)?;
    let names: Vec<String> = bound.get_item(1)?.extract()?;
    apply_values(py, cls, values.cast::<PyTuple>()?, Arc::from(names), &spec)
}

/// Apply with values already bound and named by the caller (`custom_gradient`).
#[pyfunction]
fn _function_apply_named(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    values: &Bound<'_, PyTuple>,
    names: Vec<String>,
) -> PyResult<Py<PyAny>> {
    let spec = spec_for(cls)?;
    apply_values(py, cls, values, Arc::from(names), &spec)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_function_apply, m)?)?;
    m.add_function(wrap_pyfunction!(_function_apply_named, m)?)?;
    Ok(())
}
