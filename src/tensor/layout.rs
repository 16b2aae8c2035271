//! Layout: how a tensor's elements sit in its storage (shape, strides in elements, offset).
//! Views are new layouts over the same storage; nothing here touches data.

use crate::error::{Error, Result};

/// Extents or strides, one per dimension: kept inline up to 4 dimensions, so that making a tensor
/// allocates nothing for its layout (NOTE [Per-operation overhead] in `autograd/record.rs`). It
/// reads as a slice; `Dims::from_vec(v)` or `v.into()` makes one from a `Vec`.
pub type Dims = smallvec::SmallVec<[usize; 4]>;

/// Shape, strides (in elements, never negative) and offset into the storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Extent of each dimension.
    pub shape: Dims,
    /// Step in elements between neighbours along each dimension (0 for broadcast dimensions).
    pub strides: Dims,
    /// Index of the first element in the storage.
    pub offset: usize,
}

/// Row-major strides of a shape. Saturating: only a shape `checked_numel` refuses can exceed the
/// range, and no layout is built over such a shape.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1usize;
    for (s, &d) in strides.as_mut_slice().iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1));
    }
    strides
}

/// The largest element count a tensor may have: PyTorch counts elements in int64, and ndarray
/// needs the product of the non-zero extents to fit in `isize`.
pub const MAX_NUMEL: usize = i64::MAX as usize;

// NOTE [Element counts]: a product of extents wraps silently in release builds, and a count that
// wraps to 0 makes a huge view look empty, which skips the bounds checks that guard unsafe reads
// (`expand(2**32, 2**32)` has 2**64 elements). Every place that makes a new shape (expand, reshape,
// broadcasting, factories) therefore calls `checked_numel`, which refuses a shape whose non-zero
// extents multiply past `MAX_NUMEL` (as PyTorch does). Given that, `numel` of an existing layout
// cannot overflow; it saturates all the same, so a count can never wrap to 0.

/// The element count of a new shape, or an error naming it when its non-zero extents multiply past
/// `MAX_NUMEL`. See NOTE [Element counts].
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= MAX_NUMEL)
        .ok_or_else(|| {
            Error::shape(format!(
                "numel: integer multiplication overflow: a tensor of shape {} would have more than {MAX_NUMEL} elements",
                fmt_shape(shape)
            ))
        })?;
    Ok(if shape.contains(&0) { 0 } else { nonzero })
}

/// Number of elements of an existing shape (saturating; see NOTE [Element counts]).
pub fn numel(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
}

/// Formats a shape the way messages show it: `[3, 4]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}

/// Wraps a possibly negative dimension index into `0..ndim`.
pub fn wrap_dim(dim: isize, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as isize;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(d as usize)
}

/// The NumPy broadcast of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton \
                 dimension {i}: shapes {} and {} cannot be broadcast together",
                fmt_shape(a),
                fmt_shape(b)
            )));
        };
    }
    checked_numel(&out)?;
    Ok(out)
}

/// True when `from` can be broadcast to `to` (so a gradient of shape `to` sums down to `from`).
pub fn is_broadcastable_to(from: &[usize], to: &[usize]) -> bool {
    if from.len() > to.len() {
        return false;
    }
    let lead = to.len() - from.len();
    from.iter().enumerate().all(|(i, &d)| d == 1 || d == to[lead + i])
}

/// See `Layout::overlap_with`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Disjoint memory (or not judged).
    No,
    /// The same elements in the same order.
    Full,
    /// Shared memory in another arrangement.
    Partial,
}

impl Layout {
    /// A fresh row-major layout.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout { shape: Dims::from_slice(shape), strides: contiguous_strides(shape), offset: 0 }
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Row-major and gap-free (size-1 dimensions may have any stride).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        // Over plain slices, one pass: asked several times per operation (W2's kernels), where
        // `SmallVec` indexing checked inline-or-heap at every step.
        let (shape, strides) = (self.shape.as_slice(), self.strides.as_slice());
        let mut expected = 1usize;
        let mut gap_free = true;
        for (&d, &s) in shape.iter().zip(strides).rev() {
            if d != 1 {
                gap_free &= s == expected;
                expected = expected.wrapping_mul(d);
            }
        }
        // An empty tensor has nothing to lay out (PyTorch says the same).
        gap_free || shape.contains(&0)
    }

    /// The largest storage index touched, plus one (0 for an empty tensor). Saturating: a layout
    /// whose reach does not fit in `usize` reaches past every storage, and callers refuse it.
    pub fn storage_extent(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.shape
            .iter()
            .zip(&self.strides)
            .fold(self.offset, |acc, (&d, &s)| acc.saturating_add((d - 1).saturating_mul(s)))
            .saturating_add(1)
    }

    /// True when two distinct indices reach the same element (a broadcast view); writing in place
    /// through such a layout is refused.
    pub fn has_internal_overlap(&self) -> bool {
        self.shape.iter().zip(&self.strides).any(|(&d, &s)| d > 1 && s == 0)
    }

    /// True when the elements fill `offset..storage_extent()` exactly once, in some order of the
    /// dimensions (a contiguous tensor, or a permutation of one): PyTorch's "non-overlapping and dense".
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        let mut dims: Vec<(usize, usize)> =
            self.shape.iter().copied().zip(self.strides.iter().copied()).filter(|&(d, _)| d != 1).collect();
        dims.sort_by_key(|&(_, s)| s);
        let mut expected = 1;
        for (d, s) in dims {
            if s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// How the memory of two layouts over one storage overlaps, as PyTorch decides it before an
    /// in-place write with an operand: `Full` when they are the same elements in the same order,
    /// `Partial` when they share memory otherwise, `No` when disjoint. Layouts that are not
    /// non-overlapping and dense (or empty) are not judged (`No`).
    pub fn overlap_with(&self, other: &Layout) -> Overlap {
        if self.numel() == 0
            || other.numel() == 0
            || !self.is_non_overlapping_and_dense()
            || !other.is_non_overlapping_and_dense()
        {
            return Overlap::No;
        }
        let (a, b) = ((self.offset, self.storage_extent()), (other.offset, other.storage_extent()));
        if a == b {
            if self.strides == other.strides {
                Overlap::Full
            } else {
                Overlap::Partial
            }
        } else if a.0 < b.1 && b.0 < a.1 {
            Overlap::Partial
        } else {
            Overlap::No
        }
    }

    /// Swaps two dimensions.
    pub fn transpose(&self, d0: usize, d1: usize) -> Self {
        let mut l = self.clone();
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    /// Inserts a size-1 dimension at `dim` (already wrapped into `0..=ndim`).
    pub fn unsqueeze(&self, dim: usize) -> Self {
        let mut l = self.clone();
        let stride = if dim < self.ndim() { self.strides[dim].saturating_mul(self.shape[dim]) } else { 1 };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }

    /// Removes dimension `dim`, which must have size 1.
    pub fn squeeze(&self, dim: usize) -> Self {
        let mut l = self.clone();
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// A broadcast view to `shape` (stride 0 on the expanded dimensions).
    pub fn expand(&self, shape: &[usize]) -> Result<Self> {
        if shape.len() < self.ndim() {
            return Err(Error::shape(format!(
                "expand: the number of sizes provided ({}) must be greater or equal to the number of \
                 dimensions in the tensor ({})",
                shape.len(),
                self.ndim()
            )));
        }
        let lead = shape.len() - self.ndim();
        let mut strides: Dims = smallvec::smallvec![0; shape.len()];
        for (i, &target) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if d == target {
                s
            } else if d == 1 {
                0
            } else {
                return Err(Error::shape(format!(
                    "The expanded size of the tensor ({target}) must match the existing size ({d}) at \
                     non-singleton dimension {i}. Target sizes: {}. Tensor sizes: {}",
                    fmt_shape(shape),
                    fmt_shape(&self.shape)
                )));
            };
        }
        checked_numel(shape)?;
        Ok(Layout { shape: Dims::from_slice(shape), strides, offset: self.offset })
    }

    /// Elements `start, start+step, ...` below `stop` along `dim` (bounds already clamped).
    pub fn slice(&self, dim: usize, start: usize, stop: usize, step: usize) -> Self {
        let mut l = self.clone();
        let len = if stop > start { (stop - start).div_ceil(step) } else { 0 };
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        l.shape[dim] = len;
        // A step past the extent leaves one element, whose stride is never followed.
        l.strides[dim] = l.strides[dim].saturating_mul(step);
        l
    }

    /// Index `index` along `dim`, removing the dimension.
    pub fn select(&self, dim: usize, index: usize) -> Self {
        let mut l = self.clone();
        l.offset += index * self.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// A view with a new shape, when the strides allow one without copying. PyTorch's rule
    /// (`computeStride`), not only contiguous data: `t().view(same shape)`, splitting a strided
    /// dimension, or merging dimensions whose strides chain (`x[:, ::2].view(-1)`) are views there too.
    pub fn view_as(&self, shape: &[usize]) -> Option<Self> {
        let strides = view_strides(&self.shape, &self.strides, shape)?;
        Some(Layout { shape: Dims::from_slice(shape), strides, offset: self.offset })
    }
}

/// Strides that give `new` over the memory of (`old`, `old_strides`), or None when some new dimension
/// would span two chunks of memory that are not evenly strided (PyTorch's `computeStride`).
fn view_strides(old: &[usize], old_strides: &[usize], new: &[usize]) -> Option<Dims> {
    let mut strides: Dims = smallvec::smallvec![1; new.len()];
    if old.is_empty() {
        return Some(strides);
    }
    if numel(old) == 0 {
        return Some(if old == new { Dims::from_slice(old_strides) } else { contiguous_strides(new) });
    }
    let mut view_d = new.len() as isize - 1;
    let mut chunk_base = *old_strides.last()?;
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for tensor_d in (0..old.len()).rev() {
        tensor_numel *= old[tensor_d];
        // a chunk ends where the next-outer dimension does not continue this one's stride
        if tensor_d == 0
            || (old[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel.saturating_mul(chunk_base))
        {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                strides[view_d as usize] = view_numel.saturating_mul(chunk_base);
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(strides)
}

/// Resolves a requested shape that may contain one `-1` against `numel`.
pub fn infer_shape(requested: &[isize], numel_in: usize, from: &[usize]) -> Result<Vec<usize>> {
    let mut infer = None;
    // Saturating: a product past the range matches no input size (all are at most MAX_NUMEL).
    let mut known = 1usize;
    for (i, &d) in requested.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(Error::shape("only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if d < 0 {
            return Err(Error::shape(format!("invalid shape dimension {d}")));
        } else {
            known = known.saturating_mul(d as usize);
        }
    }
    let mut out: Vec<usize> = requested.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = infer {
        if known == 0 || !numel_in.is_multiple_of(known) {
            return Err(Error::shape(format!(
                "shape '{:?}' is invalid for input of size {numel_in} (from shape {})",
                requested,
                fmt_shape(from)
            )));
        }
        out[i] = numel_in / known;
    } else if known != numel_in {
        return Err(Error::shape(format!(
            "shape '{:?}' is invalid for input of size {numel_in} (from shape {})",
            requested,
            fmt_shape(from)
        )));
    }
    // A zero extent makes any product of the others "match" an empty input; they must still count.
    checked_numel(&out)?;
    Ok(out)
}
