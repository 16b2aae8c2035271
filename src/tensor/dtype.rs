//! Element types and the promotion rule (PyTorch's: float64 > float32 > int64 > bool).

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// 64-bit signed integer
    Int64,
    /// 32-bit float, the default
    Float32,
    /// 64-bit float
    Float64,
}

impl DType {
    /// The name users see (`float32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int64 => "int64",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
        }
    }

    /// Parses a name as written by `name`.
    pub fn from_name(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "int64" | "long" => DType::Int64,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
            _ => return None,
        })
    }

    /// Floating-point types are the ones that can require gradients.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    /// The type two tensor operands are computed in.
    pub fn promote(self, other: DType) -> DType {
        self.max(other)
    }

    /// The type two tensor operands of `ndim` dimensions are computed in, by PyTorch's rule: a
    /// 0-dim tensor beside one with dimensions counts only when it is of a higher category
    /// (bool < integer < float), so `float32[4] + float64[]` stays float32 while
    /// `int64[4] + float64[]` is float64. Operands of the same kind promote as usual.
    pub fn promote_operands(a: DType, a_ndim: usize, b: DType, b_ndim: usize) -> DType {
        let lower_counts = |dimmed: DType, zero: DType| {
            if zero.category() > dimmed.category() {
                dimmed.promote(zero)
            } else {
                dimmed
            }
        };
        match (a_ndim == 0, b_ndim == 0) {
            (false, true) => lower_counts(a, b),
            (true, false) => lower_counts(b, a),
            _ => a.promote(b),
        }
    }

    fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::Int64 => 1,
            DType::Float32 | DType::Float64 => 2,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::Int64 | DType::Float64 => 8,
            DType::Float32 => 4,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Python-style scalar operand. It does not change a tensor's dtype, except that a float scalar
/// with an integer or bool tensor computes in float32 (PyTorch's default dtype).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A float
    Float(f64),
    /// An integer
    Int(i64),
    /// A bool
    Bool(bool),
}

impl Scalar {
    /// The value as f64.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(v) => v as u8 as f64,
        }
    }

    /// The value as i64: integers exact, bools 0/1, floats truncated toward zero (saturating).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Float(v) => v as i64,
            Scalar::Int(v) => v,
            Scalar::Bool(v) => v as i64,
        }
    }

    /// The value as an element of type `T`, converted once: an integer goes straight to `T`
    /// (through f64 it would lose every integer above 2**53, and round twice on its way to f32).
    pub fn to_element<T: super::element::Element>(self) -> T {
        match self {
            Scalar::Float(v) => T::from_f64(v),
            Scalar::Int(v) => T::from_i64(v),
            Scalar::Bool(v) => T::from_i64(v as i64),
        }
    }

    /// True when the value is below zero.
    pub fn is_negative(self) -> bool {
        match self {
            Scalar::Float(v) => v < 0.0,
            Scalar::Int(v) => v < 0,
            Scalar::Bool(_) => false,
        }
    }

    /// The dtype of a tensor made of this scalar alone.
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Float(_) => super::default_dtype::default_float(),
            Scalar::Int(_) => DType::Int64,
            Scalar::Bool(_) => DType::Bool,
        }
    }

    /// The dtype an operation between a tensor of `dtype` and this scalar computes in.
    pub fn result_dtype_with(self, dtype: DType) -> DType {
        match (self, dtype) {
            (Scalar::Float(_), DType::Int64 | DType::Bool) => super::default_dtype::default_float(),
            (Scalar::Int(_), DType::Bool) => DType::Int64,
            _ => dtype,
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
