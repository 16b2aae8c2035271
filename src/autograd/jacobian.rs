//! The Jacobian engine: many backward passes over one recorded graph in one call.
//!
//! NOTE [Batched rows]: `jacrev` needs one vector-Jacobian product per output element, all over
//! the same graph. Instead of one engine run per row, `jacobian_rows` runs the graph once with
//! gradients that carry an extra leading dimension: the seed of the roots is the identity, one row
//! per output element, and every gradient flowing through the graph is `[batch, *shape]`. A
//! formula that has a batched form (`Backward::apply_batched`: element-wise formulas, whose saved
//! values broadcast against the batch, matrix products, shape operations, sums) maps the whole
//! batch at once; any other formula (a custom Function written in Python, say) runs once per row,
//! on a slice of the batch, and its results are stacked back, so the graph is still walked once
//! and no Python object is made per row. Gradients are summed down to each input's shape keeping
//! the batch dimension (`fit`). What the run reads at the inputs are the Jacobian's rows.
//!
//! The run is a plain topological walk on this thread (newest node first, as the engine's). It
//! declines (returns None, and the caller loops over rows with the ordinary engine) when the graph
//! has something whose behaviour per row it would change: hooks on a node it would run or
//! capture at, anomaly mode, or, when the rows must be differentiable, a formula that cannot be
//! differentiated twice.

use std::collections::BinaryHeap;
use std::sync::Arc;

use super::grad_mode::GradModeGuard;
use super::node::{gradient_edge, Edge, Node};
use crate::error::{Error, Result};
use crate::tensor::layout::{fmt_shape, is_broadcastable_to};
use crate::tensor::Tensor;

use super::engine::{discover_graph, id, HashMap, HashSet, NodeId};

/// The rows of the Jacobian of `roots` with respect to `inputs`: for each input, a tensor of
/// shape `[rows, *input.shape]` whose row `r` is the gradient of output element `r`, the output
/// elements numbered root after root in row-major order (`rows` is the sum of the roots'
/// element counts); None for an input no root depends on. Roots that do not require grad give
/// rows of zeros (their rows are not seeded). With `chunk`, at most that many rows go through the
/// graph at once. Ok(None) when the batched run declines (NOTE [Batched rows]). The graph is
/// kept; with `create_graph` the rows are differentiable.
pub fn jacobian_rows(
    roots: &[Tensor],
    inputs: &[Tensor],
    create_graph: bool,
    chunk: Option<usize>,
) -> Result<Option<Vec<Option<Tensor>>>> {
    if inputs.is_empty() {
        return Err(Error::value("jacobian_rows requires at least one input"));
    }
    let total: usize = roots.iter().map(Tensor::numel).sum();
    let chunk = chunk.unwrap_or(total).max(1);
    let mut parts: Vec<Vec<Option<Tensor>>> = Vec::new();
    let mut start = 0;
    while start < total || (total == 0 && parts.is_empty()) {
        let count = chunk.min(total - start);
        match rows_between(roots, inputs, create_graph, start, count)? {
            Some(p) => parts.push(p),
            None => return Ok(None),
        }
        start += count;
        if total == 0 {
            break;
        }
    }
    if parts.len() == 1 {
        return Ok(parts.pop());
    }
    let _mode = GradModeGuard::new(create_graph);
    (0..inputs.len())
        .map(|j| {
            if parts.iter().all(|p| p[j].is_none()) {
                return Ok(None);
            }
            let pieces = parts
                .iter()
                .map(|p| match &p[j] {
                    Some(t) => Ok(t.clone()),
                    None => {
                        let n = p.iter().flatten().next().map(|t| t.shape()[0]).unwrap_or(0);
                        let mut shape = vec![n];
                        shape.extend_from_slice(inputs[j].shape());
                        Tensor::zeros(&shape, inputs[j].dtype())
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Tensor::cat(&pieces, 0).map(Some)
        })
        .collect::<Result<_>>()
        .map(Some)
}

/// The seeds of rows `start..start + count`: for each root that requires grad, `[count, *shape]`
/// holding a one where the row's output element is that root's.
fn seeds(roots: &[Tensor], start: usize, count: usize) -> Result<Vec<(Edge, Tensor)>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for root in roots {
        let n = root.numel();
        let (lo, hi) = (offset.max(start), (offset + n).min(start + count));
        offset += n;
        let Some(edge) = gradient_edge(root) else { continue };
        if lo >= hi || !root.dtype().is_float() {
            continue;
        }
        let mut data = vec![0f64; count * n];
        for r in lo..hi {
            data[(r - start) * n + (r - (offset - n))] = 1.0;
        }
        let mut shape = vec![count];
        shape.extend_from_slice(root.shape());
        out.push((edge, Tensor::from_vec(data, &shape)?.to_dtype(root.dtype())?));
    }
    Ok(out)
}

/// One batched run for rows `start..start + count` (NOTE [Batched rows]).
fn rows_between(
    roots: &[Tensor],
    inputs: &[Tensor],
    create_graph: bool,
    start: usize,
    count: usize,
) -> Result<Option<Vec<Option<Tensor>>>> {
    if super::anomaly::is_enabled() {
        return Ok(None);
    }
    let _mode = GradModeGuard::new(create_graph);
    let seeds = seeds(roots, start, count)?;
    let targets: Vec<Option<Edge>> = inputs.iter().map(gradient_edge).collect();
    let mut captured: Vec<Option<Tensor>> = vec![None; inputs.len()];
    if seeds.is_empty() {
        return Ok(Some(captured));
    }

    // Discover the graph and count the edges that reach each node.
    let (nodes, mut deps) = discover_graph(&seeds);
    let is_target: HashSet<NodeId> =
        targets.iter().flatten().map(|e| id(&e.node)).filter(|n| nodes.contains_key(n)).collect();
    let must_run = leading_to(&nodes, &is_target);
    for (nid, node) in &nodes {
        let involved = must_run.contains(nid) || is_target.contains(nid);
        if involved && (node.has_hooks() || (create_graph && !node.formula().differentiable_twice())) {
            return Ok(None);
        }
    }

    let mut buffers: HashMap<NodeId, Vec<Option<Tensor>>> = HashMap::default();
    for (edge, g) in seeds {
        add_to_buffer(&mut buffers, &edge, g)?;
    }
    let mut ready: BinaryHeap<(u64, NodeId)> = BinaryHeap::new();
    for (&nid, node) in &nodes {
        if deps.get(&nid).copied().unwrap_or(0) == 0 {
            ready.push((priority(node), nid));
        }
    }
    while let Some((_, nid)) = ready.pop() {
        let node = nodes[&nid].clone();
        let grads = buffers.remove(&nid).unwrap_or_else(|| vec![None; node.num_outputs().max(1)]);
        for (k, t) in targets.iter().enumerate() {
            if let Some(t) = t {
                if id(&t.node) == nid {
                    captured[k] = grads.get(t.input_nr).cloned().flatten();
                }
            }
        }
        if !must_run.contains(&nid) {
            continue;
        }
        let out = run_batched(&node, grads, count).map_err(|e| node.report_failure(e))?;
        for (i, edge) in node.edges.iter().enumerate() {
            let Some(edge) = edge else { continue };
            if let Some(Some(g)) = out.get(i) {
                add_to_buffer(&mut buffers, edge, g.clone())?;
            }
            let cid = id(&edge.node);
            if let Some(d) = deps.get_mut(&cid) {
                *d -= 1;
                if *d == 0 {
                    ready.push((priority(&edge.node), cid));
                }
            }
        }
    }
    Ok(Some(captured))
}

/// Newest first; a leaf's accumulator as soon as it is ready (the engine's order).
fn priority(node: &Node) -> u64 {
    if node.formula().accumulates_into().is_some() {
        node.seq | (1 << 63)
    } else {
        node.seq
    }
}

/// The nodes that must run for a gradient to reach a target below them.
fn leading_to(nodes: &HashMap<NodeId, Arc<Node>>, targets: &HashSet<NodeId>) -> HashSet<NodeId> {
    let mut memo: HashMap<NodeId, bool> = HashMap::default();
    for start in nodes.values() {
        if memo.contains_key(&id(start)) {
            continue;
        }
        let mut stack: Vec<(Arc<Node>, usize)> = vec![(start.clone(), 0)];
        while let Some((node, i)) = stack.pop() {
            if i < node.edges.len() {
                stack.push((node.clone(), i + 1));
                if let Some(e) = &node.edges[i] {
                    if !memo.contains_key(&id(&e.node)) {
                        stack.push((e.node.clone(), 0));
                    }
                }
            } else {
                let runs = node.edges.iter().flatten().any(|e| {
                    let c = id(&e.node);
                    targets.contains(&c) || memo.get(&c).copied().unwrap_or(false)
                });
                memo.insert(id(&node), runs);
            }
        }
    }
    memo.into_iter().filter(|(_, r)| *r).map(|(n, _)| n).collect()
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

/// One node's formula on a batch of gradients: its batched form when it has one and that gives
/// gradients of the expected shapes, else once per row on slices, stacked.
fn run_batched(node: &Node, grads: Vec<Option<Tensor>>, batch: usize) -> Result<Vec<Option<Tensor>>> {
    let n = node.edges.len();
    if grads.iter().all(Option::is_none) {
        return Ok(vec![None; n]);
    }
    let released = node.formula().keeps_values() && node.is_released();
    if !released {
        if let Some(Ok(out)) = node.formula().apply_batched(node, &grads, batch) {
            if let Ok(out) = fit_all(node, out, batch) {
                return Ok(out);
            }
        }
    }
    // Once per row.
    let mut per_input: Vec<Vec<Option<Tensor>>> = vec![Vec::with_capacity(batch); n];
    for b in 0..batch {
        let slice = grads
            .iter()
            .map(|g| g.as_ref().map(|g| g.select(0, b as isize)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let out = node.apply(slice)?;
        if out.len() != n {
            return Err(Error::CustomFunction(format!(
                "function {} returned an incorrect number of gradients (expected {n}, got {})",
                node.name(),
                out.len()
            )));
        }
        for (i, g) in out.into_iter().enumerate() {
            per_input[i].push(g);
        }
    }
    let stacked = per_input
        .into_iter()
        .map(|rows| {
            let Some(like) = rows.iter().flatten().next().cloned() else { return Ok(None) };
            let rows = rows
                .into_iter()
                .map(|g| match g {
                    Some(g) => Ok(g),
                    None => Tensor::zeros(like.shape(), like.dtype()),
                })
                .collect::<Result<Vec<_>>>()?;
            Tensor::stack(&rows, 0).map(Some)
        })
        .collect::<Result<Vec<_>>>()?;
    fit_all(node, stacked, batch)
}

/// The engine's check of a node's gradients (count, shape, dtype), with the batch dimension kept.
fn fit_all(node: &Node, grads: Vec<Option<Tensor>>, batch: usize) -> Result<Vec<Option<Tensor>>> {
    super::engine::fit_grads(node, grads, |i, g, meta| {
        let inner = g.shape().get(1..).unwrap_or(&[]);
        if g.ndim() >= 1 && g.shape()[0] == batch && inner == meta.shape.as_slice() {
            Ok(g)
        } else if g.ndim() >= 1 && g.shape()[0] == batch && is_broadcastable_to(&meta.shape, inner) {
            g.sum_to_batched(&meta.shape)
        } else {
            Err(Error::CustomFunction(format!(
                "function {} returned an invalid gradient for {}: got shape {} for a batch of {batch} \
                 gradients of shape {}",
                node.name(),
                node.input_name(i),
                fmt_shape(g.shape()),
                fmt_shape(&meta.shape)
            )))
        }
    })
}

/// Whether the graph behind `roots` has a node whose formula is a user's custom operation (a
/// `Function` written in Python): `jacfwd` then pushes tangents through its forward rule, column
/// by column, rather than differentiating its backward formula.
pub fn reaches_custom(roots: &[Tensor]) -> bool {
    let mut seen: HashSet<NodeId> = HashSet::default();
    let mut stack: Vec<Arc<Node>> = roots.iter().filter_map(Tensor::grad_fn).collect();
    while let Some(node) = stack.pop() {
        if !seen.insert(id(&node)) {
            continue;
        }
        if node.formula().custom_op().is_some() {
            return true;
        }
        stack.extend(node.edges.iter().flatten().map(|e| e.node.clone()));
    }
    false
}
