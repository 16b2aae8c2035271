"""tapegrad: a Rust-core autograd engine with custom operations written in Python.

The contract is ``docs/api.md`` in the repository; the native module is ``tapegrad._tapegrad``.
"""

import builtins

from . import _tapegrad as _C
from . import autograd
from ._anomaly import detect_anomaly
from ._errors import SavedTensorModifiedError
from ._function import Function, FunctionCtx, autograd_function, custom_gradient, once_differentiable
from ._functional import (
    abs,
    add,
    argmax,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    bmm,
    broadcast_to,
    chunk,
    clamp,
    clone,
    cos,
    detach,
    diag,
    diagonal,
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
    moveaxis,
    movedim,
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
    repeat_interleave,
    reshape,
    select,
    sigmoid,
    sin,
    split,
    sqrt,
    squeeze,
    sub,
    sum,
    swapaxes,
    swapdims,
    t,
    tanh,
    tensor_split,
    tile,
    trace,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    zeros_like,
)
from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tapegrad import (
    Tensor,
    arange,
    bool,
    broadcast_tensors,
    cat,
    column_stack,
    device,
    dstack,
    dtype,
    empty,
    eye,
    float32,
    float64,
    from_numpy,
    full,
    hstack,
    int64,
    manual_seed,
    meshgrid,
    ones,
    rand,
    randn,
    stack,
    tensor,
    vstack,
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


__all__ = [
    # tensors and dtypes
    "Tensor", "dtype", "device", "float32", "float64", "int64", "bool", "float", "double", "long",
    "cuda_is_available",
    # factories
    "tensor", "from_numpy", "zeros", "ones", "empty", "randn", "rand", "full", "arange", "eye",
    "zeros_like", "ones_like", "randn_like", "rand_like", "full_like", "empty_like", "manual_seed",
    "cat", "stack", "where",
    # the functional API: tg.f(t, ...) is t.f(...)
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh",
    "sigmoid", "relu", "clamp", "mm", "matmul", "bmm", "t", "transpose", "reshape", "flatten",
    "unsqueeze", "squeeze", "sum", "mean", "max", "argmax", "clone", "detach", "permute", "narrow",
    "eq", "ne", "lt", "le", "gt", "ge",
    # shape operations
    "split", "chunk", "tensor_split", "unbind", "select", "tile", "repeat_interleave", "movedim", "moveaxis",
    "swapaxes", "swapdims", "unflatten", "broadcast_to", "tril", "triu", "diagonal", "trace", "diag",
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "meshgrid", "hstack", "vstack", "dstack",
    "column_stack",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "Function", "FunctionCtx",
    "autograd_function", "custom_gradient", "once_differentiable", "SavedTensorModifiedError",
    "autograd", "detect_anomaly",
]
