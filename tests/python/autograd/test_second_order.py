"""Second (and third) derivatives: backward passes recorded with ``create_graph=True``, differentiated again.

For each entry of the operation table (one test id per entry, ``test_second_derivatives[<op>]``) hypothesis
draws shapes (broadcasting pairs, size-1 dimensions, 0-d), float64 values inside the operation's smooth
domain, an upstream gradient ``G`` and two directions ``V``, ``W`` (one array per input). Inputs are built in
the layouts of ``fd_inputs.py`` (contiguous, a transposed leaf, a leaf with stride 2, a contiguous leaf used
through ``.transpose(-1, -2)``), which also holds the value domains. With ``L = sum(G * f(x_1, ..., x_n))`` the test checks:

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

import numpy as np
import pytest
from fd_inputs import (
    AWAY0,
    DISTINCT,
    EXAMPLES,
    GRID_BOUND,
    GRID_HALF,
    PAIRS,
    POS,
    REAL,
    Op,
    arr,
    draw_binary,
    draw_layout,
    draw_operands,
    matmul_operands,
    mm_operands,
    normal,
    one_operand_draws,
    shapes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EPS = 1e-6  # central differences of the first gradient
H2 = 1e-4  # second mixed difference of the function

SHAPES = shapes(max_side=3)
SHAPES_1D = shapes(max_side=3, min_dims=1)
draw_unary, draw_with_scalar = one_operand_draws(SHAPES)


def f64(a, requires_grad=False):
    """A float64 tensor (a 0-d NumPy result is an np.float64 scalar, which tg.tensor would read as float32)."""
    return tg.tensor(np.array(a, dtype=np.float64), requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------------------
# the operation table (value domains, layouts and Op in fd_inputs.py); ``f(*tensors, **params)`` is the
# function differentiated twice
# ---------------------------------------------------------------------------------------------------------

OPS = []


def op(name, draw, f, **kw):
    OPS.append(Op(name, draw, f, **kw))


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
MATMUL_KINDS = ("1d@1d", "2d@1d", "1d@2d", "2d@2d", "batched@2d", "2d@batched", "batched@batched")
draw_mm = mm_operands(max_side=3)
draw_matmul = matmul_operands(MATMUL_KINDS, max_side=3, batch_dims=1, batch_side=2)

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
    arrays, params, inputs, leaves = draw_operands(op, data)
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


# ---------------------------------------------------------------------------------------------------------
# third (and fourth) derivatives of element-wise operations
# ---------------------------------------------------------------------------------------------------------


def sigmoid_np(x):
    return 1.0 / (1.0 + np.exp(-x))


def _sig3(x):
    s = sigmoid_np(x)
    return s * (1 - s) * (1 - 6 * s + 6 * s * s)


# name -> (f, domain, NumPy third derivative)
THIRD = {
    "sin": (lambda x: x.sin(), REAL, lambda x: -np.cos(x)),
    "cos": (lambda x: x.cos(), REAL, np.sin),
    "exp": (lambda x: x.exp(), REAL, np.exp),
    "log": (lambda x: x.log(), POS, lambda x: 2.0 / x**3),
    "sqrt": (lambda x: x.sqrt(), POS, lambda x: 0.375 * x**-2.5),
    "tanh": (lambda x: x.tanh(), REAL, lambda x: (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)),
    "sigmoid": (lambda x: x.sigmoid(), st.floats(-6.0, 6.0), _sig3),
    "pow/cube": (lambda x: x**3, REAL, lambda x: np.full_like(x, 6.0)),
    "pow/float": (lambda x: x**2.5, POS, lambda x: 2.5 * 1.5 * 0.5 * x**-0.5),
    "pow/scalar_base": (lambda x: 1.7**x, REAL, lambda x: np.log(1.7) ** 3 * 1.7**x),
    "div/reciprocal": (lambda x: 1.0 / x, AWAY0, lambda x: -6.0 / x**4),
    "abs/cubed": (lambda x: x.abs() ** 3, AWAY0, lambda x: 6.0 * np.sign(x)),
    "custom/tanh_saves_output": (lambda x: TanhSavesOutput.apply(x), REAL,
                                 lambda x: (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)),
}


def nth_grads(f, x, n):
    """[d^k/dx^k sum(f(x)) for k = 1..n] of an element-wise f (the k-th one keeps its graph if k < n)."""
    out, gs = f(x), []
    for k in range(n):
        (g,) = tg.autograd.grad(out.sum(), x, create_graph=k < n - 1)
        gs.append(g)
        out = g
    return gs


@pytest.mark.parametrize("name", list(THIRD))
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_third_derivative(name, data):
    f, domain, third = THIRD[name]
    x_np = arr(data, data.draw(SHAPES, label="shape"), domain)
    inp = draw_layout(data, x_np, ("contig", "t", "step"))
    x = inp.leaf()
    g1, g2, g3 = nth_grads(f, x, 3)
    assert g1.requires_grad and g2.requires_grad and g1.grad_fn is not None and g2.grad_fn is not None
    assert g3.shape == x.shape and not g3.requires_grad and g3.grad_fn is None
    np.testing.assert_allclose(g3.numpy(), third(x_np), rtol=1e-9, atol=1e-9)

    # the same against central differences of tapegrad's second derivative (element-wise: a diagonal)
    def second(a):
        return nth_grads(f, f64(a, requires_grad=True), 2)[1].numpy()

    fd = (second(x_np + EPS) - second(x_np - EPS)) / (2 * EPS)
    np.testing.assert_allclose(g3.numpy(), fd, rtol=1e-5, atol=1e-5)


@settings(max_examples=EXAMPLES, deadline=None)
@given(x_np=hnp.arrays(np.float64, SHAPES, elements=REAL))
def test_fourth_derivative_of_sin_and_exp(x_np):
    x = f64(x_np, requires_grad=True)
    np.testing.assert_allclose(nth_grads(lambda t: t.sin(), x, 4)[3].numpy(), np.sin(x_np), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(nth_grads(lambda t: t.exp(), x, 4)[3].numpy(), np.exp(x_np), rtol=1e-9, atol=1e-9)
    # x**3: the fourth derivative is 0 (the third is the constant 6, whatever graph it carries)
    g3 = nth_grads(lambda t: t**3, x, 3)[2]
    np.testing.assert_allclose(g3.detach().numpy(), np.full(x_np.shape, 6.0), rtol=1e-12)


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_mixed_third_derivative_with_broadcasting(data):
    # f = x^2 y^3 sin(x y) summed over the broadcast shape; d3/(dy dx dx) of sum f against a closed form
    sx, sy = data.draw(PAIRS, label="shapes").input_shapes
    X, Y = arr(data, sx), arr(data, sy)
    x, y = f64(X, requires_grad=True), f64(Y, requires_grad=True)
    (gx,) = tg.autograd.grad((x**2 * y**3 * (x * y).sin()).sum(), x, create_graph=True)
    (gxx,) = tg.autograd.grad(gx.sum(), x, create_graph=True)
    (gxxy,) = tg.autograd.grad(gxx.sum(), y)
    # d2/dx2 [x^2 y^3 sin(xy)] = y^3 [2 sin(xy) + 4 x y cos(xy) - x^2 y^2 sin(xy)]; then d/dy
    Xb, Yb = np.broadcast_arrays(X, Y)
    s, c = np.sin(Xb * Yb), np.cos(Xb * Yb)
    d = (3 * Yb**2 * (2 * s + 4 * Xb * Yb * c - Xb**2 * Yb**2 * s)
         + Yb**3 * (2 * Xb * c + 4 * Xb * c - 4 * Xb**2 * Yb * s - 2 * Xb**2 * Yb * s - Xb**3 * Yb**2 * c))
    # sum over the broadcast dimensions of y
    expected = d.sum(axis=tuple(range(d.ndim - Y.ndim))) if d.ndim > Y.ndim else d
    expected = expected.sum(axis=tuple(i for i, n in enumerate(Y.shape) if n == 1 and expected.shape[i] != 1),
                            keepdims=True).reshape(Y.shape)
    assert gxxy.shape == y.shape
    np.testing.assert_allclose(gxxy.numpy(), expected, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------------------
# Hessian-vector products of a small MLP loss, through .backward(create_graph=True)
# ---------------------------------------------------------------------------------------------------------


def relu_mlp_loss(w1, b1, w2, b2, X, labels):
    """Two layers, relu, log-softmax cross-entropy (max subtracted as a constant)."""
    logits = (X @ w1.t() + b1).relu() @ w2.t() + b2
    shifted = logits - logits.max(1, keepdim=True)[0].detach()
    logp = shifted - shifted.exp().sum(1, keepdim=True).log()
    picked = logp[tg.tensor(np.eye(logits.shape[1], dtype=bool)[labels])]
    return -picked.mean()


@pytest.mark.parametrize("seed", range(4))
def test_mlp_hessian_vector_product_via_backward(seed):
    rng = np.random.default_rng(seed)
    n, d, h, o = 5, 3, 4, 3
    X = rng.standard_normal((n, d))
    labels = rng.integers(0, o, n)
    P = [rng.standard_normal(s) for s in ((h, d), (h,), (o, h), (o,))]
    # relu's kink must stay further than the difference step from every pre-activation
    assert np.abs(X @ P[0].T + P[1]).min() > 1e-3
    V = [rng.standard_normal(p.shape) for p in P]

    params = [f64(p, requires_grad=True) for p in P]
    loss = relu_mlp_loss(*params, f64(X), labels)
    loss.backward(create_graph=True)
    grads = [p.grad for p in params]
    assert all(g.requires_grad and g.grad_fn is not None for g in grads)
    hv = tg.autograd.grad(sum((g * f64(v)).sum() for g, v in zip(grads, V)), params, allow_unused=True)
    hv = [zeros_if_none(t, p) for t, p in zip(hv, P)]

    def grad_at(arrays):
        ts = [f64(a, requires_grad=True) for a in arrays]
        return [g.numpy() for g in tg.autograd.grad(relu_mlp_loss(*ts, f64(X), labels), ts)]

    # finite differences of the gradient along V: (grad(P + eps V) - grad(P - eps V)) / 2 eps
    gp = grad_at([p + EPS * v for p, v in zip(P, V)])
    gm = grad_at([p - EPS * v for p, v in zip(P, V)])
    for k in range(len(P)):
        np.testing.assert_allclose(hv[k], (gp[k] - gm[k]) / (2 * EPS), rtol=1e-5, atol=1e-7, err_msg=f"param {k}")
    # the second-layer bias enters linearly and through softmax: its Hessian block is not 0
    assert np.abs(hv[3]).max() > 1e-6


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_backward_create_graph_accumulates_differentiable_gradients(data):
    # two create_graph backwards into the same leaf: x.grad = g1 + g2 keeps both histories
    X = arr(data, data.draw(SHAPES, label="shape"))
    V = normal(data, X.shape, "V")
    x = f64(X, requires_grad=True)
    x.sin().sum().backward(create_graph=True)
    (x * x * x).sum().backward(create_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), np.cos(X) + 3 * X**2, rtol=1e-12)
    (hv,) = tg.autograd.grad((x.grad * f64(V)).sum(), x)
    np.testing.assert_allclose(hv.numpy(), (-np.sin(X) + 6 * X) * V, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------
# custom functions (test_function.py covers the one-input Cube and a saved exp output)
# ---------------------------------------------------------------------------------------------------------


class Hypot(tg.Function):
    """sqrt(x^2 + y^2) saving its inputs and its output; backward uses both (x / out, y / out)."""

    @staticmethod
    def forward(ctx, x, y):
        out = (x * x + y * y).sqrt()
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        return grad * x / out, grad * y / out


def test_custom_function_saving_inputs_and_output_full_hessian():
    X, Y = np.array([[0.5, -1.2], [2.0, 0.3]]), np.array([1.5, -0.7])  # y broadcasts over rows
    x, y = f64(X, requires_grad=True), f64(Y, requires_grad=True)
    gx, gy = tg.autograd.grad(Hypot.apply(x, y).sum(), (x, y), create_graph=True)
    assert gx.grad_fn is not None and gy.grad_fn is not None
    Xb, Yb = np.broadcast_arrays(X, Y)
    r = np.hypot(Xb, Yb)
    np.testing.assert_allclose(gy.detach().numpy(), (Yb / r).sum(0), rtol=1e-12)
    hxx, hxy = tg.autograd.grad(gx.sum(), (x, y), retain_graph=True)
    hyx, hyy = tg.autograd.grad(gy.sum(), (x, y))
    # Hessian of r(x, y): [[y^2, -xy], [-xy, x^2]] / r^3, element-wise, summed over y's broadcast dimension
    np.testing.assert_allclose(hxx.numpy(), Yb**2 / r**3, rtol=1e-12)
    np.testing.assert_allclose(hxy.numpy(), (-Xb * Yb / r**3).sum(0), rtol=1e-12)
    np.testing.assert_allclose(hyx.numpy(), -Xb * Yb / r**3, rtol=1e-12)
    np.testing.assert_allclose(hyy.numpy(), (Xb**2 / r**3).sum(0), rtol=1e-12)


def test_custom_function_used_twice_with_transposed_input():
    # the same custom node class on a transposed leaf and on a product; gradient of the gradient norm
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 2))
    V = rng.standard_normal((2, 3))

    def loss(t):
        return (TanhSavesOutput.apply(t.t()) * TanhSavesOutput.apply(t.t() * 2.0)).sum()

    a = tg.tensor(np.ascontiguousarray(A.T)).t().requires_grad_()  # (3, 2), not contiguous
    (g,) = tg.autograd.grad(loss(a), a, create_graph=True)
    (hv,) = tg.autograd.grad((g * f64(V.T)).sum(), a)

    def g_at(M):
        t = f64(M, requires_grad=True)
        return tg.autograd.grad(loss(t), t)[0].numpy()

    fd = (g_at(A + EPS * V.T) - g_at(A - EPS * V.T)) / (2 * EPS)
    np.testing.assert_allclose(hv.numpy(), fd, rtol=1e-5, atol=1e-7)


# --- once_differentiable --------------------------------------------------------------------------------


class OnceMul(tg.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    @tg.once_differentiable
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x


def _three_leaves():
    return f64([1.0, 2.0], True), f64([3.0, -4.0], True), f64([0.5, 1.5], True)


def test_once_differentiable_refuses_through_backward_create_graph():
    x, y, _ = _three_leaves()
    (OnceMul.apply(x, y) ** 2).sum().backward(create_graph=True)
    # first derivatives are right: d/dx (xy)^2 = 2 x y^2
    np.testing.assert_allclose(x.grad.detach().numpy(), [18.0, 64.0])
    for wrt in (x, y):  # refused whichever input the second derivative is taken for
        with pytest.raises(RuntimeError, match="once_differentiable") as e:
            tg.autograd.grad(x.grad.sum(), wrt, retain_graph=True)
        assert "OnceMul" in str(e.value)


def test_once_differentiable_leaves_other_paths_differentiable():
    x, y, z = _three_leaves()
    loss = (OnceMul.apply(x, y) ** 2).sum() + (z**3).sum()
    gx, gy, gz = tg.autograd.grad(loss, (x, y, z), create_graph=True)
    # z's path does not pass through the once-differentiable backward
    (hzz,) = tg.autograd.grad(gz.sum(), z, retain_graph=True)
    np.testing.assert_allclose(hzz.numpy(), [3.0, 9.0])
    with pytest.raises(RuntimeError, match="once_differentiable"):
        tg.autograd.grad(gy.sum(), x, retain_graph=True)
    # a gradient that only comes from the forward value (dL/dz' for L = OnceMul(x, y) * z') is fine
    z2 = f64([2.0, 3.0], True)
    (gz2,) = tg.autograd.grad((OnceMul.apply(x, y) * z2).sum(), z2, create_graph=True)
    (hx,) = tg.autograd.grad(gz2.sum(), x)
    np.testing.assert_allclose(hx.numpy(), [3.0, -4.0])


def test_once_differentiable_in_the_factory_spelling():
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @tg.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        assert not tg.is_grad_enabled()
        return grad * x.exp()

    once_exp = tg.autograd_function(forward=forward, backward=backward, name="OnceExp")
    x = f64([0.0, 1.0], True)
    (g,) = tg.autograd.grad((once_exp(x) * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([0.0, 1.0]) * [1.0, 2.0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="once_differentiable") as e:
        g.sum().backward()
    assert "OnceExp" in str(e.value)


# ---------------------------------------------------------------------------------------------------------
# the create_graph contract: history of the results, retain_graph's default
# ---------------------------------------------------------------------------------------------------------

NONLINEAR = {
    "sin": (lambda x, y: x.sin() * y, [[0.3, -1.0], [2.0, 0.5]], [1.5, -0.5]),
    "mul": (lambda x, y: x * y, [[0.3, -1.0]], [1.5, -0.5]),
    "div": (lambda x, y: x / y, [[0.3, -1.0]], [[1.5], [-0.5]]),
    "mm": (lambda x, y: x @ y, [[0.3, -1.0], [2.0, 0.5]], [[1.5, -0.5], [0.2, 0.1]]),
    "custom": (lambda x, y: MulSin.apply(x, y), [[0.3, -1.0]], [1.5, -0.5]),
}


@pytest.mark.parametrize("name", list(NONLINEAR))
def test_create_graph_controls_the_history_of_gradients(name):
    f, X, Y = NONLINEAR[name]
    x, y = f64(X, True), f64(Y, True)
    gs = tg.autograd.grad(f(x, y).sum(), (x, y), create_graph=True)
    for g in gs:
        assert g.requires_grad and g.grad_fn is not None and not g.is_leaf
    gs = tg.autograd.grad(f(x, y).sum(), (x, y))
    for g in gs:
        assert not g.requires_grad and g.grad_fn is None and g.is_leaf
    f(x, y).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None and y.grad.grad_fn is not None
    x.grad, y.grad = None, None
    tg.autograd.backward(f(x, y).sum())
    assert not x.grad.requires_grad and x.grad.grad_fn is None and not y.grad.requires_grad


def test_create_graph_records_even_under_no_grad():
    # as in PyTorch: create_graph=True turns recording on for the backward pass, whatever the caller's mode
    X = np.array([0.5, 1.0])
    x = f64(X, True)
    y = x.sin().sum()
    with tg.no_grad():
        (g,) = tg.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert tg.is_grad_enabled()
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), -np.sin(X), rtol=1e-12)


SPELLINGS = {
    "autograd.grad": lambda out, x, **kw: tg.autograd.grad(out, x, **kw),
    "Tensor.backward": lambda out, x, **kw: out.backward(**kw),
    "autograd.backward": lambda out, x, **kw: tg.autograd.backward(out, **kw),
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_retain_graph_defaults_to_create_graph(spelling):
    run = SPELLINGS[spelling]
    x = f64([0.5, -1.0], True)

    out = (x.sin() * x).sum()
    run(out, x, create_graph=True)
    run(out, x)  # the graph was kept: a second pass works (and now frees it)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(out, x)

    out = (x.sin() * x).sum()
    run(out, x)  # create_graph=False: freed
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(out, x)

    out = (x.sin() * x).sum()
    run(out, x, create_graph=True, retain_graph=False)  # explicitly freed
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(out, x)


def test_create_graph_with_retain_graph_false():
    # as in PyTorch: the recorded backward of sin only needs the leaf, so it survives freeing the first graph;
    # that of x sin x passes through the first graph's SinBackward again, whose saved input is gone
    X = np.array([0.5, -1.0, 2.0])
    x = f64(X, True)
    (g,) = tg.autograd.grad(x.sin().sum(), x, create_graph=True, retain_graph=False)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), -np.sin(X), rtol=1e-12)
    (g,) = tg.autograd.grad((x.sin() * x).sum(), x, create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        tg.autograd.grad(g.sum(), x)
