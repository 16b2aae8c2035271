"""Random draws and autograd as PyTorch records them (ops15c), and dtype refusals that PyTorch makes.

`normal`, `bernoulli` and `poisson` of tensors that require grad give a sample that requires grad,
with a node (`NormalBackward`, ...) whose gradients are zero: the sample is not reparametrized. The
`*_like` factories never require grad. The refusals raise PyTorch's exception type.
"""

import numpy as np
import pytest

import tapegrad as tg


def test_normal_of_tensors_that_require_grad_has_zero_gradients():
    m = tg.tensor([1.0, 2.0], requires_grad=True)
    s = tg.tensor([0.5, 2.0], requires_grad=True)
    out = tg.normal(m, s, generator=tg.Generator().manual_seed(3))
    assert out.requires_grad and out.grad_fn.name() == "NormalBackward"
    # The values are those of the same draw without history.
    same = tg.normal(m.detach(), s.detach(), generator=tg.Generator().manual_seed(3))
    np.testing.assert_array_equal(out.detach().numpy(), same.numpy())
    (out * 3).sum().backward()
    assert m.grad.tolist() == [0.0, 0.0] and s.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("which", ["mean", "std"])
def test_normal_with_one_tensor(which):
    t = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = tg.normal(t, 1.0) if which == "mean" else tg.normal(0.0, t)
    assert out.shape == (3,) and out.grad_fn.name() == "NormalBackward"
    out.sum().backward()
    assert t.grad.tolist() == [0.0, 0.0, 0.0]


def test_normal_without_grad_mode_or_requires_grad_has_no_history():
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        assert not tg.normal(t, 1.0).requires_grad
    assert tg.normal(t.detach(), 1.0).grad_fn is None


@pytest.mark.parametrize("name", ["bernoulli", "poisson"])
def test_bernoulli_and_poisson_have_zero_gradients(name):
    p = tg.tensor([0.0, 1.0, 1.0], dtype=tg.float64, requires_grad=True)
    out = getattr(tg, name)(p)
    assert out.requires_grad and out.grad_fn.name() == name.capitalize() + "Backward"
    assert out.dtype == tg.float64
    if name == "bernoulli":
        assert out.tolist() == [0.0, 1.0, 1.0]
    (out * 2).sum().backward()
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    # Second order: the zero gradient is a constant.
    q = tg.tensor([0.5], requires_grad=True)
    (g,) = tg.autograd.grad(getattr(tg, name)(q).sum(), q, create_graph=True)
    assert g.tolist() == [0.0]


@pytest.mark.parametrize("name", ["rand_like", "randn_like", "zeros_like", "ones_like", "empty_like"])
def test_like_factories_do_not_require_grad(name):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    out = getattr(tg, name)(x)
    assert not out.requires_grad and out.grad_fn is None and out.shape == (2,)


def test_randint_like_and_full_like_do_not_require_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert not tg.randint_like(x, 5).requires_grad
    assert not tg.full_like(x, 3.0).requires_grad


@pytest.mark.parametrize("fill", ["normal_()", "uniform_()", "bernoulli_(0.5)", "exponential_()"])
def test_in_place_fill_of_non_leaf_passes_zero_gradient(fill):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    eval("y." + fill)
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


# --- dtype refusals -----------------------------------------------------------------------------

B = tg.tensor([True, False, True])


@pytest.mark.parametrize("expr,exc,msg", [
    ("tg.lerp(tg.tensor([1, 2]), tg.tensor([3, 4]), 0.5)", NotImplementedError, "lerp_kernel_scalar"),
    ("tg.lerp(tg.tensor([1, 2]), tg.tensor([3, 4]), tg.tensor([0, 1]))", NotImplementedError, "lerp_kernel_tensor"),
    ("tg.lerp(tg.tensor([1., 2.]), tg.tensor([3, 4]), 0.5)", RuntimeError, "expected dtype float32 for `end`"),
    ("tg.lerp(tg.tensor([1., 2.]), tg.tensor([3., 4.]), tg.tensor([0, 1]))", RuntimeError, "for `weight`"),
    ("tg.arange(3, dtype=tg.bool)", NotImplementedError, "arange_cpu"),
    ("tg.linspace(0, 1, 3, dtype=tg.bool)", NotImplementedError, "linspace_cpu"),
    ("tg.logspace(0, 1, 3, dtype=tg.bool)", NotImplementedError, "logspace_cpu"),
    ("tg.randperm(3, dtype=tg.bool)", NotImplementedError, "randperm"),
    ("tg.dot(B, B)", NotImplementedError, "dot"),
    ("tg.vdot(B, B)", NotImplementedError, "dot"),
    ("tg.addcmul(B, B, B)", NotImplementedError, "addcmul"),
    ("tg.trace(tg.tensor([[True, False], [True, True]]))", NotImplementedError, "trace"),
    ("tg.median(B)", NotImplementedError, "median"),
    ("tg.median(B, 0)", NotImplementedError, "median"),
    ("tg.topk(B, 1)", NotImplementedError, "topk does not support bool"),
    ("tg.kthvalue(B, 1)", NotImplementedError, "kthvalue"),
    ("tg.searchsorted(tg.tensor([False, True]), tg.tensor([True]))", NotImplementedError, "searchsorted"),
    ("tg.bucketize(tg.tensor([True]), tg.tensor([False, True]))", NotImplementedError, "searchsorted"),
    ("~tg.tensor([1.0])", TypeError, "only implemented on integer and Boolean"),
    ("tg.tensor([[True]]) @ tg.tensor([[True]])", NotImplementedError, "addmm_impl_cpu_"),
    ("tg.tensor([[True]]).mm(tg.tensor([[True]]))", NotImplementedError, "addmm_impl_cpu_"),
    ("tg.tensor([[[True]]]).bmm(tg.tensor([[[True]]]))", NotImplementedError, "bmm"),
    ("tg.inner(B, B)", NotImplementedError, "not implemented for 'Bool'"),
])
def test_dtype_refusals_match_pytorch(expr, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        eval(expr)


def test_what_is_accepted_still_is():
    assert tg.lerp(tg.tensor([0.0]), tg.tensor([4.0]), 1).tolist() == [4.0]
    assert tg.addcmul(tg.tensor([1.0]), tg.tensor([True]), tg.tensor([True])).tolist() == [2.0]
    assert tg.addcmul(tg.tensor([1]), tg.tensor([2]), tg.tensor([3])).tolist() == [7]
    assert (~tg.tensor([1, 0])).tolist() == [-2, -1]
    assert (~tg.tensor([True])).tolist() == [False]
    assert tg.dot(tg.tensor([1, 2]), tg.tensor([3, 4])).item() == 11
    assert tg.mode(B).values.item() is True
    assert tg.arange(3, dtype=tg.uint8).tolist() == [0, 1, 2]
    assert (tg.tensor([[1, 2]]) @ tg.tensor([[3], [4]])).tolist() == [[11]]
