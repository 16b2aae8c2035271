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

/// Central differences of `f(inputs).sum()` with respect to input `which`.
pub fn numeric_grad(f: &dyn Fn(&[Tensor]) -> Tensor, inputs: &[Tensor], which: usize) -> Vec<f64> {
    let eps = 1e-6;
    let base: Vec<Vec<f64>> = inputs.iter().map(|t| t.to_vec::<f64>().unwrap()).collect();
    let mut out = Vec::new();
    for i in 0..base[which].len() {
        let eval = |delta: f64| {
            let ts: Vec<Tensor> = base
                .iter()
                .zip(inputs)
                .enumerate()
                .map(|(k, (v, t))| {
                    let mut v = v.clone();
                    if k == which {
                        v[i] += delta;
                    }
                    Tensor::from_vec(v, t.shape()).unwrap()
                })
                .collect();
            f(&ts).sum(None, false).unwrap().item().unwrap()
        };
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
