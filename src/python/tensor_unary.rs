//! Element-wise functions of one tensor under PyTorch's names: each is a `Tensor` method, an in-place
//! method (`exp_`) and a function (`tg.exp`), calling the core's operation of that name (the core's
//! table is `Unary::entry` in `src/ops/elementwise/unary.rs`). The ones without parameters are one row
//! each of `unary_bindings!`; the activations with parameters, `round`, `clamp` and the NaN/inf tests
//! follow.

use pyo3::prelude::*;

use super::convert::tensor_arg;
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::{Result, Tensor};

/// `f(t)` as a Python tensor, through the gateway (NOTE [The gateway]): a kernel over `t`'s elements.
pub(super) fn run(py: Python<'_>, t: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor> + Send) -> PyResult<Py<PyAny>> {
    enter_tensor(py, Cost::Elements(t.numel()), || f(t))
}

/// Stores `f(old value)` in the tensor (the in-place form `op`) and returns the same object.
pub(super) fn in_place<'py>(
    slf: Bound<'py, PyTensor>,
    op: &'static str,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> PyResult<Bound<'py, PyTensor>> {
    slf.get().inner.apply_inplace(op, &[], f)?;
    Ok(slf)
}

/// For each `name, name_: doc`, the method `Tensor.name()`, the in-place method `Tensor.name_()`
/// and the function `tg.name(input)`, calling `Tensor::name` of the core; `register_unary` adds
/// the functions to the module.
macro_rules! unary_bindings {
    ($($name:ident, $inplace:ident: $doc:literal;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = $doc]
                fn $name(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
                    run(py, &self.inner, |t| t.$name())
                }
                #[doc = concat!("`", stringify!($name), "` in place; returns the tensor.")]
                fn $inplace(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                    in_place(slf, stringify!($inplace), |t| t.$name())
                }
            )*
        }

        $(
            #[doc = $doc]
            #[pyfunction]
            fn $name(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
                run(py, &input.inner, |t| t.$name())
            }
        )*

        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

unary_bindings! {
    neg, neg_: "`-input`.\n\n\
        >>> import tapegrad as tg\n>>> tg.neg(tg.tensor([1., -2.]))\ntensor([-1.,  2.])";
    abs, abs_: "The absolute value, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.abs(tg.tensor([-1.5, 2.0]))\ntensor([1.5000, 2.0000])";
    exp, exp_: "`e ** input`, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.exp(tg.tensor([0.]))\ntensor([1.])";
    log, log_: "The natural logarithm, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.log(tg.tensor([1.]))\ntensor([0.])";
    sqrt, sqrt_: "The square root, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.sqrt(tg.tensor([4., 9.]))\ntensor([2., 3.])";
    sin, sin_: "The sine, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.sin(tg.tensor([0.]))\ntensor([0.])";
    cos, cos_: "The cosine, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.cos(tg.tensor([0.]))\ntensor([1.])";
    tanh, tanh_: "The hyperbolic tangent, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.tanh(tg.tensor([0.]))\ntensor([0.])";
    sigmoid, sigmoid_: "`1 / (1 + exp(-input))`, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.sigmoid(tg.tensor([0.]))\ntensor([0.5000])";
    relu, relu_: "`max(input, 0)`, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.relu(tg.tensor([-1., 2.]))\ntensor([0., 2.])";
    log1p, log1p_: "`ln(1 + input)`, elementwise, accurate for small values.\n\n\
        >>> import tapegrad as tg\n>>> tg.log1p(tg.tensor([0., 1.]))\ntensor([0.0000, 0.6931])";
    expm1, expm1_: "`e ** input - 1`, elementwise, accurate for small values.\n\n\
        >>> import tapegrad as tg\n>>> tg.expm1(tg.tensor([0., 1.]))\ntensor([0.0000, 1.7183])";
    log2, log2_: "The base-2 logarithm, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.log2(tg.tensor([1., 8.]))\ntensor([0., 3.])";
    log10, log10_: "The base-10 logarithm, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.log10(tg.tensor([1., 100.]))\ntensor([0., 2.])";
    exp2, exp2_: "`2 ** input`, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.exp2(tg.tensor([0., 3.]))\ntensor([1., 8.])";
    rsqrt, rsqrt_: "`1 / sqrt(input)`, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.rsqrt(tg.tensor([4., 0.25]))\ntensor([0.5000, 2.0000])";
    square, square_: "`input * input`, elementwise (integers stay integers; bools give int64).\n\n\
        >>> import tapegrad as tg\n>>> tg.square(tg.tensor([-2, 3]))\ntensor([4, 9])";
    reciprocal, reciprocal_: "`1 / input`, elementwise (integers give float32).\n\n\
        >>> import tapegrad as tg\n>>> tg.reciprocal(tg.tensor([2., -4.]))\ntensor([ 0.5000, -0.2500])";
    sign, sign_: "-1, 0 or 1 by the sign of each element (0 for NaN; bools stay bools).\n\n\
        >>> import tapegrad as tg\n>>> tg.sign(tg.tensor([-2., 0., 3.]))\ntensor([-1.,  0.,  1.])";
    floor, floor_: "Each element rounded down (integers unchanged); the gradient is 0.\n\n\
        >>> import tapegrad as tg\n>>> tg.floor(tg.tensor([-1.5, 1.5]))\ntensor([-2.,  1.])";
    ceil, ceil_: "Each element rounded up (integers unchanged); the gradient is 0.\n\n\
        >>> import tapegrad as tg\n>>> tg.ceil(tg.tensor([-1.5, 1.5]))\ntensor([-1.,  2.])";
    trunc, trunc_: "Each element rounded toward zero (integers unchanged); the gradient is 0.\n\n\
        >>> import tapegrad as tg\n>>> tg.trunc(tg.tensor([-1.5, 1.5]))\ntensor([-1.,  1.])";
    frac, frac_: "`input - trunc(input)`, elementwise (floats only).\n\n\
        >>> import tapegrad as tg\n>>> tg.frac(tg.tensor([-1.5, 2.25]))\ntensor([-0.5000,  0.2500])";
    tan, tan_: "The tangent, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.tan(tg.tensor([0.]))\ntensor([0.])";
    asin, asin_: "The arcsine, elementwise (NaN outside [-1, 1]).\n\n\
        >>> import tapegrad as tg\n>>> tg.asin(tg.tensor([0., 1.]))\ntensor([0.0000, 1.5708])";
    acos, acos_: "The arccosine, elementwise (NaN outside [-1, 1]).\n\n\
        >>> import tapegrad as tg\n>>> tg.acos(tg.tensor([1., 0.]))\ntensor([0.0000, 1.5708])";
    atan, atan_: "The arctangent, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.atan(tg.tensor([0., 1.]))\ntensor([0.0000, 0.7854])";
    sinh, sinh_: "The hyperbolic sine, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.sinh(tg.tensor([0., 1.]))\ntensor([0.0000, 1.1752])";
    cosh, cosh_: "The hyperbolic cosine, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.cosh(tg.tensor([0., 1.]))\ntensor([1.0000, 1.5431])";
    asinh, asinh_: "The inverse hyperbolic sine, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.asinh(tg.tensor([0., 1.]))\ntensor([0.0000, 0.8814])";
    acosh, acosh_: "The inverse hyperbolic cosine, elementwise (NaN below 1).\n\n\
        >>> import tapegrad as tg\n>>> tg.acosh(tg.tensor([1., 2.]))\ntensor([0.0000, 1.3170])";
    atanh, atanh_: "The inverse hyperbolic tangent, elementwise (±inf at ±1).\n\n\
        >>> import tapegrad as tg\n>>> tg.atanh(tg.tensor([0., 0.5]))\ntensor([0.0000, 0.5493])";
    erf, erf_: "The error function, elementwise.\n\n\
        >>> import tapegrad as tg\n>>> tg.erf(tg.tensor([0., 1.]))\ntensor([0.0000, 0.8427])";
    erfc, erfc_: "`1 - erf(input)`, elementwise, accurate where erf is near 1.\n\n\
        >>> import tapegrad as tg\n>>> tg.erfc(tg.tensor([0., 3.]))\ntensor([1.0000e+00, 2.2090e-05])";
    erfinv, erfinv_: "The inverse error function, elementwise (±inf at ±1, NaN outside [-1, 1]).\n\n\
        >>> import tapegrad as tg\n>>> tg.erfinv(tg.tensor([0., 0.5, 1.]))\ntensor([0.0000, 0.4769,    inf])";
}

#[pymethods]
impl PyTensor {
    /// Each element rounded to `decimals` digits after the point (before it when negative), halves
    /// to even; integers are unchanged (with `decimals=0`). The gradient is 0.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0.5, 1.5, 2.5, 1.234]).round()
    /// tensor([0., 2., 2., 1.])
    /// >>> tg.tensor([1.234, 1250.]).round(decimals=2).tolist()[0]
    /// 1.2300000190734863
    #[pyo3(signature = (decimals=0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.round(decimals))
    }
    /// `round` in place; returns the tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> t = tg.tensor([2.5])
    /// >>> t.round_()
    /// tensor([2.])
    #[pyo3(signature = (decimals=0))]
    fn round_(slf: Bound<'_, Self>, decimals: i64) -> PyResult<Bound<'_, Self>> {
        in_place(slf, "round_", |t| t.round(decimals))
    }
}

/// Each element rounded to `decimals` digits, halves to even (see `Tensor.round`).
///
/// >>> import tapegrad as tg
/// >>> tg.round(tg.tensor([0.5, 1.5, 2.5]))
/// tensor([0., 2., 2.])
#[pyfunction]
#[pyo3(signature = (input, decimals=0))]
fn round(py: Python<'_>, input: PyRef<'_, PyTensor>, decimals: i64) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.round(decimals))
}

/// `f(input)`, or with `inplace` the same written into `input` (the in-place form `op`), which is
/// returned.
fn activation(
    py: Python<'_>,
    input: Bound<'_, PyTensor>,
    inplace: bool,
    op: &'static str,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync,
) -> PyResult<Py<PyAny>> {
    if inplace {
        return Ok(in_place(input, op, f)?.into_any().unbind());
    }
    run(py, &input.get().inner, f)
}

/// `input * sigmoid(input)` (also called swish).
///
/// >>> import tapegrad as tg
/// >>> tg.silu(tg.tensor([0., 1.]))
/// tensor([0.0000, 0.7311])
#[pyfunction]
#[pyo3(signature = (input, inplace=false))]
fn silu(py: Python<'_>, input: Bound<'_, PyTensor>, inplace: bool) -> PyResult<Py<PyAny>> {
    activation(py, input, inplace, "silu_", |t| t.silu())
}

/// `input * Φ(input)` with Φ the standard normal distribution function, or with
/// `approximate='tanh'` its tanh approximation.
///
/// >>> import tapegrad as tg
/// >>> tg.gelu(tg.tensor([0., 1.]))
/// tensor([0.0000, 0.8413])
/// >>> tg.gelu(tg.tensor([1.]), approximate='tanh')
/// tensor([0.8412])
#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
fn gelu(py: Python<'_>, input: Bound<'_, PyTensor>, approximate: &str) -> PyResult<Py<PyAny>> {
    let tanh = match approximate {
        "none" => false,
        "tanh" => true,
        _ => return Err(crate::Error::value("approximate argument must be either none or tanh.").into()),
    };
    activation(py, input, false, "gelu_", move |t| t.gelu(tanh))
}

/// `input` where positive, else `alpha * (exp(input) - 1)`.
///
/// >>> import tapegrad as tg
/// >>> tg.elu(tg.tensor([-1., 2.]))
/// tensor([-0.6321,  2.0000])
#[pyfunction]
#[pyo3(signature = (input, alpha=1.0, inplace=false))]
fn elu(py: Python<'_>, input: Bound<'_, PyTensor>, alpha: f64, inplace: bool) -> PyResult<Py<PyAny>> {
    activation(py, input, inplace, "elu_", move |t| t.elu(alpha))
}

/// `elu` scaled with the self-normalizing constants (alpha ≈ 1.6733, scale ≈ 1.0507).
///
/// >>> import tapegrad as tg
/// >>> tg.selu(tg.tensor([-1., 1.]))
/// tensor([-1.1113,  1.0507])
#[pyfunction]
#[pyo3(signature = (input, inplace=false))]
fn selu(py: Python<'_>, input: Bound<'_, PyTensor>, inplace: bool) -> PyResult<Py<PyAny>> {
    activation(py, input, inplace, "selu_", |t| t.selu())
}

/// `input` where positive, else `negative_slope * input`.
///
/// >>> import tapegrad as tg
/// >>> tg.leaky_relu(tg.tensor([-2., 3.]), 0.1)
/// tensor([-0.2000,  3.0000])
#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01, inplace=false))]
fn leaky_relu(py: Python<'_>, input: Bound<'_, PyTensor>, negative_slope: f64, inplace: bool) -> PyResult<Py<PyAny>> {
    activation(py, input, inplace, "leaky_relu_", move |t| t.leaky_relu(negative_slope))
}

/// `input` clamped to `[min_val, max_val]`; the gradient is 0 on and outside the bounds.
///
/// >>> import tapegrad as tg
/// >>> tg.hardtanh(tg.tensor([-2., 0.5, 3.]))
/// tensor([-1.0000,  0.5000,  1.0000])
#[pyfunction]
#[pyo3(
    signature = (input, min_val=-1.0, max_val=1.0, inplace=false),
    text_signature = "(input, min_val=-1.0, max_val=1.0, inplace=False)"
)]
fn hardtanh(
    py: Python<'_>,
    input: Bound<'_, PyTensor>,
    min_val: f64,
    max_val: f64,
    inplace: bool,
) -> PyResult<Py<PyAny>> {
    activation(py, input, inplace, "hardtanh_", move |t| t.hardtanh(min_val, max_val))
}

/// `log(1 + exp(beta * input)) / beta`, and `input` itself where `beta * input > threshold`.
///
/// >>> import tapegrad as tg
/// >>> tg.softplus(tg.tensor([0., 30.]))
/// tensor([ 0.6931, 30.0000])
#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
fn softplus(py: Python<'_>, input: Bound<'_, PyTensor>, beta: f64, threshold: f64) -> PyResult<Py<PyAny>> {
    activation(py, input, false, "softplus_", move |t| t.softplus(beta, threshold))
}

/// `log(sigmoid(input))`, computed without overflow.
///
/// >>> import tapegrad as tg
/// >>> tg.logsigmoid(tg.tensor([0., -100.]))
/// tensor([  -0.6931, -100.0000])
#[pyfunction]
fn logsigmoid(py: Python<'_>, input: Bound<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    activation(py, input, false, "logsigmoid_", |t| t.logsigmoid())
}

#[pymethods]
impl PyTensor {
    /// `~self` written as a method: bitwise not of integers, logical not of bools.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0, 5]).bitwise_not()
    /// tensor([-1, -6])
    fn bitwise_not(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.bitwise_not())
    }

    /// Elementwise `not self`, each element taken as `!= 0`; a bool tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([2., 0.]).logical_not()
    /// tensor([False,  True])
    fn logical_not(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.logical_not())
    }

    /// Where the elements are NaN.
    ///
    /// >>> import math
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1., math.nan]).isnan()
    /// tensor([False,  True])
    fn isnan(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.isnan())
    }

    /// Where the elements are infinite.
    ///
    /// >>> import math
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1., -math.inf]).isinf()
    /// tensor([False,  True])
    fn isinf(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.isinf())
    }

    /// Where the elements are finite (neither NaN nor infinite).
    ///
    /// >>> import math
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1., math.nan, math.inf]).isfinite()
    /// tensor([ True, False, False])
    fn isfinite(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.isfinite())
    }

    /// NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default the dtype's largest
    /// and lowest finite values); the gradient is 0 where the element was not finite.
    ///
    /// >>> import math
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([math.nan, 1.]).nan_to_num()
    /// tensor([0., 1.])
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(&self, py: Python<'_>, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> PyResult<Py<PyAny>> {
        run(py, &self.inner, |t| t.nan_to_num(nan, posinf, neginf))
    }

    /// `nan_to_num` in place; returns the tensor.
    ///
    /// >>> import math
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([math.inf, 1.]).nan_to_num_(posinf=9.)
    /// tensor([9., 1.])
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: Bound<'_, Self>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Bound<'_, Self>> {
        in_place(slf, "nan_to_num_", |t| t.nan_to_num(nan, posinf, neginf))
    }
}

/// `~input` as a function: bitwise not of integers, logical not of bools.
///
/// >>> import tapegrad as tg
/// >>> tg.bitwise_not(tg.tensor([True, False]))
/// tensor([False,  True])
#[pyfunction]
fn bitwise_not(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.bitwise_not())
}

/// Elementwise `not input`, each element taken as `!= 0`.
///
/// >>> import tapegrad as tg
/// >>> tg.logical_not(tg.tensor([0, 3]))
/// tensor([ True, False])
#[pyfunction]
fn logical_not(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.logical_not())
}

/// Where the elements of `input` are NaN.
///
/// >>> import math
/// >>> import tapegrad as tg
/// >>> tg.isnan(tg.tensor([math.nan, 0.]))
/// tensor([ True, False])
#[pyfunction]
fn isnan(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.isnan())
}

/// Where the elements of `input` are infinite.
///
/// >>> import math
/// >>> import tapegrad as tg
/// >>> tg.isinf(tg.tensor([math.inf, 0.]))
/// tensor([ True, False])
#[pyfunction]
fn isinf(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.isinf())
}

/// Where the elements of `input` are finite.
///
/// >>> import math
/// >>> import tapegrad as tg
/// >>> tg.isfinite(tg.tensor([math.inf, 0.]))
/// tensor([False,  True])
#[pyfunction]
fn isfinite(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.isfinite())
}

/// NaN, +inf and -inf of `input` replaced by finite values (see `Tensor.nan_to_num`).
///
/// >>> import math
/// >>> import tapegrad as tg
/// >>> tg.nan_to_num(tg.tensor([math.nan, -math.inf]), neginf=-1.)
/// tensor([ 0., -1.])
#[pyfunction]
#[pyo3(signature = (input, nan=0.0, posinf=None, neginf=None))]
fn nan_to_num(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> PyResult<Py<PyAny>> {
    run(py, &input.inner, |t| t.nan_to_num(nan, posinf, neginf))
}

/// The number bounds of `clamp`: each None or a Python number (the core decides the dtype from
/// their kinds, `Tensor::clamp_result_dtype`).
fn clamp_bounds(
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<crate::Scalar>, Option<crate::Scalar>)> {
    let value = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<crate::Scalar>> {
        let Some(b) = b.filter(|b| !b.is_none()) else { return Ok(None) };
        match super::convert::scalar(b) {
            Some(s) => Ok(Some(s)),
            None => Err(Error::Type(format!("clamp(): a bound must be a number, got {}", b.get_type().name()?)).into()),
        }
    };
    Ok((value(min)?, value(max)?))
}

/// The bounds of `clamp` as tensors when at least one of them is a tensor (a number beside a tensor
/// becomes a 0-d tensor); None when both are numbers or missing.
fn tensor_bounds(
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<(Option<Tensor>, Option<Tensor>)>> {
    let (min, max) = (min.filter(|b| !b.is_none()), max.filter(|b| !b.is_none()));
    let is_tensor = |b: Option<&Bound<'_, PyAny>>| b.is_some_and(|b| b.cast::<PyTensor>().is_ok());
    if !is_tensor(min) && !is_tensor(max) {
        return Ok(None);
    }
    let as_tensor = |b: Option<&Bound<'_, PyAny>>| b.map(|b| tensor_arg(b, None)).transpose();
    Ok(Some((as_tensor(min)?, as_tensor(max)?)))
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(bounds) = tensor_bounds(min, max)? {
            let (lo, hi) = bounds;
            let cost = Cost::Elements(self.inner.numel());
            return enter_tensor(py, cost, || self.inner.clamp_tensors(lo.as_ref(), hi.as_ref()));
        }
        let (lo, hi) = clamp_bounds(min, max)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.clamp_scalar(lo, hi))
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (py, t) = (slf.py(), &slf.get().inner);
        let cost = Cost::Elements(t.numel());
        if let Some((lo, hi)) = tensor_bounds(min, max)? {
            enter(py, cost, || t.clamp_tensors_(lo.as_ref(), hi.as_ref()))?;
            return Ok(slf);
        }
        let (lo, hi) = clamp_bounds(min, max)?;
        enter(py, cost, || t.clamp_scalar_(lo, hi))?;
        Ok(slf)
    }
}

/// Adds this file's functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)?;
    for f in [
        wrap_pyfunction!(round, m)?,
        wrap_pyfunction!(silu, m)?,
        wrap_pyfunction!(gelu, m)?,
        wrap_pyfunction!(elu, m)?,
        wrap_pyfunction!(selu, m)?,
        wrap_pyfunction!(leaky_relu, m)?,
        wrap_pyfunction!(hardtanh, m)?,
        wrap_pyfunction!(softplus, m)?,
        wrap_pyfunction!(logsigmoid, m)?,
        wrap_pyfunction!(bitwise_not, m)?,
        wrap_pyfunction!(logical_not, m)?,
        wrap_pyfunction!(isnan, m)?,
        wrap_pyfunction!(isinf, m)?,
        wrap_pyfunction!(isfinite, m)?,
        wrap_pyfunction!(nan_to_num, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
