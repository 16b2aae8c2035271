//! Element-wise operations (unary, binary with broadcasting, with a scalar, comparisons, clamp,
//! where) with their backward formulas beside them. Formulas are written with tensor operations, so
//! they are themselves recorded under `create_graph`.

use ndarray::{IxDyn, Zip};

use super::kernel::{map, map_cost, zip, zip_cost, Cost};
use crate::autograd::node::{Backward, Node};
use crate::autograd::record::{record, record_with_scalar, Save};
use crate::error::{Error, Result};
use crate::tensor::create::check_alloc;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::element::{Element, Float};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{dispatch_all, dispatch_float};

/// One-input float operations.
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
}

impl Unary {
    fn node_name(self) -> &'static str {
        match self {
            Unary::Neg => "NegBackward",
            Unary::Exp => "ExpBackward",
            Unary::Log => "LogBackward",
            Unary::Sqrt => "SqrtBackward",
            Unary::Sin => "SinBackward",
            Unary::Cos => "CosBackward",
            Unary::Tanh => "TanhBackward",
            Unary::Sigmoid => "SigmoidBackward",
            Unary::Relu => "ReluBackward",
            Unary::Abs => "AbsBackward",
            Unary::Sign => "SignBackward",
        }
    }

    fn kernel<T: Float>(self, t: &Tensor) -> Result<Tensor> {
        if T::DTYPE == DType::Float32 && t.layout().is_contiguous() {
            if let Some(data) = t.with_contiguous(|s: &[f32]| super::fastmath::unary_f32(self, s))? {
                return Tensor::from_vec(data, t.shape());
            }
        }
        let zero = T::zero();
        let one = T::one();
        match self {
            Unary::Neg => map(t, |x: T| -x),
            Unary::Exp => map_cost(t, Cost::Heavy, |x: T| x.exp()),
            Unary::Log => map_cost(t, Cost::Heavy, |x: T| x.ln()),
            Unary::Sqrt => map(t, |x: T| x.sqrt()),
            Unary::Sin => map_cost(t, Cost::Heavy, |x: T| x.sin()),
            Unary::Cos => map_cost(t, Cost::Heavy, |x: T| x.cos()),
            Unary::Tanh => map_cost(t, Cost::Heavy, |x: T| x.tanh()),
            Unary::Sigmoid => map_cost(t, Cost::Heavy, move |x: T| one / (one + (-x).exp())),
            Unary::Relu => map(t, move |x: T| if x <= zero { zero } else { x }), // NaN stays NaN
            Unary::Abs => map(t, |x: T| x.abs()),
            Unary::Sign => map(t, move |x: T| {
                if x > zero {
                    one
                } else if x < zero {
                    -one
                } else {
                    zero
                }
            }),
        }
    }

    fn saves(self) -> Vec<Save> {
        match self {
            Unary::Neg | Unary::Sign => vec![],
            Unary::Exp | Unary::Sqrt | Unary::Tanh | Unary::Sigmoid | Unary::Relu => {
                vec![Save::Output(0)]
            }
            Unary::Log | Unary::Sin | Unary::Cos | Unary::Abs => vec![],
        }
    }

    fn saves_input(self) -> bool {
        matches!(self, Unary::Log | Unary::Sin | Unary::Cos | Unary::Abs)
    }
}

struct UnaryBackward(Unary);

impl Backward for UnaryBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let saved = node.unpack_saved()?;
        let s = || saved[0].clone();
        let gi = match self.0 {
            Unary::Neg => g.neg()?,
            Unary::Exp => g.mul(&s())?,
            Unary::Log => g.div(&s())?,
            Unary::Sqrt => g.div(&s().mul_scalar(2.0)?)?,
            Unary::Sin => g.mul(&s().cos()?)?,
            Unary::Cos => g.mul(&s().sin()?)?.neg()?,
            Unary::Tanh => {
                let y = s();
                g.mul(&y.mul(&y)?.rsub_scalar(1.0)?)?
            }
            Unary::Sigmoid => {
                let y = s();
                g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)?
            }
            // A select, not a product: a non-finite gradient where the output is 0 must give 0, as in PyTorch.
            Unary::Relu => {
                let zero = zero_like(&g)?;
                Tensor::where_(&s().detach().compare_scalar(0.0, Cmp::Le)?, &zero, &g)?
            }
            Unary::Abs => g.mul(&s().detach().sign()?)?,
            Unary::Sign => g.mul_scalar(0.0)?,
        };
        Ok(vec![Some(gi)])
    }
}

/// Two-input arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (true division)
    Div,
    /// `a ** b`
    Pow,
}

impl Binary {
    fn node_name(self) -> &'static str {
        match self {
            Binary::Add => "AddBackward",
            Binary::Sub => "SubBackward",
            Binary::Mul => "MulBackward",
            Binary::Div => "DivBackward",
            Binary::Pow => "PowBackward",
        }
    }

    /// The dtype both operands are computed in. Bools as in PyTorch: `+` is or, `*` is and (the
    /// result stays bool), `-` and `**` of bools are refused; `/` of integers or bools gives float32.
    fn compute_dtype(self, a: &Tensor, b: &Tensor) -> Result<DType> {
        if self == Binary::Sub && (a.dtype() == DType::Bool || b.dtype() == DType::Bool) {
            return Err(bool_sub_error());
        }
        let d = DType::promote_operands(a.dtype(), a.ndim(), b.dtype(), b.ndim());
        Ok(match (self, d) {
            (Binary::Div, DType::Int64 | DType::Bool) => DType::Float32,
            (Binary::Pow, DType::Bool) => return Err(Error::dtype("\"pow\" not implemented for 'Bool'")),
            _ => d,
        })
    }

    fn kernel(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        match a.dtype() {
            DType::Bool => match self {
                Binary::Add => zip(a, b, |x: bool, y: bool| x | y),
                Binary::Mul => zip(a, b, |x: bool, y: bool| x & y),
                _ => Err(Error::dtype(format!("{self:?} is not defined for bool tensors"))),
            },
            DType::Int64 => match self {
                Binary::Add => zip(a, b, |x: i64, y: i64| x.wrapping_add(y)),
                Binary::Sub => zip(a, b, |x: i64, y: i64| x.wrapping_sub(y)),
                Binary::Mul => zip(a, b, |x: i64, y: i64| x.wrapping_mul(y)),
                Binary::Pow => zip(a, b, int_pow),
                Binary::Div => Err(Error::dtype("integer division goes through float32")),
            },
            dt => dispatch_float!(dt, "arithmetic", T => self.float_kernel::<T>(a, b)),
        }
    }

    fn float_kernel<T: Float>(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Binary::Add => zip(a, b, |x: T, y: T| x + y),
            Binary::Sub => zip(a, b, |x: T, y: T| x - y),
            Binary::Mul => zip(a, b, |x: T, y: T| x * y),
            Binary::Div => zip(a, b, |x: T, y: T| x / y),
            Binary::Pow => zip_cost(a, b, Cost::Heavy, |x: T, y: T| x.powf(y)),
        }
    }
}

/// The backward of `a (op) b`. It saves only what the gradients of the inputs that need one use
/// (`x * c` with a constant `c` keeps `c`, not `x`), so an in-place write to an operand whose value
/// no gradient needs does not invalidate the graph: the indices say where each kept value sits.
struct BinaryBackward {
    op: Binary,
    a: Option<usize>,
    b: Option<usize>,
    out: Option<usize>,
}

impl BinaryBackward {
    /// The formula and its saves, given which inputs need a gradient.
    fn new(op: Binary, a: &Tensor, b: &Tensor, need_a: bool, need_b: bool) -> (Self, Vec<Save>) {
        let (keep_a, keep_b, keep_out) = match op {
            Binary::Add | Binary::Sub => (false, false, false),
            Binary::Mul => (need_b, need_a, false),
            Binary::Div => (need_b, true, false),
            Binary::Pow => (true, need_a, need_b),
        };
        let mut saves = Vec::new();
        let mut keep = |flag: bool, s: Save| {
            flag.then(|| {
                saves.push(s);
                saves.len() - 1
            })
        };
        let a = keep(keep_a, Save::Input(a.clone()));
        let b = keep(keep_b, Save::Input(b.clone()));
        let out = keep(keep_out, Save::Output(0));
        (BinaryBackward { op, a, b, out }, saves)
    }
}

/// The saved value at `slot`, which the formula's own save rule guarantees is there.
fn kept(saved: &[Tensor], slot: Option<usize>) -> Result<&Tensor> {
    slot.and_then(|i| saved.get(i))
        .ok_or_else(|| Error::autograd("internal error: a backward formula needs a value it did not save"))
}

impl Backward for BinaryBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None, None]);
        };
        let need = |i: usize| node.next_edges()[i].is_some();
        let saved = node.unpack_saved()?;
        let (a, b, out) = (kept(&saved, self.a), kept(&saved, self.b), kept(&saved, self.out));
        let (ga, gb) = match self.op {
            Binary::Add => (Some(g.clone()), Some(g)),
            Binary::Sub => (Some(g.clone()), if need(1) { Some(g.neg()?) } else { None }),
            Binary::Mul => {
                (if need(0) { Some(g.mul(b?)?) } else { None }, if need(1) { Some(g.mul(a?)?) } else { None })
            }
            Binary::Div => {
                let b = b?;
                (
                    if need(0) { Some(g.div(b)?) } else { None },
                    if need(1) { Some(g.mul(a?)?.div(&b.mul(b)?)?.neg()?) } else { None },
                )
            }
            Binary::Pow => {
                let a = a?;
                // d/da a^b = b a^(b-1), taken as 0 where b == 0 and a == 0 (a^0 is constant; the
                // product is 0 * inf there). Only there: elsewhere the product is already 0 at b == 0,
                // and keeping it keeps its derivative with respect to b (a^(b-1)).
                let ga = if need(0) {
                    let b = b?;
                    let grad = g.mul(b)?.mul(&a.pow(&b.sub_scalar(1.0)?)?)?;
                    let zero_pow_zero =
                        b.detach().eq_scalar(0.0)?.logical(&a.detach().eq_scalar(0.0)?, Logical::And)?;
                    Some(grad.where_scalar_other(&zero_pow_zero.logical_not()?, 0.0)?)
                } else {
                    None
                };
                // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (the limit from a > 0);
                // at a == 0 and b < 0 it is -inf, as in PyTorch.
                let gb = if need(1) {
                    let out = out?;
                    let zero_base = a.detach().eq_scalar(0.0)?;
                    let b_nonneg = node_input_nonneg(out, &zero_base)?;
                    Some(g.mul(out)?.mul(&a.log()?)?.where_scalar_other(&b_nonneg.logical_not()?, 0.0)?)
                } else {
                    None
                };
                (ga, gb)
            }
        };
        Ok(vec![ga, gb])
    }
}

/// Where `a == 0` (given as `zero_base`) and `b >= 0`, read off the result: 0^b is 0 or 1 for
/// b >= 0 and +inf for b < 0.
fn node_input_nonneg(out: &Tensor, zero_base: &Tensor) -> Result<Tensor> {
    zero_base.logical(&out.detach().compare_scalar(1.0, Cmp::Le)?, Logical::And)
}

/// `x ** y` on integers, wrapping as PyTorch's integer kernels: by squaring over the whole 64-bit
/// exponent (`2 ** (2**32 + 1)` is 0, not 2). A negative exponent truncates 1/x^|y| toward 0.
fn int_pow(x: i64, y: i64) -> i64 {
    if y >= 0 {
        let (mut base, mut e, mut acc) = (x, y as u64, 1i64);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.wrapping_mul(base);
            }
            base = base.wrapping_mul(base);
            e >>= 1;
        }
        acc
    } else {
        match x {
            1 => 1,
            -1 if y % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        }
    }
}

fn bool_sub_error() -> Error {
    Error::dtype(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, \
         use the `~` or `logical_not()` operator instead.",
    )
}

/// Arithmetic with a Python-style scalar on one side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarOp {
    /// `x + s`
    Add,
    /// `x - s`
    Sub,
    /// `s - x`
    RSub,
    /// `x * s`
    Mul,
    /// `x / s`
    Div,
    /// `s / x`
    RDiv,
    /// `x ** s`
    Pow,
    /// `s ** x`
    RPow,
}

impl ScalarOp {
    /// True for the operations PyTorch runs as a tensor operation on a wrapped number (`x + 5`,
    /// `x * 5`, ...): their node has an input slot for the number, with no edge.
    fn scalar_has_slot(self) -> bool {
        matches!(self, ScalarOp::Add | ScalarOp::Sub | ScalarOp::Mul | ScalarOp::Div)
    }

    fn node_name(self) -> &'static str {
        match self {
            ScalarOp::Add => "AddBackward",
            ScalarOp::Sub => "SubBackward",
            ScalarOp::RSub => "RsubBackward",
            ScalarOp::Mul => "MulBackward",
            ScalarOp::Div | ScalarOp::RDiv => "DivBackward",
            ScalarOp::Pow | ScalarOp::RPow => "PowBackward",
        }
    }

    /// The dtype the operation is computed in, as in PyTorch: bool results stay bool, `-` of bools
    /// is refused, `/` of integers or bools gives float32, an integer tensor to a negative integer
    /// power is refused (it has no integer result), and so is a bool scalar to a bool tensor's power.
    fn compute_dtype(self, s: Scalar, t: DType) -> Result<DType> {
        if matches!(self, ScalarOp::Sub | ScalarOp::RSub) && (t == DType::Bool || matches!(s, Scalar::Bool(_))) {
            return Err(bool_sub_error());
        }
        let d = s.result_dtype_with(t);
        Ok(match (self, d) {
            (ScalarOp::Div | ScalarOp::RDiv, DType::Int64 | DType::Bool) => DType::Float32,
            (ScalarOp::Pow, DType::Int64) if s.is_negative() => {
                return Err(Error::dtype("Integers to negative integer powers are not allowed."))
            }
            (ScalarOp::RPow, DType::Bool) => return Err(Error::dtype("\"pow\" not implemented for 'Bool'")),
            _ => d,
        })
    }

    fn kernel(self, x: &Tensor, s: Scalar) -> Result<Tensor> {
        match x.dtype() {
            DType::Bool => {
                let v = s.as_f64() != 0.0;
                match self {
                    ScalarOp::Add => map(x, move |a: bool| a | v),
                    ScalarOp::Mul => map(x, move |a: bool| a & v),
                    ScalarOp::Pow => map(x, move |a: bool| a | !v),
                    _ => Err(Error::dtype(format!("{self:?} is not defined for bool tensors"))),
                }
            }
            DType::Int64 => {
                // Only int and bool scalars reach here (a float one makes the result float32).
                let v = s.as_i64();
                match self {
                    ScalarOp::Add => map(x, move |a: i64| a.wrapping_add(v)),
                    ScalarOp::Sub => map(x, move |a: i64| a.wrapping_sub(v)),
                    ScalarOp::RSub => map(x, move |a: i64| v.wrapping_sub(a)),
                    ScalarOp::Mul => map(x, move |a: i64| a.wrapping_mul(v)),
                    ScalarOp::Pow => map(x, move |a: i64| int_pow(a, v)),
                    ScalarOp::RPow => map(x, move |a: i64| int_pow(v, a)),
                    ScalarOp::Div | ScalarOp::RDiv => Err(Error::dtype("integer division goes through float32")),
                }
            }
            dt => dispatch_float!(dt, "arithmetic", T => {
                let v: T = s.to_element();
                match self {
                    ScalarOp::Add => map(x, move |a: T| a + v),
                    ScalarOp::Sub => map(x, move |a: T| a - v),
                    ScalarOp::RSub => map(x, move |a: T| v - a),
                    ScalarOp::Mul => map(x, move |a: T| a * v),
                    ScalarOp::Div => map(x, move |a: T| a / v),
                    ScalarOp::RDiv => map(x, move |a: T| v / a),
                    // Exponents 0.5 and -0.5 are sqrt and 1/sqrt, as in PyTorch (and NumPy): powf gave
                    // inf for (-inf) ** 0.5 and +0 for (-0) ** 0.5, where those give nan and -0.
                    ScalarOp::Pow => match s.as_f64() {
                        2.0 => map(x, |a: T| a * a),
                        0.5 => map_cost(x, Cost::Heavy, |a: T| a.sqrt()),
                        -0.5 => map_cost(x, Cost::Heavy, |a: T| a.sqrt().recip()),
                        _ => map_cost(x, Cost::Heavy, move |a: T| a.powf(v)),
                    },
                    ScalarOp::RPow => map_cost(x, Cost::Heavy, move |a: T| v.powf(a)),
                }
            }),
        }
    }
}

struct ScalarBackward {
    op: ScalarOp,
    s: f64,
}

impl Backward for ScalarBackward {
    fn keeps_values(&self) -> bool {
        matches!(self.op, ScalarOp::Mul | ScalarOp::Div)
    }

    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // With `scalar_has_slot`, the second slot is the scalar's: it never gets a gradient.
        let slots = if self.op.scalar_has_slot() { 2 } else { 1 };
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None; slots]);
        };
        let s = self.s;
        let gi = match self.op {
            ScalarOp::Add | ScalarOp::Sub => g,
            ScalarOp::RSub => g.neg()?,
            ScalarOp::Mul => g.mul_scalar(s)?,
            ScalarOp::Div => g.div_scalar(s)?,
            ScalarOp::RDiv => {
                let x = &node.unpack_saved()?[0];
                g.mul(&x.pow_scalar(-2.0)?)?.mul_scalar(-s)?
            }
            ScalarOp::Pow => {
                if s == 0.0 {
                    Tensor::zeros(g.shape(), g.dtype())?
                } else {
                    let x = &node.unpack_saved()?[0];
                    g.mul(&x.pow_scalar(s - 1.0)?)?.mul_scalar(s)?
                }
            }
            ScalarOp::RPow => {
                let out = &node.unpack_saved()?[0];
                let grad = g.mul(out)?.mul_scalar(s.ln())?;
                if s == 0.0 {
                    // 0^x: the gradient is 0 where x >= 0 (0^x is 0 or 1 there) and -inf where x < 0.
                    grad.where_scalar_other(&out.detach().compare_scalar(1.0, Cmp::Gt)?, 0.0)?
                } else {
                    grad
                }
            }
        };
        let mut out = vec![Some(gi)];
        out.resize(slots, None);
        Ok(out)
    }
}

/// Logical operations of two tensors taken as bools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logical {
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
}

/// Comparisons, giving bool tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Cmp {
    fn test<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

struct ClampBackward {
    min: Option<f64>,
    max: Option<f64>,
}

impl Backward for ClampBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        let x = node.unpack_saved()?[0].detach();
        // Strictly inside, as in PyTorch: a value sitting on a bound gets no gradient.
        let (lo, hi) = (self.min, self.max);
        let inside = dispatch_float!(x.dtype(), "clamp", T => map(&x, move |v: T| {
            let v = v.to_f64();
            lo.is_none_or(|lo| v > lo) && hi.is_none_or(|hi| v < hi)
        })?);
        // A select, not a product, so that an infinite gradient outside the range gives 0.
        let zero = zero_like(&g)?;
        Ok(vec![Some(Tensor::where_(&inside, &g, &zero)?)])
    }
}

/// A 0-dim zero of `g`'s dtype: the "no gradient" branch of the selects below.
fn zero_like(g: &Tensor) -> Result<Tensor> {
    Tensor::scalar_tensor(Scalar::Float(0.0), g.dtype())
}

struct WhereBackward;

impl Backward for WhereBackward {
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None, None]);
        };
        let cond = &node.unpack_saved()?[0];
        let zero = zero_like(&g)?;
        let need = |i: usize| node.next_edges()[i].is_some();
        Ok(vec![
            if need(0) { Some(Tensor::where_(cond, &g, &zero)?) } else { None },
            if need(1) { Some(Tensor::where_(cond, &zero, &g)?) } else { None },
        ])
    }
}

impl Tensor {
    /// Applies a one-input float operation (integers accepted for neg, abs, sign, relu).
    pub fn unary(&self, op: Unary) -> Result<Tensor> {
        if self.dtype() == DType::Int64 {
            let out = match op {
                Unary::Neg => map(self, |x: i64| x.wrapping_neg())?,
                Unary::Abs => map(self, |x: i64| x.wrapping_abs())?,
                Unary::Sign => map(self, |x: i64| x.signum())?,
                Unary::Relu => map(self, |x: i64| x.max(0))?,
                _ => return self.to_dtype(DType::Float32)?.unary(op),
            };
            return Ok(out);
        }
        if self.dtype() == DType::Bool {
            // As in PyTorch: -, abs and relu of bools are refused, sign stays bool.
            return match op {
                Unary::Neg => Err(Error::dtype(
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a \
                     mask, use the `~` or `logical_not()` operator instead.",
                )),
                Unary::Abs => Err(Error::dtype("abs is not implemented for bool tensors")),
                Unary::Relu => Err(Error::dtype("Boolean inputs not supported for relu")),
                Unary::Sign => Ok(self.detach().clone_data()?),
                _ => self.to_dtype(DType::Float32)?.unary(op),
            };
        }
        let out = dispatch_float!(self.dtype(), op.node_name(), T => op.kernel::<T>(self)?);
        record(op.node_name(), &[self], &[&out], || {
            let mut saves = op.saves();
            if op.saves_input() {
                saves.push(Save::Input(self.clone()));
            }
            (UnaryBackward(op), saves)
        });
        Ok(out)
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

    /// Two-tensor arithmetic with broadcasting and dtype promotion.
    pub fn binary(&self, other: &Tensor, op: Binary) -> Result<Tensor> {
        let dt = op.compute_dtype(self, other)?;
        let a = self.to_dtype(dt)?;
        let b = other.to_dtype(dt)?;
        let out = op.kernel(&a, &b)?;
        record(op.node_name(), &[&a, &b], &[&out], || {
            BinaryBackward::new(op, &a, &b, a.requires_grad(), b.requires_grad())
        });
        Ok(out)
    }

    /// `a + b`
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, Binary::Add)
    }
    /// `a - b`
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, Binary::Sub)
    }
    /// `a * b`
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, Binary::Mul)
    }
    /// `a / b`
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, Binary::Div)
    }
    /// `a ** b`
    pub fn pow(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, Binary::Pow)
    }

    /// Arithmetic with a scalar.
    pub fn scalar_op(&self, s: impl Into<Scalar>, op: ScalarOp) -> Result<Tensor> {
        let s = s.into();
        let dt = op.compute_dtype(s, self.dtype())?;
        let x = self.to_dtype(dt)?;
        let out = op.kernel(&x, s)?;
        let make = || {
            let saves = match op {
                ScalarOp::RDiv | ScalarOp::Pow => vec![Save::Input(x.clone())],
                ScalarOp::RPow => vec![Save::Output(0)],
                _ => vec![],
            };
            (ScalarBackward { op, s: s.as_f64() }, saves)
        };
        if op.scalar_has_slot() {
            record_with_scalar(op.node_name(), &x, &out, make);
        } else {
            record(op.node_name(), &[&x], &[&out], make);
        }
        Ok(out)
    }

    /// `x + s`
    pub fn add_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::Add)
    }
    /// `x - s`
    pub fn sub_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::Sub)
    }
    /// `s - x`
    pub fn rsub_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::RSub)
    }
    /// `x * s`
    pub fn mul_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::Mul)
    }
    /// `x / s`
    pub fn div_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::Div)
    }
    /// `s / x`
    pub fn rdiv_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::RDiv)
    }
    /// `x ** s`
    pub fn pow_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::Pow)
    }
    /// `s ** x`
    pub fn rpow_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_op(s, ScalarOp::RPow)
    }

    /// Element-wise comparison with broadcasting, giving a bool tensor.
    pub fn compare(&self, other: &Tensor, op: Cmp) -> Result<Tensor> {
        let dt = DType::promote_operands(self.dtype(), self.ndim(), other.dtype(), other.ndim());
        let a = self.detach().to_dtype(dt)?;
        let b = other.detach().to_dtype(dt)?;
        dispatch_all!(dt, T => zip(&a, &b, move |x: T, y: T| op.test(x, y)))
    }

    /// Element-wise comparison with a scalar.
    // `a < v` on bools (the macro instantiates every dtype) is the intended comparison.
    #[allow(clippy::bool_comparison)]
    pub fn compare_scalar(&self, s: impl Into<Scalar>, op: Cmp) -> Result<Tensor> {
        let s = s.into();
        let dt =
            s.result_dtype_with(self.dtype()).promote(if let Scalar::Int(_) = s { DType::Int64 } else { DType::Bool });
        let dt = if self.dtype().is_float() { self.dtype() } else { dt };
        let x = self.detach().to_dtype(dt)?;
        dispatch_all!(dt, T => {
            let v: T = s.to_element();
            // One closure per comparison, so that each loop is branch-free.
            match op {
                Cmp::Lt => map(&x, move |a: T| a < v),
                Cmp::Le => map(&x, move |a: T| a <= v),
                Cmp::Gt => map(&x, move |a: T| a > v),
                Cmp::Ge => map(&x, move |a: T| a >= v),
                Cmp::Eq => map(&x, move |a: T| a == v),
                Cmp::Ne => map(&x, move |a: T| a != v),
            }
        })
    }

    /// `x > s`
    pub fn gt_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(s, Cmp::Gt)
    }
    /// `x < s`
    pub fn lt_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(s, Cmp::Lt)
    }
    /// `x == s`
    pub fn eq_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(s, Cmp::Eq)
    }

    /// Logical not of a bool tensor (of `x != 0` otherwise).
    pub fn logical_not(&self) -> Result<Tensor> {
        let b = self.to_bool()?;
        map(&b, |x: bool| !x)
    }

    /// Logical and / or / xor of two tensors taken as bools.
    pub fn logical(&self, other: &Tensor, op: Logical) -> Result<Tensor> {
        let (a, b) = (self.to_bool()?, other.to_bool()?);
        match op {
            Logical::And => zip(&a, &b, |x: bool, y: bool| x & y),
            Logical::Or => zip(&a, &b, |x: bool, y: bool| x | y),
            Logical::Xor => zip(&a, &b, |x: bool, y: bool| x ^ y),
        }
    }

    fn to_bool(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            Ok(self.detach())
        } else {
            self.detach().to_dtype(DType::Bool)
        }
    }

    /// Limits every element to `[min, max]`; either bound may be absent.
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        self.clamp_scalar(min.map(Scalar::Float), max.map(Scalar::Float))
    }

    /// `clamp` with tensor bounds (either may be missing), broadcast together: `min(max(x, lo), hi)`,
    /// so where `lo > hi` the result is `hi`, as in PyTorch. Written with selects, so `x` gets the
    /// gradient where it is inside the bounds (ends included) and each bound where it was chosen.
    pub fn clamp_tensors(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::value("torch.clamp: At least one of 'min' or 'max' must not be None"));
        }
        let mut out = self.clone();
        if let Some(lo) = min {
            out = Tensor::where_(&out.compare(lo, Cmp::Lt)?, lo, &out)?;
        }
        if let Some(hi) = max {
            out = Tensor::where_(&out.compare(hi, Cmp::Gt)?, hi, &out)?;
        }
        Ok(out)
    }

    /// The dtype `clamp` with these bounds computes in, as in PyTorch: a float bound makes an integer
    /// or bool tensor float32 (so clamping int64 to 0.5 does not round the bound), an int bound makes
    /// a bool tensor int64; a bool bound changes nothing.
    pub fn clamp_result_dtype(&self, min: Option<Scalar>, max: Option<Scalar>) -> DType {
        let numbers = [min, max].into_iter().flatten().filter(|s| !matches!(s, Scalar::Bool(_)));
        numbers.fold(self.dtype(), |dt, s| s.result_dtype_with(dt))
    }

    /// `clamp` with bounds of any scalar kind, in `clamp_result_dtype`: an integer bound of an int64
    /// tensor stays exact.
    pub fn clamp_scalar(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::value("torch.clamp: At least one of 'min' or 'max' must not be None"));
        }
        let want = self.clamp_result_dtype(min, max);
        if want != self.dtype() {
            return self.to_dtype(want)?.clamp_scalar(min, max);
        }
        let out = match self.dtype() {
            DType::Int64 => {
                // Only int and bool bounds get here: a float bound made the tensor float32 above.
                let (lo, hi) =
                    (min.map(Scalar::as_i64).unwrap_or(i64::MIN), max.map(Scalar::as_i64).unwrap_or(i64::MAX));
                map(self, move |x: i64| x.max(lo).min(hi))?
            }
            dt => dispatch_float!(dt, "clamp", T => {
                let l: T = min.map(|v| v.to_element()).unwrap_or(<T as num_traits::Float>::neg_infinity());
                let h: T = max.map(|v| v.to_element()).unwrap_or(<T as num_traits::Float>::infinity());
                // max first, then min: when min > max every element becomes max, as in PyTorch
                map(self, move |x: T| {
                    let y = if x < l { l } else { x };
                    if y > h {
                        h
                    } else {
                        y
                    }
                })?
            }),
        };
        let (min, max) = (min.map(Scalar::as_f64), max.map(Scalar::as_f64));
        record("ClampBackward", &[self], &[&out], || (ClampBackward { min, max }, vec![Save::Input(self.clone())]));
        Ok(out)
    }

    /// In-place `clamp_scalar`. Refused when the bounds would change the dtype (a float bound of an
    /// integer tensor), as in PyTorch: the result could not be written back without rounding.
    pub fn clamp_scalar_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<()> {
        let want = self.clamp_result_dtype(min, max);
        if want != self.dtype() {
            return Err(Error::dtype(format!(
                "clamp_: result type {want} can't be cast to the desired output type {}",
                self.dtype()
            )));
        }
        self.apply_inplace("clamp_", &[], |x| x.clamp_scalar(min, max))
    }

    /// `clamp_tensors` in place.
    pub fn clamp_tensors_(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<()> {
        let operands: Vec<&Tensor> = min.into_iter().chain(max).collect();
        self.apply_inplace("clamp_", &operands, |x| x.clamp_tensors(min, max))
    }

    /// `cond ? a : b`, element-wise with broadcasting.
    pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let dt = DType::promote_operands(a.dtype(), a.ndim(), b.dtype(), b.ndim());
        let (a, b) = (a.to_dtype(dt)?, b.to_dtype(dt)?);
        let c = cond.to_bool()?;
        let shape = broadcast_shapes(&broadcast_shapes(c.shape(), a.shape())?, b.shape())?;
        check_alloc(&shape, dt)?;
        let sh = IxDyn(&shape);
        let broadcast_failed = || Error::shape(format!("where: cannot broadcast to shape {shape:?}"));
        let out = dispatch_all!(dt, T => c.with_view(|vc: ndarray::ArrayViewD<bool>| {
            a.with_view(|va: ndarray::ArrayViewD<T>| {
                b.with_view(|vb: ndarray::ArrayViewD<T>| {
                    let vc = vc.broadcast(sh.clone()).ok_or_else(broadcast_failed)?;
                    let va = va.broadcast(sh.clone()).ok_or_else(broadcast_failed)?;
                    let vb = vb.broadcast(sh.clone()).ok_or_else(broadcast_failed)?;
                    Ok::<_, Error>(Tensor::from_array(Zip::from(&vc).and(&va).and(&vb).map_collect(|&c, &x, &y| if c { x } else { y })))
                })
            })
        })????);
        record("WhereBackward", &[&a, &b], &[&out], || (WhereBackward, vec![Save::Input(c.clone())]));
        Ok(out)
    }

    /// `cond ? self : s`.
    pub fn where_scalar_other(&self, cond: &Tensor, s: f64) -> Result<Tensor> {
        let other = Tensor::scalar_tensor(Scalar::Float(s), self.dtype())?;
        Tensor::where_(cond, self, &other)
    }
}
