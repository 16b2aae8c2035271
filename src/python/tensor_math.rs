//! Element-wise math under PyTorch's names: each operation is a `Tensor` method, an in-place
//! method (`log1p_`) and a function (`tg.log1p`), all calling the core's operation of that name.
//! The one-input operations without parameters are listed once, in `unary_bindings!` below.

use pyo3::prelude::*;

use super::tensor::PyTensor;
use crate::{Result, Tensor};

/// Elements above which a kernel runs with the GIL released.
const DETACH_OVER: usize = 1 << 15;

/// `f(t)` as a Python tensor, run without the GIL when `t` is large enough to be worth the switch.
fn run(py: Python<'_>, t: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor> + Send) -> PyResult<Py<PyAny>> {
    let out = if t.numel() > DETACH_OVER { py.detach(|| f(t))? } else { f(t)? };
    Ok(PyTensor::wrap(py, out)?.into_any())
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
}

/// Adds this file's functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)
}
