//! Element types and the promotion rule (PyTorch's `torch.result_type`).
//!
//! Categories are bool < integer < floating point. Two operands of the same "priority" promote to
//! the smallest dtype that holds both (`uint8` with `int8` is `int16`, `float16` with `bfloat16` is
//! `float32`); a 0-dim tensor beside a tensor with dimensions, and a Python scalar beside any tensor,
//! counts only when it is of a higher category (see `DType::result_type`).

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// 8-bit unsigned integer
    UInt8,
    /// 8-bit signed integer
    Int8,
    /// 16-bit signed integer
    Int16,
    /// 32-bit signed integer
    Int32,
    /// 64-bit signed integer
    Int64,
    /// IEEE 754 half precision (computed in float32, rounded on store)
    Float16,
    /// bfloat16: float32's exponent with an 8-bit significand (computed in float32, rounded on store)
    BFloat16,
    /// 32-bit float, the default
    Float32,
    /// 64-bit float
    Float64,
}

impl DType {
    /// Every dtype, in declaration order (`ALL[dt as usize] == dt`).
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
    ];

    /// The name users see (`float32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
        }
    }

    /// PyTorch's scalar-type name, as its error messages spell it (`Float`, `Long`, `Half`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::UInt8 => "Byte",
            DType::Int8 => "Char",
            DType::Int16 => "Short",
            DType::Int32 => "Int",
            DType::Int64 => "Long",
            DType::Float16 => "Half",
            DType::BFloat16 => "BFloat16",
            DType::Float32 => "Float",
            DType::Float64 => "Double",
        }
    }

    /// Parses a name as written by `name`, or one of PyTorch's aliases (`half`, `float`, `double`,
    /// `short`, `int`, `long`).
    pub fn from_name(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "uint8" => DType::UInt8,
            "int8" => DType::Int8,
            "int16" | "short" => DType::Int16,
            "int32" | "int" => DType::Int32,
            "int64" | "long" => DType::Int64,
            "float16" | "half" => DType::Float16,
            "bfloat16" => DType::BFloat16,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
            _ => return None,
        })
    }

    /// Floating-point types are the ones that can require gradients.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64)
    }

    /// The 16-bit floats, which kernels compute in float32 and round on store.
    pub fn is_half(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16)
    }

    /// The integer types (not bool).
    pub fn is_int(self) -> bool {
        matches!(self, DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64)
    }

    /// True for the types that hold negative values (every one but bool and uint8), as
    /// `torch.dtype.is_signed`.
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::UInt8)
    }

    /// The type two operands of the same priority are computed in (PyTorch's `promote_types`).
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        if self == other {
            return self;
        }
        match (self.category().cmp(&other.category()), self, other) {
            (std::cmp::Ordering::Greater, ..) => self,
            (std::cmp::Ordering::Less, ..) => other,
            // Same category, different types.
            (_, Bool, _) | (_, _, Bool) => unreachable!("bool is alone in its category"),
            (_, UInt8, Int8) | (_, Int8, UInt8) => Int16,
            (_, Float16, BFloat16) | (_, BFloat16, Float16) => Float32,
            _ => {
                if self.size() >= other.size() {
                    self
                } else {
                    other
                }
            }
        }
    }

    /// PyTorch's `result_type` over three groups of operands, each already promoted within itself:
    /// tensors with dimensions, 0-dim tensors, and Python scalars (a float scalar counts as the
    /// default dtype, float32; an int one as int64). A lower group matters only when its category
    /// is higher, or when the higher group is bool.
    pub fn result_type(dimmed: Option<DType>, zero_dim: Option<DType>, scalars: Option<DType>) -> Option<DType> {
        fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
            match (higher, lower) {
                (None, l) => l,
                (h, None) => h,
                (Some(h), Some(l)) => {
                    if h.is_float() {
                        Some(h)
                    } else if h == DType::Bool || l.is_float() {
                        Some(h.promote(l))
                    } else {
                        Some(h)
                    }
                }
            }
        }
        combine(dimmed, combine(zero_dim, scalars))
    }

    /// The type two tensor operands of `ndim` dimensions are computed in, by PyTorch's rule: a
    /// 0-dim tensor beside one with dimensions counts only when it is of a higher category
    /// (bool < integer < float), so `float32[4] + float64[]` stays float32 while
    /// `int64[4] + float64[]` is float64. Operands of the same kind promote as usual.
    pub fn promote_operands(a: DType, a_ndim: usize, b: DType, b_ndim: usize) -> DType {
        match (a_ndim == 0, b_ndim == 0) {
            (false, true) => DType::result_type(Some(a), Some(b), None),
            (true, false) => DType::result_type(Some(b), Some(a), None),
            _ => Some(a.promote(b)),
        }
        .unwrap_or(a)
    }

    fn category(self) -> u8 {
        if self == DType::Bool {
            0
        } else if self.is_int() {
            1
        } else {
            2
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::UInt8 | DType::Int8 => 1,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Python-style scalar operand. It does not change a tensor's dtype, except that a float scalar
/// with an integer or bool tensor computes in float32 (PyTorch's default dtype), and an int scalar
/// with a bool tensor in int64.
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
        DType::result_type(Some(dtype), None, Some(self.natural_dtype())).unwrap_or(dtype)
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
