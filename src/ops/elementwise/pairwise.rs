//! Two-input element-wise functions (`maximum`, `fmod`, `atan2`, ...) as one table, like the
//! unary one: `Pairwise::row` holds each operation's node name, its dtype rule, its kernels and
//! its backward formula. The arithmetic operators (`+ - * / **`) keep their own code in
//! `binary.rs`, with the scalar forms and the save rules tuned for optimizer steps.
//! Also here: `lerp`, `addcmul` and `addcdiv`, written as compositions of recorded operations.

use super::compare::{Cmp, Logical};
use super::zero_like;
use crate::autograd::node::Node;
use crate::autograd::record::{record, Save};
use crate::dispatch_float_wide;
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::kernel::{zip, zip_cost, Cost};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::element::Element;
use crate::tensor::Tensor;

/// Two-input element-wise functions with broadcasting and dtype promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairwise {
    /// the larger of the two (NaN if either is NaN)
    Maximum,
    /// the smaller of the two (NaN if either is NaN)
    Minimum,
    /// the larger of the two, ignoring a NaN
    Fmax,
    /// the smaller of the two, ignoring a NaN
    Fmin,
    /// the remainder of the division truncated toward zero (the sign of `a`), C's `fmod`
    Fmod,
    /// the remainder of the division rounded down (the sign of `b`), Python's `%`
    Remainder,
    /// the quotient rounded down, Python's `//`
    FloorDivide,
    /// the angle of the point `(b, a)`: `atan(a / b)` in the right quadrant
    Atan2,
}

/// What integer operands do.
enum Ints {
    /// They are computed as float32.
    ToFloat,
    /// They stay int64, with this function; `divides` refuses a zero divisor, as PyTorch does.
    Exact { f: fn(i64, i64) -> i64, divides: bool },
}

/// What two bool operands do.
enum Bools {
    /// They stay bool, with this function.
    Exact(fn(bool, bool) -> bool),
    /// They are computed as float32.
    ToFloat,
    /// They are refused, naming PyTorch's kernel.
    Refused(&'static str),
}

/// The gradients of both inputs from `g` and the two (saved) inputs.
type Grads = fn(Pairwise, &Tensor, &Tensor, &Tensor, Need<'_>) -> Result<Vec<Option<Tensor>>>;
type Kernel = Box<dyn Fn(&Tensor, &Tensor) -> Result<Tensor>>;

/// One row of the table.
struct Row {
    name: &'static str,
    ints: Ints,
    bools: Bools,
    float: Kernel,
    /// Whether the formula needs the inputs: always, only for `b`'s gradient, or never.
    keep: Keep,
    /// `None` for an operation without a derivative (`floor_divide`, as in PyTorch).
    grads: Option<Grads>,
    // Forward mode: the tangent is `grads`' two terms summed, with the tangents for `g`.
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Both,
    ForOther,
    Nothing,
}

/// A float kernel from one expression in `x` and `y` of type `T` (`f32` or `f64`); float16 and
/// bfloat16 run it in float32 (NOTE [Half-precision compute]).
macro_rules! float_zip {
    ($cost:ident, |$x:ident, $y:ident| $body:expr) => {
        Box::new(move |a: &Tensor, b: &Tensor| -> Result<Tensor> {
            let kernel = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
                dispatch_float_wide!(a.dtype(), "this operation", T => zip_cost(a, b, Cost::$cost, move |$x: T, $y: T| -> T { $body }))
            };
            if a.dtype().is_half() {
                crate::ops::kernel::widened2(a, b, kernel)
            } else {
                kernel(a, b)
            }
        })
    };
}

impl Pairwise {
    fn row(self) -> Row {
        let exact = |f: fn(i64, i64) -> i64| Ints::Exact { f, divides: false };
        let dividing = |f: fn(i64, i64) -> i64| Ints::Exact { f, divides: true };
        match self {
            Pairwise::Maximum => Row {
                name: "MaximumBackward",
                ints: exact(i64::max),
                bools: Bools::Exact(|x, y| x | y),
                float: float_zip!(Cheap, |x, y| if x.is_nan() || y.is_nan() { x + y } else { x.max(y) }),
                keep: Keep::Both,
                grads: Some(extremum_grads),
            },
            Pairwise::Minimum => Row {
                name: "MinimumBackward",
                ints: exact(i64::min),
                bools: Bools::Exact(|x, y| x & y),
                float: float_zip!(Cheap, |x, y| if x.is_nan() || y.is_nan() { x + y } else { x.min(y) }),
                keep: Keep::Both,
                grads: Some(extremum_grads),
            },
            Pairwise::Fmax => Row {
                name: "FmaxBackward",
                ints: exact(i64::max),
                bools: Bools::Exact(|x, y| x | y),
                float: float_zip!(Cheap, |x, y| x.max(y)),
                keep: Keep::Both,
                grads: Some(extremum_grads),
            },
            Pairwise::Fmin => Row {
                name: "FminBackward",
                ints: exact(i64::min),
                bools: Bools::Exact(|x, y| x & y),
                float: float_zip!(Cheap, |x, y| x.min(y)),
                keep: Keep::Both,
                grads: Some(extremum_grads),
            },
            // d/da = 1, d/db = -trunc(a / b)
            Pairwise::Fmod => Row {
                name: "FmodBackward",
                ints: dividing(i64::wrapping_rem),
                bools: Bools::Refused("fmod_cpu"),
                float: float_zip!(Cheap, |x, y| x % y),
                keep: Keep::ForOther,
                grads: Some(|_, g, a, b, need| {
                    Ok(vec![need.then(0, || Ok(g.clone()))?, need.then(1, || g.mul(&a.div(b)?.trunc()?)?.neg())?])
                }),
            },
            // d/da = 1, d/db = -floor(a / b), with the floor division `//` computes (from the exact
            // remainder, as PyTorch's): `floor` of the rounded quotient can be one more, and the
            // gradient would then disagree with the value (1.064 % 0.014 in float32)
            Pairwise::Remainder => Row {
                name: "RemainderBackward",
                ints: dividing(int_remainder),
                bools: Bools::Refused("remainder_cpu"),
                float: float_zip!(Cheap, |x, y| {
                    let r = x % y;
                    if r != 0.0 && (r < 0.0) != (y < 0.0) {
                        r + y
                    } else {
                        r
                    }
                }),
                keep: Keep::ForOther,
                grads: Some(|_, g, a, b, need| {
                    Ok(vec![
                        need.then(0, || Ok(g.clone()))?,
                        need.then(1, || g.mul(&a.detach().floor_divide(&b.detach())?)?.neg())?,
                    ])
                }),
            },
            Pairwise::FloorDivide => Row {
                name: "FloorDivideBackward",
                ints: dividing(int_floor_divide),
                bools: Bools::Refused("div_floor_cpu"),
                float: float_zip!(Cheap, |x, y| floor_divide(x, y)),
                keep: Keep::Nothing,
                grads: None,
            },
            // d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2); 0 at the origin
            Pairwise::Atan2 => Row {
                name: "Atan2Backward",
                ints: Ints::ToFloat,
                bools: Bools::ToFloat,
                float: float_zip!(Heavy, |x, y| x.atan2(y)),
                keep: Keep::Both,
                grads: Some(|_, g, a, b, need| {
                    // 1 / (a^2 + b^2), taken as 0 at the origin, as in PyTorch
                    let r2 = a.square()?.add(&b.square()?)?;
                    let recip = Tensor::where_(&r2.detach().eq_scalar(0.0)?, &zero_like(g)?, &r2.reciprocal()?)?;
                    Ok(vec![need.then(0, || g.mul(b)?.mul(&recip))?, need.then(1, || g.mul(a)?.neg()?.mul(&recip))?])
                }),
            },
        }
    }
}

/// The gradients of `maximum`, `minimum`, `fmax` and `fmin`, as PyTorch's: each input gets `g`
/// where its value was taken and 0 elsewhere; on a tie both get `g / 2`. Where a NaN is involved,
/// `maximum`/`minimum` give `g` to both, `fmax`/`fmin` to the input that was taken (the first
/// one when both are NaN).
fn extremum_grads(op: Pairwise, g: &Tensor, a: &Tensor, b: &Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
    let (wins, loses) = match op {
        Pairwise::Maximum | Pairwise::Fmax => (Cmp::Gt, Cmp::Lt),
        _ => (Cmp::Lt, Cmp::Gt),
    };
    let tie = a.compare(b, Cmp::Eq)?;
    let half = g.mul_scalar(0.5)?;
    let zero = zero_like(g)?;
    let grad = |x: &Tensor, y: &Tensor, first: bool| -> Result<Tensor> {
        let taken = match op {
            // the input's value is the result unless the other one wins (NaN never does)
            Pairwise::Maximum | Pairwise::Minimum => x.compare(y, loses)?.logical_not()?,
            // the input's value is taken where it wins or the other one is NaN; when both are
            // NaN, the first input's is
            _ => {
                let y_nan = y.compare(y, Cmp::Ne)?;
                let y_nan = if first { y_nan } else { y_nan.logical(&x.compare(x, Cmp::Eq)?, Logical::And)? };
                x.compare(y, wins)?.logical(&y_nan, Logical::Or)?
            }
        };
        Tensor::where_(&tie, &half, &Tensor::where_(&taken, g, &zero)?)
    };
    Ok(vec![need.then(0, || grad(a, b, true))?, need.then(1, || grad(b, a, false))?])
}

/// Python's `%` on integers: the sign of the divisor (wrapping at `i64::MIN % -1`).
fn int_remainder(x: i64, y: i64) -> i64 {
    let r = x.wrapping_rem(y);
    if r != 0 && (r < 0) != (y < 0) {
        r + y
    } else {
        r
    }
}

/// Python's `//` on integers: rounded down.
fn int_floor_divide(x: i64, y: i64) -> i64 {
    let q = x.wrapping_div(y);
    if x.wrapping_rem(y) != 0 && (x < 0) != (y < 0) {
        q - 1
    } else {
        q
    }
}

/// Python's `//` on floats (as CPython's `float_floor_div`): the quotient of the exact remainder
/// decomposition, rounded down; `x // 0` is `x / 0`.
fn floor_divide<T: num_traits::Float>(x: T, y: T) -> T {
    let (zero, one, half) = (T::zero(), T::one(), T::from(0.5).unwrap_or_else(T::one));
    if y == zero {
        return x / y;
    }
    let m = x % y;
    let mut div = (x - m) / y;
    if m != zero && (y < zero) != (m < zero) {
        div = div - one;
    }
    if div == zero {
        return zero.copysign(x / y);
    }
    let floored = div.floor();
    if div - floored > half {
        floored + one
    } else {
        floored
    }
}

/// The backward of a `Pairwise` operation: its row's formula.
struct PairwiseBackward(Pairwise);

impl SingleOutput for PairwiseBackward {
    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let Some(grads) = self.0.row().grads else {
            // only floor_divide has no derivative
            return Err(Error::autograd("derivative for floor_divide is not implemented"));
        };
        let saved = node.unpack_saved()?;
        match saved.as_slice() {
            [a, b] => grads(self.0, &g, a, b, need),
            // `Keep::ForOther` without `b` needing a gradient kept nothing: `a`'s gradient does not
            // read the inputs, so `g` stands in for them.
            [] if !need.get(1) => grads(self.0, &g, &g, &g, need),
            _ => Err(Error::autograd("internal error: a two-input formula lacks its inputs")),
        }
    }
}

impl Tensor {
    /// Applies a two-input element-wise function, with broadcasting and dtype promotion; its row
    /// in `Pairwise::row` says what integer and bool operands do.
    pub fn pairwise(&self, other: &Tensor, op: Pairwise) -> Result<Tensor> {
        let row = op.row();
        let promoted = DType::promote_operands(self.dtype(), self.ndim(), other.dtype(), other.ndim());
        let dt = match (promoted, &row.ints, &row.bools) {
            (DType::Bool, _, Bools::Refused(kernel)) => {
                return Err(Error::dtype(format!("\"{kernel}\" not implemented for 'Bool'")))
            }
            (DType::Bool, _, Bools::ToFloat) => crate::tensor::default_dtype::default_float(),
            (d, Ints::ToFloat, _) if d.is_int() => crate::tensor::default_dtype::default_float(),
            (d, _, _) => d,
        };
        let (a, b) = (self.to_dtype(dt)?, other.to_dtype(dt)?);
        let out = match (dt, &row.ints, &row.bools) {
            (DType::Bool, _, Bools::Exact(f)) => zip(&a, &b, |x: bool, y: bool| f(x, y))?,
            (d, Ints::Exact { f, divides }, _) if d.is_int() => {
                if *divides && b.detach().eq_scalar(0)?.any_true()? {
                    return Err(Error::value("ZeroDivisionError"));
                }
                // Narrow integers compute in i64 and wrap back on store (exact for these functions).
                crate::dispatch_int!(d, T => zip(&a, &b, |x: T, y: T| T::from_i64(f(x.to_i64(), y.to_i64())))?,
                    _ => unreachable!("an integer dtype"))
            }
            _ => (row.float)(&a, &b)?,
        };
        record(row.name, &[&a, &b], &[&out], || {
            let both = vec![Save::Input(a.clone()), Save::Input(b.clone())];
            let saves = match row.keep {
                Keep::Both => both,
                Keep::ForOther if crate::autograd::forward::wants_grad(&b) => both,
                _ => vec![],
            };
            (PairwiseBackward(op), saves)
        });
        Ok(out)
    }

    /// True when any element of a bool tensor is true.
    fn any_true(&self) -> Result<bool> {
        self.with_view(|v: ndarray::ArrayViewD<bool>| v.iter().any(|&x| x))
    }

    /// `max(a, b)`, NaN if either is NaN
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Maximum)
    }
    /// `min(a, b)`, NaN if either is NaN
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Minimum)
    }
    /// `max(a, b)`, ignoring a NaN
    pub fn fmax(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Fmax)
    }
    /// `min(a, b)`, ignoring a NaN
    pub fn fmin(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Fmin)
    }
    /// C's `fmod`: the remainder with the sign of `a`
    pub fn fmod(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Fmod)
    }
    /// Python's `%`: the remainder with the sign of `b`
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Remainder)
    }
    /// Python's `//`: the quotient rounded down
    pub fn floor_divide(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::FloorDivide)
    }
    /// `atan2(a, b)`
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        self.pairwise(other, Pairwise::Atan2)
    }

    /// `self + weight * (end - self)`, with broadcasting.
    pub fn lerp(&self, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
        self.add(&end.sub(self)?.mul(weight)?)
    }

    /// `self + value * t1 * t2`.
    pub fn addcmul(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        self.add(&t1.mul(t2)?.mul_scalar(value)?)
    }

    /// `self + value * t1 / t2`; refused when both `t1` and `t2` are integers, as in PyTorch.
    pub fn addcdiv(&self, t1: &Tensor, t2: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        if !t1.dtype().is_float() && !t2.dtype().is_float() {
            return Err(Error::dtype(
                "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform \
                 a true division of tensor1 and tensor2.",
            ));
        }
        self.add(&t1.div(t2)?.mul_scalar(value)?)
    }
}
