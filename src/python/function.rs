//! Python custom functions: a `CustomOp` whose forward and backward call the user's Python class,
//! and whose backward result is checked before it reaches the engine (count, type, which argument),
//! so a mistake is reported with the function's and the parameter's names.

use std::borrow::Cow;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::errors::external;
use super::tensor::PyTensor;
use crate::autograd::custom::{apply_custom_with_node, BackwardCtx, CustomOp, ForwardCtx};
use crate::autograd::node::{graph_freed_error, Node};
use crate::error::{Error, Result};
use crate::Tensor;

/// Lets a Python ctx read its node's saved tensors (version-checked) without owning the node.
#[pyclass(module = "tapegrad", frozen)]
pub struct SavedHandle {
    node: Weak<Node>,
}

#[pymethods]
impl SavedHandle {
    fn unpack(&self, py: Python<'_>) -> PyResult<Vec<Py<PyTensor>>> {
        let node = self.node.upgrade().ok_or_else(graph_freed_error)?;
        let tensors = node.unpack_saved()?;
        tensors.into_iter().map(|t| PyTensor::wrap(py, t)).collect()
    }
}

struct PyFunctionOp {
    cls: Py<PyAny>,
    ctx: Py<PyAny>,
    args: Option<Py<PyTuple>>,
    params: Vec<String>,
    tensor_pos: Vec<usize>,
    name: String,
    once: bool,
    raw_output: Arc<Mutex<Option<Py<PyAny>>>>,
}

fn extract_tensors(list: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    list.try_iter()?.map(|o| super::tensor::expect_tensor(&o?, "a value marked on ctx")).collect()
}

impl PyFunctionOp {
    fn forward_py(&mut self, py: Python<'_>, fctx: &mut ForwardCtx, inputs: &[Tensor]) -> PyResult<Vec<Tensor>> {
        let args = self.args.take().ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("forward ran twice"))?;
        let args = args.bind(py);
        let mut call: Vec<Py<PyAny>> = Vec::with_capacity(args.len() + 1);
        call.push(self.ctx.clone_ref(py));
        let mut needs = vec![false; self.params.len()];
        let mut k = 0;
        for (j, a) in args.iter().enumerate() {
            if self.tensor_pos.get(k) == Some(&j) {
                needs[j] = fctx.needs_input_grad(k);
                call.push(PyTensor::wrap(py, inputs[k].clone())?.into_any());
                k += 1;
            } else {
                call.push(a.unbind());
            }
        }
        let ctx = self.ctx.bind(py);
        ctx.call_method1("_tg_begin_forward", (needs,))?;
        let result = self.cls.bind(py).getattr("forward")?.call1(PyTuple::new(py, call)?);
        ctx.call_method0("_tg_end_forward")?;
        let result = result?;
        let mut outputs = Vec::new();
        if let Ok(t) = result.cast::<PyTensor>() {
            outputs.push(t.get().inner.clone());
        } else if let Ok(tuple) = result.cast::<PyTuple>() {
            for item in tuple.iter() {
                if let Ok(t) = item.cast::<PyTensor>() {
                    outputs.push(t.get().inner.clone());
                }
            }
        } else if !result.is_none() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{}.forward must return a Tensor or a tuple (of Tensors and other values), got {}",
                self.name,
                result.get_type().name()?
            )));
        }
        *self.raw_output.lock() = Some(result.unbind());
        let to_save = ctx.call_method0("_tg_pack_saved")?;
        fctx.save_for_backward(&extract_tensors(&to_save)?)?;
        fctx.mark_dirty(&extract_tensors(&ctx.getattr("_tg_dirty")?)?);
        fctx.mark_non_differentiable(&extract_tensors(&ctx.getattr("_tg_non_differentiable")?)?);
        fctx.set_materialize_grads(ctx.getattr("_tg_materialize_grads")?.extract()?);
        Ok(outputs)
    }

    fn backward_py(&self, py: Python<'_>, grads: Vec<Option<Tensor>>) -> PyResult<Result<Vec<Option<Tensor>>>> {
        let py_grads = grads
            .into_iter()
            .map(|g| match g {
                Some(g) => Ok(PyTensor::wrap(py, g)?.into_any()),
                None => Ok(py.None()),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let result =
            self.cls.bind(py).getattr("_tg_backward")?.call1((self.ctx.bind(py), PyTuple::new(py, py_grads)?))?;
        let mut items: Vec<Bound<'_, PyAny>> = result.cast::<PyTuple>()?.iter().collect();
        let n = self.params.len();
        while items.len() > n && items.last().is_some_and(|o| o.is_none()) {
            items.pop();
        }
        if items.len() != n {
            return Ok(Err(Error::CustomFunction(format!(
                "function {}.backward returned an incorrect number of gradients: expected {n} (one per argument of forward: {}), got {}",
                self.name,
                self.params.join(", "),
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
            let param = &self.params[j];
            if !is_tensor_input {
                return Ok(Err(Error::CustomFunction(format!(
                    "function {}.backward returned a gradient for argument '{param}', but that argument of forward is not a Tensor (return None for it)",
                    self.name
                ))));
            }
            match item.cast::<PyTensor>() {
                Ok(t) => out.push(Some(t.get().inner.clone())),
                Err(_) => {
                    return Ok(Err(Error::CustomFunction(format!(
                        "function {}.backward returned a value of type {} as the gradient for argument '{param}'; expected a Tensor or None",
                        self.name,
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
        Cow::Owned(self.name.clone())
    }

    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Python::attach(|py| self.forward_py(py, ctx, inputs)).map_err(external)
    }

    fn backward(&self, _ctx: &BackwardCtx<'_>, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.backward_py(py, grads)).map_err(external)?
    }

    fn input_name(&self, i: usize) -> String {
        match self.tensor_pos.get(i).and_then(|&j| self.params.get(j)) {
            Some(p) => format!("argument '{p}'"),
            None => format!("input {i}"),
        }
    }

    fn release(&self) {
        Python::attach(|py| {
            let _ = self.ctx.bind(py).call_method0("_tg_release");
        });
    }

    fn once_differentiable(&self) -> bool {
        self.once
    }

    fn parallel_safe(&self) -> bool {
        false
    }
}

/// The Python ctx held by a node, when the node is a Python custom function.
pub(crate) fn python_ctx(node: &Node) -> Option<&Py<PyAny>> {
    node.formula().custom_op()?.downcast_ref::<PyFunctionOp>().map(|op| &op.ctx)
}

/// A ctx attribute that was one of the function's outputs, kept without its node so that the ctx
/// does not own the node that owns the ctx (see NOTE [Cycles through Rust] in `tensor.rs`).
#[pyclass(module = "tapegrad", frozen)]
pub struct OutputRef {
    data: Tensor,
    node: Weak<Node>,
    output_nr: usize,
}

#[pymethods]
impl OutputRef {
    fn get(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let t = self.data.detach();
        if let Some(node) = self.node.upgrade() {
            t.set_history(node, self.output_nr);
        }
        PyTensor::wrap(py, t)
    }
}

/// Replaces outputs stored as ctx attributes by `OutputRef`s.
fn detach_outputs_on_ctx(ctx: &Bound<'_, PyAny>, outputs: &[Tensor], node: &Arc<Node>) -> PyResult<()> {
    let dict = ctx.getattr("__dict__")?;
    let dict = dict.cast::<pyo3::types::PyDict>()?;
    let mut replace = Vec::new();
    for (k, v) in dict.iter() {
        if let Ok(t) = v.cast::<PyTensor>() {
            if let Some(nr) = outputs.iter().position(|o| o.same(&t.get().inner)) {
                replace.push((k, nr));
            }
        }
    }
    for (k, nr) in replace {
        let r = OutputRef { data: outputs[nr].detach(), node: Arc::downgrade(node), output_nr: nr };
        ctx.call_method1("_tg_store_output_ref", (k, r))?;
    }
    Ok(())
}

/// `Function.apply` after argument binding: runs the custom function and returns its outputs
/// (tensors get their history; other values pass through; identities kept where PyTorch keeps them).
#[pyfunction]
fn _function_apply(
    py: Python<'_>,
    cls: Py<PyAny>,
    ctx: Py<PyAny>,
    args: &Bound<'_, PyTuple>,
    name: String,
    params: Vec<String>,
    once_differentiable: bool,
) -> PyResult<Py<PyAny>> {
    let mut inputs = Vec::new();
    let mut tensor_pos = Vec::new();
    let mut originals = Vec::new();
    for (j, a) in args.iter().enumerate() {
        if let Ok(t) = a.cast::<PyTensor>() {
            inputs.push(t.get().inner.clone());
            tensor_pos.push(j);
            originals.push(a.clone());
        }
    }
    let raw_output = Arc::new(Mutex::new(None));
    let op = PyFunctionOp {
        cls,
        ctx: ctx.clone_ref(py),
        args: Some(args.clone().unbind()),
        params,
        tensor_pos,
        name,
        once: once_differentiable,
        raw_output: raw_output.clone(),
    };
    let (outputs, node) = apply_custom_with_node(op, &inputs)?;
    if let Some(node) = &node {
        ctx.bind(py).setattr("_tg_saved_handle", SavedHandle { node: Arc::downgrade(node) })?;
        detach_outputs_on_ctx(ctx.bind(py), &outputs, node)?;
    }
    let raw = raw_output.lock().take().unwrap_or_else(|| py.None());
    let raw = raw.bind(py);
    // The Python object to return for output k: the input object itself when a dirty input was
    // returned, the forward's own object when its tensor is unchanged, else a new wrapper.
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_function_apply, m)?)?;
    let _ = PyList::empty(m.py());
    Ok(())
}
