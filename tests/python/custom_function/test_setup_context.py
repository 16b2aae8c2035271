"""PyTorch 2's spelling of a custom Function: ``forward(*args)`` without ctx and a static
``setup_context(ctx, inputs, output)``; the same mechanism as ``forward(ctx, ...)``."""

import numpy as np
import pytest

import tapegrad as tg


class MulSC(tg.Function):
    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.save_for_backward(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


def test_setup_context_gradients_match_the_product_rule():
    a = np.array([1.5, -2.0, 3.0])
    b = np.array([0.5, 4.0, -1.0])
    x = tg.tensor(a, requires_grad=True)
    y = tg.tensor(b, requires_grad=True)
    out = MulSC.apply(x, y)
    np.testing.assert_allclose(out.detach().numpy(), a * b)
    assert type(out.grad_fn).__name__ == "Node" and out.grad_fn.name() == "MulSCBackward"
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), b)
    np.testing.assert_allclose(y.grad.numpy(), a)


def test_setup_context_sees_caller_inputs_defaults_and_raw_output():
    seen = {}

    class Scale(tg.Function):
        @staticmethod
        def forward(x, k=2.0):
            seen["fwd_grad_mode"] = tg.is_grad_enabled()
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen["inputs"] = inputs
            seen["output_requires_grad"] = output.requires_grad
            seen["grad_mode"] = tg.is_grad_enabled()
            seen["needs"] = tuple(ctx.needs_input_grad)
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    Scale.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    # The caller's own tensor (with requires_grad), defaults filled in; the output has no
    # history yet; grad mode is off in both, as in PyTorch.
    assert seen["inputs"][0] is x and seen["inputs"][1] == 2.0
    assert seen["output_requires_grad"] is False
    assert seen["fwd_grad_mode"] is False and seen["grad_mode"] is False
    assert seen["needs"] == (True, False)
    x.grad = None
    Scale.apply(x, k=3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_setup_context_multi_output_and_non_differentiable():
    class Two(tg.Function):
        @staticmethod
        def forward(x):
            return x * 2, x * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            assert isinstance(output, tuple) and len(output) == 2
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(inputs[0], output[0])

        @staticmethod
        def backward(ctx, g, h):
            x, doubled = ctx.saved_tensors
            # The saved output is the value forward returned.
            np.testing.assert_allclose(doubled.detach().numpy(), 2 * x.detach().numpy())
            assert h is not None and h.tolist() == [0.0, 0.0]
            return g * 2

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    assert b.requires_grad is False
    a.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_setup_context_saved_input_is_version_checked():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    out = MulSC.apply(y, tg.tensor([3.0, 4.0]))
    with tg.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_setup_context_second_order_through_saved_input():
    class Cube(tg.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = tg.tensor([2.0], requires_grad=True)
    (g,) = tg.autograd.grad(Cube.apply(x), x, create_graph=True)
    assert g.tolist() == [12.0]
    (gg,) = tg.autograd.grad(g, x)
    assert gg.tolist() == [12.0]  # d/dx 3x^2 = 6x = 12


def test_error_in_setup_context_reaches_the_caller():
    class Bad(tg.Function):
        @staticmethod
        def forward(x):
            return x * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            raise ValueError("boom in setup_context")

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(ValueError, match="boom in setup_context"):
        Bad.apply(tg.ones(2, requires_grad=True))


def test_forward_with_ctx_and_setup_context_is_refused_clearly():
    class Mixed(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match=r"defines setup_context.*forward takes no ctx.*forward\(x\)"):
        Mixed.apply(tg.ones(1))


def test_forward_without_ctx_and_without_setup_context_hints_at_setup_context():
    class NoCtx(tg.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, g

    # forward's x receives ctx; the call has one argument too many. PyTorch raises a TypeError
    # too; ours says why.
    with pytest.raises(TypeError, match="needs a setup_context"):
        NoCtx.apply(tg.ones(1), tg.ones(1))


def test_base_setup_context_is_not_implemented():
    with pytest.raises(NotImplementedError, match="setup_context is not implemented"):
        tg.Function.setup_context(None, (), None)


def test_ctx_methods_outside_forward_and_setup_context_are_refused():
    kept = {}

    class Keep(tg.Function):
        @staticmethod
        def forward(x):
            return x * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            kept["ctx"] = ctx

        @staticmethod
        def backward(ctx, g):
            return g

    Keep.apply(tg.ones(1, requires_grad=True))
    with pytest.raises(RuntimeError, match="inside forward"):
        kept["ctx"].save_for_backward(tg.ones(1))


def test_setup_context_with_mark_dirty_of_an_input():
    class AddOne_(tg.Function):
        @staticmethod
        def forward(x):
            x.add_(1)
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    out = AddOne_.apply(b)
    assert out is b
    assert b.tolist() == [2.0, 3.0]
    assert b.grad_fn.name() == "AddOne_Backward"
    (b * 3).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]
