//! Gradient accumulation into `.grad`: the `AccumulateGrad` sink behind a leaf, and the one way
//! every writer (the sink, a retained gradient, `backward(inputs=...)`) adds into a tensor's `.grad`
//! without losing another thread's contribution.

use std::sync::Arc;

use super::node::{Backward, Node};
use crate::error::Result;
use crate::tensor::Tensor;

/// The accumulate-grad sink of a leaf.
pub(crate) struct AccumulateGrad {
    pub(crate) variable: Tensor,
}

impl Backward for AccumulateGrad {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        if let Some(Some(g)) = grads.into_iter().next() {
            // The engine keeps a second handle on the gradient when the node has post-hooks (they
            // get the gradient this node received); that one does not prevent stealing it.
            let expected_refs = 1 + usize::from(super::hooks::has_post_hooks(node));
            accumulate_into(&self.variable, g, expected_refs)?;
            super::hooks::run_post_accumulate_hooks(&self.variable)?;
        }
        Ok(Vec::new())
    }

    fn accumulates_into(&self) -> Option<&Tensor> {
        Some(&self.variable)
    }
}

// NOTE [Concurrent accumulation]: backward passes on several threads may end in the same tensor's
// `.grad` (shared leaves, a shared non-leaf that retains its gradient). Reading `.grad`, adding and
// storing the sum must then be one step, or one thread's store overwrites another's sum and a
// gradient is silently lost. A small table of locks keyed by the tensor's address makes it one step
// without a lock in every tensor. Nothing that runs under such a lock takes another one of them, so
// they never nest.
const ACCUMULATION_LOCKS: usize = 64;
static ACCUMULATION: [parking_lot::Mutex<()>; ACCUMULATION_LOCKS] =
    [const { parking_lot::Mutex::new(()) }; ACCUMULATION_LOCKS];

/// Holds off other accumulations into `t.grad` (see NOTE [Concurrent accumulation]).
pub(crate) fn lock_grad_accumulation(t: &Tensor) -> parking_lot::MutexGuard<'static, ()> {
    let addr = Arc::as_ptr(&t.0) as usize;
    ACCUMULATION[(addr / std::mem::align_of::<crate::tensor::TensorImpl>()) % ACCUMULATION_LOCKS].lock()
}

/// Adds `g` into `t.grad`: the first gradient is stored as is (its memory, without history) when
/// nothing but the `expected_refs` handles the caller knows of holds it, else copied; later ones
/// are added in place, or out of place when recording a graph.
pub(crate) fn accumulate_into(t: &Tensor, g: Tensor, expected_refs: usize) -> Result<()> {
    if super::grad_mode::is_grad_enabled() {
        // Recording builds a node, which under anomaly mode looks up the user's Python location:
        // so the sum is computed outside every lock and stored only if `.grad` did not move.
        return update_grad(t, |old| match old {
            None => Ok(g.clone()),
            Some(old) => old.add(&g),
        });
    }
    // Whether `g`'s memory may become `.grad` as it is (PyTorch steals the incoming gradient when
    // nothing else holds it: a post-accumulate hook's in-place change then shows in the gradient a
    // node post-hook received). Checked before detaching, which adds a handle on the memory.
    let stealable =
        Arc::strong_count(&g.0) <= expected_refs && Arc::strong_count(g.storage()) == 1 && g.layout().is_contiguous();
    let g = g.detach();
    // Everything done under the accumulation lock is plain Rust; what it displaces is dropped after.
    let displaced = {
        let _one_at_a_time = lock_grad_accumulation(t);
        match t.grad() {
            Some(old) => {
                // `.grad` keeps its shape when its tensor is restrided under no_grad (`t_()`), as
                // in PyTorch: adding a gradient of the tensor's new shape into it is an error.
                if old.shape() != g.shape() {
                    return Err(crate::error::Error::shape(format!(
                        "the gradient of shape {} cannot be accumulated into .grad of shape {} (the \
                         tensor's shape changed after .grad was made; set .grad = None first)",
                        crate::tensor::layout::fmt_shape(g.shape()),
                        crate::tensor::layout::fmt_shape(old.shape())
                    )));
                }
                old.add_inplace_unchecked(&g)?;
                (Some(old), None)
            }
            None => {
                let new = if !t.layout().is_contiguous() && t.layout().is_non_overlapping_and_dense() {
                    gradient_laid_out_like(t, &g)?
                } else if stealable {
                    g
                } else {
                    g.clone_data()?
                };
                (None, t.0.meta.lock().grad.replace(new))
            }
        }
    };
    drop(displaced);
    Ok(())
}

/// A fresh copy of `g` with the strides of the leaf `t` (a permuted but dense layout, such as a
/// transposed matrix): as in PyTorch, a leaf's first `.grad` is laid out like the leaf, so that
/// optimizers update both in the same order.
fn gradient_laid_out_like(t: &Tensor, g: &Tensor) -> Result<Tensor> {
    let buffer = Tensor::zeros(&[t.numel()], g.dtype())?;
    let layout = crate::tensor::layout::Layout { shape: t.shape().into(), strides: t.strides().into(), offset: 0 };
    let out = Tensor::from_parts(buffer.storage().clone(), layout, g.dtype(), None);
    crate::ops::kernel::write_into(&out, g)?;
    Ok(out)
}

/// Stores `combine(current .grad)` as `t.grad`. `combine` runs outside every lock (it may record
/// a node, and so run Python: NOTE [No Python under a tensor lock]); the result is stored only when
/// `.grad` is still the same tensor at the same version, else it is recomputed, so two threads'
/// contributions are never lost (NOTE [Concurrent accumulation]).
pub(crate) fn update_grad(t: &Tensor, combine: impl Fn(Option<&Tensor>) -> Result<Tensor>) -> Result<()> {
    loop {
        let old = t.grad();
        let seen_version = old.as_ref().map(Tensor::version);
        let new = combine(old.as_ref())?;
        let outcome = {
            let _one_at_a_time = lock_grad_accumulation(t);
            let mut m = t.0.meta.lock();
            let unchanged = match (&m.grad, &old) {
                (None, None) => true,
                (Some(cur), Some(old)) => cur.same(old) && Some(cur.version()) == seen_version,
                _ => false,
            };
            if unchanged {
                Ok(m.grad.replace(new))
            } else {
                Err(new)
            }
        };
        match outcome {
            Ok(displaced) => {
                drop(displaced);
                return Ok(());
            }
            Err(unused) => drop(unused),
        }
    }
}
