"""A view's history after its base (or another view of it) is modified in place.

NOTE [Stale views] in src/tensor/mod.rs: the view's grad_fn is regenerated from the base's current
history, so gradients through the view describe the values it holds now. Oracles are NumPy
expressions of the same program.
"""

import numpy as np

import tapegrad as tg

A = np.arange(12.0).reshape(3, 4) - 5.5
W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def test_view_of_a_base_modified_in_place_gets_the_new_history():
    x = tg.tensor(A, requires_grad=True)
    b = -x
    d = b.t()  # made before the write
    b.div_(2)
    assert d.grad_fn.name() == "AsStridedBackward"
    np.testing.assert_array_equal(d.detach().numpy(), (-A / 2).T)
    (d * tg.tensor(W)).sum().backward()
    # d = (-x / 2).t(), so d(sum(d * W))/dx = -W.T / 2; the stale history would give -W.T.
    np.testing.assert_allclose(x.grad.numpy(), -W.T / 2)


def test_view_of_a_view_sees_a_write_through_its_sibling():
    x = tg.tensor(A, requires_grad=True)
    b = x * 1.0
    row = b[1]
    col = b[:, 2]
    col.mul_(3)  # also changes row[2]
    (row * tg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    want = np.zeros_like(A)
    want[1] = [1.0, 2.0, 3.0 * 3, 4.0]
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_expanded_view_of_a_modified_base_sums_its_gradient():
    x = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    b = -x
    e = b.expand(3)
    b.mul_(5)
    (e * tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)).sum().backward()
    # e = [-5x, -5x, -5x]: the gradient of the shared element is the sum of all three.
    assert x.grad.item() == -5 * (1 + 2 + 3)


def test_view_of_a_leaf_updated_under_no_grad_follows_the_leaf():
    w = tg.ones(2, 3, requires_grad=True)
    wt = w.t()
    with tg.no_grad():
        w.mul_(3)
    np.testing.assert_array_equal(wt.detach().numpy(), np.full((3, 2), 3.0))
    (wt * tg.tensor(W[:3, :2])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), W[:3, :2].T)


def test_views_without_history_are_left_alone():
    x = tg.tensor(A, requires_grad=True)
    b = x * 1.0
    d = b.detach().t()
    b.add_(1)
    assert d.grad_fn is None and not d.requires_grad
    np.testing.assert_array_equal(d.numpy(), (A + 1).T)
