"""PyTorch's `test_autograd.py` tests of post-accumulate-grad hooks and multi-grad hooks
(TestAutograd), carried over. Oracle: closed forms of what the hooks do to the leaf."""

import functools

import numpy as np
import pytest

import tapegrad as tg


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_on_non_leaf
def test_post_accumulate_grad_hook_on_non_leaf():
    x = tg.ones(2, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        x.register_post_accumulate_grad_hook(lambda t: None)


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_returns_not_None
def test_post_accumulate_grad_hook_returns_not_none():
    v = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        v.sum().backward()


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_multiple_hooks
def test_post_accumulate_grad_hook_multiple_hooks():
    v = tg.tensor([0.0, 1.0, 2.0], requires_grad=True)

    def step(t):
        t.sub_(t.grad)

    def scale(t):
        t.mul_(4.0)

    v.register_post_accumulate_grad_hook(step)
    v.register_post_accumulate_grad_hook(scale)
    v.sum().backward()
    # In registration order: (v - grad) * 4.
    np.testing.assert_allclose(v.detach().numpy(), [-4.0, 0.0, 4.0])


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_multiple_tensors
def test_post_accumulate_grad_hook_multiple_tensors():
    tensors = [tg.tensor([float(i), float(i + 1)], requires_grad=True) for i in range(3)]
    seen = []
    for t in tensors:
        t.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()) or None)
    sum((k + 1) * t.sum() for k, t in enumerate(tensors)).backward()
    assert sorted(seen) == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


# covers: test_autograd.py::TestAutograd::test_multi_grad_hooks_invalid_mode
def test_multi_grad_hooks_invalid_mode():
    t = tg.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got foo"):
        tg.autograd.graph.register_multi_grad_hook((t,), lambda g: None, mode="foo")


# covers: test_autograd.py::TestAutograd::test_multi_grad_all_hooks
# (PyTorch's fourth tensor comes out of a C++ custom operation built with load_inline, and its third
# out of a torch-internal node; here they come out of a custom Function and are a plain leaf)
def test_multi_grad_all_hooks():
    class Same(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    t1 = tg.rand(2, requires_grad=True).mul(2)  # a built-in node
    t2 = Same.apply(tg.rand(2, requires_grad=True))  # a custom node
    t3 = tg.rand(2, requires_grad=True)  # a leaf's accumulator
    t4 = Same.apply(tg.rand(2, requires_grad=True))
    res = [None] * 4
    count = [0]

    def hook(grads):
        count[0] += 1
        res[:] = [g is not None for g in grads]

    handle = tg.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = t2 * t3
    out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 1
    assert res == [False, True, True, False]
    # none of the four gets a gradient: the hook does not run
    out.sum().backward(inputs=(t1, t4), retain_graph=True)
    assert count[0] == 1
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2
    assert res == [False, False, True, False]

    class Fails(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("error message")

    out = Fails.apply(t2) * t3
    with pytest.raises(RuntimeError, match="error message"):
        out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 2  # a failed backward does not run it
    handle.remove()
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2


# covers: test_autograd.py::TestAutograd::test_multi_grad_any_hooks
def test_multi_grad_any_hooks():
    order = []
    handles = []
    next_id = [0]

    def hook(hook_id, *unused):
        order.append(hook_id)

    class TwoOutputs(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tg.nn.Linear(3, 3)

        def forward(self, x):
            z = self.lin(x)
            out = (tg.sin(z), tg.cos(z))
            z.register_hook(functools.partial(hook, next_id[0]))
            next_id[0] += 1
            handles.append(tg.autograd.graph.register_multi_grad_hook(
                out, functools.partial(hook, next_id[0]), mode="any"))
            next_id[0] += 1
            return out

    class Model(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.mod1 = TwoOutputs()
            self.mod2 = TwoOutputs()

        def forward(self, x):
            y = self.mod1(x)
            return self.mod2(y[0] + y[1])

    model = Model()
    inp = tg.randn(2, 3)
    out = model(inp)
    (out[0] + out[1]).sum().backward()
    # each module's any-hook (ids 1, 3) runs once, before its tensor hook (ids 0, 2)
    assert len(handles) == 2
    assert order == [3, 2, 1, 0]

    next_id[0] = 0
    order.clear()
    handles.clear()
    out = model(inp)
    for h in handles:
        h.remove()
    (out[0] + out[1]).sum().backward()
    assert order == [2, 0]
