//! The backward scheduler. One run is a `GraphTask` (as in PyTorch's `engine.cpp`), which
//! `run_here` takes through these phases:
//!
//! 1. Seed (`seed_roots`): each root's gradient is checked against the root and cast to its dtype
//!    (an implicit 1 for a one-element root).
//! 2. Discover (`GraphTask::discover`): walk the graph from the roots (iteratively) and count, for
//!    every node, the edges that reach it.
//! 3. Plan capture (`plan_capture`): for `grad` and `backward(inputs=...)`, find the input slots the
//!    wanted gradients are read from and the nodes that must run to reach them (for
//!    `backward(inputs=...)`, the target nodes themselves too).
//! 4. Seed the buffers (`seed_buffers`): the roots' gradients go into per-node input buffers, where
//!    gradients for one slot are summed; nodes that no edge reaches are ready.
//! 5. Execute (`execute`): ready nodes (all their incoming edges delivered) leave a max-heap on the
//!    sequence number, newest first, a deterministic order that follows the forward pass
//!    backwards, in batches (`execute`, `fill_batch`, NOTE [Parallel branches]). Each node's waiting gradients
//!    pass its pre-hooks and are captured where it is a target (`take_inputs`, `capture`); then the
//!    nodes that must run do (`run_batch`), and their gradients are validated against their inputs'
//!    shapes and dtypes (summed down where the forward broadcast, see `validate`).
//! 6. Release (`release`): a node that ran frees its saved tensors unless `retain_graph`.
//! 7. Deliver (`deliver`): its gradients are added into the buffers of the nodes its edges reach,
//!    and a node becomes ready once every edge that reaches it has delivered.
//!
//! Nothing here recurses, so graph depth is bounded only by memory. Adding into `.grad` is
//! `accumulate.rs`.

use std::collections::BinaryHeap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use rayon::prelude::*;

use super::anomaly;
use super::grad_mode::GradModeGuard;
use super::node::{gradient_edge, Edge, Node};
use crate::error::{Error, Result};
use crate::tensor::layout::{fmt_shape, is_broadcastable_to};
use crate::tensor::Tensor;

pub(super) type NodeId = usize;

/// The engine's maps are keyed by node addresses: a multiply-and-fold hash of one word is enough,
/// and std's SipHash took a few percent of a small graph's backward (measured on W2).
#[derive(Default)]
pub(super) struct NodeIdHasher(u64);

impl Hasher for NodeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Addresses are aligned: the low bits carry nothing; the fold brings the product's well
        // mixed high half down to the bits a hash table indexes with.
        let m = ((n as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = m ^ (m >> 29);
    }
}

pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<NodeIdHasher>>;
pub(super) type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<NodeIdHasher>>;

/// Gradients by slot (one per input of the node that receives them); None where none arrived.
type Grads = Vec<Option<Tensor>>;

/// A node of a batch that runs, with the gradients it receives.
type Job = (Arc<Node>, Grads);

pub(super) fn id(node: &Arc<Node>) -> NodeId {
    Arc::as_ptr(node) as usize
}

/// Called every few nodes; the binding layer installs a check for Ctrl-C here.
static INTERRUPT_HOOK: std::sync::OnceLock<fn() -> Result<()>> = std::sync::OnceLock::new();

/// Installs the interrupt check (once per process).
pub fn set_interrupt_hook(hook: fn() -> Result<()>) {
    let _ = INTERRUPT_HOOK.set(hook);
}

// NOTE [The host lock in backward]: the Python binding runs a backward with the GIL released, so
// that other Python threads run meanwhile; a node that calls back into Python (a custom Function)
// then takes the GIL again, and for a small graph of such nodes that round trip per node was a
// large share of the run (W3). So the binding installs a `HostLock`, and a run whose graph is small
// (a few thousand nodes), has a node that needs it (a formula that is not `parallel_safe`) and only
// small tensors (so that no parallel batch forms, and no node's work is long) takes the lock once
// for its whole execution (`GraphTask::wants_host_lock`). It yields the lock every 256 batches and
// around anything that waits for another thread that might need it: a parallel batch and a deep
// reentrant run's worker thread. The lock
// order stays the GIL before a tensor's lock, never the other way (NOTE [No Python under a tensor
// lock]).
/// A way of running a closure with or without the host's lock.
pub type HostLockCall = fn(&mut (dyn FnMut() + Send));

/// The lock of the interpreter the engine runs for (Python's GIL), as the binding gives it.
pub struct HostLock {
    /// Runs the closure holding the lock (taking it if this thread does not hold it).
    pub with: HostLockCall,
    /// Runs the closure without the lock if this thread holds it (else just runs it).
    pub without: HostLockCall,
}

static HOST_LOCK: std::sync::OnceLock<HostLock> = std::sync::OnceLock::new();
/// The largest graph that holds the host's lock for its whole run: a longer run would keep other
/// threads (one that sends a signal, say) waiting too long.
const HOST_LOCK_MAX_NODES: usize = 4096;

/// Installs the host's lock (once per process): NOTE [The host lock in backward].
pub fn set_host_lock(lock: HostLock) {
    let _ = HOST_LOCK.set(lock);
}

/// Runs `f` through `HostLock::with` or `without` (chosen by `pick`); just runs it without a host.
fn host_lock_call<R: Send>(pick: fn(&HostLock) -> HostLockCall, f: impl FnOnce() -> R + Send) -> R {
    let Some(lock) = HOST_LOCK.get() else { return f() };
    let mut f = Some(f);
    let mut out = None;
    pick(lock)(&mut || {
        if let Some(f) = f.take() {
            out = Some(f());
        }
    });
    out.expect("the host lock ran the closure")
}

/// Runs `f` without the host's lock if this thread holds it.
fn without_host_lock<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    host_lock_call(|l| l.without, f)
}

/// Accumulates the gradients of `roots` into the `.grad` of the leaves (or of `inputs` when given).
pub fn backward(
    roots: &[Tensor],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
) -> Result<()> {
    match inputs {
        None => run(Roots::Tensors(roots), grad_roots, retain_graph, create_graph, Capture::NONE).map(|_| ()),
        Some(inputs) => {
            // A non-leaf input retains its gradient from now on, as in PyTorch; its retain hook
            // stores the gradient during the run (adding it here too counted it twice when the
            // tensor already retained its gradient).
            for t in inputs.iter().filter(|t| t.grad_fn().is_some()) {
                t.retain_grad()?;
            }
            // As PyTorch, the node each input's gradient flows into runs (a leaf's accumulator
            // stores its `.grad`; a non-leaf's grad_fn runs its hooks and formula) and the run
            // stops there.
            let capture = Capture { edges: &capture_edges(inputs), run_targets: true };
            run(Roots::Tensors(roots), grad_roots, retain_graph, create_graph, capture).map(|_| ())
        }
    }
}

/// Returns the gradients of `roots` with respect to `inputs` without touching any `.grad`.
pub fn grad(
    roots: &[Tensor],
    inputs: &[Tensor],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    if inputs.is_empty() {
        return Err(Error::value("grad requires at least one input"));
    }
    for (i, t) in inputs.iter().enumerate() {
        if !t.requires_grad() {
            return Err(Error::autograd(format!("input {i} of grad does not require grad")));
        }
    }
    let capture = Capture { edges: &capture_edges(inputs), run_targets: false };
    let grads = run(Roots::Tensors(roots), grad_roots, retain_graph, create_graph, capture)?;
    if !allow_unused {
        if let Some(i) = grads.iter().position(|g| g.is_none()) {
            return Err(Error::autograd(format!(
                "One of the differentiated Tensors (input {i}) appears to not have been used in the \
                 graph. Set allow_unused=True if this is the desired behavior."
            )));
        }
    }
    Ok(grads)
}

/// The gradients of `roots` at the given edges (PyTorch's `GradientEdge` as an input of `grad`): the
/// gradient flowing into input slot `input_nr` of each edge's node.
pub fn grad_at_edges(
    roots: &[Tensor],
    edges: &[Edge],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let capture: Vec<Option<Edge>> = edges.iter().cloned().map(Some).collect();
    run(Roots::Tensors(roots), grad_roots, retain_graph, create_graph, Capture { edges: &capture, run_targets: false })
}

/// A run that starts at gradient edges rather than tensors (PyTorch's `GradientEdge` given as an
/// output of `grad` or `backward`): the seed of each flows into input slot `input_nr` of its node.
/// `capture` names where gradients are read (None: nowhere); without captures every leaf reached
/// accumulates, as `backward` does.
pub fn run_from_edges(
    roots: &[Edge],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    capture: &[Option<Edge>],
) -> Result<Vec<Option<Tensor>>> {
    run(Roots::Edges(roots), grad_roots, retain_graph, create_graph, Capture { edges: capture, run_targets: false })
}

/// Where the gradient of each tensor is read: its grad_fn's slot, or its leaf accumulator (made
/// here if needed: a root that is itself the leaf gets the same one when seeded; one that no path
/// reaches is not in the graph and captures nothing).
fn capture_edges(inputs: &[Tensor]) -> Vec<Option<Edge>> {
    inputs.iter().map(gradient_edge).collect()
}

/// A ready node's place in the heap: newest first, except that a leaf's accumulator runs as soon
/// as it is ready (as PyTorch's AccumulateGrad, whose sequence number is the largest), so that
/// `.grad`, its hooks and post-accumulate hooks do not wait for unrelated branches.
fn priority(node: &Node) -> u64 {
    if node.formula().accumulates_into().is_some() {
        node.seq | (1 << 63)
    } else {
        node.seq
    }
}

/// Where a captured gradient is read: input slot `input_nr` of a node.
struct Target {
    node: NodeId,
    input_nr: usize,
}

// NOTE [Deep reentrant backward]: a backward started inside a backward (a custom function's
// backward or a hook that calls backward) runs nested on its caller's stack, Rust's and Python's.
// Past MAX_REENTRANT_DEPTH nested runs on one thread, the next one runs on a fresh thread while the
// caller waits, as PyTorch does, so the depth is bounded by memory rather than by the stack or by
// Python's recursion limit (which is per thread). Grad mode is set by `run` itself and anomaly mode
// is global, so nothing else needs carrying over.
const MAX_REENTRANT_DEPTH: usize = 32;
const REENTRANT_THREAD_STACK: usize = 64 << 20;

thread_local! {
    static REENTRANT_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Restores the depth counter of this thread when a run ends (also on error or panic).
struct DepthGuard(usize);

impl Drop for DepthGuard {
    fn drop(&mut self) {
        REENTRANT_DEPTH.with(|d| d.set(self.0));
    }
}

/// Where a run reads the gradients it returns (`grad`, `backward(inputs=...)`): one edge per
/// wanted gradient (None: not in the graph). With `run_targets` the nodes those edges reach run
/// too (`backward(inputs=...)`: an input's accumulator or grad_fn runs, and the run stops there);
/// else they are only captured (`grad`). No edges at all: every node runs.
#[derive(Clone, Copy)]
struct Capture<'a> {
    edges: &'a [Option<Edge>],
    run_targets: bool,
}

impl Capture<'_> {
    const NONE: Capture<'static> = Capture { edges: &[], run_targets: false };
}

/// Where a backward run starts: tensors, or gradient edges (PyTorch's `GradientEdge` as an output).
#[derive(Clone, Copy)]
enum Roots<'a> {
    Tensors(&'a [Tensor]),
    Edges(&'a [Edge]),
}

fn run(
    roots: Roots<'_>,
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    capture: Capture<'_>,
) -> Result<Vec<Option<Tensor>>> {
    let depth = REENTRANT_DEPTH.with(|d| d.get());
    if depth >= MAX_REENTRANT_DEPTH {
        // The worker may need the host's lock (NOTE [The host lock in backward]).
        return without_host_lock(|| {
            std::thread::scope(|scope| {
                let worker = std::thread::Builder::new()
                    .name("tapegrad-reentrant-backward".into())
                    .stack_size(REENTRANT_THREAD_STACK)
                    .spawn_scoped(scope, || run(roots, grad_roots, retain_graph, create_graph, capture))
                    .map_err(|e| {
                        Error::autograd(format!("could not start a thread for a deep reentrant backward: {e}"))
                    })?;
                worker.join().unwrap_or_else(|_| Err(Error::autograd("a deep reentrant backward panicked")))
            })
        });
    }
    let _depth = DepthGuard(depth);
    REENTRANT_DEPTH.with(|d| d.set(depth + 1));
    run_here(roots, grad_roots, retain_graph, create_graph, capture)
}

/// One backward run on this thread, phase by phase (the numbers of the module header).
fn run_here(
    roots: Roots<'_>,
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    capture: Capture<'_>,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = GradModeGuard::new(create_graph);
    let callbacks: Callbacks = Arc::new(TaskCallbacks {
        id: NEXT_TASK_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        captures: !capture.edges.is_empty(),
        queued: parking_lot::Mutex::new(Vec::new()),
    });
    let _callbacks = CallbacksGuard(CURRENT_CALLBACKS.with(|c| c.replace(Some(callbacks.clone()))));
    let seeds = match roots {
        Roots::Tensors(roots) => seed_roots(roots, grad_roots)?,
        Roots::Edges(edges) => seed_edges(edges, grad_roots)?,
    };
    let mut task = GraphTask::discover(&seeds, retain_graph, create_graph);
    task.plan_capture(capture);
    task.seed_buffers(seeds)?;
    if task.wants_host_lock() {
        task.holds_host_lock = true;
        host_lock_call(|l| l.with, || task.execute())?;
        task.holds_host_lock = false;
    } else {
        task.execute()?;
    }
    // Final callbacks, in the order queued; one may queue another, which runs too.
    loop {
        let batch = std::mem::take(&mut *callbacks.queued.lock());
        if batch.is_empty() {
            break;
        }
        for f in batch {
            f()?;
        }
    }
    Ok(task.captured)
}

/// A function to run once the current backward has finished (`queue_callback`).
pub type FinalCallback = Box<dyn FnOnce() -> Result<()> + Send>;
/// One backward run's final callbacks, and a number that tells the run apart from every other.
struct TaskCallbacks {
    id: u64,
    /// The run captures gradients (`grad`, `backward(inputs=...)`) instead of accumulating all.
    captures: bool,
    queued: parking_lot::Mutex<Vec<FinalCallback>>,
}
type Callbacks = Arc<TaskCallbacks>;
static NEXT_TASK_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Whether the backward run going on on this thread captures gradients (`grad` or
/// `backward(inputs=...)`) rather than accumulating into every leaf: a reentrant checkpoint
/// cannot serve such a run (its nested backward accumulates).
pub fn current_backward_captures() -> bool {
    CURRENT_CALLBACKS.with(|c| c.borrow().as_ref().is_some_and(|t| t.captures))
}

/// A number unique to the backward run going on on this thread (None outside one): per-run state
/// kept by hooks (`register_multi_grad_hook`) is keyed by it.
pub fn current_backward_id() -> Option<u64> {
    CURRENT_CALLBACKS.with(|c| c.borrow().as_ref().map(|t| t.id))
}

thread_local! {
    /// The final callbacks of the backward running on this thread (its worker threads too).
    static CURRENT_CALLBACKS: std::cell::RefCell<Option<Callbacks>> = const { std::cell::RefCell::new(None) };
}

/// Restores the enclosing backward's callbacks (a nested backward has its own).
struct CallbacksGuard(Option<Callbacks>);

impl Drop for CallbacksGuard {
    fn drop(&mut self) {
        let mine = CURRENT_CALLBACKS.with(|c| c.replace(self.0.take()));
        // Callbacks never run (the backward failed) are dropped here, outside every lock.
        drop(mine);
    }
}

/// Queues `f` to run after the backward pass that is running on this thread has finished
/// (PyTorch's `Variable._execution_engine.queue_callback`); an error outside a backward pass.
pub fn queue_callback(f: FinalCallback) -> Result<()> {
    let current = CURRENT_CALLBACKS.with(|c| c.borrow().clone());
    match current {
        Some(cbs) => {
            cbs.queued.lock().push(f);
            Ok(())
        }
        None => Err(Error::autograd("Final callbacks can only be installed during backward pass.")),
    }
}

/// 1. Seed: the roots' edges with their gradients, given ones checked and cast, missing ones 1.
fn seed_roots(roots: &[Tensor], grad_roots: &[Option<Tensor>]) -> Result<Vec<(Edge, Tensor)>> {
    if roots.len() != grad_roots.len() {
        return Err(Error::value(format!("got {} tensors and {} gradients", roots.len(), grad_roots.len())));
    }
    let mut seeds: Vec<(Edge, Tensor)> = Vec::with_capacity(roots.len());
    for (i, (root, g)) in roots.iter().zip(grad_roots).enumerate() {
        let edge = gradient_edge(root).ok_or_else(|| {
            Error::autograd(format!("element {i} of tensors does not require grad and does not have a grad_fn"))
        })?;
        seeds.push((edge, seed_gradient(i, root, g.as_ref())?));
    }
    Ok(seeds)
}

/// The seeds of edge roots: the gradient given (of the shape of what flows there), or ones when
/// that is a single element.
fn seed_edges(edges: &[Edge], grad_roots: &[Option<Tensor>]) -> Result<Vec<(Edge, Tensor)>> {
    if edges.len() != grad_roots.len() {
        return Err(Error::value(format!("got {} tensors and {} gradients", edges.len(), grad_roots.len())));
    }
    let mut seeds = Vec::with_capacity(edges.len());
    for (i, (edge, g)) in edges.iter().zip(grad_roots).enumerate() {
        let meta = edge.node.output_meta.get(edge.input_nr).ok_or_else(|| {
            Error::index(format!(
                "gradient edge {i} names input {} of a node that has {}",
                edge.input_nr,
                edge.node.output_meta.len()
            ))
        })?;
        let seed = match g {
            None if meta.shape.iter().product::<usize>() != 1 => {
                return Err(Error::autograd(format!(
                    "grad can be implicitly created only for scalar outputs (output {i} has shape {})",
                    fmt_shape(&meta.shape)
                )))
            }
            None => Tensor::ones(&meta.shape, meta.dtype)?,
            Some(g) if g.shape() != meta.shape.as_slice() => {
                return Err(Error::shape(format!(
                    "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.",
                    fmt_shape(g.shape()),
                    fmt_shape(&meta.shape)
                )))
            }
            Some(g) if g.dtype() != meta.dtype => g.to_dtype(meta.dtype)?,
            Some(g) => g.clone(),
        };
        seeds.push((edge.clone(), seed));
    }
    Ok(seeds)
}

/// The seed gradient of root `i`.
fn seed_gradient(i: usize, root: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
    let Some(g) = g else {
        if root.numel() != 1 {
            return Err(Error::autograd(format!(
                "grad can be implicitly created only for scalar outputs (output {i} has shape {})",
                fmt_shape(root.shape())
            )));
        }
        return Tensor::ones_like(root);
    };
    if g.shape() != root.shape() {
        return Err(Error::shape(format!(
            "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.",
            fmt_shape(g.shape()),
            fmt_shape(root.shape())
        )));
    }
    // A seed of another dtype is cast to the root's, as PyTorch does: when the root is itself a
    // leaf (or a captured input) no node's `validate` casts it, and a float64 leaf's `.grad` became
    // float32 (or bool) after `x.backward(tg.ones(...))`.
    if g.dtype() != root.dtype() {
        g.to_dtype(root.dtype())
    } else {
        Ok(g.clone())
    }
}

/// The state of one backward run (PyTorch's `GraphTask`): the graph reachable from the roots and
/// how far its execution has come.
struct GraphTask {
    retain_graph: bool,
    create_graph: bool,
    /// Every node reachable from the roots, with its scheduling state (NOTE [One map per run]).
    graph: HashMap<NodeId, Slot>,
    /// Nodes whose incoming edges have all delivered, by sequence number (newest first).
    ready: BinaryHeap<(u64, NodeId)>,
    /// Where each gradient asked for by `grad` / `backward(inputs=...)` is read; None when that
    /// input is not in the graph.
    targets: Vec<Option<Target>>,
    /// With capture targets, which nodes must run to reach them; None when every node runs.
    must_run: Option<HashMap<NodeId, bool>>,
    /// The captured gradients, one per capture target.
    captured: Vec<Option<Tensor>>,
    /// Batches run so far (for the interrupt check).
    batches: usize,
    /// The run holds the host's lock (NOTE [The host lock in backward]).
    holds_host_lock: bool,
}

// NOTE [One map per run]: a run keeps, for each node of its graph, the node itself, the count of
// edges that have not delivered to it yet and the gradients it received so far, in one entry of one
// map keyed by the node's address. (Three maps, one for each, took two or three hash lookups per node
// at each step, and two inserts per node in discovery: about a tenth of a small graph's backward on
// W2, callgrind.) The entry lives until the run ends, as the node's handle did in the map of nodes;
// its gradients are taken when the node runs. The map starts as large as the previous run's graph
// (at most `MAX_GRAPH_HINT` entries): a training loop runs the same graph step after step, and
// growing the map by doubling rehashed every entry about once more (W2, callgrind).

/// One node of a run's graph (NOTE [One map per run]).
struct Slot {
    node: Arc<Node>,
    /// How many of the edges that reach the node have not delivered yet.
    deps: usize,
    /// The gradients received so far, one slot per input (summed per slot); None before the first.
    grads: Option<Grads>,
}

/// The nodes reachable from `seeds` (walked iteratively), each with the number of edges that reach
/// it: the scheduler's dependency counts.
fn discover_slots(seeds: &[(Edge, Tensor)]) -> HashMap<NodeId, Slot> {
    use std::collections::hash_map::Entry;
    use std::sync::atomic::Ordering::Relaxed;
    let mut graph: HashMap<NodeId, Slot> = HashMap::default();
    // Sized for the previous run's graph (NOTE [One map per run]).
    graph.reserve(LAST_GRAPH_NODES.load(Relaxed).min(MAX_GRAPH_HINT));
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (edge, _) in seeds {
        if let Entry::Vacant(v) = graph.entry(id(&edge.node)) {
            v.insert(Slot { node: edge.node.clone(), deps: 0, grads: None });
            stack.push(edge.node.clone());
        }
    }
    while let Some(node) = stack.pop() {
        for edge in node.edges.iter().flatten() {
            match graph.entry(id(&edge.node)) {
                Entry::Occupied(mut o) => o.get_mut().deps += 1,
                Entry::Vacant(v) => {
                    v.insert(Slot { node: edge.node.clone(), deps: 1, grads: None });
                    stack.push(edge.node.clone());
                }
            }
        }
    }
    LAST_GRAPH_NODES.store(graph.len(), Relaxed);
    graph
}

/// The size of the last run's graph: the next run's map starts that large (NOTE [One map per run]).
static LAST_GRAPH_NODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The most entries a run's map is made for in advance (about 800 KB).
const MAX_GRAPH_HINT: usize = 1 << 14;

/// The nodes reachable from `seeds` (walked iteratively, by address) and, for each, the number of
/// edges that reach it: the scheduler's dependency counts.
pub(super) fn discover_graph(seeds: &[(Edge, Tensor)]) -> (HashMap<NodeId, Arc<Node>>, HashMap<NodeId, usize>) {
    let mut nodes: HashMap<NodeId, Arc<Node>> = HashMap::default();
    let mut deps: HashMap<NodeId, usize> = HashMap::default();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (edge, _) in seeds {
        if nodes.insert(id(&edge.node), edge.node.clone()).is_none() {
            stack.push(edge.node.clone());
        }
    }
    while let Some(node) = stack.pop() {
        for edge in node.edges.iter().flatten() {
            let nid = id(&edge.node);
            *deps.entry(nid).or_insert(0) += 1;
            if let std::collections::hash_map::Entry::Vacant(slot) = nodes.entry(nid) {
                slot.insert(edge.node.clone());
                stack.push(edge.node.clone());
            }
        }
    }
    (nodes, deps)
}

impl GraphTask {
    /// 2. Discover: walks the graph from the roots (iteratively) and counts, for every node, the
    ///    edges that reach it.
    fn discover(seeds: &[(Edge, Tensor)], retain_graph: bool, create_graph: bool) -> GraphTask {
        GraphTask {
            retain_graph,
            create_graph,
            graph: discover_slots(seeds),
            ready: BinaryHeap::new(),
            targets: Vec::new(),
            must_run: None,
            captured: Vec::new(),
            batches: 0,
            holds_host_lock: false,
        }
    }

    /// 3. Plan capture: finds the capture targets (`grad` / `backward(inputs=...)`) and which nodes
    ///    must run to reach them.
    fn plan_capture(&mut self, capture: Capture<'_>) {
        self.targets = capture
            .edges
            .iter()
            .map(|edge| {
                edge.as_ref()
                    .filter(|e| self.graph.contains_key(&id(&e.node)))
                    .map(|e| Target { node: id(&e.node), input_nr: e.input_nr })
            })
            .collect();
        self.must_run = if capture.edges.is_empty() {
            None
        } else {
            let mut must_run = nodes_leading_to(&self.graph, &self.targets);
            if capture.run_targets {
                for t in self.targets.iter().flatten() {
                    must_run.insert(t.node, true);
                }
            }
            Some(must_run)
        };
        self.captured = vec![None; capture.edges.len()];
    }

    /// 4. Seed the buffers: puts the roots' gradients into their buffers and readies the nodes
    ///    that no edge reaches.
    fn seed_buffers(&mut self, seeds: Vec<(Edge, Tensor)>) -> Result<()> {
        for (edge, g) in seeds {
            if let Some(slot) = self.graph.get_mut(&id(&edge.node)) {
                add_to_slot(slot, &edge, g)?;
            }
        }
        for (&nid, slot) in &self.graph {
            if slot.deps == 0 {
                self.ready.push((priority(&slot.node), nid));
            }
        }
        Ok(())
    }

    /// 5. Execute: runs the graph, one batch of ready nodes at a time (see NOTE [Parallel branches]):
    ///    each node's inputs taken (and captured), the batch run, then each node released (6) and its
    ///    gradients delivered (7), in batch order.
    fn execute(&mut self) -> Result<()> {
        while let Some(first) = self.ready.pop() {
            self.tick()?;
            if !self.is_parallel_candidate(first.1) {
                // A batch of one, the common case of small graphs: the same steps as below without
                // the batch's vectors.
                self.run_alone(first.1)?;
                continue;
            }
            let batch = self.fill_batch(first)?;
            let jobs = self.take_inputs(&batch)?;
            let nodes: Vec<Arc<Node>> = jobs.iter().map(|(node, _)| node.clone()).collect();
            let outputs = self.run_batch(jobs);
            for (node, out) in nodes.iter().zip(outputs) {
                let out = out?;
                self.release(node);
                self.deliver(node, out)?;
            }
        }
        Ok(())
    }

    /// Counts a step of the run; every 256th checks for an interrupt (Ctrl-C in Python).
    fn tick(&mut self) -> Result<()> {
        self.batches += 1;
        if self.batches.is_multiple_of(256) {
            if let Some(hook) = INTERRUPT_HOOK.get() {
                hook()?;
            }
            if self.holds_host_lock {
                without_host_lock(|| ()); // other threads' turn
            }
        }
        Ok(())
    }

    /// Runs one ready node on this thread: its inputs taken, the node run, released, its gradients
    /// delivered.
    fn run_alone(&mut self, nid: NodeId) -> Result<()> {
        if let Some((node, grads)) = self.take_input(nid)? {
            let out = call_node(&node, grads, self.create_graph)?;
            self.release(&node);
            self.deliver(&node, out)?;
        }
        Ok(())
    }

    /// A batch that starts with `first`, a parallel candidate: joined by the following ready nodes
    /// while they are candidates too. A small node between them that nothing can observe is run at
    /// once, and the candidates it readies join the batch (NOTE [Parallel branches]).
    fn fill_batch(&mut self, first: (u64, NodeId)) -> Result<Vec<(u64, NodeId)>> {
        let mut batch = vec![first];
        let mut ran_ahead = false;
        while let Some(&next) = self.ready.peek() {
            if batch.len() >= MAX_BATCH {
                break;
            }
            if self.is_parallel_candidate(next.1) {
                // After a node ran ahead, a candidate may be taken before nodes of higher priority
                // that the batch's members will ready: only one that nothing can observe.
                if ran_ahead && !self.unobservable(next.1) {
                    break;
                }
                batch.push(next);
                self.ready.pop();
            } else if self.may_run_ahead(next.1) {
                self.ready.pop();
                self.tick()?;
                self.run_alone(next.1)?;
                ran_ahead = true;
            } else {
                break;
            }
        }
        Ok(batch)
    }

    /// Whether running a node earlier than the heap's order is invisible: it has no hooks (pre-,
    /// post- or tensor hooks, which are Python callbacks) and is no accumulator (whose `.grad` a
    /// hook could read). Its only effect is then on the gradient buffers of nodes that have not run.
    fn unobservable(&self, nid: NodeId) -> bool {
        let node = &self.graph[&nid].node;
        node.formula().accumulates_into().is_none() && !node.has_hooks()
    }

    /// Whether a ready node that is not a parallel candidate may run before the candidates already
    /// taken for a batch: its formula is native, running it early is `unobservable`, it is no
    /// capture target, and anomaly mode is off (whose reports follow the execution order).
    fn may_run_ahead(&self, nid: NodeId) -> bool {
        self.graph[&nid].node.formula().parallel_safe()
            && self.unobservable(nid)
            && !self.targets.iter().flatten().any(|t| t.node == nid)
            && !anomaly::is_enabled()
    }

    /// Takes the gradients waiting for each node of the batch, runs their pre-hooks, captures the
    /// targets' gradients, and returns the nodes that run with their gradients.
    fn take_inputs(&mut self, batch: &[(u64, NodeId)]) -> Result<Vec<Job>> {
        let mut jobs: Vec<Job> = Vec::with_capacity(batch.len());
        for &(_, nid) in batch {
            if let Some(job) = self.take_input(nid)? {
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// `take_inputs` for one node: its gradients after its pre-hooks, captured where it is a target;
    /// None when it does not run.
    fn take_input(&mut self, nid: NodeId) -> Result<Option<Job>> {
        let slot = self.graph.get_mut(&nid).expect("a ready node is in the run's graph");
        let node = slot.node.clone();
        let grads = slot.grads.take().unwrap_or_else(|| vec![None; node.num_outputs().max(1)]);
        let runs = match &self.must_run {
            None => true,
            Some(set) => set.get(&nid).copied().unwrap_or(false),
        };
        let is_target = self.targets.iter().flatten().any(|t| t.node == nid);
        // Hooks see the gradients of the nodes that run or are captured, not of the nodes that
        // are merely passed on the way (as in PyTorch).
        let grads = if runs || is_target {
            let grads = super::hooks::run_pre_hooks(&node, grads).map_err(|e| node.report_failure(e))?;
            if runs {
                super::hooks::run_node_pre_hooks(&node, grads).map_err(|e| node.report_failure(e))?
            } else {
                grads
            }
        } else {
            grads
        };
        if is_target {
            self.capture(nid, &grads);
        }
        Ok(runs.then_some((node, grads)))
    }

    /// Keeps the gradients of `nid`'s input slots that are capture targets (whether or not it runs).
    fn capture(&mut self, nid: NodeId, grads: &[Option<Tensor>]) {
        for (k, t) in self.targets.iter().enumerate() {
            if let Some(t) = t {
                if t.node == nid {
                    self.captured[k] = grads.get(t.input_nr).cloned().flatten();
                }
            }
        }
    }

    /// Runs the nodes of a batch, on rayon's threads when there are several and parallelism is on;
    /// the results come back in batch order either way. The gradients move into the nodes (no
    /// handle is kept here), so that an accumulator may store the one it gets as `.grad`.
    fn run_batch(&self, jobs: Vec<Job>) -> Vec<Result<Grads>> {
        let create_graph = self.create_graph;
        // Accumulators store (or add) a gradient: with at most one other node beside them, the batch
        // runs here, so that this node keeps the calling thread's parallel kernels (NOTE [A batch of
        // one large node]).
        let others = jobs.iter().filter(|(node, _)| node.formula().accumulates_into().is_none()).count();
        if others > 1 && parallel_enabled() {
            let callbacks = CURRENT_CALLBACKS.with(|c| c.borrow().clone());
            // The workers may need the host's lock (a Python hook): NOTE [The host lock in backward].
            without_host_lock(|| {
                crate::parallel::install(|| {
                    jobs.into_par_iter()
                        .map(|(node, grads)| {
                            let _mode = GradModeGuard::new(create_graph);
                            let _callbacks = CallbacksGuard(CURRENT_CALLBACKS.with(|c| c.replace(callbacks.clone())));
                            call_node(&node, grads, create_graph)
                        })
                        .collect()
                })
            })
        } else {
            jobs.into_iter().map(|(node, grads)| call_node(&node, grads, create_graph)).collect()
        }
    }

    /// 6. Release: frees what a node that ran saved, unless `retain_graph`.
    fn release(&self, node: &Node) {
        if !self.retain_graph {
            node.release_variables();
        }
    }

    /// 7. Deliver: adds a node's gradients into the buffers of the nodes its edges reach, and readies
    ///    each of those nodes once all the edges that reach it have delivered.
    fn deliver(&mut self, node: &Node, mut out: Vec<Option<Tensor>>) -> Result<()> {
        for (i, edge) in node.edges.iter().enumerate() {
            let Some(edge) = edge else { continue };
            let cid = id(&edge.node);
            // Every edge of a node of the graph leads into the graph (discovery followed them all).
            let Some(slot) = self.graph.get_mut(&cid) else { continue };
            if let Some(g) = out.get_mut(i).and_then(Option::take) {
                add_to_slot(slot, edge, g)?;
            }
            slot.deps -= 1;
            if slot.deps == 0 {
                self.ready.push((priority(&edge.node), cid));
            }
        }
        Ok(())
    }

    /// Whether the run should hold the host's lock throughout (NOTE [The host lock in backward]): a
    /// node needs it, the graph is small (at most `HOST_LOCK_MAX_NODES` nodes, a few milliseconds of
    /// work, about the interpreter's own switch interval), and every tensor of every node is below
    /// the parallel threshold.
    fn wants_host_lock(&self) -> bool {
        if HOST_LOCK.get().is_none()
            || self.graph.len() > HOST_LOCK_MAX_NODES
            || self.graph.values().all(|s| s.node.formula().parallel_safe())
        {
            return false;
        }
        let numel = |m: &super::node::TensorMeta| m.shape.iter().product::<usize>();
        self.graph.values().map(|s| &s.node).all(|n| {
            n.output_meta.iter().map(numel).sum::<usize>() < PARALLEL_MIN_ELEMENTS
                && n.input_meta.iter().flatten().all(|m| numel(m) < PARALLEL_MIN_ELEMENTS)
        })
    }

    /// Whether a ready node may join a batch (NOTE [Parallel branches]): its formula needs no GIL
    /// and the gradients waiting for it carry enough work.
    fn is_parallel_candidate(&self, nid: NodeId) -> bool {
        let slot = &self.graph[&nid];
        if !slot.node.formula().parallel_safe() {
            return false;
        }
        let work: usize = slot.grads.as_ref().map(|b| b.iter().flatten().map(|g| g.numel()).sum()).unwrap_or(0);
        work >= PARALLEL_MIN_ELEMENTS
    }
}

// NOTE [Parallel branches]: when several nodes are ready at once they are independent (all their
// inputs have arrived), so they may run together. A batch is formed deterministically (from the
// heap order and the sizes of the waiting gradients, never from timing), is executed either on
// rayon's threads or in a loop, and its results are delivered in batch order. So the arithmetic,
// including the order in which gradients are summed, is the same run after run and the same with
// parallelism on or off. Only nodes that need no GIL (not Python functions) and carry enough work
// to pay for a thread hand-off are batched.
//
// Independent branches that meet through small nodes (W6: 32 branches whose scalar sums are added
// in a chain) would otherwise never be ready together: the heap pops the newest node first, so one
// branch's large node is taken with the chain's next small `add` behind it, and the batch stops at
// that non-candidate. While a batch is being filled, such a small node that nothing can observe
// (`may_run_ahead`) is run at once instead, so the chain unwinds and the other branches' large
// nodes join the batch. Which nodes run ahead depends only on the graph and the gradients' sizes,
// so the batches, and the order gradients are summed in, stay deterministic.
//
// NOTE [A batch of one large node]: a batch's nodes run on the pool's workers, and a matrix product
// called on a worker runs on that thread alone (`gemm`'s team serves callers outside the pool). A
// batch made of one product and accumulators (W8: `nn.Linear`'s weight gradient reaches its
// accumulator through `t()`'s node, so the accumulator is ready beside the next layer's product)
// ran that product on one thread: W8's backward took 96 ms against W4's 59 for the same products.
// Such a batch runs on the calling thread instead, in batch order (the same results either way); its
// accumulators' additions, when `.grad` exists, split over threads inside the kernel if large.
const MAX_BATCH: usize = 64;
const PARALLEL_MIN_ELEMENTS: usize = 1 << 14;
static PARALLEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the parallel execution of independent branches on or off (results are identical).
pub fn set_parallel_backward(flag: bool) -> bool {
    PARALLEL.swap(flag, std::sync::atomic::Ordering::Relaxed)
}

fn parallel_enabled() -> bool {
    PARALLEL.load(std::sync::atomic::Ordering::Relaxed) && crate::parallel::threads() > 1
}

/// For each node: must it run so that a gradient reaches a capture target below it?
fn nodes_leading_to(graph: &HashMap<NodeId, Slot>, targets: &[Option<Target>]) -> HashMap<NodeId, bool> {
    let is_target: HashSet<NodeId> = targets.iter().flatten().map(|t| t.node).collect();
    let mut memo: HashMap<NodeId, bool> = HashMap::default();
    // Iterative post-order: a node runs when one of its children is a target or runs.
    for (&start, Slot { node: start_node, .. }) in graph {
        if memo.contains_key(&start) {
            continue;
        }
        let mut stack: Vec<(Arc<Node>, usize)> = vec![(start_node.clone(), 0)];
        while let Some((node, i)) = stack.pop() {
            let nid = id(&node);
            if i < node.edges.len() {
                stack.push((node.clone(), i + 1));
                if let Some(e) = &node.edges[i] {
                    let cid = id(&e.node);
                    if !memo.contains_key(&cid) {
                        stack.push((e.node.clone(), 0));
                    }
                }
            } else {
                let runs = node.edges.iter().flatten().any(|e| {
                    let cid = id(&e.node);
                    is_target.contains(&cid) || memo.get(&cid).copied().unwrap_or(false)
                });
                memo.insert(nid, runs);
            }
        }
    }
    memo
}

/// Adds `g` into the gradients waiting in `slot` (the slot of `edge`'s node) for `edge`'s input.
fn add_to_slot(slot: &mut Slot, edge: &Edge, g: Tensor) -> Result<()> {
    let n = edge.node.num_outputs().max(edge.input_nr + 1);
    let buf = slot.grads.get_or_insert_with(|| vec![None; n]);
    let slot = &mut buf[edge.input_nr];
    *slot = Some(match slot.take() {
        None => g,
        Some(prev) => prev.add(&g)?,
    });
    Ok(())
}

/// Runs one node's backward. Under anomaly mode, nodes created meanwhile record it as their parent,
/// and a failure is reported with where the node and its ancestors were created.
fn call_node(node: &Arc<Node>, grads: Vec<Option<Tensor>>, create_graph: bool) -> Result<Vec<Option<Tensor>>> {
    let running = anomaly::is_enabled().then(|| anomaly::enter(node.lineage()));
    let kept = super::hooks::has_post_hooks(node).then(|| grads.clone());
    let out = run_node(node, grads, create_graph);
    let out = match (out, kept) {
        (Ok(out), Some(grads)) => super::hooks::run_node_post_hooks(node, out, &grads),
        (out, _) => out,
    };
    drop(running);
    out.map_err(|e| node.report_failure(e))
}

fn run_node(node: &Arc<Node>, grads: Vec<Option<Tensor>>, create_graph: bool) -> Result<Vec<Option<Tensor>>> {
    if create_graph && !node.formula().differentiable_twice() {
        // Run the formula unrecorded; its results get a node that refuses a second differentiation.
        let upstream: Vec<Tensor> = grads.iter().flatten().filter(|g| g.requires_grad()).cloned().collect();
        let out = {
            let _off = GradModeGuard::no_grad();
            validate(node, node.apply(grads)?)?
        };
        return super::custom::delay_error(node.name(), &upstream, out);
    }
    let out = node.apply(grads)?;
    let out = validate(node, out)?;
    if anomaly::checks_nan() {
        for (i, g) in out.iter().enumerate() {
            if let Some(g) = g {
                if g.dtype().is_float() && g.to_f64_vec()?.iter().any(|v| v.is_nan()) {
                    return Err(Error::Anomaly(format!(
                        "Function '{}' returned nan values in its {}th output.{}",
                        node.name(),
                        i,
                        creation_story(node)
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// Where a node was created and, for a node created by another node's backward, where each such
/// ancestor was created (anomaly mode); empty when nothing was recorded.
fn creation_story(node: &Node) -> String {
    let mut story = node.created_at().map(|w| format!("\nThe node was created at:\n{w}")).unwrap_or_default();
    let mut child = node.name();
    let mut parent = node.anomaly_parent();
    while let Some(p) = parent {
        story.push_str(&format!("\n{child} was created while the backward of {} ran; ", p.name));
        match &p.created_at {
            Some(at) => story.push_str(&format!("{} was created at:\n{at}", p.name)),
            None => story.push_str(&format!("{} was created outside anomaly mode.", p.name)),
        }
        child = &p.name;
        parent = p.parent.as_ref();
    }
    story
}

/// Checks a node's gradients against its inputs: count, shape (summing broadcast dimensions away),
/// dtype (cast). Done once here so that each formula is only its math (STYLE.md 7).
fn validate(node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    if node.formula().accumulates_into().is_some() {
        return Ok(grads);
    }
    fit_grads(node, grads, |i, g, meta| {
        if g.shape() == meta.shape.as_slice() {
            Ok(g)
        } else if is_broadcastable_to(&meta.shape, g.shape()) {
            g.sum_to(&meta.shape)
        } else {
            Err(Error::CustomFunction(format!(
                "function {} returned an invalid gradient for {}: got shape {} but expected shape \
                 {} (or one that sums down to it by broadcasting)",
                node.name(),
                node.input_name(i),
                fmt_shape(g.shape()),
                fmt_shape(&meta.shape)
            )))
        }
    })
}

/// The checks every gradient of a node goes through, the shape check `fit` aside (the Jacobian
/// engine's keeps a leading batch dimension): one gradient per input, none for an input without an
/// edge or a meta, and each cast to its input's dtype.
pub(super) fn fit_grads(
    node: &Node,
    grads: Vec<Option<Tensor>>,
    fit: impl Fn(usize, Tensor, &super::node::TensorMeta) -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    let n = node.edges.len();
    if grads.len() != n {
        return Err(Error::CustomFunction(format!(
            "function {} returned an incorrect number of gradients (expected {n}, got {})",
            node.name(),
            grads.len()
        )));
    }
    // In place: the gradients' vector is the one returned (an iterator's `collect` cost about 100
    // instructions per node on W2 and W3).
    let mut grads = grads;
    for (i, slot) in grads.iter_mut().enumerate() {
        let (Some(g), Some(meta)) = (slot.take(), &node.input_meta[i]) else { continue };
        if node.edges[i].is_none() {
            continue;
        }
        let g = fit(i, g, meta)?;
        *slot = Some(if g.dtype() != meta.dtype { g.to_dtype(meta.dtype)? } else { g });
    }
    Ok(grads)
}

impl Tensor {
    /// `backward()` with the defaults: an implicit gradient of 1 for a one-element tensor, graph freed.
    pub fn backward_default(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[None], false, false, None)
    }
}
