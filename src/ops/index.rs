//! Indexing: ints, slices, `None` and `...` give views (as in NumPy); a boolean mask gives a copy.
//! Item assignment goes through the in-place machinery (`ops/inplace.rs`).

use crate::autograd::node::{Backward, Node};
use crate::autograd::record::{record, Save};
use crate::dispatch_all;
use crate::error::{Error, Result};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::layout::{fmt_shape, Layout};
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

    /// A scalar as a 0-d tensor of `dtype`.
    pub fn scalar_tensor(s: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full(&[], s, dtype)
    }
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
