//! Kernel helpers: element-wise maps and broadcast zips over strided views, and the strided write
//! that every in-place operation ends with. Contiguous inputs take a slice fast path.

use ndarray::{ArrayD, ArrayViewMutD, IxDyn, ShapeBuilder, Zip};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::tensor::element::Element;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;

/// Elements above which a kernel splits its work over rayon's threads.
pub(crate) const PARALLEL_ELEMENTS: usize = 1 << 16;

/// `f` applied to every element of `t` (of type `T`), giving a new contiguous tensor.
pub(crate) fn map<T: Element, U: Element>(t: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Result<Tensor> {
    if t.layout().is_contiguous() {
        let data = t.with_contiguous(|s: &[T]| {
            if s.len() >= PARALLEL_ELEMENTS {
                s.par_iter().map(|&x| f(x)).collect::<Vec<U>>()
            } else {
                s.iter().map(|&x| f(x)).collect::<Vec<U>>()
            }
        })?;
        return Tensor::from_vec(data, t.shape());
    }
    t.with_view(|v| Tensor::from_array(v.map(|&x| f(x))))
}

/// `f` applied pairwise to `a` and `b` broadcast together.
pub(crate) fn zip<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    if a.shape() == b.shape() && a.layout().is_contiguous() && b.layout().is_contiguous() {
        let data = a.with_contiguous(|sa: &[T]| {
            b.with_contiguous(|sb: &[T]| {
                if sa.len() >= PARALLEL_ELEMENTS {
                    sa.par_iter().zip(sb.par_iter()).map(|(&x, &y)| f(x, y)).collect::<Vec<U>>()
                } else {
                    sa.iter().zip(sb).map(|(&x, &y)| f(x, y)).collect::<Vec<U>>()
                }
            })
        })??;
        return Tensor::from_vec(data, a.shape());
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    a.with_view(|va| {
        b.with_view(|vb| {
            let va = va.broadcast(IxDyn(&shape)).ok_or_else(|| Error::shape("broadcast failed"))?;
            let vb = vb.broadcast(IxDyn(&shape)).ok_or_else(|| Error::shape("broadcast failed"))?;
            let zipped = Zip::from(&va).and(&vb);
            Ok(Tensor::from_array(if va.len() >= PARALLEL_ELEMENTS {
                zipped.par_map_collect(|&x, &y| f(x, y))
            } else {
                zipped.map_collect(|&x, &y| f(x, y))
            }))
        })?
    })?
}

/// The data of `src`, broadcast to `shape` and converted to `T`, as an owned array.
pub(crate) fn materialize_as<T: Element>(src: &Tensor, shape: &[usize]) -> Result<ArrayD<T>> {
    crate::dispatch_all!(src.dtype(), S => src.with_view(|v: ndarray::ArrayViewD<S>| {
        let b = v.broadcast(IxDyn(shape)).ok_or_else(|| {
            Error::shape(format!(
                "a tensor of shape {:?} cannot be written into a tensor of shape {:?}",
                src.shape(), shape
            ))
        })?;
        Ok(b.map(|&x| convert::<S, T>(x)))
    })?)
}

/// Element conversion that keeps integers exact and maps floats and bools as PyTorch casts do.
pub(crate) fn convert<S: Element, T: Element>(x: S) -> T {
    use crate::tensor::dtype::DType;
    match (S::DTYPE, T::DTYPE) {
        (DType::Int64, _) | (_, DType::Int64) => T::from_i64(x.to_i64()),
        _ => T::from_f64(x.to_f64()),
    }
}

/// Writes `values` (broadcast to `dst`'s shape, cast to its dtype) through `dst`'s strided layout.
/// The caller bumps the version. `values` is copied out first, so it may alias `dst`.
pub(crate) fn write_into(dst: &Tensor, values: &Tensor) -> Result<()> {
    if dst.layout().has_internal_overlap() {
        return Err(Error::autograd(
            "unsupported operation: more than one element of the written-to tensor refers to a single \
             memory location (it is an expanded view). Please clone() the tensor before performing the \
             operation.",
        ));
    }
    crate::dispatch_all!(dst.dtype(), T => {
        let src: ArrayD<T> = materialize_as::<T>(values, dst.shape())?;
        write_array(dst, &src)
    })
}

/// Writes an owned array of the destination's type and shape through its layout.
pub(crate) fn write_array<T: Element>(dst: &Tensor, src: &ArrayD<T>) -> Result<()> {
    let l = dst.layout().clone();
    if l.numel() == 0 {
        return Ok(());
    }
    let mut guard = dst.storage().write();
    let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::dtype("write_into: dtype mismatch"))?;
    if l.storage_extent() > slice.len() {
        return Err(Error::index("tensor layout reaches past the end of its storage"));
    }
    if l.is_contiguous() && src.is_standard_layout() {
        if let Some(s) = src.as_slice() {
            slice[l.offset..l.offset + l.numel()].copy_from_slice(s);
            return Ok(());
        }
    }
    // SAFETY: the extent check keeps every index in bounds and the overlap check above rules out
    // two indices reaching one element; the write guard is held while the view lives.
    let mut view: ArrayViewMutD<T> = unsafe {
        ArrayViewMutD::from_shape_ptr(IxDyn(&l.shape).strides(IxDyn(&l.strides)), slice.as_mut_ptr().add(l.offset))
    };
    view.assign(src);
    Ok(())
}
