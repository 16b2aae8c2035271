//! The element trait that lets kernels be written once for every dtype, and the dispatch macros
//! that pick the concrete type from a runtime `DType`.

use std::fmt::Debug;

use super::dtype::DType;
use super::storage::{Buffer, Data};

/// A type that can live in a tensor's buffer.
pub trait Element: Copy + Send + Sync + Debug + PartialOrd + Default + 'static {
    /// The matching runtime dtype.
    const DTYPE: DType;
    /// The buffer's elements, when the buffer holds this type.
    fn slice(b: &Buffer) -> Option<&[Self]>;
    /// The buffer's elements, mutably.
    fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]>;
    /// Wraps a vector into a buffer.
    fn into_buffer(v: Vec<Self>) -> Buffer;
    /// Wraps owned or foreign elements into a buffer.
    fn data_buffer(d: Data<Self>) -> Buffer;
    /// Lossy conversion to f64 (bool: 0/1).
    fn to_f64(self) -> f64;
    /// Lossy conversion from f64 (bool: non-zero).
    fn from_f64(v: f64) -> Self;
    /// Conversion to i64 (floats truncate toward zero).
    fn to_i64(self) -> i64;
    /// Conversion from i64.
    fn from_i64(v: i64) -> Self;
}

/// Floating-point elements: the ones with gradients.
pub trait Float: Element + num_traits::Float + std::iter::Sum {}
impl Float for f32 {}
impl Float for f64 {}
impl Float for half::f16 {}
impl Float for half::bf16 {}

/// Integer elements (not bool).
pub trait Int:
    Element + num_traits::PrimInt + num_traits::WrappingAdd + num_traits::WrappingSub + num_traits::WrappingMul
{
}
impl Int for u8 {}
impl Int for i8 {}
impl Int for i16 {}
impl Int for i32 {}
impl Int for i64 {}

macro_rules! impl_element {
    ($t:ty, $dt:ident, $variant:ident, to_f64: $to:expr, from_f64: $from:expr, to_i64: $toi:expr, from_i64: $fromi:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            fn slice(b: &Buffer) -> Option<&[Self]> {
                match b {
                    Buffer::$variant(v) => Some(v.as_slice()),
                    _ => None,
                }
            }
            fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]> {
                match b {
                    Buffer::$variant(v) => v.as_mut_slice(),
                    _ => None,
                }
            }
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$variant(Data::Owned(v))
            }
            fn data_buffer(d: Data<Self>) -> Buffer {
                Buffer::$variant(d)
            }
            fn to_f64(self) -> f64 {
                ($to)(self)
            }
            fn from_f64(v: f64) -> Self {
                ($from)(v)
            }
            fn to_i64(self) -> i64 {
                ($toi)(self)
            }
            fn from_i64(v: i64) -> Self {
                ($fromi)(v)
            }
        }
    };
}

impl_element!(f32, Float32, F32, to_f64: |x: f32| x as f64, from_f64: |v: f64| v as f32,
    to_i64: |x: f32| x as i64, from_i64: |v: i64| v as f32);
impl_element!(f64, Float64, F64, to_f64: |x: f64| x, from_f64: |v: f64| v,
    to_i64: |x: f64| x as i64, from_i64: |v: i64| v as f64);
impl_element!(i64, Int64, I64, to_f64: |x: i64| x as f64, from_f64: f64_to_i64,
    to_i64: |x: i64| x, from_i64: |v: i64| v);
// Float to integer as PyTorch's CPU casts give on x86-64 (where C++ leaves out-of-range values
// undefined): int64 and int32 take their minimum for NaN and values out of range, the narrower
// types truncate through int32 (so 300.0 as uint8 is 44, -1.0 is 255, 3e9 is 0). From i64, every
// narrow type wraps as a C cast does.
fn f64_to_i32(v: f64) -> i32 {
    if !(-2147483648.0..2147483648.0).contains(&v) {
        i32::MIN
    } else {
        v as i32
    }
}
fn f64_to_i64(v: f64) -> i64 {
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}
impl_element!(i32, Int32, I32, to_f64: |x: i32| x as f64, from_f64: f64_to_i32,
    to_i64: |x: i32| x as i64, from_i64: |v: i64| v as i32);
impl_element!(i16, Int16, I16, to_f64: |x: i16| x as f64, from_f64: |v: f64| f64_to_i32(v) as i16,
    to_i64: |x: i16| x as i64, from_i64: |v: i64| v as i16);
impl_element!(i8, Int8, I8, to_f64: |x: i8| x as f64, from_f64: |v: f64| f64_to_i32(v) as i8,
    to_i64: |x: i8| x as i64, from_i64: |v: i64| v as i8);
impl_element!(u8, UInt8, U8, to_f64: |x: u8| x as f64, from_f64: |v: f64| f64_to_i32(v) as u8,
    to_i64: |x: u8| x as i64, from_i64: |v: i64| v as u8);
// Half types: to and from f64 round once; from i64 goes through f32 as PyTorch's conversion does.
impl_element!(half::f16, Float16, F16, to_f64: |x: half::f16| x.to_f64(), from_f64: half::f16::from_f64,
    to_i64: |x: half::f16| x.to_f32() as i64, from_i64: |v: i64| half::f16::from_f32(v as f32));
impl_element!(half::bf16, BFloat16, BF16, to_f64: |x: half::bf16| x.to_f64(), from_f64: half::bf16::from_f64,
    to_i64: |x: half::bf16| x.to_f32() as i64, from_i64: |v: i64| half::bf16::from_f32(v as f32));
impl_element!(bool, Bool, Bool, to_f64: |x: bool| x as u8 as f64, from_f64: |v: f64| v != 0.0,
    to_i64: |x: bool| x as i64, from_i64: |v: i64| v != 0);

// NOTE [Half-precision compute]: float16 and bfloat16 are storage types. Every scalar operation
// on them (`half`'s arithmetic and `num_traits::Float` functions) widens to f32, computes, and
// rounds the result back on store; reductions, cumulative ops and matmul go further and run the
// whole operation in float32 (`Tensor::via_float32`), rounding only the final values. That is what
// PyTorch's CPU kernels do for most ops (their "opmath" type for Half/BFloat16 is float), so a
// single op gives the same bits, and sums do not lose precision to a 16-bit accumulator.
//
// NOTE [Narrow integers]: uint8/int8/int16/int32 kernels run on their own type with wrapping
// arithmetic (`Int`), so `uint8 200 + 100` is 44 as in PyTorch; sums and products of any integer
// (or bool) tensor are int64, as PyTorch's are.

/// Runs `$body` with `$T` bound to the element type of `$dtype` (any dtype).
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::DType::Float64 => {
                type $T = f64;
                $body
            }
            $crate::DType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::DType::Int16 => {
                type $T = i16;
                $body
            }
            $crate::DType::Int8 => {
                type $T = i8;
                $body
            }
            $crate::DType::UInt8 => {
                type $T = u8;
                $body
            }
            $crate::DType::Float16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::BFloat16 => {
                type $T = half::bf16;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the float type of `$dtype` (float16 and bfloat16 included, see
/// NOTE [Half-precision compute]); other dtypes return a dtype error naming `$op`.
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_float {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::DType::Float64 => {
                type $T = f64;
                $body
            }
            $crate::DType::Float16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::BFloat16 => {
                type $T = half::bf16;
                $body
            }
            other => {
                return Err($crate::Error::Dtype(format!(
                    "{} is only defined for floating-point tensors, got {}",
                    $op, other
                )))
            }
        }
    };
}

/// Like `dispatch_float!` but for float32 and float64 only (the dense decompositions, which have
/// no 16-bit kernels in PyTorch either).
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_float_wide {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::DType::Float64 => {
                type $T = f64;
                $body
            }
            other if other.is_half() => {
                return Err($crate::Error::Dtype(format!(
                    "{}: Low precision dtypes not supported. Got {}",
                    $op,
                    other.torch_name()
                )))
            }
            other => {
                return Err($crate::Error::Dtype(format!(
                    "{} is only defined for floating-point tensors, got {}",
                    $op, other
                )))
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the integer type of `$dtype` (see NOTE [Narrow integers]);
/// other dtypes run `$otherwise`.
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_int {
    ($dtype:expr, $T:ident => $body:expr, $other:pat => $otherwise:expr) => {
        match $dtype {
            $crate::DType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::DType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::DType::Int16 => {
                type $T = i16;
                $body
            }
            $crate::DType::Int8 => {
                type $T = i8;
                $body
            }
            $crate::DType::UInt8 => {
                type $T = u8;
                $body
            }
            $other => $otherwise,
        }
    };
}
