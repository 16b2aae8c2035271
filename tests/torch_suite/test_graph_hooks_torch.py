"""PyTorch's `test_autograd.py` tests of post-accumulate-grad hooks and multi-grad hooks
(TestAutograd), carried over. Oracle: closed forms of what the hooks do to the leaf."""

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
