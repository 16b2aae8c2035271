"""The Jacobian transforms' batched path (NOTE [Batched rows] in ``src/autograd/jacobian.rs``): ``jacrev``,
``jacfwd``, ``hessian`` and ``autograd.functional.jacobian`` run the function once and push every row (or
column) through the recorded graph in one Rust call. Checked against closed forms computed in NumPy, and
the fallbacks (custom Functions, hooks) against the same closed forms."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.functional import jacobian as af_jacobian

RNG = np.random.default_rng(7)
SIZES = (5, 7, 6, 4)
WS = [RNG.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(SIZES, SIZES[1:])]
BS = [RNG.standard_normal(b) for b in SIZES[1:]]
X = RNG.standard_normal(SIZES[0])


def mlp(x):
    for i, (w, b) in enumerate(zip(WS, BS)):
        x = tg.tensor(w) @ x + tg.tensor(b)
        if i < len(WS) - 1:
            x = x.tanh()
    return x


def mlp_jacobian(x):
    """J = W3 diag(1 - h2²) W2 diag(1 - h1²) W1 (h the hidden activations)."""
    j = np.eye(len(x))
    for i, (w, b) in enumerate(zip(WS, BS)):
        x = w @ x + b
        j = w @ j
        if i < len(WS) - 1:
            x = np.tanh(x)
            j = (1 - x**2)[:, None] * j
    return j


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_mlp_jacobian_matches_the_closed_form(transform):
    jac = getattr(tg.func, transform)(mlp)(tg.tensor(X))
    assert not jac.requires_grad
    np.testing.assert_allclose(jac.numpy(), mlp_jacobian(X), rtol=1e-12, atol=1e-12)


def test_functional_jacobian_matches_the_closed_form():
    np.testing.assert_allclose(af_jacobian(mlp, tg.tensor(X)).numpy(), mlp_jacobian(X), rtol=1e-12, atol=1e-12)


def two_in_two_out(x, y):
    a = tg.tensor(WS[0][:3, :4])  # [3, 4]
    return {"prod": x * y, "lin": (x @ a.t() + y.sum()).sin()}


def two_in_two_out_jacobians(x, y):
    a = WS[0][:3, :4]
    z = a @ x + y.sum()
    return {
        "prod": (np.diag(y), np.diag(x)),
        "lin": (np.cos(z)[:, None] * a, np.cos(z)[:, None] * np.ones((3, 4))),
    }


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_pytree_outputs_and_several_inputs(transform):
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    jac = getattr(tg.func, transform)(two_in_two_out, argnums=(0, 1))(tg.tensor(x), tg.tensor(y))
    expected = two_in_two_out_jacobians(x, y)
    assert set(jac) == set(expected)
    for key, blocks in expected.items():
        for got, want in zip(jac[key], blocks):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=key)


def test_functional_jacobian_of_tuples_and_an_unused_input():
    x, y, unused = (RNG.standard_normal(4) for _ in range(3))
    out = af_jacobian(lambda x, y, u: tuple(two_in_two_out(x, y).values()),
                      (tg.tensor(x), tg.tensor(y), tg.tensor(unused)))
    expected = two_in_two_out_jacobians(x, y)
    for got_row, key, n in zip(out, ("prod", "lin"), (4, 3)):
        for got, want in zip(got_row, expected[key] + (np.zeros((n, 4)),)):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_chunk_size_splits_the_rows_without_changing_them():
    full = tg.func.jacrev(mlp)(tg.tensor(X)).numpy()
    for chunk in (1, 3, 4, 100):
        np.testing.assert_allclose(tg.func.jacrev(mlp, chunk_size=chunk)(tg.tensor(X)).numpy(), full,
                                   rtol=1e-14, atol=0)


def test_hessian_matches_the_closed_form():
    # f = sum(tanh(W x)): H = Wᵀ diag(-2 t (1 - t²)) W, t = tanh(W x)
    w = WS[1]
    x = RNG.standard_normal(w.shape[1])
    h = tg.func.hessian(lambda x: (tg.tensor(w) @ x).tanh().sum())(tg.tensor(x))
    t = np.tanh(w @ x)
    np.testing.assert_allclose(h.numpy(), w.T @ np.diag(-2 * t * (1 - t**2)) @ w, rtol=1e-10, atol=1e-12)


def test_jacobian_rows_stay_differentiable_inside_grad():
    # d/dx sum(J(x)) for f = sin(x) * c: J = diag(c cos x), sum(J) = Σ c cos x, derivative -c sin x
    c = RNG.standard_normal(5)
    x = RNG.standard_normal(5)
    for transform in (tg.func.jacrev, tg.func.jacfwd):
        g = tg.func.grad(lambda x, tr=transform: tr(lambda x: x.sin() * tg.tensor(c))(x).sum())(tg.tensor(x))
        np.testing.assert_allclose(g.numpy(), -c * np.sin(x), rtol=1e-12, atol=1e-12)
    xt = tg.tensor(x, requires_grad=True)
    j = af_jacobian(lambda x: x.sin() * tg.tensor(c), xt, create_graph=True)
    (g,) = tg.autograd.grad(j.sum(), xt)
    np.testing.assert_allclose(g.numpy(), -c * np.sin(x), rtol=1e-12, atol=1e-12)


class Cube(tg.Function):
    calls = {"forward": 0, "backward": 0, "jvp": 0}

    @staticmethod
    def forward(ctx, x):
        Cube.calls["forward"] += 1
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        Cube.calls["backward"] += 1
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g

    @staticmethod
    def jvp(ctx, t):
        Cube.calls["jvp"] += 1
        (x,) = ctx.saved_tensors
        return 3 * x**2 * t


def test_a_custom_function_keeps_working():
    x = RNG.standard_normal(4)
    expected = np.diag(3 * np.cos(x) * np.sin(x) ** 2)
    for key in Cube.calls:
        Cube.calls[key] = 0
    jr = tg.func.jacrev(lambda x: Cube.apply(x.sin()))(tg.tensor(x))
    np.testing.assert_allclose(jr.numpy(), expected, rtol=1e-12, atol=1e-12)
    # reverse: one run of the function; its backward runs once per row on a slice of the batch
    assert Cube.calls == {"forward": 1, "backward": 4, "jvp": 0}
    for key in Cube.calls:
        Cube.calls[key] = 0
    jf = tg.func.jacfwd(lambda x: Cube.apply(x.sin()))(tg.tensor(x))
    np.testing.assert_allclose(jf.numpy(), expected, rtol=1e-12, atol=1e-12)
    # forward: the Function's own forward rule, column by column
    assert Cube.calls["jvp"] == 4 and Cube.calls["backward"] == 0


def test_hooks_in_the_graph_run_once_per_row():
    seen = []

    def f(x):
        h = x * 2.0
        h.register_hook(lambda g: seen.append(tuple(g.shape)) or g * 3.0)
        return h.sin()

    x = RNG.standard_normal(3)
    jac = tg.func.jacrev(f)(tg.tensor(x))
    np.testing.assert_allclose(jac.numpy(), np.diag(6.0 * np.cos(2 * x)), rtol=1e-12, atol=1e-12)
    assert seen == [(3,)] * 3  # the hook sees each row's gradient, as without batching


def test_an_output_independent_of_the_input():
    x = tg.tensor(RNG.standard_normal(3))
    for transform in (tg.func.jacrev, tg.func.jacfwd):
        jac = transform(lambda x: (x.sum() * 0.0 + tg.ones(2, dtype=tg.float64), x.exp()))(x)
        np.testing.assert_allclose(jac[0].numpy(), np.zeros((2, 3)), rtol=0, atol=0)
        np.testing.assert_allclose(jac[1].numpy(), np.diag(np.exp(x.numpy())), rtol=1e-12)
        jac = transform(lambda x: tg.ones(2, dtype=tg.float64))(x)
        np.testing.assert_allclose(jac.numpy(), np.zeros((2, 3)), rtol=0, atol=0)


def test_functional_forward_mode_jacobian_matches_the_closed_form():
    jac = af_jacobian(mlp, tg.tensor(X), strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(jac.numpy(), mlp_jacobian(X), rtol=1e-12, atol=1e-12)
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    out = af_jacobian(lambda x, y: tuple(two_in_two_out(x, y).values()), (tg.tensor(x), tg.tensor(y)),
                      strategy="forward-mode", vectorize=True)
    expected = two_in_two_out_jacobians(x, y)
    for got_row, key in zip(out, ("prod", "lin")):
        for got, want in zip(got_row, expected[key]):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # a custom Function: its own jvp, column by column
    for k in Cube.calls:
        Cube.calls[k] = 0
    jac = af_jacobian(lambda x: Cube.apply(x.sin()), tg.tensor(x), strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(jac.numpy(), np.diag(3 * np.cos(x) * np.sin(x) ** 2), rtol=1e-12, atol=1e-12)
    assert Cube.calls["jvp"] == 4
