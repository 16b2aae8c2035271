//! `Tensor`'s in-place writes: `+=` and friends, `add_`..`div_`, `zero_`, `fill_`, `copy_`,
//! `masked_fill_`. Each returns the same Python object (`clamp_` is beside `clamp`).

use pyo3::prelude::*;

use super::convert::tensor_arg;
use super::gateway::{enter, Cost};
use super::tensor::PyTensor;
use crate::ops::Binary;

/// In-place arithmetic; returns the same Python object.
fn inplace<'py>(slf: Bound<'py, PyTensor>, other: &Bound<'_, PyAny>, op: Binary) -> PyResult<Bound<'py, PyTensor>> {
    let (py, t) = (slf.py(), &slf.get().inner);
    let cost = Cost::Elements(t.numel());
    // A Python scalar takes the scalar path: one pass over the memory when nothing is recorded.
    if let Some(s) = super::convert::scalar(other) {
        let done = match op {
            Binary::Add => Some(enter(py, cost, || t.add_scalar_(s))),
            Binary::Sub => Some(enter(py, cost, || t.sub_scalar_(s))),
            Binary::Mul => Some(enter(py, cost, || t.mul_scalar_(s))),
            Binary::Div => Some(enter(py, cost, || t.div_scalar_(s))),
            Binary::Pow => None,
        };
        if let Some(done) = done {
            done?;
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

#[pymethods]
impl PyTensor {
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
