"""Custom backwards that themselves run autograd: ``tg.autograd.grad`` or ``.backward()`` on another
graph, from inside a backward pass that is already running (and that released the GIL)."""

import threading

import numpy as np
import pytest
from oracles import run_in_threads

import tapegrad as tg

X = np.array([0.5, -1.25, 2.0, 0.0, 3.5])


class InnerGrad(tg.Function):
    """y = sin(x)**2 * 3; backward finds dy/dx by running autograd on a fresh graph of its own."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin() ** 2 * 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with tg.enable_grad():
            xi = x.detach().clone()
            xi.requires_grad = True
            yi = xi.sin() ** 2 * 3
            (dx,) = tg.autograd.grad(yi.sum(), [xi])
        assert dx.grad_fn is None  # the inner pass recorded nothing
        return grad_output * dx


def test_backward_that_calls_autograd_grad():
    x = tg.tensor(X, requires_grad=True)
    c = tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=tg.float64)
    (InnerGrad.apply(x) * c).sum().backward()
    # d/dx 3 sin^2 x = 6 sin x cos x
    np.testing.assert_allclose(x.grad.numpy(), c.numpy() * 6 * np.sin(X) * np.cos(X), rtol=1e-12)


class InnerBackward(tg.Function):
    """y = 2 * x; backward also runs ``.backward()`` on another graph, into a different leaf."""

    side = None

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        side = InnerBackward.side
        with tg.enable_grad():
            (side * side * grad_output.sum()).sum().backward()
        return grad_output * 2


def test_backward_that_calls_backward_on_another_graph():
    side = tg.tensor([1.0, -2.0, 3.0], dtype=tg.float64, requires_grad=True)
    InnerBackward.side = side
    try:
        x = tg.tensor(X, requires_grad=True)
        (InnerBackward.apply(x) * 3).sum().backward()
    finally:
        InnerBackward.side = None
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 6.0))
    # inner loss = sum(side^2) * sum(grad_output) = sum(side^2) * 15, so d/dside = 30 * side
    np.testing.assert_array_equal(side.grad.numpy(), 30 * np.array([1.0, -2.0, 3.0]))


class IntoSameLeaf(tg.Function):
    """y = 2 * w; backward also backpropagates (w * 3).sum() into the same leaf w."""

    leaf = None

    @staticmethod
    def forward(ctx, w):
        return w * 2

    @staticmethod
    def backward(ctx, grad_output):
        with tg.enable_grad():
            (IntoSameLeaf.leaf * 3).sum().backward()
        return grad_output * 2


def test_inner_backward_into_the_leaf_the_outer_pass_also_reaches():
    w = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    IntoSameLeaf.leaf = w
    try:
        IntoSameLeaf.apply(w).sum().backward()
    finally:
        IntoSameLeaf.leaf = None
    np.testing.assert_array_equal(w.grad.numpy(), [5.0, 5.0])


class Nested(tg.Function):
    """y = x * (depth + 1); backward differentiates a Nested of one less depth by autograd.grad,
    so a backward runs inside a backward inside a backward... ``depth`` levels deep."""

    @staticmethod
    def forward(ctx, x, depth):
        ctx.depth = depth
        return x * float(depth + 1)

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.depth == 0:
            return grad_output, None
        with tg.enable_grad():
            probe = tg.ones(1, dtype=tg.float64, requires_grad=True)
            (g,) = tg.autograd.grad(Nested.apply(probe, ctx.depth - 1).sum(), [probe])
        # g = depth (from the level below); the factor of this level is depth + 1 = g + 1
        return grad_output * (g.item() + 1), None


def test_deeply_nested_reentrant_backward():
    depth = 40
    x = tg.tensor(X, requires_grad=True)
    Nested.apply(x, depth).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, depth + 1.0))


class RaisesInside(tg.Function):
    """backward runs an inner grad that fails (a freed graph); the error comes out unchanged."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad_output):
        with tg.enable_grad():
            inner = RaisesInside.inner
            tg.autograd.grad(inner, [RaisesInside.inner_leaf])  # second time through a freed graph
        return grad_output


def test_error_from_reentrant_pass_reaches_the_caller_and_graph_stays_usable():
    leaf = tg.tensor([2.0], dtype=tg.float64, requires_grad=True)
    inner = (leaf * leaf).sum()
    tg.autograd.grad(inner, [leaf])  # frees the inner graph
    RaisesInside.inner, RaisesInside.inner_leaf = inner, leaf
    x = tg.tensor(X, requires_grad=True)
    loss = (RaisesInside.apply(x) * 2).sum()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward(retain_graph=True)
    # The outer graph was not harmed: fix the inner one and run again.
    RaisesInside.inner = (leaf * leaf).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(5, 2.0))


def test_reentrant_backwards_on_several_threads():
    # Every thread's outer backward calls an inner autograd.grad, all at once.
    n_threads, iterations = 4, 15
    go = threading.Barrier(n_threads, timeout=60)

    def worker(i):
        c = tg.tensor(np.arange(5.0) + i)
        go.wait()
        for _ in range(iterations):
            x = tg.tensor(X, requires_grad=True)
            (InnerGrad.apply(x) * c).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), c.numpy() * 6 * np.sin(X) * np.cos(X), rtol=1e-12)

    # a deadlocked reentrant backward fails with TimeoutError
    assert run_in_threads(worker, num_threads=n_threads, timeout=60, pass_index=True, collect=True) == []
