//! Operations, grouped by kind. Each file keeps an operation's forward kernel and its backward
//! formula together (STYLE.md 6).

pub(crate) mod as_strided;
pub mod compose;
pub mod decomp;
pub mod elementwise;
pub(crate) mod fastmath;
pub(crate) mod formula;
#[cfg(target_arch = "x86_64")]
pub(crate) mod gemm;
pub mod index;
pub mod inplace;
pub(crate) mod kernel;
pub mod linalg;
pub mod matmul_precision;
pub mod optim;
pub mod reduce;
pub mod reduce_more;
pub mod scatter;
pub mod shape;
pub mod softmax;
pub mod sort;

pub use compose::MeshIndexing;
pub use elementwise::{Binary, Cmp, Logical, ScalarOp, Unary};
pub use index::IndexItem;
