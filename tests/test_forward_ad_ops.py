"""Forward mode over the operation table of ``test_ops_grad.py`` (every differentiable operation and
spelling, the same draws and layouts): for each example, random tangents ``t`` for the inputs, and the
output's tangent (``forward_ad``) is checked

1. against float64 central differences along ``t``: ``(f(x + eps t) - f(x - eps t)) / 2 eps``;
2. against reverse mode: ``<g, J t>`` (forward) equals ``<J^T g, t>`` (backward, from ``.grad``) for a
   random upstream ``g``;

and the output's value must not change when the inputs are dual.
"""

import numpy as np
import pytest
from fd_inputs import draw_operands, normal
from hypothesis import given
from hypothesis import strategies as st
from test_ops_grad import OPS, SETTINGS

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
