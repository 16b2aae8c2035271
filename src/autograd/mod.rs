//! Reverse-mode automatic differentiation.
//!
//! Vocabulary (after PyTorch's `function.h`):
//! - A **node** is one backward function: it takes the gradients of an operation's outputs and
//!   returns the gradients of its inputs. Built-in operations, Rust custom operations and Python
//!   custom functions are all nodes behind the one `Backward` trait; the engine cannot tell them apart.
//! - An **edge** `(node, input_nr)` says where a gradient goes: to input slot `input_nr` of `node`.
//!   A node has one `Option<Edge>` per input of its operation: `None` where that input needs no
//!   gradient. Several edges into one slot are summed.
//! - **AccumulateGrad** is the sink: the node behind a leaf that requires grad, which adds what
//!   reaches it into the leaf's `.grad` (`accumulate.rs`).
//! - A **saved tensor** is a value a node keeps for its formula, with the version it had when saved.

pub(crate) mod accumulate;
pub mod anomaly;
pub mod custom;
pub mod engine;
pub mod forward;
pub mod grad_mode;
pub mod hooks;
pub mod jacobian;
pub mod node;
pub(crate) mod record;
pub mod saved;

pub use custom::{apply_custom, apply_custom_with_node, BackwardCtx, CustomOp, ForwardCtx};
pub use engine::{backward, grad, set_parallel_backward};
pub use grad_mode::{is_grad_enabled, set_grad_enabled, GradModeGuard};
pub use hooks::{GradHook, HookFn, HookHandle};
pub use node::{Backward, Edge, Node};
pub use saved::SavedTensor;
