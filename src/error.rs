//! The one error enum of the crate. It knows nothing of Python: `src/python/errors.rs` maps each
//! variant to a Python exception type in one place. The bindings raise no exception of their own:
//! a refusal they find while reading Python arguments (a list where a tensor belongs, an int past
//! int64) is one of these variants too, so that every error has one birthplace and one mapping.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use thiserror::Error;

/// Every failure the core can report.
#[derive(Debug, Error, Clone)]
pub enum Error {
    /// Shapes that do not fit together (broadcasting, matmul, reshape, cat...). Python: `RuntimeError`.
    #[error("{0}")]
    Shape(String),
    /// An index out of range. Python: `IndexError`.
    #[error("{0}")]
    Index(String),
    /// A dtype the operation does not accept. Python: `RuntimeError` (as PyTorch raises for most
    /// dtype refusals).
    #[error("{0}")]
    Dtype(String),
    /// A wrong argument value (negative size, bad dim...). Python: `RuntimeError`, as PyTorch
    /// raises for these.
    #[error("{0}")]
    Value(String),
    /// An argument of the wrong kind: a list where a tensor belongs, a bound that is not a number,
    /// an unknown dtype name, an object that is not an index. Python: `TypeError`.
    #[error("{0}")]
    Type(String),
    /// A number outside what the integer dtype holds (a Python int or a uint64 past int64).
    /// Python: `OverflowError`, as Python's own conversions raise.
    #[error("{0}")]
    Overflow(String),
    /// A Python attribute that does not exist (`ctx.unknown`). Python: `AttributeError`, so that
    /// `getattr(obj, name, default)` and `hasattr` work.
    #[error("{0}")]
    Attribute(String),
    /// A slice step of zero or below (`t[::0]`, `t[::-1]`). Python: `ValueError`, as Python and
    /// PyTorch raise for a bad step.
    #[error("{}", slice_step_message(*step))]
    SliceStep {
        /// The step that was given.
        step: isize,
    },
    /// A wrong argument value that Python's conventions (not PyTorch's `RuntimeError`) call a
    /// `ValueError`: a missing or unknown key of a binding's own protocol, lists of mismatched
    /// lengths. Python: `ValueError`.
    #[error("{0}")]
    InvalidArgument(String),
    /// Misuse of autograd (in-place on a leaf, backward without a scalar, graph freed...).
    /// Python: `RuntimeError`.
    #[error("{0}")]
    Autograd(String),
    /// A saved tensor was changed in place after it was saved. See `SavedTensorModified`.
    /// Python: `tapegrad.SavedTensorModifiedError`, a `RuntimeError` carrying its fields.
    #[error("{0}")]
    SavedTensorModified(Box<SavedTensorModified>),
    /// A linear-algebra failure on valid input: a singular matrix, a matrix that is not
    /// positive-definite, no convergence. Python: `tapegrad.linalg.LinAlgError`, a `RuntimeError`.
    #[error("{0}")]
    LinAlg(String),
    /// A NaN appeared under anomaly mode. Python: `RuntimeError`.
    #[error("{0}")]
    Anomaly(String),
    /// An allocation that cannot be satisfied. Python: `MemoryError`.
    #[error("{0}")]
    OutOfMemory(String),
    /// A custom operation misused its API or returned something malformed (a ctx method outside
    /// forward, a gradient of the wrong count). Python: `RuntimeError`.
    #[error("{0}")]
    CustomFunction(String),
    /// An error raised by user code outside the crate (a Python exception inside a custom
    /// function). It is carried through the engine untouched so that the caller receives it as it was.
    /// Python: that exception itself.
    #[error("{message}")]
    External {
        /// A printable summary, for Rust callers.
        message: String,
        /// The original error object (for Python: the `PyErr`).
        payload: ExternalPayload,
    },
    /// The user interrupted a long computation (Ctrl-C): the engine's periodic interrupt check
    /// (`engine::set_interrupt_hook`) saw a pending SIGINT. Python: `KeyboardInterrupt`. A Ctrl-C
    /// that lands inside Python code (a custom function) arrives as `External` instead.
    #[error("interrupted")]
    Interrupted,
    /// Something the library does not implement (forward mode through an operation without a
    /// rule). Python: `NotImplementedError`, as PyTorch raises.
    #[error("{0}")]
    NotImplemented(String),
}

fn slice_step_message(step: isize) -> String {
    if step == 0 {
        "slice step cannot be zero".to_string()
    } else {
        format!("slice step must be greater than zero (got {step}): negative steps are not supported")
    }
}

/// An opaque, shareable payload for `Error::External`.
#[derive(Clone)]
pub struct ExternalPayload(pub Arc<dyn Any + Send + Sync>);

impl fmt::Debug for ExternalPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ExternalPayload(..)")
    }
}

/// The structured report of a saved tensor modified in place (API.md §3.2 and §4).
#[derive(Debug, Clone)]
pub struct SavedTensorModified {
    /// The tensor's dtype name, e.g. `float32`.
    pub dtype: String,
    /// The tensor's shape.
    pub shape: Vec<usize>,
    /// The node that saved it, e.g. `SinBackward`.
    pub saved_by: String,
    /// The in-place operation that last bumped the version, e.g. `add_`.
    pub modified_by: String,
    /// The version when saved.
    pub saved_version: u64,
    /// The version found when unpacked.
    pub current_version: u64,
    /// Where the tensor was saved (anomaly mode only).
    pub saved_at: Option<String>,
    /// Where it was modified (anomaly mode only).
    pub modified_at: Option<String>,
}

impl fmt::Display for SavedTensorModified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "one of the variables needed for gradient computation has been modified by an inplace \
             operation: the {} tensor of shape {:?} saved by {} is at version {}; expected version {} \
             instead. It was modified by {}.",
            self.dtype, self.shape, self.saved_by, self.current_version, self.saved_version, self.modified_by
        )?;
        match (&self.saved_at, &self.modified_at) {
            (None, None) => write!(
                f,
                " Hint: compute on a copy (`.clone()`) before modifying it in place, or run under \
                 tapegrad.autograd.detect_anomaly() to see where it was saved and where it was modified."
            ),
            (saved, modified) => {
                if let Some(s) = saved {
                    write!(f, "\nSaved at:\n{s}")?;
                }
                if let Some(m) = modified {
                    write!(f, "\nModified at:\n{m}")?;
                }
                Ok(())
            }
        }
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn shape(msg: impl Into<String>) -> Self {
        Error::Shape(msg.into())
    }
    pub(crate) fn index(msg: impl Into<String>) -> Self {
        Error::Index(msg.into())
    }
    pub(crate) fn dtype(msg: impl Into<String>) -> Self {
        Error::Dtype(msg.into())
    }
    pub(crate) fn value(msg: impl Into<String>) -> Self {
        Error::Value(msg.into())
    }
    pub(crate) fn autograd(msg: impl Into<String>) -> Self {
        Error::Autograd(msg.into())
    }
}
