//! Nodes and edges of the backward graph (vocabulary in `autograd/mod.rs`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::accumulate::AccumulateGrad;
use super::saved::SavedTensor;
use crate::error::{Error, Result};
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;

/// Where a gradient goes: input slot `input_nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    /// The receiving node.
    pub node: Arc<Node>,
    /// Which of its inputs (= which output of the forward operation) the gradient is for.
    pub input_nr: usize,
}

/// Shape and dtype of one tensor that flows through a node, for validating and materialising
/// gradients.
#[derive(Clone, Debug)]
pub struct TensorMeta {
    /// The shape (inline up to 4 dimensions: a node is made per operation).
    pub shape: crate::tensor::layout::Dims,
    /// The dtype.
    pub dtype: DType,
}

impl TensorMeta {
    /// The meta of a tensor.
    pub fn of(t: &Tensor) -> Self {
        TensorMeta { shape: crate::tensor::layout::Dims::from_slice(t.shape()), dtype: t.dtype() }
    }
}

/// A node's edges, one per input (inline up to 2: NOTE [Per-operation overhead] in `record.rs`).
pub(crate) type Edges = smallvec::SmallVec<[Option<Edge>; 2]>;
/// The shapes and dtypes of a node's inputs (inline up to 2).
pub(crate) type InputMetas = smallvec::SmallVec<[Option<TensorMeta>; 2]>;
/// The shapes and dtypes of a node's outputs (inline for one).
pub(crate) type OutputMetas = smallvec::SmallVec<[TensorMeta; 1]>;

/// One backward formula. Saved tensors are kept by the node (`Node::unpack_saved`), not by the
/// formula, so releasing them, version-checking them and drawing them is done once for all.
pub trait Backward: Send + Sync {
    /// Gradients of the inputs from the gradients of the outputs. `grads` has one entry per
    /// output; the result must have one entry per input (`None` where none is needed).
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;

    /// The formula on gradients that each carry an extra leading dimension of `batch`
    /// independent gradients (the Jacobian engine, NOTE [Batched rows] in `jacobian.rs`): one
    /// gradient per input, also with that leading dimension. None when the formula has no such
    /// form; the Jacobian engine then runs `apply` once per gradient.
    fn apply_batched(
        &self,
        _node: &Node,
        _grads: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        None
    }

    /// Frees state other than saved tensors (Python objects on a ctx), after the graph is used.
    fn release(&self) {}

    /// The name of input `i` for messages (`input 0` unless the formula knows better).
    fn input_name(&self, i: usize) -> String {
        format!("input {i}")
    }

    /// The leaf this node accumulates into, for AccumulateGrad only.
    fn accumulates_into(&self) -> Option<&Tensor> {
        None
    }

    /// False for a backward declared `once_differentiable`.
    fn differentiable_twice(&self) -> bool {
        true
    }

    /// False for formulas that must not run on another thread alongside others (Python functions,
    /// which hold the GIL anyway).
    fn parallel_safe(&self) -> bool {
        true
    }

    /// True when the formula keeps a value other than a saved tensor that a released graph no
    /// longer holds (the scalar of `x * 2`, which PyTorch saves as a tensor): running it again after
    /// the graph was freed is then the error of a second backward.
    fn keeps_values(&self) -> bool {
        false
    }

    /// The user's custom operation behind this formula, for bindings that need to reach it
    /// (Python's garbage collector visits the objects a Python custom function holds).
    fn custom_op(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// For a node whose forward also returned values that are not tensors (a custom function's
    /// `return x * 2, k`): for each value returned, whether it is a tensor. Node hooks see one
    /// gradient per value (None for the others), as in PyTorch. None: every output is a tensor.
    fn output_slots(&self) -> Option<Vec<bool>> {
        None
    }
}

/// The saved tensors of a node: stored until the graph is released.
pub(crate) enum SavedSlot {
    Stored(Vec<SavedTensor>),
    Released { had: usize },
}

/// A vertex of the backward graph.
pub struct Node {
    pub(crate) seq: u64,
    pub(crate) name: Cow<'static, str>,
    pub(crate) edges: Edges,
    pub(crate) input_meta: InputMetas,
    pub(crate) output_meta: OutputMetas,
    pub(crate) saved: Mutex<SavedSlot>,
    pub(crate) backward: Option<Box<dyn Backward>>,
    /// Where the node was created (anomaly mode).
    pub(crate) created_at: Option<String>,
    /// The node whose backward was running when this one was created (anomaly mode).
    pub(crate) anomaly_parent: Option<Arc<super::anomaly::Lineage>>,
    /// Hooks on this node's outputs' gradients, by output number (see `hooks.rs`).
    pub(crate) pre_hooks: Mutex<Vec<(usize, super::hooks::PreHook)>>,
    /// Hooks on the node itself (`Node.register_prehook` / `register_hook`), see `hooks.rs`.
    pub(crate) node_hooks: Mutex<Vec<(u64, super::hooks::NodeHook)>>,
    /// Which of the two hook lists may be non-empty (NOTE [Hook flags] in `hooks.rs`).
    pub(crate) hook_flags: std::sync::atomic::AtomicU8,
    /// What the binding layer keeps for `Node.metadata` (made on first use, lives with the node).
    pub metadata: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// The address of the binding layer's live wrapper object for this node, or 0: a borrowed,
    /// non-owning reference (NOTE [One Python object per core object] in `python/identity.rs`).
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub(crate) wrapper: std::sync::atomic::AtomicUsize,
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// A fresh, increasing sequence number: the engine runs newer nodes first.
pub(crate) fn next_seq() -> u64 {
    NEXT_SEQ.fetch_add(1, Ordering::Relaxed)
}

impl Node {
    pub(crate) fn new(
        name: Cow<'static, str>,
        edges: Vec<Option<Edge>>,
        input_meta: Vec<Option<TensorMeta>>,
        output_meta: Vec<TensorMeta>,
        saved: Vec<SavedTensor>,
        backward: Box<dyn Backward>,
    ) -> Node {
        Node::with_parts(name, edges.into(), input_meta.into(), output_meta.into(), saved, backward)
    }

    /// `new` with the node's own (inline) vectors, which the hot paths build directly. Inlined, so
    /// that the ~440-byte node can be built in its allocation rather than copied there.
    #[inline(always)]
    pub(crate) fn with_parts(
        name: Cow<'static, str>,
        edges: Edges,
        input_meta: InputMetas,
        output_meta: OutputMetas,
        saved: Vec<SavedTensor>,
        backward: Box<dyn Backward>,
    ) -> Node {
        Node {
            seq: next_seq(),
            name,
            edges,
            input_meta,
            output_meta,
            saved: Mutex::new(SavedSlot::Stored(saved)),
            backward: Some(backward),
            created_at: super::anomaly::current_location(),
            anomaly_parent: super::anomaly::current_parent(),
            pre_hooks: Mutex::new(Vec::new()),
            node_hooks: Mutex::new(Vec::new()),
            hook_flags: std::sync::atomic::AtomicU8::new(0),
            metadata: std::sync::OnceLock::new(),
            wrapper: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The node's name (`MulBackward`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The edges to the nodes of this operation's inputs.
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.edges
    }

    /// Sequence number (creation order).
    pub fn sequence_nr(&self) -> u64 {
        self.seq
    }

    /// Number of outputs of the forward operation.
    pub fn num_outputs(&self) -> usize {
        self.output_meta.len()
    }

    /// Where the node was created, under anomaly mode.
    pub fn created_at(&self) -> Option<&str> {
        self.created_at.as_deref()
    }

    /// Under anomaly mode, the lineage of the node whose backward created this one.
    pub fn anomaly_parent(&self) -> Option<&Arc<super::anomaly::Lineage>> {
        self.anomaly_parent.as_ref()
    }

    /// This node's lineage (anomaly mode): its name, creation place and parent.
    pub(crate) fn lineage(&self) -> Arc<super::anomaly::Lineage> {
        Arc::new(super::anomaly::Lineage {
            name: self.name.to_string(),
            created_at: self.created_at.clone(),
            parent: self.anomaly_parent.clone(),
        })
    }

    /// Under anomaly mode, warns that this node's backward failed (see `anomaly::warn_failure`)
    /// and hands the error back; an interruption is not a failure of the node.
    pub(crate) fn report_failure(&self, e: Error) -> Error {
        if !matches!(e, Error::Interrupted) {
            super::anomaly::warn_failure(&self.name, self.created_at.as_deref(), self.anomaly_parent.as_ref());
        }
        e
    }

    pub(crate) fn formula(&self) -> &dyn Backward {
        self.backward.as_deref().expect("a node's formula is only taken in drop")
    }

    /// Runs the backward formula.
    pub fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        if self.formula().keeps_values() && self.is_released() {
            return Err(graph_freed_error());
        }
        self.formula().apply(self, grads)
    }

    /// The saved tensors, version-checked. Fails when they were released by an earlier backward.
    pub fn unpack_saved(&self) -> Result<Vec<Tensor>> {
        self.unpack_saved_inline().map(smallvec::SmallVec::into_vec)
    }

    /// `unpack_saved`, inline for up to two tensors: the formulas of the element-wise operations
    /// read theirs without an allocation (NOTE [Per-operation overhead] in `record.rs`).
    pub(crate) fn unpack_saved_inline(&self) -> Result<smallvec::SmallVec<[Tensor; 2]>> {
        // Copied out first: an unpack hook runs Python code, never under this lock (it may read
        // this node's saved tensors again, or release them).
        // (Plain loops: the iterator adapters' `collect` into inline vectors cost more than the
        // allocation they save.)
        let mut copies: smallvec::SmallVec<[SavedTensor; 2]> = smallvec::SmallVec::new();
        {
            let slot = self.saved.lock();
            match &*slot {
                SavedSlot::Stored(saved) => {
                    for s in saved {
                        copies.push(s.clone());
                    }
                }
                SavedSlot::Released { had: 0 } => return Ok(smallvec::SmallVec::new()),
                SavedSlot::Released { .. } => return Err(graph_freed_error()),
            }
        }
        let mut out = smallvec::SmallVec::new();
        for s in &copies {
            out.push(s.unpack(&self.name)?);
        }
        Ok(out)
    }

    /// Visits the saved tensors without unpacking them (for drawing the graph); None once released.
    pub fn with_saved<R>(&self, f: impl FnOnce(Option<&[SavedTensor]>) -> R) -> R {
        let slot = self.saved.lock();
        match &*slot {
            SavedSlot::Stored(saved) => f(Some(saved)),
            // A node that saved nothing has nothing freed (to_dot drew "saved tensors freed" on it).
            SavedSlot::Released { had: 0 } => f(Some(&[])),
            SavedSlot::Released { .. } => f(None),
        }
    }

    /// Frees what the node saved for backward (called by the engine unless `retain_graph`).
    pub fn release_variables(&self) {
        let old = {
            let mut slot = self.saved.lock();
            let had = match &*slot {
                SavedSlot::Stored(s) => s.len(),
                SavedSlot::Released { had } => *had,
            };
            std::mem::replace(&mut *slot, SavedSlot::Released { had })
        };
        drop(old);
        self.formula().release();
    }

    /// True once `release_variables` ran.
    pub fn is_released(&self) -> bool {
        matches!(*self.saved.lock(), SavedSlot::Released { .. })
    }

    /// The name of input `i` for messages.
    pub fn input_name(&self, i: usize) -> String {
        self.formula().input_name(i)
    }
}

/// The message of API.md §4 for a second backward through a freed graph.
pub fn graph_freed_error() -> Error {
    Error::autograd(
        "Trying to backward through the graph a second time (or directly access saved tensors after \
         they have already been freed). Saved intermediate values of the graph are freed when you call \
         .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the \
         graph a second time or if you need to access saved tensors after calling backward.",
    )
}

// NOTE [Iterative drop]: a chain of a million nodes is a chain of a million `Arc`s; dropping its head
// would recurse once per node and overflow the stack. Each node's drop therefore moves what it owns
// (edges, formula, saved tensors) onto a per-thread queue; only the outermost drop drains it, so
// the depth stays constant however long the chain.
/// What a dropped node owns that may hold other nodes (NOTE [Iterative drop]).
type NodeParts = (
    Edges,
    Option<Box<dyn Backward>>,
    SavedSlot,
    Vec<(u64, super::hooks::NodeHook)>,
    Option<Box<dyn std::any::Any + Send + Sync>>,
);

/// This thread's queue of dropped nodes' parts, and whether a drop up the stack is draining it (one
/// thread-local, not two: each access is a call in the shared object, issue 19).
struct DropQueue {
    parts: Vec<NodeParts>,
    draining: bool,
}

thread_local! {
    // Typed (not boxed) so that queueing a node's parts allocates nothing once the queue has grown.
    static DROP_QUEUE: RefCell<DropQueue> = const { RefCell::new(DropQueue { parts: Vec::new(), draining: false }) };
}

impl Drop for Node {
    fn drop(&mut self) {
        let edges = std::mem::take(&mut self.edges);
        let backward = self.backward.take();
        let saved = std::mem::replace(self.saved.get_mut(), SavedSlot::Released { had: 0 });
        let hooks = std::mem::take(self.node_hooks.get_mut());
        let metadata = self.metadata.take();
        let mut owned = Some((edges, backward, saved, hooks, metadata));
        // Queued, and whether this drop is the outermost one (which drains the queue).
        let drains = DROP_QUEUE
            .try_with(|q| {
                let mut q = q.borrow_mut();
                if let Some(parts) = owned.take() {
                    q.parts.push(parts);
                }
                !std::mem::replace(&mut q.draining, true)
            })
            .unwrap_or(false);
        // Without the thread's queue (thread teardown), the parts drop here, recursively.
        drop(owned);
        if !drains {
            return;
        }
        loop {
            let next = DROP_QUEUE.with(|q| {
                let mut q = q.borrow_mut();
                let next = q.parts.pop();
                if next.is_none() {
                    q.draining = false;
                }
                next
            });
            match next {
                Some(item) => drop(item),
                None => break,
            }
        }
    }
}

/// The edge along which a gradient for `t` travels: its `grad_fn`, or its leaf accumulator (made on
/// first use), or none when it needs no gradient.
pub fn gradient_edge(t: &Tensor) -> Option<Edge> {
    t.refresh_view_history();
    {
        let m = t.0.meta.lock();
        if let Some(f) = &m.grad_fn {
            return Some(Edge { node: f.clone(), input_nr: m.output_nr });
        }
        if !m.requires_grad {
            return None;
        }
        if let Some(acc) = m.grad_accumulator.upgrade() {
            return Some(Edge { node: acc, input_nr: 0 });
        }
    }
    // The node is made without the tensor's lock: under anomaly mode `Node::new` asks the binding
    // layer for the user's location, which takes the GIL and runs Python code (which may itself
    // need this tensor). Another thread may install an accumulator meanwhile; the first one wins.
    let meta = TensorMeta::of(t);
    let acc = Arc::new(Node::with_parts(
        Cow::Borrowed("AccumulateGrad"),
        Edges::new(),
        smallvec::smallvec![Some(meta.clone())],
        smallvec::smallvec![meta],
        Vec::new(),
        Box::new(AccumulateGrad { variable: t.clone() }),
    ));
    let mut m = t.0.meta.lock();
    if let Some(f) = &m.grad_fn {
        // Made a non-leaf meanwhile (an in-place operation on another thread).
        let edge = Edge { node: f.clone(), input_nr: m.output_nr };
        drop(m);
        drop(acc);
        return Some(edge);
    }
    if let Some(existing) = m.grad_accumulator.upgrade() {
        drop(m);
        drop(acc);
        return Some(Edge { node: existing, input_nr: 0 });
    }
    m.grad_accumulator = Arc::downgrade(&acc);
    Some(Edge { node: acc, input_nr: 0 })
}
