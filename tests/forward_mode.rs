//! Forward mode in the core: dual levels, tangents through built-in operations, nesting. Oracles are
//! closed forms.

use tapegrad::autograd::forward;
use tapegrad::Tensor;

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
    }
}

// One test: the levels are global to the process, and the test harness runs tests on threads.
#[test]
fn tangents_levels_and_nesting() {
    let x0: [f64; 3] = [0.5, -1.0, 2.0];
    let t0: [f64; 3] = [1.0, 2.0, -1.0];
    let x = Tensor::from_vec(x0.to_vec(), &[3]).unwrap();
    let t = Tensor::from_vec(t0.to_vec(), &[3]).unwrap();

    // no level: an error, not a panic
    assert!(x.make_dual(&t, None).is_err());

    let l0 = forward::enter_level();
    let d = x.make_dual(&t, None).unwrap();
    // d(sin(x) * x) = (cos(x) x + sin(x)) t
    let y = d.sin().unwrap().mul(&d).unwrap();
    let expected: Vec<f64> = x0.iter().zip(&t0).map(|(x, t)| (x.cos() * x + x.sin()) * t).collect();
    close(&vals(&y.tangent(None).unwrap().unwrap()), &expected);
    // a view carries the view of the tangent
    let v = d.view(&[3, 1]).unwrap();
    close(&vals(&v.tangent(None).unwrap().unwrap()), &t0);

    // nested: second derivative of exp through a level inside
    let l1 = forward::enter_level();
    assert_eq!((l0, l1), (0, 1));
    let one = Tensor::from_vec(vec![1.0; 3], &[3]).unwrap();
    let dd = d.make_dual(&one, Some(l1 as i64)).unwrap();
    let e = dd.exp().unwrap();
    let inner = e.tangent(Some(l1 as i64)).unwrap().unwrap(); // exp(x), carrying its level-0 tangent
    assert!(forward::exit_level(Some(l0 as i64)).is_err()); // not the last level
    forward::exit_level(None).unwrap();
    let expected: Vec<f64> = x0.iter().zip(&t0).map(|(x, t)| x.exp() * t).collect();
    close(&vals(&inner.tangent(Some(l0 as i64)).unwrap().unwrap()), &expected);

    forward::exit_level(None).unwrap();
    // the level is gone: so are its tangents
    assert!(y.tangent(None).unwrap().is_none());
    assert!(forward::exit_level(None).is_err());
}
