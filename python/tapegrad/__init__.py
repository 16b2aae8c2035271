"""tapegrad: a Rust-core autograd engine with custom operations written in Python.

The contract is ``docs/api.md`` in the repository; the native module is ``tapegrad._tapegrad``.
"""

import builtins

from . import _anomaly, _function, autograd, cuda, linalg, nn, optim, utils
from . import _tapegrad as _C
from ._anomaly import detect_anomaly
from ._dtype_info import finfo, iinfo
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
from ._functional_sort import (
    all,
    allclose,
    aminmax,
    any,
    argsort,
    bucketize,
    count_nonzero,
    cummax,
    cummin,
    cumprod,
    cumsum,
    equal,
    flip,
    index_fill,
    index_put,
    isclose,
    kthvalue,
    masked_scatter,
    median,
    mode,
    nonzero,
    norm,
    roll,
    scatter,
    scatter_reduce,
    searchsorted,
    sort,
    std_mean,
    take,
    take_along_dim,
    topk,
    unique,
)
from ._generator import Generator
from ._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ._products import (
    _install_tensor_methods,
    addmm,
    addmv,
    baddbmm,
    cdist,
    cross,
    dot,
    einsum,
    inner,
    kron,
    mv,
    outer,
    tensordot,
    vdot,
)
from ._serialization import load, save
from ._tapegrad import (
    Tensor,
    arange,
    bfloat16,
    bool,
    broadcast_tensors,
    cat,
    column_stack,
    device,
    dstack,
    dtype,
    empty,
    eye,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    hstack,
    int8,
    int16,
    int32,
    int64,
    manual_seed,
    meshgrid,
    ones,
    promote_types,
    result_type,
    set_printoptions,
    stack,
    tensor,
    uint8,
    vstack,
    zeros,
)
from ._types import max_result as _max_result

# The helpers the native code calls, handed over once (src/python/helpers.rs).
_C._install_helpers(
    function_spec=_function._Spec,
    saved_mapping=_function._SavedMapping,
    needs_input_grad=_function._NeedsInputGrad,
    user_location=_anomaly.user_location,
    saved_tensor_modified_error=SavedTensorModifiedError,
    max_result=_max_result,
)
del _max_result

where = _C.where
# element-wise math (src/python/tensor_math.rs)
log1p = _C.log1p
expm1 = _C.expm1
log2 = _C.log2
log10 = _C.log10
exp2 = _C.exp2
rsqrt = _C.rsqrt
square = _C.square
reciprocal = _C.reciprocal
sign = _C.sign
floor = _C.floor
ceil = _C.ceil
trunc = _C.trunc
frac = _C.frac
tan = _C.tan
asin = _C.asin
acos = _C.acos
atan = _C.atan
sinh = _C.sinh
cosh = _C.cosh
asinh = _C.asinh
acosh = _C.acosh
atanh = _C.atanh
erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
round = _C.round
silu = _C.silu
gelu = _C.gelu
elu = _C.elu
selu = _C.selu
leaky_relu = _C.leaky_relu
hardtanh = _C.hardtanh
softplus = _C.softplus
logsigmoid = _C.logsigmoid
maximum = _C.maximum
minimum = _C.minimum
fmax = _C.fmax
fmin = _C.fmin
fmod = _C.fmod
remainder = _C.remainder
floor_divide = _C.floor_divide
atan2 = _C.atan2
bitwise_and = _C.bitwise_and
bitwise_or = _C.bitwise_or
bitwise_xor = _C.bitwise_xor
bitwise_left_shift = _C.bitwise_left_shift
bitwise_right_shift = _C.bitwise_right_shift
logical_and = _C.logical_and
logical_or = _C.logical_or
logical_xor = _C.logical_xor
bitwise_not = _C.bitwise_not
logical_not = _C.logical_not
isnan = _C.isnan
isinf = _C.isinf
isfinite = _C.isfinite
nan_to_num = _C.nan_to_num
lerp = _C.lerp
addcmul = _C.addcmul
addcdiv = _C.addcdiv
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
    # tensors and dtypes
    "Tensor", "dtype", "device", "float32", "float64", "int64", "bool", "float", "double", "long",
    "uint8", "int8", "int16", "int32", "float16", "bfloat16", "half", "int", "short",
    "result_type", "promote_types", "finfo", "iinfo",
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
    # shape operations
    "split", "chunk", "tensor_split", "unbind", "select", "tile", "repeat_interleave", "movedim", "moveaxis",
    "swapaxes", "swapdims", "unflatten", "broadcast_to", "tril", "triu", "diagonal", "trace", "diag",
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "meshgrid", "hstack", "vstack", "dstack",
    "column_stack",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    "is_inference_mode_enabled", "Function", "FunctionCtx",
    "autograd_function", "custom_gradient", "once_differentiable", "SavedTensorModifiedError",
    "autograd", "detect_anomaly",
    # element-wise math
    "log1p",
    "expm1",
    "log2",
    "log10",
    "exp2",
    "rsqrt",
    "square",
    "reciprocal",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "frac",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "erfinv",
    "round",
    "silu",
    "gelu",
    "elu",
    "selu",
    "leaky_relu",
    "hardtanh",
    "softplus",
    "logsigmoid",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "fmod",
    "remainder",
    "floor_divide",
    "atan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_not",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "lerp",
    "addcmul",
    "addcdiv",
    # the operations tg.nn needs, and tg.nn
    "softmax", "log_softmax", "logsumexp", "amax", "amin", "min", "argmin", "var", "std", "var_mean",
    "gather", "scatter_add", "index_select", "index_add", "prod", "nn",
    # optimizers, data loading, saving (issue 16)
    "optim", "utils", "save", "load", "Generator",
    # sorting, selection and scans (issue 15)
    "sort", "argsort", "topk", "kthvalue", "median", "mode", "cumsum", "cumprod", "cummax", "cummin",
    "flip", "roll", "all", "any", "count_nonzero", "norm", "std_mean", "aminmax", "isclose", "allclose",
    "equal", "scatter", "scatter_reduce", "index_fill", "index_put", "masked_scatter", "take", "take_along_dim",
    "nonzero", "unique", "searchsorted", "bucketize",
    # linear algebra (issue 15): tg.linalg and the products
    "linalg", "dot", "vdot", "inner", "outer", "mv", "addmm", "addmv", "baddbmm", "tensordot", "kron",
    "cross", "cdist", "einsum",
    # function transforms (issue 18): tg.func
    "func",
    # zero-copy exchange (issue 15): NumPy's from_numpy/numpy() and DLPack
    "from_dlpack",
]

from ._tapegrad import from_dlpack  # noqa: E402  (zero-copy exchange, issue 15)

_install_tensor_methods()  # t.dot, t.outer, t.norm, t.det, t.inverse ... (python/tapegrad/_products.py)

# function transforms (issue 18): tg.func (python/tapegrad/func/); ext3 (issue 15): creation
# functions, tensor conveniences, unique(dim=), repeat_interleave(tensor).
from . import _creation, func  # noqa: E402
from ._creation import (  # noqa: E402
    as_tensor,
    linspace,
    logspace,
    normal,
    rand,  # the native factory, plus generator=
    randint,
    randint_like,
    randn,
    randperm,
)

# tg.unique(dim=) and tg.repeat_interleave(repeats_tensor) replace the simpler functions imported above
repeat_interleave = _creation.repeat_interleave  # noqa: F811
unique = _creation.unique  # noqa: F811
_creation._install_tensor_methods()
get_default_dtype = _C.get_default_dtype
set_default_dtype = _C.set_default_dtype
__all__ += [
    "as_tensor", "linspace", "logspace", "randint", "randint_like", "randperm", "normal", "get_default_dtype",
    "set_default_dtype",
]


# ops15b (issue 15): clip, masked_fill/masked_select, diag_embed, the in-place random fills
# (t.uniform_, t.normal_, ...), bernoulli/multinomial/poisson and the generator's seed and state.
from . import _random  # noqa: E402
from ._random import (  # noqa: E402
    bernoulli,
    clip,
    diag_embed,
    get_rng_state,
    initial_seed,
    manual_seed,  # noqa: F811  (records the seed for initial_seed)
    masked_fill,
    masked_select,
    multinomial,
    poisson,
    seed,
    set_rng_state,
)

_random._install_tensor_methods()
__all__ += [
    "clip", "masked_fill", "masked_select", "diag_embed", "bernoulli", "multinomial", "poisson", "seed",
    "initial_seed", "get_rng_state", "set_rng_state",
]


# bf16 (issue 19): the float32 matmul precision ("medium": bfloat16 products on AMX or AVX512_BF16).
from ._precision import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402

__all__ += ["set_float32_matmul_precision", "get_float32_matmul_precision"]

# The thread pool's size; parallel work survives fork() (src/parallel.rs, NOTE [A pool of our own]).
from ._threads import get_num_threads, set_num_threads  # noqa: E402

__all__ += ["set_num_threads", "get_num_threads"]

# ops15c (issue 15): function forms of in-place methods that PyTorch also has as functions.
from ._random import detach_, exp_, index_put_, neg_, relu_, sigmoid_, sqrt_, tanh_  # noqa: E402

__all__ += ["exp_", "sqrt_", "relu_", "sigmoid_", "tanh_", "neg_", "detach_", "index_put_"]
