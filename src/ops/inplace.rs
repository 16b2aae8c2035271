//! In-place operations. Every one computes its new value out of place (so it is recorded like any
//! operation), writes it through the tensor's layout, bumps the storage's version counter with its
//! own name, and, when recording, gives the tensor the new value's history ("rebase").
//! A write through a view rebases the view's base as well: see NOTE [In-place on views] in
//! `ops/as_strided.rs`.

use std::borrow::Cow;

use super::as_strided::view_rebase_error;
use super::elementwise::{Binary, ScalarOp};
use super::formula::{Need, SingleOutput};
use super::index::IndexItem;
use super::kernel::{map_in_place, with_dst_src, zip_in_place, Cost};
use crate::autograd::anomaly;
use crate::autograd::grad_mode::is_grad_enabled;
use crate::autograd::node::Node;
use crate::autograd::record::record_node;
use crate::error::{Error, Result};
use crate::tensor::dtype::Scalar;
use crate::tensor::layout::{fmt_shape, Overlap};
use crate::tensor::Tensor;

/// The backward of an in-place write whose new value does not depend on the old one: zero.
struct Overwritten;

impl SingleOutput for Overwritten {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(Tensor::zeros(g.shape(), g.dtype())?)])
    }
}

/// `copy_` of a source that requires grad: the tensor's old value (input 0) gets a zero gradient and the
/// source (input 1, already expanded and cast to the tensor's shape and dtype) the upstream gradient.
struct CopiedIn;

impl SingleOutput for CopiedIn {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(Tensor::zeros(g.shape(), g.dtype())?), Some(g)])
    }
}

/// `masked_fill_` -> `MaskedFill`.
fn camel_case(op: &str) -> String {
    op.split('_').filter(|w| !w.is_empty()).map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

impl Tensor {
    /// True when an in-place write to this tensor with these operands is recorded (or must be
    /// checked as if it were): grad mode on and the tensor, its base or an operand requiring grad.
    pub(crate) fn inplace_records(&self, operands: &[&Tensor]) -> bool {
        is_grad_enabled()
            && (self.requires_grad()
                || self.base().is_some_and(|b| b.requires_grad())
                || operands.iter().any(|t| t.requires_grad()))
    }

    /// Refuses in-place writes that would corrupt autograd state (`recording`: see `inplace_records`).
    pub(crate) fn check_inplace(&self, op: &str, recording: bool) -> Result<()> {
        if !self.storage().is_writable() {
            return Err(Error::value(format!(
                "{op}: this tensor's memory is read-only (it is shared with a non-writable NumPy array or \
                 a read-only DLPack tensor); write into a copy (`t.clone()`) or share a writable array"
            )));
        }
        if self.storage().is_inference() && !crate::autograd::grad_mode::is_inference_mode_enabled() {
            return Err(Error::autograd(crate::autograd::grad_mode::INFERENCE_INPLACE));
        }
        if recording {
            if let Some(base) = self.base() {
                if let Some(message) = view_rebase_error(&self.view_creation(), "is being modified inplace") {
                    return Err(Error::autograd(message));
                }
                if base.is_leaf() && base.requires_grad() {
                    return Err(Error::autograd(format!(
                        "a view of a leaf tensor that requires grad is being used in an in-place \
                         operation ({op})."
                    )));
                }
            }
            if self.is_leaf() && self.requires_grad() {
                return Err(Error::autograd(format!(
                    "a leaf tensor that requires grad is being used in an in-place operation ({op}). \
                     Wrap the update in `with tapegrad.no_grad():`, or work on a copy (`.clone()`)."
                )));
            }
        }
        if self.layout().has_internal_overlap() {
            return Err(Error::autograd(format!(
                "{op}: unsupported operation: more than one element of the written-to tensor refers to \
                 a single memory location (it is an expanded view). Please clone() the tensor first."
            )));
        }
        Ok(())
    }

    /// The value an in-place write starts from, for recording: a copy (the write is about to change
    /// the memory, and the new value's node may save its input). For a view, the copy's history is a
    /// read of the base's current history, as PyTorch's CopySlices computes it: the view's own older
    /// node (and the hooks on it) is no longer on the path.
    fn old_value_for_write(&self) -> Result<Tensor> {
        let old = self.detach().clone_data()?;
        match self.base() {
            Some(base) if base.requires_grad() => {
                super::as_strided::record_region_read(base, self, &old);
                Ok(old)
            }
            _ if self.requires_grad() => self.clone_tensor(),
            _ => Ok(old),
        }
    }

    /// Runs `compute(old value)` and stores the result in this tensor (see the module note).
    /// `operands` are the other tensors the new value depends on.
    pub fn apply_inplace(
        &self,
        op: &'static str,
        operands: &[&Tensor],
        compute: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        let recording = self.inplace_records(operands);
        self.check_inplace(op, recording)?;
        // When recording, the old value is copied so that the new node does not save memory that
        // this very write is about to change (an operand that requires grad may need it saved even
        // when this tensor does not require grad: `a.mul_(b)` saves `a` for `b`'s gradient).
        let old = if recording { self.old_value_for_write()? } else { self.detach() };
        // Forward mode: the old value carries (a copy of) this tensor's tangents, so that the new
        // value's tangent is computed by the out-of-place operation (NOTE [Tangent propagation]); a
        // copy, as the write below updates the tangent in place and the new value's node may have
        // saved the old value with its tangent.
        let levels = crate::autograd::forward::visible_levels();
        for (_, id) in &levels {
            if let Some(t) = self.tangent_at(*id) {
                old.set_tangent_at(*id, Some(t.clone_tensor()?));
            }
        }
        let new = compute(&old)?;
        // A saved-tensor pack hook that failed while the new value was recorded: refused before
        // the memory is written.
        if let Some(e) = crate::autograd::saved::take_pack_error() {
            return Err(e);
        }
        if new.shape() != self.shape()
            && crate::tensor::layout::broadcast_shapes(new.shape(), self.shape())? != self.shape()
        {
            return Err(Error::shape(format!(
                "{op}: output with shape {} doesn't match the broadcast shape {}",
                fmt_shape(self.shape()),
                fmt_shape(new.shape())
            )));
        }
        if new.dtype().is_float() && !self.dtype().is_float() {
            return Err(Error::dtype(format!(
                "{op}: result type {} can't be cast to the desired output type {}",
                new.dtype(),
                self.dtype()
            )));
        }
        super::kernel::write_into(self, &new)?;
        self.storage().bump_version(Cow::Borrowed(op), anomaly::current_location());
        for (_, id) in &levels {
            crate::autograd::forward::write_tangent(self, *id, new.tangent_at(*id))?;
        }
        if recording {
            let new = if new.shape() != self.shape() { new.expand(self.shape())? } else { new };
            let new = if new.dtype() != self.dtype() { new.to_dtype(self.dtype())? } else { new };
            match self.base() {
                Some(base) => super::as_strided::rebase_view(base, self, &new),
                None => match new.grad_fn() {
                    // `copy_` replaces the value with one that does not depend on it: the old history
                    // gets a zero gradient and the source the upstream one, as PyTorch's CopyBackwards.
                    _ if op == "copy_" && new.requires_grad() => {
                        record_node(Cow::Borrowed("CopyBackward"), &[&old, &new], &[self], Box::new(CopiedIn), vec![]);
                    }
                    Some(f) => self.set_history(f, new.output_nr()),
                    // A value without history (a constant copied in, `fill_`, `zero_`) replaces what the
                    // tensor held: it still requires grad, and its old history gets a zero gradient.
                    None if self.requires_grad() => {
                        let name = Cow::Owned(format!("{}Backward", camel_case(op)));
                        record_node(name, &[&old], &[self], Box::new(Overwritten), vec![]);
                    }
                    None => {}
                },
            }
        }
        Ok(())
    }

    /// Refuses an operand that shares part of the written memory in another arrangement
    /// (`m[1:].add_(m[:3])`, `m.add_(m.t())`): the result would depend on the order of the writes,
    /// so PyTorch refuses it too. The same elements in the same order (`x.add_(x)`) are fine.
    fn check_operand_overlap(&self, other: &Tensor) -> Result<()> {
        if self.shares_storage(other) && self.layout().overlap_with(other.layout()) == Overlap::Partial {
            return Err(Error::autograd(
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a \
                 single memory location. Please clone() the tensor before performing the operation.",
            ));
        }
        Ok(())
    }

    /// `self (op)= other`: one pass over the memory when nothing is recorded, else through
    /// `apply_inplace`.
    fn binary_(&self, other: &Tensor, op: Binary, name: &'static str) -> Result<()> {
        self.check_operand_overlap(other)?;
        if !self.fast_inplace_ok(other.requires_grad(), other.dtype())
            || self.shares_storage(other)
            || other.has_visible_tangent()
        {
            return self.apply_inplace(name, &[other], |s| s.binary(other, op));
        }
        self.check_inplace(name, false)?;
        // `other` must broadcast to `self`'s shape. When the two broadcast to a larger shape, the
        // error names `self`'s shape and that one (as PyTorch); when they do not broadcast at all,
        // the broadcast error, which names both. (Same shapes need no view: this is the hot path of
        // every optimizer step.)
        let other = if other.shape() == self.shape() {
            other.clone()
        } else {
            other.expand(self.shape()).map_err(|_| {
                match crate::tensor::layout::broadcast_shapes(self.shape(), other.shape()) {
                    Ok(b) => Error::shape(format!(
                        "{name}: output with shape {} doesn't match the broadcast shape {}",
                        fmt_shape(self.shape()),
                        fmt_shape(&b)
                    )),
                    Err(e) => e,
                }
            })?
        };
        crate::dispatch_float_wide!(self.dtype(), name, T => {
            let cost = if op == Binary::Pow { Cost::Heavy } else { Cost::Cheap };
            let apply = move |d: &mut [T], src: &[T]| match op {
                Binary::Add => zip_in_place(d, src, cost, |x, y| x + y),
                Binary::Sub => zip_in_place(d, src, cost, |x, y| x - y),
                Binary::Mul => zip_in_place(d, src, cost, |x, y| x * y),
                Binary::Div => zip_in_place(d, src, cost, |x, y| x / y),
                Binary::Pow => zip_in_place(d, src, cost, |x, y| x.powf(y)),
            };
            // Same-shaped contiguous operand: read it in place, no copy.
            if with_dst_src::<T>(self, &other, apply)? {
                self.storage().bump_version(Cow::Borrowed(name), anomaly::current_location());
                return Ok(());
            }
            let src: Vec<T> = other.to_vec::<T>()?;
            self.update_in_place::<T>(name, move |d: &mut [T]| apply(d, &src))
        })
    }

    /// `self (op)= s`, in one pass when nothing is recorded.
    fn scalar_(&self, s: Scalar, op: ScalarOp, name: &'static str) -> Result<()> {
        if !self.fast_inplace_ok(false, s.result_dtype_with(self.dtype())) {
            return self.apply_inplace(name, &[], |x| x.scalar_op(s, op));
        }
        self.check_inplace(name, false)?;
        crate::dispatch_float_wide!(self.dtype(), name, T => {
            let v: T = s.to_element();
            self.update_in_place::<T>(name, move |d: &mut [T]| match op {
                ScalarOp::Add => map_in_place(d, Cost::Cheap, |x| x + v),
                ScalarOp::Sub => map_in_place(d, Cost::Cheap, |x| x - v),
                ScalarOp::Mul => map_in_place(d, Cost::Cheap, |x| x * v),
                ScalarOp::Div => map_in_place(d, Cost::Cheap, |x| x / v),
                _ => map_in_place(d, Cost::Cheap, |x| x),
            })
        })
    }

    /// The fast path applies to contiguous float tensors of the result's dtype, when nothing
    /// will be recorded.
    fn fast_inplace_ok(&self, other_requires_grad: bool, result_dtype: crate::DType) -> bool {
        let recording = self.inplace_records(&[]) || (is_grad_enabled() && other_requires_grad);
        // float32/float64 only: the 16-bit floats take the general path, which computes in float32.
        !recording
            && self.dtype().is_float()
            && !self.dtype().is_half()
            && result_dtype == self.dtype()
            && self.layout().is_contiguous()
            && !self.has_visible_tangent()
    }

    /// Runs `f` over this (contiguous) tensor's elements under the write lock, then bumps the version.
    fn update_in_place<T: crate::tensor::element::Element>(
        &self,
        name: &'static str,
        f: impl FnOnce(&mut [T]),
    ) -> Result<()> {
        {
            let mut guard = self.storage().write();
            let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::dtype("in-place: dtype mismatch"))?;
            let n = self.numel();
            let start = if n == 0 { 0 } else { self.layout().offset };
            let dst = slice
                .get_mut(start..start + n)
                .ok_or_else(|| Error::index("tensor layout reaches past the end of its storage"))?;
            f(dst);
        }
        self.storage().bump_version(Cow::Borrowed(name), anomaly::current_location());
        Ok(())
    }

    /// `self += other`
    pub fn add_(&self, other: &Tensor) -> Result<()> {
        self.binary_(other, Binary::Add, "add_")
    }
    /// `self -= other`
    pub fn sub_(&self, other: &Tensor) -> Result<()> {
        self.binary_(other, Binary::Sub, "sub_")
    }
    /// `self *= other`
    pub fn mul_(&self, other: &Tensor) -> Result<()> {
        self.binary_(other, Binary::Mul, "mul_")
    }
    /// `self /= other`
    pub fn div_(&self, other: &Tensor) -> Result<()> {
        self.binary_(other, Binary::Div, "div_")
    }
    /// `self += s`
    pub fn add_scalar_(&self, s: impl Into<Scalar>) -> Result<()> {
        self.scalar_(s.into(), ScalarOp::Add, "add_")
    }
    /// `self -= s`
    pub fn sub_scalar_(&self, s: impl Into<Scalar>) -> Result<()> {
        self.scalar_(s.into(), ScalarOp::Sub, "sub_")
    }
    /// `self *= s`
    pub fn mul_scalar_(&self, s: impl Into<Scalar>) -> Result<()> {
        self.scalar_(s.into(), ScalarOp::Mul, "mul_")
    }
    /// `self /= s`
    pub fn div_scalar_(&self, s: impl Into<Scalar>) -> Result<()> {
        self.scalar_(s.into(), ScalarOp::Div, "div_")
    }
    /// Sets every element to `s`.
    pub fn fill_(&self, s: impl Into<Scalar>) -> Result<()> {
        self.fill_named(s.into(), "fill_")
    }
    /// Sets every element to zero.
    pub fn zero_(&self) -> Result<()> {
        self.fill_named(Scalar::Int(0), "zero_")
    }

    /// `fill_` and `zero_`: one pass over the memory when nothing is recorded.
    fn fill_named(&self, s: Scalar, name: &'static str) -> Result<()> {
        let recording = self.inplace_records(&[]);
        if recording || !self.layout().is_contiguous() || (matches!(s, Scalar::Float(_)) && !self.dtype().is_float()) {
            return self.apply_inplace(name, &[], |x| Tensor::full(x.shape(), s, x.dtype()));
        }
        self.check_inplace(name, false)?;
        crate::dispatch_all!(self.dtype(), T => {
            use crate::tensor::element::Element;
            let v = match s {
                Scalar::Float(f) => T::from_f64(f),
                Scalar::Int(i) => T::from_i64(i),
                Scalar::Bool(b) => T::from_i64(b as i64),
            };
            self.update_in_place::<T>(name, move |d: &mut [T]| crate::ops::kernel::fill(d, v))
        })
    }
    /// Clamps in place.
    pub fn clamp_(&self, min: Option<f64>, max: Option<f64>) -> Result<()> {
        self.clamp_scalar_(min.map(Scalar::Float), max.map(Scalar::Float))
    }
    /// Copies `src` (broadcast, cast) into this tensor.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.check_operand_overlap(src)?;
        let dtype = self.dtype();
        self.apply_inplace("copy_", &[src], |x| src.expand(x.shape())?.to_dtype(dtype))
    }
    /// `self[items] = value`.
    pub fn index_put_(&self, items: &[IndexItem], value: &Tensor) -> Result<()> {
        if let [IndexItem::Mask(mask)] = items {
            if mask.shape() == self.shape()
                && mask.dtype() == crate::DType::Bool
                && value.numel() == 1
                && self.fast_inplace_ok(value.requires_grad(), self.dtype())
            {
                // `t[mask] = scalar` with nothing recorded (a custom backward zeroing a gradient):
                // one pass over the memory.
                self.check_inplace("index_put_", false)?;
                let keep = mask.to_vec::<bool>()?;
                return crate::dispatch_float!(self.dtype(), "index_put_", T => {
                    let v: T = value.to_dtype(self.dtype())?.to_vec::<T>()?[0];
                    self.update_in_place::<T>("index_put_", move |d: &mut [T]| {
                        d.iter_mut().zip(&keep).for_each(|(x, &m)| if m { *x = v });
                    })
                });
            }
        }
        self.apply_inplace("index_put_", &[value], |x| x.index_put_value(items, value))
    }
    /// `self[mask] = s`.
    pub fn masked_fill_(&self, mask: &Tensor, s: impl Into<Scalar>) -> Result<()> {
        let v = Tensor::scalar_tensor(s.into(), self.dtype())?;
        self.apply_inplace("masked_fill_", &[], |x| x.index_put_value(&[IndexItem::Mask(mask.clone())], &v))
    }

    /// Adds `other` into this tensor's memory with no autograd checks or recording (gradient
    /// accumulation, which owns the tensor it writes).
    pub(crate) fn add_inplace_unchecked(&self, other: &Tensor) -> Result<()> {
        let added = crate::dispatch_float!(self.dtype(), "gradient accumulation", T => {
            with_dst_src::<T>(self, other, |d: &mut [T], s: &[T]| zip_in_place(d, s, Cost::Cheap, |x, y| x + y))?
        });
        if !added {
            let sum = {
                let _off = crate::autograd::GradModeGuard::no_grad();
                self.add(other)?
            };
            super::kernel::write_into(self, &sum)?;
        }
        self.storage().bump_version(Cow::Borrowed("add_ (gradient accumulation)"), None);
        Ok(())
    }
}

// NOTE [In-place shape operations]: `t_`, `transpose_`, `squeeze_`, `unsqueeze_` (and `swapaxes_`,
// `swapdims_`) change a tensor's shape and strides. A core tensor's layout is fixed once it is made
// (it is read without a lock by every operation, from any thread), so the core cannot change it in
// place: `restride_` returns a *new* core tensor that stands for the same tensor after the
// operation — same storage, the new layout, the same base (a view stays a view of the same base, a
// tensor that is not a view stays one) — and the binding swaps it into the Python object (NOTE
// [Swappable inner tensor] in `python/tensor.rs`). What PyTorch keeps on the tensor itself moves
// with it: `requires_grad`, `.grad`, a leaf's hooks, `retain_grad`, how a view was made. As in
// PyTorch, the storage's version is bumped (a saved copy of the old tensor is then stale), a leaf
// that requires grad is refused while recording, and the new history is the view node of the
// out-of-place operation, whose input is the old tensor (its history, `TransposeBackward` on top
// of `MulBackward`, …). Under `no_grad` the history is kept as it was (the next backward then
// fails on the shape, as in PyTorch). The shape operation writes nothing, so a read-only or
// expanded tensor may be restrided.
impl Tensor {
    /// The tensor that `self` becomes after the in-place shape operation `op`, whose out-of-place
    /// form is `view` (see NOTE [In-place shape operations]). The caller puts it in `self`'s place.
    pub fn restride_(&self, op: &'static str, view: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        if self.storage().is_inference() && !crate::autograd::grad_mode::is_inference_mode_enabled() {
            return Err(Error::autograd(crate::autograd::grad_mode::INFERENCE_INPLACE));
        }
        let recording = self.inplace_records(&[]);
        if recording {
            if let Some(base) = self.base() {
                if let Some(message) = view_rebase_error(&self.view_creation(), "is being modified inplace") {
                    return Err(Error::autograd(message));
                }
                if base.is_leaf() && base.requires_grad() {
                    return Err(Error::autograd(format!(
                        "a view of a leaf tensor that requires grad is being used in an in-place operation ({op})."
                    )));
                }
            }
            if self.is_leaf() && self.requires_grad() {
                return Err(Error::autograd(format!(
                    "a leaf tensor that requires grad is being used in an in-place operation ({op}). \
                     Wrap the update in `with tapegrad.no_grad():`, or work on a copy (`.clone()`)."
                )));
            }
        }
        let fresh = view(self)?;
        let out = Tensor::from_parts(self.storage().clone(), fresh.layout().clone(), self.dtype(), self.0.base.clone());
        self.storage().bump_version(Cow::Borrowed(op), anomaly::current_location());
        let (new_fn, new_nr, tangents) = {
            let m = fresh.0.meta.lock();
            (m.grad_fn.clone(), m.output_nr, m.tangents.clone())
        };
        // Moved out of the old tensor under its lock, moved into the new one under its lock; nothing
        // is dropped under either (NOTE [No Python under a tensor lock]).
        let (requires_grad, grad, hooks, post_hooks, retains, old_fn, old_nr, creation) = {
            let mut m = self.0.meta.lock();
            (
                m.requires_grad,
                m.grad.take(),
                std::mem::take(&mut m.hooks),
                std::mem::take(&mut m.post_accumulate_hooks),
                m.retains_grad,
                m.grad_fn.clone(),
                m.output_nr,
                m.view_creation.clone(),
            )
        };
        // Recording: the view node on top of the old history; otherwise the old history stays.
        let (grad_fn, output_nr) = if recording && new_fn.is_some() { (new_fn, new_nr) } else { (old_fn, old_nr) };
        {
            let mut m = out.0.meta.lock();
            m.requires_grad = requires_grad || grad_fn.is_some();
            m.grad = grad;
            m.hooks = hooks;
            m.post_accumulate_hooks = post_hooks;
            m.grad_fn = grad_fn;
            m.output_nr = output_nr;
            m.tangents = tangents;
            if out.0.base.is_some() {
                m.view_version = Some(out.version());
                m.view_creation = creation;
            }
        }
        if retains {
            // As in PyTorch, the retained gradient stays the one of the value `retain_grad` was
            // called on (the hook stays on the old node), but it now fills the new tensor's .grad.
            let node = self.0.meta.lock().grad_fn.clone();
            if let Some(node) = node {
                let (old_w, new_w) = (std::sync::Arc::downgrade(&self.0), std::sync::Arc::downgrade(&out.0));
                let mut pre = node.pre_hooks.lock();
                for (_, h) in pre.iter_mut() {
                    if matches!(h, crate::autograd::hooks::PreHook::Retain(w) if w.ptr_eq(&old_w)) {
                        *h = crate::autograd::hooks::PreHook::Retain(new_w.clone());
                    }
                }
            }
            self.0.meta.lock().retains_grad = false;
            out.0.meta.lock().retains_grad = true;
        }
        drop(fresh);
        Ok(out)
    }
}
