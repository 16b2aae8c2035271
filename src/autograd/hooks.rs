//! Gradient hooks: functions that see (and may replace) the gradient of a tensor when the engine
//! computes it, before it is accumulated or captured. A leaf keeps its hooks itself (its
//! accumulator is made lazily and owned by the graph); a non-leaf's hooks sit on its `grad_fn`,
//! keyed by output number. `retain_grad` is a hook that runs after the user's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::node::Node;
use crate::error::{Error, Result};
use crate::tensor::dtype::DType;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{Tensor, TensorImpl};

/// A gradient hook's behaviour. Any `Fn(&Tensor) -> Result<Option<Tensor>>` is one; a binding
/// implements it directly when it must reach the hook's own state (Python's garbage collector
/// visits the callable a Python hook holds).
pub trait HookFn: Send + Sync + 'static {
    /// Returns `Some(new)` to replace the gradient, `None` to keep it.
    fn call(&self, grad: &Tensor) -> Result<Option<Tensor>>;

    /// Runs on an undefined gradient (no gradient reached the tensor in this backward): returns
    /// `Some(new)` to define it, `None` to leave it undefined. The default leaves it undefined.
    fn call_undefined(&self) -> Result<Option<Tensor>> {
        Ok(None)
    }

    /// The hook's name, for messages.
    fn name(&self) -> String {
        "hook".to_string()
    }

    /// The hook itself, for bindings that downcast it.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<F: Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static> HookFn for F {
    fn call(&self, grad: &Tensor) -> Result<Option<Tensor>> {
        self(grad)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A gradient hook: returns `Some(new)` to replace the gradient, `None` to keep it.
pub type GradHook = Arc<dyn HookFn>;

/// What runs on a gradient before its node.
#[derive(Clone)]
pub(crate) enum PreHook {
    /// A user hook.
    User(u64, GradHook),
    /// `retain_grad`: store the gradient on the (non-leaf) tensor.
    Retain(Weak<TensorImpl>),
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where a hook was registered; `remove` takes it away.
pub struct HookHandle {
    target: Target,
    id: u64,
}

enum Target {
    Leaf(Weak<TensorImpl>),
    Node(Weak<Node>),
    NodeFn(Weak<Node>),
    PostAccumulate(Weak<TensorImpl>),
}

/// A hook on a node itself. As a pre-hook it gets the gradients of the node's outputs
/// (`grad_inputs` is None); as a post-hook, also the gradients the node computed for its inputs.
/// It returns replacement gradients (for the outputs before, for the inputs after) or None.
pub trait NodeHookFn: Send + Sync + 'static {
    /// Runs the hook.
    fn call(
        &self,
        grad_inputs: Option<&[Option<Tensor>]>,
        grad_outputs: &[Option<Tensor>],
    ) -> Result<Option<Vec<Option<Tensor>>>>;
    /// The hook itself, for bindings that downcast it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A node hook and whether it runs before (`true`) or after the node.
#[derive(Clone)]
pub(crate) struct NodeHook {
    pub(crate) pre: bool,
    pub(crate) f: Arc<dyn NodeHookFn>,
}

/// A hook that runs after a gradient was accumulated into a leaf's `.grad`; it gets the leaf.
pub trait PostAccumulateHookFn: Send + Sync + 'static {
    /// Runs the hook.
    fn call(&self, leaf: &Tensor) -> Result<()>;
    /// The hook itself, for bindings that downcast it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A post-accumulate-grad hook.
pub type PostAccumulateHook = Arc<dyn PostAccumulateHookFn>;

// NOTE [Hook flags]: the engine asks every node it runs for its hooks: the hooks on its outputs'
// gradients (`pre_hooks`), its own pre-hooks and its post-hooks (`node_hooks`). Nearly every node
// has none, and each question locked a mutex (three per node, about a tenth of the engine's own
// work per node on W2, callgrind). So a node keeps one flag per kind, set under the list's lock
// whenever a hook of that kind is added, and never cleared (a removed hook leaves the flag set and
// the engine then finds the list empty, as before). A clear flag means the list was empty when the
// flag was read, which is what the lock said; a hook registered from another thread while the engine
// runs the node is, with or without the flag, seen or not depending on timing.
/// `Node::hook_flags`: the node's `pre_hooks` may be non-empty.
pub(crate) const HAS_TENSOR_HOOKS: u8 = 1;
/// `Node::hook_flags`: `node_hooks` may hold a pre-hook.
pub(crate) const HAS_NODE_PRE_HOOKS: u8 = 2;
/// `Node::hook_flags`: `node_hooks` may hold a post-hook.
pub(crate) const HAS_NODE_POST_HOOKS: u8 = 4;

impl Node {
    /// Registers a hook on this node: before it runs (`pre`) or after.
    pub fn register_node_hook(self: &Arc<Self>, pre: bool, f: Arc<dyn NodeHookFn>) -> HookHandle {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut hooks = self.node_hooks.lock();
        hooks.push((id, NodeHook { pre, f }));
        self.flag_hooks(if pre { HAS_NODE_PRE_HOOKS } else { HAS_NODE_POST_HOOKS });
        drop(hooks);
        HookHandle { target: Target::NodeFn(Arc::downgrade(self)), id }
    }

    /// Records that hooks of the kinds in `flags` were added (NOTE [Hook flags]); called with the
    /// list's lock held.
    pub(crate) fn flag_hooks(&self, flags: u8) {
        self.hook_flags.fetch_or(flags, Ordering::Release);
    }

    /// Whether hooks of one of the kinds in `flags` may be registered (NOTE [Hook flags]).
    pub(crate) fn may_have_hooks(&self, flags: u8) -> bool {
        self.hook_flags.load(Ordering::Acquire) & flags != 0
    }

    /// Whether any hook is registered on the node or on its outputs' gradients (the flags first,
    /// the locks only when a flag is set: NOTE [Hook flags]).
    pub(crate) fn has_hooks(&self) -> bool {
        (self.may_have_hooks(HAS_TENSOR_HOOKS) && !self.pre_hooks.lock().is_empty())
            || (self.may_have_hooks(HAS_NODE_PRE_HOOKS | HAS_NODE_POST_HOOKS) && !self.node_hooks.lock().is_empty())
    }
}

fn node_hooks(node: &Node, pre: bool) -> Vec<Arc<dyn NodeHookFn>> {
    if !node.may_have_hooks(if pre { HAS_NODE_PRE_HOOKS } else { HAS_NODE_POST_HOOKS }) {
        return Vec::new();
    }
    node.node_hooks.lock().iter().filter(|(_, h)| h.pre == pre).map(|(_, h)| h.f.clone()).collect()
}

fn replaced(
    node: &Node,
    what: &str,
    old: Vec<Option<Tensor>>,
    new: Option<Vec<Option<Tensor>>>,
) -> Result<Vec<Option<Tensor>>> {
    match new {
        None => Ok(old),
        Some(new) if new.len() != old.len() => Err(Error::autograd(format!(
            "a hook on {} returned {} gradients for its {what}, expected {}",
            node.name(),
            new.len(),
            old.len()
        ))),
        Some(new) => Ok(new),
    }
}

/// Runs the node's pre-hooks on the gradients of its outputs (no lock held meanwhile).
pub(crate) fn run_node_pre_hooks(node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    let hooks = node_hooks(node, true);
    if hooks.is_empty() {
        return Ok(grads);
    }
    let slots = node.formula().output_slots();
    let mut grads = spread_to_slots(grads, slots.as_deref());
    for h in hooks {
        let new = h.call(None, &grads)?;
        grads = replaced(node, "outputs", grads, new)?;
    }
    Ok(gather_from_slots(grads, slots.as_deref()))
}

/// One gradient per value the node's forward returned: None for the values that are not tensors
/// (`slots[k]` false), the node's own gradients in order for the others.
fn spread_to_slots(grads: Vec<Option<Tensor>>, slots: Option<&[bool]>) -> Vec<Option<Tensor>> {
    let Some(slots) = slots else { return grads };
    let mut grads = grads.into_iter();
    slots.iter().map(|&is_tensor| if is_tensor { grads.next().flatten() } else { None }).collect()
}

/// The inverse of `spread_to_slots`: what a hook returned for the values that are not tensors is
/// dropped.
fn gather_from_slots(grads: Vec<Option<Tensor>>, slots: Option<&[bool]>) -> Vec<Option<Tensor>> {
    let Some(slots) = slots else { return grads };
    grads.into_iter().zip(slots).filter(|(_, &is_tensor)| is_tensor).map(|(g, _)| g).collect()
}

/// True when the node has post-hooks (the engine then keeps the gradients it was given).
pub(crate) fn has_post_hooks(node: &Node) -> bool {
    node.may_have_hooks(HAS_NODE_POST_HOOKS) && node.node_hooks.lock().iter().any(|(_, h)| !h.pre)
}

/// Runs the node's post-hooks on what it computed.
pub(crate) fn run_node_post_hooks(
    node: &Node,
    mut grad_inputs: Vec<Option<Tensor>>,
    grad_outputs: &[Option<Tensor>],
) -> Result<Vec<Option<Tensor>>> {
    let slots = node.formula().output_slots();
    let spread;
    let grad_outputs = match slots {
        Some(slots) => {
            spread = spread_to_slots(grad_outputs.to_vec(), Some(&slots));
            spread.as_slice()
        }
        None => grad_outputs,
    };
    for h in node_hooks(node, false) {
        let new = h.call(Some(&grad_inputs), grad_outputs)?;
        grad_inputs = replaced(node, "inputs", grad_inputs, new)?;
    }
    Ok(grad_inputs)
}

/// Runs the post-accumulate-grad hooks of a leaf (no lock held meanwhile).
pub(crate) fn run_post_accumulate_hooks(leaf: &Tensor) -> Result<()> {
    let hooks: Vec<PostAccumulateHook> =
        leaf.0.meta.lock().post_accumulate_hooks.iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        h.call(leaf)?;
    }
    Ok(())
}

impl HookHandle {
    /// Removes the hook (idempotent; a no-op once the tensor or node is gone).
    pub fn remove(&self) {
        match &self.target {
            // The removed hook is dropped after the lock (NOTE [No Python under a tensor lock]).
            Target::Leaf(w) => {
                if let Some(t) = w.upgrade() {
                    let removed = {
                        let mut m = t.meta.lock();
                        let pos = m.hooks.iter().position(|(id, _)| *id == self.id);
                        pos.map(|i| m.hooks.remove(i))
                    };
                    drop(removed);
                }
            }
            Target::NodeFn(w) => {
                if let Some(n) = w.upgrade() {
                    let removed = {
                        let mut hooks = n.node_hooks.lock();
                        let pos = hooks.iter().position(|(id, _)| *id == self.id);
                        pos.map(|i| hooks.remove(i))
                    };
                    drop(removed);
                }
            }
            Target::PostAccumulate(w) => {
                if let Some(t) = w.upgrade() {
                    let removed = {
                        let mut m = t.meta.lock();
                        let pos = m.post_accumulate_hooks.iter().position(|(id, _)| *id == self.id);
                        pos.map(|i| m.post_accumulate_hooks.remove(i))
                    };
                    drop(removed);
                }
            }
            Target::Node(w) => {
                if let Some(n) = w.upgrade() {
                    let removed = {
                        let mut hooks = n.pre_hooks.lock();
                        let pos = hooks.iter().position(|(_, h)| matches!(h, PreHook::User(id, _) if *id == self.id));
                        pos.map(|i| hooks.remove(i))
                    };
                    drop(removed);
                }
            }
        }
    }
}

impl Tensor {
    /// Registers `hook` to run on this tensor's gradient each time one is computed.
    pub fn register_hook(&self, hook: GradHook) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::autograd("cannot register a hook on a tensor that doesn't require gradient"));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        match self.grad_fn() {
            None => {
                self.0.meta.lock().hooks.push((id, hook));
                Ok(HookHandle { target: Target::Leaf(Arc::downgrade(&self.0)), id })
            }
            Some(node) => {
                let mut hooks = node.pre_hooks.lock();
                hooks.push((self.output_nr(), PreHook::User(id, hook)));
                node.flag_hooks(HAS_TENSOR_HOOKS);
                drop(hooks);
                Ok(HookHandle { target: Target::Node(Arc::downgrade(&node)), id })
            }
        }
    }

    /// Registers `hook` to run with this leaf after each gradient is accumulated into its `.grad`.
    pub fn register_post_accumulate_grad_hook(&self, hook: PostAccumulateHook) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::autograd("cannot register a hook on a tensor that doesn't require gradient"));
        }
        if self.grad_fn().is_some() {
            return Err(Error::autograd("post accumulate grad hooks cannot be registered on non-leaf tensors"));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.0.meta.lock().post_accumulate_hooks.push((id, hook));
        Ok(HookHandle { target: Target::PostAccumulate(Arc::downgrade(&self.0)), id })
    }

    /// Keeps `.grad` on a non-leaf after backward (a no-op on leaves, which always keep it).
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::autograd("can't retain_grad on Tensor that has requires_grad=False"));
        }
        let Some(node) = self.grad_fn() else { return Ok(()) };
        self.0.meta.lock().retains_grad = true;
        let weak = Arc::downgrade(&self.0);
        let mut hooks = node.pre_hooks.lock();
        if !hooks.iter().any(|(_, h)| matches!(h, PreHook::Retain(w) if w.ptr_eq(&weak))) {
            hooks.push((self.output_nr(), PreHook::Retain(weak)));
            node.flag_hooks(HAS_TENSOR_HOOKS);
        }
        Ok(())
    }
}

/// Moves `t`'s `retain_grad` hook from the node of its old value to `new` (output `nr`).
pub(crate) fn move_retain_hook(t: &Tensor, old: &Node, new: &Node, nr: usize) {
    let weak = Arc::downgrade(&t.0);
    let is_ours = |h: &PreHook| matches!(h, PreHook::Retain(w) if w.ptr_eq(&weak));
    old.pre_hooks.lock().retain(|(_, h)| !is_ours(h));
    let mut hooks = new.pre_hooks.lock();
    if !hooks.iter().any(|(_, h)| is_ours(h)) {
        hooks.push((nr, PreHook::Retain(weak)));
        new.flag_hooks(HAS_TENSOR_HOOKS);
    }
}

/// Runs one hook. As in PyTorch, a hook may replace the gradient but not change its dtype or shape
/// (the engine would otherwise store, e.g., an int64 `.grad` on a float32 leaf).
fn call(hook: &GradHook, g: Tensor) -> Result<Tensor> {
    match hook.call(&g)? {
        None => Ok(g),
        Some(new) if new.dtype() != g.dtype() => Err(Error::autograd(format!(
            "hook '{}' has changed the type of value (was {} got {})",
            hook.name(),
            g.dtype(),
            new.dtype()
        ))),
        Some(new) if new.shape() != g.shape() => Err(Error::shape(format!(
            "hook '{}' has changed the size of value: hook returned a gradient of shape {} for a tensor whose \
             gradient has shape {}",
            hook.name(),
            fmt_shape(new.shape()),
            fmt_shape(g.shape())
        ))),
        Some(new) => Ok(new),
    }
}

/// Runs one hook on a gradient that may be undefined (as in PyTorch, a hook sees an undefined
/// gradient too, as `None` in Python).
/// A gradient it defines must have the tensor's `shape` and `dtype`.
fn call_maybe_undefined(hook: &GradHook, g: Option<Tensor>, shape: &[usize], dtype: DType) -> Result<Option<Tensor>> {
    let g = match g {
        Some(g) => return call(hook, g).map(Some),
        None => hook.call_undefined()?,
    };
    match g {
        Some(new) if new.dtype() != dtype || new.shape() != shape => Err(Error::autograd(format!(
            "hook '{}' returned a gradient of dtype {} and shape {} for a tensor of dtype {dtype} and shape {}",
            hook.name(),
            new.dtype(),
            fmt_shape(new.shape()),
            fmt_shape(shape)
        ))),
        g => Ok(g),
    }
}

/// Runs the hooks that apply to `node`'s incoming gradients: the leaf's own hooks for an
/// accumulator, else the hooks registered on the node's outputs; `retain_grad` last.
pub(crate) fn run_pre_hooks(node: &Node, mut grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    if let Some(leaf) = node.formula().accumulates_into() {
        let hooks: Vec<GradHook> = leaf.0.meta.lock().hooks.iter().map(|(_, h)| h.clone()).collect();
        for h in &hooks {
            grads[0] = call_maybe_undefined(h, grads[0].take(), leaf.shape(), leaf.dtype())?;
        }
        return Ok(grads);
    }
    if !node.may_have_hooks(HAS_TENSOR_HOOKS) {
        return Ok(grads);
    }
    let hooks = node.pre_hooks.lock().clone();
    if hooks.is_empty() {
        return Ok(grads);
    }
    for (nr, h) in hooks.iter() {
        if let (PreHook::User(_, h), Some(slot), Some(meta)) = (h, grads.get_mut(*nr), node.output_meta.get(*nr)) {
            *slot = call_maybe_undefined(h, slot.take(), &meta.shape, meta.dtype)?;
        }
    }
    for (nr, h) in hooks.iter() {
        if let (PreHook::Retain(w), Some(Some(g))) = (h, grads.get(*nr)) {
            if let Some(imp) = w.upgrade() {
                let t = Tensor(imp);
                let g = g.detach();
                super::accumulate::update_grad(&t, |old| match old {
                    None => g.clone_data(),
                    Some(old) => old.add(&g),
                })?;
            }
        }
    }
    Ok(grads)
}
