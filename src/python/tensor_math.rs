//! Element-wise math under PyTorch's names: each operation is a `Tensor` method, an in-place
//! method (`log1p_`) and a function (`tg.log1p`), all calling the core's operation of that name.
//! The one-input operations without parameters are listed once, in `unary_bindings!` below.

use pyo3::prelude::*;

use super::convert::{operand, tensor_arg, Operand};
use super::gateway::{enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::ops::elementwise::Bitwise;
use crate::{Result, Tensor};

/// `f(t)` as a Python tensor, through the gateway (NOTE [The gateway]): a kernel over `t`'s elements.
fn run(py: Python<'_>, t: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor> + Send) -> PyResult<Py<PyAny>> {
    enter_tensor(py, Cost::Elements(t.numel()), || f(t))
}

/// Stores `f(old value)` in the tensor (the in-place form `op`) and returns the same object.
fn in_place<'py>(
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

/// In-place forms of the one-input operations whose method is in `tensor_ops.rs`.
macro_rules! in_place_bindings {
    ($($name:ident, $inplace:ident;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = concat!("`", stringify!($name), "` in place; returns the tensor.\n\n",
                    ">>> import tapegrad as tg\n>>> t = tg.tensor([0.])\n>>> t.", stringify!($inplace), "() is t\nTrue")]
                fn $inplace(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                    in_place(slf, stringify!($inplace), |t| t.$name())
                }
            )*
        }
    };
}

in_place_bindings! {
    neg, neg_;
    abs, abs_;
    exp, exp_;
    log, log_;
    sqrt, sqrt_;
    sin, sin_;
    cos, cos_;
    tanh, tanh_;
    sigmoid, sigmoid_;
    relu, relu_;
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

/// For each `name[, name_]: doc`, the method `Tensor.name(other)`, its in-place form when named,
/// and the function `tg.name(input, other)`, calling `Tensor::name` of the core; `other` may be a
/// tensor, a number or an array-like. `register_pairwise` adds the functions to the module.
macro_rules! pairwise_bindings {
    ($($name:ident $(, $inplace:ident)?: $doc:literal;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = $doc]
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    let o = tensor_arg(other, Some(self.inner.dtype()))?;
                    run(py, &self.inner, move |t| t.$name(&o))
                }
                $(
                    #[doc = concat!("`", stringify!($name), "` in place; returns the tensor.\n\n",
                        ">>> import tapegrad as tg\n>>> t = tg.tensor([5.])\n>>> t.", stringify!($inplace), "(2.) is t\nTrue")]
                    fn $inplace<'py>(slf: Bound<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
                        let o = tensor_arg(other, Some(slf.get().inner.dtype()))?;
                        slf.get().inner.apply_inplace(stringify!($inplace), &[&o], |t| t.$name(&o))?;
                        Ok(slf)
                    }
                )?
            )*
        }

        $(
            #[doc = $doc]
            #[pyfunction]
            fn $name(py: Python<'_>, input: PyRef<'_, PyTensor>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                let o = tensor_arg(other, Some(input.inner.dtype()))?;
                run(py, &input.inner, move |t| t.$name(&o))
            }
        )*

        fn register_pairwise(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

pairwise_bindings! {
    maximum: "The larger of each pair of elements (NaN if either is NaN); ties share the gradient.\n\n\
        >>> import tapegrad as tg\n>>> tg.maximum(tg.tensor([1., 5.]), tg.tensor([3., 2.]))\ntensor([3., 5.])";
    minimum: "The smaller of each pair of elements (NaN if either is NaN); ties share the gradient.\n\n\
        >>> import tapegrad as tg\n>>> tg.minimum(tg.tensor([1., 5.]), tg.tensor([3., 2.]))\ntensor([1., 2.])";
    fmax: "The larger of each pair of elements, ignoring a NaN.\n\n\
        >>> import math\n>>> import tapegrad as tg\n>>> tg.fmax(tg.tensor([math.nan, 1.]), tg.tensor([2., 3.]))\ntensor([2., 3.])";
    fmin: "The smaller of each pair of elements, ignoring a NaN.\n\n\
        >>> import math\n>>> import tapegrad as tg\n>>> tg.fmin(tg.tensor([math.nan, 1.]), tg.tensor([2., 3.]))\ntensor([2., 1.])";
    fmod, fmod_: "The remainder of the division truncated toward zero (the sign of the dividend), as C's fmod.\n\n\
        >>> import tapegrad as tg\n>>> tg.fmod(tg.tensor([-5., 5.]), 3)\ntensor([-2.,  2.])";
    remainder, remainder_: "The remainder of the division rounded down (the sign of the divisor), as Python's %.\n\n\
        >>> import tapegrad as tg\n>>> tg.remainder(tg.tensor([-5., 5.]), 3)\ntensor([1., 2.])";
    floor_divide, floor_divide_: "The quotient rounded down, as Python's //; not differentiable.\n\n\
        >>> import tapegrad as tg\n>>> tg.floor_divide(tg.tensor([-5, 5]), 3)\ntensor([-2,  1])";
    atan2, atan2_: "The angle of the point (other, input), in (-pi, pi].\n\n\
        >>> import tapegrad as tg\n>>> tg.atan2(tg.tensor([1.]), tg.tensor([-1.]))\ntensor([2.3562])";
    bitwise_and: "Bitwise and of bool or integer tensors (`&`).\n\n\
        >>> import tapegrad as tg\n>>> tg.bitwise_and(tg.tensor([12]), 10)\ntensor([8])";
    bitwise_or: "Bitwise or of bool or integer tensors (`|`).\n\n\
        >>> import tapegrad as tg\n>>> tg.bitwise_or(tg.tensor([12]), 10)\ntensor([14])";
    bitwise_xor: "Bitwise exclusive or of bool or integer tensors (`^`).\n\n\
        >>> import tapegrad as tg\n>>> tg.bitwise_xor(tg.tensor([12]), 10)\ntensor([6])";
    bitwise_left_shift: "`input << other` on integers (0 for shifts below 0 or from 64 on).\n\n\
        >>> import tapegrad as tg\n>>> tg.bitwise_left_shift(tg.tensor([3]), 2)\ntensor([12])";
    bitwise_right_shift: "`input >> other` on integers, arithmetic (keeps the sign).\n\n\
        >>> import tapegrad as tg\n>>> tg.bitwise_right_shift(tg.tensor([-8]), 2)\ntensor([-2])";
    logical_and: "Elementwise `input and other`, each taken as `!= 0`; a bool tensor.\n\n\
        >>> import tapegrad as tg\n>>> tg.logical_and(tg.tensor([2., 0.]), tg.tensor([1, 1]))\ntensor([ True, False])";
    logical_or: "Elementwise `input or other`, each taken as `!= 0`; a bool tensor.\n\n\
        >>> import tapegrad as tg\n>>> tg.logical_or(tg.tensor([2., 0.]), tg.tensor([0, 0]))\ntensor([ True, False])";
    logical_xor: "Elementwise `input xor other`, each taken as `!= 0`; a bool tensor.\n\n\
        >>> import tapegrad as tg\n>>> tg.logical_xor(tg.tensor([2., 0.]), tg.tensor([1, 1]))\ntensor([False,  True])";
}

/// `op` of the tensor with an operand for a dunder: `NotImplemented` for an unknown operand type;
/// `reflected` swaps the sides (`3 // t`).
fn dunder(
    slf: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    reflected: bool,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    let t = &slf.inner;
    let o = match operand(other) {
        Some(Operand::Tensor(o)) => o,
        Some(Operand::Scalar(s)) => Tensor::scalar_tensor(s, s.result_dtype_with(t.dtype()))?,
        None => return Ok(py.NotImplemented()),
    };
    run(py, t, move |t| if reflected { f(&o, t) } else { f(t, &o) })
}

/// An augmented assignment (`t //= 2`): the in-place form `op` of `f`.
fn augmented<'py>(
    slf: Bound<'py, PyTensor>,
    other: &Bound<'_, PyAny>,
    op: &'static str,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> PyResult<Bound<'py, PyTensor>> {
    let o = tensor_arg(other, Some(slf.get().inner.dtype()))?;
    slf.get().inner.apply_inplace(op, &[&o], |t| f(t, &o))?;
    Ok(slf)
}

#[pymethods]
impl PyTensor {
    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, false, Tensor::floor_divide)
    }
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, true, Tensor::floor_divide)
    }
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, false, Tensor::remainder)
    }
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, true, Tensor::remainder)
    }
    fn __lshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, false, |a, b| a.bitwise(b, Bitwise::LeftShift))
    }
    fn __rlshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, true, |a, b| a.bitwise(b, Bitwise::LeftShift))
    }
    fn __rshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, false, |a, b| a.bitwise(b, Bitwise::RightShift))
    }
    fn __rrshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, py, o, true, |a, b| a.bitwise(b, Bitwise::RightShift))
    }
    fn __ifloordiv__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        augmented(slf, o, "floor_divide_", Tensor::floor_divide).map(|_| ())
    }
    fn __imod__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        augmented(slf, o, "remainder_", Tensor::remainder).map(|_| ())
    }
    fn __ilshift__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        augmented(slf, o, "bitwise_left_shift_", |a, b| a.bitwise(b, Bitwise::LeftShift)).map(|_| ())
    }
    fn __irshift__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        augmented(slf, o, "bitwise_right_shift_", |a, b| a.bitwise(b, Bitwise::RightShift)).map(|_| ())
    }

    /// `self ** exponent` in place; returns the tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> t = tg.tensor([2., 3.])
    /// >>> t.pow_(2)
    /// tensor([4., 9.])
    fn pow_<'py>(slf: Bound<'py, Self>, exponent: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        if let Some(s) = super::convert::scalar(exponent) {
            slf.get().inner.apply_inplace("pow_", &[], |t| t.pow_scalar(s))?;
            return Ok(slf);
        }
        augmented(slf, exponent, "pow_", Tensor::pow)
    }

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

    /// `self + weight * (end - self)`; `weight` a number or a tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0., 10.]).lerp(tg.tensor([10., 20.]), 0.25)
    /// tensor([ 2.5000, 12.5000])
    fn lerp(&self, py: Python<'_>, end: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (e, w) = lerp_args(&self.inner, end, weight)?;
        run(py, &self.inner, move |t| t.lerp(&e, &w))
    }

    /// `lerp` in place; returns the tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0.]).lerp_(tg.tensor([4.]), 0.5)
    /// tensor([2.])
    fn lerp_<'py>(
        slf: Bound<'py, Self>,
        end: &Bound<'_, PyAny>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (e, w) = lerp_args(&slf.get().inner, end, weight)?;
        slf.get().inner.apply_inplace("lerp_", &[&e, &w], |t| t.lerp(&e, &w))?;
        Ok(slf)
    }

    /// `self + value * tensor1 * tensor2`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1.]).addcmul(tg.tensor([2.]), tg.tensor([3.]), value=0.5)
    /// tensor([4.])
    #[pyo3(signature = (tensor1, tensor2, value=None))]
    fn addcmul(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (a, b, v) = addc_args(&self.inner, tensor1, tensor2, value)?;
        run(py, &self.inner, move |t| t.addcmul(&a, &b, v))
    }

    /// `addcmul` in place; returns the tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1.]).addcmul_(tg.tensor([2.]), tg.tensor([3.]))
    /// tensor([7.])
    #[pyo3(signature = (tensor1, tensor2, value=None))]
    fn addcmul_<'py>(
        slf: Bound<'py, Self>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b, v) = addc_args(&slf.get().inner, tensor1, tensor2, value)?;
        slf.get().inner.apply_inplace("addcmul_", &[&a, &b], |t| t.addcmul(&a, &b, v))?;
        Ok(slf)
    }

    /// `self + value * tensor1 / tensor2` (refused when both are integers, as PyTorch).
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1.]).addcdiv(tg.tensor([3.]), tg.tensor([2.]), value=2)
    /// tensor([4.])
    #[pyo3(signature = (tensor1, tensor2, value=None))]
    fn addcdiv(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (a, b, v) = addc_args(&self.inner, tensor1, tensor2, value)?;
        run(py, &self.inner, move |t| t.addcdiv(&a, &b, v))
    }

    /// `addcdiv` in place; returns the tensor.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1.]).addcdiv_(tg.tensor([3.]), tg.tensor([2.]))
    /// tensor([2.5000])
    #[pyo3(signature = (tensor1, tensor2, value=None))]
    fn addcdiv_<'py>(
        slf: Bound<'py, Self>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b, v) = addc_args(&slf.get().inner, tensor1, tensor2, value)?;
        slf.get().inner.apply_inplace("addcdiv_", &[&a, &b], |t| t.addcdiv(&a, &b, v))?;
        Ok(slf)
    }
}

/// `lerp`'s `end` and `weight` as tensors (a number weight as a 0-d tensor of the input's dtype).
fn lerp_args(t: &Tensor, end: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>) -> PyResult<(Tensor, Tensor)> {
    let weight_is_tensor = weight.cast::<PyTensor>().is_ok();
    // As PyTorch: lerp is defined for floating-point tensors only, and a tensor `end` or `weight`
    // must have the input's dtype (no promotion).
    if !t.dtype().is_float() {
        let kernel = if weight_is_tensor { "lerp_kernel_tensor" } else { "lerp_kernel_scalar" };
        return Err(not_implemented_for(kernel, t.dtype()));
    }
    let (e, w) = (tensor_arg(end, Some(t.dtype()))?, tensor_arg(weight, Some(t.dtype()))?);
    for (name, x, is_tensor) in [("end", &e, true), ("weight", &w, weight_is_tensor)] {
        if is_tensor && x.dtype() != t.dtype() {
            return Err(crate::error::Error::dtype(format!(
                "expected dtype {} for `{name}` but got dtype {}",
                t.dtype(),
                x.dtype()
            ))
            .into());
        }
    }
    Ok((e, w))
}

/// PyTorch's refusal of a dtype that a kernel has no implementation for: `NotImplementedError`.
pub(crate) fn not_implemented_for(kernel: &str, dtype: crate::tensor::dtype::DType) -> PyErr {
    crate::error::Error::NotImplemented(format!("\"{kernel}\" not implemented for '{}'", dtype.torch_name())).into()
}

/// `addcmul`/`addcdiv`'s tensors and `value` (1 when absent; it must be a number).
fn addc_args(
    t: &Tensor,
    t1: &Bound<'_, PyAny>,
    t2: &Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Tensor, Tensor, crate::Scalar)> {
    let v = match value {
        None => crate::Scalar::Int(1),
        Some(v) => super::convert::scalar(v)
            .ok_or_else(|| crate::error::Error::Type("addcmul/addcdiv: value must be a number".into()))?,
    };
    let (a, b) = (tensor_arg(t1, Some(t.dtype()))?, tensor_arg(t2, Some(t.dtype()))?);
    // Three bool tensors: PyTorch has no bool kernel (anything else promotes away from bool).
    if [t, &a, &b].iter().all(|x| x.dtype() == crate::tensor::dtype::DType::Bool) {
        return Err(not_implemented_for("addcmul_cpu_out", crate::tensor::dtype::DType::Bool));
    }
    Ok((a, b, v))
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

/// `input + weight * (end - input)`.
///
/// >>> import tapegrad as tg
/// >>> tg.lerp(tg.tensor([0.]), tg.tensor([8.]), 0.25)
/// tensor([2.])
#[pyfunction]
fn lerp(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    end: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    input.lerp(py, end, weight)
}

/// `input + value * tensor1 * tensor2`.
///
/// >>> import tapegrad as tg
/// >>> tg.addcmul(tg.tensor([1.]), tg.tensor([2.]), tg.tensor([3.]))
/// tensor([7.])
#[pyfunction]
#[pyo3(signature = (input, tensor1, tensor2, value=None))]
fn addcmul(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    input.addcmul(py, tensor1, tensor2, value)
}

/// `input + value * tensor1 / tensor2`.
///
/// >>> import tapegrad as tg
/// >>> tg.addcdiv(tg.tensor([1.]), tg.tensor([3.]), tg.tensor([2.]))
/// tensor([2.5000])
#[pyfunction]
#[pyo3(signature = (input, tensor1, tensor2, value=None))]
fn addcdiv(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    input.addcdiv(py, tensor1, tensor2, value)
}

/// Adds this file's functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)?;
    register_pairwise(m)?;
    for f in [
        wrap_pyfunction!(bitwise_not, m)?,
        wrap_pyfunction!(logical_not, m)?,
        wrap_pyfunction!(isnan, m)?,
        wrap_pyfunction!(isinf, m)?,
        wrap_pyfunction!(isfinite, m)?,
        wrap_pyfunction!(nan_to_num, m)?,
        wrap_pyfunction!(lerp, m)?,
        wrap_pyfunction!(addcmul, m)?,
        wrap_pyfunction!(addcdiv, m)?,
    ] {
        m.add_function(f)?;
    }
    m.add_function(wrap_pyfunction!(round, m)?)?;
    m.add_function(wrap_pyfunction!(silu, m)?)?;
    m.add_function(wrap_pyfunction!(gelu, m)?)?;
    m.add_function(wrap_pyfunction!(elu, m)?)?;
    m.add_function(wrap_pyfunction!(selu, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(hardtanh, m)?)?;
    m.add_function(wrap_pyfunction!(softplus, m)?)?;
    m.add_function(wrap_pyfunction!(logsigmoid, m)?)?;
    Ok(())
}
