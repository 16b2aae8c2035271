//! Custom operations written in Rust (`CustomOp`): run by the engine like any node, inside larger
//! graphs, checked against finite differences; their saved tensors are version-checked; errors from
//! their backward reach the caller; malformed backward results are refused with the node's name.

mod common;
use common::*;

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tapegrad::autograd::{BackwardCtx, ForwardCtx};
use tapegrad::{apply_custom, backward, CustomOp, DType, Error, GradModeGuard, Result, Tensor};

/// y = x^3, saving its input: dy/dx = 3 x^2.
struct Cube;

impl CustomOp for Cube {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("Cube")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        assert!(!tapegrad::is_grad_enabled(), "forward runs with grad mode off");
        assert!(x.grad_fn().is_none(), "inputs arrive detached");
        ctx.save_for_backward(std::slice::from_ref(x))?;
        Ok(vec![x.mul(x)?.mul(x)?])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()?[0];
        let g = g[0].as_ref().expect("materialized");
        Ok(vec![Some(g.mul(&x.mul(x)?.mul_scalar(3.0)?)?)])
    }
}

fn cube(x: &Tensor) -> Result<Tensor> {
    Ok(apply_custom(Cube, std::slice::from_ref(x))?.remove(0))
}

/// Two outputs (sin x, cos x) of one input, saving the input: d/dx = g1 cos x - g2 sin x.
struct SinCos;

impl CustomOp for SinCos {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("SinCos")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&inputs[..1])?;
        Ok(vec![inputs[0].sin()?, inputs[0].cos()?])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()?[0];
        let (g1, g2) = (g[0].as_ref().unwrap(), g[1].as_ref().unwrap());
        Ok(vec![Some(g1.mul(&x.cos()?)?.sub(&g2.mul(&x.sin()?)?)?)])
    }
}

/// z = a * b + c * state (a constant kept in `self`), saving an output: a three-input op whose
/// backward reads `needs_input_grad` and returns None where no gradient is needed.
struct MulAddConst {
    constant: f64,
    backward_calls: Arc<AtomicUsize>,
}

impl CustomOp for MulAddConst {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("MulAddConst")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&inputs[..2])?;
        Ok(vec![inputs[0].mul(&inputs[1])?.add(&inputs[2].mul_scalar(self.constant)?)?])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        self.backward_calls.fetch_add(1, Ordering::SeqCst);
        let s = ctx.saved_tensors()?;
        let g = g[0].as_ref().unwrap();
        Ok(vec![
            if ctx.needs_input_grad(0) { Some(g.mul(&s[1])?) } else { None },
            if ctx.needs_input_grad(1) { Some(g.mul(&s[0])?) } else { None },
            if ctx.needs_input_grad(2) { Some(g.mul_scalar(self.constant)?) } else { None },
        ])
    }
    fn input_name(&self, i: usize) -> String {
        ["a", "b", "c"][i].to_string()
    }
}

/// exp, saving its own output: d/dx = y.
struct ExpSavingOutput;

impl CustomOp for ExpSavingOutput {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("MyExp")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let y = inputs[0].exp()?;
        ctx.save_for_backward(std::slice::from_ref(&y))?;
        Ok(vec![y])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let y = &ctx.saved_tensors()?[0];
        Ok(vec![Some(g[0].as_ref().unwrap().mul(y)?)])
    }
}

#[test]
fn cube_inside_a_larger_graph_matches_finite_differences() {
    // loss = sum(cube(x W) * sin(x W) + x W): the node sits between built-in nodes on both sides.
    let x = rand_leaf(&[3, 4], 1);
    let w = rand_leaf(&[4, 2], 2);
    check_fd(
        "cube in a graph",
        |t| {
            let h = t[0].mm(&t[1])?;
            cube(&h)?.mul(&h.sin()?)?.add(&h)
        },
        &[x.clone(), w],
    );
    let y = cube(&x).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "CubeBackward");
    // A non-contiguous input and a broadcast afterwards.
    check_fd("cube of a transpose", |t| cube(&t[0].t()?)?.mul(&t[1]), &[x, rand_leaf(&[1, 3], 3)]);
}

#[test]
fn two_outputs_both_used_and_one_unused() {
    let x = rand_leaf(&[5], 4);
    check_fd(
        "sincos both outputs",
        |t| {
            let o = apply_custom(SinCos, &t[..1])?;
            o[0].mul_scalar(2.0)?.add(&o[1].mul(&o[1])?)
        },
        std::slice::from_ref(&x),
    );
    // Only the second output used: the first output's gradient is materialized as zeros.
    check_fd("sincos second output only", |t| Ok(apply_custom(SinCos, &t[..1])?.remove(1)), &[x]);
}

#[test]
fn state_in_self_and_needs_input_grad() {
    let calls = Arc::new(AtomicUsize::new(0));
    let a = rand_leaf(&[2, 3], 5);
    let b = rand_leaf(&[2, 3], 6);
    let c = rand_leaf(&[3], 7);
    let op = |k: &Arc<AtomicUsize>| MulAddConst { constant: 2.5, backward_calls: k.clone() };
    check_fd("muladdconst", |t| Ok(apply_custom(op(&calls), t)?.remove(0)), &[a.clone(), b.clone(), c.clone()]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // An input that needs no gradient gets none, and its slot may be None.
    let b_const = b.detach();
    let out = apply_custom(op(&calls), &[a.clone(), b_const, c.clone()]).unwrap().remove(0);
    a.set_grad(None).unwrap();
    c.set_grad(None).unwrap();
    out.sum(None, false).unwrap().backward_default().unwrap();
    assert_eq!(vals(&a.grad().unwrap()), vals(&b));
    assert_eq!(vals(&c.grad().unwrap()), vec![5.0; 3], "2.5 summed over two rows");
    // With nothing requiring grad, no node is recorded and backward never runs.
    let before = calls.load(Ordering::SeqCst);
    let out = apply_custom(op(&calls), &[a.detach(), b.detach(), c.detach()]).unwrap().remove(0);
    assert!(out.grad_fn().is_none() && !out.requires_grad());
    let _g = GradModeGuard::no_grad();
    let out = apply_custom(op(&calls), &[a.clone(), b.clone(), c.clone()]).unwrap().remove(0);
    assert!(out.grad_fn().is_none());
    assert_eq!(calls.load(Ordering::SeqCst), before);
}

#[test]
fn saving_an_output_works_and_holds_no_cycle() {
    let x = rand_leaf(&[4], 8);
    check_fd("exp saving its output", |t| Ok(apply_custom(ExpSavingOutput, t)?.remove(0)), std::slice::from_ref(&x));
    let y = apply_custom(ExpSavingOutput, std::slice::from_ref(&x)).unwrap().remove(0);
    let weak = Arc::downgrade(&y.grad_fn().unwrap());
    drop(y);
    assert!(weak.upgrade().is_none(), "the node owned itself through its saved output");
}

#[test]
fn the_version_check_applies_to_custom_ops() {
    // A saved input changed in place: the error names MyCube's node and the in-place op.
    let x = rand_leaf(&[2, 3], 9);
    let h = x.mul_scalar(1.0).unwrap();
    let y = cube(&h).unwrap();
    h.add_scalar_(1.0).unwrap();
    let r = y.sum(None, false).unwrap().backward_default();
    match &r {
        Err(Error::SavedTensorModified(e)) => {
            assert_eq!(e.saved_by, "CubeBackward");
            assert_eq!(e.modified_by, "add_");
            assert_eq!((e.saved_version, e.current_version), (0, 1));
            assert_eq!(e.shape, vec![2, 3]);
        }
        other => panic!("expected SavedTensorModified, got {other:?}"),
    }
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("modified by an inplace operation") && msg.contains("CubeBackward"), "{msg}");

    // A saved output changed in place.
    let y = apply_custom(ExpSavingOutput, std::slice::from_ref(&x)).unwrap().remove(0);
    y.mul_scalar_(2.0).unwrap();
    match y.sum(None, false).unwrap().backward_default() {
        Err(Error::SavedTensorModified(e)) => {
            assert_eq!(e.saved_by, "MyExpBackward");
            assert_eq!(e.modified_by, "mul_");
        }
        other => panic!("expected SavedTensorModified, got {other:?}"),
    }
}

/// A backward that fails (a user error), or returns something malformed, chosen by `mode`.
struct Faulty {
    mode: &'static str,
}

impl CustomOp for Faulty {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("Faulty")
    }
    fn forward(&mut self, _ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        if self.mode == "forward" {
            return Err(Error::Value("forward refused its input".into()));
        }
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let g = g[0].clone().unwrap();
        match self.mode {
            "error" => Err(Error::Value("user backward failed on purpose".into())),
            "count" => Ok(vec![Some(g.clone()), Some(g)]),
            "shape" => Ok(vec![Some(Tensor::ones(&[7], DType::Float64)?)]),
            "broadcastable" => Ok(vec![Some(g.sum(Some(&[0]), true)?.mul_scalar(0.0)?.add_scalar(1.0)?)]),
            _ => Ok(vec![Some(g.mul_scalar(2.0)?)]),
        }
    }
    fn input_name(&self, _i: usize) -> String {
        "input".into()
    }
}

fn faulty(mode: &'static str, x: &Tensor) -> Result<Tensor> {
    Ok(apply_custom(Faulty { mode }, std::slice::from_ref(x))?.remove(0))
}

#[test]
fn errors_from_backward_propagate_as_err() {
    let x = rand_leaf(&[3, 2], 10);
    let loss = faulty("error", &x).unwrap().exp().unwrap().sum(None, false).unwrap();
    let r = backward(std::slice::from_ref(&loss), &[None], true, false, None);
    assert!(matches!(&r, Err(Error::Value(m)) if m == "user backward failed on purpose"), "{r:?}");
    assert!(x.grad().is_none());
    // The graph survives the failure (retain_graph): a correct pass over the same nodes still works.
    let loss2 = faulty("ok", &x).unwrap().sum(None, false).unwrap();
    loss2.backward_default().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0; 6]);
    // And the failing graph fails again, the same way, not with a "freed" error.
    let r = backward(&[loss], &[None], false, false, None);
    assert!(matches!(&r, Err(Error::Value(_))), "{r:?}");
}

#[test]
fn errors_from_forward_propagate_as_err() {
    let x = rand_leaf(&[2], 11);
    let r = faulty("forward", &x);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("refused")), "{r:?}");
}

#[test]
fn malformed_backward_results_are_refused() {
    let x = rand_leaf(&[3, 2], 12);
    let msg = err_msg(faulty("count", &x).unwrap().sum(None, false).unwrap().backward_default());
    assert!(msg.contains("FaultyBackward") && msg.contains("incorrect number of gradients"), "{msg}");
    let msg = err_msg(faulty("shape", &x).unwrap().sum(None, false).unwrap().backward_default());
    assert!(msg.contains("FaultyBackward"), "{msg}");
    // A gradient of shape [1, 2] for a [3, 2] input cannot be summed down to it: either it is
    // refused with the node's name, or (if broadcast back) reaches the leaf in the leaf's shape.
    match faulty("broadcastable", &x).unwrap().sum(None, false).unwrap().backward_default() {
        Ok(()) => assert_eq!(x.grad().unwrap().shape(), &[3, 2]),
        Err(e) => assert!(e.to_string().contains("FaultyBackward"), "{e}"),
    }
}

/// An op with only a forward: the trait's default backward is a typed error.
struct ForwardOnly;

impl CustomOp for ForwardOnly {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("ForwardOnly")
    }
    fn forward(&mut self, _ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].neg()?])
    }
}

#[test]
fn default_backward_says_it_is_not_implemented() {
    let x = rand_leaf(&[2], 13);
    let y = apply_custom(ForwardOnly, std::slice::from_ref(&x)).unwrap().remove(0);
    let msg = err_msg(y.sum(None, false).unwrap().backward_default());
    assert!(msg.contains("ForwardOnly") && msg.contains("does not implement backward"), "{msg}");
}

/// Declares its second output (an argmax-like index) non-differentiable and its gradients
/// unmaterialized: backward sees None for it.
struct WithIndex {
    saw_none: Arc<AtomicUsize>,
}

impl CustomOp for WithIndex {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("WithIndex")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let idx = inputs[0].argmax(None, false)?;
        let doubled = inputs[0].mul_scalar(2.0)?;
        let flag = inputs[0].gt_scalar(0.0)?.to_dtype(DType::Float64)?;
        ctx.mark_non_differentiable(std::slice::from_ref(&flag));
        ctx.set_materialize_grads(false);
        Ok(vec![doubled, idx, flag])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        if g[1].is_none() && g[2].is_none() {
            self.saw_none.fetch_add(1, Ordering::SeqCst);
        }
        Ok(vec![g[0].as_ref().map(|g| g.mul_scalar(2.0)).transpose()?])
    }
}

#[test]
fn non_differentiable_outputs_and_unmaterialized_grads() {
    let saw = Arc::new(AtomicUsize::new(0));
    let x = rand_leaf(&[4], 14);
    let outs = apply_custom(WithIndex { saw_none: saw.clone() }, std::slice::from_ref(&x)).unwrap();
    assert!(outs[0].requires_grad());
    assert!(!outs[1].requires_grad(), "an int64 output gets no history");
    assert!(!outs[2].requires_grad(), "a non-differentiable output gets no history");
    outs[0].sum(None, false).unwrap().backward_default().unwrap();
    assert_eq!(saw.load(Ordering::SeqCst), 1);
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0; 4]);
}

/// Adds one to its input in place and marks it dirty (the output is the input).
struct AddOneInPlace;

impl CustomOp for AddOneInPlace {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("AddOneInPlace")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        inputs[0].add_scalar_(1.0)?;
        ctx.mark_dirty(&inputs[..1]);
        Ok(vec![inputs[0].clone()])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Ok(g)
    }
}

#[test]
fn mark_dirty_gives_the_input_this_nodes_history() {
    // y = x*3; AddOneInPlace(y); loss = sum(y^2) => dloss/dx = 6 (3x + 1).
    let x = rand_leaf(&[3], 15);
    check_fd(
        "mark_dirty",
        |t| {
            let y = t[0].mul_scalar(3.0)?;
            let out = apply_custom(AddOneInPlace, std::slice::from_ref(&y))?.remove(0);
            assert!(out.same(&y), "the dirty input itself is returned");
            y.mul(&y)
        },
        std::slice::from_ref(&x),
    );
    let y = x.mul_scalar(3.0).unwrap();
    apply_custom(AddOneInPlace, std::slice::from_ref(&y)).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "AddOneInPlaceBackward");
    assert_eq!(y.version(), 1);
    // On a leaf that requires grad it is refused.
    let msg = err_msg(apply_custom(AddOneInPlace, std::slice::from_ref(&x)));
    assert!(msg.contains("a leaf tensor that requires grad"), "{msg}");
}

#[test]
fn custom_op_double_backward_through_differentiable_formulas() {
    // Cube's backward is written with tensor ops, so create_graph differentiates it: d2/dx2 x^3 = 6x.
    let x = rand_leaf(&[3], 16);
    let y = cube(&x).unwrap().sum(None, false).unwrap();
    let g = tapegrad::grad(&[y], std::slice::from_ref(&x), &[None], true, true, false).unwrap().remove(0).unwrap();
    let g2 = tapegrad::grad(&[g.sum(None, false).unwrap()], std::slice::from_ref(&x), &[None], false, false, false)
        .unwrap()
        .remove(0)
        .unwrap();
    for (a, x) in vals(&g2).iter().zip(vals(&x)) {
        assert!((a - 6.0 * x).abs() < 1e-12);
    }
}
