//! Shape operations. The views (`view`, `unsqueeze`, `squeeze`, `expand`, `transpose`, `permute`,
//! `narrow`) share storage, and so the version counter, with their input. `view` and `reshape`
//! follow PyTorch's stride rule (`Layout::view_as`, PyTorch's `computeStride`): a new shape is a
//! view whenever each new dimension spans evenly strided memory, contiguous or not; where it does
//! not, `view` fails and `reshape` (and so `flatten`) copies. `contiguous` and `to_dtype` copy
//! unless there is nothing to change (then they return the tensor itself); `clone_data`,
//! `clone_tensor`, `cat` and `stack` always copy.

use super::formula::{Need, SingleOutput};
use crate::autograd::node::Node;
use crate::autograd::record::record;
use crate::dispatch_all;
use crate::error::{Error, Result};
use crate::tensor::dtype::DType;
use crate::tensor::layout::{fmt_shape, infer_shape, wrap_dim, Layout};
use crate::tensor::Tensor;

// NOTE [Tiled transposed copy]: a strided 2-D view (a transposed matrix above all) copied element by
// element in row-major order reads one value per cache line and per page: `w.t().contiguous()` of
// a 4096×4096 float32 took 68-90 ms (0.7 GB/s), and every `nn.Linear` weight gradient before
// NOTE [Gradient layout of a product] paid it in its accumulator. Copied in tiles of TILE_ROWS
// rows by TILE_COLS columns, each tile's lines stay in L1, and bands of rows run on rayon's
// threads. The rows are few because a power-of-two row length puts every destination row's line
// in one L1 set: measured for 4096² (one thread, output memory already mapped), 32×32 tiles took
// 98 ms, 16×16 40 ms, 8×64 17 ms; for 1024², 5.5, 2.0 and 0.46 ms.

/// Elements below which the plain strided copy is kept.
const TILED_COPY_MIN: usize = 1 << 12;
/// A tile's rows (the band height) and columns.
const TILE_ROWS: usize = 8;
const TILE_COLS: usize = 64;
/// Elements above which the row bands are shared among rayon's threads.
const TILED_COPY_PARALLEL: usize = 1 << 18;

/// The row-major copy of a 2-D tensor (any strides), tile by tile.
fn tiled_copy_2d<T: crate::tensor::element::Element>(t: &Tensor) -> Result<Vec<T>> {
    use rayon::prelude::*;
    crate::tensor::create::check_alloc(t.shape(), T::DTYPE)?;
    let (rows, cols) = (t.shape()[0], t.shape()[1]);
    let (rs, cs) = (t.strides()[0], t.strides()[1]);
    let guard = t.storage().read();
    let src = T::slice(&guard).ok_or_else(|| Error::dtype("clone: dtype mismatch"))?;
    if t.layout().storage_extent() > src.len() {
        return Err(Error::index("tensor layout reaches past the end of its storage"));
    }
    let src = &src[t.layout().offset..];
    let mut out: Vec<T> = Vec::with_capacity(rows * cols);
    // One band of TILE_ROWS rows: `band` is its slots in `out`, `r0` its first row.
    let copy_band = |r0: usize, band: &mut [std::mem::MaybeUninit<T>]| {
        let h = band.len() / cols;
        for c0 in (0..cols).step_by(TILE_COLS) {
            let w = TILE_COLS.min(cols - c0);
            if rs <= cs {
                // Down the columns: the source's rows are the closer ones (a transposed view).
                for j in c0..c0 + w {
                    for i in 0..h {
                        band[i * cols + j].write(src[(r0 + i) * rs + j * cs]);
                    }
                }
            } else {
                for i in 0..h {
                    for j in c0..c0 + w {
                        band[i * cols + j].write(src[(r0 + i) * rs + j * cs]);
                    }
                }
            }
        }
    };
    let dst = &mut out.spare_capacity_mut()[..rows * cols];
    if rows * cols >= TILED_COPY_PARALLEL {
        dst.par_chunks_mut(TILE_ROWS * cols).enumerate().for_each(|(b, band)| copy_band(b * TILE_ROWS, band));
    } else {
        dst.chunks_mut(TILE_ROWS * cols).enumerate().for_each(|(b, band)| copy_band(b * TILE_ROWS, band));
    }
    drop(guard);
    // SAFETY: the bands cover all `rows` rows, and each band's tiles all `cols` columns of its rows,
    // so every one of the `rows * cols` slots was written.
    unsafe { out.set_len(rows * cols) };
    Ok(out)
}

/// The backward of every shape operation: one variant per way of undoing it.
#[derive(Clone)]
enum ShapeBackward {
    /// Back to the input's shape (reshape, view, flatten, squeeze).
    Reshape(Vec<usize>),
    /// Remove the inserted dimension.
    Unsqueeze(usize),
    /// Sum the broadcast dimensions away.
    Expand(Vec<usize>),
    /// Swap back.
    Transpose(usize, usize),
    /// The inverse permutation.
    Permute(Vec<usize>),
    /// Back to the input's dtype.
    ToCopy(DType),
    /// Identity (clone, contiguous).
    Identity,
    /// Split along `dim` into the parts' sizes.
    Cat { dim: usize, sizes: Vec<usize> },
    /// Pad the narrowed gradient back with zeros.
    Narrow { input_shape: Vec<usize>, dim: usize, start: usize },
}

impl SingleOutput for ShapeBackward {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(match self {
            ShapeBackward::Reshape(shape) => vec![Some(g.reshape(&as_isize(shape))?)],
            ShapeBackward::Unsqueeze(d) => vec![Some(g.squeeze_dim(*d as isize)?)],
            ShapeBackward::Expand(shape) => vec![Some(g.sum_to(shape)?)],
            ShapeBackward::Transpose(a, b) => vec![Some(g.transpose(*a as isize, *b as isize)?)],
            ShapeBackward::Permute(inv) => vec![Some(g.permute(&as_isize(inv))?)],
            ShapeBackward::ToCopy(dt) => vec![Some(g.to_dtype(*dt)?)],
            ShapeBackward::Identity => vec![Some(g)],
            ShapeBackward::Cat { dim, sizes } => {
                let mut start = 0;
                let mut out = Vec::with_capacity(sizes.len());
                for &s in sizes {
                    out.push(Some(g.narrow(*dim as isize, start, s)?));
                    start += s;
                }
                out
            }
            ShapeBackward::Narrow { input_shape, dim, start } => {
                let z = Tensor::zeros(input_shape, g.dtype())?;
                let mut parts = Vec::new();
                let len = g.shape()[*dim];
                if *start > 0 {
                    parts.push(z.narrow(*dim as isize, 0, *start)?);
                }
                parts.push(g);
                let end = start + len;
                if end < input_shape[*dim] {
                    parts.push(z.narrow(*dim as isize, end, input_shape[*dim] - end)?);
                }
                vec![Some(Tensor::cat(&parts, *dim as isize)?)]
            }
        })
    }

    fn input_grads_batched(
        &self,
        _node: &Node,
        g: &Tensor,
        _: Need<'_>,
        batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        Some(self.batched(g, batch))
    }
}

impl ShapeBackward {
    /// The formula for a batch of gradients `[batch, *output shape]` (NOTE [Batched rows]): the
    /// same undoing, one dimension further right.
    fn batched(&self, g: &Tensor, batch: usize) -> Result<Vec<Option<Tensor>>> {
        let with_batch = |shape: &[usize]| {
            let mut s = vec![batch as isize];
            s.extend(as_isize(shape));
            s
        };
        Ok(match self {
            ShapeBackward::Reshape(shape) => vec![Some(g.reshape(&with_batch(shape))?)],
            ShapeBackward::Unsqueeze(d) => vec![Some(g.squeeze_dim(*d as isize + 1)?)],
            ShapeBackward::Expand(shape) => vec![Some(g.sum_to_batched(shape)?)],
            ShapeBackward::Transpose(a, b) => vec![Some(g.transpose(*a as isize + 1, *b as isize + 1)?)],
            ShapeBackward::Permute(inv) => {
                let mut p = vec![0isize];
                p.extend(inv.iter().map(|&d| d as isize + 1));
                vec![Some(g.permute(&p)?)]
            }
            ShapeBackward::ToCopy(dt) => vec![Some(g.to_dtype(*dt)?)],
            ShapeBackward::Identity => vec![Some(g.clone())],
            ShapeBackward::Cat { dim, sizes } => {
                let mut start = 0;
                let mut out = Vec::with_capacity(sizes.len());
                for &s in sizes {
                    out.push(Some(g.narrow(*dim as isize + 1, start, s)?));
                    start += s;
                }
                out
            }
            ShapeBackward::Narrow { input_shape, dim, start } => {
                let mut full = vec![batch];
                full.extend_from_slice(input_shape);
                let z = Tensor::zeros(&full, g.dtype())?;
                let d = *dim + 1;
                let mut parts = Vec::new();
                let len = g.shape()[d];
                if *start > 0 {
                    parts.push(z.narrow(d as isize, 0, *start)?);
                }
                parts.push(g.clone());
                let end = start + len;
                if end < input_shape[*dim] {
                    parts.push(z.narrow(d as isize, end, input_shape[*dim] - end)?);
                }
                vec![Some(Tensor::cat(&parts, d as isize)?)]
            }
        })
    }
}

fn as_isize(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&d| d as isize).collect()
}

impl Tensor {
    fn view_with(&self, layout: Layout, name: &'static str, formula: impl FnOnce() -> ShapeBackward) -> Tensor {
        let out = self.alias_with_layout(layout);
        let formula = formula();
        record(name, &[self], &[&out], || (formula.clone(), vec![]));
        out
    }

    /// A view of the whole tensor with its own layout: what a shape operation that changes nothing
    /// (reshape to the same shape, `t()` of a vector, ...) returns. As in PyTorch it is a new tensor, so
    /// that a view taken under `no_grad` carries no history and a hook on it is its own.
    fn same_shape_view(&self, name: &'static str) -> Tensor {
        let input = self.shape().to_vec();
        self.view_with(self.layout().clone(), name, || ShapeBackward::Reshape(input))
    }

    /// A view with a new shape (one entry may be -1); fails when the strides do not allow a view.
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        let shape = infer_shape(shape, self.numel(), self.shape())?;
        let layout = self.layout().view_as(&shape).ok_or_else(|| {
            Error::shape(format!(
                "view size is not compatible with input tensor's size and stride (shape {}, strides {:?}): \
                 at least one dimension spans across two contiguous subspaces. Use .reshape(...) instead.",
                fmt_shape(self.shape()),
                self.strides()
            ))
        })?;
        let input = self.shape().to_vec();
        Ok(self.view_with(layout, "ViewBackward", || ShapeBackward::Reshape(input)))
    }

    /// A tensor with a new shape: a view when possible, else a copy.
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        let target = infer_shape(shape, self.numel(), self.shape())?;
        if target == self.shape() {
            return Ok(self.same_shape_view("ViewBackward"));
        }
        let input = self.shape().to_vec();
        if let Some(layout) = self.layout().view_as(&target) {
            return Ok(self.view_with(layout, "ReshapeBackward", || ShapeBackward::Reshape(input)));
        }
        let copy = self.contiguous()?;
        let layout =
            copy.layout().view_as(&target).ok_or_else(|| Error::shape("a contiguous copy cannot be viewed"))?;
        Ok(copy.view_with(layout, "ReshapeBackward", || ShapeBackward::Reshape(input)))
    }

    /// Flattens dimensions `start..=end` into one.
    pub fn flatten(&self, start: isize, end: isize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        let (s, e) = (wrap_dim(start, self.ndim())?, wrap_dim(end, self.ndim())?);
        if s > e {
            return Err(Error::value("flatten() has invalid args: start_dim cannot come after end_dim"));
        }
        let mut shape: Vec<isize> = self.shape()[..s].iter().map(|&d| d as isize).collect();
        shape.push(self.shape()[s..=e].iter().product::<usize>() as isize);
        shape.extend(self.shape()[e + 1..].iter().map(|&d| d as isize));
        self.reshape(&shape)
    }

    /// Inserts a dimension of size 1 at `dim`.
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let layout = self.layout().unsqueeze(d);
        Ok(self.view_with(layout, "UnsqueezeBackward", || ShapeBackward::Unsqueeze(d)))
    }

    /// Removes dimension `dim` if it has size 1 (else returns the tensor unchanged, like PyTorch).
    pub fn squeeze_dim(&self, dim: isize) -> Result<Tensor> {
        if self.ndim() == 0 {
            // A 0-d tensor takes dim 0 or -1 (as PyTorch does), nothing else.
            wrap_dim(dim, 1)?;
            return Ok(self.same_shape_view("SqueezeBackward"));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if self.shape()[d] != 1 {
            return Ok(self.same_shape_view("SqueezeBackward"));
        }
        let layout = self.layout().squeeze(d);
        let input = self.shape().to_vec();
        Ok(self.view_with(layout, "SqueezeBackward", || ShapeBackward::Reshape(input)))
    }

    /// Removes every dimension of size 1.
    pub fn squeeze(&self) -> Result<Tensor> {
        let mut layout = self.layout().clone();
        for d in (0..self.ndim()).rev() {
            if self.shape()[d] == 1 {
                layout = layout.squeeze(d);
            }
        }
        if layout.ndim() == self.ndim() {
            return Ok(self.same_shape_view("SqueezeBackward"));
        }
        let input = self.shape().to_vec();
        Ok(self.view_with(layout, "SqueezeBackward", || ShapeBackward::Reshape(input)))
    }

    /// Removes those of the listed dimensions (sorted, distinct, in range) that have size 1: one
    /// view, one node (`squeeze(dim=(0, 2))`).
    pub(crate) fn squeeze_sorted_dims(&self, dims: &[usize]) -> Tensor {
        let mut layout = self.layout().clone();
        for &d in dims.iter().rev() {
            if d < self.ndim() && self.shape()[d] == 1 {
                layout = layout.squeeze(d);
            }
        }
        if layout.ndim() == self.ndim() {
            return self.same_shape_view("SqueezeBackward");
        }
        let input = self.shape().to_vec();
        self.view_with(layout, "SqueezeBackward", || ShapeBackward::Reshape(input))
    }

    /// A broadcast view to `shape`: size-1 dimensions (and new leading ones) are repeated with
    /// stride 0. For PyTorch's `-1` ("keep this dimension"), see `expand_signed`.
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        if shape == self.shape() {
            return Ok(self.same_shape_view("ExpandBackward"));
        }
        let layout = self.layout().expand(shape)?;
        let input = self.shape().to_vec();
        Ok(self.view_with(layout, "ExpandBackward", || ShapeBackward::Expand(input)))
    }

    /// `expand` with `-1` entries meaning "keep this dimension".
    pub fn expand_signed(&self, shape: &[isize]) -> Result<Tensor> {
        let lead = shape.len().saturating_sub(self.ndim());
        let resolved = shape
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                if d >= 0 {
                    Ok(d as usize)
                } else if d == -1 && i >= lead {
                    Ok(self.shape()[i - lead])
                } else {
                    Err(Error::shape(format!("expand: invalid size {d} at dimension {i}")))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        self.expand(&resolved)
    }

    /// `expand(other.shape)`.
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.expand(other.shape())
    }

    /// Swaps two dimensions (a view).
    pub fn transpose(&self, d0: isize, d1: isize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.same_shape_view("TransposeBackward"));
        }
        let (a, b) = (wrap_dim(d0, self.ndim())?, wrap_dim(d1, self.ndim())?);
        let layout = self.layout().transpose(a, b);
        Ok(self.view_with(layout, "TransposeBackward", || ShapeBackward::Transpose(a, b)))
    }

    /// Transpose of a matrix (0-D and 1-D tensors are returned as they are).
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.same_shape_view("TBackward")),
            2 => self.transpose(0, 1),
            n => Err(Error::shape(format!("t() expects a tensor with <= 2 dimensions, but self is {n}D"))),
        }
    }

    /// Reorders dimensions (a view).
    pub fn permute(&self, dims: &[isize]) -> Result<Tensor> {
        if dims.len() != self.ndim() {
            return Err(Error::shape(format!(
                "permute: number of dims ({}) doesn't match the tensor's ({})",
                dims.len(),
                self.ndim()
            )));
        }
        let perm: Vec<usize> = dims.iter().map(|&d| wrap_dim(d, self.ndim())).collect::<Result<_>>()?;
        let mut inv = vec![usize::MAX; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            if inv[p] != usize::MAX {
                return Err(Error::value("permute: repeated dim"));
            }
            inv[p] = i;
        }
        let l = self.layout();
        let layout = Layout {
            shape: perm.iter().map(|&p| l.shape[p]).collect(),
            strides: perm.iter().map(|&p| l.strides[p]).collect(),
            offset: l.offset,
        };
        Ok(self.view_with(layout, "PermuteBackward", || ShapeBackward::Permute(inv)))
    }

    /// `len` elements from `start` along `dim` (a view).
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Tensor> {
        // `wrap_dim` accepts dim 0 of a 0-dim tensor, which has no size to narrow: refuse it
        // before indexing `shape()`.
        if self.ndim() == 0 {
            return Err(Error::index("narrow() cannot be applied to a 0-dim tensor."));
        }
        let d = wrap_dim(dim, self.ndim())?;
        // Compared without `start + len`, which can overflow for sizes that come from Python.
        if start > self.shape()[d] || len > self.shape()[d] - start {
            return Err(Error::index(format!(
                "narrow: start ({start}) + length ({len}) exceeds dimension size ({})",
                self.shape()[d]
            )));
        }
        let layout = self.layout().slice(d, start, start + len, 1);
        let input = self.shape().to_vec();
        Ok(self.view_with(layout, "NarrowBackward", || ShapeBackward::Narrow { input_shape: input, dim: d, start }))
    }

    /// A contiguous copy of the data with no history (internal: gradients, accumulators).
    pub fn clone_data(&self) -> Result<Tensor> {
        if self.ndim() == 2 && self.numel() >= TILED_COPY_MIN && !self.layout().is_contiguous() {
            return dispatch_all!(self.dtype(), T => Tensor::from_vec(tiled_copy_2d::<T>(self)?, self.shape()));
        }
        dispatch_all!(self.dtype(), T => Tensor::from_vec(self.to_vec::<T>()?, self.shape()))
    }

    /// A copy with its own storage; differentiable.
    pub fn clone_tensor(&self) -> Result<Tensor> {
        let out = self.clone_data()?;
        record("CloneBackward", &[self], &[&out], || (ShapeBackward::Identity, vec![]));
        Ok(out)
    }

    /// The tensor itself when contiguous, else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.layout().is_contiguous() {
            return Ok(self.clone());
        }
        self.clone_tensor()
    }

    /// The tensor in another dtype (itself when already of that dtype).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out =
            dispatch_all!(dtype, T => Tensor::from_array(super::kernel::materialize_as::<T>(self, self.shape())?));
        if dtype.is_float() && self.dtype().is_float() {
            let from = self.dtype();
            record("ToCopyBackward", &[self], &[&out], || (ShapeBackward::ToCopy(from), vec![]));
        }
        Ok(out)
    }

    /// Joins tensors along an existing dimension.
    pub fn cat(tensors: &[Tensor], dim: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::value("cat expects a non-empty list of tensors"))?;
        if let Some(i) = tensors.iter().position(|t| t.ndim() == 0) {
            return Err(Error::shape(format!("zero-dimensional tensor (at position {i}) cannot be concatenated")));
        }
        let d = wrap_dim(dim, first.ndim())?;
        let dtype = tensors.iter().fold(first.dtype(), |acc, t| acc.promote(t.dtype()));
        let mut shape = first.shape().to_vec();
        shape[d] = 0;
        for (i, t) in tensors.iter().enumerate() {
            let same = t.ndim() == first.ndim()
                && t.shape().iter().zip(first.shape()).enumerate().all(|(j, (a, b))| j == d || a == b);
            if !same {
                return Err(Error::shape(format!(
                    "Sizes of tensors must match except in dimension {d}: tensor 0 has shape {} but tensor {i} has shape {}",
                    fmt_shape(first.shape()),
                    fmt_shape(t.shape())
                )));
            }
            shape[d] += t.shape()[d];
        }
        let out = Tensor::zeros(&shape, dtype)?;
        let mut start = 0;
        for t in tensors {
            let len = t.shape()[d];
            let part = out.alias_with_layout(out.layout().slice(d, start, start + len, 1));
            super::kernel::write_into(&part, t)?;
            start += len;
        }
        let out = out.detach();
        let inputs: Vec<Tensor> = tensors.iter().map(|t| t.to_dtype(dtype)).collect::<Result<_>>()?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let sizes: Vec<usize> = tensors.iter().map(|t| t.shape()[d]).collect();
        record("CatBackward", &refs, &[&out], || (ShapeBackward::Cat { dim: d, sizes: sizes.clone() }, vec![]));
        Ok(out)
    }

    /// Joins tensors along a new dimension.
    pub fn stack(tensors: &[Tensor], dim: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::value("stack expects a non-empty list of tensors"))?;
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != first.shape() {
                return Err(Error::shape(format!(
                    "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                    fmt_shape(first.shape()),
                    fmt_shape(t.shape())
                )));
            }
        }
        let d = wrap_dim(dim, first.ndim() + 1)?;
        let parts: Vec<Tensor> = tensors.iter().map(|t| t.unsqueeze(d as isize)).collect::<Result<_>>()?;
        Tensor::cat(&parts, d as isize)
    }
}
