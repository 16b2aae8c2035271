"""tapegrad: a Rust-core autograd engine with custom operations written in Python.

The contract is ``docs/api.md`` in the repository; the native module is ``tapegrad._tapegrad``. This
file only gathers the public names: each comes from the module named for what it is (``_creation``,
``_random``, ``_pointwise``, ``_reduction``, ``_indexing``, ``_sorting``, ``_shape``, ``_products``, the
autograd modules and the namespaces ``linalg``, ``nn``, ``optim``, ``func``, ``autograd``, ``utils``), and
the ``Tensor`` methods written in Python are installed from one table (``_tensor_methods.py``).
"""

import builtins

from . import _anomaly, _function, _tensor_methods, _types, autograd, cuda, func, linalg, nn, optim, utils
from . import _tapegrad as _C
from ._anomaly import detect_anomaly
from ._creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from ._dtype_info import finfo, iinfo
from ._errors import SavedTensorModifiedError
from ._function import Function, FunctionCtx, autograd_function, custom_gradient, once_differentiable
from ._generator import Generator
from ._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ._indexing import (
    gather,
    index_add,
    index_fill,
    index_put,
    index_put_,
    index_select,
    masked_fill,
    masked_scatter,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
    scatter_reduce,
    take,
    take_along_dim,
)
from ._pointwise import (
    abs,
    acos,
    acosh,
    add,
    addcdiv,
    addcmul,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clamp,
    clip,
    cos,
    cosh,
    div,
    elu,
    eq,
    erf,
    erfc,
    erfinv,
    exp,
    exp2,
    exp_,
    expm1,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    frac,
    ge,
    gelu,
    gt,
    hardtanh,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    leaky_relu,
    lerp,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsigmoid,
    lt,
    maximum,
    minimum,
    mul,
    nan_to_num,
    ne,
    neg,
    neg_,
    pow,
    reciprocal,
    relu,
    relu_,
    remainder,
    round,
    rsqrt,
    selu,
    sigmoid,
    sigmoid_,
    sign,
    silu,
    sin,
    sinh,
    softplus,
    sqrt,
    sqrt_,
    square,
    sub,
    tan,
    tanh,
    tanh_,
    trunc,
    where,
)
from ._precision import get_float32_matmul_precision, set_float32_matmul_precision
from ._products import (
    addmm,
    addmv,
    baddbmm,
    bmm,
    cdist,
    cross,
    dot,
    einsum,
    inner,
    kron,
    matmul,
    mm,
    mv,
    outer,
    tensordot,
    vdot,
)
from ._random import (
    bernoulli,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    poisson,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from ._reduction import (
    all,
    allclose,
    amax,
    amin,
    aminmax,
    any,
    argmax,
    argmin,
    count_nonzero,
    equal,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    softmax,
    std,
    std_mean,
    sum,
    trace,
    var,
    var_mean,
)
from ._serialization import load, save
from ._shape import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_tensors,
    broadcast_to,
    cat,
    chunk,
    clone,
    column_stack,
    detach,
    detach_,
    diag,
    diag_embed,
    diagonal,
    dstack,
    flatten,
    flip,
    hstack,
    meshgrid,
    moveaxis,
    movedim,
    narrow,
    permute,
    repeat_interleave,
    reshape,
    roll,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    tensor_split,
    tile,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    vstack,
)
from ._sorting import (
    argsort,
    bucketize,
    cummax,
    cummin,
    cumprod,
    cumsum,
    kthvalue,
    median,
    mode,
    searchsorted,
    sort,
    topk,
    unique,
)
from ._tapegrad import (
    Tensor,
    bfloat16,
    bool,
    device,
    dtype,
    float16,
    float32,
    float64,
    from_dlpack,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    set_printoptions,
    uint8,
)
from ._threads import get_num_threads, set_num_threads

# The helpers the native code calls, handed over once (src/python/helpers.rs).
_C._install_helpers(
    function_spec=_function._Spec,
    saved_mapping=_function._SavedMapping,
    needs_input_grad=_function._NeedsInputGrad,
    user_location=_anomaly.user_location,
    saved_tensor_modified_error=SavedTensorModifiedError,
    max_result=_types.max_result,
)
_tensor_methods.install()

# PyTorch's dtype aliases
float = float32
double = float64
long = int64
half = float16
int = int32
short = int16

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


def numel(input: Tensor) -> builtins.int:
    """The number of elements of ``input``.

    >>> import tapegrad as tg
    >>> tg.numel(tg.zeros(2, 3))
    6
    """
    return input.numel()


__all__ = [
    # tensors, dtypes and the process
    "Tensor", "dtype", "device", "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
    "uint8", "bool", "float", "double", "half", "long", "int", "short", "result_type", "promote_types", "finfo",
    "iinfo", "get_default_dtype", "set_default_dtype", "is_tensor", "numel", "set_printoptions", "cuda_is_available",
    "set_num_threads", "get_num_threads", "set_float32_matmul_precision", "get_float32_matmul_precision",
    "from_dlpack", "save", "load", "Generator",
    # creating tensors (_creation.py)
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "eye", "linspace", "logspace",
    "zeros_like", "ones_like", "empty_like", "full_like",
    # random numbers (_random.py)
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "rand", "randn", "rand_like",
    "randn_like", "randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial", "poisson",
    # element-wise functions (_pointwise.py)
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu",
    "clamp", "clip", "eq", "ne", "lt", "le", "gt", "ge", "isclose", "log1p", "expm1", "log2", "log10", "exp2",
    "rsqrt", "square", "reciprocal", "sign", "floor", "ceil", "trunc", "frac", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "round", "silu", "gelu", "elu", "selu", "leaky_relu",
    "hardtanh", "softplus", "logsigmoid", "maximum", "minimum", "fmax", "fmin", "fmod", "remainder", "floor_divide",
    "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "logical_and",
    "logical_or", "logical_xor", "bitwise_not", "logical_not", "isnan", "isinf", "isfinite", "nan_to_num", "lerp",
    "addcmul", "addcdiv", "where", "exp_", "sqrt_", "relu_", "sigmoid_", "tanh_", "neg_",
    # reductions and normalisations along a dimension (_reduction.py)
    "sum", "mean", "prod", "max", "min", "argmax", "argmin", "amax", "amin", "aminmax", "var", "std", "var_mean",
    "std_mean", "all", "any", "count_nonzero", "norm", "allclose", "equal", "trace", "softmax", "log_softmax",
    "logsumexp",
    # indexing, gathering, scattering (_indexing.py)
    "gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_fill", "index_put",
    "index_put_", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "nonzero",
    # sorting, selection and scans (_sorting.py)
    "sort", "argsort", "topk", "kthvalue", "median", "mode", "cumsum", "cumprod", "cummax", "cummin", "unique",
    "searchsorted", "bucketize",
    # shapes, views, joins and copies (_shape.py)
    "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "t", "transpose", "permute", "movedim", "moveaxis",
    "swapaxes", "swapdims", "narrow", "select", "split", "chunk", "tensor_split", "unbind", "tile",
    "repeat_interleave", "broadcast_to", "tril", "triu", "diagonal", "diag", "diag_embed", "flip", "roll",
    "atleast_1d", "atleast_2d", "atleast_3d", "clone", "detach", "detach_", "cat", "stack", "hstack", "vstack",
    "dstack", "column_stack", "meshgrid", "broadcast_tensors",
    # matrix and vector products (_products.py)
    "mm", "matmul", "bmm", "dot", "vdot", "inner", "outer", "mv", "addmm", "addmv", "baddbmm", "tensordot", "kron",
    "cross", "cdist", "einsum",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled",
    "Function", "FunctionCtx", "autograd_function", "custom_gradient", "once_differentiable",
    "SavedTensorModifiedError", "detect_anomaly",
    # namespaces
    "autograd", "cuda", "func", "linalg", "nn", "optim", "utils",
]
