//! Sorting and scans along one dimension: sort, argsort, topk, kthvalue, median, mode, cumsum,
//! cumprod, cummax, cummin, flip and roll.
//!
//! The selecting operations compute int64 indices with a kernel and take their values with
//! `gather`, so their gradient is gather's (scattered back to the chosen positions) and
//! differentiates again. NaN sorts as the largest value, as in PyTorch.

use std::cmp::Ordering;

use crate::autograd::node::Node;
use crate::autograd::record::{record, Save};
use crate::dispatch_all;
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::tensor::dtype::DType;
use crate::tensor::element::Element;
use crate::tensor::layout::wrap_dim;
use crate::tensor::Tensor;

fn is_nan<T: PartialOrd>(v: &T) -> bool {
    v.partial_cmp(v).is_none()
}

/// A total order in which NaN is larger than every number and equal to NaN.
fn order<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match (is_nan(a), is_nan(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// Applies `f` to every lane of `t` along `d` (as a slice); each call returns `m` values, which
/// become the lane of the result along `d`. `t` has at least one dimension.
fn map_lanes<T: Element, U: Element>(
    t: &Tensor,
    d: usize,
    m: usize,
    mut f: impl FnMut(&[T]) -> Vec<U>,
) -> Result<Tensor> {
    let last = t.ndim() as isize - 1;
    let p = t.detach().transpose(d as isize, last)?;
    let n = p.shape()[p.ndim() - 1];
    let count: usize = p.shape()[..p.ndim() - 1].iter().product();
    let mut out_shape = p.shape().to_vec();
    out_shape[p.ndim() - 1] = m;
    crate::tensor::create::check_alloc(&out_shape, U::DTYPE)?;
    let data = p.to_vec::<T>()?;
    let mut out = Vec::with_capacity(count * m);
    for i in 0..count {
        let lane = f(&data[i * n..(i + 1) * n]);
        debug_assert_eq!(lane.len(), m);
        out.extend(lane);
    }
    Tensor::from_vec(out, &out_shape)?.transpose(d as isize, last)?.contiguous()
}

/// The positions that sort `lane` (stable: equal elements keep their order).
fn argsort_lane<T: PartialOrd + Copy>(lane: &[T], descending: bool) -> Vec<i64> {
    let mut idx: Vec<usize> = (0..lane.len()).collect();
    if descending {
        idx.sort_by(|&a, &b| order(&lane[b], &lane[a]));
    } else {
        idx.sort_by(|&a, &b| order(&lane[a], &lane[b]));
    }
    idx.into_iter().map(|i| i as i64).collect()
}

/// The reverse of `0..n` as an int64 index.
fn reversed(n: usize) -> Result<Tensor> {
    Tensor::from_vec((0..n as i64).rev().collect(), &[n])
}

/// A constant `n x n` bool mask with `keep(row, col)`.
fn mask(n: usize, keep: impl Fn(usize, usize) -> bool) -> Result<Tensor> {
    let v: Vec<bool> = (0..n * n).map(|p| keep(p / n, p % n)).collect();
    Tensor::from_vec(v, &[n, n])
}

/// Backward of cumsum: the reversed cumulative sum of the gradient.
struct CumsumBackward {
    dim: usize,
}

impl SingleOutput for CumsumBackward {
    fn input_grads(&self, _node: &Node, g: Tensor, _need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let d = [self.dim as isize];
        Ok(vec![Some(g.flip(&d)?.cumsum(self.dim as isize)?.flip(&d)?)])
    }
}

/// Backward of cumprod. Without zeros: `revcumsum(g * out) / x`. With a zero, the exact sum
/// `dx_j = prod_{k<j} x_k * sum_{i>=j} g_i prod_{j<k<=i} x_k`, written with an `n x n` cumprod per
/// lane, so it holds at zeros and differentiates again.
struct CumprodBackward {
    dim: usize,
}

impl SingleOutput for CumprodBackward {
    fn input_grads(&self, node: &Node, g: Tensor, _need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let (x, out) = (saved[0].clone(), saved[1].clone());
        let d = self.dim as isize;
        if x.numel() == 0 {
            return Ok(vec![Some(g)]);
        }
        if !x.detach().to_f64_vec()?.contains(&0.0) {
            let r = g.mul(&out)?.flip(&[d])?.cumsum(d)?.flip(&[d])?.div(&x)?;
            return Ok(vec![Some(r)]);
        }
        let last = x.ndim() as isize - 1;
        let (xs, gs) = (x.transpose(d, last)?, g.transpose(d, last)?);
        let n = xs.shape()[xs.ndim() - 1];
        let mut big = xs.shape().to_vec();
        big.insert(big.len() - 1, n);
        let one = Tensor::ones(&[], x.dtype())?;
        let zero = Tensor::zeros(&[], x.dtype())?;
        // y[..., j, k] = x_k for k > j, else 1; its cumprod along k is prod_{j<k<=i} x_k.
        let y = Tensor::where_(&mask(n, |j, k| k > j)?, &xs.unsqueeze(-2)?.expand(&big)?, &one)?;
        let c = y.cumprod(-1)?;
        let terms = Tensor::where_(&mask(n, |j, i| i >= j)?, &c.mul(&gs.unsqueeze(-2)?)?, &zero)?;
        let s = terms.sum(Some(&[-1]), false)?;
        let mut head = xs.shape().to_vec();
        *head.last_mut().expect("at least one dim") = 1;
        let shifted = Tensor::cat(&[Tensor::ones(&head, x.dtype())?, xs.narrow(-1, 0, n - 1)?], -1)?;
        let r = shifted.cumprod(-1)?.mul(&s)?.transpose(d, last)?;
        Ok(vec![Some(r)])
    }
}

impl Tensor {
    /// Runs `f` on `self` made 1-d when it is 0-d, and makes its results 0-d again.
    fn scalar_as_1d<R>(&self, f: impl FnOnce(&Tensor) -> Result<R>, back: impl Fn(R) -> Result<R>) -> Result<R> {
        back(f(&self.reshape(&[1])?)?)
    }

    /// The indices that sort `self` along `dim` (stable; NaN largest).
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return Tensor::zeros(&[], DType::Int64);
        }
        let n = self.shape()[d];
        dispatch_all!(self.dtype(), T => map_lanes::<T, i64>(self, d, n, |l| argsort_lane(l, descending)))
    }

    /// Sorted values along `dim` and the indices they came from (stable; NaN largest).
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::Int64)?));
        }
        let idx = self.argsort(dim, descending)?;
        Ok((self.gather(d as isize, &idx)?, idx))
    }

    /// The `k` largest (or smallest) values along `dim`, sorted, and their indices.
    pub fn topk(&self, k: i64, dim: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        let n = if self.ndim() == 0 { 1 } else { self.shape()[d] };
        if k < 0 || k as usize > n {
            return Err(Error::value("topk(): selected index k out of range"));
        }
        if self.ndim() == 0 {
            let (v, i) = self.sort(0, largest)?;
            return if k == 0 {
                Ok((self.reshape(&[1])?.narrow(0, 0, 0)?, i.reshape(&[1])?.narrow(0, 0, 0)?))
            } else {
                Ok((v, i))
            };
        }
        let idx = self.argsort(dim, largest)?.narrow(d as isize, 0, k as usize)?.contiguous()?;
        Ok((self.gather(d as isize, &idx)?, idx))
    }

    /// The `k`-th smallest value along `dim` (k counts from 1) and its index.
    pub fn kthvalue(&self, k: i64, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        let n = if self.ndim() == 0 { 1 } else { self.shape()[d] };
        if k < 1 || k as usize > n {
            return Err(Error::value(format!("kthvalue(): selected number k out of range for dimension {d}")));
        }
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::Int64)?));
        }
        let idx = self.argsort(dim, false)?.narrow(d as isize, k as usize - 1, 1)?.contiguous()?;
        self.pick(d, idx, keepdim)
    }

    /// Values at `idx` (size 1 along `d`), with `d` removed unless `keepdim`.
    fn pick(&self, d: usize, idx: Tensor, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let v = self.gather(d as isize, &idx)?;
        if keepdim {
            Ok((v, idx))
        } else {
            Ok((v.squeeze_dim(d as isize)?, idx.squeeze_dim(d as isize)?))
        }
    }

    /// The lower median along `dim` and its index; NaN when the lane holds one (its first NaN).
    pub fn median_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::Int64)?));
        }
        if self.shape()[d] == 0 {
            return Err(Error::index(format!("median(): Expected reduction dim {d} to have non-zero size.")));
        }
        let idx = dispatch_all!(self.dtype(), T => map_lanes::<T, i64>(self, d, 1, |l| {
            if let Some(p) = l.iter().position(is_nan) {
                return vec![p as i64];
            }
            vec![argsort_lane(l, false)[(l.len() - 1) / 2]]
        }))?;
        self.pick(d, idx, keepdim)
    }

    /// The lower median of all elements (NaN if any is NaN). As PyTorch's, its gradient is shared
    /// evenly among the elements equal to it (the `median(dim)` form picks one by its index).
    pub fn median_all(&self) -> Result<Tensor> {
        if self.numel() == 0 {
            return Tensor::full(&[], crate::Scalar::Float(f64::NAN), self.dtype());
        }
        let out = {
            let _off = crate::autograd::GradModeGuard::no_grad();
            self.detach().reshape(&[-1])?.median_dim(0, false)?.0
        };
        record("MedianBackward", &[self], &[&out], || {
            (super::reduce::MaxAllBackward, vec![Save::Input(self.clone()), Save::Output(0)])
        });
        Ok(out)
    }

    /// The most frequent value along `dim` (the smallest among equally frequent ones) and the
    /// index of its last occurrence.
    pub fn mode(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::Int64)?));
        }
        if self.shape()[d] == 0 {
            return Err(Error::index(format!("mode(): Expected reduction dim {d} to have non-zero size.")));
        }
        let idx = dispatch_all!(self.dtype(), T => map_lanes::<T, i64>(self, d, 1, |l| {
            let s = argsort_lane(l, false);
            let (mut best, mut best_count, mut i) = (s[0], 0usize, 0usize);
            while i < s.len() {
                let mut j = i;
                let mut last = s[i];
                while j < s.len() && order(&l[s[j] as usize], &l[s[i] as usize]) == Ordering::Equal {
                    last = last.max(s[j]);
                    j += 1;
                }
                if j - i > best_count {
                    best_count = j - i;
                    best = last;
                }
                i = j;
            }
            vec![best]
        }))?;
        self.pick(d, idx, keepdim)
    }

    /// Running maximum (`largest`) or minimum along `dim` and the index where each was reached
    /// (the latest among equal values; NaN propagates).
    pub fn cum_extreme(&self, dim: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::Int64)?));
        }
        let n = self.shape()[d];
        let idx = dispatch_all!(self.dtype(), T => map_lanes::<T, i64>(self, d, n, |l| {
            let mut out = Vec::with_capacity(l.len());
            let mut best = 0usize;
            for (i, x) in l.iter().enumerate() {
                let b = &l[best];
                let take = if is_nan(b) {
                    is_nan(x)
                } else {
                    is_nan(x) || if largest { x >= b } else { x <= b }
                };
                if take {
                    best = i;
                }
                out.push(best as i64);
            }
            out
        }))?;
        Ok((self.gather(d as isize, &idx)?, idx))
    }

    /// Cumulative sum along `dim`; int64 for integer and bool inputs.
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        self.scan(dim, false)
    }

    /// Cumulative product along `dim`; int64 for integer and bool inputs. The gradient is exact
    /// with zeros.
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        self.scan(dim, true)
    }

    fn scan(&self, dim: isize, product: bool) -> Result<Tensor> {
        if self.dtype() == DType::Bool || (self.dtype().is_int() && self.dtype() != DType::Int64) {
            return self.to_dtype(DType::Int64)?.scan(dim, product);
        }
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            return self.scalar_as_1d(|t| t.scan(0, product), |r| r.reshape(&[]));
        }
        let n = self.shape()[d];
        fn run<T: Element>(t: &Tensor, d: usize, n: usize, start: T, op: fn(T, T) -> T) -> Result<Tensor> {
            map_lanes::<T, T>(t, d, n, |l| {
                let mut acc = start;
                l.iter()
                    .map(|&x| {
                        acc = op(acc, x);
                        acc
                    })
                    .collect()
            })
        }
        let out = match (self.dtype(), product) {
            (DType::Float32, false) => run::<f32>(self, d, n, 0.0, |a, b| a + b)?,
            (DType::Float32, true) => run::<f32>(self, d, n, 1.0, |a, b| a * b)?,
            (DType::Float64, false) => run::<f64>(self, d, n, 0.0, |a, b| a + b)?,
            (DType::Float64, true) => run::<f64>(self, d, n, 1.0, |a, b| a * b)?,
            // NOTE [Half-precision compute]: accumulated in float32, each value rounded once.
            (dt, _) if dt.is_half() => self.via_float32(|x| x.scan(dim, product))?.to_dtype(dt)?,
            (_, false) => run::<i64>(self, d, n, 0, i64::wrapping_add)?,
            (_, true) => run::<i64>(self, d, n, 1, i64::wrapping_mul)?,
        };
        if product {
            record("CumprodBackward", &[self], &[&out], || {
                (CumprodBackward { dim: d }, vec![Save::Input(self.clone()), Save::Output(0)])
            });
        } else {
            record("CumsumBackward", &[self], &[&out], || (CumsumBackward { dim: d }, vec![]));
        }
        Ok(out)
    }

    /// `self` with the order of its elements reversed along each of `dims`.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        let mut seen = Vec::new();
        for &dim in dims {
            let d = wrap_dim(dim, self.ndim())?;
            if seen.contains(&d) {
                return Err(Error::value(format!("flip(): dim {d} appears multiple times in the list of dims")));
            }
            seen.push(d);
        }
        let mut out = self.clone();
        if self.ndim() == 0 || seen.is_empty() {
            return self.clone_tensor();
        }
        for d in seen {
            out = out.index_select(d as isize, &reversed(self.shape()[d])?)?;
        }
        Ok(out)
    }

    /// `self` with its elements shifted by `shifts[i]` along `dims[i]`, wrapping around; with no
    /// dims, over the flattened tensor (shape kept).
    pub fn roll(&self, shifts: &[i64], dims: &[isize]) -> Result<Tensor> {
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::value(format!(
                    "roll(): `shifts` required and `dims` must be empty or have the same length as `shifts`, got {} shifts",
                    shifts.len()
                )));
            }
            let shape: Vec<isize> = self.shape().iter().map(|&s| s as isize).collect();
            return self.reshape(&[-1])?.roll(shifts, &[0])?.reshape(&shape);
        }
        if shifts.len() != dims.len() {
            return Err(Error::value(format!(
                "roll(): shifts and dimensions must align. shifts: {}, dims: {}",
                shifts.len(),
                dims.len()
            )));
        }
        if self.ndim() == 0 {
            wrap_dim(dims[0], 0)?;
            return self.clone_tensor();
        }
        let mut out = self.clone();
        for (&s, &dim) in shifts.iter().zip(dims) {
            let d = wrap_dim(dim, self.ndim())?;
            let n = self.shape()[d] as i64;
            if n == 0 {
                continue;
            }
            let idx: Vec<i64> = (0..n).map(|i| (i - s).rem_euclid(n)).collect();
            out = out.index_select(d as isize, &Tensor::from_vec(idx, &[n as usize])?)?;
        }
        if out.same(self) {
            return self.clone_tensor();
        }
        Ok(out)
    }
}
