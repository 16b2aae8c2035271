//! Comparisons and logical operations (bool results, no gradient), clamp and where, with their
//! backward formulas.

use ndarray::{IxDyn, Zip};

use super::zero_like;
use crate::autograd::node::Node;
use crate::autograd::record::{record, Save};
use crate::error::{Error, Result};
use crate::ops::formula::{Need, SingleOutput};
use crate::ops::kernel::{map, zip};
use crate::tensor::create::check_alloc;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::element::Element;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{dispatch_all, dispatch_float, dispatch_int};

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

impl SingleOutput for ClampBackward {
    fn input_grads(&self, node: &Node, g: Tensor, _: Need<'_>) -> Result<Vec<Option<Tensor>>> {
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

struct WhereBackward;

impl SingleOutput for WhereBackward {
    fn input_grads(&self, node: &Node, g: Tensor, need: Need<'_>) -> Result<Vec<Option<Tensor>>> {
        let cond = &node.unpack_saved()?[0];
        let zero = zero_like(&g)?;
        Ok(vec![need.then(0, || Tensor::where_(cond, &g, &zero))?, need.then(1, || Tensor::where_(cond, &zero, &g))?])
    }
}

impl Tensor {
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
        // In the result type, as PyTorch: the scalar is converted to it first, so a uint8 tensor
        // compared with 456 sees 200.
        let dt = s.result_dtype_with(self.dtype());
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
            dt if dt.is_int() => dispatch_int!(dt, T => {
                // Only int and bool bounds get here: a float bound made the tensor float32 above.
                let (lo, hi) =
                    (min.map(Scalar::as_i64).unwrap_or(i64::MIN), max.map(Scalar::as_i64).unwrap_or(i64::MAX));
                map(self, move |x: T| T::from_i64(x.to_i64().max(lo).min(hi)))?
            }, _ => unreachable!("an integer dtype")),
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

/// Bitwise operations of bool and integer tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bitwise {
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
    /// `<<` (integers only)
    LeftShift,
    /// `>>` (integers only)
    RightShift,
}

impl Bitwise {
    fn kernel_name(self) -> &'static str {
        match self {
            Bitwise::And => "bitwise_and_cpu",
            Bitwise::Or => "bitwise_or_cpu",
            Bitwise::Xor => "bitwise_xor_cpu",
            Bitwise::LeftShift => "lshift_cpu",
            Bitwise::RightShift => "rshift_cpu",
        }
    }
}

/// `x << s` as PyTorch: 0 when the shift is negative or not below 64.
fn shift_left(x: i64, s: i64) -> i64 {
    if (0..64).contains(&s) {
        x << s
    } else {
        0
    }
}

/// `x >> s` (arithmetic) as PyTorch: the sign when the shift is negative or not below 64.
fn shift_right(x: i64, s: i64) -> i64 {
    if (0..64).contains(&s) {
        x >> s
    } else if x < 0 {
        -1
    } else {
        0
    }
}

impl Tensor {
    /// A bitwise operation of two bool or integer tensors, with broadcasting (bools stay bools;
    /// shifts take integers only). Not differentiable.
    pub fn bitwise(&self, other: &Tensor, op: Bitwise) -> Result<Tensor> {
        let dt = DType::promote_operands(self.dtype(), self.ndim(), other.dtype(), other.ndim());
        let refused =
            |d: DType| Err(Error::dtype(format!("\"{}\" not implemented for '{}'", op.kernel_name(), d.torch_name())));
        let (a, b) = (self.detach().to_dtype(dt)?, other.detach().to_dtype(dt)?);
        match (dt, op) {
            (DType::Bool, Bitwise::And) => zip(&a, &b, |x: bool, y: bool| x & y),
            (DType::Bool, Bitwise::Or) => zip(&a, &b, |x: bool, y: bool| x | y),
            (DType::Bool, Bitwise::Xor) => zip(&a, &b, |x: bool, y: bool| x ^ y),
            // Narrow integers in i64 and wrapped back: exact for every one of these, shifts included
            // (a shift past the type's width leaves 0, or -1 for a negative value shifted right).
            (d, _) if d.is_int() => dispatch_int!(d, T => {
                let f: fn(i64, i64) -> i64 = match op {
                    Bitwise::And => |x, y| x & y,
                    Bitwise::Or => |x, y| x | y,
                    Bitwise::Xor => |x, y| x ^ y,
                    Bitwise::LeftShift => shift_left,
                    Bitwise::RightShift => shift_right,
                };
                zip(&a, &b, move |x: T, y: T| T::from_i64(f(x.to_i64(), y.to_i64())))
            }, _ => unreachable!("an integer dtype")),
            (d, _) => refused(d),
        }
    }

    /// `a & b`
    pub fn bitwise_and(&self, other: &Tensor) -> Result<Tensor> {
        self.bitwise(other, Bitwise::And)
    }
    /// `a | b`
    pub fn bitwise_or(&self, other: &Tensor) -> Result<Tensor> {
        self.bitwise(other, Bitwise::Or)
    }
    /// `a ^ b`
    pub fn bitwise_xor(&self, other: &Tensor) -> Result<Tensor> {
        self.bitwise(other, Bitwise::Xor)
    }
    /// `a << b`
    pub fn bitwise_left_shift(&self, other: &Tensor) -> Result<Tensor> {
        self.bitwise(other, Bitwise::LeftShift)
    }
    /// `a >> b`
    pub fn bitwise_right_shift(&self, other: &Tensor) -> Result<Tensor> {
        self.bitwise(other, Bitwise::RightShift)
    }
    /// `a and b`, each taken as `!= 0`
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        self.logical(other, Logical::And)
    }
    /// `a or b`, each taken as `!= 0`
    pub fn logical_or(&self, other: &Tensor) -> Result<Tensor> {
        self.logical(other, Logical::Or)
    }
    /// `a xor b`, each taken as `!= 0`
    pub fn logical_xor(&self, other: &Tensor) -> Result<Tensor> {
        self.logical(other, Logical::Xor)
    }

    /// `~x`: bitwise not of an integer tensor, logical not of a bool one.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::Bool => self.logical_not(),
            d if d.is_int() => {
                dispatch_int!(d, T => map(&self.detach(), |x: T| !x), _ => unreachable!("an integer dtype"))
            }
            _ => Err(Error::dtype("~ (operator.invert) is only implemented on integer and Boolean-type tensors")),
        }
    }

    /// Where the elements are NaN (never, for integers and bools).
    pub fn isnan(&self) -> Result<Tensor> {
        self.float_test(|v| v.is_nan(), false)
    }

    /// Where the elements are ±inf.
    pub fn isinf(&self) -> Result<Tensor> {
        self.float_test(|v| v.is_infinite(), false)
    }

    /// Where the elements are neither NaN nor ±inf.
    pub fn isfinite(&self) -> Result<Tensor> {
        self.float_test(|v| v.is_finite(), true)
    }

    /// A per-element test of a float tensor (in float64, which keeps NaN and ±inf); `otherwise`
    /// everywhere for integers and bools.
    fn float_test(&self, test: fn(f64) -> bool, otherwise: bool) -> Result<Tensor> {
        let x = self.detach();
        if x.dtype().is_float() {
            dispatch_all!(x.dtype(), T => map(&x, move |v: T| test(v.to_f64())))
        } else {
            Tensor::full(x.shape(), Scalar::Bool(otherwise), DType::Bool)
        }
    }
}
