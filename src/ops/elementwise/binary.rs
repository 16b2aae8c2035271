//! Two-operand arithmetic: two tensors with broadcasting and dtype promotion (`Binary`), and a
//! tensor with a Python-style scalar (`ScalarOp`), with their backward formulas.

use super::compare::{Cmp, Logical};
use crate::autograd::node::Node;
use crate::autograd::record::{record, record_with_jvp, record_with_scalar, Save};
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::kernel::{map, map_cost, zip, zip_cost, Cost};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::element::{Element, Float, Int};
use crate::tensor::Tensor;
use crate::{dispatch_float, dispatch_int};

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
            (Binary::Div, d) if !d.is_float() => crate::tensor::default_dtype::default_float(),
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
            dt => dispatch_int!(dt, T => self.int_kernel::<T>(a, b),
                other => dispatch_float!(other, "arithmetic", T => self.float_kernel::<T>(a, b))),
        }
    }

    fn int_kernel<T: Int>(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Binary::Add => zip(a, b, |x: T, y: T| x.wrapping_add(&y)),
            Binary::Sub => zip(a, b, |x: T, y: T| x.wrapping_sub(&y)),
            Binary::Mul => zip(a, b, |x: T, y: T| x.wrapping_mul(&y)),
            Binary::Pow => zip(a, b, |x: T, y: T| int_pow(x, Element::to_i64(y))),
            Binary::Div => Err(Error::dtype("integer division goes through float32")),
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

/// Forward mode of `+ - * /`: `da ± db`, `da b + a db`, `da / b - db out / b`, broadcast to the
/// output's shape.
fn binary_jvp(op: Binary, t: &[Option<Tensor>], a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let (ta, tb) = (&t[0], &t[1]);
    let left = match op {
        Binary::Add | Binary::Sub => ta.clone(),
        Binary::Mul => ta.as_ref().map(|t| t.mul(b)).transpose()?,
        _ => ta.as_ref().map(|t| t.div(b)).transpose()?,
    };
    let right = match op {
        Binary::Add => tb.clone(),
        Binary::Sub => tb.as_ref().map(|t| t.neg()).transpose()?,
        Binary::Mul => tb.as_ref().map(|t| a.mul(t)).transpose()?,
        _ => tb.as_ref().map(|t| t.mul(out)?.div(b)?.neg()).transpose()?,
    };
    let sum = match (left, right) {
        (Some(l), Some(r)) => l.add(&r)?,
        (Some(l), None) => l,
        (None, Some(r)) => r,
        (None, None) => return Ok(vec![None]),
    };
    let sum = if sum.shape() != out.shape() { sum.expand(out.shape())?.contiguous()? } else { sum };
    Ok(vec![Some(sum)])
}

/// The saved value at `slot`, which the formula's own save rule guarantees is there.
fn kept(saved: &[Tensor], slot: Option<usize>) -> Result<&Tensor> {
    slot.and_then(|i| saved.get(i))
        .ok_or_else(|| Error::autograd("internal error: a backward formula needs a value it did not save"))
}

impl SingleOutput for BinaryBackward {
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

    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let saved = node.unpack_saved()?;
        let (a, b, out) = (kept(&saved, self.a), kept(&saved, self.b), kept(&saved, self.out));
        let (ga, gb) = match self.op {
            Binary::Add => (Some(g.clone()), Some(g)),
            Binary::Sub => (Some(g.clone()), need.then(1, || g.neg())?),
            Binary::Mul => (need.then(0, || g.mul(b?))?, need.then(1, || g.mul(a?))?),
            Binary::Div => {
                let b = b?;
                (need.then(0, || g.div(b))?, need.then(1, || g.mul(a?)?.div(&b.mul(b)?)?.neg())?)
            }
            Binary::Pow => {
                let a = a?;
                // d/da a^b = b a^(b-1), taken as 0 where b == 0 and a == 0 (a^0 is constant; the
                // product is 0 * inf there). Only there: elsewhere the product is already 0 at b == 0,
                // and keeping it keeps its derivative with respect to b (a^(b-1)).
                let ga = need.then(0, || {
                    let b = b?;
                    let grad = g.mul(b)?.mul(&a.pow(&b.sub_scalar(1.0)?)?)?;
                    let zero_pow_zero =
                        b.detach().eq_scalar(0.0)?.logical(&a.detach().eq_scalar(0.0)?, Logical::And)?;
                    grad.where_scalar_other(&zero_pow_zero.logical_not()?, 0.0)
                })?;
                // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (the limit from a > 0);
                // at a == 0 and b < 0 it is -inf, as in PyTorch.
                let gb = need.then(1, || {
                    let out = out?;
                    let zero_base = a.detach().eq_scalar(0.0)?;
                    let b_nonneg = node_input_nonneg(out, &zero_base)?;
                    g.mul(out)?.mul(&a.log()?)?.where_scalar_other(&b_nonneg.logical_not()?, 0.0)
                })?;
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
fn int_pow<T: Int>(x: T, y: i64) -> T {
    if y >= 0 {
        let (mut base, mut e, mut acc) = (x, y as u64, T::one());
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.wrapping_mul(&base);
            }
            base = base.wrapping_mul(&base);
            e >>= 1;
        }
        acc
    } else {
        match Element::to_i64(x) {
            1 => T::one(),
            -1 if y % 2 == 0 => T::one(),
            -1 => x,
            _ => T::zero(),
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
            (ScalarOp::Div | ScalarOp::RDiv, d) if !d.is_float() => crate::tensor::default_dtype::default_float(),
            (ScalarOp::Pow, d) if d.is_int() && s.is_negative() => {
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
            dt if dt.is_int() => dispatch_int!(dt, T => {
                // Only int and bool scalars reach here (a float one makes the result float32). The
                // scalar wraps into the tensor's type, which modular arithmetic makes exact.
                let e = s.as_i64();
                let v = T::from_i64(e);
                match self {
                    ScalarOp::Add => map(x, move |a: T| a.wrapping_add(v)),
                    ScalarOp::Sub => map(x, move |a: T| a.wrapping_sub(v)),
                    ScalarOp::RSub => map(x, move |a: T| v.wrapping_sub(a)),
                    ScalarOp::Mul => map(x, move |a: T| a.wrapping_mul(v)),
                    ScalarOp::Pow => map(x, move |a: T| int_pow(a, e)),
                    ScalarOp::RPow => map(x, move |a: T| int_pow(v, Element::to_i64(a))),
                    ScalarOp::Div | ScalarOp::RDiv => Err(Error::dtype("integer division goes through float32")),
                }
            }, _ => unreachable!("an integer dtype")),
            // In float32 (NOTE [Half-precision compute]), with the scalar first rounded to the
            // tensor's 16-bit type, as PyTorch converts it to the operation's dtype.
            dt if dt.is_half() => {
                let s = Scalar::Float(crate::dispatch_all!(dt, T => s.to_element::<T>().to_f64()));
                crate::ops::kernel::widened(x, |w| self.kernel(w, s))
            }
            dt => crate::dispatch_float_wide!(dt, "arithmetic", T => {
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
                        // `x ** 2`'s backward takes `x ** 1`: powf per element (libm) was 0.8% of a
                        // W4 step; x ** 1 is x exactly, NaN included.
                        1.0 => map(x, |a: T| a),
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

impl SingleOutput for ScalarBackward {
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

    fn keeps_values(&self) -> bool {
        matches!(self.op, ScalarOp::Mul | ScalarOp::Div)
    }

    fn input_grads(&self, node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        // With `scalar_has_slot`, the second slot is the scalar's: it never gets a gradient.
        let slots = if self.op.scalar_has_slot() { 2 } else { 1 };
        let s = self.s;
        let gi = match self.op {
            ScalarOp::Add | ScalarOp::Sub => g,
            ScalarOp::RSub => g.neg()?,
            // Nothing to record (the usual backward): the kernel alone, which `mul_scalar` would run
            // after its dtype and recording checks (a float gradient times a Python float keeps its
            // dtype), so the values are the same.
            ScalarOp::Mul | ScalarOp::Div if g.dtype().is_float() && !super::records(&g) => {
                self.op.kernel(&g, Scalar::Float(s))?
            }
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

impl Tensor {
    /// Two-tensor arithmetic with broadcasting and dtype promotion.
    pub fn binary(&self, other: &Tensor, op: Binary) -> Result<Tensor> {
        let dt = op.compute_dtype(self, other)?;
        let a = self.to_dtype(dt)?;
        let b = other.to_dtype(dt)?;
        let out = op.kernel(&a, &b)?;
        let make = || {
            BinaryBackward::new(
                op,
                &a,
                &b,
                crate::autograd::forward::wants_grad(&a),
                crate::autograd::forward::wants_grad(&b),
            )
        };
        if op == Binary::Pow {
            // forward mode derived from the backward formula (its special cases at 0)
            record(op.node_name(), &[&a, &b], &[&out], make);
        } else {
            let jvp = |t: &[Option<Tensor>]| binary_jvp(op, t, &a, &b, &out);
            record_with_jvp(op.node_name(), &[&a, &b], &[&out], make, Some(jvp));
        }
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
        // Forward mode of the linear ones: the tangent through the same operation's linear part.
        let linear = |t: &Tensor| match op {
            ScalarOp::Mul => t.mul_scalar(s),
            ScalarOp::Div => t.div_scalar(s),
            _ => Ok(t.clone()),
        };
        if op.scalar_has_slot() {
            record_with_scalar(op.node_name(), &x, &out, make, Some(linear));
        } else if op == ScalarOp::RSub {
            let jvp = |t: &[Option<Tensor>]| t[0].as_ref().map(|t| t.neg()).transpose().map(|t| vec![t]);
            record_with_jvp(op.node_name(), &[&x], &[&out], make, Some(jvp));
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
}
