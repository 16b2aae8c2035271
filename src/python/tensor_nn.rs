//! The operations `tapegrad.nn` needs: softmax family, logsumexp, amax/amin/min, argmin,
//! var/std, gather, scatter_add, index_select, index_add and one_hot. Each converts its arguments
//! and calls the core (`ops/softmax.rs`, `ops/reduce.rs`, `ops/index.rs`).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use super::convert::parse_dtype;
use super::gateway::{enter, Cost};
use super::tensor::{expect_tensor, PyTensor};
use crate::error::Error;
use crate::{Result, Tensor};

/// A kernel over `size` elements, through the gateway (NOTE [The gateway]).
fn run(py: Python<'_>, size: usize, f: impl FnOnce() -> Result<Tensor> + Send) -> PyResult<Tensor> {
    enter(py, Cost::Elements(size), f)
}

fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(PyTensor::wrap(py, t)?.into_any())
}

/// `dim` arguments: None, an int, or a sequence of ints (empty: every dimension).
fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) if d.is_instance_of::<PyBool>() => {
            Err(Error::Type("dim must be an int or a sequence of ints, not bool".into()).into())
        }
        Some(d) if d.is_instance_of::<PyInt>() => Ok(Some(vec![d.extract()?])),
        Some(d) => {
            let dims: Vec<isize> = d
                .try_iter()
                .map_err(|_| {
                    PyErr::from(Error::Type(format!(
                        "dim must be an int or a sequence of ints, got {}",
                        d.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    )))
                })?
                .map(|x| x?.extract::<isize>())
                .collect::<PyResult<_>>()?;
            Ok(if dims.is_empty() { None } else { Some(dims) })
        }
    }
}

/// The tensor converted to `dtype` first when one is given (softmax's `dtype=`).
fn with_dtype(t: &Tensor, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    match dtype.filter(|d| !d.is_none()) {
        Some(d) => Ok(t.to_dtype(parse_dtype(d)?)?),
        None => Ok(t.clone()),
    }
}

/// The correction of var/std from PyTorch's two spellings: `unbiased` (bool) or `correction`.
fn correction_arg(unbiased: Option<bool>, correction: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    let c = correction.filter(|c| !c.is_none());
    match (unbiased, c) {
        (Some(_), Some(_)) => Err(Error::Type("var/std: pass either unbiased or correction, not both".into()).into()),
        (Some(u), None) => Ok(if u { 1.0 } else { 0.0 }),
        (None, Some(c)) if c.is_instance_of::<PyBool>() => {
            Err(Error::Type("correction must be a number, not bool".into()).into())
        }
        (None, Some(c)) => c.extract::<f64>().map_err(|_| Error::Type("correction must be a number".into()).into()),
        (None, None) => Ok(1.0),
    }
}

/// var/std's first positional argument may be `unbiased` (a bool), as in PyTorch's `t.var(False)`.
fn split_dim_unbiased<'py>(
    dim: Option<&Bound<'py, PyAny>>,
    unbiased: Option<bool>,
) -> PyResult<(Option<Vec<isize>>, Option<bool>)> {
    match dim {
        Some(d) if d.is_instance_of::<PyBool>() => {
            if unbiased.is_some() {
                return Err(Error::Type("var/std: unbiased given twice".into()).into());
            }
            Ok((None, Some(d.extract()?)))
        }
        _ => Ok((dims_arg(dim)?, unbiased)),
    }
}

fn var_std(
    t: &Tensor,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    keepdim: bool,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<Vec<isize>>, f64, bool, Tensor)> {
    let (dims, unbiased) = split_dim_unbiased(dim, unbiased)?;
    Ok((dims, correction_arg(unbiased, correction)?, keepdim, t.clone()))
}

#[pymethods]
impl PyTensor {
    /// Softmax along `dim`: `exp(x) / exp(x).sum(dim, keepdim=True)`, computed stably.
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(&self, py: Python<'_>, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let x = with_dtype(&self.inner, dtype)?;
        wrap(py, run(py, x.numel(), || x.softmax(dim))?)
    }
    /// Log of softmax along `dim`: `x - x.logsumexp(dim, keepdim=True)`.
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(&self, py: Python<'_>, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let x = with_dtype(&self.inner, dtype)?;
        wrap(py, run(py, x.numel(), || x.log_softmax(dim))?)
    }
    /// `log(exp(x).sum(dim))`, computed stably.
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, py: Python<'_>, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(Some(dim))?;
        wrap(py, run(py, self.inner.numel(), || self.inner.logsumexp(dims.as_deref(), keepdim))?)
    }
    /// Largest values over `dim` (an int or a sequence; all dims when empty).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        wrap(py, run(py, self.inner.numel(), || self.inner.amax(dims.as_deref(), keepdim))?)
    }
    /// Smallest values over `dim` (an int or a sequence; all dims when empty).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let dims = dims_arg(dim)?;
        wrap(py, run(py, self.inner.numel(), || self.inner.amin(dims.as_deref(), keepdim))?)
    }
    /// The smallest element, or `(values, indices)` along `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        match dim {
            None => wrap(py, self.inner.min_all()?),
            Some(d) => {
                let (v, i) = self.inner.min_dim(d, keepdim)?;
                let cls = py.import("tapegrad._types")?.getattr("min_result")?;
                Ok(cls.call1((PyTensor::wrap(py, v)?, PyTensor::wrap(py, i)?))?.unbind())
            }
        }
    }
    /// Product of all elements, or along `dim`.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<isize>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let x = with_dtype(&self.inner, dtype)?;
        // With `dtype`, the product stays in it (a narrow integer one wraps), as in PyTorch.
        let want = x.dtype();
        let keep = dtype.is_some_and(|d| !d.is_none());
        wrap(py, run(py, x.numel(), || x.prod(dim, keepdim).and_then(|r| if keep { r.to_dtype(want) } else { Ok(r) }))?)
    }
    /// Index of the smallest value: of the flattened tensor, or along `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<isize>, keepdim: bool) -> PyResult<Py<PyAny>> {
        if self.inner.dtype() == crate::DType::Bool {
            return Err(PyErr::from(Error::value("argmin(): does not support bool input")));
        }
        wrap(py, self.inner.argmin(dim, keepdim)?)
    }
    /// Variance over `dim` with `correction` (default 1) subtracted from the count.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, c, k, x) = var_std(&self.inner, dim, unbiased, keepdim, correction)?;
        wrap(py, run(py, x.numel(), || x.var(dims.as_deref(), c, k))?)
    }
    /// Standard deviation over `dim` (see `var`).
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (dims, c, k, x) = var_std(&self.inner, dim, unbiased, keepdim, correction)?;
        wrap(py, run(py, x.numel(), || x.std(dims.as_deref(), c, k))?)
    }
    /// `out[i][j] = self[index[i][j]][j]` for dim 0 (and likewise for other dims).
    fn gather(&self, py: Python<'_>, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "gather's index")?;
        if idx.dtype() != crate::DType::Int64 {
            return Err(PyErr::from(Error::value(format!(
                "gather(): Expected dtype int64 for index, got {}",
                idx.dtype()
            ))));
        }
        wrap(py, run(py, idx.numel(), || self.inner.gather(dim, &idx))?)
    }
    /// Out-of-place scatter-add: `src` added into a copy of `self` at `index` along `dim`.
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "scatter_add's index")?;
        let s = expect_tensor(src, "scatter_add's src")?;
        wrap(py, run(py, self.inner.numel().max(s.numel()), || self.inner.scatter_add(dim, &idx, &s))?)
    }
    /// The slices at `index` (1-d int64) along `dim`.
    fn index_select(&self, py: Python<'_>, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "index_select's index")?;
        wrap(py, run(py, self.inner.numel(), || self.inner.index_select(dim, &idx))?)
    }
    /// Out-of-place index_add: `alpha * source` added at the slices `index` along `dim`.
    #[pyo3(signature = (dim, index, source, *, alpha=1.0))]
    fn index_add(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: f64,
    ) -> PyResult<Py<PyAny>> {
        let idx = expect_tensor(index, "index_add's index")?;
        let s = expect_tensor(source, "index_add's source")?;
        wrap(py, run(py, self.inner.numel().max(s.numel()), || self.inner.index_add(dim, &idx, &s, alpha))?)
    }
}

/// `var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None)`.
#[pyfunction]
#[pyo3(signature = (input, dim=None, unbiased=None, keepdim=false, *, correction=None))]
fn var_mean(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    keepdim: bool,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let t = expect_tensor(input, "var_mean's input")?;
    let (dims, c, k, x) = var_std(&t, dim, unbiased, keepdim, correction)?;
    let (v, m) = x.var_mean(dims.as_deref(), c, k)?;
    Ok((wrap(py, v)?, wrap(py, m)?))
}

/// `std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None)`.
#[pyfunction]
#[pyo3(signature = (input, dim=None, unbiased=None, keepdim=false, *, correction=None))]
fn std_mean(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    keepdim: bool,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let t = expect_tensor(input, "std_mean's input")?;
    let (dims, c, k, x) = var_std(&t, dim, unbiased, keepdim, correction)?;
    let (s, m) = x.std_mean(dims.as_deref(), c, k)?;
    Ok((wrap(py, s)?, wrap(py, m)?))
}

/// `one_hot(tensor, num_classes=-1)`: int64 one-hot rows (-1: one more than the largest value).
#[pyfunction]
#[pyo3(signature = (tensor, num_classes=-1), text_signature = "(tensor, num_classes=-1)")]
fn one_hot(py: Python<'_>, tensor: &Bound<'_, PyAny>, num_classes: i64) -> PyResult<Py<PyAny>> {
    let t = expect_tensor(tensor, "one_hot's tensor")?;
    let c = match num_classes {
        -1 => None,
        c if c < 0 => return Err(PyErr::from(Error::value("one_hot(): num_classes should be -1 or non-negative"))),
        c => Some(c as usize),
    };
    wrap(py, t.one_hot(c)?)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(var_mean, m)?)?;
    m.add_function(wrap_pyfunction!(std_mean, m)?)?;
    m.add_function(wrap_pyfunction!(one_hot, m)?)?;
    Ok(())
}
