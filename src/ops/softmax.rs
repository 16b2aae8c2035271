//! Softmax, log-softmax, logsumexp and the variance family, written as compositions of
//! differentiable operations: their backward (and double backward) come from the parts.
//!
//! Stability: logsumexp subtracts the (detached) maximum of each slice before `exp`, so logits of
//! 1e4 give finite results; softmax and log-softmax are built on it.

use crate::error::{Error, Result};
use crate::ops::elementwise::Cmp;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;
use crate::DType;

/// The float dtype an operation computes in: floats as they are, other dtypes refused.
fn float_input(t: &Tensor, op: &str) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::dtype(format!("{op}(): expected a floating point tensor, got {}", t.dtype())))
    }
}

fn squeeze_dims(mut t: Tensor, dims: &[usize]) -> Result<Tensor> {
    for &d in dims.iter().rev() {
        t = t.squeeze_dim(d as isize)?;
    }
    Ok(t)
}

impl Tensor {
    /// `log(sum(exp(x)))` over `dims` (all when None), computed stably. Integer and bool inputs
    /// are computed in float32, as in PyTorch.
    pub fn logsumexp(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_half() {
            return self.to_dtype(DType::Float32)?.logsumexp(dims, keepdim)?.to_dtype(self.dtype());
        }
        let x = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(crate::tensor::default_dtype::default_float())?
        };
        let rd = super::reduce::reduce_dims(dims, x.ndim())?;
        let idims: Vec<isize> = rd.iter().map(|&d| d as isize).collect();
        let empty = rd.iter().any(|&d| x.shape()[d] == 0);
        let r = if empty || x.ndim() == 0 {
            x.exp()?.sum(Some(&idims), true)?.log()?
        } else {
            let m = x.shift(&idims)?;
            x.sub(&m)?.exp()?.sum(Some(&idims), true)?.log()?.add(&m)?
        };
        if keepdim {
            Ok(r)
        } else {
            squeeze_dims(r, &rd)
        }
    }

    /// The shift that makes `exp` safe: each slice's maximum (kept dims, detached) where finite, 0
    /// where it is ±inf or NaN (so that an all -inf slice gives -inf and a +inf element +inf, not NaN).
    fn shift(&self, dims: &[isize]) -> Result<Tensor> {
        let m = self.detach().amax(Some(dims), true)?;
        let finite = m.sub(&m)?.compare_scalar(0.0, Cmp::Eq)?;
        Tensor::where_(&finite, &m, &Tensor::zeros(&[], m.dtype())?)
    }

    /// `exp(x) / sum(exp(x))` along `dim`, as `e / e.sum()` with `e = exp(x - max)`.
    pub fn softmax(&self, dim: isize) -> Result<Tensor> {
        float_input(self, "softmax")?;
        if self.dtype().is_half() {
            // In float32, rounded once (NOTE [Half-precision compute]); the casts carry the gradient.
            return self.to_dtype(DType::Float32)?.softmax(dim)?.to_dtype(self.dtype());
        }
        let d = wrap_dim(dim, self.ndim())? as isize;
        let x = if self.ndim() == 0 { self.reshape(&[1])? } else { self.clone() };
        let e = if x.shape()[d as usize] == 0 { x.exp()? } else { x.sub(&x.shift(&[d])?)?.exp()? };
        let r = e.div(&e.sum(Some(&[d]), true)?)?;
        if self.ndim() == 0 {
            r.reshape(&[])
        } else {
            Ok(r)
        }
    }

    /// `x - logsumexp(x)` along `dim`, as `z - log(sum(exp(z)))` with `z = x - max`.
    pub fn log_softmax(&self, dim: isize) -> Result<Tensor> {
        float_input(self, "log_softmax")?;
        if self.dtype().is_half() {
            // In float32, rounded once (NOTE [Half-precision compute]); the casts carry the gradient.
            return self.to_dtype(DType::Float32)?.log_softmax(dim)?.to_dtype(self.dtype());
        }
        let d = wrap_dim(dim, self.ndim())? as isize;
        let x = if self.ndim() == 0 { self.reshape(&[1])? } else { self.clone() };
        let z = if x.shape()[d as usize] == 0 { x.clone() } else { x.sub(&x.shift(&[d])?)? };
        let r = z.sub(&z.exp()?.sum(Some(&[d]), true)?.log()?)?;
        if self.ndim() == 0 {
            r.reshape(&[])
        } else {
            Ok(r)
        }
    }

    /// Variance over `dims` (all when None) with `correction` subtracted from the count (1:
    /// Bessel's correction, PyTorch's default). A count not above `correction` gives inf or NaN, as
    /// in PyTorch.
    pub fn var(&self, dims: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<Tensor> {
        Ok(self.var_std_mean(super::reduce_more::Spread::Var, dims, correction, keepdim, false)?.0)
    }

    /// Standard deviation: `sqrt(var)`.
    pub fn std(&self, dims: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<Tensor> {
        Ok(self.var_std_mean(super::reduce_more::Spread::Std, dims, correction, keepdim, false)?.0)
    }

    /// Variance and mean together (see `var`), recorded as one node.
    pub fn var_mean(&self, dims: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, m) = self.var_std_mean(super::reduce_more::Spread::Var, dims, correction, keepdim, true)?;
        Ok((v, m.expect("var_std_mean returns the mean when asked")))
    }

    /// Standard deviation and mean together (see `var`), recorded as one node.
    pub fn std_mean(&self, dims: Option<&[isize]>, correction: f64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (s, m) = self.var_std_mean(super::reduce_more::Spread::Std, dims, correction, keepdim, true)?;
        Ok((s, m.expect("var_std_mean returns the mean when asked")))
    }
}
