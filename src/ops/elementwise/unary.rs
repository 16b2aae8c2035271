//! One-input element-wise operations, as one table: `Unary::entry` holds, for each operation, its
//! node name, what integer and bool inputs do, its float kernel, what its backward keeps and its
//! backward formula. Adding an operation is a variant of `Unary`, its row in `entry`, and a
//! method on `Tensor` (see `docs/adding-an-operation.md`).

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, LN_10, LN_2, PI};

use super::compare::{Cmp, Logical};
use super::special::Special;
use super::zero_like;
use crate::autograd::node::Node;
use crate::autograd::record::{record_with_jvp, Save};
use crate::dispatch_float_wide;
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::kernel::{map, map_cost, Cost};
use crate::tensor::dtype::DType;
use crate::tensor::element::Element;
use crate::tensor::Tensor;

/// One-input element-wise operations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// natural log
    Log,
    /// square root
    Sqrt,
    /// sine
    Sin,
    /// cosine
    Cos,
    /// hyperbolic tangent
    Tanh,
    /// logistic sigmoid
    Sigmoid,
    /// `max(x, 0)`
    Relu,
    /// `|x|`
    Abs,
    /// -1, 0 or 1
    Sign,
    /// `ln(1 + x)`
    Log1p,
    /// `e^x - 1`
    Expm1,
    /// base-2 logarithm
    Log2,
    /// base-10 logarithm
    Log10,
    /// `2^x`
    Exp2,
    /// `1 / sqrt(x)`
    Rsqrt,
    /// `x * x`
    Square,
    /// `1 / x`
    Reciprocal,
    /// the largest integer not above `x`
    Floor,
    /// the smallest integer not below `x`
    Ceil,
    /// `x` rounded to `decimals` decimal digits, halves to even
    Round {
        /// digits after the point (negative: before it)
        decimals: i64,
    },
    /// `x` rounded toward zero
    Trunc,
    /// `x - trunc(x)`
    Frac,
    /// tangent
    Tan,
    /// arcsine
    Asin,
    /// arccosine
    Acos,
    /// arctangent
    Atan,
    /// hyperbolic sine
    Sinh,
    /// hyperbolic cosine
    Cosh,
    /// inverse hyperbolic sine
    Asinh,
    /// inverse hyperbolic cosine
    Acosh,
    /// inverse hyperbolic tangent
    Atanh,
    /// the error function
    Erf,
    /// `1 - erf(x)`
    Erfc,
    /// the inverse of `erf`
    Erfinv,
    /// `x * sigmoid(x)`
    Silu,
    /// `x * Φ(x)` (Φ the standard normal distribution function), or its tanh approximation
    Gelu {
        /// the tanh approximation
        tanh: bool,
    },
    /// `scale * x` for `x > 0`, else `scale * alpha * (e^(input_scale * x) - 1)` (elu, selu)
    Elu {
        /// the negative branch's factor
        alpha: f64,
        /// the factor of both branches
        scale: f64,
        /// the factor of `x` in the exponent
        input_scale: f64,
    },
    /// `x` for `x > 0`, else `negative_slope * x`
    LeakyRelu {
        /// the negative branch's slope
        negative_slope: f64,
    },
    /// `x` clamped to `[min, max]`; the gradient is 0 outside `(min, max)`
    Hardtanh {
        /// lower bound
        min: f64,
        /// upper bound
        max: f64,
    },
    /// `ln(1 + e^(beta x)) / beta`, and `x` where `beta x > threshold`
    Softplus {
        /// the sharpness
        beta: f64,
        /// above this `beta x`, the result is `x`
        threshold: f64,
    },
    /// `ln(sigmoid(x))`
    LogSigmoid,
    /// NaN, +inf and -inf replaced by finite values; the gradient is 0 where `x` was not finite
    NanToNum {
        /// the value of NaN
        nan: f64,
        /// the value of +inf (the dtype's largest value when absent)
        posinf: Option<f64>,
        /// the value of -inf (the dtype's lowest value when absent)
        neginf: Option<f64>,
    },
}

/// What an int64 input does.
pub(crate) enum Ints {
    /// It is computed as float32 (`exp` of an integer tensor is a float32 tensor).
    ToFloat,
    /// It maps to int64 with this function (`abs`, `neg`).
    Exact(Box<dyn Fn(i64) -> i64 + Send + Sync>),
    /// It is refused with this message (the activations, `frac`).
    Refused(String),
}

/// What a bool input does.
pub(crate) enum Bools {
    /// It is computed as float32.
    ToFloat,
    /// It is computed as int64 (`square`).
    ToInt,
    /// The result is a copy of it (`sign`).
    Same,
    /// It is refused with this message.
    Refused(String),
}

/// What the backward formula keeps of the forward.
#[derive(Clone, Copy)]
pub(crate) enum Keep {
    Nothing,
    Input,
    Output,
}

/// The values `Keep` asked for, unpacked (version-checked) when the formula runs.
pub(crate) struct Kept {
    x: Option<Tensor>,
    y: Option<Tensor>,
}

impl Kept {
    /// The input `x` (the row keeps `Keep::Input`).
    fn x(&self) -> Result<&Tensor> {
        self.x.as_ref().ok_or_else(|| missing("input"))
    }
    /// The output `y` (the row keeps `Keep::Output`).
    fn y(&self) -> Result<&Tensor> {
        self.y.as_ref().ok_or_else(|| missing("output"))
    }
}

fn missing(what: &str) -> Error {
    Error::autograd(format!("internal error: a unary backward formula needs the {what} it did not keep"))
}

impl Keep {
    fn saves(self, x: &Tensor) -> Vec<Save> {
        match self {
            Keep::Nothing => vec![],
            Keep::Input => vec![Save::Input(x.clone())],
            Keep::Output => vec![Save::Output(0)],
        }
    }

    fn unpack(self, node: &Node) -> Result<Kept> {
        let mut saved = node.unpack_saved_inline()?.into_iter();
        Ok(match self {
            Keep::Nothing => Kept { x: None, y: None },
            Keep::Input => Kept { x: saved.next(), y: None },
            Keep::Output => Kept { x: None, y: saved.next() },
        })
    }
}

/// A float kernel: the operation on a float32 or float64 tensor.
type Kernel = Box<dyn Fn(&Tensor) -> Result<Tensor>>;
/// A backward formula: the input's gradient from the output's gradient `g` and the kept values.
/// It is written with tensor operations, so that it is recorded under `create_graph` and can be
/// differentiated again.
type Formula = Box<dyn Fn(&Tensor, &Kept) -> Result<Tensor>>;

/// One row of the table.
pub(crate) struct Entry {
    /// The node's name (`ExpBackward`).
    name: &'static str,
    ints: Ints,
    bools: Bools,
    /// The float kernel.
    forward: Kernel,
    keep: Keep,
    backward: Formula,
    // Forward mode: the output's tangent is `backward` with the input's tangent in place of `g`
    // (the Jacobian is diagonal), applied in `Tensor::unary`; no row needs a cheaper form yet.
}

/// A float kernel from one expression in `x`, whose type is `T` (`f32` or `f64`): the same
/// expression is compiled for both, so `x.exp()` calls each type's own `exp`. float16 and bfloat16
/// run it in float32 (NOTE [Half-precision compute]).
macro_rules! float_kernel {
    ($cost:ident, |$x:ident| $body:expr) => {
        Box::new(move |t: &Tensor| -> Result<Tensor> {
            let kernel = |t: &Tensor| -> Result<Tensor> {
                dispatch_float_wide!(t.dtype(), "this operation", T => map_cost(t, Cost::$cost, move |$x: T| -> T { $body }))
            };
            if t.dtype().is_half() {
                crate::ops::kernel::widened(t, kernel)
            } else {
                kernel(t)
            }
        })
    };
}

impl Entry {
    /// A row for an operation defined on floats: integer and bool inputs are computed as float32.
    fn float(
        name: &'static str,
        forward: Kernel,
        keep: Keep,
        backward: impl Fn(&Tensor, &Kept) -> Result<Tensor> + 'static,
    ) -> Entry {
        Entry { name, ints: Ints::ToFloat, bools: Bools::ToFloat, forward, keep, backward: Box::new(backward) }
    }

    /// Integer inputs map to integers with `f`.
    fn ints(self, f: impl Fn(i64) -> i64 + Send + Sync + 'static) -> Entry {
        Entry { ints: Ints::Exact(Box::new(f)), ..self }
    }

    /// What bool inputs do.
    fn bools(self, bools: Bools) -> Entry {
        Entry { bools, ..self }
    }

    /// Bool inputs are refused with this message.
    fn no_bools(self, message: &str) -> Entry {
        self.bools(Bools::Refused(message.to_string()))
    }

    /// Integer and bool inputs are refused, in PyTorch's words, naming its kernel `kernel`.
    fn no_ints(self, kernel: &str) -> Entry {
        let ints = Ints::Refused(format!("\"{kernel}\" not implemented for 'Long'"));
        Entry { ints, ..self.no_bools(&format!("\"{kernel}\" not implemented for 'Bool'")) }
    }
}

/// `sqrt(2 / pi)` and the cubic coefficient of gelu's tanh approximation.
const GELU_K: f64 = 0.797_884_560_802_865_4;
const GELU_C: f64 = 0.044_715;

/// selu's constants (Klambauer et al., 2017).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

const NEG_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert \
                        a mask, use the `~` or `logical_not()` operator instead.";

impl Unary {
    /// The table: one row per operation.
    pub(crate) fn entry(self) -> Entry {
        use Keep::{Input, Nothing, Output};
        match self {
            Unary::Neg => Entry::float("NegBackward", float_kernel!(Cheap, |x| -x), Nothing, |g, _| g.neg())
                .ints(i64::wrapping_neg)
                .no_bools(NEG_BOOL),
            Unary::Exp => Entry::float("ExpBackward", float_kernel!(Heavy, |x| x.exp()), Output, |g, k| {
                let y = k.y()?;
                if let Some(out) = fused_backward(g, y, Cost::Cheap, |g, y| g * y, |g, y| g * y) {
                    return out;
                }
                g.mul(y)
            }),
            Unary::Log => Entry::float("LogBackward", float_kernel!(Heavy, |x| x.ln()), Input, |g, k| g.div(k.x()?)),
            Unary::Sqrt => Entry::float("SqrtBackward", float_kernel!(Cheap, |x| x.sqrt()), Output, |g, k| {
                g.div(&k.y()?.mul_scalar(2.0)?)
            }),
            Unary::Sin => Entry::float("SinBackward", float_kernel!(Heavy, |x| x.sin()), Input, |g, k| {
                let x = k.x()?;
                if let Some(out) = fused_backward(g, x, Cost::Heavy, |g, x| g * x.cos(), |g, x| g * x.cos()) {
                    return out;
                }
                g.mul(&x.cos()?)
            }),
            Unary::Cos => Entry::float("CosBackward", float_kernel!(Heavy, |x| x.cos()), Input, |g, k| {
                let x = k.x()?;
                if let Some(out) = fused_backward(g, x, Cost::Heavy, |g, x| -(g * x.sin()), |g, x| -(g * x.sin())) {
                    return out;
                }
                g.mul(&x.sin()?)?.neg()
            }),
            Unary::Tanh => Entry::float("TanhBackward", float_kernel!(Heavy, |x| x.tanh()), Output, |g, k| {
                let y = k.y()?;
                if let Some(out) = fused_backward(g, y, Cost::Cheap, |g, y| g * (1.0 - y * y), |g, y| g * (1.0 - y * y))
                {
                    return out;
                }
                g.mul(&y.mul(y)?.rsub_scalar(1.0)?)
            }),
            Unary::Sigmoid => {
                Entry::float("SigmoidBackward", float_kernel!(Heavy, |x| 1.0 / (1.0 + (-x).exp())), Output, |g, k| {
                    let y = k.y()?;
                    g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)
                })
            }
            // NaN stays NaN, and -0.0 too (PyTorch's `clamp_min(x, 0)` keeps it: `rsqrt` of the
            // result is then -inf). The backward is a select, not a product: a non-finite
            // gradient where the output is 0 must give 0, as in PyTorch.
            Unary::Relu => {
                Entry::float("ReluBackward", float_kernel!(Cheap, |x| if x < 0.0 { 0.0 } else { x }), Output, |g, k| {
                    let y = k.y()?;
                    // NaN in `y` passes `g` through, as the `where` below does.
                    let f32f = |g: f32, y: f32| if y <= 0.0 { 0.0 } else { g };
                    if let Some(out) = fused_backward(g, y, Cost::Cheap, f32f, |g, y| if y <= 0.0 { 0.0 } else { g }) {
                        return out;
                    }
                    Tensor::where_(&y.detach().compare_scalar(0.0, Cmp::Le)?, &zero_like(g)?, g)
                })
                .ints(|x| x.max(0))
                .no_bools("Boolean inputs not supported for relu")
            }
            Unary::Abs => Entry::float("AbsBackward", float_kernel!(Cheap, |x| x.abs()), Input, |g, k| {
                g.mul(&k.x()?.detach().sign()?)
            })
            .ints(i64::wrapping_abs)
            .no_bools("abs is not implemented for bool tensors"),
            Unary::Sign => Entry::float("SignBackward", float_kernel!(Cheap, |x| sign(x)), Nothing, |g, _| zeros(g))
                .ints(i64::signum)
                .bools(Bools::Same),
            Unary::Log1p => Entry::float("Log1pBackward", float_kernel!(Heavy, |x| x.ln_1p()), Input, |g, k| {
                g.div(&k.x()?.add_scalar(1.0)?)
            }),
            Unary::Expm1 => Entry::float("Expm1Backward", float_kernel!(Heavy, |x| x.exp_m1()), Output, |g, k| {
                g.mul(&k.y()?.add_scalar(1.0)?)
            }),
            Unary::Log2 => Entry::float("Log2Backward", float_kernel!(Heavy, |x| x.log2()), Input, |g, k| {
                g.div(&k.x()?.mul_scalar(LN_2)?)
            }),
            Unary::Log10 => Entry::float("Log10Backward", float_kernel!(Heavy, |x| x.log10()), Input, |g, k| {
                g.div(&k.x()?.mul_scalar(LN_10)?)
            }),
            Unary::Exp2 => Entry::float("Exp2Backward", float_kernel!(Heavy, |x| x.exp2()), Output, |g, k| {
                g.mul(&k.y()?.mul_scalar(LN_2)?)
            }),
            Unary::Rsqrt => {
                Entry::float("RsqrtBackward", float_kernel!(Cheap, |x| x.sqrt().recip()), Output, |g, k| {
                    g.mul(&k.y()?.pow_scalar(3.0)?.mul_scalar(-0.5)?)
                })
            }
            // PyTorch computes `square` as `pow(x, 2)`, hence the node's name; bools square as int64.
            Unary::Square => Entry::float("PowBackward", float_kernel!(Cheap, |x| x * x), Input, |g, k| {
                g.mul(&k.x()?.mul_scalar(2.0)?)
            })
            .ints(|x| x.wrapping_mul(x))
            .bools(Bools::ToInt),
            Unary::Reciprocal => {
                Entry::float("ReciprocalBackward", float_kernel!(Cheap, |x| x.recip()), Output, |g, k| {
                    let y = k.y()?;
                    g.mul(&y.mul(y)?)?.neg()
                })
            }
            // Rounding is flat almost everywhere: the gradient is 0, as in PyTorch. Integers are
            // already rounded; bools are refused.
            Unary::Floor => {
                Entry::float("FloorBackward", float_kernel!(Cheap, |x| x.floor()), Nothing, |g, _| zeros(g))
                    .ints(|x| x)
                    .no_bools("\"floor\" not implemented for 'Bool'")
            }
            Unary::Ceil => Entry::float("CeilBackward", float_kernel!(Cheap, |x| x.ceil()), Nothing, |g, _| zeros(g))
                .ints(|x| x)
                .no_bools("\"ceil\" not implemented for 'Bool'"),
            Unary::Trunc => {
                Entry::float("TruncBackward", float_kernel!(Cheap, |x| x.trunc()), Nothing, |g, _| zeros(g))
                    .ints(|x| x)
                    .no_bools("\"trunc\" not implemented for 'Bool'")
            }
            // As PyTorch: scaled by 10^|decimals| in the tensor's own dtype, rounded half to even.
            Unary::Round { decimals } => {
                let scale = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
                let row = Entry::float(
                    "RoundBackward",
                    float_kernel!(Cheap, |x| match decimals {
                        0 => x.round_ties_even(),
                        d if d > 0 => (x * scale as T).round_ties_even() / scale as T,
                        _ => (x / scale as T).round_ties_even() * scale as T,
                    }),
                    Nothing,
                    |g, _| zeros(g),
                )
                .no_bools("\"round\" not implemented for 'Bool'");
                if decimals == 0 {
                    row.ints(|x| x)
                } else {
                    Entry { ints: Ints::Refused("\"round_cpu\" not implemented for 'Long'".into()), ..row }
                }
            }
            Unary::Frac => {
                Entry::float("FracBackward", float_kernel!(Cheap, |x| x - x.trunc()), Nothing, |g, _| Ok(g.clone()))
                    .no_ints("frac_cpu")
            }
            Unary::Tan => Entry::float("TanBackward", float_kernel!(Heavy, |x| x.tan()), Output, |g, k| {
                let y = k.y()?;
                g.mul(&y.mul(y)?.add_scalar(1.0)?)
            }),
            Unary::Asin => Entry::float("AsinBackward", float_kernel!(Heavy, |x| x.asin()), Input, |g, k| {
                g.mul(&k.x()?.square()?.rsub_scalar(1.0)?.rsqrt()?)
            }),
            Unary::Acos => Entry::float("AcosBackward", float_kernel!(Heavy, |x| x.acos()), Input, |g, k| {
                g.mul(&k.x()?.square()?.rsub_scalar(1.0)?.rsqrt()?)?.neg()
            }),
            Unary::Atan => Entry::float("AtanBackward", float_kernel!(Heavy, |x| x.atan()), Input, |g, k| {
                g.div(&k.x()?.square()?.add_scalar(1.0)?)
            }),
            Unary::Sinh => {
                Entry::float("SinhBackward", float_kernel!(Heavy, |x| x.sinh()), Input, |g, k| g.mul(&k.x()?.cosh()?))
            }
            Unary::Cosh => {
                Entry::float("CoshBackward", float_kernel!(Heavy, |x| x.cosh()), Input, |g, k| g.mul(&k.x()?.sinh()?))
            }
            Unary::Asinh => Entry::float(
                "AsinhBackward",
                float_kernel!(Heavy, |x| {
                    // std's asinh squares x and overflows past sqrt(MAX) (3e38 as f32 gives inf); there
                    // asinh(x) = sign(x) (ln|x| + ln 2) to the last bit.
                    let a = x.abs();
                    if a > 1e18 as T {
                        (a.ln() + std::f64::consts::LN_2 as T).copysign(x)
                    } else {
                        x.asinh()
                    }
                }),
                Input,
                |g, k| g.mul(&k.x()?.square()?.add_scalar(1.0)?.rsqrt()?),
            ),
            Unary::Acosh => Entry::float("AcoshBackward", float_kernel!(Heavy, |x| x.acosh()), Input, |g, k| {
                g.mul(&k.x()?.square()?.sub_scalar(1.0)?.rsqrt()?)
            }),
            Unary::Atanh => Entry::float("AtanhBackward", float_kernel!(Heavy, |x| x.atanh()), Input, |g, k| {
                g.div(&k.x()?.square()?.rsub_scalar(1.0)?)
            }),
            Unary::Erf => Entry::float("ErfBackward", float_kernel!(Heavy, |x| Special::erf(x)), Input, |g, k| {
                g.mul(&gaussian(k.x()?, FRAC_2_SQRT_PI)?)
            }),
            Unary::Erfc => Entry::float("ErfcBackward", float_kernel!(Heavy, |x| Special::erfc(x)), Input, |g, k| {
                g.mul(&gaussian(k.x()?, -FRAC_2_SQRT_PI)?)
            }),
            // d/dx erfinv(x) = sqrt(pi)/2 e^(erfinv(x)^2): infinite at ±1, where erfinv is. It keeps the
            // input, as PyTorch, so that the same in-place writes invalidate the graph.
            Unary::Erfinv => {
                Entry::float("ErfinvBackward", float_kernel!(Heavy, |x| Special::erfinv(x)), Input, |g, k| {
                    g.mul(&k.x()?.erfinv()?.square()?.exp()?.mul_scalar(PI.sqrt() / 2.0)?)
                })
            }
            Unary::Silu => {
                Entry::float("SiluBackward", float_kernel!(Heavy, |x| x / (1.0 + (-x).exp())), Input, |g, k| {
                    let x = k.x()?;
                    let s = x.sigmoid()?;
                    g.mul(&s.mul(&x.mul(&s.rsub_scalar(1.0)?)?.add_scalar(1.0)?)?)
                })
                .no_ints("silu_cpu")
            }
            Unary::Gelu { tanh: false } => Entry::float(
                "GeluBackward",
                float_kernel!(Heavy, |x| 0.5 * x * (1.0 + Special::erf(x * FRAC_1_SQRT_2 as T))),
                Input,
                |g, k| {
                    let x = k.x()?;
                    let cdf = x.mul_scalar(FRAC_1_SQRT_2)?.erf()?.add_scalar(1.0)?.mul_scalar(0.5)?;
                    let pdf = gaussian(&x.mul_scalar(FRAC_1_SQRT_2)?, 1.0 / (2.0 * PI).sqrt())?;
                    g.mul(&cdf.add(&x.mul(&pdf)?)?)
                },
            )
            .no_ints("GeluKernelImpl"),
            Unary::Gelu { tanh: true } => Entry::float(
                "GeluBackward",
                float_kernel!(Heavy, |x| {
                    let inner = (GELU_K as T) * (x + (GELU_C as T) * x * x * x);
                    0.5 * x * (1.0 + inner.tanh())
                }),
                Input,
                |g, k| {
                    let x = k.x()?;
                    let x2 = x.square()?;
                    let t = x.mul(&x2.mul_scalar(GELU_C)?.add_scalar(1.0)?)?.mul_scalar(GELU_K)?.tanh()?;
                    let left = t.add_scalar(1.0)?.mul_scalar(0.5)?;
                    let right = x
                        .mul(&t.square()?.rsub_scalar(1.0)?)?
                        .mul(&x2.mul_scalar(3.0 * GELU_C)?.add_scalar(1.0)?)?
                        .mul_scalar(0.5 * GELU_K)?;
                    g.mul(&left.add(&right)?)
                },
            )
            .no_ints("GeluKernelImpl"),
            // The negative branch is `x <= 0`, as in PyTorch: the gradient at 0 is alpha * scale, and at
            // NaN the positive branch's.
            Unary::Elu { alpha, scale, input_scale } => Entry::float(
                "EluBackward",
                float_kernel!(Heavy, |x| if x > 0.0 {
                    x * scale as T
                } else {
                    (x * input_scale as T).exp_m1() * (alpha * scale) as T
                }),
                Input,
                move |g, k| {
                    let x = k.x()?;
                    let negative = x.mul_scalar(input_scale)?.exp()?.mul_scalar(input_scale * alpha * scale)?;
                    Tensor::where_(&x.detach().compare_scalar(0.0, Cmp::Le)?, &g.mul(&negative)?, &g.mul_scalar(scale)?)
                },
            )
            .no_ints("elu_cpu"),
            Unary::LeakyRelu { negative_slope: s } => Entry::float(
                "LeakyReluBackward",
                float_kernel!(Cheap, |x| if x > 0.0 { x } else { x * s as T }),
                Input,
                move |g, k| Tensor::where_(&k.x()?.detach().gt_scalar(0.0)?, g, &g.mul_scalar(s)?),
            )
            .no_ints("leaky_relu_cpu"),
            // The gradient is 0 on and outside the bounds, as in PyTorch.
            Unary::Hardtanh { min, max } => Entry::float(
                "HardtanhBackward",
                float_kernel!(Cheap, |x| if x < min as T {
                    min as T
                } else if x > max as T {
                    max as T
                } else {
                    x
                }),
                Input,
                move |g, k| {
                    let x = k.x()?.detach();
                    let outside =
                        x.compare_scalar(min, Cmp::Le)?.logical(&x.compare_scalar(max, Cmp::Ge)?, Logical::Or)?;
                    Tensor::where_(&outside, &zero_like(g)?, g)
                },
            )
            .ints(move |x| x.max(min as i64).min(max as i64))
            .no_bools("Bool inputs not supported for hardtanh"),
            Unary::Softplus { beta, threshold } => Entry::float(
                "SoftplusBackward",
                float_kernel!(Heavy, |x| if x * beta as T > threshold as T {
                    x
                } else {
                    (x * beta as T).exp().ln_1p() / beta as T
                }),
                Input,
                move |g, k| {
                    let bx = k.x()?.mul_scalar(beta)?;
                    Tensor::where_(&bx.detach().gt_scalar(threshold)?, g, &g.mul(&bx.sigmoid()?)?)
                },
            )
            .no_ints("softplus_cpu"),
            // min(x, 0) - ln(1 + e^-|x|): no overflow on either side.
            Unary::LogSigmoid => Entry::float(
                "LogSigmoidBackward",
                float_kernel!(Heavy, |x| x.min(0.0) - (-x.abs()).exp().ln_1p()),
                Input,
                |g, k| g.mul(&k.x()?.neg()?.sigmoid()?),
            )
            .no_ints("log_sigmoid_cpu"),
            Unary::NanToNum { nan, posinf, neginf } => Entry::float(
                "NanToNumBackward",
                float_kernel!(Cheap, |x| if x.is_nan() {
                    nan as T
                } else if x == T::INFINITY {
                    posinf.map_or(T::MAX, |v| v as T)
                } else if x == T::NEG_INFINITY {
                    neginf.map_or(T::MIN, |v| v as T)
                } else {
                    x
                }),
                Input,
                |g, k| Tensor::where_(&k.x()?.isfinite()?, g, &zero_like(g)?),
            )
            .ints(|x| x)
            .bools(Bools::Same),
        }
    }
}

/// A zero gradient of `g`'s shape and dtype (the derivative of a step function).
fn zeros(g: &Tensor) -> Result<Tensor> {
    Tensor::zeros(g.shape(), g.dtype())
}

/// `c e^(-x^2)`: the derivative of `erf` when `c = 2/sqrt(pi)`.
fn gaussian(x: &Tensor, c: f64) -> Result<Tensor> {
    x.square()?.neg()?.exp()?.mul_scalar(c)
}

/// -1, 0 or 1 (0 for ±0 and NaN, as in PyTorch).
fn sign<T: num_traits::Float>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else {
        T::zero()
    }
}

// NOTE [Fused backward passes]: a backward formula is written with tensor operations so that it is
// recorded under `create_graph` (and serves as the forward-mode rule). Run as written, `relu`'s is a
// comparison, a zero tensor and a `where` (three passes and a bool tensor), `tanh`'s three
// arithmetic passes, over tensors as large as the layer. When nothing would be recorded (no
// operand requires grad with grad mode on, none carries a tangent) and the operands are float32
// or float64 of one shape, `fused_backward` computes the same expression in one pass instead, with
// the same operations in the same order, so the values are identical. On small tensors the pass
// saved is a tensor made and freed, and a dispatch with its recording checks: `sin`'s `g * cos(x)`
// (and `cos`'s, and `exp`'s `g * y`) fused, with the saved tensor read without an allocation
// (`Node::unpack_saved_inline`), cost about 1,000 instructions less per node of W2's backward
// (callgrind; issue 19).

/// `f(g, v)` element-wise in one pass (`f32`/`f64` by dtype; `cost` per element, as `map_cost`)
/// when the formula it replaces would record nothing; `None` (use the formula) otherwise. See NOTE
/// [Fused backward passes].
fn fused_backward(
    g: &Tensor,
    v: &Tensor,
    cost: Cost,
    f32f: impl Fn(f32, f32) -> f32 + Sync + Send,
    f64f: impl Fn(f64, f64) -> f64 + Sync + Send,
) -> Option<Result<Tensor>> {
    if g.shape() != v.shape() || g.dtype() != v.dtype() || super::records(g) || super::records(v) {
        return None;
    }
    if sole_handle(g) {
        // NOTE [A gradient nobody else holds]
        let done = match g.dtype() {
            DType::Float32 => crate::ops::kernel::with_dst_src::<f32>(g, v, |d, s| {
                crate::ops::kernel::zip_in_place(d, s, cost, &f32f);
            }),
            DType::Float64 => crate::ops::kernel::with_dst_src::<f64>(g, v, |d, s| {
                crate::ops::kernel::zip_in_place(d, s, cost, &f64f);
            }),
            _ => Ok(false),
        };
        match done {
            Ok(true) => return Some(Ok(g.clone())),
            Ok(false) => {}
            Err(e) => return Some(Err(e)),
        }
    }
    match g.dtype() {
        DType::Float32 => Some(crate::ops::kernel::zip_cost(g, v, cost, f32f)),
        DType::Float64 => Some(crate::ops::kernel::zip_cost(g, v, cost, f64f)),
        _ => None,
    }
}

// NOTE [A gradient nobody else holds]: the gradient reaching an element-wise backward is most often
// a tensor the previous node just made and handed over (W4: the product `g w^T` reaching ReLU's
// backward, 4 MB a layer). When this handle is the only one on it and on its memory (no view, no
// saved copy, no Python object, no hook's copy), and the memory is the process's own (not a NumPy
// array's), nobody can read it again: `fused_backward` then writes its result over it instead of
// into a new tensor, one pass that reads two tensors and writes one it has in cache, rather than
// writing a third.
fn sole_handle(g: &Tensor) -> bool {
    std::sync::Arc::strong_count(&g.0) == 1
        && std::sync::Arc::strong_count(g.storage()) == 1
        && !g.storage().is_foreign()
        && g.layout().is_contiguous()
}

/// The backward of a one-input operation: its row's formula.
struct UnaryBackward(Unary);

impl SingleOutput for UnaryBackward {
    fn input_grads_batched(
        &self,
        node: &Node,
        g: &Tensor,
        need: Need<'_>,
        _batch: usize,
    ) -> Option<Result<Vec<Option<Tensor>>>> {
        // element-wise: the saved values broadcast against the leading batch dimension
        Some(self.input_grads(node, g.clone(), need))
    }

    fn input_grads(&self, node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let row = self.0.entry();
        let kept = row.keep.unpack(node)?;
        Ok(vec![Some((row.backward)(&g, &kept)?)])
    }
}

impl Tensor {
    /// Applies a one-input operation; its row in `Unary::entry` says what integer and bool inputs do.
    pub fn unary(&self, op: Unary) -> Result<Tensor> {
        let row = op.entry();
        match self.dtype() {
            dt if dt.is_int() => match row.ints {
                // Narrow integers in i64, wrapped back on store (so abs of int8 -128 stays -128, as
                // in PyTorch).
                Ints::Exact(f) => crate::dispatch_int!(dt, T => map(self, |x: T| T::from_i64(f(x.to_i64()))),
                    _ => unreachable!("an integer dtype")),
                Ints::ToFloat => self.to_dtype(crate::tensor::default_dtype::default_float())?.unary(op),
                Ints::Refused(message) => {
                    Err(Error::dtype(message.replace("'Long'", &format!("'{}'", dt.torch_name()))))
                }
            },
            DType::Bool => match row.bools {
                Bools::ToFloat => self.to_dtype(crate::tensor::default_dtype::default_float())?.unary(op),
                Bools::ToInt => self.to_dtype(DType::Int64)?.unary(op),
                Bools::Same => self.detach().clone_data(),
                Bools::Refused(message) => Err(Error::dtype(message)),
            },
            _ => {
                let out = match self.fast_f32(op)? {
                    Some(out) => out,
                    None => (row.forward)(self)?,
                };
                // Forward mode: the Jacobian is diagonal, so the tangent is the backward formula
                // with the input's tangent in place of the output's gradient.
                let jvp = |tangents: &[Option<Tensor>]| -> Result<Vec<Option<Tensor>>> {
                    let Some(t) = &tangents[0] else { return Ok(vec![None]) };
                    let kept = Kept { x: Some(self.clone()), y: Some(out.clone()) };
                    Ok(vec![Some((row.backward)(t, &kept)?)])
                };
                record_with_jvp(row.name, &[self], &[&out], || (UnaryBackward(op), row.keep.saves(self)), Some(jvp));
                Ok(out)
            }
        }
    }

    /// The vectorized float32 kernel of `fastmath`, for the operations it has.
    fn fast_f32(&self, op: Unary) -> Result<Option<Tensor>> {
        if self.dtype() != DType::Float32 || !self.layout().is_contiguous() {
            return Ok(None);
        }
        match self.with_contiguous(|s: &[f32]| crate::ops::fastmath::unary_f32(op, s))? {
            Some(data) => Tensor::from_vec(data, self.shape()).map(Some),
            None => Ok(None),
        }
    }

    /// `-x`
    pub fn neg(&self) -> Result<Tensor> {
        self.unary(Unary::Neg)
    }
    /// `e^x`
    pub fn exp(&self) -> Result<Tensor> {
        self.unary(Unary::Exp)
    }
    /// natural logarithm
    pub fn log(&self) -> Result<Tensor> {
        self.unary(Unary::Log)
    }
    /// square root
    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary(Unary::Sqrt)
    }
    /// sine
    pub fn sin(&self) -> Result<Tensor> {
        self.unary(Unary::Sin)
    }
    /// cosine
    pub fn cos(&self) -> Result<Tensor> {
        self.unary(Unary::Cos)
    }
    /// hyperbolic tangent
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary(Unary::Tanh)
    }
    /// logistic sigmoid
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary(Unary::Sigmoid)
    }
    /// `max(x, 0)`
    pub fn relu(&self) -> Result<Tensor> {
        self.unary(Unary::Relu)
    }
    /// `|x|`
    pub fn abs(&self) -> Result<Tensor> {
        self.unary(Unary::Abs)
    }
    /// -1, 0 or 1
    pub fn sign(&self) -> Result<Tensor> {
        self.unary(Unary::Sign)
    }
    /// `ln(1 + x)`, accurate for small `x`
    pub fn log1p(&self) -> Result<Tensor> {
        self.unary(Unary::Log1p)
    }
    /// `e^x - 1`, accurate for small `x`
    pub fn expm1(&self) -> Result<Tensor> {
        self.unary(Unary::Expm1)
    }
    /// base-2 logarithm
    pub fn log2(&self) -> Result<Tensor> {
        self.unary(Unary::Log2)
    }
    /// base-10 logarithm
    pub fn log10(&self) -> Result<Tensor> {
        self.unary(Unary::Log10)
    }
    /// `2^x`
    pub fn exp2(&self) -> Result<Tensor> {
        self.unary(Unary::Exp2)
    }
    /// `1 / sqrt(x)`
    pub fn rsqrt(&self) -> Result<Tensor> {
        self.unary(Unary::Rsqrt)
    }
    /// `x * x` (integers stay integers)
    pub fn square(&self) -> Result<Tensor> {
        self.unary(Unary::Square)
    }
    /// `1 / x`
    pub fn reciprocal(&self) -> Result<Tensor> {
        self.unary(Unary::Reciprocal)
    }
    /// rounded down
    pub fn floor(&self) -> Result<Tensor> {
        self.unary(Unary::Floor)
    }
    /// rounded up
    pub fn ceil(&self) -> Result<Tensor> {
        self.unary(Unary::Ceil)
    }
    /// rounded to `decimals` digits after the point, halves to even
    pub fn round(&self, decimals: i64) -> Result<Tensor> {
        self.unary(Unary::Round { decimals })
    }
    /// rounded toward zero
    pub fn trunc(&self) -> Result<Tensor> {
        self.unary(Unary::Trunc)
    }
    /// `x - trunc(x)`
    pub fn frac(&self) -> Result<Tensor> {
        self.unary(Unary::Frac)
    }
    /// tangent
    pub fn tan(&self) -> Result<Tensor> {
        self.unary(Unary::Tan)
    }
    /// arcsine
    pub fn asin(&self) -> Result<Tensor> {
        self.unary(Unary::Asin)
    }
    /// arccosine
    pub fn acos(&self) -> Result<Tensor> {
        self.unary(Unary::Acos)
    }
    /// arctangent
    pub fn atan(&self) -> Result<Tensor> {
        self.unary(Unary::Atan)
    }
    /// hyperbolic sine
    pub fn sinh(&self) -> Result<Tensor> {
        self.unary(Unary::Sinh)
    }
    /// hyperbolic cosine
    pub fn cosh(&self) -> Result<Tensor> {
        self.unary(Unary::Cosh)
    }
    /// inverse hyperbolic sine
    pub fn asinh(&self) -> Result<Tensor> {
        self.unary(Unary::Asinh)
    }
    /// inverse hyperbolic cosine
    pub fn acosh(&self) -> Result<Tensor> {
        self.unary(Unary::Acosh)
    }
    /// inverse hyperbolic tangent
    pub fn atanh(&self) -> Result<Tensor> {
        self.unary(Unary::Atanh)
    }
    /// the error function
    pub fn erf(&self) -> Result<Tensor> {
        self.unary(Unary::Erf)
    }
    /// `1 - erf(x)`, accurate where `erf(x)` is near 1
    pub fn erfc(&self) -> Result<Tensor> {
        self.unary(Unary::Erfc)
    }
    /// the inverse error function (±inf at ±1)
    pub fn erfinv(&self) -> Result<Tensor> {
        self.unary(Unary::Erfinv)
    }
    /// `x * sigmoid(x)`
    pub fn silu(&self) -> Result<Tensor> {
        self.unary(Unary::Silu)
    }
    /// `x * Φ(x)`, or with `tanh` its tanh approximation
    pub fn gelu(&self, tanh: bool) -> Result<Tensor> {
        self.unary(Unary::Gelu { tanh })
    }
    /// `x` for `x > 0`, else `alpha (e^x - 1)`
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.unary(Unary::Elu { alpha, scale: 1.0, input_scale: 1.0 })
    }
    /// `elu` with the self-normalizing constants
    pub fn selu(&self) -> Result<Tensor> {
        self.unary(Unary::Elu { alpha: SELU_ALPHA, scale: SELU_SCALE, input_scale: 1.0 })
    }
    /// `x` for `x > 0`, else `negative_slope * x`
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        self.unary(Unary::LeakyRelu { negative_slope })
    }
    /// `x` clamped to `[min, max]`
    pub fn hardtanh(&self, min: f64, max: f64) -> Result<Tensor> {
        self.unary(Unary::Hardtanh { min, max })
    }
    /// `ln(1 + e^(beta x)) / beta`, and `x` where `beta x > threshold`
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        self.unary(Unary::Softplus { beta, threshold })
    }
    /// NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default the dtype's
    /// largest and lowest finite values)
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        self.unary(Unary::NanToNum { nan, posinf, neginf })
    }
    /// `ln(sigmoid(x))`
    pub fn logsigmoid(&self) -> Result<Tensor> {
        self.unary(Unary::LogSigmoid)
    }
}
