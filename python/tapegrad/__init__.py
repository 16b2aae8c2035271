"""tapegrad: a Rust-core autograd engine with custom operations written in Python.

The contract is ``docs/api.md`` in the repository; the native module is ``tapegrad._tapegrad``.
"""

import builtins

from . import _tapegrad as _C
from . import autograd, cuda, nn, optim, utils
from ._anomaly import detect_anomaly
from ._errors import SavedTensorModifiedError
from ._function import Function, FunctionCtx, autograd_function, custom_gradient, once_differentiable
from ._functional import (
    abs,
    add,
    argmax,
    bmm,
    clamp,
    clone,
    cos,
    detach,
    div,
    empty_like,
    eq,
    exp,
    flatten,
    full_like,
    ge,
    gt,
    le,
    log,
    lt,
    matmul,
    max,
    mean,
    mm,
    mul,
    narrow,
    ne,
    neg,
    ones_like,
    permute,
    pow,
    rand_like,
    randn_like,
    relu,
    reshape,
    sigmoid,
    sin,
    sqrt,
    squeeze,
    sub,
    sum,
    t,
    tanh,
    transpose,
    unsqueeze,
    zeros_like,
)
from ._functional_nn import (
    amax,
    amin,
    argmin,
    gather,
    index_add,
    index_select,
    log_softmax,
    logsumexp,
    min,
    prod,
    scatter_add,
    softmax,
    std,
    var,
    var_mean,
)
from ._generator import Generator
from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._serialization import load, save
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
    set_printoptions,
    stack,
    tensor,
    zeros,
)

where = _C.where
float = float32
double = float64
long = int64

__version__ = "0.1.0"


def cuda_is_available() -> builtins.bool:
    """Only the CPU exists in tapegrad.

    >>> import tapegrad as tg
    >>> tg.cuda_is_available()
    False
    """
    return False


def is_tensor(obj: object) -> builtins.bool:
    """Whether ``obj`` is a tapegrad tensor.

    >>> import tapegrad as tg
    >>> tg.is_tensor(tg.zeros(2)), tg.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of ``input``.

    >>> import tapegrad as tg
    >>> tg.numel(tg.zeros(2, 3))
    6
    """
    return input.numel()


__all__ = [
    # tensors and dtypes
    "Tensor", "dtype", "device", "float32", "float64", "int64", "bool", "float", "double", "long",
    "cuda_is_available", "cuda", "is_tensor", "numel", "set_printoptions",
    # factories
    "tensor", "from_numpy", "zeros", "ones", "empty", "randn", "rand", "full", "arange", "eye",
    "zeros_like", "ones_like", "randn_like", "rand_like", "full_like", "empty_like", "manual_seed",
    "cat", "stack", "where",
    # the functional API: tg.f(t, ...) is t.f(...)
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh",
    "sigmoid", "relu", "clamp", "mm", "matmul", "bmm", "t", "transpose", "reshape", "flatten",
    "unsqueeze", "squeeze", "sum", "mean", "max", "argmax", "clone", "detach", "permute", "narrow",
    "eq", "ne", "lt", "le", "gt", "ge",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "Function", "FunctionCtx",
    "autograd_function", "custom_gradient", "once_differentiable", "SavedTensorModifiedError",
    "autograd", "detect_anomaly",
    # the operations tg.nn needs, and tg.nn
    "softmax", "log_softmax", "logsumexp", "amax", "amin", "min", "argmin", "var", "std", "var_mean",
    "gather", "scatter_add", "index_select", "index_add", "prod", "nn",
    # optimizers, data loading, saving (issue 16)
    "optim", "utils", "save", "load", "Generator",
]
