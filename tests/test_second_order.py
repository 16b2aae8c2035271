"""Second (and third) derivatives: backward passes recorded with ``create_graph=True``, differentiated again.

For each entry of the operation table (one test id per entry, ``test_second_derivatives[<op>]``) hypothesis
draws shapes (broadcasting pairs, size-1 dimensions, 0-d), float64 values inside the operation's smooth
domain, an upstream gradient ``G`` and two directions ``V``, ``W`` (one array per input). Inputs are built in
the layouts of ``test_ops_grad.py`` (contiguous, a transposed leaf, a leaf with stride 2, a contiguous leaf
used through ``.transpose(-1, -2)``). With ``L = sum(G * f(x_1, ..., x_n))`` the test checks:

1. the first gradients ``g_i = dL/dx_i`` taken with ``create_graph=True`` equal the ones taken without;
2. every block of the Hessian, mixed ones included: ``grad(sum(g_i * V_i), x_j)`` (that is ``d/dx_j`` of
   ``<dL/dx_i, V_i>``, a Hessian-vector product) against central differences (float64, eps 1e-6) of the
   same first gradient computed without ``create_graph``, for every pair ``(i, j)``;
3. the bilinear form ``sum_ij <grad(sum(g_i * V_i), x_j), W_j>`` against the second mixed difference of
   ``L`` along ``V`` and ``W`` (four forward evaluations, no backward at all), an oracle independent of
   tapegrad's gradients.

Kinked operations (abs, relu, clamp, max) draw values away from their kinks, where their own second
derivative is 0; they also appear inside products and powers so that their backward has to carry the
dependence of the upstream gradient on the inputs. Further tests: third derivatives against NumPy closed
forms, an MLP loss's Hessian-vector product, custom ``tg.Function`` double backward (two inputs with
broadcasting, a saved output inside a composite, the factory spelling), ``once_differentiable``, and the
``requires_grad``/``grad_fn``/``retain_graph`` contract of ``create_graph``.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

EXAMPLES = 10
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EPS = 1e-6  # central differences of the first gradient
H2 = 1e-4  # second mixed difference of the function

# ---------------------------------------------------------------------------------------------------------
# value domains (as in test_ops_grad.py)
# ---------------------------------------------------------------------------------------------------------

REAL = st.floats(-2.0, 2.0, allow_subnormal=False)
POS = st.floats(0.3, 2.0)
AWAY0 = st.one_of(st.floats(-2.0, -0.3), st.floats(0.3, 2.0))
GRID_HALF = st.integers(-20, 19).map(lambda k: (k + 0.5) / 10)  # never within 0.05 of a GRID_BOUND
GRID_BOUND = st.integers(-10, 10).map(lambda k: k / 10)
DISTINCT = st.integers(-60, 60).map(lambda k: k / 10)  # with unique=True: no ties for max

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
SHAPES_1D = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)


def arr(data, shape, elements=REAL, unique=False, label=None):
    return np.asarray(data.draw(hnp.arrays(np.float64, shape, elements=elements, unique=unique), label=label))


def f64(a, requires_grad=False):
    """A float64 tensor (a 0-d NumPy result is an np.float64 scalar, which tg.tensor would read as float32)."""
    return tg.tensor(np.array(a, dtype=np.float64), requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------------------------------------

LAYOUTS = ("contig", "t", "step", "view")


@dataclass
class Input:
    """``value`` is the operand as the operation sees it. ``fd_array`` has the leaf's shape (what finite
    differences perturb); ``leaf()`` builds the leaf in its layout; ``use(t)`` turns a leaf into the operand."""

    value: np.ndarray
    layout: str

    @property
    def fd_array(self):
        return np.swapaxes(self.value, -1, -2).copy() if self.layout == "view" else self.value

    def leaf(self):
        a = self.value
        if self.layout == "contig":
            return tg.tensor(a, requires_grad=True)
        if self.layout == "t":
            leaf = tg.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
            assert not leaf.is_contiguous() or 1 in a.shape[-2:]
            return leaf.requires_grad_()
        if self.layout == "step":
            big = np.full(a.shape[:-1] + (2 * a.shape[-1],), np.nan)
            big[..., ::2] = a
            leaf = tg.tensor(big)[..., ::2]
            assert leaf.stride()[-1] == 2
            return leaf.requires_grad_()
        assert self.layout == "view"
        return tg.tensor(self.fd_array, requires_grad=True)

    def use(self, t):
        return t.transpose(-1, -2) if self.layout == "view" else t


def draw_layout(data, a, allowed):
    choices = [lay for lay in allowed if lay == "contig" or (lay == "step" and a.ndim >= 1) or a.ndim >= 2]
    return Input(a, data.draw(st.sampled_from(choices), label="layout"))


# ---------------------------------------------------------------------------------------------------------
# the operation table
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Op:
    """``draw(data) -> (arrays, params)``; ``f(*tensors, **params)`` the function differentiated twice."""

    name: str
    draw: Callable
    f: Callable
    layouts: tuple = LAYOUTS

    def __repr__(self):
        return self.name


OPS = []


def op(name, draw, f, **kw):
    OPS.append(Op(name, draw, f, **kw))


def draw_unary(elements=REAL, shapes=SHAPES, unique=False):
    def draw(data):
        return [arr(data, data.draw(shapes, label="shape"), elements, unique)], {}

    return draw


def draw_binary(ea=REAL, eb=REAL):
    def draw(data):
        sa, sb = data.draw(PAIRS, label="shapes").input_shapes
        return [arr(data, sa, ea), arr(data, sb, eb)], {}

    return draw


def draw_with_scalar(elements, scalar):
    def draw(data):
        return [arr(data, data.draw(SHAPES, label="shape"), elements)], {"s": data.draw(scalar, label="s")}

    return draw


# --- element-wise, one input ----------------------------------------------------------------------------
op("exp", draw_unary(), lambda x: x.exp())
op("log", draw_unary(POS), lambda x: x.log())
op("sqrt", draw_unary(POS), lambda x: x.sqrt())
op("sin", draw_unary(), lambda x: x.sin())
op("cos", draw_unary(), lambda x: x.cos())
op("tanh", draw_unary(), lambda x: x.tanh())
op("sigmoid", draw_unary(st.floats(-6.0, 6.0)), lambda x: x.sigmoid())
op("neg", draw_unary(), lambda x: -x)  # linear: second derivative 0
op("neg/times_sin", draw_unary(), lambda x: (-x) * x.sin())
op("neg/method_exp", draw_unary(), lambda x: x.neg().exp())
op("abs", draw_unary(AWAY0), lambda x: x.abs())  # second derivative 0 away from 0
op("abs/cubed", draw_unary(AWAY0), lambda x: x.abs() ** 3)
op("abs/times_exp", draw_unary(AWAY0), lambda x: abs(x) * x.exp())
op("relu", draw_unary(AWAY0), lambda x: x.relu())  # second derivative 0 away from 0
op("relu/squared", draw_unary(AWAY0), lambda x: x.relu() * x.relu())
op("same_input/mul", draw_unary(), lambda x: x * x)
op("same_input/div", draw_unary(AWAY0), lambda x: (x + 3.0) / x)

# --- pow: tensor ** scalar, scalar ** tensor, tensor ** tensor ------------------------------------------
op("pow/int_exponent", draw_with_scalar(REAL, st.sampled_from([2, 3, 4])), lambda x, s: x**s)
op("pow/negative_int_exponent", draw_with_scalar(AWAY0, st.sampled_from([-1, -2])), lambda x, s: x.pow(s))
op("pow/float_exponent", draw_with_scalar(POS, st.floats(-2.5, 2.5)), lambda x, s: x**s)
op("pow/scalar_base", draw_with_scalar(REAL, POS), lambda x, s: s**x)
op("pow/tensor_tensor", draw_binary(POS, REAL), lambda a, b: a**b)
op("pow/method_tensor", draw_binary(POS, REAL), lambda a, b: a.pow(b))

# --- two inputs with broadcasting: mixed partials ---------------------------------------------------------
op("mul", draw_binary(), lambda a, b: a * b)  # only the mixed blocks are non-zero
op("mul/method_squared", draw_binary(), lambda a, b: a.mul(b) * a)
op("div", draw_binary(REAL, AWAY0), lambda a, b: a / b)
op("div/method", draw_binary(REAL, AWAY0), lambda a, b: a.div(b))
op("div/scalar_left", draw_with_scalar(AWAY0, AWAY0), lambda x, s: s / x)
op("sub_add/products", draw_binary(), lambda a, b: (a - b) * (a + b).sin())
op("exp/of_product", draw_binary(), lambda a, b: (a * b).exp())
op("log/of_quotient", draw_binary(POS, POS), lambda a, b: (a / b).log())
op("sqrt/of_product", draw_binary(POS, POS), lambda a, b: (a * b).sqrt())
op("sin/of_product", draw_binary(), lambda a, b: (a * b).sin())
op("cos/of_sum", draw_binary(), lambda a, b: (a + b).cos() * b)
op("tanh/of_product", draw_binary(), lambda a, b: (a * b).tanh())
op("sigmoid/of_difference", draw_binary(), lambda a, b: (a - 2.0 * b).sigmoid())
op("abs/of_product", draw_binary(AWAY0, AWAY0), lambda a, b: (a * b).abs() * a)
op("relu/of_product", draw_binary(AWAY0, AWAY0), lambda a, b: (a * b).relu())


# --- clamp: away from the bounds --------------------------------------------------------------------------
def draw_clamp(which, second=False):
    def draw(data):
        if second:
            sa, sb = data.draw(PAIRS, label="shapes").input_shapes
            arrays = [arr(data, sa, GRID_HALF), arr(data, sb)]
        else:
            arrays = [arr(data, data.draw(SHAPES, label="shape"), GRID_HALF)]
        lo, hi = sorted(data.draw(st.tuples(GRID_BOUND, GRID_BOUND), label="bounds"))
        return arrays, {"lo": lo if which in ("min", "both") else None, "hi": hi if which in ("max", "both") else None}

    return draw


op("clamp", draw_clamp("both"), lambda x, lo, hi: x.clamp(lo, hi))  # second derivative 0
op("clamp/min_squared", draw_clamp("min"), lambda x, lo, hi: x.clamp(min=lo) ** 2)
op("clamp/max_exp", draw_clamp("max"), lambda x, lo, hi: x.clamp(max=hi).exp())
op("clamp/times_sin", draw_clamp("both", second=True), lambda x, y, lo, hi: x.clamp(lo, hi) * y.sin())


# --- reductions -------------------------------------------------------------------------------------------
def draw_reduce(elements=REAL, unique=False, with_dim=True):
    def draw(data):
        x = arr(data, data.draw(SHAPES_1D, label="shape"), elements, unique=unique)
        if not with_dim:
            return [x], {}
        dim = data.draw(st.integers(-x.ndim, x.ndim - 1), label="dim")
        return [x], {"dim": dim, "keepdim": data.draw(st.booleans(), label="keepdim")}

    return draw


op("sum/all_squared", draw_unary(), lambda x: x.sum() ** 2)
op("sum/dim_sin", draw_reduce(), lambda x, dim, keepdim: x.sum(dim, keepdim=keepdim).sin())
op("mean/all_exp", draw_unary(), lambda x: x.mean().exp())
op("mean/dim_squared", draw_reduce(), lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim) ** 2)
op("sum_mean/broadcast_product", draw_binary(), lambda a, b: (a * b).sum() * (a + b).mean())
op("max/dim", draw_reduce(DISTINCT, unique=True), lambda x, dim, keepdim: x.max(dim, keepdim=keepdim)[0])
op("max/dim_squared", draw_reduce(DISTINCT, unique=True),
   lambda x, dim, keepdim: x.max(dim, keepdim=keepdim)[0] ** 2)
op("max/dim_times_sum", draw_reduce(DISTINCT, unique=True),
   lambda x, dim, keepdim: x.max(dim=dim, keepdim=keepdim).values * x.sum(dim, keepdim=keepdim))
op("max/all_cubed", draw_reduce(DISTINCT, unique=True, with_dim=False), lambda x: x.max() ** 3)


# --- linear algebra: bilinear, so d2/dA2 = d2/dB2 = 0 and the mixed blocks carry everything -------------
def draw_mm(data):
    m, n, p = data.draw(st.tuples(*[st.integers(1, 3)] * 3), label="m,n,p")
    return [arr(data, (m, n)), arr(data, (n, p))], {}


MATMUL_KINDS = ("1d@1d", "2d@1d", "1d@2d", "2d@2d", "batched@2d", "2d@batched", "batched@batched")


def draw_matmul(data):
    m, n, p = data.draw(st.tuples(*[st.integers(1, 3)] * 3), label="m,n,p")
    kind = data.draw(st.sampled_from(MATMUL_KINDS), label="kind")
    ba, bb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=1, max_side=2),
                       label="batch").input_shapes
    left, right = kind.split("@")
    sa = {"1d": (n,), "2d": (m, n), "batched": ba + (m, n)}[left]
    sb = {"1d": (n,), "2d": (n, p), "batched": bb + (n, p)}[right]
    return [arr(data, sa), arr(data, sb)], {}


op("mm", draw_mm, lambda a, b: a.mm(b))
op("mm/tanh", draw_mm, lambda a, b: tg.mm(a, b).tanh())
op("matmul", draw_matmul, lambda a, b: a @ b)
op("matmul/squared", draw_matmul, lambda a, b: a.matmul(b) ** 2)
op("matmul/quadratic_form", draw_mm, lambda a, b: (a @ b) @ (a @ b).t())


# --- structure operations inside composites -----------------------------------------------------------------
def draw_same_shapes(k, shapes=SHAPES_1D, extra_dim=0):
    def draw(data):
        shape = data.draw(shapes, label="shape")
        dim = data.draw(st.integers(-len(shape) - extra_dim, len(shape) - 1 + extra_dim), label="dim")
        return [arr(data, shape) for _ in range(k)], {"dim": dim}

    return draw


def draw_reshape(data):
    x = arr(data, data.draw(SHAPES, label="shape"))
    n = x.size
    targets = [(-1,), (1, n), (n, 1), x.shape[::-1], x.shape + (1,)]
    return [x], {"shape": data.draw(st.sampled_from(targets), label="target")}


def draw_transpose(data):
    x = arr(data, data.draw(SHAPES_1D, label="shape"))
    d0, d1 = data.draw(st.tuples(st.integers(-x.ndim, x.ndim - 1), st.integers(-x.ndim, x.ndim - 1)), label="dims")
    return [x, arr(data, x.shape)], {"d0": d0, "d1": d1}


@st.composite
def basic_keys(draw, shape):
    key = []
    for d in shape[: draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-d, d - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-d, d - 1)))
            key.append(slice(start, None, draw(st.sampled_from([None, 2]))))
        else:
            key.append(slice(None))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def draw_getitem(data):
    x = arr(data, data.draw(SHAPES_1D, label="shape"))
    return [x, arr(data, x.shape)], {"key": data.draw(basic_keys(x.shape), label="key")}


def draw_structure(data):
    m, n = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="m,n")
    return [arr(data, (m, n)), arr(data, (n, m))], {}


def structure_composite(x, y):
    z = tg.cat([x, y.t() * x], 0)  # (2m, n)
    w = tg.stack([z, z.sin()], -1)  # (2m, n, 2)
    r = w.transpose(0, 1).reshape(w.shape[1], -1)[:, 1::2]  # (n, 2m): every second entry
    return r.unsqueeze(0).exp() * r[None, :, :1]


op("cat", draw_same_shapes(2), lambda x, y, dim: tg.cat([x * y, x.sin(), y.exp()], dim) ** 2)
op("stack", draw_same_shapes(2, SHAPES, extra_dim=1), lambda x, y, dim: tg.stack([x * y, x.cos(), y], dim=dim) ** 3)
op("reshape", draw_reshape, lambda x, shape: x.reshape(*shape) ** 3)
op("transpose", draw_transpose,
   lambda x, y, d0, d1: x.transpose(d0, d1).exp() * y.transpose(d0, d1) + (x * y).transpose(d1, d0) ** 2)
op("getitem/basic", draw_getitem, lambda x, y, key: x[key] ** 2 * y[key].sin())
op("getitem/mask", draw_unary(AWAY0, SHAPES_1D), lambda x: x[x > 0].exp() * x[x > 0])
op("structure/composite", draw_structure, structure_composite)


# --- a small MLP loss ----------------------------------------------------------------------------------------
def draw_mlp(data):
    n, d, h, o = data.draw(st.tuples(*[st.integers(1, 3)] * 4), label="n,d,h,o")
    X, Y = arr(data, (n, d)), arr(data, (n, o))
    return [arr(data, (h, d)), arr(data, (h,)), arr(data, (o, h))], {"X": X, "Y": Y}


def mlp_loss(w1, b1, w2, X, Y):
    hidden = (f64(X) @ w1.t() + b1).tanh()
    return ((hidden @ w2.t()).sigmoid() - f64(Y)).pow(2).mean()


op("composite/mlp_loss", draw_mlp, mlp_loss)


# --- custom Functions whose backward is written with differentiable ops ------------------------------------------
class MulSin(tg.Function):
    """x * sin(y); backward returns unreduced gradients (apply sums them down to broadcast inputs)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y.sin()

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y.sin(), grad * x * y.cos()


class TanhSavesOutput(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.tanh()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 - out * out)


def _scale_pow_forward(ctx, x, scale):
    ctx.save_for_backward(x, out=x**3 * scale)
    ctx.scale = scale
    return ctx.saved_variables.out


def _scale_pow_backward(ctx, grad):
    x = ctx.saved_tensors[0]
    return {"x": grad * 3 * ctx.scale * x * x}


scale_cube = tg.autograd_function(forward=_scale_pow_forward, backward=_scale_pow_backward)

op("custom/two_inputs_broadcast", draw_binary(), lambda a, b: MulSin.apply(a, b))
op("custom/two_inputs_in_composite", draw_binary(), lambda a, b: MulSin.apply(a.exp(), a * b) * b)
op("custom/saved_output_composite", draw_binary(), lambda a, b: TanhSavesOutput.apply(a * b) * a)
op("custom/factory_with_constant", draw_with_scalar(REAL, AWAY0), lambda x, s: scale_cube(x.sin(), s))

OPS_BY_NAME = {o.name: o for o in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op ids"


# ---------------------------------------------------------------------------------------------------------
# the generic test
# ---------------------------------------------------------------------------------------------------------


def normal(data, shape, label):
    seed = data.draw(st.integers(0, 2**32 - 1), label=label)
    return np.random.default_rng(seed).standard_normal(shape)


def weighted_loss(op, inputs, tensors, params, G):
    out = op.f(*[inp.use(t) for inp, t in zip(inputs, tensors)], **params)
    return (out * f64(G)).sum()


def first_grads_plain(op, inputs, arrays, params, G):
    """The first gradients at ``arrays`` (leaf shapes), without create_graph: what differences perturb."""
    ts = [f64(a, requires_grad=True) for a in arrays]
    gs = tg.autograd.grad(weighted_loss(op, inputs, ts, params, G), ts)
    return [g.numpy() for g in gs]


def zeros_if_none(g, like):
    return np.zeros(like.shape) if g is None else g.numpy()


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@SETTINGS
@given(data=st.data())
def test_second_derivatives(op, data):
    arrays, params = op.draw(data)
    inputs = [draw_layout(data, a, op.layouts) for a in arrays]
    leaves = [inp.leaf() for inp in inputs]
    fd_arrays = [inp.fd_array for inp in inputs]
    out_shape = op.f(*[inp.use(f64(a)) for inp, a in zip(inputs, fd_arrays)], **params).shape
    G = normal(data, out_shape, "upstream")
    V = [normal(data, a.shape, f"V{i}") for i, a in enumerate(fd_arrays)]
    W = [normal(data, a.shape, f"W{i}") for i, a in enumerate(fd_arrays)]
    n = len(leaves)

    # 1. create_graph does not change the first gradients
    L = weighted_loss(op, inputs, leaves, params, G)
    gs = tg.autograd.grad(L, leaves, create_graph=True)
    plain = first_grads_plain(op, inputs, fd_arrays, params, G)
    for i in range(n):
        assert gs[i].shape == leaves[i].shape and gs[i].dtype == tg.float64
        np.testing.assert_allclose(gs[i].detach().numpy(), plain[i], rtol=1e-12, atol=1e-12)

    # 2. H[i][j] = d/dx_j <dL/dx_i, V_i>
    H = []
    for i in range(n):
        phi = (gs[i] * f64(V[i])).sum()
        if phi.requires_grad:
            row = tg.autograd.grad(phi, leaves, retain_graph=True, allow_unused=True)
            H.append([zeros_if_none(g, a) for g, a in zip(row, fd_arrays)])
        else:  # the first gradient does not depend on any input (linear in all of them)
            H.append([np.zeros(a.shape) for a in fd_arrays])
    for j in range(n):
        fd = np.zeros((n,) + fd_arrays[j].shape)
        for idx in np.ndindex(*fd_arrays[j].shape):
            phis = []
            for d in (EPS, -EPS):
                pert = [a.copy() for a in fd_arrays]
                pert[j][idx] += d
                gp = first_grads_plain(op, inputs, pert, params, G)
                phis.append(np.array([np.sum(gp[i] * V[i]) for i in range(n)]))
            fd[(slice(None),) + idx] = (phis[0] - phis[1]) / (2 * EPS)
        for i in range(n):
            assert H[i][j].shape == fd_arrays[j].shape
            np.testing.assert_allclose(H[i][j], fd[i], rtol=1e-5, atol=1e-6,
                                       err_msg=f"d/dx{j} of <dL/dx{i}, V{i}> (layouts {[x.layout for x in inputs]})")

    # 3. W^T H V against the second mixed difference of L, no gradients involved
    bilinear = sum(np.sum(H[i][j] * W[j]) for i in range(n) for j in range(n))

    def L_at(sv, sw):
        ts = [f64(a + sv * H2 * v + sw * H2 * w) for a, v, w in zip(fd_arrays, V, W)]
        return weighted_loss(op, inputs, ts, params, G).item()

    second_diff = (L_at(1, 1) - L_at(1, -1) - L_at(-1, 1) + L_at(-1, -1)) / (4 * H2 * H2)
    np.testing.assert_allclose(bilinear, second_diff, rtol=1e-4, atol=1e-4)
