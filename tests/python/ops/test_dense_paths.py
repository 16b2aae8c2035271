"""The paths of the dense workloads outside the GEMM kernel (issue 19): the layout of a product's
gradients when an operand is a transposed view (`nn.Linear`'s `x @ w.t()`), the one-pass backward
of `relu` and `tanh`, and the engine's batching of independent branches joined by small nodes
(W6's shape). Oracles: NumPy float64 formulas, float64 central differences, and PyTorch's hook
order recorded as constants.
"""

import numpy as np
import pytest

import tapegrad as tg


def npy(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weight_of_a_transposed_product_gets_a_contiguous_gradient_of_the_right_value(dtype):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((7, 5)).astype(dtype)
    w_np = rng.standard_normal((3, 5)).astype(dtype)
    g_np = rng.standard_normal((7, 3)).astype(dtype)
    x = tg.from_numpy(x_np).requires_grad_()
    w = tg.from_numpy(w_np).requires_grad_()
    out = x.mm(w.t())
    out.backward(tg.from_numpy(g_np))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    # out = x w^T: dL/dw = g^T x, dL/dx = g w
    np.testing.assert_allclose(npy(w.grad), g_np.T.astype(np.float64) @ x_np, rtol=tol, atol=tol)
    np.testing.assert_allclose(npy(x.grad), g_np.astype(np.float64) @ w_np, rtol=tol, atol=tol)
    assert w.grad.is_contiguous() and x.grad.is_contiguous()


def test_first_operand_transposed_gets_its_gradient_in_its_own_layout():
    rng = np.random.default_rng(2)
    a_np = rng.standard_normal((6, 4))  # used as a.t(): 4x6 @ 6x3
    b_np = rng.standard_normal((6, 3))
    g_np = rng.standard_normal((4, 3))
    a = tg.from_numpy(a_np).requires_grad_()
    b = tg.from_numpy(b_np).requires_grad_()
    at = a.t()
    at.retain_grad()
    at.mm(b).backward(tg.from_numpy(g_np))
    # d/d(a^T) = g b^T, so d/da = b g^T
    np.testing.assert_allclose(npy(at.grad), g_np @ b_np.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npy(a.grad), b_np @ g_np.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npy(b.grad), a_np @ g_np, rtol=1e-12, atol=1e-12)
    # Both stored gradients are row-major, as PyTorch's (a retained gradient is a contiguous copy).
    assert a.grad.stride() == (4, 1) and at.grad.stride() == (6, 1)


def test_transposed_products_second_order_against_finite_differences():
    rng = np.random.default_rng(3)
    x = tg.from_numpy(rng.standard_normal((4, 3))).requires_grad_()
    w = tg.from_numpy(rng.standard_normal((5, 3))).requires_grad_()
    a = tg.from_numpy(rng.standard_normal((4, 3))).requires_grad_()

    def f(x, w, a):
        return (a.t().mm(x.mm(w.t()).tanh())).relu() * 1.5

    assert tg.autograd.gradcheck(f, (x, w, a))
    assert tg.autograd.gradgradcheck(f, (x, w, a))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_and_tanh_backward_values(dtype):
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((300, 257)).astype(dtype)
    x_np[0, :4] = 0.0
    g_np = rng.standard_normal(x_np.shape).astype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    x = tg.from_numpy(x_np).requires_grad_()
    x.relu().backward(tg.from_numpy(g_np))
    np.testing.assert_array_equal(npy(x.grad), np.where(x_np > 0, g_np, 0).astype(np.float64))
    x = tg.from_numpy(x_np).requires_grad_()
    x.tanh().backward(tg.from_numpy(g_np))
    y = np.tanh(x_np.astype(np.float64))
    np.testing.assert_allclose(npy(x.grad), g_np * (1 - y * y), rtol=tol, atol=tol)


def test_relu_backward_selects_instead_of_multiplying():
    # A non-finite gradient where the output is 0 gives 0 (a product would give NaN); a NaN input
    # (output NaN) passes its gradient through, as PyTorch's where-based formula does.
    x = tg.tensor([-1.0, 0.0, 2.0, float("nan")], requires_grad=True)
    x.relu().backward(tg.tensor([float("inf"), float("nan"), 3.0, 4.0]))
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 4.0]


def test_tanh_second_derivative_is_still_recorded():
    x_np = np.linspace(-2, 2, 9)
    x = tg.from_numpy(x_np).requires_grad_()
    (g,) = tg.autograd.grad(x.tanh().sum(), (x,), create_graph=True)
    (gg,) = tg.autograd.grad(g.sum(), (x,))
    t = np.tanh(x_np)
    np.testing.assert_allclose(npy(g), 1 - t * t, rtol=1e-14)
    np.testing.assert_allclose(npy(gg), -2 * t * (1 - t * t), rtol=1e-12, atol=1e-15)


def test_branches_joined_by_a_chain_of_sums_match_numpy():
    # W6's shape: independent branches of products and tanh whose scalar sums are added in a chain.
    rng = np.random.default_rng(5)
    n, branches, depth = 130, 5, 3
    x_np = rng.standard_normal((n, n)) / 8
    w_np = [rng.standard_normal((n, n)) / 8 for _ in range(branches * depth)]
    x = tg.from_numpy(x_np)
    ws = [tg.from_numpy(w).requires_grad_() for w in w_np]
    total = None
    for b in range(branches):
        h = x
        for k in range(depth):
            h = h.mm(ws[b * depth + k]).tanh()
        total = h.sum() if total is None else total + h.sum()
    total.backward()
    for b in range(branches):
        hs = [x_np]
        for k in range(depth):
            hs.append(np.tanh(hs[-1] @ w_np[b * depth + k]))
        g = np.ones((n, n))
        for k in reversed(range(depth)):
            g = g * (1 - hs[k + 1] ** 2)
            want = hs[k].T @ g
            np.testing.assert_allclose(npy(ws[b * depth + k].grad), want, rtol=1e-10, atol=1e-12)
            g = g @ w_np[b * depth + k].T


def test_hooks_in_parallel_branches_fire_in_pytorchs_order():
    # Branches large enough to be batched, joined by a chain of sums, with hooks on some of their
    # nodes: the hooks fire in the order PyTorch gives (recorded: h2, m2, m1, h0, m0).
    rng = np.random.default_rng(0)
    x = tg.from_numpy(rng.standard_normal((160, 128))).requires_grad_()
    log = []
    total = None
    for b in range(3):
        m = x * (b + 1.0)
        m.register_hook(lambda g, b=b: log.append(f"m{b}"))
        h = m.tanh()
        if b != 1:
            h.register_hook(lambda g, b=b: log.append(f"h{b}"))
        s = h.sum()
        total = s if total is None else total + s
    total.backward()
    assert log == ["h2", "m2", "m1", "h0", "m0"]
    want = sum((b + 1.0) * (1 - np.tanh((b + 1.0) * npy(x)) ** 2) for b in range(3))
    np.testing.assert_allclose(npy(x.grad), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_])
@pytest.mark.parametrize("shape", [(70, 65), (64, 1000), (1, 5000), (5000, 1)])
def test_contiguous_copy_of_strided_matrices_matches_numpy(dtype, shape):
    rng = np.random.default_rng(6)
    a_np = (rng.standard_normal(shape) * 50).astype(dtype)
    a = tg.from_numpy(a_np)
    for view, want in [
        (a.t(), a_np.T),
        (a[:, ::3] if shape[1] > 3 else a.t(), a_np[:, ::3] if shape[1] > 3 else a_np.T),
        (a.t()[::2], a_np.T[::2]),
        (a.expand(2, *shape).select(0, 1).t(), a_np.T),
    ]:
        c = view.contiguous()
        assert c.is_contiguous() and tuple(c.shape) == want.shape
        np.testing.assert_array_equal(c.numpy(), want)


def test_large_transposed_copy_matches_numpy_and_keeps_the_source():
    rng = np.random.default_rng(7)
    a_np = rng.standard_normal((1100, 900)).astype(np.float32)
    a = tg.from_numpy(a_np.copy())
    c = a.t().contiguous()
    np.testing.assert_array_equal(c.numpy(), a_np.T)
    np.testing.assert_array_equal(a.numpy(), a_np)
    c.add_(1.0)  # a copy: writing it leaves the source alone
    np.testing.assert_array_equal(a.numpy(), a_np)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_one_is_the_input_and_square_backward_is_two_x(dtype):
    x_np = np.array([-2.5, -0.0, 0.0, 1.0, 3.0e30, np.inf, -np.inf, np.nan], dtype=dtype)
    got = (tg.from_numpy(x_np) ** 1).numpy()
    np.testing.assert_array_equal(got, x_np)
    assert np.signbit(got[1]) and not np.signbit(got[2])
    rng = np.random.default_rng(8)
    v_np = rng.standard_normal((64, 33)).astype(dtype)
    g_np = rng.standard_normal((64, 33)).astype(dtype)
    v = tg.from_numpy(v_np).requires_grad_()
    (v**2).backward(tg.from_numpy(g_np))
    np.testing.assert_allclose(npy(v.grad), 2.0 * v_np.astype(np.float64) * g_np, rtol=1e-6)
