//! `tapegrad.Tensor`: properties, conversion, printing and autograd entry points. Its operations
//! are in the `tensor_*.rs` files by concern (arith, unary, reduce, shape, inplace, index).

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::autograd::PyNode;
use super::convert::{dtype_object, parse_dtype, to_numpy, PyDType, PyDevice};
use super::gateway::{enter, Cost};
use crate::error::Error;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::format;
use crate::Tensor;

/// A tensor. See API.md §1.
#[pyclass(name = "Tensor", module = "tapegrad", frozen, weakref)]
pub struct PyTensor {
    /// The core tensor (swapped by the in-place shape operations: NOTE [Swappable inner tensor]).
    pub(crate) inner: super::tensor_cell::TensorCell,
    /// This object's own address, once made (see `wrap`).
    me: AtomicUsize,
    /// The Python object last returned by `.grad`, kept alive while it is still this tensor's
    /// gradient, so that a weak reference to `t.grad` lives as long as `t` (PyTorch keeps a tensor's
    /// Python object alive as long as the tensor; here, as long as the owner's object).
    grad_object: std::sync::Mutex<Option<Py<PyTensor>>>,
}

// One Python object per tensor: see NOTE [One Python object per core object] in `identity.rs`.
impl PyTensor {
    /// The Python object of a core tensor: its live wrapper, or a new one.
    pub(crate) fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
        // A saved-tensor pack hook that failed inside an operation is raised with its result.
        if let Some(e) = crate::autograd::saved::take_pack_error() {
            return Err(e.into());
        }
        if let Some(obj) = super::identity::live_wrapper(py, &t.0.wrapper) {
            return Ok(obj);
        }
        let obj = Py::new(
            py,
            PyTensor {
                inner: super::tensor_cell::TensorCell::new(t),
                me: AtomicUsize::new(0),
                grad_object: Default::default(),
            },
        )?;
        let this = obj.get();
        this.me.store(super::identity::register(&obj, &this.inner.0.wrapper), Ordering::Release);
        Ok(obj)
    }
}

impl PyTensor {
    /// Puts `t` in this object's place of its core tensor (an in-place shape operation): `t` is
    /// then this object's tensor for `wrap`, and the replaced tensor no longer has a wrapper.
    pub(crate) fn swap_inner(slf: &Bound<'_, PyTensor>, t: Tensor) {
        let this = slf.get();
        let me = super::identity::register(slf.as_unbound(), &t.0.wrapper);
        let old = this.me.swap(me, Ordering::AcqRel);
        super::identity::unregister(&this.inner.0.wrapper, old);
        this.inner.replace(t);
    }

    /// Lets go of the object `.grad` last returned (the gradient was replaced); it is dropped after
    /// the lock, as its drop may run Python code.
    fn forget_grad_object(&self) {
        let displaced = self.grad_object.lock().ok().and_then(|mut slot| slot.take());
        drop(displaced);
    }
}

impl Drop for PyTensor {
    fn drop(&mut self) {
        super::identity::unregister(&self.inner.0.wrapper, *self.me.get_mut());
    }
}

/// Reads the tensor inside a Python object, or says what it was instead.
pub(crate) fn expect_tensor(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    obj.cast::<PyTensor>().map(|t| t.get().inner.clone()).map_err(|_| {
        PyErr::from(Error::Type(format!(
            "{what} must be a Tensor, got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        )))
    })
}

/// Tensors from a tensor or a sequence of tensors.
pub(crate) fn tensor_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.get().inner.clone()]);
    }
    obj.try_iter()?.map(|o| expect_tensor(&o?, what)).collect()
}

#[pymethods]
impl PyTensor {
    /// NOTE [Cycles through Rust]: Python objects held in Rust are invisible to Python's collector
    /// unless a Python object reports them. Two kinds close cycles through a tensor: a Python
    /// custom function's ctx, which can hold the function's own output (`ctx.out = out`, or a
    /// closure that captures it: Python tensor -> Rust node -> ctx -> tensor), and a Python hook,
    /// which can hold its own tensor (`lambda g, x=x: g`, a bound method of a module on its own
    /// parameter; on a non-leaf the hook sits on the node). This object reports them only when
    /// the chain is exclusive (it is the only owner of the tensor, the tensor the only owner of the
    /// node, the node or tensor the only owner of the hook), so the collector's arithmetic stays
    /// exact. To break the cycle, the ctx's `__dict__` is cleared and each hook's callable taken out
    /// (`__clear__`).
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Ok(slot) = self.grad_object.try_lock() {
            if let Some(g) = slot.as_ref() {
                visit.call(g)?;
            }
        }
        if std::sync::Arc::strong_count(&self.inner.0) != 1 {
            return Ok(());
        }
        let Some(meta) = self.inner.0.meta.try_lock() else { return Ok(()) };
        super::autograd::visit_leaf_hooks(&meta.hooks, &visit)?;
        if let Some(node) = &meta.grad_fn {
            if std::sync::Arc::strong_count(node) == 1 {
                super::autograd::visit_node(node, &visit)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        self.forget_grad_object();
        if std::sync::Arc::strong_count(&self.inner.0) != 1 {
            return;
        }
        // Copies are taken under the lock; the hooks are cleared (and the copies dropped) after it.
        let (hooks, node) = {
            let meta = self.inner.0.meta.lock();
            (meta.hooks.clone(), meta.grad_fn.clone().filter(|n| std::sync::Arc::strong_count(n) == 2))
        };
        for (_, h) in &hooks {
            if let Some(p) = super::autograd::python_hook(h) {
                p.clear();
            }
        }
        if let Some(node) = &node {
            super::autograd::clear_node(node);
        }
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }
    #[pyo3(signature = (dim=None))]
    fn size(&self, py: Python<'_>, dim: Option<isize>) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.inner.shape())?.into_any().unbind()),
            Some(d) => {
                // wrap_dim accepts dim 0 of a 0-dim tensor, which has no size (shape()[0] panicked).
                if self.inner.ndim() == 0 {
                    return Err(Error::Index(format!("Dimension specified as {d} but tensor has no dimensions")).into());
                }
                let d = enter(py, Cost::Metadata, || crate::tensor::layout::wrap_dim(d, self.inner.ndim()))?;
                Ok(self.inner.shape()[d].into_pyobject(py)?.into_any().unbind())
            }
        }
    }
    fn stride<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.strides())
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyDType> {
        dtype_object(py, self.inner.dtype())
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    fn dim(&self) -> usize {
        self.inner.ndim()
    }
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    fn is_contiguous(&self) -> bool {
        self.inner.layout().is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_float()
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice {}
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }
    #[setter]
    fn set_requires_grad(&self, py: Python<'_>, flag: bool) -> PyResult<()> {
        enter(py, Cost::Metadata, || self.inner.set_requires_grad(flag))
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: Bound<'_, Self>, requires_grad: bool) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().inner;
        enter(slf.py(), Cost::Metadata, || t.set_requires_grad(requires_grad))?;
        Ok(slf)
    }
    #[getter]
    fn get_grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        let grad = self.inner.grad();
        if grad.is_none() && !self.inner.is_leaf() && !self.inner.retains_grad() {
            // As PyTorch does: reading a non-leaf's .grad is almost always a mistake.
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad \
                  attribute won't be populated during autograd.backward(). If you indeed want the .grad field \
                  to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                1,
            )?;
        }
        let obj = grad.map(|g| PyTensor::wrap(py, g)).transpose()?;
        let displaced = self
            .grad_object
            .lock()
            .map(|mut slot| std::mem::replace(&mut *slot, obj.as_ref().map(|o| o.clone_ref(py))));
        // The previous object is dropped after the lock (its drop may run Python code).
        drop(displaced);
        Ok(obj)
    }
    #[setter]
    fn set_grad(&self, py: Python<'_>, grad: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match grad {
            None => None,
            Some(g) if g.is_none() => None,
            Some(g) => Some(g.cast::<PyTensor>().map(|t| t.get().inner.clone()).map_err(|_| {
                PyErr::from(Error::Type(format!(
                    "assigned grad expected to be a Tensor or None but got grad of type {}",
                    g.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                )))
            })?),
        };
        enter(py, Cost::Metadata, || self.inner.set_grad(g))?;
        self.forget_grad_object();
        Ok(())
    }
    /// `del t.grad` clears the gradient, as assigning None does.
    #[deleter]
    fn delete_grad(&self, py: Python<'_>) -> PyResult<()> {
        enter(py, Cost::Metadata, || self.inner.set_grad(None))?;
        self.forget_grad_object();
        Ok(())
    }
    #[deleter]
    fn delete_requires_grad(&self) -> PyResult<()> {
        Err(Error::Autograd("can't delete requires_grad".into()).into())
    }
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyNode>>> {
        self.inner.grad_fn().map(|node| PyNode::wrap(py, node)).transpose()
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.inner.version()
    }
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        PyTensor::wrap(py, self.inner.detach())
    }
    /// Replacing `.data` is not supported: a tensor's storage and shape are fixed (see README's
    /// differences from PyTorch). A non-tensor is refused with PyTorch's TypeError.
    #[setter]
    fn set_data(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        // `p.data -= lr * g` reads `.data`, updates it in place, and assigns it back: the value is
        // then this tensor's own memory, and the assignment has nothing left to do.
        if let Ok(t) = value.cast::<PyTensor>() {
            let t = &t.get().inner;
            if t.shares_storage(&self.inner) && t.layout() == self.inner.layout() && t.dtype() == self.inner.dtype() {
                return Ok(());
            }
        }
        match value {
            v if v.cast::<PyTensor>().is_ok() => Err(Error::Autograd(
                "assigning to .data is not supported in tapegrad (a tensor's storage and shape are fixed); \
                 copy the values in place under no_grad instead: `with tg.no_grad(): t.copy_(new)`"
                    .into(),
            )
            .into()),
            v => Err(Error::Type(format!(
                "Variable data has to be a tensor, but got {}",
                v.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
            .into()),
        }
    }
    #[deleter]
    fn delete_data(&self) -> PyResult<()> {
        Err(Error::Autograd("can't delete the data of a Tensor".into()).into())
    }
    /// Makes this tensor a leaf that does not require grad, in place.
    fn detach_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().inner;
        enter(slf.py(), Cost::Metadata, || t.detach_())?;
        Ok(slf)
    }
    #[getter]
    fn output_nr(&self) -> usize {
        self.inner.output_nr()
    }
    fn retain_grad(&self, py: Python<'_>) -> PyResult<()> {
        enter(py, Cost::Metadata, || self.inner.retain_grad())
    }
    /// Registers `hook(grad)` (returning None or a replacement gradient); returns a handle with `.remove()`.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<super::autograd::PyHookHandle> {
        super::autograd::register_hook(&self.inner, hook)
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner.retains_grad() && !self.inner.is_leaf()
    }

    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        PyTensor::wrap(py, self.inner.detach())
    }

    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match enter(py, Cost::Metadata, || self.inner.item_scalar())? {
            Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
            Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Scalar::Float(v) => v.into_pyobject(py)?.into_any().unbind(),
        })
    }
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.dtype() == DType::BFloat16 {
            // NumPy has no bfloat16; float32 holds every bfloat16 value exactly.
            let wide = enter(py, Cost::Elements(self.inner.numel()), || self.inner.detach().to_dtype(DType::Float32))?;
            return to_numpy(py, &wide)?.call_method0("tolist");
        }
        to_numpy(py, &self.inner)?.call_method0("tolist")
    }
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        enter(py, Cost::Metadata, || self.inner.item())
    }
    /// Exact, as Python's `int()`: an int64 as it is, a float by Python's own conversion (NaN is a
    /// `ValueError`, an infinity an `OverflowError`, a large float its exact integer).
    fn __int__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match enter(py, Cost::Metadata, || self.inner.item_scalar())? {
            Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Scalar::Bool(b) => (b as i64).into_pyobject(py)?.into_any().unbind(),
            Scalar::Float(v) => pyo3::types::PyFloat::new(py, v).call_method0("__int__")?.unbind(),
        })
    }
    /// Exact, as `__int__`; bool counts as an integer dtype (`operator.index(tensor(True))` is 1, as
    /// in PyTorch).
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.inner.dtype().is_float() || self.inner.numel() != 1 {
            return Err(
                Error::Type("only integer tensors of a single element can be converted to an index".into()).into()
            );
        }
        Ok(enter(py, Cost::Metadata, || self.inner.item_scalar())?.as_i64())
    }
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if self.inner.numel() != 1 {
            return Err(Error::Value(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                self.inner.numel()
            ))
            .into());
        }
        Ok(match enter(py, Cost::Metadata, || self.inner.item_scalar())? {
            Scalar::Float(v) => v != 0.0,
            other => other.as_i64() != 0,
        })
    }
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.inner.shape().first().copied().ok_or_else(|| Error::Type("len() of a 0-d tensor".into()))?)
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __repr__(&self) -> String {
        format::format_tensor(&self.inner)
    }
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = &slf.get().inner;
        if t.ndim() == 0 {
            return Err(Error::Type("iteration over a 0-d tensor".into()).into());
        }
        let py = slf.py();
        let items = (0..t.shape()[0])
            .map(|i| {
                let row = enter(py, Cost::Metadata, || t.index(&[crate::ops::IndexItem::Int(i as isize)]))?;
                PyTensor::wrap(py, row)
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.call_method0("__iter__")?.unbind())
    }

    /// `to(dtype)`, `to("cpu")`, `to(device, dtype)`, `to(other_tensor)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        slf: Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let mut dtype: Option<DType> = None;
        let mut all: Vec<Bound<'_, PyAny>> = args.iter().collect();
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                match k.extract::<String>()?.as_str() {
                    "dtype" | "device" | "non_blocking" | "copy" => all.push(v),
                    other => {
                        return Err(Error::Type(format!("to() got an unexpected keyword argument '{other}'")).into())
                    }
                }
            }
        }
        for a in &all {
            if a.is_none() || a.extract::<bool>().is_ok() && !a.is_instance_of::<PyDType>() {
                continue;
            }
            if let Ok(t) = a.cast::<PyTensor>() {
                dtype = Some(t.get().inner.dtype());
            } else if let Ok(d) = parse_dtype(a) {
                dtype = Some(d);
            } else {
                super::convert::check_device(Some(a))?;
            }
        }
        let t = &slf.get().inner;
        match dtype {
            Some(d) if d != t.dtype() => super::gateway::enter_tensor(py, Cost::Elements(t.numel()), || t.to_dtype(d)),
            _ => Ok(slf.into_any().unbind()),
        }
    }
    fn float(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Float32)
    }
    fn double(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Float64)
    }
    fn long(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Int64)
    }
    fn bool(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Bool)
    }
    /// `self.to(tapegrad.int32)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([1.7, -1.7]).int()
    /// tensor([ 1, -1], dtype=tapegrad.int32)
    fn int(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Int32)
    }
    /// `self.to(tapegrad.int16)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([40000]).short()
    /// tensor([-25536], dtype=tapegrad.int16)
    fn short(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Int16)
    }
    /// `self.to(tapegrad.int8)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([127, 128]).char()
    /// tensor([ 127, -128], dtype=tapegrad.int8)
    fn char(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Int8)
    }
    /// `self.to(tapegrad.uint8)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([-1, 256]).byte()
    /// tensor([255,   0], dtype=tapegrad.uint8)
    fn byte(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::UInt8)
    }
    /// `self.to(tapegrad.float16)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0.1]).half().item()
    /// 0.0999755859375
    fn half(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::Float16)
    }
    /// `self.to(tapegrad.bfloat16)`.
    ///
    /// >>> import tapegrad as tg
    /// >>> tg.tensor([0.1]).bfloat16().item()
    /// 0.10009765625
    fn bfloat16(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        convert_to(slf, DType::BFloat16)
    }
    fn cpu(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Accumulates the gradient of this tensor into the `.grad` of the leaves it depends on (or of
    /// `inputs`); a tensor of more than one element needs `gradient`.
    ///
    /// >>> import tapegrad as tg
    /// >>> x = tg.tensor([1., 2.], requires_grad=True)
    /// >>> (x * x).sum().backward()
    /// >>> x.grad
    /// tensor([2., 4.])
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let grad = match gradient {
            Some(g) if !g.is_none() => Some(super::convert::tensor_arg(g, Some(self.inner.dtype()))?),
            _ => None,
        };
        let retain = retain_graph.unwrap_or(create_graph);
        super::autograd::run_backward(py, std::slice::from_ref(&self.inner), &[grad], retain, create_graph, inputs)
    }
}

fn convert_to(slf: Bound<'_, PyTensor>, dt: DType) -> PyResult<Py<PyAny>> {
    let t = &slf.get().inner;
    if t.dtype() == dt {
        return Ok(slf.into_any().unbind());
    }
    super::gateway::enter_tensor(slf.py(), Cost::Elements(t.numel()), || t.to_dtype(dt))
}
