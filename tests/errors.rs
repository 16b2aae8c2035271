//! Errors that the Rust API and the Python bindings share: each refusal is a variant of the one
//! enum, with the same words whichever side asks.

use tapegrad::error::Error;
use tapegrad::ops::IndexItem;
use tapegrad::Tensor;

#[test]
fn a_slice_step_of_zero_or_below_is_the_structured_slice_step_error() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    for (step, words) in [
        (0, "slice step cannot be zero".to_string()),
        (-2, "slice step must be greater than zero (got -2): negative steps are not supported".to_string()),
    ] {
        match t.index(&[IndexItem::Slice { start: None, stop: None, step }]) {
            Err(e @ Error::SliceStep { step: s }) => {
                assert_eq!(s, step);
                assert_eq!(e.to_string(), words);
            }
            other => panic!("step {step}: expected SliceStep, got {other:?}"),
        }
    }
    // A positive step is fine: every second element.
    let every_other = t.index(&[IndexItem::Slice { start: None, stop: None, step: 2 }]).unwrap();
    assert_eq!(every_other.to_vec::<f32>().unwrap(), vec![1.0, 3.0]);
}

#[test]
fn argmax_of_a_bool_tensor_is_refused_as_in_python() {
    let t = Tensor::from_vec(vec![false, true, true], &[3]).unwrap();
    for dim in [None, Some(0)] {
        match t.argmax(dim, false) {
            Err(e @ Error::Dtype(_)) => assert_eq!(e.to_string(), "argmax(): does not support bool input"),
            other => panic!("dim {dim:?}: expected a Dtype error, got {other:?}"),
        }
    }
    // Other dtypes still answer: the first index of the largest value.
    let i = Tensor::from_vec(vec![3i64, 7, 7, 1], &[4]).unwrap();
    assert_eq!(i.argmax(None, false).unwrap().to_vec::<i64>().unwrap(), vec![1]);
}

#[test]
fn a_float_bound_makes_an_integer_clamp_float32_and_is_refused_in_place() {
    use tapegrad::{DType, Scalar};
    let t = Tensor::from_vec(vec![0i64, 1, 2], &[3]).unwrap();
    // As in PyTorch: the bound 0.5 is not rounded; the result is float32.
    let c = t.clamp_scalar(Some(Scalar::Float(0.5)), None).unwrap();
    assert_eq!(c.dtype(), DType::Float32);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0.5, 1.0, 2.0]);
    assert_eq!(t.clamp_result_dtype(Some(Scalar::Float(0.5)), None), DType::Float32);
    // In place the float32 result cannot be written back into int64.
    let words = "clamp_: result type float32 can't be cast to the desired output type int64";
    match t.clamp_scalar_(Some(Scalar::Float(0.5)), None) {
        Err(e @ Error::Dtype(_)) => assert_eq!(e.to_string(), words),
        other => panic!("expected a Dtype error, got {other:?}"),
    }
    match t.clamp_(Some(0.5), None) {
        Err(e @ Error::Dtype(_)) => assert_eq!(e.to_string(), words),
        other => panic!("expected a Dtype error, got {other:?}"),
    }
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 1, 2], "a refused clamp_ leaves the tensor as it was");
    // An int bound keeps int64 and is exact past 2^53.
    let big = (1i64 << 53) + 1;
    let u = Tensor::from_vec(vec![0i64, big + 5], &[2]).unwrap();
    u.clamp_scalar_(Some(Scalar::Int(big)), Some(Scalar::Int(big + 2))).unwrap();
    assert_eq!(u.to_vec::<i64>().unwrap(), vec![big, big + 2]);
    // An int bound makes a bool tensor int64; a bool bound changes nothing.
    let b = Tensor::from_vec(vec![false, true], &[2]).unwrap();
    assert_eq!(b.clamp_result_dtype(Some(Scalar::Int(1)), None), DType::Int64);
    assert_eq!(b.clamp_result_dtype(Some(Scalar::Bool(true)), None), DType::Bool);
    assert_eq!(b.clamp_scalar(Some(Scalar::Int(1)), None).unwrap().to_vec::<i64>().unwrap(), vec![1, 1]);
}
