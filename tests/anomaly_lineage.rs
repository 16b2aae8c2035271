//! Anomaly mode's lineage: a node created while another node's backward runs remembers that node
//! (and, through it, that node's own parent), and the failure report lists the chain. One test per
//! binary: anomaly mode is a process-wide switch.

use tapegrad::autograd::anomaly;
use tapegrad::{grad, Tensor};

#[test]
fn nodes_created_by_a_backward_know_their_parent_only_under_anomaly_mode() {
    let x = Tensor::from_vec(vec![0.5f64, 1.5], &[2]).unwrap().requires_grad_(true).unwrap();

    // off: nothing is recorded
    let y = x.sin().unwrap();
    let g = grad(&[y.sum(None, false).unwrap()], std::slice::from_ref(&x), &[None], false, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert!(g.grad_fn().unwrap().anomaly_parent().is_none());

    let prev = anomaly::set_enabled(true);
    let y = x.sin().unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "SinBackward");
    assert!(y.grad_fn().unwrap().anomaly_parent().is_none(), "a forward node has no parent");
    // d(sum sin x)/dx = cos x, computed by SinBackward: the node of the result is its child
    let g1 = grad(&[y.sum(None, false).unwrap()], std::slice::from_ref(&x), &[None], false, true, false).unwrap();
    let g1 = g1[0].clone().unwrap();
    let n1 = g1.grad_fn().unwrap();
    let p1 = n1.anomaly_parent().expect("created during SinBackward");
    assert_eq!(p1.name, "SinBackward");
    assert!(p1.parent.is_none());
    // one order higher: the new nodes are children of a node SinBackward created
    let g2 = grad(&[g1.sum(None, false).unwrap()], std::slice::from_ref(&x), &[None], false, true, false).unwrap();
    let n2 = g2[0].clone().unwrap().grad_fn().unwrap();
    let p2 = n2.anomaly_parent().expect("created during a second-order backward");
    let grandparent = p2.parent.as_ref().expect("the parent was itself created during SinBackward");
    assert_eq!(grandparent.name, "SinBackward");
    anomaly::set_enabled(prev);

    // and the report walks the chain, one message per generation
    let report = anomaly::failure_report(n2.name(), Some("here\n"), n2.anomaly_parent());
    assert_eq!(report.len(), 3, "{report:?}");
    assert_eq!(
        report[0],
        format!("Error detected in {}. Traceback of forward call that caused the error:\nhere\n", n2.name())
    );
    assert!(report[1].starts_with(&format!("\n\nPrevious calculation was induced by {}.", p2.name)), "{report:?}");
    assert!(report[2].starts_with("\n\nPrevious calculation was induced by SinBackward. No forward pass information"));
    let lone = anomaly::failure_report("MulBackward", None, None);
    assert_eq!(
        lone,
        vec!["Error detected in MulBackward. No forward pass information available. Enable detect anomaly during \
              forward pass for more information."
            .to_string()]
    );
}
