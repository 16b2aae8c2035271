//! Writing at computed positions: scatter, scatter_reduce, index_fill, index_put with
//! `accumulate`, fill_diagonal_, their in-place forms, and the reading operations take,
//! take_along_dim, nonzero, searchsorted, bucketize and unique.
//!
//! Every write goes through `put_at`: the flat positions of the written elements are computed
//! first (by applying the operation's own indexing to a tensor of positions), and the result is a
//! `where` (or an `index_add`) over the flattened tensor. Gradients therefore come from
//! differentiable operations and reach both the tensor written into and the values written.

use crate::dispatch_all;
use crate::error::{Error, Result};
use crate::ops::{Cmp, IndexItem};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::element::Element;
use crate::tensor::layout::{fmt_shape, wrap_dim};
use crate::tensor::Tensor;

/// How `scatter_reduce` combines the values meeting at one position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    /// Their sum.
    Sum,
    /// Their product.
    Prod,
    /// Their mean.
    Mean,
    /// The largest.
    Amax,
    /// The smallest.
    Amin,
}

impl ScatterReduce {
    /// The reduction named `s` as PyTorch spells it.
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "sum" => Self::Sum,
            "prod" => Self::Prod,
            "mean" => Self::Mean,
            "amax" => Self::Amax,
            "amin" => Self::Amin,
            _ => return None,
        })
    }
}

fn shape_i(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// A tensor of `shape` holding each element's flat position.
fn positions(shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    Tensor::arange(0.0, n as f64, 1.0, DType::Int64)?.reshape(&shape_i(shape))
}

/// A value that is `exact` with the gradient of `surrogate`: `exact + (s - s.detach())`, the
/// difference taken as zero where `s` is not finite.
fn with_gradient_of(exact: &Tensor, surrogate: &Tensor) -> Result<Tensor> {
    if !crate::autograd::forward::wants_grad(surrogate) {
        return Ok(exact.clone());
    }
    let delta = surrogate.sub(&surrogate.detach())?;
    let finite = surrogate.detach().isfinite()?;
    let delta = Tensor::where_(&finite, &delta, &Tensor::zeros(&[], delta.dtype())?)?;
    exact.add(&delta)
}

impl Tensor {
    /// `self` with `values` (the shape of `pos`) written at the flat positions `pos` (int64); with
    /// `accumulate`, added there instead. Without it, a repeated position takes its last value.
    pub fn put_at(&self, pos: &Tensor, values: &Tensor, accumulate: bool) -> Result<Tensor> {
        let n = self.numel();
        if pos.numel() == 0 {
            return self.clone_tensor();
        }
        let v = values.to_dtype(self.dtype())?.reshape(&[-1])?;
        let p = pos.reshape(&[-1])?;
        let flat = self.reshape(&[-1])?;
        let out = if accumulate {
            flat.index_add(0, &p, &v, 1.0)?
        } else {
            let mut src = vec![0i64; n];
            let mut written = vec![false; n];
            for (k, &q) in p.to_vec::<i64>()?.iter().enumerate() {
                src[q as usize] = k as i64;
                written[q as usize] = true;
            }
            let chosen = v.index_select(0, &Tensor::from_vec(src, &[n])?)?;
            Tensor::where_(&Tensor::from_vec(written, &[n])?, &chosen, &flat)?
        };
        out.reshape(&shape_i(self.shape()))
    }

    /// `self[indices] = values` (`accumulate`: `+=`), `indices` one int64 or bool tensor per
    /// leading dimension.
    pub fn index_put(&self, indices: &[Tensor], values: &Tensor, accumulate: bool) -> Result<Tensor> {
        let items: Vec<IndexItem> = indices
            .iter()
            .map(|t| if t.dtype() == DType::Bool { IndexItem::Mask(t.clone()) } else { IndexItem::Tensor(t.clone()) })
            .collect();
        self.index_put_positions(&items, values, accumulate)
    }

    /// In-place `index_put`.
    pub fn index_put_acc_(&self, indices: &[Tensor], values: &Tensor, accumulate: bool) -> Result<()> {
        self.apply_inplace("index_put_", &[values], |x| x.index_put(indices, values, accumulate))
    }

    /// Checks scatter's index against `self` and (when given) `src`, and returns the target flat
    /// positions: `pos[i] = position of self[i with dim replaced by index[i]]`.
    fn scatter_positions(&self, op: &str, d: usize, index: &Tensor, src: Option<&Tensor>) -> Result<Tensor> {
        if index.dtype() != DType::Int64 {
            return Err(Error::dtype(format!("{op}(): Expected dtype int64 for index, got {}", index.dtype())));
        }
        if self.ndim() == 0 || index.ndim() != self.ndim() || src.is_some_and(|s| s.ndim() != self.ndim()) {
            return Err(Error::index(format!(
                "{op}(): Index tensor must have the same number of dimensions as self and src tensors (at least 1)"
            )));
        }
        for k in 0..self.ndim() {
            if src.is_some_and(|s| index.shape()[k] > s.shape()[k]) || (k != d && index.shape()[k] > self.shape()[k]) {
                return Err(Error::shape(format!(
                    "{op}(): Expected index {} to be smaller than self {} apart from dimension {d}{}",
                    fmt_shape(index.shape()),
                    fmt_shape(self.shape()),
                    src.map(|s| format!(" and to be smaller size than src {}", fmt_shape(s.shape())))
                        .unwrap_or_default()
                )));
            }
        }
        let size = self.shape()[d];
        for &i in &index.to_vec::<i64>()? {
            if i < 0 || i as usize >= size {
                return Err(Error::index(format!(
                    "{op}(): index {i} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        // Positions of self's elements, cut to index's extent outside `dim`, gathered along `dim`.
        let mut p = positions(self.shape())?;
        for k in 0..self.ndim() {
            if k != d && p.shape()[k] != index.shape()[k] {
                p = p.narrow(k as isize, 0, index.shape()[k])?;
            }
        }
        p.gather(d as isize, &index.detach())
    }

    /// The part of `src` that `index` covers.
    fn covered(src: &Tensor, index: &Tensor) -> Result<Tensor> {
        let mut s = src.clone();
        for k in 0..src.ndim() {
            if s.shape()[k] != index.shape()[k] {
                s = s.narrow(k as isize, 0, index.shape()[k])?;
            }
        }
        Ok(s)
    }

    /// `self` with `self[.., index[i], ..] = src[i]` along `dim` (PyTorch's `scatter`).
    pub fn scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if src.dtype() != self.dtype() {
            return Err(Error::dtype(format!(
                "scatter(): Expected self.dtype to be equal to src.dtype ({} and {})",
                self.dtype(),
                src.dtype()
            )));
        }
        let pos = self.scatter_positions("scatter", d, index, Some(src))?;
        self.put_at(&pos, &Tensor::covered(src, index)?, false)
    }

    /// `self` with `value` written at `index` along `dim`.
    pub fn scatter_value(&self, dim: isize, index: &Tensor, value: Scalar) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        let pos = self.scatter_positions("scatter", d, index, None)?;
        self.put_at(&pos, &Tensor::full(pos.shape(), value, self.dtype())?, false)
    }

    /// `self` with the values of `src` at `index` along `dim` combined by `reduce` into the
    /// elements they land on (`include_self`: the element's own value takes part). Elements no
    /// index reaches keep their value.
    pub fn scatter_reduce(
        &self,
        dim: isize,
        index: &Tensor,
        src: &Tensor,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if src.dtype() != self.dtype() {
            return Err(Error::dtype(format!(
                "scatter_reduce(): Expected self.dtype to be equal to src.dtype ({} and {})",
                self.dtype(),
                src.dtype()
            )));
        }
        let pos = self.scatter_positions("scatter_reduce", d, index, Some(src))?.reshape(&[-1])?;
        let s = Tensor::covered(src, index)?.reshape(&[-1])?;
        let n = self.numel();
        let flat = self.reshape(&[-1])?;
        let pv: Vec<usize> = pos.to_vec::<i64>()?.into_iter().map(|p| p as usize).collect();
        let mut count = vec![0i64; n];
        for &p in &pv {
            count[p] += 1;
        }
        let hit: Vec<bool> = count.iter().map(|&c| c > 0).collect();
        let hit_t = Tensor::from_vec(hit.clone(), &[n])?;
        // The elements that take part: self's own where include_self or not reached.
        let keep_self = Tensor::from_vec(hit.iter().map(|&h| include_self || !h).collect::<Vec<bool>>(), &[n])?;
        let out = match reduce {
            ScatterReduce::Sum | ScatterReduce::Mean => {
                let zero = Tensor::zeros(&[], self.dtype())?;
                let base = Tensor::where_(&keep_self, &flat, &zero)?;
                let summed = base.index_add(0, &pos, &s, 1.0)?;
                if reduce == ScatterReduce::Sum {
                    summed
                } else {
                    let c: Vec<i64> = count.iter().map(|&c| c + i64::from(include_self) + i64::from(c == 0)).collect();
                    let c = Tensor::from_vec(c, &[n])?;
                    let c = c.to_dtype(self.dtype())?;
                    let mean = if self.dtype().is_float() { summed.div(&c)? } else { summed.floor_divide(&c)? };
                    Tensor::where_(&hit_t, &mean, &flat)?
                }
            }
            ScatterReduce::Prod | ScatterReduce::Amax | ScatterReduce::Amin => {
                self.scatter_reduce_exact(&flat, &pos, &pv, &s, reduce, &keep_self, &hit_t)?
            }
        };
        out.reshape(&shape_i(self.shape()))
    }

    /// prod, amax and amin of scatter_reduce: the exact value from a kernel, and the gradient of a
    /// linear surrogate (the product of the others for prod; an even share among the elements
    /// equal to the extreme for amax/amin, as in PyTorch).
    #[allow(clippy::too_many_arguments)]
    fn scatter_reduce_exact(
        &self,
        flat: &Tensor,
        pos: &Tensor,
        pv: &[usize],
        s: &Tensor,
        reduce: ScatterReduce,
        keep_self: &Tensor,
        hit: &Tensor,
    ) -> Result<Tensor> {
        let n = flat.numel();
        let keep: Vec<bool> = keep_self.to_vec()?;
        // Members of each position: self (index None) and the src elements landing there.
        let mut members: Vec<Vec<Option<usize>>> = (0..n).map(|i| if keep[i] { vec![None] } else { vec![] }).collect();
        for (k, &p) in pv.iter().enumerate() {
            members[p].push(Some(k));
        }
        let (exact, w_self, w_src) = dispatch_all!(self.dtype(), T => {
            let x: Vec<T> = flat.detach().to_vec()?;
            let sv: Vec<T> = s.detach().to_vec()?;
            let val = |i: usize, m: Option<usize>| match m { None => x[i], Some(k) => sv[k] };
            let mut exact = x.clone();
            let mut w_self = vec![0f64; n];
            let mut w_src = vec![0f64; sv.len()];
            for i in 0..n {
                let ms = &members[i];
                if ms.is_empty() {
                    continue;
                }
                match reduce {
                    ScatterReduce::Prod => {
                        let mut prod = val(i, ms[0]).to_f64();
                        for &m in &ms[1..] {
                            prod *= val(i, m).to_f64();
                        }
                        exact[i] = if T::DTYPE == DType::Int64 {
                            let mut p = 1i64;
                            for &m in ms {
                                p = p.wrapping_mul(val(i, m).to_i64());
                            }
                            T::from_i64(p)
                        } else {
                            T::from_f64(prod)
                        };
                        for (a, &m) in ms.iter().enumerate() {
                            let others: f64 = ms.iter().enumerate().filter(|&(b, _)| b != a).map(|(_, &o)| val(i, o).to_f64()).product();
                            match m {
                                None => w_self[i] = others,
                                Some(k) => w_src[k] = others,
                            }
                        }
                    }
                    _ => {
                        let largest = reduce == ScatterReduce::Amax;
                        let nan = |v: T| v.partial_cmp(&v).is_none();
                        let mut best = val(i, ms[0]);
                        for &m in &ms[1..] {
                            let v = val(i, m);
                            let want = if largest { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
                            let better = v.partial_cmp(&best) == Some(want);
                            if (better && !nan(best)) || (nan(v) && !nan(best)) {
                                best = v;
                            }
                        }
                        exact[i] = best;
                        let ties: Vec<Option<usize>> = ms.iter().copied().filter(|&m| {
                            let v = val(i, m);
                            v == best || (nan(v) && nan(best))
                        }).collect();
                        // Without include_self, PyTorch still counts an equal self value among
                        // the ties (it gets no gradient share itself).
                        let self_ties = !keep[i] && (x[i] == best || (nan(x[i]) && nan(best)));
                        let share = 1.0 / (ties.len() + usize::from(self_ties)) as f64;
                        for m in ties {
                            match m {
                                None => w_self[i] = share,
                                Some(k) => w_src[k] = share,
                            }
                        }
                    }
                }
            }
            (Tensor::from_vec(exact, &[n])?, w_self, w_src)
        });
        if !flat.dtype().is_float()
            || !(crate::autograd::forward::wants_grad(flat) || crate::autograd::forward::wants_grad(s))
        {
            return Ok(exact);
        }
        let dt = flat.dtype();
        let w_self = Tensor::from_vec(w_self, &[n])?.to_dtype(dt)?;
        let w_src = Tensor::from_vec(w_src, s.shape())?.to_dtype(dt)?;
        let zero = Tensor::zeros(&[], dt)?;
        let surrogate = Tensor::where_(hit, &flat.mul(&w_self)?, &zero)?.index_add(0, pos, &s.mul(&w_src)?, 1.0)?;
        let reached = with_gradient_of(&exact, &surrogate)?;
        Tensor::where_(hit, &reached, flat)
    }

    /// `self` with the slices at `index` (1-d or 0-d int64) along `dim` set to `value`.
    pub fn index_fill(&self, dim: isize, index: &Tensor, value: &Tensor) -> Result<Tensor> {
        if index.dtype() != DType::Int64 || index.ndim() > 1 {
            return Err(Error::index("index_fill_(): Expected a long tensor for index with at most one dimension"));
        }
        if value.ndim() != 0 {
            return Err(Error::value(format!(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.ndim()
            )));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let n = if self.ndim() == 0 { 1 } else { self.shape()[d] } as i64;
        let idx: Vec<i64> = index
            .to_vec::<i64>()?
            .into_iter()
            .map(|i| {
                if i < -n || i >= n {
                    Err(Error::index(format!("index {i} is out of bounds for dimension {d} with size {n}")))
                } else {
                    Ok(i.rem_euclid(n))
                }
            })
            .collect::<Result<_>>()?;
        let k = idx.len();
        let pos = positions(self.shape())?.index_select(dim, &Tensor::from_vec(idx, &[k])?)?;
        let v = value.to_dtype(self.dtype())?.expand(pos.shape())?;
        self.put_at(&pos, &v, false)
    }

    /// The elements at `index` of the flattened tensor (negative indices count from the end),
    /// shaped like `index`.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        if index.dtype() != DType::Int64 {
            return Err(Error::dtype(format!("take(): Expected a long tensor for index, but got {}", index.dtype())));
        }
        let n = self.numel() as i64;
        let idx: Vec<i64> = index
            .to_vec::<i64>()?
            .into_iter()
            .map(|i| {
                if i < -n || i >= n {
                    Err(Error::index(format!("out of range: tried to access index {i} on a tensor of {n} elements.")))
                } else {
                    Ok(i.rem_euclid(n.max(1)))
                }
            })
            .collect::<Result<_>>()?;
        let k = idx.len();
        let flat = self.reshape(&[-1])?.index_select(0, &Tensor::from_vec(idx, &[k])?)?;
        flat.reshape(&shape_i(index.shape()))
    }

    /// `gather` after broadcasting `self` and `indices` outside `dim`; with `dim` None, `take` of
    /// the flattened tensor.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<isize>) -> Result<Tensor> {
        if indices.dtype() != DType::Int64 {
            return Err(Error::dtype(format!(
                "torch.take_along_dim(): dtype of indices should be int64 but got {}",
                indices.dtype()
            )));
        }
        let Some(dim) = dim else {
            return self.reshape(&[-1])?.take_along_dim(&indices.reshape(&[-1])?, Some(0));
        };
        if self.ndim() != indices.ndim() {
            return Err(Error::value(format!(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                self.ndim(),
                indices.ndim()
            )));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let mut a = self.shape().to_vec();
        let mut b = indices.shape().to_vec();
        a[d] = 1;
        b[d] = 1;
        let common = crate::tensor::layout::broadcast_shapes(&a, &b)?;
        let (mut sa, mut sb) = (common.clone(), common);
        sa[d] = self.shape()[d];
        sb[d] = indices.shape()[d];
        self.expand(&sa)?.gather(d as isize, &indices.expand(&sb)?.contiguous()?)
    }

    /// The coordinates of the non-zero elements, one row per element (int64, shape `[k, ndim]`).
    pub fn nonzero(&self) -> Result<Tensor> {
        let nz: Vec<bool> = self.detach().compare_scalar(0, Cmp::Ne)?.to_vec()?;
        let nd = self.ndim();
        let mut out = Vec::new();
        let mut count = 0;
        for (flat, &b) in nz.iter().enumerate() {
            if !b {
                continue;
            }
            count += 1;
            let mut rest = flat;
            let mut coord = vec![0i64; nd];
            for k in (0..nd).rev() {
                coord[k] = (rest % self.shape()[k]) as i64;
                rest /= self.shape()[k];
            }
            out.extend(coord);
        }
        Tensor::from_vec(out, &[count, nd])
    }

    /// For each of `values`, the index where it would be inserted into the sorted last dimension
    /// of `self` to keep it sorted: before equal elements (`right`: after them). `self` is 1-d,
    /// or has the leading dimensions of `values`.
    pub fn searchsorted(&self, values: &Tensor, right: bool) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
            ));
        }
        if self.ndim() > 1
            && (values.ndim() != self.ndim() || values.shape()[..values.ndim() - 1] != self.shape()[..self.ndim() - 1])
        {
            return Err(Error::value(format!(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
                fmt_shape(self.shape()),
                fmt_shape(values.shape())
            )));
        }
        let dt = self.dtype().promote(values.dtype());
        let (seq, vals) = (self.detach().to_dtype(dt)?, values.detach().to_dtype(dt)?);
        let m = *self.shape().last().expect("at least one dim");
        let out = dispatch_all!(dt, T => {
            let sv: Vec<T> = seq.to_vec()?;
            let vv: Vec<T> = vals.to_vec()?;
            let per_row = if self.ndim() == 1 { vv.len().max(1) } else { *values.shape().last().unwrap_or(&1) };
            let ord = |a: &T, b: &T| -> std::cmp::Ordering {
                let na = a.partial_cmp(a).is_none();
                let nb = b.partial_cmp(b).is_none();
                match (na, nb) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
                }
            };
            let r: Vec<i64> = vv.iter().enumerate().map(|(j, v)| {
                let row = if self.ndim() == 1 { 0 } else { j / per_row.max(1) };
                let lane = &sv[row * m..(row + 1) * m];
                lane.partition_point(|x| {
                    let o = ord(x, v);
                    if right { o != std::cmp::Ordering::Greater } else { o == std::cmp::Ordering::Less }
                }) as i64
            }).collect();
            Tensor::from_vec(r, values.shape())?
        });
        Ok(out)
    }

    /// The sorted distinct elements of the flattened tensor, the index of each element's value
    /// among them (shaped like `self`) and how often each occurs.
    pub fn unique(&self) -> Result<(Tensor, Tensor, Tensor)> {
        dispatch_all!(self.dtype(), T => {
            let v: Vec<T> = self.detach().to_vec()?;
            let mut order: Vec<usize> = (0..v.len()).collect();
            let nan = |x: &T| x.partial_cmp(x).is_none();
            let cmp = |a: &T, b: &T| match (nan(a), nan(b)) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
            };
            order.sort_by(|&a, &b| cmp(&v[a], &v[b]));
            let mut values: Vec<T> = Vec::new();
            let mut counts: Vec<i64> = Vec::new();
            let mut inverse = vec![0i64; v.len()];
            for &i in &order {
                // NaNs are all distinct, as in PyTorch.
                let same = values.last().is_some_and(|l| !nan(l) && cmp(l, &v[i]) == std::cmp::Ordering::Equal);
                if !same {
                    values.push(v[i]);
                    counts.push(0);
                }
                *counts.last_mut().expect("pushed") += 1;
                inverse[i] = values.len() as i64 - 1;
            }
            let k = values.len();
            Ok((Tensor::from_vec(values, &[k])?, Tensor::from_vec(inverse, self.shape())?, Tensor::from_vec(counts, &[k])?))
        })
    }

    /// Flat positions of the main diagonal (every dimension equal for more than two); with
    /// `wrap`, a tall matrix's diagonal restarts below the square part, as in PyTorch.
    fn diagonal_positions(&self, wrap: bool) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::value("dimensions must larger than 1"));
        }
        if self.ndim() > 2 && self.shape().iter().any(|&s| s != self.shape()[0]) {
            return Err(Error::value("all dimensions of input must be of equal length"));
        }
        let strides = crate::tensor::layout::contiguous_strides(self.shape());
        let step: usize = strides.iter().sum();
        let n = self.numel();
        let min = *self.shape().iter().min().expect("ndim >= 2");
        let end = if wrap && self.ndim() == 2 { n } else { (min * step).min(n) };
        let pos: Vec<i64> = (0..end).step_by(step.max(1)).map(|p| p as i64).collect();
        let k = pos.len();
        Tensor::from_vec(pos, &[k])
    }

    /// In-place scatter of `src`.
    pub fn scatter_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        self.apply_inplace("scatter_", &[src], |x| x.scatter(dim, index, src))
    }

    /// In-place scatter of a value.
    pub fn scatter_value_(&self, dim: isize, index: &Tensor, value: Scalar) -> Result<()> {
        self.apply_inplace("scatter_", &[], |x| x.scatter_value(dim, index, value))
    }

    /// In-place scatter_add.
    pub fn scatter_add_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        self.apply_inplace("scatter_add_", &[src], |x| x.scatter_add(dim, index, src))
    }

    /// In-place scatter_reduce.
    pub fn scatter_reduce_(
        &self,
        dim: isize,
        index: &Tensor,
        src: &Tensor,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<()> {
        self.apply_inplace("scatter_reduce_", &[src], |x| x.scatter_reduce(dim, index, src, reduce, include_self))
    }

    /// In-place index_fill.
    pub fn index_fill_(&self, dim: isize, index: &Tensor, value: &Tensor) -> Result<()> {
        self.apply_inplace("index_fill_", &[value], |x| x.index_fill(dim, index, value))
    }

    /// In-place index_add.
    pub fn index_add_(&self, dim: isize, index: &Tensor, source: &Tensor, alpha: f64) -> Result<()> {
        self.apply_inplace("index_add_", &[source], |x| x.index_add(dim, index, source, alpha))
    }

    /// In-place masked_scatter.
    pub fn masked_scatter_(&self, mask: &Tensor, source: &Tensor) -> Result<()> {
        self.apply_inplace("masked_scatter_", &[source], |x| x.masked_scatter(mask, source))
    }

    /// Writes `value` on the main diagonal, in place.
    pub fn fill_diagonal_(&self, value: Scalar, wrap: bool) -> Result<()> {
        let pos = self.diagonal_positions(wrap)?;
        self.apply_inplace("fill_diagonal_", &[], |x| {
            x.put_at(&pos, &Tensor::full(pos.shape(), value, x.dtype())?, false)
        })
    }
}
