//! The one place that decides whether an operation is recorded (STYLE.md 5): grad mode on and at
//! least one input requiring grad. Every built-in operation calls `record` after its forward kernel.

use std::borrow::Cow;
use std::sync::Arc;

use super::grad_mode::is_grad_enabled;
use super::node::{gradient_edge, Backward, Edges, InputMetas, Node, OutputMetas, TensorMeta};
use super::saved::{Prepared, SavedTensor};
use crate::tensor::Tensor;

// NOTE [Per-operation overhead]: on small tensors an operation's cost is bookkeeping, not
// arithmetic (issue 19's W2: 1,000 element-wise operations on 16 elements, then backward), and most
// of that bookkeeping was `malloc`/`free`. So the per-operation records keep their small vectors
// inline: a layout's shape and strides (`tensor::layout::Dims`), a node's edges and input and output
// metas (`node::Edges`, `InputMetas`, `OutputMetas`); a node is one allocation besides its formula's
// box. The engine keys its maps by node address with a one-word hash and runs a batch of one node
// without the batch's vectors; a dropped node queues its parts without boxing them. Nothing here
// changes what is recorded or checked.

/// What a backward formula keeps: an input (or any other tensor), or one of the outputs.
pub(crate) enum Save {
    Input(Tensor),
    Output(usize),
}

/// True when an operation on these inputs must be recorded.
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// The edges of an operation on `inputs` when it is recorded (grad mode on and an input requiring
/// grad), else None. One read of each input's metadata gives both its edge and whether it requires
/// grad (`needs_grad` and then `build_node` read it twice): a tensor without a base requires grad
/// exactly when it has an edge; one with a base may require grad through it without an edge of its
/// own (a view made under `no_grad`), which `requires_grad` decides.
fn recorded_edges(inputs: &[&Tensor]) -> Option<Edges> {
    if !is_grad_enabled() {
        return None;
    }
    // (Loops of pushes here and below: an iterator's `collect` into an inline vector cost about 70
    // instructions, several per operation.)
    let mut edges = Edges::new();
    for t in inputs {
        edges.push(gradient_edge(t));
    }
    let recorded = edges.iter().any(Option::is_some) || inputs.iter().any(|t| t.base().is_some() && t.requires_grad());
    recorded.then_some(edges)
}

/// True when every output shares the memory of an inference tensor: outside inference mode (inside
/// it nothing is recorded anyway) only a view or an alias of an inference tensor does, and PyTorch
/// leaves such views untracked (a leaf that does not require grad) even when the base requires grad.
pub(crate) fn views_of_inference_tensors(outputs: &[&Tensor]) -> bool {
    !outputs.is_empty() && outputs.iter().all(|o| o.storage().is_inference())
}

/// Records `outputs = op(inputs)` when needed. `make` builds the formula and the list of what it
/// saves; it is only called when the operation is recorded, so unrecorded calls save nothing.
pub(crate) fn record<B: Backward + 'static>(
    name: &'static str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    make: impl Fn() -> (B, Vec<Save>),
) {
    record_with_jvp(
        name,
        inputs,
        outputs,
        make,
        None::<fn(&[Option<Tensor>]) -> crate::error::Result<Vec<Option<Tensor>>>>,
    );
}

/// `record`, with the operation's own forward-mode rule `jvp`: the outputs' tangents from the
/// inputs' tangents (`None` for an input without one at the level being computed; NOTE [Tangent
/// propagation]). Without one, the rule is derived from
/// the backward formula, and outputs that are views of an input get the view of its tangent).
/// An error of the rule is raised with the operation's result (as a pack hook's is).
pub(crate) fn record_with_jvp<B: Backward + 'static>(
    name: &'static str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    make: impl Fn() -> (B, Vec<Save>),
    jvp: Option<impl FnMut(&[Option<Tensor>]) -> crate::error::Result<Vec<Option<Tensor>>>>,
) {
    let edges = if views_of_inference_tensors(outputs) { None } else { recorded_edges(inputs) };
    let node = edges.map(|edges| {
        let (formula, saves) = make();
        let mut input_meta = InputMetas::new();
        for t in inputs {
            input_meta.push(Some(TensorMeta::of(t)));
        }
        let node = node_with_parts(Cow::Borrowed(name), edges, input_meta, outputs, Box::new(formula), saves);
        for (i, o) in outputs.iter().enumerate() {
            o.set_history(node.clone(), i);
        }
        node
    });
    // Forward mode after recording, so that a rule reading an output reads it with its history
    // (reverse-over-forward); the outputs the node saved then get their tangents
    // (forward-over-reverse differentiates the backward formula, which reads them).
    if super::forward::active(inputs) {
        let result = match jvp {
            Some(mut rule) => super::forward::propagate(inputs, outputs, &mut rule),
            None => super::forward::propagate_views(inputs, outputs, |tangents| {
                let (formula, saves) = super::forward::saving_all(&make);
                let n = super::forward::formula_node(name, inputs, outputs, Box::new(formula), saves);
                super::forward::jvp_from_backward(&n, inputs, outputs, tangents)
            }),
        };
        if let Err(e) = result {
            super::saved::set_pack_error(e);
        }
        if let Some(n) = &node {
            super::forward::give_saved_outputs_tangents(n, outputs);
        }
    }
}

/// Builds the node for `outputs = op(inputs)` and gives the outputs their history.
pub(crate) fn record_node(
    name: Cow<'static, str>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> Arc<Node> {
    let node = build_node(name, inputs, outputs, formula, saves);
    for (i, o) in outputs.iter().enumerate() {
        o.set_history(node.clone(), i);
    }
    node
}

/// `record` for an operation with a Python-scalar operand after its tensor input: the scalar has
/// an input slot of its own with no edge, as PyTorch's wrapped-number operand has
/// (`(a + 5).grad_fn.next_functions` is `((a's node, 0), (None, 0))`). The formula returns a
/// gradient for each slot (`None` for the scalar's).
pub(crate) fn record_with_scalar<B: Backward + 'static>(
    name: &'static str,
    input: &Tensor,
    output: &Tensor,
    make: impl Fn() -> (B, Vec<Save>),
    jvp: Option<impl Fn(&Tensor) -> crate::error::Result<Tensor>>,
) {
    let node = recorded_edges(&[input]).map(|mut edges| {
        let (formula, saves) = make();
        edges.push(None);
        let input_meta: InputMetas = smallvec::smallvec![Some(TensorMeta::of(input)), None];
        let node = node_with_parts(Cow::Borrowed(name), edges, input_meta, &[output], Box::new(formula), saves);
        output.set_history(node.clone(), 0);
        node
    });
    if super::forward::active(&[input]) {
        let result = super::forward::propagate(&[input], &[output], |tangents| {
            if let (Some(rule), Some(t)) = (&jvp, &tangents[0]) {
                return Ok(vec![Some(rule(t)?)]);
            }
            let tangents = [tangents[0].clone(), None];
            let (formula, saves) = super::forward::saving_all(&make);
            let n = super::forward::formula_node(name, &[input, input], &[output], Box::new(formula), saves);
            super::forward::jvp_from_backward(&n, &[input], &[output], &tangents)
        });
        if let Err(e) = result {
            super::saved::set_pack_error(e);
        }
        if let Some(n) = &node {
            super::forward::give_saved_outputs_tangents(n, &[output]);
        }
    }
}

/// Builds the node for `outputs = op(inputs)` without touching the outputs.
pub(crate) fn build_node(
    name: Cow<'static, str>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> Arc<Node> {
    let edges: Edges = inputs.iter().map(|t| gradient_edge(t)).collect();
    let input_meta: InputMetas = inputs.iter().map(|t| Some(TensorMeta::of(t))).collect();
    node_with_parts(name, edges, input_meta, outputs, formula, saves)
}

/// Builds a node from edges taken beforehand.
fn node_with_parts(
    name: Cow<'static, str>,
    edges: Edges,
    input_meta: InputMetas,
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> Arc<Node> {
    let (node, error) = try_node_with_parts(name, edges, input_meta, outputs, formula, saves);
    if let Some(e) = error {
        // A built-in operation cannot return it: the binding layer raises it with the result.
        super::saved::set_pack_error(e);
    }
    node
}

/// `node_with_edges`, also returning the error of a saved-tensor pack hook that failed (the node
/// is made all the same; its failed slot reports the error if it is ever read).
pub(crate) fn try_node_with_edges(
    name: Cow<'static, str>,
    edges: Vec<Option<super::node::Edge>>,
    input_meta: Vec<Option<TensorMeta>>,
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> (Arc<Node>, Option<crate::error::Error>) {
    try_node_with_parts(name, edges.into(), input_meta.into(), outputs, formula, saves)
}

/// `try_node_with_edges` with the node's own (inline) vectors.
pub(crate) fn try_node_with_parts(
    name: Cow<'static, str>,
    edges: Edges,
    input_meta: InputMetas,
    outputs: &[&Tensor],
    formula: Box<dyn Backward>,
    saves: Vec<Save>,
) -> (Arc<Node>, Option<crate::error::Error>) {
    let mut output_meta = OutputMetas::new();
    for t in outputs {
        output_meta.push(TensorMeta::of(t));
    }
    // Packed before the node exists: a pack hook runs Python code, which must not see a node
    // half made.
    let mut error = None;
    let prepared: Vec<(Prepared, Option<usize>)> = saves
        .into_iter()
        .map(|s| {
            let (t, out) = match &s {
                Save::Input(t) => (t, None),
                Save::Output(i) => (outputs[*i], Some(*i)),
            };
            let p = match Prepared::new(t, out.is_some()) {
                Ok(p) => p,
                Err(e) => {
                    let p = Prepared::failed(&e);
                    error.get_or_insert(e);
                    p
                }
            };
            (p, out)
        })
        .collect();
    let node = Arc::new_cyclic(|weak| {
        let saved = prepared
            .into_iter()
            .map(|(p, out)| SavedTensor::from_prepared(p, out.map(|i| (weak.clone(), i))))
            .collect();
        Node::with_parts(name, edges, input_meta, output_meta, saved, formula)
    });
    (node, error)
}
