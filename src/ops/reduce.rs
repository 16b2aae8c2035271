//! Reductions: sum, mean, max (whole and along a dimension), argmax, and `sum_to`, the reduction
//! that undoes broadcasting in backward.

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

/// Normalises `dims` (None: all) into sorted, distinct, non-negative dimensions.
fn reduce_dims(dims: Option<&[isize]>, ndim: usize) -> Result<Vec<usize>> {
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

fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Vec<usize> {
    shape
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
        .collect()
}

/// `add` is the element sum: wrapping for int64, as in PyTorch (a plain `+` would panic on overflow
/// in debug builds; tests/no_panic.rs covers it).
fn sum_kernel<T: Element>(t: &Tensor, dims: &[usize], keepdim: bool, add: fn(T, T) -> T) -> Result<Tensor> {
    let out_shape = reduced_shape(t.shape(), dims, keepdim);
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
}

struct MaxAllBackward;

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
    /// Sum over `dims` (all when None).
    pub fn sum(&self, dims: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
        let rd = reduce_dims(dims, self.ndim())?;
        let out = match self.dtype() {
            DType::Float32 if rd.len() == self.ndim() && !keepdim => sum_all_f32(self)?,
            DType::Float32 => sum_kernel::<f32>(self, &rd, keepdim, |a, b| a + b)?,
            DType::Float64 => sum_kernel::<f64>(self, &rd, keepdim, |a, b| a + b)?,
            DType::Int64 => sum_kernel::<i64>(self, &rd, keepdim, i64::wrapping_add)?,
            DType::Bool => return self.to_dtype(DType::Int64)?.sum(dims, keepdim),
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
        let s = {
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

    /// The largest element (NaN if any is NaN).
    pub fn max_all(&self) -> Result<Tensor> {
        if self.numel() == 0 {
            return Err(Error::value(
                "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            ));
        }
        let out = dispatch_all!(self.dtype(), T => {
            let v = self.to_vec::<T>()?;
            let m = v.iter().copied().fold(v[0], |a, b| if beats(b, a) { b } else { a });
            Tensor::from_vec(vec![m], &[])?
        });
        record("MaxBackward", &[self], &[&out], || (MaxAllBackward, vec![Save::Input(self.clone()), Save::Output(0)]));
        Ok(out)
    }

    /// Largest values along `dim` and their indices (first occurrence).
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            // As in PyTorch: the value itself and index 0, both 0-dim, whatever `keepdim`.
            return self.reshape(&[1])?.max_dim(0, false);
        }
        if self.ndim() > 0 && self.shape()[d] == 0 {
            return Err(Error::index(format!("max(): cannot reduce over dimension {dim} of size 0")));
        }
        let idx = self.index_of_max(Some(dim), true)?;
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
        record("MaxBackward", &[self], &[&values], || {
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
        self.index_of_max(dim, keepdim)
    }

    /// `argmax` for every dtype: `max(dim)` gives the indices of a bool tensor too, as PyTorch does.
    fn index_of_max(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        let Some(dim) = dim else {
            let flat = self.detach().reshape(&[-1])?;
            let r = flat.index_of_max(Some(0), false)?;
            return if keepdim { r.reshape(&vec![1; self.ndim()]) } else { Ok(r) };
        };
        let t = if self.ndim() == 0 { self.detach().reshape(&[1])? } else { self.detach() };
        let d = wrap_dim(dim, t.ndim())?;
        if t.shape()[d] == 0 {
            return Err(Error::index("argmax(): cannot reduce over a dimension of size 0"));
        }
        let out_shape = reduced_shape(t.shape(), &[d], true);
        crate::tensor::create::check_alloc(&out_shape, DType::Int64)?;
        let r = dispatch_all!(t.dtype(), T => t.with_view(|v: ArrayViewD<T>| {
            let idx: Vec<i64> = v
                .lanes(Axis(d))
                .into_iter()
                .map(|lane| {
                    let mut best = 0usize;
                    for (i, &x) in lane.iter().enumerate() {
                        let b = lane[best];
                        if beats(x, b) {
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
        let out = dispatch_float!(src.dtype(), "scatter_add", T => {
            let s = src.to_array::<T>()?;
            let mut out = ArrayD::<T>::zeros(IxDyn(shape));
            for (pos, &i) in idx.indexed_iter() {
                let mut p = pos.slice().to_vec();
                p[dim] = i as usize;
                let v = s.get(pos.clone()).copied().unwrap_or(T::default());
                if let Some(o) = out.get_mut(IxDyn(&p)) {
                    *o += v;
                }
            }
            Tensor::from_array(out)
        });
        record("ScatterAddBackward", &[src], &[&out], || {
            (ScatterAddBackward { dim }, vec![Save::Input(index.clone())])
        });
        Ok(out)
    }
}
