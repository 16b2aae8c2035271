"""W4's backward outside the products (issue 19): an element-wise backward writes over a gradient
nobody else holds (NOTE [A gradient nobody else holds]). Values against NumPy in float64; a gradient
that someone else can still read (a hook's copy, a NumPy array's memory, a retained gradient) must
keep its values; the products' gradients (both operands, a transposed one, second order) as before."""

import numpy as np
import pytest
from oracles import mlp_grads_np

import tapegrad as tg


@pytest.mark.parametrize("sizes", [(64, 96, 80, 32), (256, 512, 512, 256)])
def test_mlp_weight_gradients_match_numpy(sizes):
    rng = np.random.default_rng(1)
    batch = sizes[0]
    ws_np = [rng.standard_normal((a, b)) / np.sqrt(a) for a, b in zip(sizes, sizes[1:])]
    x_np, y_np = rng.standard_normal((batch, sizes[0])), rng.standard_normal((batch, sizes[-1]))
    ws = [tg.tensor(w.astype(np.float32), requires_grad=True) for w in ws_np]
    x, y = tg.tensor(x_np.astype(np.float32)), tg.tensor(y_np.astype(np.float32))
    h = x
    for i, w in enumerate(ws):
        h = h.mm(w)
        if i < len(ws) - 1:
            h = h.relu()
    ((h - y) ** 2).mean().backward()
    for w, want in zip(ws, mlp_grads_np(x_np, ws_np, y_np)):
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=2e-3, atol=2e-5)


def test_both_gradients_of_a_large_product_and_a_transposed_operand():
    # 256 x 512 x 384, b as a transposed view (nn.Linear's layout): its gradient is computed
    # transposed and reaches .grad contiguous.
    rng = np.random.default_rng(2)
    a_np, bt_np, g_np = rng.standard_normal((256, 512)), rng.standard_normal((384, 512)), rng.standard_normal((256, 384))
    a = tg.tensor(a_np.astype(np.float32), requires_grad=True)
    bt = tg.tensor(bt_np.astype(np.float32), requires_grad=True)
    a.mm(bt.t()).backward(tg.tensor(g_np.astype(np.float32)))
    np.testing.assert_allclose(a.grad.numpy(), g_np @ bt_np, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(bt.grad.numpy(), (a_np.T @ g_np).T, rtol=1e-4, atol=1e-3)
    assert bt.grad.is_contiguous()


def test_second_order_through_a_large_product_still_records():
    # create_graph: the products and the fused passes are recorded. With loss = sum((a b)^2) / 2,
    # g_a = (a b) b^T and sum(g_a * a) = sum((a b)^2), whose gradient in a is 2 (a b) b^T.
    rng = np.random.default_rng(3)
    a_np, b_np = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    a = tg.tensor(a_np, requires_grad=True)
    b = tg.tensor(b_np, requires_grad=True)
    loss = (a.mm(b) ** 2).sum() / 2
    (ga,) = tg.autograd.grad(loss, [a], create_graph=True)
    (ga * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (a_np @ b_np) @ b_np.T, rtol=1e-9, atol=1e-9)


def test_a_gradient_a_hook_kept_is_not_overwritten():
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((300, 200)).astype(np.float32)
    x = tg.tensor(x_np, requires_grad=True)
    h = x * 1.5
    y = h.relu()
    kept = []
    y.register_hook(lambda g: kept.append(g))
    g_np = rng.standard_normal((300, 200)).astype(np.float32)
    y.backward(tg.tensor(g_np))
    np.testing.assert_array_equal(kept[0].numpy(), g_np)
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * g_np * (1.5 * x_np > 0), rtol=1e-6)


def test_a_numpy_gradient_is_not_overwritten():
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((300, 200)).astype(np.float32)
    x = tg.tensor(x_np, requires_grad=True)
    g_np = rng.standard_normal((300, 200)).astype(np.float32)
    before = g_np.copy()
    x.tanh().backward(tg.from_numpy(g_np))
    np.testing.assert_array_equal(g_np, before)
    np.testing.assert_allclose(x.grad.numpy(), before * (1 - np.tanh(x_np) ** 2), rtol=1e-5, atol=1e-6)


def test_a_retained_gradient_keeps_its_values():
    rng = np.random.default_rng(6)
    z_np = rng.standard_normal((300, 200)).astype(np.float32)
    c_np = rng.standard_normal((300, 200)).astype(np.float32)
    z = tg.tensor(z_np, requires_grad=True)
    y = z.relu()
    y.retain_grad()
    (y * tg.tensor(c_np)).sum().backward()
    # y.grad (= c) is the gradient relu's backward receives: it must keep its values
    np.testing.assert_array_equal(y.grad.numpy(), c_np)
    np.testing.assert_array_equal(z.grad.numpy(), np.where(z_np > 0, c_np, 0))


def test_a_fresh_gradient_gives_the_same_values_as_a_shared_one():
    # The same relu backward once on a gradient only it holds (mul's output, overwritten in place) and
    # once on one a hook also holds (a new tensor): identical values.
    rng = np.random.default_rng(7)
    z_np = rng.standard_normal((512, 300)).astype(np.float32)
    c = tg.tensor(rng.standard_normal((512, 300)).astype(np.float32))
    grads = []
    for hold in (False, True):
        z = tg.tensor(z_np, requires_grad=True)
        y = z.relu()
        if hold:
            y.register_hook(lambda g: grads.append(g))
        (y * c).sum().backward()
        grads.append(z.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[2])
    np.testing.assert_array_equal(grads[0], np.where(z_np > 0, c.numpy(), 0))
