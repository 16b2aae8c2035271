//! Factories.

use super::dtype::{DType, Scalar};
use super::element::Element;
use super::layout::numel;
use super::Tensor;
use crate::dispatch_all;
use crate::error::{Error, Result};

/// Refuses sizes whose allocation would abort the process instead of failing.
pub(crate) fn check_alloc(shape: &[usize], dtype: DType) -> Result<usize> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| {
        Error::OutOfMemory(format!("a tensor of shape {shape:?} has more elements than can be addressed"))
    })?;
    let bytes = n.saturating_mul(dtype.size());
    if bytes > (isize::MAX as usize) / 2 {
        return Err(Error::OutOfMemory(format!("cannot allocate a tensor of shape {shape:?} ({bytes} bytes)")));
    }
    Ok(n)
}

/// A vector of `n` copies of `v`, failing (not aborting) when memory is short.
pub(crate) fn try_filled<T: Element>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| Error::OutOfMemory(format!("cannot allocate {n} elements")))?;
    out.resize(n, v);
    Ok(out)
}

impl Tensor {
    /// A tensor of `shape` filled with `value`.
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let n = check_alloc(shape, dtype)?;
        dispatch_all!(dtype, T => {
            let v: T = match value {
                Scalar::Int(i) => T::from_i64(i),
                other => T::from_f64(other.as_f64()),
            };
            Tensor::from_vec(try_filled(n, v)?, shape)
        })
    }

    /// Zeros.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(0), dtype)
    }

    /// Ones.
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(1), dtype)
    }

    /// Zeros shaped like `t`.
    pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
        Tensor::zeros(t.shape(), t.dtype())
    }

    /// Ones shaped like `t`.
    pub fn ones_like(t: &Tensor) -> Result<Tensor> {
        Tensor::ones(t.shape(), t.dtype())
    }

    /// `start, start+step, ...` below `end`.
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::value("arange: step must be nonzero and bounds finite"));
        }
        if (end - start) / step < 0.0 {
            return Err(Error::value("arange: upper bound and larger bound inconsistent with step sign"));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        check_alloc(&[n], dtype)?;
        dispatch_all!(dtype, T => {
            let v: Vec<T> = (0..n)
                .map(|i| {
                    let x = start + i as f64 * step;
                    if dtype == DType::Int64 { T::from_i64(x as i64) } else { T::from_f64(x) }
                })
                .collect();
            Tensor::from_vec(v, &[n])
        })
    }

    /// The `n × m` identity.
    pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
        let total = check_alloc(&[n, m], dtype)?;
        dispatch_all!(dtype, T => {
            let mut v = try_filled(total, T::from_i64(0))?;
            for i in 0..n.min(m) {
                v[i * m + i] = T::from_i64(1);
            }
            Tensor::from_vec(v, &[n, m])
        })
    }

    /// Total element count check, exposed for the binding layer.
    pub fn numel_of(shape: &[usize]) -> usize {
        numel(shape)
    }
}
