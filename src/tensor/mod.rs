//! Tensors: a cheap handle (`Arc`) to storage, a layout over it, and autograd metadata.

pub mod create;
pub mod default_dtype;
pub mod dtype;
pub mod element;
pub mod format;
mod gather;
pub(crate) use gather::{gather, gather_map};
pub mod layout;
pub mod random;
pub mod storage;

use std::sync::{Arc, Weak};

use ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder};
use parking_lot::Mutex;

use crate::autograd::node::Node;
use crate::error::{Error, Result};
use dtype::DType;
use element::Element;
use layout::Layout;
use storage::{Buffer, Storage};

/// A tensor handle. Cloning it is cheap and shares everything (it is the same tensor, as two
/// Python references to one `torch.Tensor` are).
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

/// What a tensor handle points at.
pub struct TensorImpl {
    pub(crate) storage: Arc<Storage>,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    /// The tensor this one is a view of (`None` for tensors that own their storage's first use).
    pub(crate) base: Option<Tensor>,
    pub(crate) meta: Mutex<AutogradMeta>,
    /// The address of the binding layer's live wrapper object for this tensor, or 0: a borrowed,
    /// non-owning back-reference, so that one tensor has one Python object while that object lives
    /// (the binding sets and clears it; the core never reads it).
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub(crate) wrapper: std::sync::atomic::AtomicUsize,
}

// NOTE [No Python under a tensor lock]: `TensorImpl::meta` (and a node's `pre_hooks`) is a plain
// mutex, not re-entrant, and it is not the GIL. Whoever holds it must not run Python code: dropping
// a `Tensor`, a node or a hook can free a Python object whose `__del__` reads this same tensor
// (deadlock in one thread), and taking the GIL while holding it deadlocks against a thread that
// holds the GIL and waits for the lock. So values leaving a slot are moved out under the lock and
// dropped after it, and nothing that may call into Python (anomaly mode's location lookup, a hook)
// runs under it.
/// Autograd state of one tensor.
#[derive(Default)]
pub struct AutogradMeta {
    /// Set by the user on leaves; true on every output of a recorded operation.
    pub requires_grad: bool,
    /// The accumulated gradient (leaves, and non-leaves that `retain_grad`).
    pub grad: Option<Tensor>,
    /// The node that produced this tensor; `None` for leaves.
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    /// The leaf's accumulate-grad node, cached weakly: the graph owns it, the leaf does not.
    pub grad_accumulator: Weak<Node>,
    /// Keep `.grad` on a non-leaf.
    pub retains_grad: bool,
    /// Gradient hooks of a leaf (a non-leaf's hooks live on its `grad_fn`).
    pub(crate) hooks: Vec<(u64, crate::autograd::hooks::GradHook)>,
    /// Hooks run after a gradient is accumulated into this leaf's `.grad`.
    pub(crate) post_accumulate_hooks: Vec<(u64, crate::autograd::hooks::PostAccumulateHook)>,
    /// For a differentiable view: the storage version its `grad_fn` (or its lack of one) describes
    /// (NOTE [Stale views]).
    pub(crate) view_version: Option<u64>,
    /// For a view: how it was made, which decides what an in-place write to it may do.
    pub(crate) view_creation: ViewCreation,
    /// Forward-mode tangents, by dual level id (NOTE [Dual levels] in `autograd/forward.rs`).
    pub(crate) tangents: Vec<(u64, Tensor)>,
}

/// How a view was made (PyTorch's `CreationMeta`). Only a view made by a built-in operation with
/// grad mode on may be written in place while recording: for the others, the history that the
/// write would have to give the view would silently replace the one it has (a custom function's
/// backward) or invent one it never had (a view made under `no_grad`), so the write is refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum ViewCreation {
    /// By a built-in operation with grad mode on.
    #[default]
    Default,
    /// Under `no_grad`.
    NoGradMode,
    /// With grad mode on, from a view made under `no_grad` (or from such a view).
    OfNoGradModeView,
    /// Returned by a custom function (an input returned as it is, or a view of one): output `nr` of `name`.
    InCustomFunction { name: String, nr: usize },
    /// One of several views returned by one custom function.
    MultiOutput { name: String, nr: usize },
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format::format_tensor(self))
    }
}

impl Tensor {
    /// A new tensor owning a fresh storage, laid out row-major.
    pub fn from_buffer(buffer: Buffer, shape: &[usize]) -> Result<Tensor> {
        if buffer.len() != layout::numel(shape) {
            return Err(Error::shape(format!(
                "a buffer of {} elements cannot have shape {}",
                buffer.len(),
                layout::fmt_shape(shape)
            )));
        }
        let dtype = buffer.dtype();
        Ok(Tensor::from_parts(Arc::new(Storage::new(buffer)), Layout::contiguous(shape), dtype, None))
    }

    /// A new tensor from a vector of elements.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_buffer(T::into_buffer(data), shape)
    }

    /// A tensor from an owned ndarray.
    pub fn from_array<T: Element>(arr: ArrayD<T>) -> Tensor {
        let shape = arr.shape().to_vec();
        let data = if arr.is_standard_layout() {
            let (v, off) = arr.into_raw_vec_and_offset();
            match off {
                Some(0) | None => v,
                Some(o) => v[o..].to_vec(),
            }
        } else {
            arr.iter().copied().collect()
        };
        Tensor::from_parts(Arc::new(Storage::new(T::into_buffer(data))), Layout::contiguous(&shape), T::DTYPE, None)
    }

    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType, base: Option<Tensor>) -> Tensor {
        // Written field by field into the new allocation: built as one value and moved in, the
        // ~300-byte `TensorImpl` was copied with `memmove` for every tensor made (with the node's
        // copy, 5% of W2's time under perf).
        let mut new = Arc::<TensorImpl>::new_uninit();
        let p = Arc::get_mut(&mut new).expect("a new Arc is unique").as_mut_ptr();
        // SAFETY: `p` points to the new allocation, unique and uninitialised; every field is written
        // exactly once below before `assume_init`, and nothing reads it before.
        unsafe {
            std::ptr::addr_of_mut!((*p).storage).write(storage);
            std::ptr::addr_of_mut!((*p).layout).write(layout);
            std::ptr::addr_of_mut!((*p).dtype).write(dtype);
            std::ptr::addr_of_mut!((*p).base).write(base);
            std::ptr::addr_of_mut!((*p).meta).write(Mutex::new(AutogradMeta::default()));
            std::ptr::addr_of_mut!((*p).wrapper).write(std::sync::atomic::AtomicUsize::new(0));
            Tensor(new.assume_init())
        }
    }

    /// A view sharing this tensor's storage (and version counter), with no history yet. A view of a
    /// view made under `no_grad`, or made under `no_grad` itself, stays a no-grad-mode view.
    pub(crate) fn alias_with_layout(&self, layout: Layout) -> Tensor {
        let base = Some(self.0.base.clone().unwrap_or_else(|| self.clone()));
        let out = Tensor::from_parts(self.0.storage.clone(), layout, self.0.dtype, base);
        let inherited =
            if self.0.base.is_some() { self.0.meta.lock().view_creation.clone() } else { ViewCreation::Default };
        let grad_mode = crate::autograd::grad_mode::is_grad_enabled();
        // A view made under no_grad is a no-grad-mode view whatever its source was; with grad mode
        // on, a view inherits how its source was made (PyTorch's creation-meta propagation).
        let creation = match inherited {
            _ if !grad_mode => ViewCreation::NoGradMode,
            ViewCreation::NoGradMode => ViewCreation::OfNoGradModeView,
            c => c,
        };
        {
            let mut m = out.0.meta.lock();
            // Every view remembers the version it was made at: when its base changes, a default view
            // regenerates its history and the others become an error to differentiate through.
            m.view_version = Some(out.version());
            m.view_creation = creation;
        }
        out
    }

    /// How this view was made (`Default` for a tensor that is not a view).
    pub(crate) fn view_creation(&self) -> ViewCreation {
        if self.0.base.is_none() {
            return ViewCreation::Default;
        }
        self.0.meta.lock().view_creation.clone()
    }

    /// Marks this view as made by a custom function.
    pub(crate) fn set_view_creation(&self, creation: ViewCreation) {
        self.0.meta.lock().view_creation = creation;
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }
    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.0.layout.strides
    }
    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    /// The shared storage.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    /// The tensor this is a view of.
    pub fn base(&self) -> Option<&Tensor> {
        self.0.base.as_ref()
    }
    /// The version counter of the storage (see NOTE [Version counter]).
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }
    /// True when both handles are the same tensor.
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// True when two tensors share storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }
    /// A stable identity for maps.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    // ---- autograd metadata ----

    /// Whether gradients flow to or through this tensor.
    pub fn requires_grad(&self) -> bool {
        self.refresh_view_history();
        let derived_from_base = {
            let m = self.0.meta.lock();
            if m.requires_grad || m.grad_fn.is_some() {
                return true;
            }
            m.view_creation == ViewCreation::NoGradMode
        };
        // As in PyTorch, a view made under no_grad requires grad when its base does: results computed
        // from it require grad too, but it is a leaf without an accumulator of its own (no gradient
        // reaches it or its base) and cannot be written in place with grad mode on.
        // A view of an inference tensor is never tracked (as in PyTorch).
        derived_from_base && !self.0.storage.is_inference() && self.0.base.as_ref().is_some_and(|b| b.requires_grad())
    }

    /// Sets `requires_grad` on a leaf. Only floating-point leaves can require gradients.
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        if flag && self.0.storage.is_inference() && !crate::autograd::grad_mode::is_inference_mode_enabled() {
            return Err(Error::autograd(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.",
            ));
        }
        let mut m = self.0.meta.lock();
        // A non-leaf requires grad already: asking for it again is allowed (as in PyTorch), only
        // turning it off is refused.
        if m.grad_fn.is_some() && flag {
            return Ok(());
        }
        if m.grad_fn.is_some() {
            return Err(Error::autograd(
                "you can only change requires_grad flags of leaf variables. If you want to use a \
                 computed variable in a subgraph that doesn't require differentiation use \
                 var_no_grad = var.detach().",
            ));
        }
        if flag && !self.0.dtype.is_float() {
            return Err(Error::autograd(format!(
                "only Tensors of floating point dtype can require gradients (got {})",
                self.0.dtype
            )));
        }
        m.requires_grad = flag;
        Ok(())
    }

    /// Builder form of `set_requires_grad(true)`.
    pub fn requires_grad_(self, flag: bool) -> Result<Tensor> {
        self.set_requires_grad(flag)?;
        Ok(self)
    }

    /// The accumulated gradient.
    pub fn grad(&self) -> Option<Tensor> {
        self.0.meta.lock().grad.clone()
    }

    /// Replaces the gradient. As in PyTorch, the new gradient must have the tensor's dtype and
    /// shape, and may not be the tensor itself (backward would then accumulate into its own data).
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.same(self) {
                return Err(Error::autograd("can't assign Variable as its own grad"));
            }
            if g.dtype() != self.dtype() {
                return Err(Error::dtype(format!(
                    "assigned grad has data of a different type: the gradient is {} but the tensor is {}",
                    g.dtype(),
                    self.dtype()
                )));
            }
            if g.shape() != self.shape() {
                return Err(Error::shape(format!(
                    "assigned grad has data of a different size: the gradient has shape {} but the tensor has shape {}",
                    layout::fmt_shape(g.shape()),
                    layout::fmt_shape(self.shape())
                )));
            }
        }
        self.replace_grad(grad);
        Ok(())
    }

    /// Stores `grad` as `.grad`; the old gradient is dropped after the lock is released (NOTE [No
    /// Python under a tensor lock]).
    pub(crate) fn replace_grad(&self, grad: Option<Tensor>) {
        let old = std::mem::replace(&mut self.0.meta.lock().grad, grad);
        drop(old);
    }

    /// The node that produced this tensor.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.refresh_view_history();
        self.0.meta.lock().grad_fn.clone()
    }

    // NOTE [Stale views]: a view's `grad_fn` describes how it was computed from its base at the
    // time it was made. An in-place write to the base (or to another view of it) changes the view's
    // values without touching the view, so that history is then wrong: `d = b.t(); b.div_(2)`
    // leaves `d` equal to `(b / 2).t()` while its grad_fn still says `b.t()`. As in PyTorch, a view
    // remembers the version its history describes, and whoever reads its history first checks it:
    // when the storage has moved on, the history is regenerated as a read of the view's region of
    // the base's current history (AsStridedBackward). Views made without history (under `no_grad`,
    // `detach()`) are left alone.
    /// Regenerates a stale view's history (NOTE [Stale views]).
    pub(crate) fn refresh_view_history(&self) {
        let Some(base) = &self.0.base else { return };
        let (stale, creation) = {
            let m = self.0.meta.lock();
            (matches!(m.view_version, Some(v) if v != self.version()), m.view_creation.clone())
        };
        if stale && base.requires_grad() {
            crate::ops::as_strided::regenerate_view_history(base, self, &creation);
        }
    }

    /// Which output of `grad_fn` this tensor is.
    pub fn output_nr(&self) -> usize {
        self.0.meta.lock().output_nr
    }

    /// A leaf has no `grad_fn`.
    pub fn is_leaf(&self) -> bool {
        self.0.meta.lock().grad_fn.is_none()
    }

    /// Whether `retain_grad` was called.
    pub fn retains_grad(&self) -> bool {
        self.0.meta.lock().retains_grad
    }

    /// Gives this tensor its (new) history. After an in-place write, a `retain_grad` moves to the new
    /// node, so `.grad` is the gradient of the tensor's current value; other hooks stay where they
    /// were registered, on the value they saw (as in PyTorch).
    pub(crate) fn set_history(&self, grad_fn: Arc<Node>, output_nr: usize) {
        let new_node = Arc::as_ptr(&grad_fn);
        let (old, retains) = {
            let mut m = self.0.meta.lock();
            // Moved in, not cloned: one reference-count round trip less per operation.
            let old = m.grad_fn.replace(grad_fn);
            m.output_nr = output_nr;
            m.requires_grad = true;
            if self.0.base.is_some() {
                m.view_version = Some(self.0.storage.version());
            }
            let retains = m.retains_grad && old.as_ref().is_some_and(|o| !std::ptr::eq(Arc::as_ptr(o), new_node));
            (old, retains.then(|| m.grad_fn.clone()).flatten())
        };
        // The old node is dropped here, after the lock: its last reference may free a Python function's
        // ctx, whose objects' finalizers may read this tensor (NOTE [No Python under a tensor lock]).
        if let (Some(old), Some(new)) = (old, retains) {
            crate::autograd::hooks::move_retain_hook(self, &old, &new, output_nr);
        }
    }

    /// Detaches this tensor in place: it becomes a leaf that does not require grad (PyTorch's
    /// `detach_`). A view cannot be detached in place: its history is tied to its base's.
    pub fn detach_(&self) -> Result<()> {
        if self.0.base.is_some() {
            return Err(Error::autograd(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel \
                 (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP \
                 buckets, and hence detach_() cannot be called on these gradients.",
            ));
        }
        let old = {
            let mut m = self.0.meta.lock();
            m.requires_grad = false;
            m.retains_grad = false;
            m.output_nr = 0;
            // Forward mode too: a tensor detached in place has no tangent (as in PyTorch).
            (m.grad_fn.take(), std::mem::take(&mut m.tangents))
        };
        // Dropped after the lock (NOTE [No Python under a tensor lock]).
        drop(old);
        Ok(())
    }

    /// Same data, same storage and version counter, no history. As in PyTorch, the result is not a
    /// view for autograd: an in-place write through it changes the memory (and bumps the shared
    /// version counter) but gives no tensor a new history.
    pub fn detach(&self) -> Tensor {
        Tensor::from_parts(self.0.storage.clone(), self.0.layout.clone(), self.0.dtype, None)
    }

    // ---- data access ----

    /// Runs `f` over a strided view of the data (read lock held meanwhile).
    pub fn with_view<T: Element, R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> Result<R> {
        let guard = self.0.storage.read();
        let slice = T::slice(&guard)
            .ok_or_else(|| Error::dtype(format!("expected a {} tensor, got {}", T::DTYPE, self.0.dtype)))?;
        let l = &self.0.layout;
        if l.numel() > 0 && l.storage_extent() > slice.len() {
            return Err(Error::index("tensor layout reaches past the end of its storage"));
        }
        let view = if l.numel() == 0 {
            // An empty view gets ndarray's own (all-zero) strides: the layout's strides reach
            // nothing, but with them `to_owned()` of the view would trip ndarray's debug assertion
            // that the strides fit the (empty) buffer.
            // SAFETY: the view has no elements, so it reads nothing; the read guard outlives it.
            unsafe { ArrayViewD::from_shape_ptr(IxDyn(&l.shape), slice.as_ptr()) }
        } else {
            let base = slice.as_ptr().wrapping_add(l.offset);
            // SAFETY: the extent check above keeps every index in bounds; the view is read-only, so
            // stride-0 (broadcast) aliasing is allowed; the read guard outlives the view.
            unsafe { ArrayViewD::from_shape_ptr(IxDyn(&l.shape).strides(IxDyn(&l.strides)), base) }
        };
        Ok(f(view))
    }

    /// Runs `f` over the data as one contiguous slice when the layout allows it, else over a copy.
    pub fn with_contiguous<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        if self.0.layout.is_contiguous() {
            let guard = self.0.storage.read();
            let slice = T::slice(&guard)
                .ok_or_else(|| Error::dtype(format!("expected a {} tensor, got {}", T::DTYPE, self.0.dtype)))?;
            let n = self.numel();
            // An empty view's offset may lie anywhere (even past the end); it reads nothing.
            let start = if n == 0 { 0 } else { self.0.layout.offset };
            if start + n > slice.len() {
                return Err(Error::index("tensor layout reaches past the end of its storage"));
            }
            Ok(f(&slice[start..start + n]))
        } else {
            let v = self.to_vec::<T>()?;
            Ok(f(&v))
        }
    }

    /// The elements in row-major order, as a new vector.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.0.layout.is_contiguous() {
            return self.with_contiguous(|s: &[T]| s.to_vec());
        }
        create::check_alloc(self.shape(), T::DTYPE)?;
        self.with_view(gather::<T>)
    }

    /// The elements converted to f64, row-major.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        crate::dispatch_all!(self.dtype(), T => Ok(self.to_vec::<T>()?.into_iter().map(|x| x.to_f64()).collect()))
    }

    /// An owned copy of the data as an ndarray.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        let v = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(self.shape()), v).map_err(|e| Error::shape(e.to_string()))
    }

    /// The single value of a one-element tensor, as f64 (an int64 above 2**53 in magnitude is
    /// rounded; `item_scalar` keeps it exact).
    pub fn item(&self) -> Result<f64> {
        Ok(self.item_scalar()?.as_f64())
    }

    /// The single value of a one-element tensor, exactly: an int64 tensor gives `Scalar::Int`, a
    /// bool tensor `Scalar::Bool`, a float tensor `Scalar::Float`.
    pub fn item_scalar(&self) -> Result<dtype::Scalar> {
        use dtype::Scalar;
        if self.numel() != 1 {
            return Err(Error::value(format!("a Tensor with {} elements cannot be converted to Scalar", self.numel())));
        }
        Ok(match self.dtype() {
            DType::Int64 => Scalar::Int(self.to_vec::<i64>()?[0]),
            DType::Bool => Scalar::Bool(self.to_vec::<bool>()?[0]),
            dt if dt.is_int() => Scalar::Int(crate::dispatch_all!(dt, T => self.to_vec::<T>()?[0].to_i64())),
            dt => Scalar::Float(crate::dispatch_all!(dt, T => self.to_vec::<T>()?[0].to_f64())),
        })
    }
}
