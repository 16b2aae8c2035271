//! One-input element-wise operations, as one table: `Unary::entry` holds, for each operation, its
//! node name, what integer and bool inputs do, its float kernel, what its backward keeps and its
//! backward formula. Adding an operation is a variant of `Unary`, its row in `entry`, and a
//! method on `Tensor` (see `docs/adding-an-operation.md`).

use super::compare::Cmp;
use super::zero_like;
use crate::autograd::node::Node;
use crate::autograd::record::{record, Save};
use crate::dispatch_float;
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::kernel::{map, map_cost, Cost};
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;

/// One-input element-wise operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// What an int64 input does.
pub(crate) enum Ints {
    /// It is computed as float32 (`exp` of an integer tensor is a float32 tensor).
    ToFloat,
    /// It maps to int64 with this function (`abs`, `neg`).
    Exact(Box<dyn Fn(i64) -> i64 + Send + Sync>),
}

/// What a bool input does.
pub(crate) enum Bools {
    /// It is computed as float32.
    ToFloat,
    /// The result is a copy of it (`sign`).
    Same,
    /// It is refused with this message.
    Refused(&'static str),
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
        let mut saved = node.unpack_saved()?.into_iter();
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
    // Forward mode (a jvp rule) sits here when it comes: the output's tangent from the input's
    // tangent and the same kept values. For an element-wise operation the Jacobian is diagonal,
    // so that rule is `backward` with the tangent in place of `g`; a separate field is only
    // needed where a cheaper form exists.
}

/// A float kernel from one expression in `x`, whose type is `T` (`f32` or `f64`): the same
/// expression is compiled for both, so `x.exp()` calls each type's own `exp`.
macro_rules! float_kernel {
    ($cost:ident, |$x:ident| $body:expr) => {
        Box::new(move |t: &Tensor| -> Result<Tensor> {
            dispatch_float!(t.dtype(), "this operation", T => map_cost(t, Cost::$cost, move |$x: T| -> T { $body }))
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
}

const NEG_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert \
                        a mask, use the `~` or `logical_not()` operator instead.";

impl Unary {
    /// The table: one row per operation.
    pub(crate) fn entry(self) -> Entry {
        use Keep::{Input, Nothing, Output};
        match self {
            Unary::Neg => Entry::float("NegBackward", float_kernel!(Cheap, |x| -x), Nothing, |g, _| g.neg())
                .ints(i64::wrapping_neg)
                .bools(Bools::Refused(NEG_BOOL)),
            Unary::Exp => Entry::float("ExpBackward", float_kernel!(Heavy, |x| x.exp()), Output, |g, k| g.mul(k.y()?)),
            Unary::Log => Entry::float("LogBackward", float_kernel!(Heavy, |x| x.ln()), Input, |g, k| g.div(k.x()?)),
            Unary::Sqrt => Entry::float("SqrtBackward", float_kernel!(Cheap, |x| x.sqrt()), Output, |g, k| {
                g.div(&k.y()?.mul_scalar(2.0)?)
            }),
            Unary::Sin => {
                Entry::float("SinBackward", float_kernel!(Heavy, |x| x.sin()), Input, |g, k| g.mul(&k.x()?.cos()?))
            }
            Unary::Cos => Entry::float("CosBackward", float_kernel!(Heavy, |x| x.cos()), Input, |g, k| {
                g.mul(&k.x()?.sin()?)?.neg()
            }),
            Unary::Tanh => Entry::float("TanhBackward", float_kernel!(Heavy, |x| x.tanh()), Output, |g, k| {
                let y = k.y()?;
                g.mul(&y.mul(y)?.rsub_scalar(1.0)?)
            }),
            Unary::Sigmoid => {
                Entry::float("SigmoidBackward", float_kernel!(Heavy, |x| 1.0 / (1.0 + (-x).exp())), Output, |g, k| {
                    let y = k.y()?;
                    g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)
                })
            }
            // NaN stays NaN. The backward is a select, not a product: a non-finite gradient where
            // the output is 0 must give 0, as in PyTorch.
            Unary::Relu => Entry::float(
                "ReluBackward",
                float_kernel!(Cheap, |x| if x <= 0.0 { 0.0 } else { x }),
                Output,
                |g, k| Tensor::where_(&k.y()?.detach().compare_scalar(0.0, Cmp::Le)?, &zero_like(g)?, g),
            )
            .ints(|x| x.max(0))
            .bools(Bools::Refused("Boolean inputs not supported for relu")),
            Unary::Abs => Entry::float("AbsBackward", float_kernel!(Cheap, |x| x.abs()), Input, |g, k| {
                g.mul(&k.x()?.detach().sign()?)
            })
            .ints(i64::wrapping_abs)
            .bools(Bools::Refused("abs is not implemented for bool tensors")),
            Unary::Sign => {
                Entry::float("SignBackward", float_kernel!(Cheap, |x| sign(x)), Nothing, |g, _| g.mul_scalar(0.0))
                    .ints(i64::signum)
                    .bools(Bools::Same)
            }
            Unary::Log1p => Entry::float("Log1pBackward", float_kernel!(Heavy, |x| x.ln_1p()), Input, |g, k| {
                g.div(&k.x()?.add_scalar(1.0)?)
            }),
        }
    }
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

/// The backward of a one-input operation: its row's formula.
struct UnaryBackward(Unary);

impl SingleOutput for UnaryBackward {
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
            DType::Int64 => match &row.ints {
                Ints::Exact(f) => map(self, |x: i64| f(x)),
                Ints::ToFloat => self.to_dtype(DType::Float32)?.unary(op),
            },
            DType::Bool => match row.bools {
                Bools::ToFloat => self.to_dtype(DType::Float32)?.unary(op),
                Bools::Same => self.detach().clone_data(),
                Bools::Refused(message) => Err(Error::dtype(message)),
            },
            _ => {
                let out = match self.fast_f32(op)? {
                    Some(out) => out,
                    None => (row.forward)(self)?,
                };
                record(row.name, &[self], &[&out], || (UnaryBackward(op), row.keep.saves(self)));
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
}
