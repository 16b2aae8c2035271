//! Forward-mode automatic differentiation: tangents carried by tensors ("dual tensors").
//!
//! NOTE [Dual levels]: a *level* is one forward-mode differentiation in progress
//! (`forward_ad.dual_level()`). Levels nest: entering a level while one is live makes a new one
//! with the next index, and only the last one may be exited. Levels belong to the thread that entered
//! them: the list of live levels is per thread (PyTorch's is process-wide), so that transforms running
//! on several threads each have their own stack, and a tangent of another thread's level is
//! invisible. Each level has a process-unique id that is never reused, and a tensor keeps its tangents as `(level id, tangent)` pairs in its
//! autograd metadata: when a level exits its tangents become invisible at once (a tangent whose
//! level is no longer live is never read, and is dropped the next time that tensor's tangents are
//! written), so exiting a level does not have to visit every tensor.
//!
//! NOTE [Tangent propagation]: every built-in operation computes its outputs' tangents in the same
//! call, from its inputs' tangents, for each live level at which an input has one. The formulas are
//! written with the library's own differentiable tensor operations, so that with grad mode on
//! they are recorded on the tape (forward-over-reverse and reverse-over-forward). While the
//! tangent of level `L` is computed, levels `L` and above are switched off on this thread: the
//! formula's own operations then carry the tangents of the outer levels only, which is what a
//! nested `jvp` of a `jvp` needs, and the computation cannot recurse into itself.
//!
//! An operation's rule is, by default, derived from its backward formula: a backward formula is
//! linear in the output gradient `g` and is written with recorded operations, so with `g = u`
//! a fresh leaf, `s = Σᵢ <backwardᵢ(u), tᵢ>` is `<u, J t>` and `ds/du = J t`. Operations with a
//! cheaper rule (element-wise ones, views) give it instead.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::grad_mode::{is_grad_enabled, GradModeGuard};
use super::node::{Backward, Edge, Node, TensorMeta};
use super::record::Save;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// True while at least one level is live on some thread: the cheap test every operation makes.
static LIVE_LEVELS: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The ids of this thread's live levels, outermost first (index = level number). Levels belong to
/// the thread that entered them (NOTE [Dual levels]); a thread that ends with levels still live
/// gives them up.
struct Levels(Vec<u64>);

impl Drop for Levels {
    fn drop(&mut self) {
        LIVE_LEVELS.fetch_sub(self.0.len(), Ordering::AcqRel);
    }
}

thread_local! {
    static LEVELS: RefCell<Levels> = const { RefCell::new(Levels(Vec::new())) };
    /// Levels with an index at or above this are switched off on this thread (NOTE [Tangent
    /// propagation]).
    static CEILING: Cell<usize> = const { Cell::new(usize::MAX) };
}

thread_local! {
    /// Forward grad mode of this thread (`forward_ad._set_fwd_grad_enabled`): while off, operations
    /// compute no tangents (every level looks empty to them).
    static FWD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether operations on this thread compute tangents (forward grad mode; on by default).
pub fn is_fwd_grad_enabled() -> bool {
    FWD_ENABLED.with(Cell::get)
}

/// Sets this thread's forward grad mode; returns the previous one.
pub fn set_fwd_grad_enabled(on: bool) -> bool {
    FWD_ENABLED.with(|c| c.replace(on))
}

/// Sets forward grad mode for its lifetime, then restores the previous one.
pub struct FwdGradGuard(bool);

impl FwdGradGuard {
    /// Sets forward grad mode to `on` until the guard drops.
    pub fn new(on: bool) -> Self {
        FwdGradGuard(set_fwd_grad_enabled(on))
    }
}

impl Drop for FwdGradGuard {
    fn drop(&mut self) {
        set_fwd_grad_enabled(self.0);
    }
}

/// True while tangents are hidden on this thread (PyTorch's behaviour under inference mode and
/// with forward grad mode off): operations compute none, `unpack_dual` finds none, `make_dual`
/// attaches none.
fn tangents_hidden() -> bool {
    !is_fwd_grad_enabled() || super::grad_mode::is_inference_mode_enabled()
}

/// True when some thread has a live level (cheap).
pub(crate) fn any_level() -> bool {
    LIVE_LEVELS.load(Ordering::Acquire) != 0
}

/// `f` of this thread's live level ids (empty once the thread-local storage is gone).
fn with_levels<R>(f: impl FnOnce(&[u64]) -> R) -> R {
    let mut f = Some(f);
    let mut call = |ids: &[u64]| f.take().map(|f| f(ids));
    match LEVELS.try_with(|l| call(&l.borrow().0)) {
        Ok(Some(r)) => r,
        _ => call(&[]).expect("with_levels: the function runs once"),
    }
}

/// Enters a new level and returns its index.
pub fn enter_level() -> usize {
    LEVELS.with(|l| {
        let mut levels = l.borrow_mut();
        levels.0.push(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        LIVE_LEVELS.fetch_add(1, Ordering::AcqRel);
        levels.0.len() - 1
    })
}

/// Exits level `index` (the last one by default). Only the last level may be exited.
pub fn exit_level(index: Option<i64>) -> Result<()> {
    let last = with_levels(|l| l.len()) as i64 - 1;
    let index = index.unwrap_or(last);
    if index < 0 {
        return Err(Error::autograd("Dual level must be a positive number."));
    }
    if index != last {
        return Err(Error::autograd(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported.",
        ));
    }
    LEVELS.with(|l| l.borrow_mut().0.pop());
    LIVE_LEVELS.fetch_sub(1, Ordering::AcqRel);
    Ok(())
}

/// The number of live levels visible on this thread (inside the rule computing level `L`'s
/// tangents, `L`: NOTE [Tangent propagation]).
pub fn level_count() -> usize {
    with_levels(|l| l.len()).min(CEILING.with(Cell::get))
}

/// The id of level `index` (the last visible one by default), or an error naming `what`.
fn level_id(index: Option<i64>, what: &str) -> Result<u64> {
    let levels = with_levels(<[u64]>::to_vec);
    let visible = levels.len().min(CEILING.with(Cell::get));
    let i = match index {
        None if visible == 0 => {
            return Err(Error::autograd(
                "Trying to create a dual Tensor for forward AD but no level exists, make sure to \
                 enter_dual_level() first.",
            ))
        }
        None => visible - 1,
        Some(i) if i < 0 || i as usize >= visible => {
            return Err(Error::autograd(format!("Invalid level given to {what}")))
        }
        Some(i) => i as usize,
    };
    Ok(levels[i])
}

/// The live levels visible on this thread, as (index, id), outermost first. Empty (and cheap)
/// when no level is live.
pub(crate) fn visible_levels() -> Vec<(usize, u64)> {
    // Inference mode hides every tangent, as PyTorch's: operations compute none and `unpack_dual`
    // finds none.
    if !any_level() || tangents_hidden() {
        return Vec::new();
    }
    let ceiling = CEILING.with(Cell::get);
    with_levels(|l| l.iter().copied().enumerate().take_while(|(i, _)| *i < ceiling).collect())
}

fn is_live(id: u64) -> bool {
    with_levels(|l| l.contains(&id))
}

/// Runs `f` with levels `index` and above switched off on this thread.
pub(crate) fn below_level<R>(index: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            CEILING.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CEILING.with(|c| c.replace(index.min(c.get()))));
    f()
}

impl Tensor {
    /// The tangent at the level with this id, if that level is live.
    pub(crate) fn tangent_at(&self, id: u64) -> Option<Tensor> {
        let t = self.0.meta.lock().tangents.iter().find(|(l, _)| *l == id).map(|(_, t)| t.clone());
        t.filter(|_| is_live(id))
    }

    /// Sets (or with `None` removes) the tangent at the level with this id; tangents of levels
    /// that are gone are dropped on the way (after the lock: NOTE [No Python under a tensor lock]).
    pub(crate) fn set_tangent_at(&self, id: u64, tangent: Option<Tensor>) {
        let live: Vec<u64> = with_levels(<[u64]>::to_vec);
        let removed = {
            let mut m = self.0.meta.lock();
            let old = std::mem::take(&mut m.tangents);
            let (keep, removed): (Vec<_>, Vec<_>) = old.into_iter().partition(|(l, _)| *l != id && live.contains(l));
            m.tangents = keep;
            if let Some(t) = tangent {
                m.tangents.push((id, t));
            }
            removed
        };
        drop(removed);
    }

    /// Whether this tensor has a tangent at a level visible on this thread.
    pub(crate) fn has_visible_tangent(&self) -> bool {
        if !any_level() || self.0.meta.lock().tangents.is_empty() {
            return false;
        }
        visible_levels().iter().any(|(_, id)| self.tangent_at(*id).is_some())
    }

    /// The tangent at level `index` (the last one by default): `unpack_dual`'s tangent.
    pub fn tangent(&self, index: Option<i64>) -> Result<Option<Tensor>> {
        if !any_level() {
            return match index {
                None => Ok(None),
                Some(_) => Err(Error::autograd("Invalid level given to _fw_primal")),
            };
        }
        let id = level_id(index, "_fw_primal")?;
        if tangents_hidden() {
            return Ok(None);
        }
        Ok(self.tangent_at(id))
    }

    /// The primal of a dual tensor at level `index`: a view of it without that level's tangent
    /// (the tensor itself when it has none), as `unpack_dual`'s primal.
    pub fn primal(&self, index: Option<i64>) -> Result<Tensor> {
        if !any_level() {
            return Ok(self.clone());
        }
        let id = level_id(index, "_fw_primal")?;
        if self.tangent_at(id).is_none() {
            return Ok(self.clone());
        }
        let out = self.view_as_alias()?;
        out.set_tangent_at(id, None);
        Ok(out)
    }

    /// A dual tensor: a view of this tensor (the primal) with `tangent` at level `index` (the last
    /// one by default). The tangent is kept as it is when it is laid out as the primal, else
    /// copied into that layout, so that views of the dual tensor carry views of its tangent.
    pub fn make_dual(&self, tangent: &Tensor, index: Option<i64>) -> Result<Tensor> {
        if !any_level() {
            return Err(Error::autograd(
                "Trying to create a dual Tensor for forward AD but no level exists, make sure to \
                 enter_dual_level() first.",
            ));
        }
        let id = level_id(index, "_make_dual")?;
        if !self.dtype().is_float() {
            return Err(Error::value(format!(
                "Expected primal to be floating point or complex, but got: tapegrad.{}",
                self.dtype().name()
            )));
        }
        if !tangent.dtype().is_float() {
            return Err(Error::value(format!(
                "Expected tangent to be floating point or complex, but got: tapegrad.{}",
                tangent.dtype().name()
            )));
        }
        if tangent.shape() != self.shape() {
            return Err(Error::shape(format!(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, \
                 this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.",
                self.shape(),
                tangent.shape()
            )));
        }
        if tangent.tangent_at(id).is_some() {
            let index = with_levels(|l| l.iter().position(|&l| l == id).unwrap_or(0));
            return Err(Error::autograd(format!(
                "Setting a forward grad that itself has a forward gradient at the same level{index} is not supported."
            )));
        }
        let out = self.view_as_alias()?;
        if tangents_hidden() {
            // no tangent under inference mode or with forward grad off (as PyTorch's make_dual)
            return Ok(out);
        }
        let tangent = same_layout(self, tangent)?;
        out.set_tangent_at(id, Some(tangent));
        Ok(out)
    }

    /// A differentiable alias (PyTorch's `alias`/`view_as`): same memory, the input's history.
    fn view_as_alias(&self) -> Result<Tensor> {
        self.view(&self.shape().iter().map(|&d| d as isize).collect::<Vec<_>>())
    }
}

/// `tangent` laid out as `primal` in a storage of the same size (the tangent itself when it
/// already is), so that a view's layout applies to both.
fn same_layout(primal: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    if has_same_meta(primal, tangent) {
        return Ok(tangent.clone());
    }
    let buffer_len = primal.storage().read().len();
    let storage = crate::tensor::Tensor::zeros(&[buffer_len], tangent.dtype())?;
    let out = storage.alias_with_layout(primal.layout().clone());
    let _off = GradModeGuard::no_grad();
    crate::ops::kernel::write_into(&out, &tangent.detach())?;
    // A tangent that requires grad keeps its history through a differentiable copy.
    if tangent.requires_grad() && is_grad_enabled() {
        return tangent.clone_tensor();
    }
    Ok(out)
}

/// True when `t` is laid out in its storage exactly as `primal` is in its own, in a storage of
/// the same size.
pub(crate) fn has_same_meta(primal: &Tensor, t: &Tensor) -> bool {
    primal.layout() == t.layout()
        && primal.storage().read().len() == t.storage().read().len()
        && primal.dtype() == t.dtype()
}

/// True when some input has a tangent at a level visible on this thread (cheap when none is live).
pub(crate) fn active(inputs: &[&Tensor]) -> bool {
    any_level() && inputs.iter().any(|t| t.has_visible_tangent())
}

/// The error for an operation without a forward rule, in PyTorch's words.
pub(crate) fn unsupported(name: &str) -> Error {
    let op = name.strip_suffix("Backward").unwrap_or(name);
    Error::NotImplemented(format!("Trying to use forward AD with {op} that does not support it."))
}

/// Computes the outputs' tangents of `outputs = op(inputs)` for every visible level at which an
/// input has one, with `rule(tangents) -> output tangents`. Outputs that are not floating point
/// get none.
pub(crate) fn propagate(
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    mut rule: impl FnMut(&[Option<Tensor>]) -> Result<Vec<Option<Tensor>>>,
) -> Result<()> {
    for (index, id) in visible_levels() {
        let tangents: Vec<Option<Tensor>> = inputs.iter().map(|t| t.tangent_at(id)).collect();
        if tangents.iter().all(Option::is_none) {
            continue;
        }
        let out = below_level(index, || rule(&tangents))?;
        for (o, t) in outputs.iter().zip(out) {
            if o.dtype().is_float() {
                if let Some(t) = t {
                    let t = if t.dtype() != o.dtype() && !t.dtype().is_float() { t.to_dtype(o.dtype())? } else { t };
                    o.set_tangent_at(id, Some(t));
                }
            }
        }
    }
    Ok(())
}

/// The view of `t`'s tangent that `view` is of `t`, when `view` shares `t`'s memory and the tangent
/// is laid out as `t`: the tangent of a view is then a view of the tangent, so that an in-place
/// write through either reaches the base's tangent.
fn view_tangent(t: &Tensor, tangent: &Tensor, view: &Tensor) -> Option<Tensor> {
    // A tangent that carries an outer level's tangent (a jvp of a jvp) or has history goes
    // through the differentiable fallback: an alias would carry neither.
    if !view.shares_storage(t)
        || !has_same_meta(t, tangent)
        || (is_grad_enabled() && tangent.requires_grad())
        || tangent.has_visible_tangent()
    {
        return None;
    }
    Some(tangent.alias_with_layout(view.layout().clone()))
}

/// Views: each output that shares an input's memory gets the view of that input's tangent; other
/// outputs go through `fallback`.
pub(crate) fn propagate_views(
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    mut fallback: impl FnMut(&[Option<Tensor>]) -> Result<Vec<Option<Tensor>>>,
) -> Result<()> {
    propagate(inputs, outputs, |tangents| {
        let mut views = Vec::with_capacity(outputs.len());
        let mut all = true;
        for o in outputs {
            let v = inputs.iter().zip(tangents).find_map(|(i, t)| t.as_ref().and_then(|t| view_tangent(i, t, o)));
            all &= v.is_some() || !o.dtype().is_float();
            views.push(v);
        }
        if all {
            return Ok(views);
        }
        let computed = fallback(tangents)?;
        Ok(views.into_iter().zip(computed).map(|(v, c)| v.or(c)).collect())
    })
}

/// A sink for the edges of the throw-away node below (never run).
struct Sink;

impl Backward for Sink {
    fn apply(&self, _node: &Node, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Ok(Vec::new())
    }
}

/// Builds a node for `formula` whose every input has an edge (so that the formula computes every
/// input's gradient), outputs saved as plain values; used to derive a forward rule from it.
pub(crate) fn formula_node(
    name: &str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> Arc<Node> {
    let sink = Arc::new(Node::new(
        std::borrow::Cow::Borrowed("ForwardADSink"),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Box::new(Sink),
    ));
    let edges = inputs.iter().map(|_| Some(Edge { node: sink.clone(), input_nr: 0 })).collect();
    let input_meta = inputs.iter().map(|t| Some(TensorMeta::of(t))).collect();
    let saves = saves
        .into_iter()
        .map(|s| match s {
            Save::Output(i) => Save::Input(outputs[i].clone()),
            s => s,
        })
        .collect();
    let (node, _) = super::record::try_node_with_edges(
        std::borrow::Cow::Owned(name.to_string()),
        edges,
        input_meta,
        outputs,
        formula,
        saves,
    );
    node
}

/// True when every element of `t` is zero.
fn all_zero(t: &Tensor) -> bool {
    t.to_f64_vec().map(|v| v.iter().all(|&x| x == 0.0)).unwrap_or(false)
}

/// The output tangents `J t` of the operation behind `node`, from its backward formula (NOTE
/// [Tangent propagation]). Inputs whose tangent is `None` contribute nothing; an input with a
/// tangent but no edge on `node` is an error (the caller builds a node where every such input has
/// one).
pub(crate) fn jvp_from_backward(
    node: &Node,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    tangents: &[Option<Tensor>],
) -> Result<Vec<Option<Tensor>>> {
    let name = node.name().to_string();
    if !node.formula().differentiable_twice() {
        return Err(unsupported(&name));
    }
    // Recorded when grad mode is on and something it depends on requires grad.
    let create_graph = is_grad_enabled()
        && (inputs.iter().any(|t| t.requires_grad()) || tangents.iter().flatten().any(|t| t.requires_grad()));
    let _on = GradModeGuard::new(true);
    let seeds: Vec<Option<Tensor>> = outputs
        .iter()
        .map(|o| {
            // Any value serves (the formula is linear in it); ones, so that a formula that is not
            // recorded (it cannot be differentiated) shows as a gradient that does not require grad
            // and is not zero.
            if o.dtype().is_float() {
                Tensor::ones(o.shape(), o.dtype()).and_then(|z| z.requires_grad_(true)).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<_>>()?;
    let grads = node.apply(seeds.clone())?;
    let mut total: Option<Tensor> = None;
    for (i, t) in tangents.iter().enumerate() {
        let (Some(t), Some(Some(g))) = (t, grads.get(i)) else { continue };
        if node.next_edges().get(i).is_none_or(Option::is_none) {
            return Err(Error::autograd(format!("internal error: forward AD through {name} lost an input")));
        }
        if !g.requires_grad() {
            if all_zero(g) {
                continue;
            }
            return Err(unsupported(&name));
        }
        // A formula may return a gradient of the broadcast shape (the engine sums it down to the
        // input's): the tangent is then broadcast the same way.
        let t = t.to_dtype(g.dtype())?;
        let (g, t) = if g.shape() == t.shape() {
            (g.clone(), t)
        } else if let Ok(te) = t.expand(g.shape()) {
            (g.clone(), te)
        } else {
            (g.expand(t.shape())?, t)
        };
        let term = g.mul(&t)?.sum(None, false)?;
        total = Some(match total {
            None => term,
            Some(s) => s.add(&term)?,
        });
    }
    let leaves: Vec<Tensor> = seeds.iter().flatten().cloned().collect();
    let zeros = || -> Result<Vec<Option<Tensor>>> {
        outputs
            .iter()
            .map(|o| if o.dtype().is_float() { Tensor::zeros(o.shape(), o.dtype()).map(Some) } else { Ok(None) })
            .collect()
    };
    let Some(total) = total else { return zeros() };
    if leaves.is_empty() {
        return zeros();
    }
    let got = super::engine::grad(&[total], &leaves, &[None], false, create_graph, true)?;
    let mut got = got.into_iter();
    let _restore = GradModeGuard::new(create_graph);
    outputs
        .iter()
        .map(|o| {
            if !o.dtype().is_float() {
                return Ok(None);
            }
            match got.next().flatten() {
                Some(t) if create_graph => Ok(Some(t)),
                // the outer levels' tangents stay (a jvp of a jvp: NOTE [Tangent propagation])
                Some(t) => Ok(Some(detach_keeping_tangents(&t))),
                None => Tensor::zeros(o.shape(), o.dtype()).map(Some),
            }
        })
        .collect()
}

/// After an in-place write to `t`: its tangent at level `id` becomes `new` (the written value's
/// tangent), written in place into the tangent it had, so that the views sharing that tangent
/// (a base's, a view's) see it. A view of a dual base without a tangent of its own writes into the
/// base's tangent (made of zeros first when the base has none). Without `new`, an existing tangent
/// is zeroed where the write happened.
pub(crate) fn write_tangent(t: &Tensor, id: u64, new: Option<Tensor>) -> Result<()> {
    let existing = t.tangent_at(id);
    let Some(new) = new else {
        if let Some(old) = existing {
            let _off = GradModeGuard::no_grad();
            crate::ops::kernel::write_into(&old, &Tensor::zeros(old.shape(), old.dtype())?)?;
        }
        return Ok(());
    };
    let grad_on = is_grad_enabled();
    let _off = GradModeGuard::no_grad();
    let target = match (existing, t.base()) {
        (Some(old), _) if has_same_meta(t, &old) => old,
        (_, Some(base)) => {
            let base_tangent = match base.tangent_at(id) {
                Some(bt) if has_same_meta(base, &bt) => bt,
                _ => {
                    let zeros = Tensor::zeros(&[base.storage().read().len()], t.dtype())?;
                    let bt = zeros.alias_with_layout(base.layout().clone());
                    if let Some(old) = base.tangent_at(id) {
                        crate::ops::kernel::write_into(&bt, &old.detach())?;
                    }
                    base.set_tangent_at(id, Some(bt.clone()));
                    bt
                }
            };
            let view = base_tangent.alias_with_layout(t.layout().clone());
            t.set_tangent_at(id, Some(view.clone()));
            view
        }
        (_, None) => {
            // The tensor's own memory: the value written may be another tensor's tangent.
            let fresh = if new.requires_grad() && grad_on {
                let _on = GradModeGuard::new(true);
                new.clone_tensor()?
            } else {
                let zeros = Tensor::zeros(&[t.storage().read().len()], new.dtype())?;
                let fresh = zeros.alias_with_layout(t.layout().clone());
                crate::ops::kernel::write_into(&fresh, &new.detach())?;
                fresh
            };
            t.set_tangent_at(id, Some(fresh));
            return Ok(());
        }
    };
    crate::ops::kernel::write_into(&target, &new.detach())
}

thread_local! {
    /// Set while a backward formula is made only to derive a forward rule from it: it must save
    /// what every input's gradient needs, not only what the inputs requiring grad need.
    static SAVE_ALL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `make` (an operation's formula maker) so that the formula saves for every input.
pub(crate) fn saving_all<R>(make: impl FnOnce() -> R) -> R {
    let prev = SAVE_ALL.with(|c| c.replace(true));
    let r = make();
    SAVE_ALL.with(|c| c.set(prev));
    r
}

/// Whether an operation must prepare `t`'s gradient: it requires grad, or it carries a tangent
/// (or a forward rule is being derived from the formula, see `saving_all`).
pub(crate) fn wants_grad(t: &Tensor) -> bool {
    t.requires_grad() || SAVE_ALL.with(Cell::get) || t.has_visible_tangent()
}

/// `t.detach()` with `t`'s tangents: a saved output keeps them, so that differentiating a backward
/// formula that reads it sees its tangent (forward-over-reverse).
pub(crate) fn detach_keeping_tangents(t: &Tensor) -> Tensor {
    let d = t.detach();
    if any_level() {
        let tangents = t.0.meta.lock().tangents.clone();
        if !tangents.is_empty() {
            d.0.meta.lock().tangents = tangents;
        }
    }
    d
}

/// After an operation's outputs got their tangents: the copies of them that `node` saved get
/// them too (a saved output is kept detached, without the tangents it did not have yet).
pub(crate) fn give_saved_outputs_tangents(node: &Node, outputs: &[&Tensor]) {
    node.with_saved(|saved| {
        for s in saved.into_iter().flatten() {
            if let (Some(i), Some(copy)) = (s.output_nr(), s.peek()) {
                if let Some(o) = outputs.get(i) {
                    let tangents = o.0.meta.lock().tangents.clone();
                    let old = std::mem::replace(&mut copy.0.meta.lock().tangents, tangents);
                    drop(old);
                }
            }
        }
    });
}
