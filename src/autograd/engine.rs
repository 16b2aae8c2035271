//! The backward scheduler.
//!
//! 1. Walk the graph from the roots (iteratively) and count, for every node, the edges that reach it.
//! 2. Seed the roots' gradients into per-node input buffers, where gradients for one slot are summed.
//! 3. Run ready nodes (all their incoming edges delivered) from a max-heap on the sequence number:
//!    newest first, a deterministic order that follows the forward pass backwards.
//! 4. After a node runs, its gradients are validated against its inputs' shapes and dtypes (summed
//!    down where the forward broadcast, see `validate`), and its saved tensors are released unless
//!    `retain_graph`.
//!
//! Nothing here recurses, so graph depth is bounded only by memory. Adding into `.grad` is
//! `accumulate.rs`.

use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use super::accumulate::accumulate_into;
use super::anomaly;
use super::grad_mode::GradModeGuard;
use super::node::{gradient_edge, Edge, Node};
use crate::error::{Error, Result};
use crate::tensor::layout::{fmt_shape, is_broadcastable_to};
use crate::tensor::Tensor;

type NodeId = usize;

fn id(node: &Arc<Node>) -> NodeId {
    Arc::as_ptr(node) as usize
}

/// Called every few nodes; the binding layer installs a check for Ctrl-C here.
static INTERRUPT_HOOK: std::sync::OnceLock<fn() -> Result<()>> = std::sync::OnceLock::new();

/// Installs the interrupt check (once per process).
pub fn set_interrupt_hook(hook: fn() -> Result<()>) {
    let _ = INTERRUPT_HOOK.set(hook);
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
        None => run(roots, grad_roots, retain_graph, create_graph, &[]).map(|_| ()),
        Some(inputs) => {
            // A non-leaf input retains its gradient from now on, as in PyTorch; its retain hook
            // stores the gradient during the run (adding it here too counted it twice when the
            // tensor already retained its gradient).
            for t in inputs.iter().filter(|t| t.grad_fn().is_some()) {
                t.retain_grad()?;
            }
            let grads = run(roots, grad_roots, retain_graph, create_graph, inputs)?;
            for (i, (t, g)) in inputs.iter().zip(grads).enumerate() {
                // A tensor named twice in `inputs` gets its gradient once, as in PyTorch.
                if inputs[..i].iter().any(|u| u.same(t)) {
                    continue;
                }
                if let (None, Some(g)) = (t.grad_fn(), g) {
                    accumulate_into(t, g)?;
                }
            }
            Ok(())
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
    let grads = run(roots, grad_roots, retain_graph, create_graph, inputs)?;
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

fn run(
    roots: &[Tensor],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    capture: &[Tensor],
) -> Result<Vec<Option<Tensor>>> {
    let depth = REENTRANT_DEPTH.with(|d| d.get());
    if depth >= MAX_REENTRANT_DEPTH {
        return std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("tapegrad-reentrant-backward".into())
                .stack_size(REENTRANT_THREAD_STACK)
                .spawn_scoped(scope, || run(roots, grad_roots, retain_graph, create_graph, capture))
                .map_err(|e| Error::autograd(format!("could not start a thread for a deep reentrant backward: {e}")))?;
            worker.join().unwrap_or_else(|_| Err(Error::autograd("a deep reentrant backward panicked")))
        });
    }
    let _depth = DepthGuard(depth);
    REENTRANT_DEPTH.with(|d| d.set(depth + 1));
    run_here(roots, grad_roots, retain_graph, create_graph, capture)
}

fn run_here(
    roots: &[Tensor],
    grad_roots: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    capture: &[Tensor],
) -> Result<Vec<Option<Tensor>>> {
    if roots.len() != grad_roots.len() {
        return Err(Error::value(format!("got {} tensors and {} gradients", roots.len(), grad_roots.len())));
    }
    let _mode = GradModeGuard::new(create_graph);

    // Roots and their seed gradients.
    let mut seeds: Vec<(Edge, Tensor)> = Vec::with_capacity(roots.len());
    for (i, (root, g)) in roots.iter().zip(grad_roots).enumerate() {
        let edge = gradient_edge(root).ok_or_else(|| {
            Error::autograd(format!("element {i} of tensors does not require grad and does not have a grad_fn"))
        })?;
        let g = match g {
            Some(g) => {
                if g.shape() != root.shape() {
                    return Err(Error::shape(format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a \
                         shape of {}.",
                        fmt_shape(g.shape()),
                        fmt_shape(root.shape())
                    )));
                }
                // A seed of another dtype is cast to the root's, as PyTorch does: when the root is
                // itself a leaf (or a captured input) no node's `validate` casts it, and a float64
                // leaf's `.grad` became float32 (or bool) after `x.backward(tg.ones(...))`.
                if g.dtype() != root.dtype() {
                    g.to_dtype(root.dtype())?
                } else {
                    g.clone()
                }
            }
            None => {
                if root.numel() != 1 {
                    return Err(Error::autograd(format!(
                        "grad can be implicitly created only for scalar outputs (output {i} has shape {})",
                        fmt_shape(root.shape())
                    )));
                }
                Tensor::ones_like(root)?
            }
        };
        seeds.push((edge, g));
    }

    // 1. Discover the graph and count dependencies.
    let mut nodes: HashMap<NodeId, Arc<Node>> = HashMap::new();
    let mut deps: HashMap<NodeId, usize> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (edge, _) in &seeds {
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

    // Capture targets (grad / backward(inputs=...)) and which nodes must run to reach them.
    let targets: Vec<Option<Target>> = capture
        .iter()
        .map(|t| {
            let edge = match t.grad_fn() {
                Some(f) => Some(Edge { node: f, input_nr: t.output_nr() }),
                None => t.0.meta.lock().grad_accumulator.upgrade().map(|n| Edge { node: n, input_nr: 0 }),
            };
            edge.filter(|e| nodes.contains_key(&id(&e.node)))
                .map(|e| Target { node: id(&e.node), input_nr: e.input_nr })
        })
        .collect();
    let must_run = if capture.is_empty() { None } else { Some(nodes_leading_to(&nodes, &targets)) };

    // 2. Seed the buffers.
    let mut buffers: HashMap<NodeId, Vec<Option<Tensor>>> = HashMap::new();
    for (edge, g) in seeds {
        add_to_buffer(&mut buffers, &edge, g)?;
    }
    let mut ready: BinaryHeap<(u64, NodeId)> = BinaryHeap::new();
    for (&nid, node) in &nodes {
        if deps.get(&nid).copied().unwrap_or(0) == 0 {
            ready.push((node.seq, nid));
        }
    }

    // 3. Run, one batch of ready nodes at a time (see NOTE [Parallel branches]).
    let mut captured: Vec<Option<Tensor>> = vec![None; capture.len()];
    let mut batches: usize = 0;
    while let Some(first) = ready.pop() {
        batches += 1;
        if batches.is_multiple_of(256) {
            if let Some(hook) = INTERRUPT_HOOK.get() {
                hook()?;
            }
        }
        let mut batch = vec![first];
        if is_parallel_candidate(&nodes[&first.1], &buffers, first.1) {
            while let Some(&next) = ready.peek() {
                if batch.len() >= MAX_BATCH || !is_parallel_candidate(&nodes[&next.1], &buffers, next.1) {
                    break;
                }
                batch.push(next);
                ready.pop();
            }
        }
        let mut jobs: Vec<(Arc<Node>, Vec<Option<Tensor>>)> = Vec::with_capacity(batch.len());
        for &(_, nid) in &batch {
            let node = nodes[&nid].clone();
            let grads = buffers.remove(&nid).unwrap_or_else(|| vec![None; node.num_outputs().max(1)]);
            let runs = match &must_run {
                None => true,
                Some(set) => set.get(&nid).copied().unwrap_or(false),
            };
            let is_target = targets.iter().flatten().any(|t| t.node == nid);
            // Hooks see the gradients of the nodes that run or are captured, not of the nodes that
            // are merely passed on the way (as in PyTorch).
            let grads = if runs || is_target {
                super::hooks::run_pre_hooks(&node, grads).map_err(|e| node.report_failure(e))?
            } else {
                grads
            };
            for (k, t) in targets.iter().enumerate() {
                if let Some(t) = t {
                    if t.node == nid {
                        captured[k] = grads.get(t.input_nr).cloned().flatten();
                    }
                }
            }
            if runs {
                jobs.push((node, grads));
            }
        }
        let outputs: Vec<Result<Vec<Option<Tensor>>>> = if jobs.len() > 1 && parallel_enabled() {
            jobs.par_iter()
                .map(|(node, grads)| {
                    let _mode = GradModeGuard::new(create_graph);
                    call_node(node, grads.clone(), create_graph)
                })
                .collect()
        } else {
            jobs.iter().map(|(node, grads)| call_node(node, grads.clone(), create_graph)).collect()
        };
        for ((node, _), out) in jobs.iter().zip(outputs) {
            let out = out?;
            if !retain_graph {
                node.release_variables();
            }
            for (i, edge) in node.edges.iter().enumerate() {
                let Some(edge) = edge else { continue };
                if let Some(Some(g)) = out.get(i) {
                    add_to_buffer(&mut buffers, edge, g.clone())?;
                }
                let cid = id(&edge.node);
                if let Some(d) = deps.get_mut(&cid) {
                    *d -= 1;
                    if *d == 0 {
                        ready.push((edge.node.seq, cid));
                    }
                }
            }
        }
    }
    Ok(captured)
}

// NOTE [Parallel branches]: when several nodes are ready at once they are independent (all their
// inputs have arrived), so they may run together. A batch is formed deterministically (from the
// heap order and the sizes of the waiting gradients, never from timing), is executed either on
// rayon's threads or in a loop, and its results are delivered in batch order. So the arithmetic,
// including the order in which gradients are summed, is the same run after run and the same with
// parallelism on or off. Only nodes that need no GIL (not Python functions) and carry enough work
// to pay for a thread hand-off are batched.
const MAX_BATCH: usize = 64;
const PARALLEL_MIN_ELEMENTS: usize = 1 << 14;
static PARALLEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the parallel execution of independent branches on or off (results are identical).
pub fn set_parallel_backward(flag: bool) -> bool {
    PARALLEL.swap(flag, std::sync::atomic::Ordering::Relaxed)
}

fn parallel_enabled() -> bool {
    PARALLEL.load(std::sync::atomic::Ordering::Relaxed) && rayon::current_num_threads() > 1
}

fn is_parallel_candidate(node: &Node, buffers: &HashMap<NodeId, Vec<Option<Tensor>>>, nid: NodeId) -> bool {
    if !node.formula().parallel_safe() {
        return false;
    }
    let work: usize = buffers.get(&nid).map(|b| b.iter().flatten().map(|g| g.numel()).sum()).unwrap_or(0);
    work >= PARALLEL_MIN_ELEMENTS
}

/// For each node: must it run so that a gradient reaches a capture target below it?
fn nodes_leading_to(nodes: &HashMap<NodeId, Arc<Node>>, targets: &[Option<Target>]) -> HashMap<NodeId, bool> {
    let is_target: std::collections::HashSet<NodeId> = targets.iter().flatten().map(|t| t.node).collect();
    let mut memo: HashMap<NodeId, bool> = HashMap::new();
    // Iterative post-order: a node runs when one of its children is a target or runs.
    for (&start, start_node) in nodes {
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

fn add_to_buffer(buffers: &mut HashMap<NodeId, Vec<Option<Tensor>>>, edge: &Edge, g: Tensor) -> Result<()> {
    let n = edge.node.num_outputs().max(edge.input_nr + 1);
    let buf = buffers.entry(id(&edge.node)).or_insert_with(|| vec![None; n]);
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
    let out = run_node(node, grads, create_graph);
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
    let n = node.edges.len();
    if grads.len() != n {
        return Err(Error::CustomFunction(format!(
            "function {} returned an incorrect number of gradients (expected {n}, got {})",
            node.name(),
            grads.len()
        )));
    }
    grads
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let (Some(g), Some(meta)) = (g, &node.input_meta[i]) else { return Ok(None) };
            if node.edges[i].is_none() {
                return Ok(None);
            }
            let g = if g.shape() == meta.shape.as_slice() {
                g
            } else if is_broadcastable_to(&meta.shape, g.shape()) {
                g.sum_to(&meta.shape)?
            } else {
                return Err(Error::CustomFunction(format!(
                    "function {} returned an invalid gradient for {}: got shape {} but expected shape \
                     {} (or one that sums down to it by broadcasting)",
                    node.name(),
                    node.input_name(i),
                    fmt_shape(g.shape()),
                    fmt_shape(&meta.shape)
                )));
            };
            let g = if g.dtype() != meta.dtype { g.to_dtype(meta.dtype)? } else { g };
            Ok(Some(g))
        })
        .collect()
}

impl Tensor {
    /// `backward()` with the defaults: an implicit gradient of 1 for a one-element tensor, graph freed.
    pub fn backward_default(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[None], false, false, None)
    }
}
