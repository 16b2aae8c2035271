mod common;
use common::*;
use tapegrad::Tensor;

#[test]
fn mul_add_grad() {
    // d/dx sum(x*y + x) = y + 1 ; d/dy = x
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = leaf(&[4.0, 5.0, 6.0], &[3]);
    let z = x.mul(&y).unwrap().add(&x).unwrap().sum(None, false).unwrap();
    z.backward_default().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![5.0, 6.0, 7.0]);
    assert_eq!(vals(&y.grad().unwrap()), vec![1.0, 2.0, 3.0]);
}

#[test]
fn fd_mm_relu() {
    let a = leaf(&values(12, 1), &[3, 4]);
    let b = leaf(&values(8, 2), &[4, 2]);
    check_grads(&|t: &[Tensor]| t[0].mm(&t[1]).unwrap().relu().unwrap().pow_scalar(2.0).unwrap(), &[a, b]);
}

#[test]
fn fd_broadcast() {
    let a = leaf(&values(6, 3), &[2, 3]);
    let b = leaf(&values(3, 4), &[3]);
    check_grads(
        &|t: &[Tensor]| t[0].mul(&t[1]).unwrap().exp().unwrap().div(&t[1].add_scalar(3.0).unwrap()).unwrap(),
        &[a, b],
    );
}
