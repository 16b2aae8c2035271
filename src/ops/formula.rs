//! The part every backward formula of a one-output operation shares, written once: when the
//! output got no gradient, no input gets one (and the formula does not run); otherwise the formula
//! receives that gradient and a way to ask which inputs need theirs.
//!
//! A formula implements `SingleOutput`; the blanket `impl Backward` below supplies the preamble.

use crate::autograd::node::{Backward, Node};
use crate::error::Result;
use crate::tensor::Tensor;

/// Which inputs of a node need a gradient (those with an edge).
#[derive(Clone, Copy)]
pub(crate) struct Need<'a>(&'a Node);

impl Need<'_> {
    /// True when input `i` needs a gradient.
    pub(crate) fn get(self, i: usize) -> bool {
        self.0.next_edges().get(i).is_some_and(Option::is_some)
    }

    /// `Some(grad())` when input `i` needs a gradient, else `None` without computing it.
    pub(crate) fn then(self, i: usize, grad: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
        if self.get(i) {
            grad().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// The backward formula of an operation with one output.
pub(crate) trait SingleOutput: Send + Sync {
    /// One gradient per input (`None` where none is needed) from `g`, the gradient of the output.
    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>>;

    /// See `Backward::keeps_values`.
    fn keeps_values(&self) -> bool {
        false
    }

    /// `input_grads` for a gradient `g` with an extra leading dimension of `batch` gradients (see
    /// `Backward::apply_batched`); None when the formula has no such form.
    fn input_grads_batched(
        &self,
        _node: &Node,
        _g: &Tensor,
        _need: Need<'_>,
        _batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        None
    }
}

impl<F: SingleOutput> Backward for F {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        match grads.into_iter().next().flatten() {
            Some(g) => self.input_grads(node, g, Need(node)),
            None => Ok(vec![None; node.next_edges().len()]),
        }
    }

    fn keeps_values(&self) -> bool {
        SingleOutput::keeps_values(self)
    }

    fn apply_batched(
        &self,
        node: &Node,
        grads: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        match grads.first().and_then(Option::as_ref) {
            Some(g) => self.input_grads_batched(node, g, Need(node), batch),
            None => Some(Ok(vec![None; node.next_edges().len()])),
        }
    }
}
