//! The dtype rules of the core: PyTorch's promotion (`promote`, `result_type`), wrapping integer
//! arithmetic in each width, and float16/bfloat16 computed in float32 and rounded once.

use tapegrad::{DType, Tensor};

#[test]
fn promotion_matches_pytorchs_table() {
    use DType::*;
    let cases = [
        (Bool, UInt8, UInt8),
        (UInt8, Int8, Int16),
        (UInt8, Int16, Int16),
        (Int8, Int32, Int32),
        (Int32, Int64, Int64),
        (Int64, Float16, Float16),
        (Float16, BFloat16, Float32),
        (BFloat16, Float32, Float32),
        (Float16, Float64, Float64),
    ];
    for (a, b, want) in cases {
        assert_eq!(a.promote(b), want, "{a} with {b}");
        assert_eq!(b.promote(a), want, "{b} with {a}");
    }
    // A 0-dim tensor or a scalar counts only across categories.
    assert_eq!(DType::result_type(Some(Int32), Some(Float64), None), Some(Float64));
    assert_eq!(DType::result_type(Some(Float16), Some(Float64), None), Some(Float16));
    assert_eq!(DType::result_type(Some(Int8), Some(Int64), None), Some(Int8));
    assert_eq!(DType::result_type(Some(Int8), None, Some(Float32)), Some(Float32));
    assert_eq!(DType::result_type(Some(Bool), None, Some(Int64)), Some(Int64));
    assert_eq!(DType::result_type(None, Some(UInt8), Some(Float32)), Some(Float32));
    assert_eq!(DType::promote_operands(Int16, 1, Float32, 0), Float32);
}

#[test]
fn narrow_integers_wrap_in_their_width() {
    let u = Tensor::from_vec(vec![200u8, 5], &[2]).unwrap();
    let s = u.add_scalar(100i64).unwrap();
    assert_eq!(s.dtype(), DType::UInt8);
    assert_eq!(s.to_vec::<u8>().unwrap(), vec![44, 105]);
    let i = Tensor::from_vec(vec![100i8, -128], &[2]).unwrap();
    assert_eq!(i.add(&i).unwrap().to_vec::<i8>().unwrap(), vec![-56, 0]);
    // sums of integers are int64, as PyTorch's
    let total = u.sum(None, false).unwrap();
    assert_eq!((total.dtype(), total.to_vec::<i64>().unwrap()), (DType::Int64, vec![205]));
}

#[test]
fn half_types_compute_in_float32_and_round_once() {
    // 4096 ones: a float16 accumulator sticks at 2048 (2048 + 1 rounds back to 2048); a float32 one
    // reaches 4096, which float16 holds exactly.
    let t = Tensor::from_vec(vec![half::f16::ONE; 4096], &[4096]).unwrap();
    let s = t.sum(None, false).unwrap();
    assert_eq!(s.dtype(), DType::Float16);
    assert_eq!(s.to_vec::<half::f16>().unwrap()[0].to_f32(), 4096.0);
    // casts: float to narrow integers as PyTorch's x86 casts
    let f = Tensor::from_vec(vec![300.0f32, -1.0, 3e9], &[3]).unwrap();
    assert_eq!(f.to_dtype(DType::UInt8).unwrap().to_vec::<u8>().unwrap(), vec![44, 255, 0]);
    assert_eq!(f.to_dtype(DType::Int32).unwrap().to_vec::<i32>().unwrap(), vec![300, -1, i32::MIN]);
}
