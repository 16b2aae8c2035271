//! `Tensor` operators and their named forms: `+ - * / **`, `@` and the matrix products, the six
//! comparisons, `& | ^ ~`, and `tg.where`. Operands may be tensors or Python scalars; an unknown
//! operand type makes a dunder return `NotImplemented`, as Python expects.

use pyo3::prelude::*;

use super::convert::{operand, tensor_arg, Operand};
use super::gateway::{enter_tensor, Cost};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::ops::elementwise::Bitwise;
use crate::ops::{Binary, Cmp, ScalarOp};
use crate::Tensor;

/// `self (op) other` for a tensor or scalar `other`; `NotImplemented` for anything else.
fn arith(
    slf: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: Binary,
    scalar_op: ScalarOp,
) -> PyResult<Py<PyAny>> {
    let a = &slf.inner;
    match operand(other) {
        Some(Operand::Tensor(b)) => enter_tensor(py, Cost::Elements(a.numel().max(b.numel())), || a.binary(&b, op)),
        Some(Operand::Scalar(s)) => enter_tensor(py, Cost::Elements(a.numel()), || a.scalar_op(s, scalar_op)),
        None => Ok(py.NotImplemented()),
    }
}

/// `other (op) self` for a scalar `other`.
fn rarith(
    slf: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: Binary,
    scalar_op: ScalarOp,
) -> PyResult<Py<PyAny>> {
    let a = &slf.inner;
    match operand(other) {
        Some(Operand::Tensor(b)) => enter_tensor(py, Cost::Elements(a.numel().max(b.numel())), || b.binary(a, op)),
        Some(Operand::Scalar(s)) => enter_tensor(py, Cost::Elements(a.numel()), || a.scalar_op(s, scalar_op)),
        None => Ok(py.NotImplemented()),
    }
}

/// Named-method form: the operand must be usable.
fn arith_method(
    slf: &PyTensor,
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    op: Binary,
    scalar_op: ScalarOp,
) -> PyResult<Py<PyAny>> {
    let r = arith(slf, py, other, op, scalar_op)?;
    if r.is(py.NotImplemented()) {
        return Err(Error::Type(format!("expected a Tensor or a number, got {}", other.get_type().name()?)).into());
    }
    Ok(r)
}

fn compare(slf: &PyTensor, py: Python<'_>, other: &Bound<'_, PyAny>, op: Cmp) -> PyResult<Py<PyAny>> {
    let a = &slf.inner;
    match operand(other) {
        Some(Operand::Tensor(b)) => enter_tensor(py, Cost::Elements(a.numel().max(b.numel())), || a.compare(&b, op)),
        Some(Operand::Scalar(s)) => enter_tensor(py, Cost::Elements(a.numel()), || a.compare_scalar(s, op)),
        None => Ok(py.NotImplemented()),
    }
}

#[pymethods]
impl PyTensor {
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith(self, py, o, Binary::Add, ScalarOp::Add)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rarith(self, py, o, Binary::Add, ScalarOp::Add)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith(self, py, o, Binary::Sub, ScalarOp::Sub)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rarith(self, py, o, Binary::Sub, ScalarOp::RSub)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith(self, py, o, Binary::Mul, ScalarOp::Mul)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rarith(self, py, o, Binary::Mul, ScalarOp::Mul)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith(self, py, o, Binary::Div, ScalarOp::Div)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rarith(self, py, o, Binary::Div, ScalarOp::RDiv)
    }
    fn __pow__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        arith(self, py, o, Binary::Pow, ScalarOp::Pow)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        rarith(self, py, o, Binary::Pow, ScalarOp::RPow)
    }
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let a = &self.inner;
                refuse_bool_product(a, &b, "addmm_impl_cpu_")?;
                enter_tensor(py, Cost::Heavy, || a.matmul(&b))
            }
            _ => Ok(py.NotImplemented()),
        }
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let a = &self.inner;
                refuse_bool_product(a, &b, "addmm_impl_cpu_")?;
                enter_tensor(py, Cost::Heavy, || b.matmul(a))
            }
            _ => Ok(py.NotImplemented()),
        }
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.neg())
    }
    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.abs())
    }
    fn __lt__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Lt)
    }
    fn __le__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Le)
    }
    fn __gt__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Gt)
    }
    fn __ge__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Ge)
    }
    fn __eq__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Eq)
    }
    fn __ne__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Ne)
    }
    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = tensor_arg(o, None)?;
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.bitwise(&o, Bitwise::And))
    }
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = tensor_arg(o, None)?;
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.bitwise(&o, Bitwise::Or))
    }
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = tensor_arg(o, None)?;
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.bitwise(&o, Bitwise::Xor))
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.inner.dtype().is_float() {
            // PyTorch's operator refuses with a TypeError (the function `bitwise_not` with its kernel's).
            return Err(crate::error::Error::Type(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors".into(),
            )
            .into());
        }
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.bitwise_not())
    }
    fn add(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith_method(self, py, other, Binary::Add, ScalarOp::Add)
    }
    fn sub(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith_method(self, py, other, Binary::Sub, ScalarOp::Sub)
    }
    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith_method(self, py, other, Binary::Mul, ScalarOp::Mul)
    }
    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith_method(self, py, other, Binary::Div, ScalarOp::Div)
    }
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        arith_method(self, py, exponent, Binary::Pow, ScalarOp::Pow)
    }
    fn eq(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Eq)
    }
    fn ne(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Ne)
    }
    fn lt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Lt)
    }
    fn le(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Le)
    }
    fn gt(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Gt)
    }
    fn ge(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(self, py, o, Cmp::Ge)
    }
    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "mm's argument")?;
        refuse_bool_product(&self.inner, &b, "addmm_impl_cpu_")?;
        enter_tensor(py, Cost::Heavy, || self.inner.mm(&b))
    }
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "matmul's argument")?;
        refuse_bool_product(&self.inner, &b, "addmm_impl_cpu_")?;
        enter_tensor(py, Cost::Heavy, || self.inner.matmul(&b))
    }
    fn bmm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "bmm's argument")?;
        refuse_bool_product(&self.inner, &b, "bmm")?;
        enter_tensor(py, Cost::Heavy, || self.inner.bmm(&b))
    }
}

/// PyTorch has no bool kernel for the matrix products (`NotImplementedError`); integers work.
fn refuse_bool_product(a: &crate::Tensor, b: &crate::Tensor, kernel: &str) -> PyResult<()> {
    if a.dtype() == crate::tensor::dtype::DType::Bool || b.dtype() == crate::tensor::dtype::DType::Bool {
        return Err(super::tensor_pairwise::not_implemented_for(kernel, crate::tensor::dtype::DType::Bool));
    }
    Ok(())
}

#[pyfunction]
#[pyo3(name = "where")]
fn where_(py: Python<'_>, cond: &Bound<'_, PyAny>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let c = tensor_arg(cond, None)?;
    let ta = tensor_arg(a, None)?;
    let tb = tensor_arg(b, Some(ta.dtype()))?;
    let n = c.numel().max(ta.numel()).max(tb.numel());
    enter_tensor(py, Cost::Elements(n), || Tensor::where_(&c, &ta, &tb))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("where", wrap_pyfunction!(where_, m)?)?;
    Ok(())
}
