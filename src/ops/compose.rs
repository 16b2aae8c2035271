//! Shape operations composed from the primitive views (`narrow`, `expand`, `reshape`, `permute`,
//! `squeeze`) and `cat`, with PyTorch's names and errors. Their gradients are those of the
//! primitives, so derivatives of every order work without a formula here. The one exception is
//! `diagonal`, a view with a layout of its own and a backward written with differentiable operations.

use crate::autograd::node::{Backward, Node};
use crate::autograd::record::record;
use crate::error::{Error, Result};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::layout::{broadcast_shapes, fmt_shape, wrap_dim, Layout};
use crate::tensor::Tensor;

/// How `meshgrid` orders its outputs' first two dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshIndexing {
    /// Matrix indexing: output dimension `i` runs along input `i`.
    Ij,
    /// Cartesian indexing: the first two dimensions are swapped.
    Xy,
}

fn index_error(msg: String) -> Error {
    Error::index(msg)
}

impl Tensor {
    /// Pieces of the given sizes along `dim`; the sizes must add up to the dimension's size.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: isize) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        if sizes.iter().sum::<usize>() != n {
            return Err(Error::shape(format!(
                "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), \
                 but got split_sizes={sizes:?}"
            )));
        }
        let mut start = 0;
        sizes
            .iter()
            .map(|&len| {
                let piece = self.narrow(d as isize, start, len);
                start += len;
                piece
            })
            .collect()
    }

    /// Pieces of `size` along `dim`, the last one shorter when `size` does not divide the dimension.
    pub fn split(&self, size: usize, dim: isize) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        if size == 0 {
            if n == 0 {
                return Ok(vec![self.narrow(d as isize, 0, 0)?]);
            }
            return Err(Error::shape(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )));
        }
        let count = n.div_ceil(size).max(1);
        let sizes: Vec<usize> = (0..count).map(|i| size.min(n - (i * size).min(n))).collect();
        self.split_with_sizes(&sizes, d as isize)
    }

    /// At most `chunks` pieces of equal size (`ceil(n / chunks)`) along `dim`; there may be fewer.
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(Error::value(format!("chunk expects `chunks` to be greater than 0, got: {chunks}")));
        }
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        self.split(n.div_ceil(chunks), d as isize)
    }

    /// Exactly `sections` pieces along `dim`: the first `n % sections` one element longer.
    pub fn tensor_split_sections(&self, sections: usize, dim: isize) -> Result<Vec<Tensor>> {
        if sections == 0 {
            return Err(Error::value(format!("number of sections must be larger than 0, got {sections}")));
        }
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        let sizes: Vec<usize> = (0..sections).map(|i| n / sections + usize::from(i < n % sections)).collect();
        self.split_with_sizes(&sizes, d as isize)
    }

    /// The pieces `[0:p0]`, `[p0:p1]`, ..., `[pk:]` along `dim`, each as a Python slice: negative
    /// points count from the end, points past the end are clamped, a piece whose end comes before
    /// its start is empty.
    pub fn tensor_split_indices(&self, points: &[isize], dim: isize) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)? as isize;
        let clamp = |p: isize| if p < 0 { (p + n).max(0) } else { p.min(n) } as usize;
        let bounds: Vec<usize> =
            std::iter::once(0).chain(points.iter().map(|&p| clamp(p))).chain(std::iter::once(n as usize)).collect();
        bounds.windows(2).map(|w| self.narrow(d as isize, w[0], w[1].saturating_sub(w[0]))).collect()
    }

    /// The size of dimension `d`, or an error for a 0-d tensor.
    fn dim_size(&self, d: usize) -> Result<usize> {
        self.shape()
            .get(d)
            .copied()
            .ok_or_else(|| index_error(format!("Dimension specified as {d} but tensor has no dimensions")))
    }

    /// The sub-tensor at `index` along `dim` (that dimension removed); a view.
    pub fn select(&self, dim: isize, index: isize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(index_error("select() cannot be applied to a 0-dim tensor.".to_string()));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let n = self.shape()[d] as isize;
        if index < -n || index >= n {
            return Err(index_error(format!(
                "select(): index {index} out of range for tensor of size {} at dimension {d}",
                fmt_shape(self.shape())
            )));
        }
        let i = if index < 0 { index + n } else { index } as usize;
        self.narrow(d as isize, i, 1)?.squeeze_dim(d as isize)
    }

    /// Every sub-tensor along `dim`, that dimension removed.
    pub fn unbind(&self, dim: isize) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        (0..n).map(|i| self.select(d as isize, i as isize)).collect()
    }

    /// The tensor repeated `repeats[i]` times along each dimension (new leading dimensions when
    /// `repeats` is longer than the shape); a copy.
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        if repeats.len() < self.ndim() {
            return Err(Error::shape(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
            ));
        }
        let lead = repeats.len() - self.ndim();
        let padded: Vec<usize> = std::iter::repeat_n(1, lead).chain(self.shape().iter().copied()).collect();
        let x = self.reshape(&as_isize(&padded))?;
        // Each dimension d becomes (repeats[d], size[d]): insert a broadcast dimension before it.
        let mut interleaved = Vec::with_capacity(2 * padded.len());
        let mut expanded = Vec::with_capacity(2 * padded.len());
        for (&r, &s) in repeats.iter().zip(&padded) {
            interleaved.extend([1, s]);
            expanded.extend([r, s]);
        }
        let out: Vec<usize> = repeats.iter().zip(&padded).map(|(&r, &s)| r * s).collect();
        crate::tensor::layout::checked_numel(&out)?;
        x.reshape(&as_isize(&interleaved))?.expand(&expanded)?.contiguous()?.reshape(&as_isize(&out))
    }

    /// NumPy's `tile`: `repeat` with `reps` padded with leading ones to the tensor's dimensions.
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        let lead = self.ndim().saturating_sub(reps.len());
        let full: Vec<usize> = std::iter::repeat_n(1, lead).chain(reps.iter().copied()).collect();
        self.repeat(&full)
    }

    /// Each element repeated `repeats` times along `dim` (of the flattened tensor when `dim` is None).
    pub fn repeat_interleave(&self, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
        let (x, d) = match dim {
            None => (self.reshape(&[-1])?, 0),
            Some(dim) => (self.clone(), wrap_dim(dim, self.ndim().max(1))?),
        };
        if x.ndim() == 0 {
            return x.reshape(&[1])?.repeat_interleave(repeats, Some(0));
        }
        let mut expanded = x.shape().to_vec();
        expanded.insert(d + 1, repeats);
        let mut out = x.shape().to_vec();
        out[d] *= repeats;
        x.unsqueeze(d as isize + 1)?.expand(&expanded)?.contiguous()?.reshape(&as_isize(&out))
    }

    /// Element `i` along `dim` (of the flattened tensor when `dim` is None) repeated `repeats[i]`
    /// times (one count for all when `repeats` has one). `output_size`, when given, must be the
    /// total. Gathered with `index_select`, so the gradient sums the copies back.
    pub fn repeat_interleave_counts(
        &self,
        repeats: &[i64],
        dim: Option<isize>,
        output_size: Option<usize>,
    ) -> Result<Tensor> {
        let (x, d) = match dim {
            None => (self.reshape(&[-1])?, 0),
            Some(dim) => (self.clone(), wrap_dim(dim, self.ndim().max(1))?),
        };
        let x = if x.ndim() == 0 { x.reshape(&[1])? } else { x };
        let n = x.shape()[d];
        if repeats.iter().any(|&r| r < 0) {
            return Err(Error::value("repeats can not be negative"));
        }
        let counts: Vec<i64> = match repeats.len() {
            1 => vec![repeats[0]; n],
            len if len == n => repeats.to_vec(),
            len => {
                return Err(Error::value(format!(
                    "repeats must have the same size as input along dim, but got repeats.size(0) = {len} and \
                     input.size({d}) = {n}"
                )))
            }
        };
        let total = counts.iter().try_fold(0usize, |acc, &r| acc.checked_add(r as usize));
        let total = total.ok_or_else(|| Error::value("repeat_interleave: the total number of repeats overflows"))?;
        if output_size.is_some_and(|o| o != total) {
            return Err(Error::value("allocated size does not match required size"));
        }
        let mut index: Vec<i64> = Vec::new();
        index.try_reserve_exact(total).map_err(|_| {
            Error::OutOfMemory(format!("repeat_interleave: cannot allocate an index of {total} elements"))
        })?;
        for (i, &r) in counts.iter().enumerate() {
            index.extend(std::iter::repeat_n(i as i64, r as usize));
        }
        x.index_select(d as isize, &Tensor::from_vec(index, &[total])?)
    }

    /// Moves the dimensions `source` to the positions `destination`, the others keeping their order.
    pub fn movedim(&self, source: &[isize], destination: &[isize]) -> Result<Tensor> {
        if source.len() != destination.len() {
            return Err(Error::value(format!(
                "movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same \
                 number of dims as destination ({destination:?} dims)"
            )));
        }
        let n = self.ndim();
        let wrap = |dims: &[isize], what: &str| -> Result<Vec<usize>> {
            let w = dims.iter().map(|&d| wrap_dim(d, n.max(1))).collect::<Result<Vec<_>>>()?;
            let mut seen = w.clone();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() != w.len() {
                return Err(Error::value(format!("movedim: repeated dim in `{what}` ({dims:?})")));
            }
            Ok(w)
        };
        let (src, dst) = (wrap(source, "source")?, wrap(destination, "destination")?);
        let mut order: Vec<Option<usize>> = vec![None; n];
        for (&s, &d) in src.iter().zip(&dst) {
            order[d] = Some(s);
        }
        let mut rest = (0..n).filter(|i| !src.contains(i));
        let perm: Vec<isize> = order.into_iter().map(|o| o.or_else(|| rest.next()).unwrap_or(0) as isize).collect();
        self.permute(&perm)
    }

    /// Dimension `dim` split into `sizes` (one entry may be -1).
    pub fn unflatten(&self, dim: isize, sizes: &[isize]) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let n = self.dim_size(d)?;
        if sizes.is_empty() {
            return Err(Error::value("unflatten: sizes must be non-empty"));
        }
        let known: isize = sizes.iter().filter(|&&s| s != -1).product();
        let inferred = sizes.iter().filter(|&&s| s == -1).count();
        let fits = match inferred {
            0 => known == n as isize,
            1 => known != 0 && n as isize % known == 0,
            _ => false,
        };
        if !fits || sizes.iter().any(|&s| s < -1) {
            return Err(Error::shape(format!(
                "unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {d} ({n}) in the input tensor"
            )));
        }
        let mut shape = as_isize(&self.shape()[..d]);
        shape.extend_from_slice(sizes);
        shape.extend(as_isize(&self.shape()[d + 1..]));
        self.view(&shape).or_else(|_| self.reshape(&shape))
    }

    /// Removes the listed dimensions that have size 1 (others are left as they are).
    pub fn squeeze_dims(&self, dims: &[isize]) -> Result<Tensor> {
        let n = self.ndim();
        let mut wrapped = dims.iter().map(|&d| wrap_dim(d, n.max(1))).collect::<Result<Vec<_>>>()?;
        wrapped.sort_unstable();
        wrapped.dedup();
        if wrapped.len() != dims.len() {
            return Err(Error::value(format!("squeeze: dim {dims:?} appears multiple times in the list of dims")));
        }
        // `squeeze(())` is still a new view, as every shape operation that changes nothing.
        Ok(self.squeeze_sorted_dims(&wrapped))
    }

    /// The tensors broadcast to their common shape (views).
    pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut shape: Vec<usize> = Vec::new();
        for t in tensors {
            shape = broadcast_shapes(&shape, t.shape())?;
        }
        tensors.iter().map(|t| t.expand(&shape)).collect()
    }

    /// The tensor with at least `n` dimensions (1, 2 or 3), as NumPy's `atleast_nd`: a vector
    /// becomes a row `(1, n)` and a matrix `(r, c)` becomes `(r, c, 1)`.
    pub fn atleast(&self, n: usize) -> Result<Tensor> {
        let s = as_isize(self.shape());
        match (self.ndim(), n) {
            (k, n) if k >= n => Ok(self.clone()),
            (0, 1) => self.reshape(&[1]),
            (0, 2) => self.reshape(&[1, 1]),
            (0, _) => self.reshape(&[1, 1, 1]),
            (1, 2) => self.reshape(&[1, s[0]]),
            (1, _) => self.reshape(&[1, s[0], 1]),
            _ => self.reshape(&[s[0], s[1], 1]),
        }
    }

    /// Concatenation along the first dimension of tensors made at least 2-d (`vstack`).
    pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors.iter().map(|t| t.atleast(2)).collect::<Result<Vec<_>>>()?;
        Tensor::cat(&ts, 0)
    }

    /// Concatenation along the second dimension, or the first for vectors (`hstack`).
    pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors.iter().map(|t| t.atleast(1)).collect::<Result<Vec<_>>>()?;
        let dim = if ts.first().is_some_and(|t| t.ndim() == 1) { 0 } else { 1 };
        Tensor::cat(&ts, dim)
    }

    /// Concatenation along the third dimension of tensors made at least 3-d (`dstack`).
    pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors.iter().map(|t| t.atleast(3)).collect::<Result<Vec<_>>>()?;
        Tensor::cat(&ts, 2)
    }

    /// Vectors as columns (and matrices as they are), side by side (`column_stack`).
    pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors
            .iter()
            .map(|t| if t.ndim() <= 1 { t.reshape(&[-1, 1]) } else { Ok(t.clone()) })
            .collect::<Result<Vec<_>>>()?;
        Tensor::hstack(&ts)
    }

    /// Coordinate grids of 0-d or 1-d tensors: output `i` varies along dimension `i` (`Ij`), or
    /// with the first two dimensions swapped (`Xy`).
    pub fn meshgrid(tensors: &[Tensor], indexing: MeshIndexing) -> Result<Vec<Tensor>> {
        if let Some(t) = tensors.iter().find(|t| t.ndim() > 1) {
            return Err(Error::value(format!(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}-d tensor",
                t.ndim()
            )));
        }
        let mut sizes: Vec<usize> = tensors.iter().map(|t| t.numel()).collect();
        let swap = indexing == MeshIndexing::Xy && tensors.len() >= 2;
        if swap {
            sizes.swap(0, 1);
        }
        tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let at = if swap && i < 2 { 1 - i } else { i };
                let mut view = vec![1isize; sizes.len()];
                view[at] = -1;
                t.reshape(&view)?.expand(&sizes)
            })
            .collect()
    }

    /// Constant padding: `pads` holds (before, after) pairs starting from the last dimension; a
    /// negative amount cuts instead.
    pub fn pad_constant(&self, pads: &[isize], value: Scalar) -> Result<Tensor> {
        if !pads.len().is_multiple_of(2) {
            return Err(Error::value("Padding length must be divisible by 2"));
        }
        if pads.len() / 2 > self.ndim() {
            return Err(Error::value(format!(
                "Padding length should be less than or equal to two times the input dimension but got padding \
                 length {} and input of dimension {}",
                pads.len(),
                self.ndim()
            )));
        }
        let mut out = self.clone();
        for (k, pair) in pads.chunks(2).enumerate() {
            let d = self.ndim() - 1 - k;
            out = out.pad_one(d, pair[0], pair[1], value)?;
        }
        Ok(out)
    }

    fn pad_one(&self, d: usize, before: isize, after: isize, value: Scalar) -> Result<Tensor> {
        let n = self.shape()[d] as isize;
        let (cut_front, cut_back) = ((-before).max(0), (-after).max(0));
        if cut_front + cut_back > n {
            return Err(Error::value(format!(
                "The input size {n}, plus negative padding {before} and {after} resulted in a negative output size, \
                 which is invalid. Check dimension {d} of your input."
            )));
        }
        let core = self.narrow(d as isize, cut_front as usize, (n - cut_front - cut_back) as usize)?;
        let block = |len: isize| -> Result<Tensor> {
            let mut shape = self.shape().to_vec();
            shape[d] = len as usize;
            Tensor::full(&shape, value, self.dtype())
        };
        let mut parts = Vec::with_capacity(3);
        if before > 0 {
            parts.push(block(before)?);
        }
        parts.push(core);
        if after > 0 {
            parts.push(block(after)?);
        }
        if parts.len() == 1 {
            return Ok(parts.remove(0));
        }
        Tensor::cat(&parts, d as isize)
    }

    /// The lower triangle of the last two dimensions (`j - i <= k`), the rest zero.
    pub fn tril(&self, k: i64) -> Result<Tensor> {
        self.triangle(k, "tril", |i, j, k| j - i <= k)
    }

    /// The upper triangle of the last two dimensions (`j - i >= k`), the rest zero.
    pub fn triu(&self, k: i64) -> Result<Tensor> {
        self.triangle(k, "triu", |i, j, k| j - i >= k)
    }

    fn triangle(&self, k: i64, name: &str, keep: impl Fn(i64, i64, i64) -> bool) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::value(format!("{name}: input tensor must have at least 2 dimensions")));
        }
        let (r, c) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let mask: Vec<bool> = (0..r * c).map(|p| keep((p / c) as i64, (p % c) as i64, k)).collect();
        let mask = Tensor::from_vec(mask, &[r, c])?;
        Tensor::where_(&mask, self, &Tensor::scalar_tensor(Scalar::Int(0), self.dtype())?)
    }

    /// The diagonal of the dimensions `dim1` and `dim2` at `offset` (above the main one when
    /// positive), as a last dimension; a view.
    pub fn diagonal(&self, offset: i64, dim1: isize, dim2: isize) -> Result<Tensor> {
        let n = self.ndim();
        let (d1, d2) = (wrap_dim(dim1, n)?, wrap_dim(dim2, n)?);
        if d1 == d2 {
            return Err(Error::value(format!("diagonal dimensions cannot be identical {dim1}, {dim2}")));
        }
        let (n1, n2) = (self.shape()[d1] as i64, self.shape()[d2] as i64);
        let (row0, col0) = (offset.min(0).unsigned_abs() as i64, offset.max(0));
        let len = (n1 - row0).min(n2 - col0).max(0) as usize;
        let l = self.layout();
        let mut shape = Vec::with_capacity(n - 1);
        let mut strides = Vec::with_capacity(n - 1);
        for d in (0..n).filter(|&d| d != d1 && d != d2) {
            shape.push(l.shape[d]);
            strides.push(l.strides[d]);
        }
        shape.push(len);
        strides.push(l.strides[d1] + l.strides[d2]);
        let start = if len == 0 { 0 } else { row0 as usize * l.strides[d1] + col0 as usize * l.strides[d2] };
        let layout = Layout { shape: shape.into(), strides: strides.into(), offset: l.offset + start };
        let out = self.alias_with_layout(layout);
        let input_shape = self.shape().to_vec();
        record("DiagonalBackward", &[self], &[&out], || {
            (DiagonalBackward { input_shape: input_shape.clone(), offset, d1, d2 }, vec![])
        });
        Ok(out)
    }

    /// The sum of the main diagonal of a matrix.
    pub fn trace(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(Error::value(format!("trace: expected a matrix, but got tensor with dim {}", self.ndim())));
        }
        self.diagonal(0, 0, 1)?.sum(None, false)
    }

    /// `diag`: the diagonal at `offset` of a matrix, or a matrix with a vector on that diagonal.
    pub fn diag(&self, offset: i64) -> Result<Tensor> {
        match self.ndim() {
            2 => self.diagonal(offset, 0, 1),
            1 => self.diag_embed_vector(offset),
            n => Err(Error::value(format!("diag(): Supports 1D or 2D tensors. Got {n}D"))),
        }
    }

    /// A square matrix with `self` (a vector) on the diagonal at `offset`: the padded vector times
    /// the diagonal's mask, so that its gradient is a differentiable product too.
    fn diag_embed_vector(&self, offset: i64) -> Result<Tensor> {
        let len = self.shape()[0];
        let side = len + offset.unsigned_abs() as usize;
        let mask = diagonal_mask(side, side, offset, self.dtype())?;
        let padded = self.pad_constant(&[0, (side - len) as isize], Scalar::Int(0))?;
        if offset >= 0 {
            padded.unsqueeze(-1)?.mul(&mask)
        } else {
            padded.unsqueeze(0)?.mul(&mask)
        }
    }
}

/// An `r × c` matrix of ones on the diagonal at `offset`, zeros elsewhere.
fn diagonal_mask(r: usize, c: usize, offset: i64, dtype: DType) -> Result<Tensor> {
    let data: Vec<f64> = (0..r * c).map(|p| f64::from((p % c) as i64 - (p / c) as i64 == offset)).collect();
    Tensor::from_vec(data, &[r, c])?.to_dtype(dtype)
}

/// The gradient of a diagonal: its values placed back on the diagonal of zeros, as `padded × mask`
/// (differentiable, so the second derivative works) and moved back to `d1`, `d2`.
struct DiagonalBackward {
    input_shape: Vec<usize>,
    offset: i64,
    d1: usize,
    d2: usize,
}

impl Backward for DiagonalBackward {
    fn apply(&self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let (n1, n2) = (self.input_shape[self.d1], self.input_shape[self.d2]);
        let len = g.shape()[g.ndim() - 1];
        let mask = diagonal_mask(n1, n2, self.offset, g.dtype())?;
        // Element k of the diagonal sits at row k (offset >= 0) or at column k (offset < 0): pad
        // the values to that dimension's length and spread them along the other with the mask.
        let along = if self.offset >= 0 { n1 } else { n2 };
        let padded = g.pad_constant(&[0, (along - len) as isize], Scalar::Int(0))?;
        let placed =
            if self.offset >= 0 { padded.unsqueeze(-1)?.mul(&mask)? } else { padded.unsqueeze(-2)?.mul(&mask)? };
        // `placed` has the other dimensions first, then (d1, d2): move those back into place.
        let last = placed.ndim() as isize;
        Ok(vec![Some(placed.movedim(&[last - 2, last - 1], &[self.d1 as isize, self.d2 as isize])?)])
    }
}

fn as_isize(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&d| d as isize).collect()
}
