"""In-place operations on views, carried over from PyTorch's test_autograd.py (part 3:
TestAutogradDeviceType's in-place-on-view tests on the CPU, plus the in-scope halves of a few others).

Oracle: closed-form gradients written out by hand (a view multiplied in place by 2 doubles the
gradient of exactly the elements it covers), and float64 central differences through
``tg.autograd.gradcheck`` / ``_gradgradcheck.gradgradcheck`` for the first and second derivatives.
"""

import numpy as np
import pytest

import tapegrad as tg

from ._gradgradcheck import gradgradcheck

SAVED_MODIFIED = "needed for gradient computation has been modified by an inplace operation"


def _randn(*shape, seed=0, requires_grad=False, dtype=tg.float64):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tg.tensor(data, dtype=dtype, requires_grad=requires_grad)


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_backprop_base
def test_inplace_on_view_backprop_base():
    root = _randn(2, 2, dtype=tg.float32, requires_grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[2, 2], [1, 1]]


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_backprop_view_of_view
def test_inplace_on_view_backprop_view_of_view():
    root = _randn(2, 2, dtype=tg.float32, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = x.narrow(0, 0, 1)
    v1.mul_(2)
    v2.sum().backward()
    assert root.grad.tolist() == [[2, 2], [0, 0]]


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_of_view
def test_inplace_on_view_of_view():
    root = _randn(2, 2, dtype=tg.float32, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v1.narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1]]


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_then_no_grad
def test_inplace_on_view_then_no_grad():
    # PyTorch only checks that backward works after the view's grad_fn was read under no_grad;
    # the gradient is checked here as well: row 0 was overwritten, the others are d(2a)/da = 2.
    a = tg.ones(3, 1, dtype=tg.float64, requires_grad=True)
    b = a * 2
    c = b.view_as(b)
    c[0][0] = 3
    with tg.no_grad():
        c.grad_fn  # noqa: B018 - reading it is the point
    c.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0.0], [2.0], [2.0]])


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_gradcheck
def test_inplace_on_view_gradcheck():
    a = _randn(4, 4, seed=1, requires_grad=True)
    b = _randn(2, 2, seed=2, requires_grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
        x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
        return x

    assert tg.autograd.gradcheck(func, [a, b])
    go = _randn(4, 4, seed=3)
    assert gradgradcheck(func, (a, b), (go,))


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_makes_base_require_grad
def test_inplace_on_view_makes_base_require_grad():
    a = _randn(4, 4, seed=4)
    b = _randn(4, 2, seed=5, requires_grad=True)
    seen = []

    def func(root, b):
        x = root.clone()
        seen.append(x.requires_grad)
        x.narrow(1, 2, 2).mul_(b)
        seen.append(x.requires_grad)
        return x

    assert tg.autograd.gradcheck(func, [a, b])
    assert gradgradcheck(func, (a, b), (_randn(4, 4, seed=6),))
    assert seen[:2] == [False, True]


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_backprop_view
def test_inplace_on_view_backprop_view():
    a = tg.tensor([2.0, 5.0])
    b = tg.tensor([3.0], requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    res.sum().backward()
    assert b.grad.tolist() == [5]
    assert a.grad is None


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_modify_base
def test_inplace_on_view_modify_base():
    # x.select(0, 1) is spelled x[1] (tapegrad has no select; the same view).
    r = tg.ones(1, dtype=tg.float64, requires_grad=True)
    seen = []

    def fn(r):
        x = tg.ones(5, dtype=tg.float64)
        v = x[1]
        seen.append((v.requires_grad, v.grad_fn is None))
        x.add_(r)  # v now depends on r through the in-place change of its base
        seen.append((v.requires_grad,))
        return v

    assert tg.autograd.gradcheck(fn, [r])
    assert gradgradcheck(fn, [r])
    assert seen[0] == (False, True)
    assert seen[1] == (True,)


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_python
def test_inplace_on_view_python():
    a = _randn(4, 4, seed=7, requires_grad=True)
    b = _randn(2, 2, seed=8, requires_grad=True)

    class PyAdd(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x

    assert tg.autograd.gradcheck(func, [a, b])
    assert gradgradcheck(func, (a, b), (_randn(4, 4, seed=9),))


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_non_contig
def test_inplace_on_view_non_contig():
    # ones(2, 3, 2).select(2, 1) is spelled [:, :, 1]
    root = tg.ones(2, 3, 2)[:, :, 1].t().requires_grad_(True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1], [1, 1]]


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_undefined_grad_output
def test_inplace_on_view_undefined_grad_output():
    a = tg.tensor([1.0], requires_grad=True)
    c = a.clone()
    v = c[:]
    b = tg.tensor(1.0, requires_grad=True)

    class InplaceFunc(tg.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    out = InplaceFunc.apply(v, b)
    out.backward()
    assert b.grad is None
    assert a.grad.item() == 2


# covers: test_autograd.py::TestAutogradDeviceType::test_mv_grad_stride_0
def test_mv_grad_stride_0():
    mat = _randn(2, 2, seed=10)
    vec = _randn(1, seed=11, requires_grad=True)

    def fn(vec):
        # expanded inside, so that the input itself has no overlapping memory
        return (mat @ vec.expand(2)).sum()

    assert tg.autograd.gradcheck(fn, (vec,))
    assert gradgradcheck(fn, (vec,))
    # closed form: d/dv sum(M @ [v, v]) = sum of all entries of M
    (g,) = tg.autograd.grad(fn(vec), vec)
    np.testing.assert_allclose(g.numpy(), [mat.numpy().sum()], rtol=1e-12)


# covers: test_autograd.py::TestAutogradMultipleDispatch::test_per_dispatch_key_input_saving
def test_sum_does_not_save_its_input():
    # The nested-tensor half of the original is out of scope (named tensors/nested).
    def foo(x):
        x = x.clone()
        res = x.sum(-1, keepdim=True)
        x.add_(x)  # would invalidate res's backward if sum had saved x
        return res

    inp = tg.tensor(np.random.default_rng(12).random(2), requires_grad=True)
    foo(inp).backward()
    np.testing.assert_array_equal(inp.grad.numpy(), [1.0, 1.0])


# covers: test_autograd.py::TestAutogradDeviceType::test_copy_
def test_copy_into_other_float_dtype_requires_grad():
    # The original loops over half/bfloat16/float/double; tapegrad has float32 and float64 only,
    # so the half/bfloat16 cases and x.to(bfloat16) are left out.
    x = _randn(10, dtype=tg.float32, requires_grad=True)
    for dt in (tg.float32, tg.float64):
        y = tg.empty(10, dtype=dt)
        y.copy_(x)
        assert y.requires_grad
        z = x.to(dt)
        assert z.requires_grad
        (g,) = tg.autograd.grad(y.sum(), x)
        np.testing.assert_array_equal(g.numpy(), np.ones(10, dtype=np.float32))


# covers: test_autograd.py::TestAllowMutationOnSaved::test_basic
def test_mutation_of_saved_tensor_raises_outside_allow_mutation():
    # Only the first half (no allow_mutation_on_saved_tensors context: issue 17); sin_ is spelled
    # add_(1), which tapegrad has: any in-place change of the saved clone must be caught.
    a = _randn(2, 3, seed=13, dtype=tg.float32, requires_grad=True)
    b = a.clone()
    out = (b**2).sum()
    b.add_(1)
    with pytest.raises(RuntimeError, match=SAVED_MODIFIED):
        out.sum().backward()


# covers: test_autograd.py::TestAllowMutationOnSaved::test_views
def test_mutation_through_view_of_saved_tensor_raises():
    # First half only, as above: the change goes through a view of the saved tensor.
    a = _randn(2, 3, seed=14, dtype=tg.float32, requires_grad=True)
    b = a.clone()
    c = b.view_as(b)
    out = (b**2).sum()
    c.add_(1)
    with pytest.raises(RuntimeError, match=SAVED_MODIFIED):
        out.sum().backward()
