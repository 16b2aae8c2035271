//! Saved tensors, the version check (API.md §3.2) and saved-tensor hooks.
//!
//! A saved *input* keeps the tensor itself (its history is needed for double backward). A saved
//! *output* keeps only its data and a weak reference to the node that produced it: holding the
//! output with its `grad_fn` would make the node own itself (PyTorch's `SavedVariable` does the same).
//!
//! Under saved-tensor hooks (`tg.autograd.graph.saved_tensors_hooks`), a tensor is handed to the
//! innermost pack hook when it is saved and only what the hook returned is kept; the unpack hook
//! gives the data back at each access, and the history (the grad_fn, or the leaf's accumulator) is
//! put back on it here. The version check still applies while the original memory lives.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::node::{Edge, Node};
use crate::error::{Error, Result, SavedTensorModified};
use crate::tensor::dtype::DType;
use crate::tensor::storage::Storage;
use crate::tensor::Tensor;

/// A pair of saved-tensor hooks: `pack` runs when a tensor is saved.
pub trait SavedTensorHooks: Send + Sync {
    /// Packs a tensor being saved; what it returns is kept in the tensor's place.
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>>;

    /// False when an in-place write to the original after saving is allowed (the hooks kept a
    /// copy: `allow_mutation_on_saved_tensors`).
    fn checks_version(&self) -> bool {
        true
    }
}

/// What a pack hook made of a saved tensor.
pub trait PackedTensor: Send + Sync {
    /// Gives the tensor's data back (the unpack hook); called at each access.
    fn unpack(&self) -> Result<Tensor>;
}

thread_local! {
    static HOOKS: RefCell<Vec<Arc<dyn SavedTensorHooks>>> = const { RefCell::new(Vec::new()) };
    /// Hooks below this depth are not applied: the ones whose own pack or unpack is running.
    static FLOOR: Cell<usize> = const { Cell::new(0) };
    /// A pack hook's error from an operation that cannot return it (the binding layer raises it
    /// when the operation's result comes back: `take_pack_error`).
    static PACK_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

// Every operation that saves a tensor asks for this thread's hooks, and every result returned to
// Python for a pending pack error: two and one thread-local accesses, each a call to
// `__tls_get_addr` in the shared object (issue 19). So two process-wide counts say whether any
// thread has hooks pushed, or an error pending; only then is the thread's own state read. A thread
// sees its own pushes and errors in the count (program order on one atomic), and another thread's
// only make it take the slow path; one that ends with hooks pushed or an error pending leaves it
// on the slow path, which stays correct.
/// How many saved-tensor hooks are pushed, over all threads.
static HOOKS_PUSHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// How many threads have a pack error pending.
static PACK_ERRORS_PENDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Makes `hooks` the innermost saved-tensor hooks of this thread.
pub fn push_saved_tensor_hooks(hooks: Arc<dyn SavedTensorHooks>) {
    HOOKS.with(|h| h.borrow_mut().push(hooks));
    HOOKS_PUSHED.fetch_add(1, Ordering::Relaxed);
}

/// Removes the innermost saved-tensor hooks of this thread (dropped after the borrow ends).
pub fn pop_saved_tensor_hooks() -> Option<Arc<dyn SavedTensorHooks>> {
    let popped = HOOKS.with(|h| h.borrow_mut().pop());
    if popped.is_some() {
        HOOKS_PUSHED.fetch_sub(1, Ordering::Relaxed);
    }
    popped
}

/// The hooks that apply to a tensor saved now.
fn current_hooks() -> Option<Arc<dyn SavedTensorHooks>> {
    if HOOKS_PUSHED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let floor = FLOOR.with(Cell::get);
    HOOKS.with(|h| {
        let h = h.borrow();
        if h.len() > floor {
            h.last().cloned()
        } else {
            None
        }
    })
}

/// Runs a hook with the hooks registered so far switched off (a hook's own operations are not
/// packed by itself; hooks it registers apply).
fn running_hook<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            FLOOR.with(|c| c.set(self.0));
        }
    }
    let depth = HOOKS.with(|h| h.borrow().len());
    let _restore = Restore(FLOOR.with(|c| c.replace(depth)));
    f()
}

/// The pack hook error left by an operation that could not return it, if any.
pub fn take_pack_error() -> Option<Error> {
    if PACK_ERRORS_PENDING.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let taken = PACK_ERROR.try_with(|e| e.borrow_mut().take()).ok().flatten();
    if taken.is_some() {
        PACK_ERRORS_PENDING.fetch_sub(1, Ordering::Relaxed);
    }
    taken
}

pub(crate) fn set_pack_error(e: Error) {
    PACK_ERROR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
            PACK_ERRORS_PENDING.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// How a saved tensor's value is kept.
#[derive(Clone)]
enum Data {
    Plain(Tensor),
    Packed {
        packed: Arc<dyn PackedTensor>,
        /// The original memory, for the version check while it lives.
        storage: Weak<Storage>,
        shape: Vec<usize>,
        dtype: DType,
        /// A saved input's history: its grad_fn edge, or its leaf accumulator.
        history: Option<Edge>,
        /// Whether the saved tensor required grad (a leaf without an accumulator yet).
        requires_grad: bool,
    },
    /// The pack hook failed (the error was raised where the tensor was saved).
    Failed(String),
}

/// A tensor kept for backward, with the version it had when saved. Cloning is cheap (handles).
#[derive(Clone)]
pub struct SavedTensor {
    data: Data,
    output_of: Option<(Weak<Node>, usize)>,
    saved_version: u64,
    saved_at: Option<String>,
    /// A saved input that had a grad_fn when saved (kept as it is: a `detach_()` since then took
    /// away the history backward would need).
    had_grad_fn: bool,
}

/// A tensor about to be saved, packed (or not) before its node exists.
pub(crate) struct Prepared {
    data: Data,
    saved_version: u64,
    had_grad_fn: bool,
}

impl Prepared {
    /// Packs `t` with the current hooks, if any. `is_output`: `t` is an output of the node being
    /// made (the hook gets it without history, which the node will give it).
    pub(crate) fn new(t: &Tensor, is_output: bool) -> Result<Prepared> {
        if t.storage().is_inference() {
            return Err(Error::autograd(super::grad_mode::INFERENCE_SAVED));
        }
        let saved_version = t.version();
        let Some(hooks) = current_hooks() else {
            let data = Data::Plain(if is_output { super::forward::detach_keeping_tangents(t) } else { t.clone() });
            return Ok(Prepared { data, saved_version, had_grad_fn: !is_output && t.grad_fn().is_some() });
        };
        let given = if is_output { t.detach() } else { t.clone() };
        // As in PyTorch, the pack hook runs with grad mode off.
        let packed = running_hook(|| {
            let _off = super::grad_mode::GradModeGuard::no_grad();
            hooks.pack(&given)
        })?;
        if t.version() != saved_version {
            return Err(Error::autograd(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack \
                 hook cannot be modified by in-place operations as this can lead to unexpected side-effects. \
                 Please open an issue if you need to perform in-place operations on the input to a pack hook.",
            ));
        }
        let history = if is_output { None } else { super::node::gradient_edge(t) };
        let data = Data::Packed {
            packed,
            storage: if hooks.checks_version() { Arc::downgrade(t.storage()) } else { Weak::new() },
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            history,
            requires_grad: t.requires_grad(),
        };
        Ok(Prepared { data, saved_version, had_grad_fn: false })
    }

    /// A slot whose pack hook failed.
    pub(crate) fn failed(e: &Error) -> Prepared {
        Prepared { data: Data::Failed(e.to_string()), saved_version: 0, had_grad_fn: false }
    }
}

impl SavedTensor {
    /// Saves an input (or any tensor that is not an output of the saving node), without hooks.
    pub fn input(t: &Tensor) -> Self {
        SavedTensor {
            data: Data::Plain(t.clone()),
            output_of: None,
            saved_version: t.version(),
            saved_at: super::anomaly::current_location(),
            had_grad_fn: t.grad_fn().is_some(),
        }
    }

    /// Saves output `output_nr` of `node` without keeping `node` alive, without hooks.
    pub fn output(t: &Tensor, node: Weak<Node>, output_nr: usize) -> Self {
        SavedTensor {
            data: Data::Plain(t.detach()),
            output_of: Some((node, output_nr)),
            saved_version: t.version(),
            saved_at: super::anomaly::current_location(),
            had_grad_fn: false,
        }
    }

    /// A prepared (possibly packed) tensor; `output_of` for an output of the saving node.
    pub(crate) fn from_prepared(p: Prepared, output_of: Option<(Weak<Node>, usize)>) -> Self {
        let had_grad_fn = p.had_grad_fn && output_of.is_none();
        SavedTensor {
            data: p.data,
            output_of,
            saved_version: p.saved_version,
            saved_at: super::anomaly::current_location(),
            had_grad_fn,
        }
    }

    /// Which output of the saving node this is, if it is one.
    pub(crate) fn output_nr(&self) -> Option<usize> {
        self.output_of.as_ref().map(|(_, i)| *i)
    }

    /// The saved data without a version check, when kept as it is (None when a pack hook holds it).
    pub fn peek(&self) -> Option<&Tensor> {
        match &self.data {
            Data::Plain(t) => Some(t),
            _ => None,
        }
    }

    /// The shape and dtype saved.
    pub fn meta(&self) -> (Vec<usize>, DType) {
        match &self.data {
            Data::Plain(t) => (t.shape().to_vec(), t.dtype()),
            Data::Packed { shape, dtype, .. } => (shape.clone(), *dtype),
            Data::Failed(_) => (Vec::new(), DType::Float32),
        }
    }

    /// The current version of the saved memory (the saved version when that memory is gone).
    pub fn current_version(&self) -> u64 {
        match &self.data {
            Data::Plain(t) => t.version(),
            Data::Packed { storage, .. } => storage.upgrade().map_or(self.saved_version, |s| s.version()),
            Data::Failed(_) => self.saved_version,
        }
    }

    /// The version recorded at save time.
    pub fn saved_version(&self) -> u64 {
        self.saved_version
    }

    /// The tensor, after checking that no in-place write changed it since it was saved. Runs the
    /// unpack hook, if any: call it without holding a lock (`Node::unpack_saved` clones first).
    pub fn unpack(&self, saved_by: &str) -> Result<Tensor> {
        self.check_version(saved_by)?;
        let t = match &self.data {
            Data::Plain(t) if self.had_grad_fn && t.grad_fn().is_none() => {
                // As PyTorch: the history a double backward would follow is gone.
                return Err(Error::autograd(
                    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). This \
                     is not supported, please use out-of-place `.detach()` instead",
                ));
            }
            Data::Plain(t) => t.clone(),
            Data::Failed(m) => return Err(Error::autograd(format!("the saved tensor's pack hook failed: {m}"))),
            Data::Packed { packed, history, requires_grad, .. } => {
                let data = running_hook(|| packed.unpack())?.detach();
                if self.output_of.is_none() {
                    match history {
                        Some(e) if e.node.formula().accumulates_into().is_some() => {
                            let mut m = data.0.meta.lock();
                            m.requires_grad = true;
                            m.grad_accumulator = Arc::downgrade(&e.node);
                        }
                        Some(e) => data.set_history(e.node.clone(), e.input_nr),
                        None if *requires_grad => data.set_requires_grad(true)?,
                        None => {}
                    }
                }
                data
            }
        };
        match &self.output_of {
            None => Ok(t),
            Some((node, nr)) => {
                let t = super::forward::detach_keeping_tangents(&t);
                if let Some(node) = node.upgrade() {
                    t.set_history(node, *nr);
                }
                Ok(t)
            }
        }
    }

    fn check_version(&self, saved_by: &str) -> Result<()> {
        // The common case first, without copying the shape for the message.
        if let Data::Plain(t) = &self.data {
            if t.version() == self.saved_version {
                return Ok(());
            }
        }
        let (current, write, dtype, shape) = match &self.data {
            Data::Plain(t) => (t.version(), None, t.dtype(), t.shape().to_vec()),
            Data::Packed { storage, shape, dtype, .. } => match storage.upgrade() {
                Some(s) => (s.version(), s.last_write(), *dtype, shape.clone()),
                None => return Ok(()),
            },
            Data::Failed(_) => return Ok(()),
        };
        if current == self.saved_version {
            return Ok(());
        }
        let write = match (&self.data, write) {
            (Data::Plain(t), _) => t.storage().last_write(),
            (_, w) => w,
        };
        Err(Error::SavedTensorModified(Box::new(SavedTensorModified {
            dtype: dtype.name().to_string(),
            shape,
            saved_by: saved_by.to_string(),
            modified_by: write.as_ref().map(|w| w.op.to_string()).unwrap_or_else(|| "an unknown operation".into()),
            saved_version: self.saved_version,
            current_version: current,
            saved_at: self.saved_at.clone(),
            modified_at: write.and_then(|w| w.location),
        })))
    }
}
