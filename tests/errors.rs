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
