"""PyTorch's `test_autograd.py` tests of reentrant backward (a backward run inside a custom backward).

Covers part 1 of the file (characters 0-192000). Oracle: the gradient of x * y with respect to x is y, and
an error raised inside the inner backward reaches the outer caller unchanged.
"""

import numpy as np
import pytest

import tapegrad as tg


def arr(t):
    return np.asarray(t.detach().numpy())


# covers: test_autograd.py::TestAutograd::test_simple_reentrant
def test_simple_reentrant():
    Y = np.random.default_rng(2).standard_normal((2, 2)).astype(np.float32)

    class Reenter(tg.Function):
        @staticmethod
        def forward(ctx, x):
            with tg.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = tg.tensor(Y, requires_grad=True)
                ctx.out = ctx.x * ctx.y
            return ctx.out.detach()

        @staticmethod
        def backward(ctx, g):
            with tg.enable_grad():
                ctx.out.sum().backward()  # a backward inside a backward
            return ctx.x.grad * g

    x = tg.randn(2, 2, requires_grad=True)
    Reenter.apply(x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), Y, rtol=1e-6)


class SimulateBackwardError(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    @tg.once_differentiable
    def backward(ctx, g):
        raise Exception("Simulate error on backward pass")


# covers: test_autograd.py::TestAutograd::test_reentrant_child_error
def test_reentrant_child_error():
    a = tg.rand(3, 3, requires_grad=True)
    c = a * a
    b = tg.rand(3, 3, requires_grad=True)
    e = b * b
    f = SimulateBackwardError.apply(e)
    reentrant_root = f.sum()

    class ReentrantFunc(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            reentrant_root.backward()  # the child backward raises
            return g

    d = ReentrantFunc.apply(c)
    with pytest.raises(Exception, match="Simulate error"):
        d.sum().backward()
