//! Moving values between a base tensor and a view of it, by their layouts over one storage.
//!
//! NOTE [In-place on views]: writing in place through a view `v` of a base `b` changes `b` too, so
//! `b`'s history must learn of it (PyTorch's CopySlices). We record:
//! - on `b`, a `CopySlices` node with inputs (old `b`, new value of `v`): the gradient of the old
//!   base is the incoming gradient with `v`'s region zeroed; the gradient of the new value is the
//!   incoming gradient read at `v`'s region;
//! - on `v`, an `AsStridedBackward` node whose only input is the new `b`: the gradient of `b` is
//!   `v`'s gradient written at `v`'s region of zeros.
//!
//! Regions are expressed by layouts over the base's storage, so any view (slices, transposes,
//! selects, unsqueezes) works the same way. Each move goes through a scratch buffer the size of
//! the storage.

use super::formula::{Need, SingleOutput};
use crate::autograd::node::{Backward, Node};
use crate::autograd::record::record_node;
use crate::error::Result;
use crate::tensor::layout::Layout;
use crate::tensor::{Tensor, ViewCreation};

/// Where a view sits inside its base.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    pub base: Layout,
    pub view: Layout,
    pub storage_len: usize,
}

impl Region {
    pub(crate) fn of(base: &Tensor, view: &Tensor) -> Region {
        Region { base: base.layout().clone(), view: view.layout().clone(), storage_len: base.storage().read().len() }
    }

    /// Writes `src` through `from` into a zero scratch storage (after `fill` through `pre`), then
    /// reads it back through `to`.
    fn relayout(&self, src: &Tensor, from: &Layout, to: &Layout, clear: Option<&Layout>) -> Result<Tensor> {
        let scratch = Tensor::zeros(&[self.storage_len], src.dtype())?;
        let at = |l: &Layout| Tensor::from_parts(scratch.storage().clone(), l.clone(), src.dtype(), None);
        // An expanded layout names one memory location several times; writing through it is the
        // adjoint of reading through it, so the values that land on one location are summed.
        let (src, from) = sum_repeats(&src.detach(), from)?;
        super::kernel::write_into(&at(&from), &src)?;
        if let Some(c) = clear {
            let target = at(c);
            super::kernel::write_into(&target, &Tensor::zeros(&c.shape, src.dtype())?)?;
        }
        at(to).clone_data()
    }

    /// The view's region of a tensor shaped like the base.
    pub(crate) fn read(&self, g_base: &Tensor) -> Result<Tensor> {
        let out = self.relayout(g_base, &self.base, &self.view, None)?;
        record_if(g_base, &out, "AsStridedBackward", || Box::new(RegionWrite(self.clone())));
        linear_tangent(g_base, &out, |t| self.read(t))?;
        Ok(out)
    }

    /// A base-shaped tensor of zeros with `g_view` at the view's region.
    pub(crate) fn write(&self, g_view: &Tensor) -> Result<Tensor> {
        let out = self.relayout(g_view, &self.view, &self.base, None)?;
        record_if(g_view, &out, "AsStridedScatterBackward", || Box::new(RegionRead(self.clone())));
        linear_tangent(g_view, &out, |t| self.write(t))?;
        Ok(out)
    }

    /// A base-shaped tensor with the view's region set to zero.
    pub(crate) fn clear(&self, g_base: &Tensor) -> Result<Tensor> {
        let out = self.relayout(g_base, &self.base, &self.base, Some(&self.view))?;
        record_if(g_base, &out, "MaskedFillBackward", || Box::new(RegionClear(self.clone())));
        linear_tangent(g_base, &out, |t| self.clear(t))?;
        Ok(out)
    }
}

/// `src` summed over the dimensions that `layout` repeats (stride 0), and the layout with those
/// dimensions reduced to one element, so that each memory location is written once.
fn sum_repeats(src: &Tensor, layout: &Layout) -> Result<(Tensor, Layout)> {
    let repeated: Vec<isize> =
        (0..layout.ndim()).filter(|&d| layout.strides[d] == 0 && layout.shape[d] > 1).map(|d| d as isize).collect();
    if repeated.is_empty() {
        return Ok((src.clone(), layout.clone()));
    }
    let mut once = layout.clone();
    for &d in &repeated {
        once.shape[d as usize] = 1;
    }
    Ok((src.sum(Some(&repeated), true)?, once))
}

/// Forward mode of a linear operation `out = op(input)`: the tangent is `op(tangent)`.
fn linear_tangent(input: &Tensor, out: &Tensor, op: impl Fn(&Tensor) -> Result<Tensor>) -> Result<()> {
    if !crate::autograd::forward::active(&[input]) {
        return Ok(());
    }
    crate::autograd::forward::propagate(&[input], &[out], |t| Ok(vec![t[0].as_ref().map(&op).transpose()?]))
}

fn record_if(input: &Tensor, out: &Tensor, name: &'static str, formula: impl FnOnce() -> Box<dyn Backward>) {
    if crate::autograd::record::needs_grad(&[input]) && !crate::autograd::record::views_of_inference_tensors(&[out]) {
        record_node(std::borrow::Cow::Borrowed(name), &[input], &[out], formula(), vec![]);
    }
}

/// Backward of `Region::read`.
struct RegionWrite(Region);
impl SingleOutput for RegionWrite {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(self.0.write(&g)?)])
    }
}

/// Backward of `Region::write`.
struct RegionRead(Region);
impl SingleOutput for RegionRead {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(self.0.read(&g)?)])
    }
}

/// Backward of `Region::clear` (it is its own adjoint).
struct RegionClear(Region);
impl SingleOutput for RegionClear {
    fn input_grads(&self, _node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(self.0.clear(&g)?)])
    }
}

/// The base's node after an in-place write through a view (see the module note).
struct CopySlices(Region);
impl SingleOutput for CopySlices {
    fn input_grads(&self, _node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![need.then(0, || self.0.clear(&g))?, need.then(1, || self.0.read(&g))?])
    }
}

/// Gives a stale view the history of a read of its region of `base` (NOTE [Stale views]). A view
/// whose history cannot be regenerated (a custom function's view output, whose backward would be
/// silently replaced; a view made under `no_grad`, which never had one) gets a node that raises when
/// backward reaches it, as PyTorch raises when such a view is used.
pub(crate) fn regenerate_view_history(base: &Tensor, view: &Tensor, creation: &ViewCreation) {
    let what = "its base or another view of its base has been modified inplace";
    match view_rebase_error(creation, what) {
        None => record_region_read(base, view, view),
        Some(message) => {
            // PyTorch cannot read such a view's grad_fn at all and prints it as `<Invalid>`.
            let name = std::borrow::Cow::Borrowed("Invalid");
            record_node(name, &[base], &[view], Box::new(RaiseOnBackward(message)), vec![]);
        }
    }
}

/// Gives `out` (the view's values, or a copy of them) the history of a read of `view`'s region of
/// `base`'s current history.
pub(crate) fn record_region_read(base: &Tensor, view: &Tensor, out: &Tensor) {
    let formula = Box::new(RegionWrite(Region::of(base, view)));
    record_node(std::borrow::Cow::Borrowed("AsStridedBackward"), &[base], &[out], formula, vec![]);
}

/// Why a view made this way cannot take a new history, in PyTorch's words; `what` says what happened.
pub(crate) fn view_rebase_error(creation: &ViewCreation, what: &str) -> Option<String> {
    match creation {
        ViewCreation::Default => None,
        ViewCreation::NoGradMode => Some(format!(
            "A view was created in no_grad mode and {what} with grad mode enabled. Given that this use case is \
             ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and \
             the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or \
             both outside (if you want the inplace to be tracked)."
        )),
        ViewCreation::OfNoGradModeView => Some(format!(
            "This tensor is a view of a view which was created in no_grad mode and {what} with grad mode \
             enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify \
             your code by moving both the view and the inplace either both inside the no_grad block (if you \
             don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
        )),
        ViewCreation::InCustomFunction { name, nr } => Some(format!(
            "Output {nr} of {name} is a view and {what}. This view was created inside a custom Function (or \
             because an input was returned as-is) and the autograd logic to handle view+inplace would override \
             the custom backward associated with the custom Function, leading to incorrect gradients. This \
             behavior is forbidden. You can fix this by cloning the output of the custom Function."
        )),
        ViewCreation::MultiOutput { name, nr } => Some(format!(
            "Output {nr} of {name} is a view and {what}. This view is the output of a function that returns \
             multiple views. Such functions do not allow the output views to be modified inplace. You should \
             replace the inplace operation by an out-of-place one."
        )),
    }
}

/// The history of a view that may not be differentiated through: backward raises `message`.
struct RaiseOnBackward(String);
impl Backward for RaiseOnBackward {
    fn apply(&self, _node: &Node, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(crate::error::Error::autograd(self.0.clone()))
    }
}

/// Gives `base` and `view` their history after `new_value` was written through `view`.
pub(crate) fn rebase_view(base: &Tensor, view: &Tensor, new_value: &Tensor) {
    record_node(
        std::borrow::Cow::Borrowed("CopySlices"),
        &[base, new_value],
        &[base],
        Box::new(CopySlices(Region::of(base, view))),
        vec![],
    );
    regenerate_view_history(base, view, &ViewCreation::Default);
}
