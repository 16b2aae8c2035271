"""The table of differentiable operations (``OPS``): for each operation and spelling, how to draw its
operands (value domains, shapes and layouts from ``fd_inputs.py``), the function and its NumPy reference.
Gradient tests in float64 run over it: ``tests/python/ops/test_gradients.py`` (reverse mode against
central differences) and ``tests/python/forward_mode/test_forward_ops.py`` (forward mode)."""

import numpy as np
from fd_inputs import (
    AWAY0,
    DISTINCT,
    EXAMPLES,
    GRID_BOUND,
    GRID_HALF,
    POS,
    REAL,
    Op,
    arr,
    augmented_assign,
    draw_binary,
    matmul_operands,
    mm_operands,
    one_operand_draws,
    shapes,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SHAPES = shapes(max_side=4)
SHAPES_1D = shapes(max_side=4, min_dims=1)
draw_unary, draw_with_scalar = one_operand_draws(SHAPES)

# ---------------------------------------------------------------------------------------------------------
# the operation table (value domains, layouts and Op in fd_inputs.py)
# ---------------------------------------------------------------------------------------------------------

OPS = []


def op(name, draw, f, ref, **kw):
    OPS.append(Op(name, draw, f, ref, **kw))


def sigmoid_np(x):
    return 1.0 / (1.0 + np.exp(-x))


# --- element-wise, one tensor -------------------------------------------------------------------------
op("neg/op", draw_unary(), lambda x: -x, np.negative)
op("neg/method", draw_unary(), lambda x: x.neg(), np.negative)
op("abs/method", draw_unary(AWAY0), lambda x: x.abs(), np.abs)
op("abs/builtin", draw_unary(AWAY0), lambda x: abs(x), np.abs)
op("exp", draw_unary(), lambda x: x.exp(), np.exp)
op("log", draw_unary(POS), lambda x: x.log(), np.log)
op("sqrt", draw_unary(POS), lambda x: x.sqrt(), np.sqrt)
op("sin", draw_unary(), lambda x: x.sin(), np.sin)
op("cos", draw_unary(), lambda x: x.cos(), np.cos)
op("tanh", draw_unary(), lambda x: x.tanh(), np.tanh)
op("sigmoid", draw_unary(st.floats(-6.0, 6.0)), lambda x: x.sigmoid(), sigmoid_np)
op("relu", draw_unary(AWAY0), lambda x: x.relu(), lambda x: np.maximum(x, 0.0))
op("tg.exp/functional", draw_unary(), lambda x: tg.exp(x), np.exp)


def draw_clamp(which):
    def draw(data):
        x = arr(data, data.draw(SHAPES, label="shape"), GRID_HALF)
        lo, hi = sorted(data.draw(st.tuples(GRID_BOUND, GRID_BOUND), label="bounds"))
        return [x], {"min": lo if which in ("min", "both") else None, "max": hi if which in ("max", "both") else None}

    return draw


def clamp_ref(x, min, max):
    return np.clip(x, -np.inf if min is None else min, np.inf if max is None else max)


op("clamp/min", draw_clamp("min"), lambda x, min, max: x.clamp(min=min), clamp_ref)
op("clamp/max", draw_clamp("max"), lambda x, min, max: x.clamp(max=max), clamp_ref)
op("clamp/both", draw_clamp("both"), lambda x, min, max: x.clamp(min, max), clamp_ref)

# --- pow -------------------------------------------------------------------------------------------------
op("pow/int_exponent", draw_with_scalar(REAL, st.sampled_from([0, 1, 2, 3])), lambda x, s: x**s,
   lambda x, s: np.power(x, float(s)))
op("pow/negative_int_exponent", draw_with_scalar(AWAY0, st.sampled_from([-1, -2])), lambda x, s: x.pow(s),
   lambda x, s: np.power(x, float(s)))
op("pow/float_exponent", draw_with_scalar(POS, st.floats(-2.5, 2.5)), lambda x, s: x**s, lambda x, s: np.power(x, s))
op("pow/scalar_base", draw_with_scalar(REAL, POS), lambda x, s: s**x, lambda x, s: np.power(s, x))
op("pow/tensor_tensor", draw_binary(POS, REAL), lambda a, b: a**b, np.power)
op("pow/method_tensor", draw_binary(POS, REAL), lambda a, b: a.pow(b), np.power)

# --- arithmetic, two tensors (broadcasting) -------------------------------------------------------------
op("add/op", draw_binary(), lambda a, b: a + b, np.add)
op("add/method", draw_binary(), lambda a, b: a.add(b), np.add)
op("add/functional", draw_binary(), lambda a, b: tg.add(a, b), np.add)
op("sub/op", draw_binary(), lambda a, b: a - b, np.subtract)
op("sub/method", draw_binary(), lambda a, b: a.sub(b), np.subtract)
op("mul/op", draw_binary(), lambda a, b: a * b, np.multiply)
op("mul/method", draw_binary(), lambda a, b: a.mul(b), np.multiply)
op("div/op", draw_binary(REAL, AWAY0), lambda a, b: a / b, np.divide)
op("div/method", draw_binary(REAL, AWAY0), lambda a, b: a.div(b), np.divide)
op("same_input/mul", draw_unary(), lambda x: x * x, lambda x: x * x)
op("same_input/div", draw_unary(AWAY0), lambda x: (x + 3.0) / x, lambda x: (x + 3.0) / x)

# --- arithmetic with a Python scalar, both sides --------------------------------------------------------
op("add/scalar_right", draw_with_scalar(), lambda x, s: x + s, lambda x, s: x + s)
op("add/scalar_left", draw_with_scalar(), lambda x, s: s + x, lambda x, s: s + x)
op("sub/scalar_right", draw_with_scalar(), lambda x, s: x - s, lambda x, s: x - s)
op("sub/scalar_left", draw_with_scalar(), lambda x, s: s - x, lambda x, s: s - x)
op("mul/scalar_right", draw_with_scalar(), lambda x, s: x * s, lambda x, s: x * s)
op("mul/scalar_left", draw_with_scalar(), lambda x, s: s * x, lambda x, s: s * x)
op("div/scalar_right", draw_with_scalar(), lambda x, s: x / s, lambda x, s: x / s)
op("div/scalar_left", draw_with_scalar(AWAY0), lambda x, s: s / x, lambda x, s: s / x)
op("add/int_scalar", draw_with_scalar(REAL, st.integers(-3, 3)), lambda x, s: x + s, lambda x, s: x + s)
op("mul/int_scalar_left", draw_with_scalar(REAL, st.integers(-3, 3)), lambda x, s: s * x, lambda x, s: s * x)


# --- linear algebra --------------------------------------------------------------------------------------
MATMUL_KINDS = ("1d@1d", "2d@1d", "1d@2d", "2d@2d", "batched@2d", "2d@batched", "batched@batched", "batched@1d",
                "1d@batched")
draw_mm = mm_operands(max_side=4)
draw_matmul = matmul_operands(MATMUL_KINDS, max_side=4, batch_dims=2, batch_side=3)

op("mm", draw_mm, lambda a, b: a.mm(b), np.matmul)
op("mm/functional", draw_mm, lambda a, b: tg.mm(a, b), np.matmul)
op("matmul/op", draw_matmul, lambda a, b: a @ b, np.matmul)
op("matmul/method", draw_matmul, lambda a, b: a.matmul(b), np.matmul)


# --- shape -----------------------------------------------------------------------------------------------
def draw_dims(n_dims, *, allow_equal=True, extra=0):
    """A strategy for dimension indices (negative ones too) of a tensor with ``n_dims`` dimensions."""
    top = max(n_dims + extra, 1)
    return st.integers(-top, top - 1)


def draw_t(data):
    return [arr(data, data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), label="shape"))], {}


def draw_transpose(data):
    x = arr(data, data.draw(SHAPES_1D, label="shape"))
    d0, d1 = data.draw(st.tuples(draw_dims(x.ndim), draw_dims(x.ndim)), label="dims")
    return [x], {"d0": d0, "d1": d1}


def draw_permute(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    return [x], {"dims": tuple(data.draw(st.permutations(range(x.ndim)), label="perm"))}


def draw_reshape(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    n = x.size
    targets = [(-1,), (n,), (1, n), (n, 1), x.shape[::-1], x.shape + (1,), (1,) + x.shape]
    if n == 1:
        targets.append(())
    if x.ndim >= 2:
        targets.append((-1,) + x.shape[2:])
        targets.append(x.shape[:1] + (-1,))
    return [x], {"shape": data.draw(st.sampled_from(targets), label="target")}


def draw_unsqueeze(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    return [x], {"dim": data.draw(st.integers(-x.ndim - 1, x.ndim), label="dim")}


SHAPES_WITH_ONES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3).map(
    lambda s: tuple(1 if i % 2 == 0 else d for i, d in enumerate(s))
)


def draw_squeeze(with_dim):
    def draw(data):
        x = arr(data, data.draw(SHAPES_WITH_ONES, label="shape"))
        params = {}
        if with_dim:
            params["dim"] = data.draw(draw_dims(x.ndim), label="dim")
        return [x], params

    return draw


def squeeze_ref(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    if x.ndim == 0:
        return x
    return np.squeeze(x, axis=dim) if x.shape[dim] == 1 else x


def draw_expand(data):
    shape = data.draw(SHAPES_WITH_ONES, label="shape")
    x = arr(data, shape)
    target = []
    for d in shape:
        target.append(data.draw(st.sampled_from([-1, 1, 2, 3]), label="size") if d == 1 else
                      data.draw(st.sampled_from([-1, d]), label="size"))
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2), label="leading")
    return [x], {"sizes": tuple(lead) + tuple(target)}


def expand_ref(x, sizes):
    lead = len(sizes) - x.ndim
    full = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return np.broadcast_to(x, full).copy()


def draw_expand_as(data):
    (x,), p = draw_expand(data)
    return [x], {"other": expand_ref(x, p["sizes"]) * 0 + 1}


def draw_flatten(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    n = max(x.ndim, 1)
    a, b = sorted(data.draw(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), label="dims"))
    neg = data.draw(st.booleans(), label="negative end")
    return [x], {"start": a, "end": b - n if neg else b}


def flatten_ref(x, start, end):
    if x.ndim == 0:
        return x.reshape(1)
    end = end % x.ndim
    return x.reshape(x.shape[:start] + (-1,) + x.shape[end + 1:])


def draw_cat(data):
    shape = data.draw(SHAPES_1D, label="shape")
    dim = data.draw(draw_dims(len(shape)), label="dim")
    k = data.draw(st.integers(1, 3), label="count")
    arrays = []
    for _ in range(k):
        s = list(shape)
        s[dim] = data.draw(st.integers(1, 3), label="size along dim")
        arrays.append(arr(data, tuple(s)))
    return arrays, {"dim": dim}


def draw_stack(data):
    shape = data.draw(SHAPES, label="shape")
    dim = data.draw(draw_dims(len(shape), extra=1), label="dim")
    k = data.draw(st.integers(1, 3), label="count")
    return [arr(data, shape) for _ in range(k)], {"dim": dim}


op("t", draw_t, lambda x: x.t(), lambda x: x.T)
op("t/functional", draw_t, lambda x: tg.t(x), lambda x: x.T)
op("transpose", draw_transpose, lambda x, d0, d1: x.transpose(d0, d1), lambda x, d0, d1: np.swapaxes(x, d0, d1))
op("permute", draw_permute, lambda x, dims: x.permute(*dims), lambda x, dims: np.transpose(x, dims))
op("reshape", draw_reshape, lambda x, shape: x.reshape(*shape), lambda x, shape: x.reshape(shape))
op("reshape/tuple", draw_reshape, lambda x, shape: x.reshape(shape), lambda x, shape: x.reshape(shape))
# view needs strides compatible with the new shape, so it only gets contiguous inputs
op("view", draw_reshape, lambda x, shape: x.view(*shape), lambda x, shape: x.reshape(shape), layouts=("contig",))
op("unsqueeze", draw_unsqueeze, lambda x, dim: x.unsqueeze(dim), lambda x, dim: np.expand_dims(x, dim))
op("squeeze/all", draw_squeeze(False), lambda x: x.squeeze(), squeeze_ref)
op("squeeze/dim", draw_squeeze(True), lambda x, dim: x.squeeze(dim), squeeze_ref)
op("expand", draw_expand, lambda x, sizes: x.expand(*sizes), expand_ref)
op("expand_as", draw_expand_as, lambda x, other: x.expand_as(tg.tensor(other)),
   lambda x, other: np.broadcast_to(x, other.shape).copy())
op("flatten", draw_flatten, lambda x, start, end: x.flatten(start, end), flatten_ref)
op("flatten/default", draw_unary(), lambda x: x.flatten(), lambda x: x.reshape(-1))
op("contiguous", draw_unary(), lambda x: x.contiguous(), lambda x: x)
op("clone", draw_unary(), lambda x: x.clone(), lambda x: x)
op("double/identity", draw_unary(), lambda x: x.double(), lambda x: x)
op("to/same_dtype", draw_unary(), lambda x: x.to(tg.float64), lambda x: x)
op("cat", draw_cat, lambda *xs, dim: tg.cat(list(xs), dim=dim), lambda *xs, dim: np.concatenate(xs, axis=dim))
op("cat/tuple_positional", draw_cat, lambda *xs, dim: tg.cat(xs, dim), lambda *xs, dim: np.concatenate(xs, dim))
op("stack", draw_stack, lambda *xs, dim: tg.stack(list(xs), dim=dim), lambda *xs, dim: np.stack(xs, axis=dim))


# --- reductions ------------------------------------------------------------------------------------------
def draw_reduce(kind, elements=REAL, unique=False):
    def draw(data):
        x = arr(data, data.draw(SHAPES, label="shape"), elements, unique=unique)
        params = {}
        if kind in ("dim", "dims"):
            n = max(x.ndim, 1)
            if kind == "dim":
                params["dim"] = data.draw(st.integers(-n, n - 1), label="dim")
            else:
                ds = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="dims")
                params["dim"] = tuple(d - n if i % 2 else d for i, d in enumerate(ds))
            params["keepdim"] = data.draw(st.booleans(), label="keepdim")
        return [x], params

    return draw


def axis(x, dim):
    """NumPy cannot reduce a 0-d array over axis 0 (PyTorch can: dim 0 / -1 of a scalar is itself)."""
    return None if x.ndim == 0 else dim


def sum_ref(x, dim=None, keepdim=False):
    return np.asarray(np.sum(x, axis=axis(x, dim), keepdims=keepdim and x.ndim > 0))


def mean_ref(x, dim=None, keepdim=False):
    return np.asarray(np.mean(x, axis=axis(x, dim), keepdims=keepdim and x.ndim > 0))


def max_ref(x, dim=None, keepdim=False):
    return np.asarray(np.max(x, axis=axis(x, dim), keepdims=keepdim and x.ndim > 0))


op("sum/all", draw_reduce("all"), lambda x: x.sum(), sum_ref)
op("sum/dim", draw_reduce("dim"), lambda x, dim, keepdim: x.sum(dim, keepdim=keepdim), sum_ref)
op("sum/dims_tuple", draw_reduce("dims"), lambda x, dim, keepdim: x.sum(dim=dim, keepdim=keepdim), sum_ref)
op("sum/functional", draw_reduce("dim"), lambda x, dim, keepdim: tg.sum(x, dim, keepdim), sum_ref)
op("mean/all", draw_reduce("all"), lambda x: x.mean(), mean_ref)
op("mean/dim", draw_reduce("dim"), lambda x, dim, keepdim: x.mean(dim, keepdim=keepdim), mean_ref)
op("mean/dims_tuple", draw_reduce("dims"), lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim), mean_ref)
op("max/all", draw_reduce("all", DISTINCT, unique=True), lambda x: x.max(), max_ref)
op("max/dim_values", draw_reduce("dim", DISTINCT, unique=True),
   lambda x, dim, keepdim: x.max(dim, keepdim=keepdim)[0], max_ref)
op("max/dim_named_values", draw_reduce("dim", DISTINCT, unique=True),
   lambda x, dim, keepdim: x.max(dim=dim, keepdim=keepdim).values, max_ref)


# --- indexing (reads) ------------------------------------------------------------------------------------
@st.composite
def basic_keys(draw, shape):
    """A tuple of ints (negative too), slices (with steps) and Nones covering some leading dimensions."""
    key = []
    for d in shape[: draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-d, d - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-d - 1, d)))
            stop = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            key.append(slice(start, stop, draw(st.sampled_from([None, 1, 2, 3]))))
        else:
            key.append(slice(None))
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def draw_getitem(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    key = data.draw(basic_keys(x.shape), label="key")
    if len(key) == 1 and data.draw(st.booleans(), label="bare key"):
        key = key[0]
    return [x], {"key": key}


def draw_getitem_mask(data):
    x = arr(data, data.draw(SHAPES_1D, label="shape"))
    k = data.draw(st.integers(1, x.ndim), label="mask dims")
    mask = data.draw(hnp.arrays(np.bool_, x.shape[:k]), label="mask")
    return [x], {"mask": mask}


op("getitem/basic", draw_getitem, lambda x, key: x[key], lambda x, key: np.asarray(x[key]))
op("getitem/mask", draw_getitem_mask, lambda x, mask: x[tg.tensor(mask)], lambda x, mask: x[mask])
op("getitem/mask_comparison", draw_unary(AWAY0, SHAPES_1D), lambda x: x[x > 0], lambda x: x[x > 0])


# --- item assignment (differentiable through a clone) ------------------------------------------------------
def draw_setitem(value_kind):
    def draw(data):
        x = arr(data, data.draw(SHAPES_1D, label="shape"))
        key = data.draw(basic_keys(x.shape), label="key")
        target = np.asarray(x[key]).shape
        params = {"key": key}
        if value_kind == "scalar":
            params["value"] = data.draw(REAL, label="value")
            return [x], params
        # the value broadcasts to the target: drop leading dims and set some to 1
        vshape = tuple(1 if data.draw(st.booleans()) else d for d in target[data.draw(st.integers(0, len(target))):])
        return [x, arr(data, vshape)], params

    return draw


def setitem_f(x, v=None, key=None, value=None):
    y = x.clone()
    y[key] = v if v is not None else value
    return y


def setitem_ref(x, v=None, key=None, value=None):
    y = x.copy()
    y[key] = v if v is not None else value
    return y


def draw_setitem_mask(value_kind):
    def draw(data):
        x = arr(data, data.draw(SHAPES_1D, label="shape"))
        mask = data.draw(hnp.arrays(np.bool_, x.shape), label="mask")
        if value_kind == "scalar":
            return [x], {"key": mask, "value": data.draw(REAL, label="value")}
        return [x, arr(data, (int(mask.sum()),))], {"key": mask}

    return draw


def setitem_mask_f(x, v=None, key=None, value=None):
    y = x * 1.0
    y[tg.tensor(key)] = v if v is not None else value
    return y


op("setitem/scalar", draw_setitem("scalar"), setitem_f, setitem_ref)
op("setitem/tensor", draw_setitem("tensor"), setitem_f, setitem_ref)
op("setitem/mask_scalar", draw_setitem_mask("scalar"), setitem_mask_f, setitem_ref)
op("setitem/mask_tensor", draw_setitem_mask("tensor"), setitem_mask_f, setitem_ref)


# --- in-place operations on a non-leaf (the result is the modified tensor) ---------------------------------
def draw_inplace(eb=REAL):
    """x and an operand b whose shape broadcasts to x's shape (b is never the larger one)."""

    def draw(data):
        shape = data.draw(SHAPES, label="shape")
        drop = data.draw(st.integers(0, len(shape)), label="drop leading")
        bshape = tuple(1 if data.draw(st.booleans()) else d for d in shape[drop:])
        return [arr(data, shape), arr(data, bshape, eb)], {}

    return draw


def inplace(method):
    """``x * 1.0`` (a non-leaf) changed in place by ``method`` with the tensor ``b`` or the Python scalar ``s``;
    checks the method returns that same tensor."""

    def f(x, b=None, s=None):
        y = x * 1.0
        assert getattr(y, method)(b if s is None else s) is y
        return y

    return f


def augmented(opname):
    assign = augmented_assign(opname)
    return lambda x, b: assign(x * 1.0, b)


op("add_", draw_inplace(), inplace("add_"), np.add)
op("sub_", draw_inplace(), inplace("sub_"), np.subtract)
op("mul_", draw_inplace(), inplace("mul_"), np.multiply)
op("div_", draw_inplace(AWAY0), inplace("div_"), np.divide)
op("iadd", draw_inplace(), augmented("+="), np.add)
op("isub", draw_inplace(), augmented("-="), np.subtract)
op("imul", draw_inplace(), augmented("*="), np.multiply)
op("idiv", draw_inplace(AWAY0), augmented("/="), np.divide)
op("copy_", draw_inplace(), inplace("copy_"), lambda x, b: np.broadcast_to(b, x.shape).copy())


op("add_/scalar", draw_with_scalar(), inplace("add_"), lambda x, s: x + s)
op("mul_/scalar", draw_with_scalar(), inplace("mul_"), lambda x, s: x * s)
op("div_/scalar", draw_with_scalar(), inplace("div_"), lambda x, s: x / s)
op("fill_", draw_with_scalar(), inplace("fill_"), lambda x, s: np.full_like(x, s))
op("fill_/then_mul", draw_with_scalar(), lambda x, s: x * inplace("fill_")(x, s), lambda x, s: x * s)
op("zero_/then_add", draw_unary(), lambda x: x + (x * 1.0).zero_(), lambda x: x)


def clamp_inplace(x, min, max):
    y = x * 1.0
    assert y.clamp_(min, max) is y
    return y


op("clamp_", draw_clamp("both"), clamp_inplace, clamp_ref)
op("clamp_/min", draw_clamp("min"), clamp_inplace, clamp_ref)


def inplace_through_view(x, b, key):
    """A write into a view of a non-leaf reaches the base; the gradient sees both the kept and the new part."""
    y = x * 1.0
    v = y[key]
    v.mul_(b)
    return y * 1.0


def inplace_through_view_ref(x, b, key):
    y = x.copy()
    y[key] *= b
    return y


def draw_inplace_view(data):
    x = arr(data, data.draw(SHAPES_1D, label="shape"))
    key = data.draw(basic_keys(x.shape), label="key")
    target = np.asarray(x[key]).shape
    return [x, arr(data, target)], {"key": key}


op("mul_/through_view", draw_inplace_view, inplace_through_view, inplace_through_view_ref)


# --- compositions where several ops share inputs ----------------------------------------------------------
op("compose/mlp_layer", draw_mm, lambda w, x: (x.t() @ w.t()).tanh().sum(0),
   lambda w, x: np.tanh(x.T @ w.T).sum(0))
op("compose/softmax_like", draw_unary(shapes=SHAPES_1D),
   lambda x: (x - x.max(-1, keepdim=True)[0].detach()).exp() / (x - x.max(-1, keepdim=True)[0].detach()).exp().sum(
       -1, keepdim=True),
   lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))

OPS_BY_NAME = {o.name: o for o in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op ids"
