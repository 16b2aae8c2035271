"""tapegrad: a Rust-core autograd engine with custom operations written in Python.

The contract is ``docs/api.md`` in the repository; the native module is ``tapegrad._tapegrad``.
"""

from . import _tapegrad as _C
from . import autograd
from ._anomaly import detect_anomaly
from ._errors import SavedTensorModifiedError
from ._function import Function, FunctionCtx, autograd_function, custom_gradient, once_differentiable
from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tapegrad import (
    Tensor,
    arange,
    bool,
    cat,
    device,
    dtype,
    empty,
    eye,
    float32,
    float64,
    from_numpy,
    full,
    int64,
    manual_seed,
    ones,
    rand,
    randn,
    stack,
    tensor,
    zeros,
)

where = _C.where
float = float32
double = float64
long = int64

__version__ = "0.1.0"


def cuda_is_available():
    """Only the CPU exists in tapegrad."""
    return False


def _like(factory):
    def make(t, dtype=None, requires_grad=False, device=None):
        return factory(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)

    make.__name__ = factory.__name__ + "_like"
    make.__doc__ = f"``{factory.__name__}`` with the shape and dtype of ``t``."
    return make


zeros_like = _like(zeros)
ones_like = _like(ones)
randn_like = _like(randn)
rand_like = _like(rand)
empty_like = _like(empty)


def full_like(t, fill_value, dtype=None, requires_grad=False, device=None):
    """``full`` with the shape (and dtype) of ``t``."""
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def _functional(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``tapegrad.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


for _name in (
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh",
    "sigmoid", "relu", "clamp", "mm", "matmul", "bmm", "t", "transpose", "reshape", "flatten",
    "unsqueeze", "squeeze", "sum", "mean", "max", "argmax", "clone", "detach", "permute", "narrow",
    "eq", "ne", "lt", "le", "gt", "ge",
):
    globals()[_name] = _functional(_name)
del _name

__all__ = [
    "Tensor", "tensor", "from_numpy", "zeros", "ones", "empty", "randn", "rand", "full", "arange",
    "eye", "zeros_like", "ones_like", "randn_like", "rand_like", "full_like", "empty_like",
    "manual_seed", "float32", "float64", "int64", "bool", "dtype", "device", "cuda_is_available",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "Function", "FunctionCtx",
    "autograd_function", "custom_gradient", "once_differentiable", "SavedTensorModifiedError",
    "autograd", "detect_anomaly", "cat", "stack", "where",
]
