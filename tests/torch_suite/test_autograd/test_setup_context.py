"""PyTorch's `test_autograd.py` tests of `Function.setup_context` (TestAutograd), carried over.

Oracle: closed-form derivatives (d x^2 = 2x, d exp = exp, the product rule) in NumPy.
"""

import numpy as np

import tapegrad as tg


def arr(t):
    return np.asarray(t.detach().numpy())


X = np.array([0.3, -1.2, 2.0])


# covers: test_autograd.py::TestAutograd::test_custom_function_setup_context_simple
def test_custom_function_setup_context_simple():
    class MySquare(tg.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = tg.tensor(X, requires_grad=True)
    y = MySquare.apply(x)
    (gx,) = tg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(arr(gx), 2 * X)


# covers: test_autograd.py::TestAutograd::test_custom_function_setup_context_multi_output
def test_custom_function_setup_context_multi_output():
    class MySquare(tg.Function):
        @staticmethod
        def forward(x):
            two_x = x * 2
            return x ** 2, two_x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            _, two_x = output
            ctx.two_x = two_x

        @staticmethod
        @tg.once_differentiable
        def backward(ctx, g, _):
            return g * ctx.two_x

    x = tg.tensor(X, requires_grad=True)
    y, _ = MySquare.apply(x)
    (gx,) = tg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(arr(gx), 2 * X)


# covers: test_autograd.py::TestAutograd::test_custom_function_setup_context_multi_input
def test_custom_function_setup_context_multi_input():
    class MyReshape(tg.Function):
        @staticmethod
        def forward(x, shape, scale_forward, scale_backward):
            return x.reshape(shape) * scale_forward

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, shape, scale_forward, scale_backward = inputs
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    class MyReshapeRef(tg.Function):
        @staticmethod
        def forward(ctx, x, shape, scale_forward, scale_backward):
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape
            return x.reshape(shape) * scale_forward

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    a = np.arange(6.0).reshape(3, 2) / 7
    results = []
    for cls in (MyReshape, MyReshapeRef):
        x = tg.tensor(a, requires_grad=True)
        y = cls.apply(x, (2, 3), 2.0, 4.0)
        np.testing.assert_allclose(arr(y), a.reshape(2, 3) * 2.0)
        (gx,) = tg.autograd.grad((y * tg.tensor(np.arange(6.0).reshape(2, 3))).sum(), x)
        results.append(arr(gx))
    # Both spellings give the same gradient: the upstream one reshaped, times scale_backward.
    np.testing.assert_allclose(results[0], np.arange(6.0).reshape(3, 2) * 4.0)
    np.testing.assert_allclose(results[0], results[1])


# covers: test_autograd.py::TestAutograd::test_setup_context_when_forward_has_default_args
def test_setup_context_when_forward_has_default_args():
    class PowFunction(tg.Function):
        @staticmethod
        def forward(x, y=3):
            return x ** y

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs  # the default is filled in
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return g * y * x ** (y - 1), None

    class PowFunctionWithClassmethod(tg.Function):
        @classmethod
        def forward(cls, x, y=3):
            return x ** y

        @classmethod
        def setup_context(cls, ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @classmethod
        def backward(cls, ctx, g):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return g * y * x ** (y - 1), None

    for cls in (PowFunction, PowFunctionWithClassmethod):
        x = tg.tensor(X, requires_grad=True)
        np.testing.assert_allclose(arr(cls.apply(x)), X ** 3)
        (gx,) = tg.autograd.grad(cls.apply(x).sum(), x)
        np.testing.assert_allclose(arr(gx), 3 * X ** 2)
        (gx,) = tg.autograd.grad(cls.apply(x, 2).sum(), x)
        np.testing.assert_allclose(arr(gx), 2 * X)
