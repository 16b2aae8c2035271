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
impl_element!(i64, Int64, I64, to_f64: |x: i64| x as f64, from_f64: |v: f64| v as i64,
    to_i64: |x: i64| x, from_i64: |v: i64| v);
impl_element!(bool, Bool, Bool, to_f64: |x: bool| x as u8 as f64, from_f64: |v: f64| v != 0.0,
    to_i64: |x: bool| x as i64, from_i64: |v: i64| v != 0);

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
        }
    };
}

/// Runs `$body` with `$T` bound to the float type of `$dtype`; other dtypes return a dtype error
/// naming `$op`.
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
            other => {
                return Err($crate::Error::Dtype(format!(
                    "{} is only defined for floating-point tensors, got {}",
                    $op, other
                )))
            }
        }
    };
}
