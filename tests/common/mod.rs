//! Shared test helpers: a central finite-difference oracle in float64.
#![allow(dead_code)]

use tapegrad::{DType, Tensor};

/// A float64 leaf from values.
pub fn leaf(values: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape).unwrap().requires_grad_(true).unwrap()
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Fresh float64 tensors of `base` (the inputs' values, with the inputs' shapes), element `i` of input
/// `which` moved by `delta`.
fn perturbed(base: &[Vec<f64>], inputs: &[Tensor], which: usize, i: usize, delta: f64) -> Vec<Tensor> {
    base.iter()
        .zip(inputs)
        .enumerate()
        .map(|(k, (v, t))| {
            let mut v = v.clone();
            if k == which {
                v[i] += delta;
            }
            Tensor::from_vec(v, t.shape()).unwrap()
        })
        .collect()
}

/// Central differences of `f(inputs).sum()` with respect to input `which`.
pub fn numeric_grad(f: &dyn Fn(&[Tensor]) -> Tensor, inputs: &[Tensor], which: usize) -> Vec<f64> {
    let eps = 1e-6;
    let base: Vec<Vec<f64>> = inputs.iter().map(|t| t.to_vec::<f64>().unwrap()).collect();
    let mut out = Vec::new();
    for i in 0..base[which].len() {
        let eval = |delta: f64| f(&perturbed(&base, inputs, which, i, delta)).sum(None, false).unwrap().item().unwrap();
        out.push((eval(eps) - eval(-eps)) / (2.0 * eps));
    }
    out
}

/// Checks analytic gradients of `f(inputs).sum()` against central differences for every input.
pub fn check_grads(f: &dyn Fn(&[Tensor]) -> Tensor, inputs: &[Tensor]) {
    for t in inputs {
        t.set_grad(None).unwrap();
    }
    f(inputs).sum(None, false).unwrap().backward_default().unwrap();
    for (k, t) in inputs.iter().enumerate() {
        let analytic = t.grad().expect("gradient reached the input").to_vec::<f64>().unwrap();
        let numeric = numeric_grad(f, inputs, k);
        for (a, n) in analytic.iter().zip(&numeric) {
            assert!((a - n).abs() <= 1e-5 + 1e-4 * n.abs(), "input {k}: analytic {a} vs numeric {n}");
        }
    }
}

/// A float64 tensor's values.
pub fn vals(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::Float64).unwrap().to_vec::<f64>().unwrap()
}

// ---- The generic finite-difference oracle used by tests/op_gradients.rs and tests/custom_op.rs ----

/// Tolerances of `check_fd_with`.
#[derive(Clone, Copy, Debug)]
pub struct Fd {
    /// Step of the central difference.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (of the numeric value).
    pub rtol: f64,
}

impl Default for Fd {
    fn default() -> Self {
        Fd { eps: 1e-6, atol: 1e-6, rtol: 1e-5 }
    }
}

/// A float64 leaf of `shape` with deterministic values in `[lo, hi)`.
pub fn leaf_in(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Tensor {
    let n = shape.iter().product();
    let v: Vec<f64> = values(n, seed).into_iter().map(|x| lo + (x + 1.0) / 2.0 * (hi - lo)).collect();
    leaf(&v, shape)
}

/// A float64 leaf of `shape` with deterministic values in `[-1, 1)`.
pub fn rand_leaf(shape: &[usize], seed: u64) -> Tensor {
    leaf(&values(shape.iter().product(), seed), shape)
}

/// The scalar `sum(f(inputs) * w)` with fixed pseudo-random weights `w` of the output's shape. The
/// weights make every output element count differently, so a gradient that lands in the wrong place
/// (a transposed or permuted gradient) is caught, which a plain `sum` would miss.
fn weighted_loss(out: &Tensor) -> tapegrad::Result<Tensor> {
    let w = Tensor::from_vec(values(out.numel(), 977), out.shape())?;
    out.to_dtype(DType::Float64)?.mul(&w)?.sum(None, false)
}

/// Checks the analytic gradient of `f` at `inputs` (float64 leaves) against central finite
/// differences, for every input and every element: `d/dx_i sum(f(x) * w)`. An input that receives
/// no gradient must have a zero numeric gradient.
pub fn check_fd(name: &str, f: impl Fn(&[Tensor]) -> tapegrad::Result<Tensor>, inputs: &[Tensor]) {
    check_fd_with(name, Fd::default(), f, inputs)
}

/// `check_fd` with explicit tolerances.
pub fn check_fd_with(name: &str, fd: Fd, f: impl Fn(&[Tensor]) -> tapegrad::Result<Tensor>, inputs: &[Tensor]) {
    for t in inputs {
        assert!(t.is_leaf() && t.requires_grad(), "{name}: inputs must be leaves that require grad");
        t.set_grad(None).unwrap();
    }
    let out = f(inputs).unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    weighted_loss(&out).unwrap().backward_default().unwrap_or_else(|e| panic!("{name}: backward failed: {e}"));
    let base: Vec<Vec<f64>> = inputs.iter().map(|t| t.to_vec::<f64>().unwrap()).collect();
    let eval = |which: usize, i: usize, delta: f64| -> f64 {
        let _off = tapegrad::GradModeGuard::no_grad();
        weighted_loss(&f(&perturbed(&base, inputs, which, i, delta)).unwrap()).unwrap().item().unwrap()
    };
    for (k, t) in inputs.iter().enumerate() {
        let analytic = match t.grad() {
            Some(g) => {
                assert_eq!(g.shape(), t.shape(), "{name}: gradient of input {k} has the wrong shape");
                assert_eq!(g.dtype(), t.dtype(), "{name}: gradient of input {k} has the wrong dtype");
                g.to_vec::<f64>().unwrap()
            }
            None => vec![0.0; t.numel()],
        };
        for (i, a) in analytic.iter().enumerate() {
            let n = (eval(k, i, fd.eps) - eval(k, i, -fd.eps)) / (2.0 * fd.eps);
            assert!(
                (a - n).abs() <= fd.atol + fd.rtol * n.abs(),
                "{name}: input {k} element {i}: analytic {a} vs numeric {n}"
            );
        }
    }
}

/// A float64 0-d tensor.
pub fn scalar(v: f64) -> Tensor {
    Tensor::from_vec(vec![v], &[]).unwrap()
}

/// Asserts that `r` failed and returns the error's message.
pub fn err_msg<T: std::fmt::Debug>(r: tapegrad::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}
