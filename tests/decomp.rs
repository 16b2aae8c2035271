//! `ops::decomp` (tg.linalg's faer kernels) from Rust: closed-form values, the batch element named
//! in a singular-matrix error, and refusals.

use tapegrad::ops::decomp;
use tapegrad::{Error, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
    }
}

#[test]
fn inverse_determinant_and_solve_of_a_2x2_batch() {
    // [[4, 7], [2, 6]]: det 10, inverse [[0.6, -0.7], [-0.2, 0.4]]; [[0, 1], [1, 0]]: det -1.
    let a = t(&[4.0, 7.0, 2.0, 6.0, 0.0, 1.0, 1.0, 0.0], &[2, 2, 2]);
    close(&decomp::inv(&a).unwrap().to_f64_vec().unwrap(), &[0.6, -0.7, -0.2, 0.4, 0.0, 1.0, 1.0, 0.0]);
    close(&decomp::det(&a).unwrap().to_f64_vec().unwrap(), &[10.0, -1.0]);
    let (sign, logabs) = decomp::slogdet(&a).unwrap();
    close(&sign.to_f64_vec().unwrap(), &[1.0, -1.0]);
    close(&logabs.to_f64_vec().unwrap(), &[10f64.ln(), 0.0]);
    let b = t(&[11.0, 8.0, 2.0, 3.0], &[2, 2, 1]);
    close(&decomp::solve(&a, &b).unwrap().to_f64_vec().unwrap(), &[1.0, 1.0, 3.0, 2.0]);
}

#[test]
fn cholesky_of_a_known_factor() {
    // [[4, 2], [2, 2]] = L Lᵀ with L = [[2, 0], [1, 1]].
    let a = t(&[4.0, 2.0, 2.0, 2.0], &[2, 2]);
    close(&decomp::cholesky(&a, false).unwrap().to_f64_vec().unwrap(), &[2.0, 0.0, 1.0, 1.0]);
    close(&decomp::cholesky(&a, true).unwrap().to_f64_vec().unwrap(), &[2.0, 1.0, 0.0, 1.0]);
}

#[test]
fn eigh_and_svd_of_known_matrices() {
    let (w, _) = decomp::eigh(&t(&[2.0, 1.0, 1.0, 2.0], &[2, 2]), false, false).unwrap();
    close(&w.to_f64_vec().unwrap(), &[1.0, 3.0]);
    let (_, s, _) = decomp::svd(&t(&[3.0, 0.0, 0.0, -4.0], &[2, 2]), false, false).unwrap();
    close(&s.to_f64_vec().unwrap(), &[4.0, 3.0]);
}

#[test]
fn singular_and_indefinite_matrices_name_the_batch_element() {
    let a = t(&[1.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 4.0], &[2, 2, 2]);
    match decomp::inv(&a) {
        Err(Error::LinAlg(m)) => assert!(m.contains("(Batch element 1)") && m.contains("singular"), "{m}"),
        other => panic!("expected a LinAlg error, got {other:?}"),
    }
    match decomp::cholesky(&t(&[1.0, 2.0, 2.0, 1.0], &[2, 2]), false) {
        Err(Error::LinAlg(m)) => assert!(m.contains("order 2") && !m.contains("Batch"), "{m}"),
        other => panic!("expected a LinAlg error, got {other:?}"),
    }
    close(&decomp::det(&t(&[1.0, 2.0, 2.0, 4.0], &[2, 2])).unwrap().to_f64_vec().unwrap(), &[0.0]);
}

#[test]
fn refusals_are_errors_not_panics() {
    assert!(matches!(decomp::inv(&t(&[1.0; 6], &[2, 3])), Err(Error::Shape(_))));
    assert!(matches!(decomp::det(&t(&[1.0; 3], &[3])), Err(Error::Shape(_))));
    let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], &[2, 2]).unwrap();
    assert!(matches!(decomp::inv(&ints), Err(Error::Dtype(_))));
    let a = t(&[1.0, 0.0, 0.0, 1.0], &[2, 2]);
    assert!(decomp::solve(&a, &t(&[1.0; 3], &[3, 1])).is_err());
}
