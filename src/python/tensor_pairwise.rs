//! Element-wise functions of two tensors (or a tensor and a number) under PyTorch's names: each row of
//! `pairwise_bindings!` is a `Tensor` method, its in-place form and a function (`tg.maximum`), calling
//! the core's `Pairwise` table (`src/ops/elementwise/pairwise.rs`); then the operators `//`, `%`, `<<`,
//! `>>` and their reflected and augmented forms, `pow_`, and the three-input `lerp`, `addcmul`, `addcdiv`.

use pyo3::prelude::*;

use super::convert::{operand, tensor_arg, Operand};

use super::tensor::PyTensor;
use super::tensor_unary::run;
use crate::ops::elementwise::Bitwise;
use crate::{Result, Tensor};

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
    register_pairwise(m)?;
    for f in [wrap_pyfunction!(lerp, m)?, wrap_pyfunction!(addcmul, m)?, wrap_pyfunction!(addcdiv, m)?] {
        m.add_function(f)?;
    }
    Ok(())
}
