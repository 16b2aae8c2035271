//! Saved tensors and their version check (API.md §3.2 and §4): an in-place write to a tensor a
//! node saved makes backward fail with a message that names the saving node, the in-place operation,
//! and the saved and current versions; views share one version counter with their base.

mod common;
use common::*;

use std::sync::Arc;

use tapegrad::ops::IndexItem;
use tapegrad::{DType, Error, GradModeGuard, Tensor};

/// A float32 non-leaf of shape [3, 4] (in-place writes on it are allowed).
fn non_leaf_f32() -> (Tensor, Tensor) {
    let x = Tensor::from_vec((0..12).map(|i| i as f32 * 0.1).collect(), &[3, 4]).unwrap().requires_grad_(true).unwrap();
    let a = x.mul_scalar(1.0).unwrap();
    (x, a)
}

fn saved_error(r: tapegrad::Result<()>) -> tapegrad::error::SavedTensorModified {
    match r {
        Err(Error::SavedTensorModified(e)) => *e,
        other => panic!("expected SavedTensorModified, got {other:?}"),
    }
}

#[test]
fn modified_input_fails_with_the_documented_message() {
    let (x, a) = non_leaf_f32();
    let y = a.sin().unwrap();
    assert_eq!(a.version(), 0);
    a.add_scalar_(1.0).unwrap();
    assert_eq!(a.version(), 1);
    let r = y.sum(None, false).unwrap().backward_default();
    let e = saved_error(r.clone());
    assert_eq!(e.saved_by, "SinBackward");
    assert_eq!(e.modified_by, "add_");
    assert_eq!((e.saved_version, e.current_version), (0, 1));
    assert_eq!(e.shape, vec![3, 4]);
    assert_eq!(e.dtype, "float32");
    let msg = r.unwrap_err().to_string();
    for part in [
        "modified by an inplace operation",
        "[3, 4]",
        "float32",
        "SinBackward",
        "is at version 1; expected version 0",
        "add_",
    ] {
        assert!(msg.contains(part), "message lacks {part:?}: {msg}");
    }
    assert!(x.grad().is_none(), "nothing was accumulated");
}

#[test]
fn the_last_inplace_operation_and_the_version_count_are_reported() {
    // Two writes: version 2, and the message names the last one.
    let (_x, a) = non_leaf_f32();
    let y = a.mul(&a).unwrap();
    a.mul_scalar_(2.0).unwrap();
    a.clamp_(Some(0.0), Some(1.0)).unwrap();
    let e = saved_error(y.sum(None, false).unwrap().backward_default());
    assert_eq!(e.saved_by, "MulBackward");
    assert_eq!(e.modified_by, "clamp_");
    assert_eq!((e.saved_version, e.current_version), (0, 2));
}

#[test]
fn writes_under_no_grad_still_bump_the_version() {
    let x = rand_leaf(&[3], 1);
    let y = x.exp().unwrap().mul(&x).unwrap();
    {
        let _g = GradModeGuard::no_grad();
        x.zero_().unwrap();
    }
    let e = saved_error(y.sum(None, false).unwrap().backward_default());
    assert_eq!(e.saved_by, "MulBackward");
    assert_eq!(e.modified_by, "zero_");
    assert_eq!((e.saved_version, e.current_version), (0, 1));
}

#[test]
fn saved_outputs_are_checked_and_hold_no_cycle() {
    // exp saves its output; writing into it after the fact is caught by ExpBackward.
    let x = rand_leaf(&[2, 2], 2);
    let y = x.exp().unwrap();
    let node = y.grad_fn().unwrap();
    assert_eq!(node.name(), "ExpBackward");
    y.mul_scalar_(2.0).unwrap();
    // y was rebased onto the multiplication; ExpBackward runs below it and finds its output changed.
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward");
    let e = saved_error(y.sum(None, false).unwrap().backward_default());
    assert_eq!(e.saved_by, "ExpBackward");
    assert_eq!(e.modified_by, "mul_");
    drop(node);

    // Saving an output keeps no reference cycle: dropping the output frees the node.
    let z = x.sigmoid().unwrap();
    let weak = Arc::downgrade(&z.grad_fn().unwrap());
    assert!(weak.upgrade().is_some());
    drop(z);
    assert!(weak.upgrade().is_none(), "SigmoidBackward owned itself through its saved output");
}

#[test]
fn an_unmodified_saved_output_gives_the_right_gradient() {
    // d/dx sum(exp(x)) = exp(x), read back from the saved output.
    let x = rand_leaf(&[3], 3);
    x.exp().unwrap().sum(None, false).unwrap().backward_default().unwrap();
    for (g, x) in vals(&x.grad().unwrap()).iter().zip(vals(&x)) {
        assert!((g - x.exp()).abs() < 1e-12);
    }
}

#[test]
fn views_share_the_version_counter() {
    let (_x, a) = non_leaf_f32();
    let t = a.t().unwrap();
    let row = a.index(&[IndexItem::Int(1)]).unwrap();
    let narrow = a.narrow(1, 1, 2).unwrap();
    let d = a.detach();
    let flat = a.view(&[-1]).unwrap();
    for v in [&t, &row, &narrow, &d, &flat] {
        assert!(v.shares_storage(&a));
        assert_eq!(v.version(), 0);
    }
    row.add_scalar_(1.0).unwrap();
    for v in [&a, &t, &row, &narrow, &d, &flat] {
        assert_eq!(v.version(), 1);
    }
    d.mul_scalar_(3.0).unwrap();
    assert_eq!(a.version(), 2);
    assert_eq!(t.version(), 2);
    // A copy has its own counter.
    let c = a.clone_tensor().unwrap();
    assert_eq!(c.version(), 0);
}

#[test]
fn writing_through_a_view_invalidates_the_saved_base() {
    let (_x, a) = non_leaf_f32();
    let y = a.sin().unwrap();
    a.t().unwrap().narrow(0, 0, 1).unwrap().fill_(0.5).unwrap();
    let e = saved_error(y.sum(None, false).unwrap().backward_default());
    assert_eq!(e.saved_by, "SinBackward");
    assert_eq!(e.modified_by, "fill_");
}

#[test]
fn writing_the_base_invalidates_a_saved_view() {
    let (_x, a) = non_leaf_f32();
    let v = a.index(&[IndexItem::Slice { start: Some(1), stop: None, step: 1 }]).unwrap();
    let y = v.log().unwrap();
    a.sub_(&Tensor::ones(&[4], DType::Float32).unwrap()).unwrap();
    let e = saved_error(y.sum(None, false).unwrap().backward_default());
    assert_eq!(e.saved_by, "LogBackward");
    assert_eq!(e.modified_by, "sub_");
    assert_eq!(e.shape, vec![2, 4], "the saved tensor is the view");
}

#[test]
fn ops_that_save_their_output_ignore_writes_to_their_input() {
    // tanh and sqrt keep their output (d tanh = 1 - y^2, d sqrt = 1/(2y)), not their input.
    let (x, a) = non_leaf_f32();
    let y = a.tanh().unwrap().add(&a.add_scalar(1.0).unwrap().sqrt().unwrap()).unwrap();
    a.t().unwrap().narrow(0, 0, 1).unwrap().fill_(0.5).unwrap();
    y.sum(None, false).unwrap().backward_default().unwrap();
    assert!(x.grad().is_some());
}

#[test]
fn writes_to_unsaved_tensors_are_harmless() {
    // add saves nothing, so writing into its input afterwards does not affect backward.
    let (x, a) = non_leaf_f32();
    let y = a.add_scalar(1.0).unwrap().sum(None, false).unwrap();
    a.add_scalar_(5.0).unwrap();
    y.backward_default().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0; 12]);
}

#[test]
fn writes_after_backward_are_harmless() {
    let (x, a) = non_leaf_f32();
    let y = a.sin().unwrap().sum(None, false).unwrap();
    y.backward_default().unwrap();
    a.add_scalar_(1.0).unwrap();
    assert!(x.grad().is_some());
}

#[test]
fn the_check_applies_with_retain_graph_on_the_second_pass() {
    // The first backward succeeds; a write between the two passes is caught by the second.
    let (_x, a) = non_leaf_f32();
    let y = a.cos().unwrap().sum(None, false).unwrap();
    tapegrad::backward(std::slice::from_ref(&y), &[None], true, false, None).unwrap();
    a.div_scalar_(2.0).unwrap();
    let e = saved_error(tapegrad::backward(&[y], &[None], false, false, None));
    assert_eq!(e.saved_by, "CosBackward");
    assert_eq!(e.modified_by, "div_");
}

#[test]
fn inplace_on_a_leaf_that_requires_grad_is_refused() {
    let x = rand_leaf(&[3], 4);
    let msg = err_msg(x.add_scalar_(1.0));
    assert!(msg.contains("a leaf tensor that requires grad"), "{msg}");
    assert_eq!(x.version(), 0, "a refused write does not bump the version");
    let msg = err_msg(x.narrow(0, 0, 1).unwrap().fill_(1.0));
    assert!(msg.contains("leaf tensor that requires grad"), "{msg}");
    // Under no_grad it is allowed (an optimizer step).
    let _g = GradModeGuard::no_grad();
    x.add_scalar_(1.0).unwrap();
    assert_eq!(x.version(), 1);
}

#[test]
fn node_unpack_saved_reports_the_same_error() {
    let (_x, a) = non_leaf_f32();
    let y = a.cos().unwrap();
    let node = y.grad_fn().unwrap();
    assert_eq!(node.unpack_saved().unwrap().len(), 1);
    a.add_scalar_(1.0).unwrap();
    match node.unpack_saved() {
        Err(Error::SavedTensorModified(e)) => assert_eq!(e.saved_by, "CosBackward"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("expected an error"),
    }
}
