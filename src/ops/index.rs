//! Indexing: ints, slices, `None` and `...` give views (as in NumPy); a boolean mask or integer
//! tensors (advanced indexing, read only) give a copy. Item assignment goes through the in-place
//! machinery (`ops/inplace.rs`). Also `index_select`, `index_add`, `scatter_add` and `one_hot`.

use crate::autograd::node::{Backward, Node};
use crate::autograd::record::{record, Save};
use crate::dispatch_all;
use crate::error::{Error, Result};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::layout::{fmt_shape, wrap_dim, Layout};
use crate::tensor::Tensor;

/// One entry of an index expression.
#[derive(Clone, Debug)]
pub enum IndexItem {
    /// `t[3]`, `t[-1]`
    Int(isize),
    /// `t[a:b:c]`
    Slice {
        /// start
        start: Option<isize>,
        /// stop
        stop: Option<isize>,
        /// step (positive)
        step: isize,
    },
    /// `t[None]`
    NewAxis,
    /// `t[...]`
    Ellipsis,
    /// `t[mask]` with a bool tensor
    Mask(Tensor),
    /// `t[idx]` with an int64 tensor (NumPy's integer-array indexing; reading only)
    Tensor(Tensor),
}

/// Clamps a Python slice bound into `0..=len`.
fn clamp_bound(b: Option<isize>, len: usize, default: usize) -> usize {
    match b {
        None => default,
        Some(v) if v < 0 => (v + len as isize).max(0) as usize,
        Some(v) => (v as usize).min(len),
    }
}

/// The layout after applying basic index items (no masks).
fn basic_layout(t: &Tensor, items: &[IndexItem]) -> Result<Layout> {
    let consumed = items.iter().filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. })).count();
    if items.iter().any(|i| matches!(i, IndexItem::Mask(_))) && items.len() > 1 {
        return Err(Error::index("a boolean mask cannot be combined with other indices"));
    }
    if items.iter().filter(|i| matches!(i, IndexItem::Ellipsis)).count() > 1 {
        return Err(Error::index("an index can only have a single ellipsis ('...')"));
    }
    if consumed > t.ndim() {
        return Err(Error::index(format!("too many indices for tensor of dimension {} (got {consumed})", t.ndim())));
    }
    let mut layout = t.layout().clone();
    let mut dim = 0usize;
    // The dimension of `t` that the next int or slice consumes, for messages: `dim` counts the
    // dimensions of the result so far, so after an int it no longer names the user's dimension
    // (`t[0, 7]` on a [2, 3] tensor said "dimension 0").
    let mut src_dim = 0usize;
    for item in items {
        match item {
            IndexItem::Int(i) => {
                let len = layout.shape[dim];
                let idx = if *i < 0 { *i + len as isize } else { *i };
                if idx < 0 || idx as usize >= len {
                    return Err(Error::index(format!(
                        "index {i} is out of bounds for dimension {src_dim} with size {len}"
                    )));
                }
                layout = layout.select(dim, idx as usize);
                src_dim += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                if *step <= 0 {
                    return Err(Error::SliceStep { step: *step });
                }
                let len = layout.shape[dim];
                let s = clamp_bound(*start, len, 0);
                let e = clamp_bound(*stop, len, len);
                layout = layout.slice(dim, s, e.max(s), *step as usize);
                dim += 1;
                src_dim += 1;
            }
            IndexItem::NewAxis => {
                layout = layout.unsqueeze(dim);
                dim += 1;
            }
            IndexItem::Ellipsis => {
                // Skip the dimensions that the items after the ellipsis do not consume.
                let after = items
                    .iter()
                    .skip_while(|i| !matches!(i, IndexItem::Ellipsis))
                    .skip(1)
                    .filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. }))
                    .count();
                dim = layout.ndim() - after;
                src_dim = t.ndim() - after;
            }
            IndexItem::Mask(_) => return Err(Error::index("a boolean mask cannot be combined with other indices")),
            IndexItem::Tensor(_) => {
                return Err(Error::index(
                    "assignment through integer-tensor indices is not supported; use index_add or a bool mask",
                ))
            }
        }
    }
    Ok(layout)
}

/// Backward of a basic-index view: the gradient written into zeros at the viewed positions.
struct IndexBackward {
    input_shape: Vec<usize>,
    items: Vec<IndexItem>,
}

impl Backward for IndexBackward {
    fn apply(&self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        Ok(vec![Some(Tensor::index_scatter_zeros(&self.input_shape, &self.items, &g)?)])
    }
}

/// Backward of `index_scatter_zeros`: the same view of the gradient.
struct IndexScatterBackward {
    items: Vec<IndexItem>,
}

impl Backward for IndexScatterBackward {
    fn apply(&self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        Ok(vec![Some(g.index(&self.items)?)])
    }
}

/// Backward of a mask read: the gradient scattered back at the selected positions.
struct MaskedSelectBackward {
    input_shape: Vec<usize>,
}

impl Backward for MaskedSelectBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let mask = &node.unpack_saved()?[0];
        let zeros = Tensor::zeros(&self.input_shape, g.dtype())?;
        Ok(vec![Some(zeros.masked_scatter(mask, &g)?)])
    }
}

/// Backward of `masked_scatter`: zeros where values were written (for the destination), and the
/// gradient read back at the mask (for the values).
struct MaskedScatterBackward {
    value_shape: Vec<usize>,
}

impl Backward for MaskedScatterBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None, None]);
        };
        let mask = &node.unpack_saved()?[0];
        let need = |i: usize| node.next_edges()[i].is_some();
        let gd = if need(0) { Some(g.where_scalar_other(&mask.logical_not()?, 0.0)?) } else { None };
        let gv = if need(1) {
            let sel = g.index(&[IndexItem::Mask(mask.clone())])?;
            let n = self.value_shape.iter().product::<usize>();
            let flat = sel.reshape(&[-1])?;
            let take = flat.narrow(0, 0, n.min(flat.numel()))?;
            let padded = if take.numel() < n {
                Tensor::cat(&[take.clone(), Tensor::zeros(&[n - take.numel()], g.dtype())?], 0)?
            } else {
                take
            };
            Some(padded.reshape(&self.value_shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?)
        } else {
            None
        };
        Ok(vec![gd, gv])
    }
}

impl Tensor {
    /// `t[items]`: a view for ints, slices, `None` and `...`; a copy for a boolean mask.
    pub fn index(&self, items: &[IndexItem]) -> Result<Tensor> {
        if let [IndexItem::Mask(mask)] = items {
            return self.masked_select(mask);
        }
        let has_mask = items.iter().any(|i| matches!(i, IndexItem::Mask(_)));
        if items.iter().any(|i| matches!(i, IndexItem::Tensor(_))) || (has_mask && items.len() > 1) {
            return self.index_advanced(&masks_as_coordinates(self.shape(), items)?);
        }
        let layout = basic_layout(self, items)?;
        let out = self.alias_with_layout(layout);
        record("IndexBackward", &[self], &[&out], || {
            (IndexBackward { input_shape: self.shape().to_vec(), items: items.to_vec() }, vec![])
        });
        Ok(out)
    }

    /// The view `t[items]` of a fresh zero tensor of `shape` filled with `src` (index's adjoint).
    pub fn index_scatter_zeros(shape: &[usize], items: &[IndexItem], src: &Tensor) -> Result<Tensor> {
        let out = Tensor::zeros(shape, src.dtype())?;
        let view = out.alias_with_layout(basic_layout(&out, items)?);
        super::kernel::write_into(&view, src)?;
        let out = out.detach();
        record("IndexScatterBackward", &[src], &[&out], || (IndexScatterBackward { items: items.to_vec() }, vec![]));
        Ok(out)
    }

    /// Checks that `mask` is a bool tensor matching the leading dimensions of `self`.
    fn check_mask(&self, mask: &Tensor) -> Result<()> {
        if mask.dtype() != DType::Bool {
            return Err(Error::index(format!("tensors used as indices must be bool masks here, got {}", mask.dtype())));
        }
        if mask.ndim() > self.ndim() || mask.shape() != &self.shape()[..mask.ndim()] {
            return Err(Error::index(format!(
                "The shape of the mask {} does not match the shape of the indexed tensor {}",
                fmt_shape(mask.shape()),
                fmt_shape(self.shape())
            )));
        }
        Ok(())
    }

    /// The mask expanded over trailing dimensions to the full shape.
    fn full_mask(&self, mask: &Tensor) -> Result<Tensor> {
        let mut m = mask.detach();
        while m.ndim() < self.ndim() {
            m = m.unsqueeze(-1)?;
        }
        m.expand(self.shape())
    }

    /// `t[mask]`: the selected elements (rows, for a mask over leading dimensions), as a copy.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        self.check_mask(mask)?;
        let full = self.full_mask(mask)?;
        let m = full.to_vec::<bool>()?;
        let count = mask.to_vec::<bool>()?.iter().filter(|&&b| b).count();
        let mut shape = vec![count];
        shape.extend_from_slice(&self.shape()[mask.ndim()..]);
        let out = dispatch_all!(self.dtype(), T => {
            let v = self.to_vec::<T>()?;
            let sel: Vec<T> = v.into_iter().zip(&m).filter(|(_, &k)| k).map(|(x, _)| x).collect();
            Tensor::from_vec(sel, &shape)?
        });
        record("MaskedSelectBackward", &[self], &[&out], || {
            (MaskedSelectBackward { input_shape: self.shape().to_vec() }, vec![Save::Input(mask.clone())])
        });
        Ok(out)
    }

    /// A copy of `self` where `mask` is true replaced by `value`'s elements, in order.
    pub fn masked_scatter(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        self.check_mask(mask)?;
        let full = self.full_mask(mask)?;
        let m = full.to_vec::<bool>()?;
        let count = m.iter().filter(|&&b| b).count();
        let vals = value.to_dtype(self.dtype())?;
        if vals.numel() < count {
            return Err(Error::shape(format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of {count} elements",
                fmt_shape(value.shape())
            )));
        }
        let out = dispatch_all!(self.dtype(), T => {
            let mut v = self.to_vec::<T>()?;
            let src = vals.to_vec::<T>()?;
            let mut k = 0;
            for (x, &sel) in v.iter_mut().zip(&m) {
                if sel {
                    *x = src[k];
                    k += 1;
                }
            }
            Tensor::from_vec(v, self.shape())?
        });
        record("MaskedScatterBackward", &[self, &vals], &[&out], || {
            (MaskedScatterBackward { value_shape: vals.shape().to_vec() }, vec![Save::Input(full.clone())])
        });
        Ok(out)
    }

    /// The out-of-place value of `t[items] = value`. As in PyTorch and NumPy, leading size-1
    /// dimensions of `value` beyond the indexed region's rank are dropped before broadcasting.
    pub(crate) fn index_put_value(&self, items: &[IndexItem], value: &Tensor) -> Result<Tensor> {
        let has_mask = items.iter().any(|i| matches!(i, IndexItem::Mask(_)));
        if items.iter().any(|i| matches!(i, IndexItem::Tensor(_))) || (has_mask && items.len() > 1) {
            return self.index_put_positions(items, value, false);
        }
        if let [IndexItem::Mask(mask)] = items {
            self.check_mask(mask)?;
            if value.numel() == 1 {
                let full = self.full_mask(mask)?;
                let v = value.reshape(&[])?.to_dtype(self.dtype())?;
                return Tensor::where_(&full, &v, self);
            }
            // Values for the selected rows: broadcast to the selection's shape, then scattered.
            let count = mask.to_vec::<bool>()?.iter().filter(|&&b| b).count();
            let mut sel_shape = vec![count];
            sel_shape.extend_from_slice(&self.shape()[mask.ndim()..]);
            let v = drop_leading_unit_dims(value, sel_shape.len())?.expand(&sel_shape)?.contiguous()?;
            return self.masked_scatter(mask, &v);
        }
        // Basic indices: replace the viewed region.
        let layout = basic_layout(self, items)?;
        let v = drop_leading_unit_dims(&value.to_dtype(self.dtype())?, layout.shape.len())?.expand(&layout.shape)?;
        let region = Tensor::index_scatter_zeros(self.shape(), items, &v)?;
        let ones = Tensor::index_scatter_zeros(self.shape(), items, &Tensor::ones(&layout.shape, DType::Bool)?)?;
        Tensor::where_(&ones, &region, self)
    }

    /// The out-of-place value of `t[items] = value` (`accumulate`: `t[items] += value`, repeated
    /// positions adding up) for any index, integer tensors included. The positions written are
    /// read by indexing a tensor of flat positions with `items`; the write is then a `where` over
    /// the flattened tensor (or an `index_add`), so it is differentiable with respect to both
    /// `self` and `value`. Without `accumulate`, a repeated position takes its last value.
    pub fn index_put_positions(&self, items: &[IndexItem], value: &Tensor, accumulate: bool) -> Result<Tensor> {
        let n = self.numel();
        let shape: Vec<isize> = self.shape().iter().map(|&d| d as isize).collect();
        let pos = Tensor::arange(0.0, n as f64, 1.0, DType::Int64)?.reshape(&shape)?.index(items)?;
        let v = value.to_dtype(self.dtype())?;
        let v = drop_leading_unit_dims(&v, pos.ndim())?;
        if !crate::tensor::layout::is_broadcastable_to(v.shape(), pos.shape()) {
            return Err(Error::shape(format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
                fmt_shape(value.shape()),
                fmt_shape(pos.shape())
            )));
        }
        // the write itself is `put_at`'s (scatter.rs), over the flat positions read above
        self.put_at(&pos, &v.expand(pos.shape())?, accumulate)
    }

    /// `t[items]` where some items are int64 tensors: the tensors are broadcast together and select
    /// elements along their dimensions (NumPy's rule: the selected dimensions replace the indexed
    /// ones where they are adjacent, and go first otherwise). Built on `index_select`, so it is
    /// differentiable to any order.
    fn index_advanced(&self, items: &[IndexItem]) -> Result<Tensor> {
        if items.iter().any(|i| matches!(i, IndexItem::Mask(_))) {
            return Err(Error::index("a boolean mask cannot be combined with integer-tensor indices"));
        }
        let consumed = items
            .iter()
            .filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. } | IndexItem::Tensor(_)))
            .count();
        if consumed > self.ndim() {
            return Err(Error::index(format!(
                "too many indices for tensor of dimension {} (got {consumed})",
                self.ndim()
            )));
        }
        // The basic part, with each tensor replaced by a full slice; where each tensor's dimension
        // lands in that view.
        let mut basic = Vec::with_capacity(items.len());
        let mut adv: Vec<(usize, Tensor)> = Vec::new();
        let mut dim = 0usize;
        for it in items {
            match it {
                IndexItem::Tensor(t) => {
                    if t.dtype() != DType::Int64 {
                        return Err(Error::index(format!(
                            "tensors used as indices must be int64 or bool tensors, got {}",
                            t.dtype()
                        )));
                    }
                    adv.push((dim, t.detach()));
                    basic.push(IndexItem::Slice { start: None, stop: None, step: 1 });
                    dim += 1;
                }
                IndexItem::Int(_) => basic.push(it.clone()),
                IndexItem::Slice { .. } | IndexItem::NewAxis => {
                    basic.push(it.clone());
                    dim += 1;
                }
                IndexItem::Ellipsis => {
                    basic.push(it.clone());
                    dim += self.ndim() - consumed;
                }
                IndexItem::Mask(_) => unreachable!("refused above"),
            }
        }
        let v = self.index(&basic)?;
        let mut bshape: Vec<usize> = vec![];
        for (_, t) in &adv {
            bshape = crate::tensor::layout::broadcast_shapes(&bshape, t.shape())?;
        }
        let n: usize = bshape.iter().product();
        let adv_dims: Vec<usize> = adv.iter().map(|(d, _)| *d).collect();
        let adv_sizes: Vec<usize> = adv_dims.iter().map(|&d| v.shape()[d]).collect();
        // Row-major linear index into the indexed dimensions, bounds checked (negative counts from
        // the end, as in PyTorch).
        let mut lin = vec![0i64; n];
        let mut stride = 1i64;
        for (k, (d, t)) in adv.iter().enumerate().rev() {
            let size = adv_sizes[k] as i64;
            let vals = t.expand(&bshape)?.to_vec::<i64>()?;
            for (l, &i) in lin.iter_mut().zip(&vals) {
                let j = if i < 0 { i + size } else { i };
                if j < 0 || j >= size {
                    return Err(Error::index(format!("index {i} is out of bounds for dimension {d} with size {size}")));
                }
                *l += j * stride;
            }
            stride *= size.max(1);
        }
        let rest: Vec<usize> = (0..v.ndim()).filter(|d| !adv_dims.contains(d)).collect();
        let perm: Vec<isize> = adv_dims.iter().chain(&rest).map(|&d| d as isize).collect();
        let mut flat_shape: Vec<isize> = vec![adv_sizes.iter().product::<usize>() as isize];
        flat_shape.extend(rest.iter().map(|&d| v.shape()[d] as isize));
        let flat = v.permute(&perm)?.reshape(&flat_shape)?;
        let sel = flat.index_select(0, &Tensor::from_vec(lin, &[n])?)?;
        let mut out_shape: Vec<isize> = bshape.iter().map(|&d| d as isize).collect();
        out_shape.extend(rest.iter().map(|&d| v.shape()[d] as isize));
        let out = sel.reshape(&out_shape)?;
        let adjacent = adv_dims.windows(2).all(|w| w[1] == w[0] + 1);
        let first = adv_dims[0];
        if !adjacent || first == 0 {
            return Ok(out);
        }
        // Move the broadcast dimensions back to where the indexed ones were.
        let (k, m) = (bshape.len(), rest.len());
        let perm: Vec<isize> = (k..k + first).chain(0..k).chain(k + first..k + m).map(|d| d as isize).collect();
        out.permute(&perm)
    }

    /// The slices of `self` at `index` (a 1-d or 0-d int64 tensor) along `dim`.
    pub fn index_select(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        if index.dtype() == DType::Int32 {
            // PyTorch takes int32 indices here too.
            return self.index_select(dim, &index.detach().to_dtype(DType::Int64)?);
        }
        if index.dtype() != DType::Int64 {
            return Err(Error::dtype(format!(
                "index_select(): Expected dtype int32 or int64 for index, got {}",
                index.dtype()
            )));
        }
        if index.ndim() > 1 {
            return Err(Error::index("index_select(): Index is supposed to be a vector"));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if self.ndim() == 0 {
            let r = self.reshape(&[1])?.index_select(0, index)?;
            return if index.ndim() == 0 { r.reshape(&[]) } else { Ok(r) };
        }
        let size = self.shape()[d];
        let idx = index.detach().reshape(&[-1])?;
        for &i in &idx.to_vec::<i64>()? {
            if i < 0 || i as usize >= size {
                return Err(Error::index(format!(
                    "index_select(): index {i} is out of range for dimension {d} with size {size}"
                )));
            }
        }
        let mut out_shape = self.shape().to_vec();
        out_shape[d] = idx.numel();
        let mut view = vec![1isize; self.ndim()];
        view[d] = idx.numel() as isize;
        let full = idx.reshape(&view)?.expand(&out_shape)?;
        self.gather(d as isize, &full)
    }

    /// `self` with `alpha * source` added at the slices `index` along `dim` (repeated indices
    /// accumulate).
    pub fn index_add(&self, dim: isize, index: &Tensor, source: &Tensor, alpha: f64) -> Result<Tensor> {
        if index.dtype() != DType::Int64 || index.ndim() > 1 {
            return Err(Error::index("index_add(): index must be a 1-d int64 tensor"));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let (x, src) = if self.ndim() == 0 {
            (self.reshape(&[1])?, source.reshape(&[-1])?)
        } else {
            (self.clone(), source.clone())
        };
        let idx = index.detach().reshape(&[-1])?;
        let mut want = x.shape().to_vec();
        want[d] = idx.numel();
        if src.shape() != want.as_slice() {
            return Err(Error::shape(format!(
                "index_add(): source of shape {} does not fit: expected {} (self's shape with dim {d} of the index's length)",
                fmt_shape(source.shape()),
                fmt_shape(&want)
            )));
        }
        if src.dtype() != x.dtype() {
            return Err(Error::dtype(format!(
                "index_add(): self ({}) and source ({}) must have the same dtype",
                x.dtype(),
                src.dtype()
            )));
        }
        let size = x.shape()[d];
        for &i in &idx.to_vec::<i64>()? {
            if i < 0 || i as usize >= size {
                return Err(Error::index(format!(
                    "index_add(): index {i} is out of range for dimension {d} with size {size}"
                )));
            }
        }
        let mut view = vec![1isize; x.ndim()];
        view[d] = idx.numel() as isize;
        let full = idx.reshape(&view)?.expand(&want)?;
        let src = if alpha == 1.0 { src } else { src.mul_scalar(alpha)? };
        let out = x.add(&Tensor::scatter_add_zeros(x.shape(), d, &full, &src)?)?;
        if self.ndim() == 0 {
            out.reshape(&[])
        } else {
            Ok(out)
        }
    }

    /// `self` with `src[pos]` added at `self[pos with dim replaced by index[pos]]` for every
    /// position of `index` (as PyTorch's `scatter_add`).
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if index.dtype() != DType::Int64 {
            return Err(Error::dtype(format!("scatter_add(): Expected dtype int64 for index, got {}", index.dtype())));
        }
        if src.dtype() != self.dtype() {
            return Err(Error::dtype(format!(
                "scatter_add(): Expected self.dtype to be equal to src.dtype ({} and {})",
                self.dtype(),
                src.dtype()
            )));
        }
        if self.ndim() == 0 || index.ndim() != self.ndim() || src.ndim() != self.ndim() {
            return Err(Error::index(
                "scatter_add(): index, self and src must have the same number of dimensions (at least 1)",
            ));
        }
        for k in 0..self.ndim() {
            if index.shape()[k] > src.shape()[k] || (k != d && index.shape()[k] > self.shape()[k]) {
                return Err(Error::shape(format!(
                    "scatter_add(): Expected index {} to be smaller than self {} apart from dimension {d} and to be smaller size than src {}",
                    fmt_shape(index.shape()),
                    fmt_shape(self.shape()),
                    fmt_shape(src.shape())
                )));
            }
        }
        let size = self.shape()[d];
        for &i in &index.to_vec::<i64>()? {
            if i < 0 || i as usize >= size {
                return Err(Error::index(format!(
                    "scatter_add(): index {i} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        // The part of src that index covers (scatter_add_zeros reads src at index's positions).
        let mut s = src.clone();
        for k in 0..self.ndim() {
            if s.shape()[k] != index.shape()[k] {
                s = s.narrow(k as isize, 0, index.shape()[k])?;
            }
        }
        let idx = index.detach();
        self.add(&Tensor::scatter_add_zeros(self.shape(), d, &idx, &s)?)
    }

    /// One-hot encoding of an int64 tensor: shape `self.shape + [num_classes]`, int64; with
    /// `num_classes` None, one more than the largest value.
    pub fn one_hot(&self, num_classes: Option<usize>) -> Result<Tensor> {
        if self.dtype() != DType::Int64 {
            return Err(Error::dtype("one_hot is only applicable to index tensor of dtype int64."));
        }
        let v = self.to_vec::<i64>()?;
        if v.iter().any(|&x| x < 0) {
            return Err(Error::value("one_hot(): Class values must be non-negative."));
        }
        let c = match num_classes {
            Some(c) => {
                if v.iter().any(|&x| x as usize >= c) {
                    return Err(Error::value("one_hot(): Class values must be smaller than num_classes."));
                }
                c
            }
            None => match v.iter().max() {
                Some(&m) => m as usize + 1,
                None => {
                    return Err(Error::value("one_hot(): Can not infer total number of classes from empty tensor."))
                }
            },
        };
        let mut shape = self.shape().to_vec();
        shape.push(c);
        crate::tensor::create::check_alloc(&shape, DType::Int64)?;
        let mut out = vec![0i64; v.len() * c];
        for (k, &x) in v.iter().enumerate() {
            out[k * c + x as usize] = 1;
        }
        Tensor::from_vec(out, &shape)
    }

    /// A scalar as a 0-d tensor of `dtype`.
    pub fn scalar_tensor(s: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full(&[], s, dtype)
    }
}

/// A bool mask beside other indices stands for the coordinates of its true elements, one int64
/// tensor per mask dimension (NumPy's rule, which PyTorch follows). A 0-d mask there is refused.
fn masks_as_coordinates(shape_in: &[usize], items: &[IndexItem]) -> Result<Vec<IndexItem>> {
    let width = |it: &IndexItem| match it {
        IndexItem::Int(_) | IndexItem::Slice { .. } | IndexItem::Tensor(_) => 1,
        IndexItem::Mask(m) => m.ndim(),
        IndexItem::NewAxis | IndexItem::Ellipsis => 0,
    };
    let consumed: usize = items.iter().map(width).sum();
    let mut out = Vec::with_capacity(items.len());
    // The dimension of the indexed tensor the next item starts at.
    let mut src = 0usize;
    for it in items {
        if matches!(it, IndexItem::Ellipsis) {
            src += shape_in.len().saturating_sub(consumed);
        }
        let IndexItem::Mask(m) = it else {
            src += width(it);
            out.push(it.clone());
            continue;
        };
        let k = m.ndim();
        if src + k > shape_in.len() || m.shape() != &shape_in[src..src + k] {
            return Err(Error::index(format!(
                "The shape of the mask {} at index {src} does not match the shape of the indexed tensor {}",
                fmt_shape(m.shape()),
                fmt_shape(shape_in)
            )));
        }
        src += k;
        if m.dtype() != DType::Bool {
            return Err(Error::index(format!(
                "tensors used as indices must be int64 or bool tensors, got {}",
                m.dtype()
            )));
        }
        if m.ndim() == 0 {
            return Err(Error::index("a 0-d boolean index (True/False) cannot be combined with other indices"));
        }
        let shape = m.shape().to_vec();
        let flags = m.to_vec::<bool>()?;
        let mut coords: Vec<Vec<i64>> = vec![Vec::new(); shape.len()];
        for (flat, &on) in flags.iter().enumerate() {
            if !on {
                continue;
            }
            let mut rest = flat;
            for d in (0..shape.len()).rev() {
                coords[d].push((rest % shape[d]) as i64);
                rest /= shape[d];
            }
        }
        for c in coords {
            let n = c.len();
            out.push(IndexItem::Tensor(Tensor::from_vec(c, &[n])?));
        }
    }
    Ok(out)
}

/// `value` without the leading size-1 dimensions that make it longer than `ndim`.
fn drop_leading_unit_dims(value: &Tensor, ndim: usize) -> Result<Tensor> {
    let extra = value.shape().iter().take(value.ndim().saturating_sub(ndim)).take_while(|&&d| d == 1).count();
    if extra == 0 {
        return Ok(value.clone());
    }
    let shape: Vec<isize> = value.shape()[extra..].iter().map(|&d| d as isize).collect();
    value.reshape(&shape)
}
