//! tapegrad: tensors on `ndarray`, a tape of backward nodes, and a scheduler that runs them, with
//! saved-tensor version checks that name the in-place operation at fault.
//!
//! Vocabulary (the full essay is in `autograd/mod.rs`):
//! - a **tensor** is a handle to a storage (one buffer, one version counter shared by all views),
//!   a layout over it, and autograd metadata (`requires_grad`, `grad`, `grad_fn`);
//! - a **node** is one backward function, reached along **edges** `(node, input_nr)`;
//!   **AccumulateGrad** nodes are the sinks that write into leaves' `.grad`;
//! - a **saved tensor** is a value a node keeps for its formula, version-checked when read back;
//! - the **engine** runs nodes newest-first once all their incoming gradients have arrived.
//!
//! Table of contents:
//! - [`tensor`]: storage, layout, dtype, the `Tensor` handle, factories, printing;
//! - [`ops`]: forward kernels and their backward formulas, by family;
//! - [`autograd`]: nodes, saved tensors, grad mode, the engine, custom operations, anomaly mode;
//! - [`error`]: the one error enum;
//! - [`parallel`]: the thread pool of the parallel kernels (and how it survives `fork`);
//! - [`alloc`]: the global allocator (large blocks on huge pages, cached for loops);
//! - [`at_fork`]: the locks a forked child may need, held across `fork` (NOTE [Locks across fork]);
//! - `roof` (feature `bench`): the machine's FMA roof and copy bandwidth, measured, and the GEMM's
//!   entry points for the GEMM benches; not in the wheel users install;
//! - `python` (feature `python`): the PyO3 bindings.

#![warn(missing_docs)]
// Every unsafe operation sits in its own `unsafe {}` block, even inside an `unsafe fn`, with a
// `// SAFETY:` comment saying why it is sound (CI's clippy runs with `-D warnings`).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod alloc;
pub mod at_fork;
pub mod autograd;
pub mod error;
pub mod ops;
pub mod parallel;
#[cfg(feature = "bench")]
pub mod roof;
pub mod tensor;

#[cfg(feature = "python")]
mod python;

/// Large blocks on huge pages, reused by loops (NOTE [Large-block cache] in `alloc.rs`). The
/// extension module's allocator only: a Rust program that links the crate keeps its own choice (it
/// may set `tapegrad::alloc::TapegradAlloc` as its `#[global_allocator]`, as tests/alloc_cache.rs does).
#[cfg(feature = "python")]
#[global_allocator]
static GLOBAL: alloc::TapegradAlloc = alloc::TapegradAlloc;

pub use autograd::{apply_custom, backward, grad, is_grad_enabled, set_grad_enabled, CustomOp, GradModeGuard};
pub use error::{Error, Result};
pub use tensor::dtype::{DType, Scalar};
pub use tensor::random::manual_seed;
pub use tensor::Tensor;
