//! `Tensor` arithmetic, comparisons, shape and reduction methods: each converts its arguments and
//! calls the core. Operands may be tensors or Python scalars; an unknown operand type makes a
//! dunder return `NotImplemented`, as Python expects.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};

use super::convert::{operand, shape_args, tensor_arg, Operand};
use super::gateway::{enter, enter_tensor, Cost};
use super::tensor::{tensor_list, PyTensor};
use crate::error::Error;
use crate::ops::{Binary, Cmp, Logical, ScalarOp};
use crate::Tensor;

/// The tensor clamp works on and its bounds. The bounds' Python types count, as in PyTorch: a
/// float bound makes an integer or bool tensor float32 (so clamping int64 to 0.5 does not round
/// the bound), an int bound makes a bool tensor int64.
fn clamp_args(
    t: &Tensor,
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Tensor, Option<crate::Scalar>, Option<crate::Scalar>)> {
    let mut want = t.dtype();
    let mut value = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<crate::Scalar>> {
        let Some(b) = b.filter(|b| !b.is_none()) else { return Ok(None) };
        match super::convert::scalar(b) {
            Some(s @ (crate::Scalar::Float(_) | crate::Scalar::Int(_))) => {
                want = s.result_dtype_with(want);
                Ok(Some(s))
            }
            Some(s) => Ok(Some(s)),
            None => Err(Error::Type(format!("clamp(): a bound must be a number, got {}", b.get_type().name()?)).into()),
        }
    };
    let (lo, hi) = (value(min)?, value(max)?);
    let x = if want != t.dtype() { t.to_dtype(want)? } else { t.clone() };
    Ok((x, lo, hi))
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

/// In-place arithmetic; returns the same Python object.
fn inplace<'py>(slf: Bound<'py, PyTensor>, other: &Bound<'_, PyAny>, op: Binary) -> PyResult<Bound<'py, PyTensor>> {
    let (py, t) = (slf.py(), &slf.get().inner);
    let cost = Cost::Elements(t.numel());
    // A Python scalar takes the scalar path: one pass over the memory when nothing is recorded.
    if let Some(s) = super::convert::scalar(other) {
        let scalar_path = match op {
            Binary::Add => Some(Tensor::add_scalar_ as fn(&Tensor, crate::Scalar) -> crate::Result<()>),
            Binary::Sub => Some(Tensor::sub_scalar_ as _),
            Binary::Mul => Some(Tensor::mul_scalar_ as _),
            Binary::Div => Some(Tensor::div_scalar_ as _),
            Binary::Pow => None,
        };
        if let Some(f) = scalar_path {
            enter(py, cost, || f(t, s))?;
            return Ok(slf);
        }
    }
    let o = tensor_arg(other, Some(t.dtype()))?;
    enter(py, cost, || match op {
        Binary::Add => t.add_(&o),
        Binary::Sub => t.sub_(&o),
        Binary::Mul => t.mul_(&o),
        Binary::Div => t.div_(&o),
        Binary::Pow => t.apply_inplace("pow_", &[&o], |x| x.pow(&o)),
    })?;
    Ok(slf)
}

/// `dim` arguments: None, an int, or a sequence of ints.
fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) if d.is_instance_of::<PyInt>() => Ok(Some(vec![d.extract()?])),
        Some(d) => {
            let dims: Vec<isize> = d.try_iter()?.map(|x| x?.extract::<isize>()).collect::<PyResult<_>>()?;
            // An empty dim list reduces over every dimension, as in PyTorch.
            Ok(if dims.is_empty() { None } else { Some(dims) })
        }
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
                enter_tensor(py, Cost::Heavy, || a.matmul(&b))
            }
            _ => Ok(py.NotImplemented()),
        }
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match operand(o) {
            Some(Operand::Tensor(b)) => {
                let a = &self.inner;
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
    fn __iadd__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, Binary::Add).map(|_| ())
    }
    fn __isub__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, Binary::Sub).map(|_| ())
    }
    fn __imul__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, Binary::Mul).map(|_| ())
    }
    fn __itruediv__(slf: Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, Binary::Div).map(|_| ())
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
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.logical(&o, Logical::And))
    }
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = tensor_arg(o, None)?;
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.logical(&o, Logical::Or))
    }
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = tensor_arg(o, None)?;
        enter_tensor(py, Cost::Elements(self.inner.numel().max(o.numel())), || self.inner.logical(&o, Logical::Xor))
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.logical_not())
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

    fn neg(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.neg())
    }
    fn abs(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.abs())
    }
    fn exp(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.exp())
    }
    fn log(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.log())
    }
    fn sqrt(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sqrt())
    }
    fn sin(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sin())
    }
    fn cos(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.cos())
    }
    fn tanh(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.tanh())
    }
    fn sigmoid(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sigmoid())
    }
    fn relu(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.relu())
    }
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
        let (x, lo, hi) = clamp_args(&self.inner, min, max)?;
        enter_tensor(py, Cost::Elements(x.numel()), || x.clamp_scalar(lo, hi))
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

    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "mm's argument")?;
        enter_tensor(py, Cost::Heavy, || self.inner.mm(&b))
    }
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "matmul's argument")?;
        enter_tensor(py, Cost::Heavy, || self.inner.matmul(&b))
    }
    fn bmm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let b = super::tensor::expect_tensor(other, "bmm's argument")?;
        enter_tensor(py, Cost::Heavy, || self.inner.bmm(&b))
    }
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.t())
    }
    #[getter(T)]
    fn big_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let n = self.inner.ndim() as isize;
        let dims: Vec<isize> = (0..n).rev().collect();
        enter_tensor(py, Cost::Metadata, || self.inner.permute(&dims))
    }
    fn transpose(&self, py: Python<'_>, dim0: isize, dim1: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.transpose(dim0, dim1))
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let dims = shape_args(dims)?;
        enter_tensor(py, Cost::Metadata, || self.inner.permute(&dims))
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let shape = shape_args(shape)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.reshape(&shape))
    }
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let shape = shape_args(shape)?;
        enter_tensor(py, Cost::Metadata, || self.inner.view(&shape))
    }
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = super::tensor::expect_tensor(other, "view_as's argument")?;
        let shape: Vec<isize> = o.shape().iter().map(|&d| d as isize).collect();
        enter_tensor(py, Cost::Metadata, || self.inner.view(&shape))
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: isize, end_dim: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.flatten(start_dim, end_dim))
    }
    fn unsqueeze(&self, py: Python<'_>, dim: isize) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || self.inner.unsqueeze(dim))
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<isize>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Metadata, || match dim {
            Some(d) => self.inner.squeeze_dim(d),
            None => self.inner.squeeze(),
        })
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let sizes = shape_args(sizes)?;
        enter_tensor(py, Cost::Metadata, || self.inner.expand_signed(&sizes))
    }
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let o = super::tensor::expect_tensor(other, "expand_as's argument")?;
        enter_tensor(py, Cost::Metadata, || self.inner.expand_as(&o))
    }
    fn narrow(&self, py: Python<'_>, dim: isize, start: isize, length: isize) -> PyResult<Py<PyAny>> {
        // Signed, as in PyTorch: a negative start counts from the end, a negative length is a
        // RuntimeError (not the OverflowError of PyO3's conversion to an unsigned integer).
        let Ok(length) = usize::try_from(length) else {
            return Err(Error::Value("narrow(): length must be non-negative.".into()).into());
        };
        let size = match crate::tensor::layout::wrap_dim(dim, self.inner.ndim()) {
            Ok(d) if self.inner.ndim() > 0 => self.inner.shape()[d],
            _ => 0,
        };
        let start = if start < 0 { start + size as isize } else { start };
        let Ok(start) = usize::try_from(start) else {
            return Err(Error::Index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -(size as isize)
            ))
            .into());
        };
        enter_tensor(py, Cost::Metadata, || self.inner.narrow(dim, start, length))
    }
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = &slf.get().inner;
        if t.layout().is_contiguous() {
            return Ok(slf.into_any().unbind());
        }
        enter_tensor(slf.py(), Cost::Elements(t.numel()), || t.contiguous())
    }
    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.clone_tensor())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn sum(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.sum(dims.as_deref(), keepdim))
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn mean(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.mean(dims.as_deref(), keepdim))
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        match dim {
            None => enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.max_all()),
            Some(d) => {
                let (v, i) = enter(py, Cost::Elements(self.inner.numel()), || self.inner.max_dim(d, keepdim))?;
                let cls = py.import("tapegrad._types")?.getattr("max_result")?;
                Ok(cls.call1((PyTensor::wrap(py, v)?, PyTensor::wrap(py, i)?))?.unbind())
            }
        }
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        if self.inner.dtype() == crate::DType::Bool {
            // Refused, as in PyTorch: bools have no argmax.
            return Err(Error::Dtype("argmax(): does not support bool input".into()).into());
        }
        enter_tensor(py, Cost::Elements(self.inner.numel()), || self.inner.argmax(dim, keepdim))
    }

    fn add_<'py>(slf: Bound<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, other, Binary::Add)
    }
    fn sub_<'py>(slf: Bound<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, other, Binary::Sub)
    }
    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, other, Binary::Mul)
    }
    fn div_<'py>(slf: Bound<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        inplace(slf, other, Binary::Div)
    }
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().inner;
        enter(slf.py(), Cost::Elements(t.numel()), || t.zero_())?;
        Ok(slf)
    }
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        let (py, t) = (slf.py(), &slf.get().inner);
        let cost = Cost::Elements(t.numel());
        match super::convert::scalar(value) {
            Some(s) => enter(py, cost, || t.fill_(s))?,
            None => {
                let v = tensor_arg(value, Some(t.dtype()))?;
                enter(py, cost, || t.copy_(&v))?
            }
        }
        Ok(slf)
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
        let (x, lo, hi) = clamp_args(t, min, max)?;
        if x.dtype() != t.dtype() {
            return Err(Error::Dtype(format!(
                "clamp_: result type {} can't be cast to the desired output type {}",
                x.dtype(),
                t.dtype()
            ))
            .into());
        }
        enter(py, cost, || t.clamp_scalar_(lo, hi))?;
        Ok(slf)
    }
    fn copy_<'py>(slf: Bound<'py, Self>, src: &Bound<'_, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().inner;
        let s = tensor_arg(src, Some(t.dtype()))?;
        enter(slf.py(), Cost::Elements(t.numel()), || t.copy_(&s))?;
        Ok(slf)
    }
    fn masked_fill_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let m = super::tensor::expect_tensor(mask, "mask")?;
        let t = &slf.get().inner;
        let v = tensor_arg(value, Some(t.dtype()))?;
        enter(slf.py(), Cost::Elements(t.numel()), || t.index_put_(&[crate::ops::IndexItem::Mask(m)], &v))?;
        Ok(slf)
    }
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors, "cat's tensors")?;
    enter_tensor(py, Cost::Elements(ts.iter().map(Tensor::numel).sum()), || Tensor::cat(&ts, dim))
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: isize) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors, "stack's tensors")?;
    enter_tensor(py, Cost::Elements(ts.iter().map(Tensor::numel).sum()), || Tensor::stack(&ts, dim))
}

#[pyfunction]
fn where_(py: Python<'_>, cond: &Bound<'_, PyAny>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let c = tensor_arg(cond, None)?;
    let ta = tensor_arg(a, None)?;
    let tb = tensor_arg(b, Some(ta.dtype()))?;
    let n = c.numel().max(ta.numel()).max(tb.numel());
    enter_tensor(py, Cost::Elements(n), || Tensor::where_(&c, &ta, &tb))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add("where", wrap_pyfunction!(where_, m)?)?;
    Ok(())
}
