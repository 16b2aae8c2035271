//! `_optimizer_step`: the one native call per parameter group that `tapegrad.optim`'s optimizers
//! make (the math is in `ops/optim.rs`).

// The ValueErrors below are about calls of this private entry point that the Python optimizers never
// make (a missing hyperparameter, mismatched lists); the error enum has no ValueError for them.
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::gateway::{enter, Cost};
use super::tensor::{expect_tensor, PyTensor};
use crate::error::Error;
use crate::ops::optim::{Rule, Slot};
use crate::Tensor;

/// A number from the hyperparameter dict.
fn number(h: &Bound<'_, PyDict>, key: &str) -> PyResult<f64> {
    match h.get_item(key)? {
        Some(v) if !v.is_instance_of::<pyo3::types::PyBool>() => v
            .extract::<f64>()
            .map_err(|_| Error::Type(format!("optimizer hyperparameter {key} must be a number, got {v:?}")).into()),
        Some(v) => Err(Error::Type(format!("optimizer hyperparameter {key} must be a number, got {v:?}")).into()),
        None => Err(Error::InvalidArgument(format!("optimizer hyperparameter {key} is missing")).into()),
    }
}

/// A flag from the hyperparameter dict.
fn flag(h: &Bound<'_, PyDict>, key: &str) -> PyResult<bool> {
    match h.get_item(key)? {
        Some(v) => v
            .extract::<bool>()
            .map_err(|_| Error::Type(format!("optimizer flag {key} must be a bool, got {v:?}")).into()),
        None => Err(Error::InvalidArgument(format!("optimizer flag {key} is missing")).into()),
    }
}

fn rule(kind: &str, h: &Bound<'_, PyDict>) -> PyResult<Rule> {
    Ok(match kind {
        "sgd" => Rule::Sgd {
            lr: number(h, "lr")?,
            momentum: number(h, "momentum")?,
            dampening: number(h, "dampening")?,
            nesterov: flag(h, "nesterov")?,
            weight_decay: number(h, "weight_decay")?,
            maximize: flag(h, "maximize")?,
        },
        "adam" | "adamw" => Rule::Adam {
            lr: number(h, "lr")?,
            beta1: number(h, "beta1")?,
            beta2: number(h, "beta2")?,
            eps: number(h, "eps")?,
            weight_decay: number(h, "weight_decay")?,
            amsgrad: flag(h, "amsgrad")?,
            maximize: flag(h, "maximize")?,
            decoupled: kind == "adamw",
        },
        "rmsprop" => Rule::RmsProp {
            lr: number(h, "lr")?,
            alpha: number(h, "alpha")?,
            eps: number(h, "eps")?,
            weight_decay: number(h, "weight_decay")?,
            momentum: number(h, "momentum")?,
            centered: flag(h, "centered")?,
            maximize: flag(h, "maximize")?,
        },
        "adagrad" => Rule::Adagrad {
            lr: number(h, "lr")?,
            lr_decay: number(h, "lr_decay")?,
            weight_decay: number(h, "weight_decay")?,
            eps: number(h, "eps")?,
            maximize: flag(h, "maximize")?,
        },
        other => return Err(Error::InvalidArgument(format!("unknown optimizer kind {other:?}")).into()),
    })
}

/// Updates one parameter group in place: `params[i]` with `grads[i]`, its state tensors
/// `states[i]` (in the order `ops/optim.rs` documents; a `None` SGD momentum buffer is created and
/// takes the gradient) and its step counter `steps[i]` (None for SGD). Returns each parameter's
/// state list, with created buffers filled in. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (kind, params, grads, states, steps, hyper))]
fn _optimizer_step(
    py: Python<'_>,
    kind: &str,
    params: Vec<Bound<'_, PyAny>>,
    grads: Vec<Bound<'_, PyAny>>,
    states: Vec<Vec<Bound<'_, PyAny>>>,
    steps: Vec<Bound<'_, PyAny>>,
    hyper: &Bound<'_, PyDict>,
) -> PyResult<Vec<Vec<Py<PyTensor>>>> {
    let rule = rule(kind, hyper)?;
    let n = params.len();
    if grads.len() != n || states.len() != n || steps.len() != n {
        return Err(Error::InvalidArgument(format!(
            "_optimizer_step: {n} params but {} grads, {} state lists and {} steps",
            grads.len(),
            states.len(),
            steps.len()
        ))
        .into());
    }
    let mut slots = Vec::with_capacity(n);
    for i in 0..n {
        let param = expect_tensor(&params[i], "a parameter")?;
        let grad = expect_tensor(&grads[i], "a gradient")?;
        let mut fresh = false;
        let mut st: Vec<Tensor> = Vec::with_capacity(states[i].len());
        for s in &states[i] {
            if s.is_none() && matches!(rule, Rule::Sgd { .. }) {
                fresh = true;
                st.push(Tensor::zeros(param.shape(), param.dtype())?);
            } else {
                st.push(expect_tensor(s, "an optimizer state entry")?);
            }
        }
        let step = if steps[i].is_none() { None } else { Some(expect_tensor(&steps[i], "a step counter")?) };
        slots.push(Slot { param, grad, states: st, step, fresh });
    }
    enter(py, Cost::Heavy, || crate::ops::optim::step(&rule, &slots))?;
    slots.into_iter().map(|s| s.states.into_iter().map(|t| PyTensor::wrap(py, t)).collect()).collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_optimizer_step, m)?)
}
