//! Custom operations: the Rust trait behind every user-defined forward/backward pair. Python's
//! `tg.Function`, `autograd_function` and `custom_gradient` are implementations of this same trait
//! (`src/python/function.rs`), so the engine runs them like any other node.

use std::borrow::Cow;
use std::sync::Arc;

use super::grad_mode::{is_grad_enabled, GradModeGuard};
use super::node::{Backward, Node};
use super::record::{build_node, try_node_with_parts, Save};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// What `forward` may tell the engine (API.md §3.2).
pub struct ForwardCtx {
    needs_input_grad: Vec<bool>,
    to_save: Option<Vec<Tensor>>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    materialize_grads: bool,
}

impl ForwardCtx {
    fn new(needs_input_grad: Vec<bool>) -> Self {
        ForwardCtx {
            needs_input_grad,
            to_save: None,
            dirty: Vec::new(),
            non_differentiable: Vec::new(),
            materialize_grads: true,
        }
    }

    /// Keeps tensors for backward, version-checked when read back. At most once per call.
    pub fn save_for_backward(&mut self, tensors: &[Tensor]) -> Result<()> {
        if self.to_save.is_some() {
            return Err(Error::autograd("save_for_backward can be called at most once in forward"));
        }
        self.to_save = Some(tensors.to_vec());
        Ok(())
    }

    /// Declares inputs that `forward` modified in place (they must also be returned).
    pub fn mark_dirty(&mut self, tensors: &[Tensor]) {
        self.dirty.extend(tensors.iter().cloned());
    }

    /// Declares outputs that get no gradient.
    pub fn mark_non_differentiable(&mut self, tensors: &[Tensor]) {
        self.non_differentiable.extend(tensors.iter().cloned());
    }

    /// When false, missing output gradients reach backward as `None` instead of zeros.
    pub fn set_materialize_grads(&mut self, flag: bool) {
        self.materialize_grads = flag;
    }

    /// Whether input `i` needs a gradient.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
}

/// What `backward` can read.
pub struct BackwardCtx<'a> {
    node: &'a Node,
    needs_input_grad: &'a [bool],
}

impl BackwardCtx<'_> {
    /// The saved tensors, version-checked.
    pub fn saved_tensors(&self) -> Result<Vec<Tensor>> {
        self.node.unpack_saved()
    }
    /// Whether input `i` needs a gradient.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
    /// The node being run.
    pub fn node(&self) -> &Node {
        self.node
    }
}

/// A user-defined operation. One value is created per call, so `forward` may keep state in `self`
/// for `backward` (the `ctx.constant = c` of Python).
pub trait CustomOp: Send + Sync + 'static {
    /// The name of the node is this plus `Backward`.
    fn name(&self) -> Cow<'static, str>;

    /// The node's name, `name()` plus `Backward`; an operation called often may keep it made.
    fn node_name(&self) -> Cow<'static, str> {
        Cow::Owned(format!("{}Backward", self.name()))
    }

    /// Computes the outputs. Inputs arrive detached (same data, no history) with grad mode off,
    /// unless `detach_inputs` says otherwise.
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>>;

    /// Whether `forward` gets detached copies of the inputs (true) or the caller's tensors
    /// themselves, with their history (false: PyTorch's behaviour for a Python `Function`, whose
    /// forward runs under no_grad on the caller's objects). Either way grad mode is off inside.
    fn detach_inputs(&self) -> bool {
        true
    }

    /// One gradient per input from one gradient per output. The default says it is not supported.
    fn backward(&self, _ctx: &BackwardCtx<'_>, _grad_outputs: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(Error::autograd(format!("the custom operation {} does not implement backward", self.name())))
    }

    /// The name of tensor input `i`, for messages.
    fn input_name(&self, i: usize) -> String {
        format!("input {i}")
    }

    /// Frees state other than saved tensors when the graph is released.
    fn release(&self) {}

    /// False when `backward` must run on the engine's own thread, one node at a time.
    fn parallel_safe(&self) -> bool {
        true
    }

    /// True when `backward` cannot itself be differentiated.
    fn once_differentiable(&self) -> bool {
        false
    }

    /// For each value `forward` returned, whether it is a tensor (None: all were); node hooks then
    /// get a None gradient for the values that are not.
    fn output_slots(&self) -> Option<Vec<bool>> {
        None
    }

    /// Forward mode: one tangent per output from one tangent per input (zeros for an input
    /// without one), called after `forward` when an input carries a tangent. The default says it
    /// is not supported, in PyTorch's words.
    fn jvp(&self, _tangents: Vec<Tensor>) -> Result<Vec<Option<Tensor>>> {
        Err(Error::NotImplemented(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD.".into(),
        ))
    }

    /// Called once `jvp` has run for every dual level at which an input carries a tangent (it runs
    /// once per level): what was kept for it only may be freed.
    fn jvp_done(&self) {}
}

struct CustomBackward<Op: CustomOp> {
    op: Op,
    needs_input_grad: Vec<bool>,
    materialize_grads: bool,
}

impl<Op: CustomOp> Backward for CustomBackward<Op> {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // (Only when one is missing: the conversion cost about 300 instructions per W3 call.)
        let grads = if self.materialize_grads && grads.iter().any(Option::is_none) {
            grads
                .into_iter()
                .zip(&node.output_meta)
                .map(|(g, meta)| match g {
                    Some(g) => Ok(Some(g)),
                    None => Tensor::zeros(&meta.shape, meta.dtype).map(Some),
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            grads
        };
        let ctx = BackwardCtx { node, needs_input_grad: &self.needs_input_grad };
        self.op.backward(&ctx, grads)
    }
    fn release(&self) {
        self.op.release();
    }
    fn input_name(&self, i: usize) -> String {
        self.op.input_name(i)
    }
    fn differentiable_twice(&self) -> bool {
        !self.op.once_differentiable()
    }
    fn custom_op(&self) -> Option<&dyn std::any::Any> {
        Some(&self.op)
    }
    fn parallel_safe(&self) -> bool {
        self.op.parallel_safe()
    }
    fn output_slots(&self) -> Option<Vec<bool>> {
        self.op.output_slots()
    }
}

/// Runs a custom operation and records it (API.md §3): inputs detached and grad mode off inside
/// `forward`; dirty inputs checked, bumped and given this node's history; non-differentiable outputs
/// left without history; saved outputs kept without a reference cycle.
pub fn apply_custom<Op: CustomOp>(op: Op, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    apply_custom_with_node(op, inputs).map(|(outputs, _)| outputs)
}

/// `apply_custom`, also returning the recorded node (none when nothing needed a gradient).
pub fn apply_custom_with_node<Op: CustomOp>(mut op: Op, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Option<Arc<Node>>)> {
    let recording = is_grad_enabled();
    let needs: Vec<bool> = inputs.iter().map(|t| recording && t.requires_grad()).collect();
    let any_needs = needs.iter().any(|&n| n);
    // The ctx lends `needs` to forward and gives it back for the formula (one vector, not two).
    let mut ctx = ForwardCtx::new(needs);
    // The edges to the inputs' histories are taken before forward runs, as PyTorch does: forward may
    // write an input in place (mark_dirty), and a view of that input passed as another input must
    // keep the history it had, then find its base's new history when it is next read (its version
    // moved on).
    // (Loops of pushes, here and below: an iterator's `collect` into an inline vector cost about 70
    // instructions each, six per call of W3.)
    let mut edges = super::node::Edges::new();
    if any_needs {
        for t in inputs {
            edges.push(super::node::gradient_edge(t));
        }
    }
    let detached: Cow<'_, [Tensor]> = if op.detach_inputs() {
        Cow::Owned(inputs.iter().map(|t| t.detach()).collect())
    } else {
        Cow::Borrowed(inputs)
    };
    let mut versions_before: smallvec::SmallVec<[u64; 4]> = smallvec::SmallVec::new();
    for t in inputs {
        versions_before.push(t.version());
    }
    let raw = {
        let _off = GradModeGuard::no_grad();
        op.forward(&mut ctx, &detached)?
    };
    let mut run = ForwardRun { inputs, detached, raw, dirty_inputs: Vec::new() };
    run.dirty_inputs = run.check_dirty(&op, &ctx.dirty, &versions_before, recording, any_needs)?;
    let outputs = run.output_handles();
    let is_non_diff = |o: &Tensor| ctx.non_differentiable.iter().any(|n| n.same(o));
    let mut differentiable: smallvec::SmallVec<[bool; 4]> = smallvec::SmallVec::new();
    for o in &run.raw {
        differentiable.push(!is_non_diff(o) && o.dtype().is_float());
    }
    if recording {
        run.mark_view_outputs(&op, &outputs, &differentiable);
    }
    let fwd = forward_mode(&op, inputs, &outputs, &differentiable);
    op.jvp_done();
    fwd?;
    if !any_needs {
        return Ok((outputs, None));
    }
    let saves = run.saves(ctx.to_save.take().unwrap_or_default(), &outputs, &differentiable);
    let name = op.node_name();
    let needs = std::mem::take(&mut ctx.needs_input_grad);
    let formula = CustomBackward { op, needs_input_grad: needs, materialize_grads: ctx.materialize_grads };
    let mut output_refs: smallvec::SmallVec<[&Tensor; 4]> = smallvec::SmallVec::new();
    for o in &outputs {
        output_refs.push(o);
    }
    let mut input_meta = super::node::InputMetas::new();
    for t in inputs {
        input_meta.push(Some(super::node::TensorMeta::of(t)));
    }
    let (node, error) = try_node_with_parts(name, edges, input_meta, &output_refs, Box::new(formula), saves);
    drop(output_refs);
    if let Some(e) = error {
        return Err(e);
    }
    run.set_history(&node, &outputs, &differentiable);
    Ok((outputs, Some(node)))
}

/// Forward mode through a custom operation: its `jvp` gives the differentiable outputs' tangents
/// (NOTE [Tangent propagation] in `forward.rs`), checked for count and shape.
fn forward_mode<Op: CustomOp>(op: &Op, inputs: &[Tensor], outputs: &[Tensor], differentiable: &[bool]) -> Result<()> {
    if !super::forward::any_level() {
        return Ok(());
    }
    let input_refs: smallvec::SmallVec<[&Tensor; 4]> = inputs.iter().collect();
    if !super::forward::active(&input_refs) {
        return Ok(());
    }
    let output_refs: smallvec::SmallVec<[&Tensor; 4]> = outputs.iter().collect();
    super::forward::propagate(&input_refs, &output_refs, |tangents| {
        let tangents = tangents
            .iter()
            .zip(inputs)
            .map(|(t, x)| match t {
                Some(t) => Ok(t.clone()),
                None => Tensor::zeros(x.shape(), x.dtype()),
            })
            .collect::<Result<Vec<_>>>()?;
        let out = op.jvp(tangents)?;
        if out.len() != outputs.len() {
            return Err(Error::CustomFunction(format!(
                "{}.jvp returned an incorrect number of tangents: expected {} (one per output of forward), got {}",
                op.name(),
                outputs.len(),
                out.len()
            )));
        }
        out.into_iter()
            .zip(outputs)
            .zip(differentiable)
            .map(|((t, o), &d)| match t {
                Some(t) if d && t.shape() != o.shape() => Err(Error::shape(format!(
                    "Trying to set a forward gradient that has a different size than that of the original Tensor, \
                     this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.",
                    o.shape(),
                    t.shape()
                ))),
                Some(t) if d => Ok(Some(t)),
                _ => Ok(None),
            })
            .collect()
    })
}

/// A custom operation's forward as it ran: the caller's inputs, the detached copies `forward` saw,
/// what it returned, and which inputs it marked dirty.
struct ForwardRun<'a> {
    inputs: &'a [Tensor],
    /// The inputs themselves when `forward` got them as they are (`CustomOp::detach_inputs`).
    detached: Cow<'a, [Tensor]>,
    raw: Vec<Tensor>,
    dirty_inputs: Vec<usize>,
}

impl ForwardRun<'_> {
    /// Which input `t` is (the caller's tensor or the copy `forward` saw).
    fn find_input(&self, t: &Tensor) -> Option<usize> {
        (0..self.inputs.len()).find(|&j| t.same(&self.inputs[j]) || t.same(&self.detached[j]))
    }

    /// Whether `t` is an input marked dirty.
    fn is_dirty(&self, t: &Tensor) -> bool {
        self.find_input(t).is_some_and(|j| self.dirty_inputs.contains(&j))
    }

    /// The input whose memory `o` shares, when `o` is not a dirty input returned as it is.
    fn viewed_input(&self, o: &Tensor) -> Option<usize> {
        match self.find_input(o) {
            Some(j) if self.dirty_inputs.contains(&j) => None,
            _ => (0..self.inputs.len()).find(|&j| o.shares_storage(&self.inputs[j])),
        }
    }

    /// The inputs marked dirty, by number. Dirty inputs: must be inputs, must be returned, must not
    /// be leaves that require grad.
    fn check_dirty<Op: CustomOp>(
        &self,
        op: &Op,
        dirty: &[Tensor],
        versions_before: &[u64],
        recording: bool,
        any_needs: bool,
    ) -> Result<Vec<usize>> {
        let mut dirty_inputs = Vec::new();
        for d in dirty {
            let name = op.name();
            let j = self
                .find_input(d)
                .ok_or_else(|| Error::autograd(format!("{name}: mark_dirty only accepts input tensors of forward")))?;
            self.check_dirty_input(op, j, recording, any_needs)?;
            // A write through one of our in-place operations already bumped the version; a write that
            // bypassed them (through raw memory) did not, so mark_dirty does it.
            if self.inputs[j].version() == versions_before[j] {
                let op = Cow::Owned(format!("{name}.forward (mark_dirty)"));
                self.inputs[j].storage().bump_version(op, super::anomaly::current_location());
            }
            dirty_inputs.push(j);
        }
        Ok(dirty_inputs)
    }

    /// Refuses input `j` as a dirty input where PyTorch does.
    fn check_dirty_input<Op: CustomOp>(&self, op: &Op, j: usize, recording: bool, any_needs: bool) -> Result<()> {
        let (name, inputs) = (op.name(), self.inputs);
        if !self.raw.iter().any(|o| self.find_input(o) == Some(j)) {
            return Err(Error::autograd(format!(
                "{name}: an input marked dirty with mark_dirty must be returned as an output of forward \
                 ({} was not)",
                op.input_name(j)
            )));
        }
        if recording && inputs[j].is_leaf() && inputs[j].requires_grad() {
            return Err(Error::autograd(format!(
                "{name}: a leaf tensor that requires grad ({}) is being used in an in-place operation \
                 (mark_dirty).",
                op.input_name(j)
            )));
        }
        let input_refs: Vec<&Tensor> = inputs.iter().collect();
        inputs[j].check_inplace("mark_dirty", inputs[j].inplace_records(&input_refs))?;
        // The base of a dirty view gets a CopySlices node whose new value is this node's output;
        // with several outputs there would be no single output to read it from (PyTorch refuses too).
        if any_needs && inputs[j].base().is_some() && self.raw.len() > 1 {
            return Err(Error::autograd(format!(
                "{name}: if your Function modifies inplace an input that is a view of another Tensor, your \
                 Function cannot return more than one Tensor. This is not supported by the current autograd \
                 engine. You should either make sure the input is not a view (using .clone() for example) or \
                 make your Function only return one Tensor (potentially splitting it into two Functions: one \
                 doing the inplace that returns the view and one doing the other operations)."
            )));
        }
        Ok(())
    }

    /// The handles returned to the caller. An output that shares memory with an input (the input
    /// returned as it is, or a view of it) is a view of that input, and a view of a tensor made inside
    /// forward stays a view of it, so that in-place writes to it or to its base are seen as such (and
    /// refused where they would override this backward).
    fn output_handles(&self) -> Vec<Tensor> {
        let inputs = self.inputs;
        self.raw
            .iter()
            .map(|o| match (self.find_input(o), self.viewed_input(o)) {
                (Some(j), _) if self.dirty_inputs.contains(&j) => inputs[j].clone(),
                (_, Some(j)) => inputs[j].alias_with_layout(o.layout().clone()),
                (Some(_), None) => o.detach(),
                (None, None) => match o.base() {
                    Some(base) => base.alias_with_layout(o.layout().clone()),
                    None if o.requires_grad() => o.detach(),
                    None => o.clone(),
                },
            })
            .collect()
    }

    /// Records how the differentiable outputs that are views were made (while recording).
    fn mark_view_outputs<Op: CustomOp>(&self, op: &Op, outputs: &[Tensor], differentiable: &[bool]) {
        let raw = &self.raw;
        let view_outputs: Vec<usize> = (0..raw.len())
            .filter(|&i| {
                differentiable[i]
                    && (self.viewed_input(&raw[i]).is_some() || (raw[i].base().is_some() && !self.is_dirty(&raw[i])))
            })
            .collect();
        // As in PyTorch, a view among several differentiable outputs is a multi-output view; under
        // no_grad the views stay no-grad-mode views (`alias_with_layout` made them so).
        let several_outputs = differentiable.iter().filter(|&&d| d).count() > 1;
        for i in view_outputs {
            let (name, nr) = (op.name().into_owned(), i);
            outputs[i].set_view_creation(if several_outputs {
                crate::tensor::ViewCreation::MultiOutput { name, nr }
            } else {
                crate::tensor::ViewCreation::InCustomFunction { name, nr }
            });
        }
    }

    /// How each tensor passed to `save_for_backward` is kept.
    fn saves(&self, to_save: Vec<Tensor>, outputs: &[Tensor], differentiable: &[bool]) -> Vec<Save> {
        to_save
            .into_iter()
            .map(|t| {
                // An output that gets this node's history (a dirty input returned is one) is saved
                // without its node, else the node would own itself; a non-differentiable output has no
                // history to restore, so it is kept as it is.
                let out = self.raw.iter().position(|o| o.same(&t)).or_else(|| outputs.iter().position(|o| o.same(&t)));
                match (out, self.find_input(&t)) {
                    (Some(i), None) if differentiable[i] => Save::Output(i),
                    (Some(i), Some(j)) if differentiable[i] && self.dirty_inputs.contains(&j) => Save::Output(i),
                    (_, Some(j)) => Save::Input(self.inputs[j].clone()),
                    (_, None) => Save::Input(t),
                }
            })
            .collect()
    }

    /// Gives the differentiable outputs the recorded node as their history.
    fn set_history(&self, node: &Arc<Node>, outputs: &[Tensor], differentiable: &[bool]) {
        for (i, o) in outputs.iter().enumerate() {
            if differentiable[i] {
                o.set_history(node.clone(), i);
                // A dirty view: its base now holds this node's output in the view's region.
                if let (Some(base), true) = (o.base(), self.is_dirty(&self.raw[i])) {
                    crate::ops::as_strided::rebase_view(base, o, o);
                }
            }
        }
    }
}

/// The node put behind gradients computed by a `once_differentiable` backward under
/// `create_graph`: differentiating through it is an error, raised only if someone tries.
struct DelayedError {
    name: String,
}

impl Backward for DelayedError {
    fn apply(&self, _node: &Node, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(Error::autograd(format!(
            "trying to differentiate twice a function that was marked with @once_differentiable ({})",
            self.name
        )))
    }
}

/// Wraps the gradients of a `once_differentiable` node so that a second differentiation fails.
pub(crate) fn delay_error(name: &str, upstream: &[Tensor], grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    if upstream.is_empty() {
        return Ok(grads);
    }
    let inputs: Vec<&Tensor> = upstream.iter().collect();
    Ok(grads
        .into_iter()
        .map(|g| {
            g.map(|g| {
                let out = g.detach();
                let node = build_node(
                    Cow::Borrowed("DelayedError"),
                    &inputs,
                    &[&out],
                    Box::new(DelayedError { name: name.to_string() }),
                    Vec::new(),
                );
                out.set_history(node, 0);
                out
            })
        })
        .collect())
}
