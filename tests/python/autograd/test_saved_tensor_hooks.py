"""tg.autograd.graph.saved_tensors_hooks / disable_saved_tensors_hooks / save_on_cpu."""

import threading

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks


def test_builtin_nodes_pack_once_and_unpack_at_each_access():
    packs, unpacks = [], []

    def pack(t):
        packs.append(t.shape)
        return t.detach().numpy().copy()  # a non-tensor: the tensor itself is not kept

    def unpack(a):
        unpacks.append(a.shape)
        return tg.tensor(a)

    a = np.array([0.5, -1.0, 2.0])
    x = tg.tensor(a, requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()  # exp saves its output, mul saves both operands
    assert len(packs) == 3 and unpacks == []
    y.backward(retain_graph=True)
    assert len(unpacks) == 3
    np.testing.assert_allclose(x.grad.numpy(), np.exp(a) * (1 + a), rtol=1e-6)
    y.backward()
    assert len(unpacks) == 6  # each access unpacks again
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(a) * (1 + a), rtol=1e-6)


def test_custom_function_saved_tensors_go_through_hooks():
    calls = []

    class Square(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tg.tensor([3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: calls.append("pack") or t.tolist(), lambda v: calls.append("unpack") or tg.tensor(v)):
        y = Square.apply(x)
    assert calls == ["pack"]
    y.backward()
    assert calls == ["pack", "unpack"]
    assert x.grad.tolist() == [6.0]


def test_nesting_innermost_hooks_apply_and_outer_ones_come_back():
    seen = []
    outer = saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t)
    inner = saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t)
    x = tg.ones(2, requires_grad=True)
    with outer:
        _ = x.exp()
        with inner:
            _ = x.sin()
        _ = x.cos()
    _ = x.tanh()  # no hooks any more
    assert seen == ["outer", "inner", "outer"]


def test_hook_operations_are_not_packed_by_the_same_hook():
    packs = []

    def pack(t):
        packs.append(1)
        return (t * 1).exp()  # operations inside the hook save tensors too

    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with saved_tensors_hooks(pack, lambda t: t.log()):
        y = x.sin()
    assert len(packs) == 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.0, 1.0]), rtol=1e-6)


def test_double_backward_through_unpacked_leaf_and_nonleaf():
    x = tg.tensor([2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.detach().tolist(), lambda v: tg.tensor(v)):
        h = x * 1
        y = (h * h * x).sum()  # saves h (a non-leaf) and x (a leaf)
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    assert g.tolist() == [12.0]  # d/dx x^3 = 3x^2
    (gg,) = tg.autograd.grad(g, x)
    assert gg.tolist() == [12.0]  # 6x


def test_version_check_still_applies_under_hooks():
    x = tg.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        h = x * 1
        y = h.exp() * h
    with tg.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_errors_from_hooks_reach_the_caller():
    x = tg.ones(2, requires_grad=True)

    def bad_pack(t):
        raise ValueError("pack failed")

    with saved_tensors_hooks(bad_pack, lambda t: t):
        with pytest.raises(ValueError, match="pack failed"):
            x.exp()

    def bad_unpack(v):
        raise KeyError("unpack failed")

    with saved_tensors_hooks(lambda t: t, bad_unpack):
        y = x.exp().sum()
    with pytest.raises(KeyError, match="unpack failed"):
        y.backward()

    with saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type str"):
        y.backward()


def test_pack_hook_modifying_its_input_is_refused():
    def pack(t):
        with tg.no_grad():
            t.add_(1)
        return t

    x = tg.ones(2, requires_grad=True)
    a = x * 1
    with saved_tensors_hooks(pack, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            a.exp() * a


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="second message"):
            with disable_saved_tensors_hooks("second message"):
                pass
    # After both contexts, hooks may be registered again.
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_hooks_are_per_thread():
    seen = []
    x = tg.ones(2, requires_grad=True)

    def other():
        _ = x.exp()

    with saved_tensors_hooks(lambda t: seen.append(1) or t, lambda t: t):
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert seen == []


def test_save_on_cpu_keeps_values():
    a = np.array([1.0, 2.0])
    x = tg.tensor(a, requires_grad=True)
    with save_on_cpu(pin_memory=True):
        y = (x.sin() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.sin(a) + a * np.cos(a), rtol=1e-6)


def test_pack_error_in_an_inplace_operation_is_raised_before_the_write():
    def bad_pack(t):
        raise ValueError("no packing")

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = tg.tensor([3.0, 4.0])
    with saved_tensors_hooks(bad_pack, lambda t: t):
        with pytest.raises(ValueError, match="no packing"):
            a.mul_(b)  # mul saves b for a's gradient
    assert a.tolist() == [1.0, 2.0] and a._version == 0
    # Nothing is left pending for the next operation.
    assert (a + 1).tolist() == [2.0, 3.0]
