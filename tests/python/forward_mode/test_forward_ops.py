"""Forward mode over the operation table of ``test_gradients.py`` (every differentiable operation and
spelling, the same draws and layouts): for each example, random tangents ``t`` for the inputs, and the
output's tangent (``forward_ad``) is checked

1. against float64 central differences along ``t``: ``(f(x + eps t) - f(x - eps t)) / 2 eps``;
2. against reverse mode: ``<g, J t>`` (forward) equals ``<J^T g, t>`` (backward, from ``.grad``) for a
   random upstream ``g``;

and the output's value must not change when the inputs are dual.
"""

import zlib

import numpy as np
import pytest
from fd_inputs import draw_operands, normal
from hypothesis import given
from hypothesis import strategies as st
from op_table import OPS, SETTINGS

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD

EPS = 1e-6


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@SETTINGS
@given(data=st.data())
def test_forward_mode(op, data):
    arrays, params, inputs, leaves = draw_operands(op, data)
    tangents = [normal(data, inp.fd_array.shape, f"tangent {i}") for i, inp in enumerate(inputs)]

    with fwAD.dual_level():
        duals = [fwAD.make_dual(leaf, tg.tensor(t)) for leaf, t in zip(leaves, tangents)]
        out = op.f(*[inp.use(d) for inp, d in zip(inputs, duals)], **params)
        primal, tangent = fwAD.unpack_dual(out)
        assert tangent is not None, "the output has no tangent"
        assert tangent.shape == out.shape
        jt = tangent.detach().numpy()
        value = primal.detach().numpy()

    expected = np.asarray(op.ref(*arrays, **params), dtype=np.float64)
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)

    # 1. central differences along the tangents
    def at(sign):
        ts = [tg.tensor(inp.fd_array + sign * EPS * t) for inp, t in zip(inputs, tangents)]
        return op.f(*[inp.use(x) for inp, x in zip(inputs, ts)], **params).detach().numpy()

    fd = (at(1.0) - at(-1.0)) / (2 * EPS)
    np.testing.assert_allclose(jt, fd, rtol=1e-5, atol=1e-6, err_msg="forward mode vs finite differences")

    # 2. reverse mode: <g, J t> == <J^T g, t>
    g = normal(data, expected.shape, "upstream seed")
    fresh = [inp.leaf() for inp in inputs]
    op.f(*[inp.use(x) for inp, x in zip(inputs, fresh)], **params).backward(tg.tensor(g))
    reverse = sum(float((x.grad.numpy() * t).sum()) for x, t in zip(fresh, tangents) if x.grad is not None)
    np.testing.assert_allclose(float((g * jt).sum()), reverse, rtol=1e-8, atol=1e-8,
                               err_msg="forward mode vs reverse mode")


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@SETTINGS
@given(data=st.data())
def test_forward_over_reverse(op, data):
    """The tangent formulas are recorded, and saved values carry their tangents: the tangent of a gradient
    computed with ``create_graph=True`` (forward-over-reverse, how ``hessian = jacfwd(jacrev(f))`` works) is the
    Hessian-vector product that reverse-over-reverse gives, for ``sum(g * f(x))``."""
    arrays, params, inputs, _ = draw_operands(op, data)
    tangents = [normal(data, inp.fd_array.shape, f"tangent {i}") for i, inp in enumerate(inputs)]
    expected = np.asarray(op.ref(*arrays, **params), dtype=np.float64)
    g = tg.tensor(normal(data, expected.shape, "upstream seed"))

    def grads(leaves):
        out = op.f(*[inp.use(x) for inp, x in zip(inputs, leaves)], **params)
        return tg.autograd.grad((out * g).sum(), leaves, create_graph=True, allow_unused=True)

    # reverse over reverse: d/dx <grad(x), t>
    leaves = [inp.leaf() for inp in inputs]
    first = grads(leaves)
    inner = sum((gr * tg.tensor(t)).sum() for gr, t in zip(first, tangents) if gr is not None)
    if not isinstance(inner, tg.Tensor) or not inner.requires_grad:
        return  # a gradient that does not depend on the inputs (a linear operation): nothing to compare
    rr = tg.autograd.grad(inner, leaves, allow_unused=True)

    with fwAD.dual_level():
        leaves = [inp.leaf() for inp in inputs]
        duals = [fwAD.make_dual(x, tg.tensor(t)) for x, t in zip(leaves, tangents)]
        first = grads(duals)
        fr = [None if gr is None else fwAD.unpack_dual(gr).tangent for gr in first]
    for i, (a, b) in enumerate(zip(fr, rr)):
        a = np.zeros(inputs[i].fd_array.shape) if a is None else a.detach().numpy()
        b = np.zeros(inputs[i].fd_array.shape) if b is None else b.numpy()
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10, err_msg=f"Hessian-vector product of input {i}")


def test_jvp_of_jvp_through_reductions_and_views():
    # the inner tangent d/dx sin(x)·t carries the outer level's tangent: d²/dx² sin = -sin

    xa = np.array([0.5, 1.0, 2.0])
    e0 = tg.tensor([1.0, 0.0, 0.0], dtype=tg.float64)
    cases = [(lambda b: b.sin().sum(), -np.sin(xa[0])), (lambda b: b.sin()[0], -np.sin(xa[0])),
             (lambda b: b.sin().mean(), -np.sin(xa[0]) / 3), (lambda b: b.sin()[:2].sum(), -np.sin(xa[0]))]
    for f, expected in cases:
        with fwAD.dual_level() as outer:
            a = fwAD.make_dual(tg.tensor(xa), e0, level=outer)
            with fwAD.dual_level() as inner:
                b = fwAD.make_dual(a, e0, level=inner)
                t = fwAD.unpack_dual(f(b), level=inner).tangent
                tt = fwAD.unpack_dual(t, level=outer).tangent
        assert tt is not None
        np.testing.assert_allclose(tt.numpy(), expected, rtol=1e-12)


def test_dual_levels_belong_to_their_thread():
    import threading


    seen = {}
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0]), tg.tensor([2.0]))

        def other():
            seen["count"] = tg._tapegrad._dual_level_count()
            seen["tangent"] = fwAD.unpack_dual(d * 3).tangent
            with fwAD.dual_level() as level:  # its own stack: level 0, exited on this thread
                seen["level"] = level

        th = threading.Thread(target=other)
        th.start()
        th.join()
        np.testing.assert_allclose(fwAD.unpack_dual(d * 3).tangent.numpy(), [6.0])
    assert seen == {"count": 0, "tangent": None, "level": 0}


def test_matrix_product_of_a_dual_operand_that_does_not_require_grad():
    # the dual operand is saved for the other's gradient though it gets no edge: y = d @ W^T,
    # dy/dW = d (once read the wrong saved operand, W itself)
    w = tg.tensor([[1.0], [2.0]], dtype=tg.float64, requires_grad=True)
    x = tg.tensor([[0.7]], dtype=tg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tg.ones_like(x))
        for y in (d.mm(w.t()), d.unsqueeze(0).bmm(w.t().unsqueeze(0)), d.reshape(1) @ w.t()):
            (g,) = tg.autograd.grad(y.sum(), w, retain_graph=True)
            np.testing.assert_allclose(g.numpy(), [[0.7], [0.7]], rtol=1e-12)
            # d/dW of the tangent-weighted square: t = Σ 2 y·ty with ty = W^T, y = 0.7 W^T
            t = fwAD.unpack_dual((y * y).sum()).tangent
            (gt,) = tg.autograd.grad(t, w)
            np.testing.assert_allclose(gt.numpy(), 2.8 * w.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@SETTINGS
@given(data=st.data())
def test_batched_jacobian_rows(op, data):
    """The Jacobian engine's one batched run over the graph (NOTE [Batched rows] in
    ``autograd/jacobian.rs``, behind ``jacrev``) gives, for every operation's formula, the rows the ordinary
    engine gives one at a time; and the rows applied to a random direction match float64 central
    differences along it."""
    arrays, params, inputs, leaves = draw_operands(op, data)
    out = op.f(*[inp.use(x) for inp, x in zip(inputs, leaves)], **params)
    n = out.numel()
    if n == 0:
        return
    rows = tg._tapegrad._jacobian_rows([out], leaves)
    assert rows is not None, "the batched run declined a plain graph"
    shapes = [inp.fd_array.shape for inp in inputs]
    got = [np.zeros((n, *s)) if r is None else r.detach().numpy() for r, s in zip(rows, shapes)]
    for k in range(n):
        seed = np.zeros(n)
        seed[k] = 1.0
        gs = tg.autograd.grad(out, leaves, tg.tensor(seed.reshape(out.shape)), retain_graph=True, allow_unused=True)
        for j, g in enumerate(gs):
            expect = np.zeros(shapes[j]) if g is None else g.numpy()
            np.testing.assert_allclose(got[j][k], expect, rtol=1e-10, atol=1e-12, err_msg=f"row {k}, input {j}")

    tangents = [normal(data, s, f"direction {i}") for i, s in enumerate(shapes)]
    jt = sum((r.reshape(n, -1) @ t.reshape(-1)) for r, t in zip(got, tangents))

    def at(sign):
        ts = [tg.tensor(inp.fd_array + sign * EPS * t) for inp, t in zip(inputs, tangents)]
        return op.f(*[inp.use(x) for inp, x in zip(inputs, ts)], **params).detach().numpy().reshape(-1)

    fd = (at(1.0) - at(-1.0)) / (2 * EPS)
    np.testing.assert_allclose(jt, fd, rtol=1e-5, atol=1e-6, err_msg="rows vs finite differences")


# ---------------------------------------------------------------------------------------------------------
# The operations outside test_gradients.py's table (most with a forward rule derived from their backward
# formula): forward mode against float64 central differences and against reverse mode, and the batched
# Jacobian rows against the per-row engine, at fixed draws inside each operation's smooth domain.
# Left out, with the reason: sign, floor, ceil, round, trunc, frac's integer part, fmod/remainder's
# quotient (piecewise constant: a zero derivative almost everywhere, nothing for differences to check
# beyond zero, and PyTorch's rule is zero too); sort/topk/kthvalue/median/cummax/cummin/max/min's indices
# (integer outputs); random operations (dropout: a fixed mask is mul); the nn losses and layers, covered by
# test_nn_layers.py's gradients (their forward rules are their compositions' rules, tested here).
# ---------------------------------------------------------------------------------------------------------


def _domain(rng, shape, kind):
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "unit":
        return rng.uniform(-0.9, 0.9, shape)
    if kind == "gt1":
        return rng.uniform(1.5, 3.0, shape)
    if kind == "distinct":  # well separated values (no ties for max, sort, median)
        return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.37 + 0.1
    return rng.standard_normal(shape)


def _method(name):
    return lambda x: getattr(x, name)()


def _functional(name):
    return lambda x: getattr(tg.nn.functional, name)(x)


_M = tg.tensor([[0.3, -1.2], [0.8, 0.5], [-0.4, 1.1]], dtype=tg.float64)
_IDX = tg.tensor([2, 0], dtype=tg.int64)
_MASK = tg.tensor([[True, False, True, False], [False, True, False, False], [True, True, False, True]])

MORE = [
    # (name, function, shapes, domain)
    *[(n, _method(n), [(3, 4)], d) for n, d in [
        ("exp", "real"), ("log", "pos"), ("sin", "real"), ("cos", "real"), ("tan", "unit"), ("tanh", "real"),
        ("sigmoid", "real"), ("sqrt", "pos"), ("rsqrt", "pos"), ("log1p", "pos"), ("expm1", "real"),
        ("asin", "unit"), ("acos", "unit"), ("atan", "real"), ("sinh", "real"), ("cosh", "real"),
        ("asinh", "real"), ("acosh", "gt1"), ("atanh", "unit"), ("erf", "real"), ("erfc", "real"),
        ("erfinv", "unit"), ("log2", "pos"), ("log10", "pos"), ("reciprocal", "pos"), ("square", "real"),
        ("exp2", "real"), ("abs", "pos"), ("relu", "pos"), ("neg", "real"), ("frac", "pos"), ("t", "real"),
        ("nan_to_num", "real"),
    ]],
    ("sum_dim", lambda x: x.sum(1), [(3, 4)], "real"),
    ("mean_keepdim", lambda x: x.mean(0, keepdim=True), [(3, 4)], "real"),
    ("prod", lambda x: x.prod(1), [(3, 4)], "pos"),
    ("prod_all", lambda x: x.prod(), [(2, 3)], "pos"),
    ("cumsum", lambda x: x.cumsum(1), [(3, 4)], "real"),
    ("cumprod", lambda x: x.cumprod(0), [(3, 4)], "pos"),
    ("logsumexp", lambda x: x.logsumexp(1), [(3, 4)], "real"),
    ("amax", lambda x: x.amax(1), [(3, 4)], "distinct"),
    ("amin", lambda x: x.amin(0), [(3, 4)], "distinct"),
    ("max_dim", lambda x: x.max(1)[0], [(3, 4)], "distinct"),
    ("min_dim", lambda x: x.min(0)[0], [(3, 4)], "distinct"),
    ("max_all", lambda x: x.max(), [(3, 4)], "distinct"),
    ("norm", lambda x: x.norm(), [(3, 4)], "real"),
    ("norm_dim", lambda x: x.norm(dim=1), [(3, 4)], "real"),
    ("var", lambda x: x.var(1), [(3, 4)], "real"),
    ("std", lambda x: x.std(0), [(3, 4)], "real"),
    ("softmax", lambda x: x.softmax(1), [(3, 4)], "real"),
    ("log_softmax", lambda x: x.log_softmax(0), [(3, 4)], "real"),
    ("flip", lambda x: x.flip(1), [(3, 4)], "real"),
    ("roll", lambda x: x.roll(1, 1), [(3, 4)], "real"),
    ("repeat", lambda x: x.repeat(2, 1), [(3, 4)], "real"),
    ("tril", lambda x: x.tril(), [(3, 4)], "real"),
    ("triu", lambda x: x.triu(1), [(3, 4)], "real"),
    ("diagonal", lambda x: x.diagonal(), [(3, 4)], "real"),
    ("trace", lambda x: x.trace(), [(3, 3)], "real"),
    ("masked_fill", lambda x: x.masked_fill(_MASK, 0.5), [(3, 4)], "real"),
    ("index_select", lambda x: x.index_select(0, _IDX), [(3, 4)], "real"),
    ("gather", lambda x: x.gather(1, tg.tensor([[0, 3], [2, 2], [1, 0]])), [(3, 4)], "real"),
    ("narrow", lambda x: x.narrow(1, 1, 2), [(3, 4)], "real"),
    ("select", lambda x: x.select(0, 1), [(3, 4)], "real"),
    ("sort_values", lambda x: x.sort(1)[0], [(3, 4)], "distinct"),
    ("topk_values", lambda x: x.topk(2)[0], [(3, 4)], "distinct"),
    ("kthvalue", lambda x: x.kthvalue(2, 1)[0], [(3, 4)], "distinct"),
    ("median_dim", lambda x: x.median(1)[0], [(3, 5)], "distinct"),
    ("cummax", lambda x: x.cummax(1)[0], [(3, 4)], "distinct"),
    ("cummin", lambda x: x.cummin(0)[0], [(3, 4)], "distinct"),
    ("atan2", lambda x, y: tg.atan2(x, y), [(3, 4), (4,)], "pos"),
    ("fmod", lambda x: x.fmod(0.7), [(3, 4)], "pos"),
    ("remainder", lambda x: x.remainder(0.7), [(3, 4)], "pos"),
    ("maximum", lambda x, y: tg.maximum(x, y), [(3, 4), (3, 4)], "distinct"),
    ("minimum", lambda x, y: tg.minimum(x, y), [(3, 4), (4,)], "distinct"),
    ("lerp", lambda x, y, w: tg.lerp(x, y, w), [(3, 4), (3, 4), (4,)], "real"),
    ("addcmul", lambda x, y, z: tg.addcmul(x, y, z, value=0.5), [(3, 4), (3, 4), (3, 4)], "real"),
    ("addcdiv", lambda x, y, z: tg.addcdiv(x, y, z, value=0.5), [(3, 4), (3, 4), (3, 4)], "pos"),
    ("kron", lambda x, y: tg.kron(x, y), [(2, 2), (2, 3)], "real"),
    ("cross", lambda x, y: tg.cross(x, y, dim=1), [(2, 3), (2, 3)], "real"),
    ("outer", lambda x, y: tg.outer(x, y), [(3,), (4,)], "real"),
    ("inner", lambda x, y: tg.inner(x, y), [(2, 4), (3, 4)], "real"),
    ("dot", lambda x, y: tg.dot(x, y), [(4,), (4,)], "real"),
    ("einsum", lambda x, y: tg.einsum("ij,jk->ik", x, y), [(2, 3), (3, 4)], "real"),
    ("tensordot", lambda x, y: tg.tensordot(x, y, dims=1), [(2, 3), (3, 4)], "real"),
    ("cdist", lambda x, y: tg.cdist(x, y), [(3, 2), (4, 2)], "real"),
    ("matmul_broadcast", lambda x, y: x @ y, [(2, 3, 4), (4, 2)], "real"),
    ("mm_const", lambda x: x.t() @ _M, [(3, 4)], "real"),
    ("where", lambda x, y: tg.where(_MASK, x, y), [(3, 4), (4,)], "real"),
    ("linalg_inv", lambda x: tg.linalg.inv(x + 3 * tg.eye(3, dtype=tg.float64)), [(3, 3)], "real"),
    ("linalg_det", lambda x: tg.linalg.det(x), [(3, 3)], "real"),
    ("linalg_solve", lambda x, y: tg.linalg.solve(x + 3 * tg.eye(3, dtype=tg.float64), y), [(3, 3), (3, 2)], "real"),
    ("linalg_cholesky", lambda x: tg.linalg.cholesky(x @ x.mT + tg.eye(3, dtype=tg.float64)), [(3, 3)], "real"),
    ("linalg_eigvalsh", lambda x: tg.linalg.eigvalsh(x + x.mT), [(3, 3)], "real"),
    ("linalg_svdvals", lambda x: tg.linalg.svdvals(x), [(4, 3)], "real"),
    ("linalg_qr_r", lambda x: tg.linalg.qr(x)[1], [(4, 3)], "real"),
    *[(f"F.{n}", _functional(n), [(3, 4)], d) for n, d in [
        ("gelu", "real"), ("silu", "real"), ("softplus", "real"), ("elu", "real"), ("selu", "real"),
        ("leaky_relu", "pos"), ("hardtanh", "unit"), ("logsigmoid", "real"), ("normalize", "real"),
    ]],
    ("F.layer_norm", lambda x, w, b: tg.nn.functional.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)], "real"),
    ("F.linear", lambda x, w, b: tg.nn.functional.linear(x, w, b), [(3, 4), (2, 4), (2,)], "real"),
    ("F.mse_loss", lambda x, y: tg.nn.functional.mse_loss(x, y), [(3, 4), (3, 4)], "real"),
    ("F.pad", lambda x: tg.nn.functional.pad(x, (1, 2)), [(3, 4)], "real"),
]


@pytest.mark.parametrize("case", MORE, ids=[c[0] for c in MORE])
def test_forward_mode_more(case):
    _, f, shapes, kind = case
    rng = np.random.default_rng(zlib.crc32(case[0].encode()))  # a fixed draw per operation
    arrays = [_domain(rng, s, kind) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]

    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(tg.tensor(a), tg.tensor(t)) for a, t in zip(arrays, tangents)])
        primal, tangent = fwAD.unpack_dual(out)
        assert tangent is not None, "the output has no tangent"
        jt = tangent.detach().numpy()
    np.testing.assert_allclose(primal.numpy(), f(*[tg.tensor(a) for a in arrays]).numpy(), rtol=1e-12, atol=1e-12)

    def at(sign):
        return f(*[tg.tensor(a + sign * EPS * t) for a, t in zip(arrays, tangents)]).numpy()

    fd = (at(1.0) - at(-1.0)) / (2 * EPS)
    np.testing.assert_allclose(jt, fd, rtol=1e-5, atol=1e-6, err_msg="forward mode vs finite differences")

    g = rng.standard_normal(jt.shape)
    leaves = [tg.tensor(a, requires_grad=True) for a in arrays]
    f(*leaves).backward(tg.tensor(g))
    reverse = sum(float((x.grad.numpy() * t).sum()) for x, t in zip(leaves, tangents) if x.grad is not None)
    np.testing.assert_allclose(float((g * jt).sum()), reverse, rtol=1e-8, atol=1e-8, err_msg="forward vs reverse")

    # the Jacobian engine's batched rows against the per-row engine
    leaves = [tg.tensor(a, requires_grad=True) for a in arrays]
    out = f(*leaves)
    rows = tg._tapegrad._jacobian_rows([out], leaves)
    assert rows is not None
    n = out.numel()
    for k in range(n):
        seed = np.zeros(n)
        seed[k] = 1.0
        gs = tg.autograd.grad(out, leaves, tg.tensor(seed.reshape(out.shape)), retain_graph=True, allow_unused=True)
        for j, (gr, r) in enumerate(zip(gs, rows)):
            expect = np.zeros(shapes[j]) if gr is None else gr.numpy()
            got = np.zeros(shapes[j]) if r is None else r[k].detach().numpy()
            np.testing.assert_allclose(got, expect, rtol=1e-10, atol=1e-12, err_msg=f"row {k}, input {j}")
