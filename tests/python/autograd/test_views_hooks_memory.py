"""In-place writes through views under autograd, gradient hooks, and reference cycles."""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg


def test_inplace_through_view_rebases_base():
    # b = 2a; b[0] *= 3  =>  d sum(b)/da = [[6,6,6],[2,2,2]]
    a = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = a * 2
    v = b[0]
    v.mul_(3)
    assert b.grad_fn.name() == "CopySlices"
    assert v.grad_fn is not None
    np.testing.assert_allclose(b.detach().numpy(), [[6, 12, 18], [8, 10, 12]])
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[6, 6, 6], [2, 2, 2]])


def test_setitem_with_tensor_that_requires_grad():
    a = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = a * 1
    c[1] = w
    weights = tg.tensor([[1.0, 1.0, 1.0], [10.0, 20.0, 30.0]])
    (c * weights).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [10, 20, 30])
    # the overwritten row of a gets no gradient
    np.testing.assert_allclose(a.grad.numpy(), [[1, 1, 1], [0, 0, 0]])


def test_inplace_through_transposed_view():
    # c = a * 1; c.t()[0] += x  writes column 0 of c
    a = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    c = a * 1
    c.t()[0].add_(x * x)
    (c * tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    # dc/dx_i = 2 x_i times the weight of column 0 in row i
    np.testing.assert_allclose(x.grad.numpy(), [2 * 1 * 1, 2 * 2 * 4])
    np.testing.assert_allclose(a.grad.numpy(), [[1, 2, 3], [4, 5, 6]])


def test_view_of_leaf_inplace_is_refused():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf tensor that requires grad"):
        a[0].add_(1)


def test_inplace_view_write_invalidates_saved_base():
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    y = b.sin()
    b[1:].mul_(2)
    with pytest.raises(tg.SavedTensorModifiedError, match="SinBackward"):
        y.sum().backward()


def test_hooks_replace_and_observe_gradients():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    y.retain_grad()
    x.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert seen == [[1.0, 1.0]]
    # retain_grad sees the gradient after the user's hook
    assert y.grad.tolist() == [2.0, 2.0]
    # d/dx = 3 * (hooked 2) = 6, then the leaf hook adds 1
    assert x.grad.tolist() == [7.0, 7.0]
    handle.remove()
    x.grad = None
    y = x * 3
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_hook_exception_reaches_caller():
    class Boom(Exception):
        pass

    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2

    def hook(g):
        raise Boom("from hook")

    y.register_hook(hook)
    with pytest.raises(Boom, match="from hook"):
        y.backward(retain_graph=True)


def test_hook_with_wrong_shape_is_an_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: tg.ones(3))
    with pytest.raises(RuntimeError, match="hook returned a gradient of shape"):
        y.sum().backward()


class ExpKeepingOutputOnCtx(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, g):
        return g * ctx.out


def test_output_kept_on_ctx_has_no_cycle():
    x = tg.tensor([0.5], requires_grad=True)
    o = ExpKeepingOutputOnCtx.apply(x)
    o.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5]), rtol=1e-6)
    gc.disable()
    try:
        o = ExpKeepingOutputOnCtx.apply(x)
        ref = weakref.ref(o)
        del o
        assert ref() is None, "the output survived without the cycle collector: a reference cycle"
    finally:
        gc.enable()


def test_closure_capturing_output_is_collected():
    @tg.custom_gradient
    def f(x):
        y = x.exp()

        def grad(dy):
            return dy * y

        return y, grad

    x = tg.tensor([0.25], requires_grad=True)
    z = f(x)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.25]), rtol=1e-6)
    z = f(x)
    ref = weakref.ref(z)
    del z
    gc.collect()
    assert ref() is None, "the collector could not free a cycle through the Rust graph"
