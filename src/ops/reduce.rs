//! Reductions: sum, mean, max and min (whole and along a dimension), amax and amin, argmax and
//! argmin, and `sum_to`, the reduction that undoes broadcasting in backward.

use ndarray::{ArrayD, ArrayViewD, Axis, Dimension, IxDyn};

use crate::autograd::node::{Backward, Node};
use crate::autograd::record::{record, Save};
use crate::error::{Error, Result};
use crate::tensor::dtype::DType;
use crate::tensor::element::Element;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;
use crate::{dispatch_all, dispatch_float};

/// True when `x` should replace `best` as the maximum: larger, or NaN (NaN propagates, as in PyTorch).
fn beats<T: PartialOrd>(x: T, best: T) -> bool {
    let nan = |v: &T| v.partial_cmp(v).is_none();
    x > best || (nan(&x) && !nan(&best))
}

/// True when `x` should replace `best` as the minimum: smaller, or NaN (NaN propagates).
fn beats_low<T: PartialOrd>(x: T, best: T) -> bool {
    let nan = |v: &T| v.partial_cmp(v).is_none();
    x < best || (nan(&x) && !nan(&best))
}

/// `beats` (largest) or `beats_low` (smallest).
fn better<T: PartialOrd>(largest: bool, x: T, best: T) -> bool {
    if largest {
        beats(x, best)
    } else {
        beats_low(x, best)
    }
}

/// Normalises `dims` (None: all) into sorted, distinct, non-negative dimensions.
pub(crate) fn reduce_dims(dims: Option<&[isize]>, ndim: usize) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = match dims {
        None => (0..ndim).collect(),
        Some(ds) => ds.iter().map(|&d| wrap_dim(d, ndim)).collect::<Result<_>>()?,
    };
    out.sort_unstable();
    let n = out.len();
    out.dedup();
    if out.len() != n {
        return Err(Error::value("dim appears multiple times in the list of dims"));
    }
    if ndim == 0 {
        // A 0-dim tensor accepts dim 0 and -1, as in PyTorch; reducing over them changes nothing.
        out.clear();
    }
    Ok(out)
}

/// The shape of a reduction's result.
fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Result<Vec<usize>> {
    let out: Vec<usize> = shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| {
            if dims.contains(&i) {
                if keepdim {
                    Some(1)
                } else {
                    None
                }
            } else {
                Some(d)
            }
        })
        .collect();
    // The result may be far larger than the input (a huge expanded dimension of a tensor with no
    // elements): refuse what cannot be allocated before any kernel tries (8 bytes: the widest dtype).
    crate::tensor::create::check_alloc(&out, DType::Float64)?;
    Ok(out)
}

/// `add` is the element sum: wrapping for int64, as in PyTorch (a plain `+` would panic on overflow
/// in debug builds; tests/no_panic.rs covers it).
fn sum_kernel<T: Element>(t: &Tensor, dims: &[usize], keepdim: bool, add: fn(T, T) -> T) -> Result<Tensor> {
    let out_shape = reduced_shape(t.shape(), dims, keepdim)?;
    if t.numel() == 0 {
        // Folding one axis at a time would build intermediates the size of the other axes, which
        // for an empty tensor with a huge expanded axis cannot be allocated; the sum is all zeros.
        return Tensor::zeros(&out_shape, T::DTYPE);
    }
    crate::tensor::create::check_alloc(t.shape(), T::DTYPE)?;
    t.with_view(|v: ArrayViewD<T>| {
        let mut acc: ArrayD<T> = v.to_owned();
        for &d in dims.iter().rev() {
            acc = acc.fold_axis(Axis(d), T::default(), |&a, &b| add(a, b));
        }
        Tensor::from_vec(acc.iter().copied().collect(), &out_shape)
    })?
}

/// Sum of f32 data accumulated in f64, for accuracy over long vectors.
fn sum_all_f32(t: &Tensor) -> Result<Tensor> {
    // Sixteen f64 partial sums: a vectorizable loop without one long chain of dependent adds,
    // and f64 accuracy for f32 data.
    let s = t.with_contiguous(|s: &[f32]| {
        let mut acc = [0f64; 16];
        let chunks = s.chunks_exact(16);
        let tail: f64 = chunks.remainder().iter().map(|&x| x as f64).sum();
        for c in chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x as f64;
            }
        }
        acc.iter().sum::<f64>() + tail
    })?;
    Tensor::from_vec(vec![s as f32], &[])
}

struct SumBackward {
    input_shape: Vec<usize>,
    dims: Vec<usize>,
    keepdim: bool,
    scale: Option<f64>,
}

impl Backward for SumBackward {
    fn apply(&self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(mut g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        if !self.keepdim {
            for &d in &self.dims {
                g = g.unsqueeze(d as isize)?;
            }
        }
        let mut g = g.expand(&self.input_shape)?;
        if let Some(s) = self.scale {
            g = g.mul_scalar(s)?;
        }
        Ok(vec![Some(g)])
    }

    fn apply_batched(
        &self,
        _node: &Node,
        grads: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        let Some(mut g) = grads.first().cloned().flatten() else { return Some(Ok(vec![None])) };
        Some((|| {
            if !self.keepdim {
                for &d in &self.dims {
                    g = g.unsqueeze(d as isize + 1)?;
                }
            }
            let mut shape = vec![batch];
            shape.extend_from_slice(&self.input_shape);
            let mut g = g.expand(&shape)?;
            if let Some(s) = self.scale {
                g = g.mul_scalar(s)?;
            }
            Ok(vec![Some(g)])
        })())
    }
}

pub(crate) struct MaxAllBackward;

impl Backward for MaxAllBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let saved = node.unpack_saved()?;
        let (x, out) = (saved[0].detach(), saved[1].detach());
        // Ties share the gradient evenly, as in PyTorch; a NaN maximum ties with every NaN input.
        use super::elementwise::{Cmp, Logical};
        let both_nan = x.compare(&x, Cmp::Ne)?.logical(&out.compare(&out, Cmp::Ne)?, Logical::And)?;
        let mask = x.compare(&out, Cmp::Eq)?.logical(&both_nan, Logical::Or)?.to_dtype(g.dtype())?;
        let count = mask.sum(None, false)?;
        Ok(vec![Some(mask.div(&count)?.mul(&g)?)])
    }
}

/// Backward of amax/amin: the gradient shared evenly among the elements equal to the extreme of
/// their slice (NaN ties with NaN), as in PyTorch.
struct AmaxBackward {
    dims: Vec<usize>,
    keepdim: bool,
}

impl Backward for AmaxBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(mut g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let saved = node.unpack_saved()?;
        let (x, mut out) = (saved[0].detach(), saved[1].detach());
        if !self.keepdim {
            for &d in &self.dims {
                g = g.unsqueeze(d as isize)?;
                out = out.unsqueeze(d as isize)?;
            }
        }
        use super::elementwise::{Cmp, Logical};
        let both_nan = x.compare(&x, Cmp::Ne)?.logical(&out.compare(&out, Cmp::Ne)?, Logical::And)?;
        let mask = x.compare(&out, Cmp::Eq)?.logical(&both_nan, Logical::Or)?.to_dtype(g.dtype())?;
        let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        let count = mask.sum(Some(&dims), true)?;
        Ok(vec![Some(mask.div(&count)?.mul(&g)?)])
    }
}

/// Above this many elements (numel times slice length) ProdBackward does not form the n x n products.
const PROD_EXACT_BUDGET: usize = 1 << 22;

/// Backward of prod: the product of the other elements of each slice. Without zeros that is
/// `out / x`; with a zero, each slice's products of the others are computed directly (an `n x n`
/// masked product per slice). Both are written with differentiable operations, so the formula
/// differentiates again.
struct ProdBackward {
    /// The reduced dimension; None: all of them.
    dim: Option<usize>,
    keepdim: bool,
}

impl Backward for ProdBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(mut g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let saved = node.unpack_saved()?;
        let (x, mut out) = (saved[0].clone(), saved[1].clone());
        let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        match self.dim {
            Some(d) if !self.keepdim => {
                g = g.unsqueeze(d as isize)?;
                out = out.unsqueeze(d as isize)?;
            }
            None => {
                let ones = vec![1isize; x.ndim()];
                g = g.reshape(&ones)?;
                out = out.reshape(&ones)?;
            }
            _ => {}
        }
        let has_zero = x.detach().to_f64_vec()?.contains(&0.0);
        if !has_zero {
            return Ok(vec![Some(g.mul(&out.div(&x)?)?)]);
        }
        let n_slice = match self.dim {
            None => x.numel(),
            Some(d) => x.shape()[d],
        };
        if x.numel().saturating_mul(n_slice) > PROD_EXACT_BUDGET {
            // Too large for the n x n products: the first derivative from zero counts (exact);
            // its own derivative treats the zero pattern as fixed.
            let zero = x.detach().compare_scalar(0.0, super::elementwise::Cmp::Eq)?;
            let one = Tensor::ones(&[], x.dtype())?;
            let nz = Tensor::where_(&zero, &one, &x)?;
            let (p_nz, count) = match self.dim {
                None => {
                    let ones = vec![1isize; x.ndim()];
                    (
                        nz.prod(None, false)?.reshape(&ones)?,
                        zero.to_dtype(DType::Int64)?.sum(None, false)?.reshape(&ones)?,
                    )
                }
                Some(d) => {
                    (nz.prod(Some(d as isize), true)?, zero.to_dtype(DType::Int64)?.sum(Some(&[d as isize]), true)?)
                }
            };
            let zero_t = Tensor::zeros(&[], x.dtype())?;
            let at_zero = Tensor::where_(&count.eq_scalar(1)?, &p_nz, &zero_t)?;
            let elsewhere = Tensor::where_(&count.eq_scalar(0)?, &p_nz.div(&nz)?, &zero_t)?;
            let others = Tensor::where_(&zero, &at_zero, &elsewhere)?;
            return Ok(vec![Some(g.mul(&others)?)]);
        }
        // Slices along the last dimension: all elements (dim None) or `dim` moved last.
        let (xs, perm) = match self.dim {
            None => (x.reshape(&[-1])?, None),
            Some(d) => {
                let mut p: Vec<isize> = (0..x.ndim() as isize).filter(|&i| i != d as isize).collect();
                p.push(d as isize);
                (x.permute(&p)?, Some(p))
            }
        };
        let n = *xs.shape().last().unwrap_or(&1);
        let mut big = xs.shape().to_vec();
        big.insert(big.len() - 1, n);
        let eye = Tensor::eye(n, n, DType::Bool)?;
        let others = Tensor::where_(&eye, &Tensor::ones(&[], x.dtype())?, &xs.unsqueeze(-2)?.expand(&big)?)?
            .prod(Some(-1), false)?;
        let others = match perm {
            None => others.reshape(&shape)?,
            Some(p) => {
                let mut inv = vec![0isize; p.len()];
                for (i, &d) in p.iter().enumerate() {
                    inv[d as usize] = i as isize;
                }
                others.permute(&inv)?
            }
        };
        Ok(vec![Some(g.mul(&others)?)])
    }
}

struct MaxDimBackward {
    input_shape: Vec<usize>,
    dim: usize,
    keepdim: bool,
}

impl Backward for MaxDimBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(mut g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let mut idx = node.unpack_saved()?[0].clone();
        if !self.keepdim {
            g = g.unsqueeze(self.dim as isize)?;
            idx = idx.unsqueeze(self.dim as isize)?;
        }
        Ok(vec![Some(Tensor::scatter_add_zeros(&self.input_shape, self.dim, &idx, &g)?)])
    }
}

struct GatherBackward {
    input_shape: Vec<usize>,
    dim: usize,
}

impl Backward for GatherBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let idx = &node.unpack_saved()?[0];
        Ok(vec![Some(Tensor::scatter_add_zeros(&self.input_shape, self.dim, idx, &g)?)])
    }
}

struct ScatterAddBackward {
    dim: usize,
}

impl Backward for ScatterAddBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let idx = &node.unpack_saved()?[0];
        Ok(vec![Some(g.gather(self.dim as isize, idx)?)])
    }
}

impl Tensor {
    /// `f` of this tensor's values in float32, outside autograd: the float32 compute of float16 and
    /// bfloat16 reductions (NOTE [Half-precision compute]); the caller rounds and records.
    pub(crate) fn via_float32(&self, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let _off = crate::autograd::GradModeGuard::no_grad();
        f(&self.detach().to_dtype(DType::Float32)?)
    }

    /// Sum over `dims` (all when None).
    pub fn sum(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        let rd = reduce_dims(dims, self.ndim())?;
        let out = match self.dtype() {
            DType::Float32 if rd.len() == self.ndim() && !keepdim => sum_all_f32(self)?,
            DType::Float32 => sum_kernel::<f32>(self, &rd, keepdim, |a, b| a + b)?,
            DType::Float64 => sum_kernel::<f64>(self, &rd, keepdim, |a, b| a + b)?,
            DType::Int64 => sum_kernel::<i64>(self, &rd, keepdim, i64::wrapping_add)?,
            // Sums of bools and narrow integers are int64, as in PyTorch.
            dt if !dt.is_float() => return self.to_dtype(DType::Int64)?.sum(dims, keepdim),
            // NOTE [Half-precision compute]: accumulate in float32, round once.
            dt => self.via_float32(|x| x.sum(dims, keepdim))?.to_dtype(dt)?,
        };
        record("SumBackward", &[self], &[&out], || {
            (SumBackward { input_shape: self.shape().to_vec(), dims: rd.clone(), keepdim, scale: None }, vec![])
        });
        Ok(out)
    }

    /// Mean over `dims` (all when None); floats only.
    pub fn mean(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::dtype(format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or \
                 complex dtype. Got: {}",
                self.dtype()
            )));
        }
        let rd = reduce_dims(dims, self.ndim())?;
        let count: usize = rd.iter().map(|&d| self.shape()[d]).product();
        let scale = 1.0 / count as f64;
        let s = if self.dtype().is_half() {
            // In float32 throughout, rounded once (NOTE [Half-precision compute]).
            self.via_float32(|x| x.sum(dims, keepdim)?.mul_scalar(scale))?.to_dtype(self.dtype())?
        } else {
            let _off = crate::autograd::GradModeGuard::no_grad();
            self.sum(dims, keepdim)?.mul_scalar(scale)?
        };
        record("MeanBackward", &[self], &[&s], || {
            (SumBackward { input_shape: self.shape().to_vec(), dims: rd.clone(), keepdim, scale: Some(scale) }, vec![])
        });
        Ok(s)
    }

    /// Sums a gradient of a broadcast shape down to `shape` (leading dims and size-1 dims).
    pub fn sum_to(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let lead = self.ndim() - shape.len();
        let dims: Vec<isize> = (0..self.ndim())
            .filter(|&i| i < lead || (shape[i - lead] == 1 && self.shape()[i] != 1))
            .map(|i| i as isize)
            .collect();
        let s = self.sum(Some(&dims), true)?;
        s.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
    }

    /// `sum_to` for a batch of gradients: sums `[batch, *broadcast]` down to `[batch, *shape]`,
    /// the first dimension kept as it is (the Jacobian engine, NOTE [Batched rows]).
    pub fn sum_to_batched(&self, shape: &[usize]) -> Result<Tensor> {
        let inner = self.shape().get(1..).unwrap_or(&[]);
        if inner == shape {
            return Ok(self.clone());
        }
        if self.ndim() == 0 || inner.len() < shape.len() {
            return Err(Error::shape(format!(
                "sum_to_batched: a batch of shape {} does not sum down to {}",
                crate::tensor::layout::fmt_shape(self.shape()),
                crate::tensor::layout::fmt_shape(shape)
            )));
        }
        let lead = inner.len() - shape.len();
        let dims: Vec<isize> = (0..inner.len())
            .filter(|&i| i < lead || (shape[i - lead] == 1 && inner[i] != 1))
            .map(|i| i as isize + 1)
            .collect();
        let s = self.sum(Some(&dims), true)?;
        let mut out = vec![self.shape()[0] as isize];
        out.extend(shape.iter().map(|&d| d as isize));
        s.reshape(&out)
    }

    /// Product of all elements (dim None) or along `dim`. Integer and bool inputs give int64
    /// (wrapping on overflow, as in PyTorch).
    pub fn prod(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        if self.dtype() == DType::Bool || (self.dtype().is_int() && self.dtype() != DType::Int64) {
            return self.to_dtype(DType::Int64)?.prod(dim, keepdim);
        }
        let rd: Vec<usize> = match dim {
            None => (0..self.ndim()).collect(),
            Some(d) => {
                let d = wrap_dim(d, self.ndim())?;
                if self.ndim() == 0 {
                    vec![]
                } else {
                    vec![d]
                }
            }
        };
        let out_keep = dim.is_some() && keepdim;
        let out_shape = reduced_shape(self.shape(), &rd, out_keep)?;
        fn kernel<T: Element>(
            t: &Tensor,
            dims: &[usize],
            shape: &[usize],
            one: T,
            mul: fn(T, T) -> T,
        ) -> Result<Tensor> {
            crate::tensor::create::check_alloc(t.shape(), T::DTYPE)?;
            t.with_view(|v: ArrayViewD<T>| {
                let mut acc: ArrayD<T> = v.to_owned();
                for &d in dims.iter().rev() {
                    acc = acc.fold_axis(Axis(d), one, |&a, &b| mul(a, b));
                }
                Tensor::from_vec(acc.iter().copied().collect(), shape)
            })?
        }
        let out = match self.dtype() {
            DType::Float32 => kernel::<f32>(self, &rd, &out_shape, 1.0, |a, b| a * b)?,
            DType::Float64 => kernel::<f64>(self, &rd, &out_shape, 1.0, |a, b| a * b)?,
            dt if dt.is_half() => self.via_float32(|x| x.prod(dim, keepdim))?.to_dtype(dt)?,
            _ => kernel::<i64>(self, &rd, &out_shape, 1, i64::wrapping_mul)?,
        };
        let bd = match dim {
            Some(_) if self.ndim() > 0 => Some(rd[0]),
            Some(_) => None,
            None => None,
        };
        record("ProdBackward", &[self], &[&out], || {
            (ProdBackward { dim: bd, keepdim: out_keep }, vec![Save::Input(self.clone()), Save::Output(0)])
        });
        Ok(out)
    }

    /// The largest element (NaN if any is NaN).
    pub fn max_all(&self) -> Result<Tensor> {
        self.extreme_all(true)
    }

    /// The smallest element (NaN if any is NaN).
    pub fn min_all(&self) -> Result<Tensor> {
        self.extreme_all(false)
    }

    fn extreme_all(&self, largest: bool) -> Result<Tensor> {
        let name = if largest { "max" } else { "min" };
        if self.numel() == 0 {
            return Err(Error::value(format!(
                "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
            )));
        }
        let out = dispatch_all!(self.dtype(), T => {
            let v = self.to_vec::<T>()?;
            let m = v.iter().copied().fold(v[0], |a, b| if better(largest, b, a) { b } else { a });
            Tensor::from_vec(vec![m], &[])?
        });
        let node = if largest { "MaxBackward" } else { "MinBackward" };
        record(node, &[self], &[&out], || (MaxAllBackward, vec![Save::Input(self.clone()), Save::Output(0)]));
        Ok(out)
    }

    /// Largest (`amax`) or smallest (`amin`) values over `dims` (all when None or empty), without
    /// indices; the gradient is shared evenly among ties.
    pub fn amax(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        self.extreme_dims(dims, keepdim, true)
    }

    /// See `amax`.
    pub fn amin(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        self.extreme_dims(dims, keepdim, false)
    }

    fn extreme_dims(&self, dims: Option<&[isize]>, keepdim: bool, largest: bool) -> Result<Tensor> {
        let name = if largest { "amax" } else { "amin" };
        let rd = reduce_dims(dims, self.ndim())?;
        if let Some(&d) = rd.iter().find(|&&d| self.shape()[d] == 0) {
            return Err(Error::index(format!("{name}(): Expected reduction dim {d} to have non-zero size.")));
        }
        let out_shape = reduced_shape(self.shape(), &rd, keepdim)?;
        let out = dispatch_all!(self.dtype(), T => self.with_view(|v: ArrayViewD<T>| {
            let mut acc: ArrayD<T> = v.to_owned();
            for &d in rd.iter().rev() {
                acc = acc.map_axis(Axis(d), |lane| {
                    lane.iter().copied().fold(lane[0], |a, b| if better(largest, b, a) { b } else { a })
                });
            }
            Tensor::from_vec(acc.iter().copied().collect(), &out_shape)
        })??);
        let node = if largest { "AmaxBackward" } else { "AminBackward" };
        record(node, &[self], &[&out], || {
            (AmaxBackward { dims: rd.clone(), keepdim }, vec![Save::Input(self.clone()), Save::Output(0)])
        });
        Ok(out)
    }

    /// Largest values along `dim` and their indices (first occurrence).
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim(dim, keepdim, true)
    }

    /// Smallest values along `dim` and their indices (first occurrence).
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim(dim, keepdim, false)
    }

    fn extreme_dim(&self, dim: isize, keepdim: bool, largest: bool) -> Result<(Tensor, Tensor)> {
        let name = if largest { "max" } else { "min" };
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            // As in PyTorch: the value itself and index 0, both 0-dim, whatever `keepdim`.
            return self.reshape(&[1])?.extreme_dim(0, false, largest);
        }
        if self.ndim() > 0 && self.shape()[d] == 0 {
            return Err(Error::index(format!("{name}(): cannot reduce over dimension {dim} of size 0")));
        }
        let idx = self.arg_extreme(Some(dim), true, largest)?;
        let values = {
            let _off = crate::autograd::GradModeGuard::no_grad();
            self.detach().gather(d as isize, &idx)?
        };
        let (values, idx) = if keepdim || self.ndim() == 0 {
            (values, idx)
        } else {
            (values.squeeze_dim(d as isize)?, idx.squeeze_dim(d as isize)?)
        };
        let values = values.clone_data()?;
        let node = if largest { "MaxBackward" } else { "MinBackward" };
        record(node, &[self], &[&values], || {
            (MaxDimBackward { input_shape: self.shape().to_vec(), dim: d, keepdim }, vec![Save::Input(idx.clone())])
        });
        Ok((values, idx))
    }

    /// Index of the largest value: over the flattened tensor, or along `dim`. A bool tensor is
    /// refused, as in PyTorch.
    pub fn argmax(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype("argmax(): does not support bool input"));
        }
        self.arg_extreme(dim, keepdim, true)
    }

    /// Index of the smallest value (first occurrence; NaN counts as smallest): over the flattened
    /// tensor, or along `dim`. A bool tensor is refused, as in PyTorch.
    pub fn argmin(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype("argmin(): does not support bool input"));
        }
        self.arg_extreme(dim, keepdim, false)
    }

    /// `argmax`/`argmin` for every dtype: `max(dim)` and `min(dim)` give a bool tensor's indices
    /// too, as PyTorch does.
    fn arg_extreme(&self, dim: Option<isize>, keepdim: bool, largest: bool) -> Result<Tensor> {
        let name = if largest { "argmax" } else { "argmin" };
        let Some(dim) = dim else {
            let flat = self.detach().reshape(&[-1])?;
            let r = flat.arg_extreme(Some(0), false, largest)?;
            return if keepdim { r.reshape(&vec![1; self.ndim()]) } else { Ok(r) };
        };
        let t = if self.ndim() == 0 { self.detach().reshape(&[1])? } else { self.detach() };
        let d = wrap_dim(dim, t.ndim())?;
        if t.shape()[d] == 0 {
            return Err(Error::index(format!("{name}(): cannot reduce over a dimension of size 0")));
        }
        let out_shape = reduced_shape(t.shape(), &[d], true)?;
        crate::tensor::create::check_alloc(&out_shape, DType::Int64)?;
        let r = dispatch_all!(t.dtype(), T => t.with_view(|v: ArrayViewD<T>| {
            let idx: Vec<i64> = v
                .lanes(Axis(d))
                .into_iter()
                .map(|lane| {
                    let mut best = 0usize;
                    for (i, &x) in lane.iter().enumerate() {
                        let b = lane[best];
                        if better(largest, x, b) {
                            best = i;
                        }
                    }
                    best as i64
                })
                .collect();
            Tensor::from_vec(idx, &out_shape)
        })??);
        if keepdim && self.ndim() > 0 {
            Ok(r)
        } else {
            r.squeeze_dim(d as isize)
        }
    }

    /// `out[..., i, ...] = self[..., index[..., i, ...], ...]` along `dim`.
    pub fn gather(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            // `wrap_dim` accepts dim 0 of a 0-dim tensor, which has no size to index.
            return Err(Error::index("gather(): cannot gather from a 0-dim tensor"));
        }
        if index.dtype() != DType::Int64 || index.ndim() != self.ndim() {
            return Err(Error::value("gather(): index must be an int64 tensor with as many dims as the input"));
        }
        let idx = index.to_array::<i64>()?;
        let size = self.shape()[d];
        let out = dispatch_all!(self.dtype(), T => self.with_view(|v: ArrayViewD<T>| {
            let mut out = Vec::with_capacity(idx.len());
            for (pos, &i) in idx.indexed_iter() {
                if i < 0 || i as usize >= size {
                    return Err(Error::index(format!("gather(): index {i} is out of bounds for dimension {d} with size {size}")));
                }
                let mut p = pos.slice().to_vec();
                p[d] = i as usize;
                out.push(*v.get(IxDyn(&p)).ok_or_else(|| Error::index("gather(): index out of range"))?);
            }
            Tensor::from_vec(out, idx.shape())
        })??);
        record("GatherBackward", &[self], &[&out], || {
            (GatherBackward { input_shape: self.shape().to_vec(), dim: d }, vec![Save::Input(index.clone())])
        });
        Ok(out)
    }

    /// A zero tensor of `shape` into which `src` is added at `index` along `dim` (gather's adjoint).
    pub fn scatter_add_zeros(shape: &[usize], dim: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let idx = index.to_array::<i64>()?;
        /// Adds `src` into zeros at `index` along `dim` with `add` (wrapping for int64, as in PyTorch).
        fn kernel<T: Element>(
            shape: &[usize],
            dim: usize,
            idx: &ArrayD<i64>,
            src: &Tensor,
            add: fn(T, T) -> T,
        ) -> Result<Tensor> {
            let s = src.to_array::<T>()?;
            let mut out = ArrayD::<T>::from_elem(IxDyn(shape), T::default());
            for (pos, &i) in idx.indexed_iter() {
                let mut p = pos.slice().to_vec();
                p[dim] = i as usize;
                let v = s.get(pos.clone()).copied().unwrap_or(T::default());
                if let Some(o) = out.get_mut(IxDyn(&p)) {
                    *o = add(*o, v);
                }
            }
            Ok(Tensor::from_array(out))
        }
        let out = crate::dispatch_int!(src.dtype(), T => kernel::<T>(shape, dim, &idx, src, |a: T, b: T| {
                num_traits::WrappingAdd::wrapping_add(&a, &b)
            })?,
            other => dispatch_float!(other, "scatter_add", T => kernel::<T>(shape, dim, &idx, src, |a, b| a + b)?));
        record("ScatterAddBackward", &[src], &[&out], || {
            (ScatterAddBackward { dim }, vec![Save::Input(index.clone())])
        });
        Ok(out)
    }
}
