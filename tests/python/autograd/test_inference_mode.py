"""tg.inference_mode / tg.is_inference_mode_enabled / Tensor.is_inference (PyTorch's semantics)."""

import asyncio

import numpy as np
import pytest

import tapegrad as tg

SAVED = "Inference tensors cannot be saved for backward"
INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


def test_flags_inside_and_outside():
    assert not tg.is_inference_mode_enabled()
    with tg.inference_mode():
        assert tg.is_inference_mode_enabled()
        assert not tg.is_grad_enabled()
        with tg.inference_mode(False):
            assert not tg.is_inference_mode_enabled()
            assert tg.is_grad_enabled()
            assert not tg.ones(1).is_inference()
        assert tg.is_inference_mode_enabled()
    assert not tg.is_inference_mode_enabled() and tg.is_grad_enabled()
    with tg.no_grad(), tg.inference_mode(False):
        assert tg.is_grad_enabled()  # inference_mode(False) turns grad mode on, as PyTorch's


def test_nothing_is_recorded_even_under_enable_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.inference_mode():
        with tg.enable_grad():
            assert tg.is_grad_enabled()
            y = w * 3
    assert y.requires_grad is False and y.grad_fn is None
    assert y.is_inference()
    assert y.tolist() == [3.0, 6.0]


def test_inference_tensors_and_views():
    c = tg.ones(2)
    with tg.inference_mode():
        a = tg.ones(3)
        assert a.is_inference() and a[0:2].is_inference()
        # A view of a normal tensor stays normal; writing a normal tensor in place is allowed and
        # bumps its version.
        v = c[0:1]
        assert not v.is_inference()
        c.add_(1)
    assert c._version == 1 and c.tolist() == [2.0, 2.0]
    v.add_(1)  # outside: allowed
    assert c.tolist() == [3.0, 2.0]
    assert a[1:].is_inference() and a.detach().is_inference()
    assert not a.clone().is_inference()
    assert not tg.ones(1).is_inference()


def test_inference_tensors_refused_by_autograd_outside():
    with tg.inference_mode():
        a = tg.tensor([1.0, 2.0])
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=SAVED):
        b * a  # mul saves a
    with pytest.raises(RuntimeError, match=SAVED):
        b.exp() * a
    with pytest.raises(RuntimeError, match=INPLACE):
        a.add_(1)
    with pytest.raises(RuntimeError, match=INPLACE):
        a[0:1].mul_(2)
    with tg.no_grad(), pytest.raises(RuntimeError, match=INPLACE):
        a.add_(1)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        a.requires_grad_()
    # Operations that save nothing, or record nothing, are fine; a clone is a normal tensor.
    s = a + 1
    assert s.tolist() == [2.0, 3.0] and not s.is_inference()
    y = (b * a.clone()).sum()
    y.backward()
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 2.0])


def test_custom_function_saving_an_inference_tensor_is_refused():
    class Mul(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    with tg.inference_mode():
        a = tg.ones(2)
    with pytest.raises(RuntimeError, match=SAVED):
        Mul.apply(tg.ones(2, requires_grad=True), a)


def test_inplace_on_inference_tensor_inside_is_allowed():
    with tg.inference_mode():
        a = tg.zeros(2)
        a.add_(5)
        a.requires_grad_()  # allowed inside, as in PyTorch
    assert a.tolist() == [5.0, 5.0]


def test_decorator_forms():
    @tg.inference_mode
    def bare():
        return tg.is_inference_mode_enabled()

    @tg.inference_mode()
    def called():
        return tg.is_inference_mode_enabled()

    @tg.inference_mode(False)
    def off():
        return tg.is_inference_mode_enabled()

    @tg.inference_mode()
    def gen():
        yield tg.is_inference_mode_enabled()
        yield tg.is_inference_mode_enabled()

    @tg.inference_mode()
    async def coro():
        await asyncio.sleep(0)
        return tg.is_inference_mode_enabled()

    assert bare() and called()
    with tg.inference_mode():
        assert off() is False
    g = gen()
    assert next(g) is True
    assert tg.is_inference_mode_enabled() is False  # restored between resumptions
    assert next(g) is True
    assert asyncio.run(coro()) is True
    assert tg.is_inference_mode_enabled() is False


def test_mode_argument_is_checked():
    with pytest.raises(TypeError, match="must be bool"):
        tg.inference_mode(1)
