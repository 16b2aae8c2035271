//! Saved tensors and the version check (API.md §3.2).
//!
//! A saved *input* keeps the tensor itself (its history is needed for double backward). A saved
//! *output* keeps only its data and a weak reference to the node that produced it: holding the
//! output with its `grad_fn` would make the node own itself (PyTorch's `SavedVariable` does the same).

use std::sync::Weak;

use super::node::Node;
use crate::error::{Error, Result, SavedTensorModified};
use crate::tensor::Tensor;

/// A tensor kept for backward, with the version it had when saved.
pub struct SavedTensor {
    data: Tensor,
    output_of: Option<(Weak<Node>, usize)>,
    saved_version: u64,
    saved_at: Option<String>,
}

impl SavedTensor {
    /// Saves an input (or any tensor that is not an output of the saving node).
    pub fn input(t: &Tensor) -> Self {
        SavedTensor {
            data: t.clone(),
            output_of: None,
            saved_version: t.version(),
            saved_at: super::anomaly::current_location(),
        }
    }

    /// Saves output `output_nr` of `node` without keeping `node` alive.
    pub fn output(t: &Tensor, node: Weak<Node>, output_nr: usize) -> Self {
        SavedTensor {
            data: t.detach(),
            output_of: Some((node, output_nr)),
            saved_version: t.version(),
            saved_at: super::anomaly::current_location(),
        }
    }

    /// The saved data without a version check (for drawing).
    pub fn peek(&self) -> &Tensor {
        &self.data
    }

    /// The version recorded at save time.
    pub fn saved_version(&self) -> u64 {
        self.saved_version
    }

    /// The tensor, after checking that no in-place write changed it since it was saved.
    pub fn unpack(&self, saved_by: &str) -> Result<Tensor> {
        let current = self.data.version();
        if current != self.saved_version {
            let write = self.data.storage().last_write();
            return Err(Error::SavedTensorModified(Box::new(SavedTensorModified {
                dtype: self.data.dtype().name().to_string(),
                shape: self.data.shape().to_vec(),
                saved_by: saved_by.to_string(),
                modified_by: write.as_ref().map(|w| w.op.to_string()).unwrap_or_else(|| "an unknown operation".into()),
                saved_version: self.saved_version,
                current_version: current,
                saved_at: self.saved_at.clone(),
                modified_at: write.and_then(|w| w.location),
            })));
        }
        match &self.output_of {
            None => Ok(self.data.clone()),
            Some((node, nr)) => {
                let t = self.data.detach();
                if let Some(node) = node.upgrade() {
                    t.set_history(node, *nr);
                }
                Ok(t)
            }
        }
    }
}
