//! Reductions built from other operations: all, any, count_nonzero, vector norms, isclose and
//! equal. Their gradients come from the operations they are written with, except the 2-norm,
//! whose formula is zero (not NaN) at a zero input, as in PyTorch. The variance family (`var`,
//! `std`, `var_mean`, `std_mean`) records one node each, as PyTorch's `VarMeanBackward0`.

use crate::autograd::node::{Backward, Node};
use crate::autograd::record::{record, Save};
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::Cmp;
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;

/// Which vector norm `norm` computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    /// `sum(|x|^p)^(1/p)`; `P(2.0)` is the Euclidean (and Frobenius) norm.
    P(f64),
    /// `max |x|`.
    Inf,
    /// `min |x|`.
    NegInf,
}

/// Backward of the p-norm (p not 0, 1 or inf): `g * x / norm` for p = 2, else
/// `g * sign(x) |x|^(p-1) / norm^(p-1)`; zero where the norm or the element is zero, as in PyTorch.
struct NormPBackward {
    p: f64,
    dims: Option<Vec<isize>>,
    keepdim: bool,
}

impl SingleOutput for NormPBackward {
    fn input_grads(&self, node: &Node, mut g: Tensor, _need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let (x, mut out) = (saved[0].clone(), saved[1].clone());
        if !self.keepdim {
            let mut dims: Vec<usize> = match &self.dims {
                None => (0..x.ndim()).collect(),
                Some(ds) => ds.iter().map(|&d| crate::tensor::layout::wrap_dim(d, x.ndim())).collect::<Result<_>>()?,
            };
            dims.sort_unstable();
            for d in dims {
                g = g.unsqueeze(d as isize)?;
                out = out.unsqueeze(d as isize)?;
            }
        }
        let zero = out.detach().eq_scalar(0.0)?;
        let safe = Tensor::where_(&zero, &Tensor::ones(&[], out.dtype())?, &out)?;
        let nothing = Tensor::zeros(&[], g.dtype())?;
        if self.p == 2.0 {
            let scaled = Tensor::where_(&zero, &nothing, &g.div(&safe)?)?;
            return Ok(vec![Some(x.mul(&scaled)?)]);
        }
        let scaled = Tensor::where_(&zero, &nothing, &g.div(&safe.pow_scalar(self.p - 1.0)?)?)?;
        let x_zero = x.detach().eq_scalar(0.0)?;
        let safe_x = Tensor::where_(&x_zero, &Tensor::ones(&[], x.dtype())?, &x)?;
        let dx = safe_x.sign()?.mul(&safe_x.abs()?.pow_scalar(self.p - 1.0)?)?;
        let dx = Tensor::where_(&x_zero, &nothing, &dx)?;
        Ok(vec![Some(dx.mul(&scaled)?)])
    }
}

impl Tensor {
    /// True where the element is not zero (NaN counts as non-zero).
    fn nonzero_mask(&self) -> Result<Tensor> {
        self.detach().compare_scalar(0, Cmp::Ne)
    }

    /// Whether every element over `dims` (all when None) is non-zero; a bool tensor (uint8 for uint8).
    pub fn all(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        let zeros = self.nonzero_mask()?.logical_not()?.to_dtype(DType::Int64)?.sum(dims, keepdim)?;
        self.uint8_stays_uint8(zeros.eq_scalar(0)?)
    }

    /// PyTorch's `all`/`any` of a uint8 tensor are uint8 (0 or 1), bool for every other dtype.
    fn uint8_stays_uint8(&self, out: Tensor) -> Result<Tensor> {
        if self.dtype() == DType::UInt8 {
            out.to_dtype(DType::UInt8)
        } else {
            Ok(out)
        }
    }

    /// Whether any element over `dims` (all when None) is non-zero; a bool tensor (uint8 for uint8).
    pub fn any(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        let ones = self.nonzero_mask()?.to_dtype(DType::Int64)?.sum(dims, keepdim)?;
        self.uint8_stays_uint8(ones.compare_scalar(0, Cmp::Ne)?)
    }

    /// The number of non-zero elements over `dims` (all when None); int64.
    pub fn count_nonzero(&self, dims: Option<&[isize]>) -> Result<Tensor> {
        self.nonzero_mask()?.to_dtype(DType::Int64)?.sum(dims, false)
    }

    /// The vector norm of order `ord` over `dims` (all when None). Floats only.
    pub fn norm(&self, ord: NormOrd, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::dtype(format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                self.dtype()
            )));
        }
        let a = self.abs()?;
        match ord {
            NormOrd::Inf | NormOrd::NegInf if self.numel() == 0 => Err(Error::value(
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an identity",
            )),
            NormOrd::Inf => a.amax(dims, keepdim),
            NormOrd::NegInf => a.amin(dims, keepdim),
            NormOrd::P(0.0) => a.compare_scalar(0, Cmp::Ne)?.to_dtype(self.dtype())?.sum(dims, keepdim),
            NormOrd::P(1.0) => a.sum(dims, keepdim),
            NormOrd::P(p) => {
                let out = {
                    let _off = crate::autograd::GradModeGuard::no_grad();
                    if p == 2.0 {
                        self.detach().square()?.sum(dims, keepdim)?.sqrt()?
                    } else {
                        a.detach().pow_scalar(p)?.sum(dims, keepdim)?.pow_scalar(1.0 / p)?
                    }
                };
                record("NormBackward", &[self], &[&out], || {
                    (
                        NormPBackward { p, dims: dims.map(<[isize]>::to_vec), keepdim },
                        vec![Save::Input(self.clone()), Save::Output(0)],
                    )
                });
                Ok(out)
            }
        }
    }

    /// `|self - other| <= atol + rtol * |other|` elementwise (equal infinities are close; NaN is
    /// close to NaN only with `equal_nan`). Both operands must have the same dtype.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(Error::dtype(format!(
                "isclose(): expected both inputs to have the same dtype, but got {} and {}",
                self.dtype(),
                other.dtype()
            )));
        }
        if rtol < 0.0 {
            return Err(Error::value(format!("isclose(): rtol must be greater than or equal to zero, but got {rtol}")));
        }
        if atol < 0.0 {
            return Err(Error::value(format!("isclose(): atol must be greater than or equal to zero, but got {atol}")));
        }
        let (a, b) = (self.detach(), other.detach());
        let mut close = a.compare(&b, Cmp::Eq)?;
        if equal_nan && a.dtype().is_float() {
            close = close.logical_or(&a.isnan()?.logical_and(&b.isnan()?)?)?;
        }
        if a.dtype() == DType::Bool {
            return Ok(close);
        }
        let (af, bf) =
            if a.dtype().is_float() { (a, b) } else { (a.to_dtype(DType::Float64)?, b.to_dtype(DType::Float64)?) };
        let diff = af.sub(&bf)?.abs()?;
        let tol = bf.abs()?.mul_scalar(rtol)?.add_scalar(atol)?;
        // Infinite differences (an infinity against a finite value) are never close.
        let finite = diff.compare_scalar(f64::INFINITY, Cmp::Ne)?;
        let within = diff.compare(&tol, Cmp::Le)?.logical_and(&finite)?;
        close.logical_or(&within)
    }

    /// True when both tensors have the same shape and equal elements (NaN is not equal to NaN).
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.shape() != other.shape() {
            return Ok(false);
        }
        let same = self.detach().compare(&other.detach(), Cmp::Eq)?;
        Ok(same.all(None, false)?.item()? != 0.0)
    }
}

/// Which spread statistic the variance family returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    /// The variance.
    Var,
    /// The standard deviation, `sqrt(var)`.
    Std,
}

/// Backward of `var`, `std`, `var_mean` and `std_mean`: one node whose outputs are the spread and,
/// with `with_mean`, the mean. `d var = g * 2 (x - mean) / (N - correction)`; for `std`, `g` is
/// first `g / (2 std)`, zero where `std` is zero (as in PyTorch); `d mean = g / N` everywhere.
/// Written with differentiable operations, so it is itself differentiable.
struct VarStdBackward {
    dims: Vec<usize>,
    correction: f64,
    keepdim: bool,
    spread: Spread,
}

impl VarStdBackward {
    /// `g` with the reduced dimensions back (size 1) when the forward dropped them.
    fn unreduce(&self, mut g: Tensor) -> Result<Tensor> {
        if !self.keepdim {
            for &d in &self.dims {
                g = g.unsqueeze(d as isize)?;
            }
        }
        Ok(g)
    }
}

impl Backward for VarStdBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let x = &saved[0];
        let count: usize = self.dims.iter().map(|&d| x.shape()[d]).product();
        let idims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        let mut dx: Option<Tensor> = None;
        if let Some(Some(g)) = grads.first() {
            let mut g = self.unreduce(g.clone())?;
            if self.spread == Spread::Std {
                let std = self.unreduce(saved[1].clone())?;
                let zero = std.detach().eq_scalar(0.0)?;
                let safe = Tensor::where_(&zero, &Tensor::ones(&[], std.dtype())?, &std)?;
                let nothing = Tensor::zeros(&[], g.dtype())?;
                g = Tensor::where_(&zero, &nothing, &g.div(&safe.mul_scalar(2.0)?)?)?;
            }
            let denom = (count as f64 - self.correction).max(0.0);
            let centered = x.sub(&x.mean(Some(&idims), true)?)?;
            dx = Some(centered.mul(&g)?.mul_scalar(2.0 / denom)?);
        }
        if let Some(Some(g)) = grads.get(1) {
            let dm = self.unreduce(g.clone())?.div_scalar(count as f64)?;
            dx = Some(match dx {
                Some(d) => d.add(&dm)?,
                None => dm.expand(x.shape())?,
            });
        }
        Ok(vec![dx])
    }
}

impl Tensor {
    /// The variance (or standard deviation) over `dims` (all when None) with `correction`
    /// subtracted from the count, and with `with_mean` the mean too; one node records them all
    /// (PyTorch's `VarBackward0` ... `StdMeanBackward0`). A count not above `correction` gives inf
    /// or NaN, as in PyTorch.
    pub fn var_std_mean(
        &self,
        spread: Spread,
        dims: Option<&[isize]>,
        correction: f64,
        keepdim: bool,
        with_mean: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        if !self.dtype().is_float() {
            return Err(Error::dtype(format!(
                "std and var only support floating point and complex dtypes, got {}",
                self.dtype()
            )));
        }
        let rd = super::reduce::reduce_dims(dims, self.ndim())?;
        let idims: Vec<isize> = rd.iter().map(|&d| d as isize).collect();
        let (out, mean) = {
            let _off = crate::autograd::GradModeGuard::no_grad();
            let x = self.detach();
            let count: usize = rd.iter().map(|&d| x.shape()[d]).product();
            let mean = x.mean(Some(&idims), keepdim)?;
            let mean_kept = if keepdim { mean.clone() } else { x.mean(Some(&idims), true)? };
            let dev = x.sub(&mean_kept)?;
            let var = dev.mul(&dev)?.sum(Some(&idims), keepdim)?.div_scalar((count as f64 - correction).max(0.0))?;
            let out = if spread == Spread::Std { var.sqrt()? } else { var };
            (out, mean)
        };
        let name = match (spread, with_mean) {
            (Spread::Var, false) => "VarBackward",
            (Spread::Std, false) => "StdBackward",
            (Spread::Var, true) => "VarMeanBackward",
            (Spread::Std, true) => "StdMeanBackward",
        };
        let outputs: Vec<&Tensor> = if with_mean { vec![&out, &mean] } else { vec![&out] };
        record(name, &[self], &outputs, || {
            let mut saves = vec![Save::Input(self.clone())];
            if spread == Spread::Std {
                saves.push(Save::Output(0));
            }
            (VarStdBackward { dims: rd.clone(), correction, keepdim, spread }, saves)
        });
        Ok((out, with_mean.then_some(mean)))
    }
}
