//! Element-wise operations with their backward formulas beside them, by concern: `unary` (the
//! table of one-input operations), `binary` (two tensors, or a tensor and a scalar), `compare`
//! (comparisons, logical operations, clamp, where). Formulas are written with tensor operations,
//! so they are themselves recorded under `create_graph`.

mod binary;
mod compare;
mod pairwise;
mod special;
mod unary;

pub use binary::{Binary, ScalarOp};
pub use compare::{Bitwise, Cmp, Logical};
pub use pairwise::Pairwise;
pub use unary::Unary;

use crate::error::Result;
use crate::tensor::dtype::Scalar;
use crate::tensor::Tensor;

/// Whether an operation on `t` would be recorded, in either mode: a backward formula that finds
/// neither of its operands recorded may run a kernel alone (fused passes, scalar products).
fn records(t: &Tensor) -> bool {
    (crate::autograd::is_grad_enabled() && t.requires_grad()) || t.has_visible_tangent()
}

/// A 0-dim zero of `g`'s dtype: the "no gradient" branch of the selects in backward formulas.
fn zero_like(g: &Tensor) -> Result<Tensor> {
    Tensor::scalar_tensor(Scalar::Float(0.0), g.dtype())
}
