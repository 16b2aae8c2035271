"""PyTorch's `test_autograd.py` tests of in-place operations, views, saved-tensor versions and detach.

Covers part 1 of the file (characters 0-192000): in-place changes that do or do not invalidate a saved
tensor, item assignment (with tensors that require grad or under `no_grad`), in-place writes through views,
`detach` / `detach_`, and the version counter. Oracle: closed-form gradients (NumPy), and PyTorch's rule
that a backward needing a value changed in place raises "modified by an inplace operation".
"""

import math

import numpy as np
import pytest

import tapegrad as tg


def arr(t):
    return np.asarray(t.detach().numpy())


RNG = np.random.default_rng(99)


class Boom(tg.Function):
    """Identity whose backward raises: stands for PyTorch's internal DelayedError node."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("Boom!")


# covers: test_autograd.py::TestAutograd::test_copy_slices_graph_task_updates
def test_copy_slices_graph_task_updates():
    def f1(x, y):
        out = x.clone().view(-1)
        out += y
        return out

    def f2(x, y):
        out = x.clone().view(-1)
        b = out * 2
        out += y
        return out + b

    x = tg.rand(2, requires_grad=True)
    y = tg.rand(2, requires_grad=True)
    y_safe = Boom.apply(y)
    for f, dx in ((f1, 1.0), (f2, 3.0)):
        with pytest.raises(RuntimeError, match="Boom!"):
            f(x, y_safe).sum().backward()
        with pytest.raises(RuntimeError, match="Boom!"):
            tg.autograd.grad(f(x, y_safe).sum(), y)
        # the erroring node is not run when its branch is not asked for
        (gx,) = tg.autograd.grad(f(x, y_safe).sum(), x)
        np.testing.assert_array_equal(arr(gx), [dx, dx])
        (gy,) = tg.autograd.grad(f(x, y_safe).sum(), y_safe)
        np.testing.assert_array_equal(arr(gy), [1.0, 1.0])
        gx, gy = tg.autograd.grad(f(x, y_safe).sum(), (x, y_safe))
        np.testing.assert_array_equal(arr(gx), [dx, dx])
        np.testing.assert_array_equal(arr(gy), [1.0, 1.0])

    # a hook on the view's old version is not run when nothing needs that node
    def f3(x, y):
        out = x.clone().view(-1)

        def hook(*args):
            raise AssertionError("this hook must not run")

        out.register_hook(hook)
        b = out + y
        out += y
        return out + b, b

    out, b = f3(x, y_safe)
    gb, gy = tg.autograd.grad(out.sum(), (b, y_safe))
    np.testing.assert_array_equal(arr(gb), [1.0, 1.0])
    np.testing.assert_array_equal(arr(gy), [2.0, 2.0])  # through `out += y` and through b


# covers: test_autograd.py::TestAutograd::test_inplace
def test_inplace():
    x = tg.ones(5, 5, requires_grad=True)
    y = tg.tensor(np.full((5, 5), 4.0, dtype=np.float32), requires_grad=True)
    ones = tg.ones(5, 5)

    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(ones, retain_graph=True)  # add saves nothing: fine
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward(ones)  # mul saved z

    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(ones, retain_graph=True)
    r.backward(ones, retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(ones)

    with tg.no_grad():
        x.grad.zero_()
    m = x / 2
    z = m + y / 8
    q = z * y
    r = z + y
    before = z._version
    # PyTorch's `exp_`: tapegrad has no in-place exp; copy_ of z.exp() is the same in-place change of z
    w = z.copy_(z.exp())
    assert z._version != before
    r.backward(ones, retain_graph=True)
    np.testing.assert_allclose(arr(x.grad), np.full((5, 5), 0.5))
    w.backward(ones, retain_graph=True)
    # d exp(x/2 + y/8) / dx at x = 1, y = 4 is e / 2
    np.testing.assert_allclose(arr(x.grad), np.full((5, 5), (1 + math.e) / 2), rtol=1e-6)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(ones)

    leaf = tg.ones(5, 5, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    np.testing.assert_array_equal(arr(x), np.full((5, 5), 11.0))
    y = x + 2
    y.backward(ones)
    np.testing.assert_array_equal(arr(leaf.grad), np.ones((5, 5)))
    z = x * y
    x.add_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(ones)


def _setitem(shape, index):
    x = tg.ones(*shape, requires_grad=True)
    y = x + 2
    v = y._version
    y[index] = 2
    assert y._version != v
    y.backward(tg.ones(*shape))
    expected = np.ones(shape, dtype=np.float32)
    expected[index] = 0
    np.testing.assert_array_equal(arr(x.grad), expected)


def _setitem_tensor(shape, index):
    x = tg.ones(*shape, requires_grad=True)
    y = x + 2
    v = y._version
    value = tg.full(tuple(y[index].shape), 7.0, requires_grad=True)
    y[index] = value
    assert y._version != v
    y.backward(tg.ones(*shape))
    expected = np.ones(shape, dtype=np.float32)
    expected[index] = 0
    np.testing.assert_array_equal(arr(x.grad), expected)
    np.testing.assert_array_equal(arr(value.grad), np.ones(value.shape))

    # a value broadcast into its slot gets its gradient back in its own shape
    x = tg.randn(4, requires_grad=True)
    y = tg.zeros(2, 3, 4)
    y[1] = x
    GO = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y.backward(tg.tensor(GO))
    assert x.grad.shape == x.shape
    np.testing.assert_allclose(arr(x.grad), GO[1].sum(0), rtol=1e-5)


# covers: test_autograd.py::TestAutograd::test_setitem
# (the integer-array indices of the original are left out: tapegrad lacks integer-array indexing, issue 15)
@pytest.mark.parametrize("shape, index", [((5, 5), 1), ((5,), 1), ((1,), 0)])
def test_setitem(shape, index):
    _setitem(shape, index)


# covers: test_autograd.py::TestAutograd::test_setitem
@pytest.mark.parametrize("shape, index", [((5, 5), 3), ((5,), 3)])
def test_setitem_tensor(shape, index):
    _setitem_tensor(shape, index)


# covers: test_autograd.py::TestAutograd::test_setitem_mask
def test_setitem_mask():
    mask = RNG.random((5, 5)) < 0.5
    for shape, m in (((5, 5), mask), ((5,), mask[0]), ((1,), mask[0, 0:1])):
        x = tg.ones(*shape, requires_grad=True)
        y = x + 2
        v = y._version
        y[tg.tensor(m)] = 2
        assert y._version != v
        y.backward(tg.ones(*shape))
        np.testing.assert_array_equal(arr(x.grad), (~m).astype(np.float32))
    for shape, m in (((5, 5), mask), ((5,), mask[0])):
        x = tg.ones(*shape, requires_grad=True)
        y = x + 2
        value = tg.full((int(m.sum()),), 7.0, requires_grad=True)
        y[tg.tensor(m)] = value
        y.backward(tg.ones(*shape))
        np.testing.assert_array_equal(arr(x.grad), (~m).astype(np.float32))
        np.testing.assert_array_equal(arr(value.grad), np.ones(int(m.sum())))


# covers: test_autograd.py::TestAutograd::test_no_requires_grad_inplace
def test_no_requires_grad_inplace():
    a = tg.randn(2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    np.testing.assert_array_equal(arr(a.grad), np.ones((2, 3)))

    a = tg.randn(2, 3)
    b = a[:]
    b.add_(5)
    a.requires_grad = True
    a.sum().backward()
    np.testing.assert_array_equal(arr(a.grad), np.ones((2, 3)))

    a = tg.randn(2, 3)
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError):
        a.add_(5)
    with pytest.raises(RuntimeError):
        b.add_(5)


# covers: test_autograd.py::TestAutograd::test_no_unnecessary_save
def test_no_unnecessary_save():
    mu = tg.ones(1, requires_grad=True)
    x = tg.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        ft = tg.tensor([float(i)])
        loss = loss + (x * ft).sum()  # x * constant must not save x
    loss.backward()
    np.testing.assert_array_equal(arr(mu.grad), [0.0 + 1.0 + 2.0])


# covers: test_autograd.py::TestAutograd::test_detach
def test_detach():
    x = tg.randn(10, 10, requires_grad=True)
    y = (x + 2).detach()
    z = y * 4 + 2
    assert not y.requires_grad
    assert not z.requires_grad

    x = tg.randn(10, 10, requires_grad=True)
    y = (x * 2).detach()
    assert not y.requires_grad
    assert y.grad_fn is None
    (x + y).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), np.ones((10, 10)))


# covers: test_autograd.py::TestAutograd::test_detach
def test_detach_inplace():
    x = tg.randn(10, 10, requires_grad=True)
    y = tg.randn(10, 10, requires_grad=True)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    a.detach_()
    assert not a.requires_grad
    (y + a).sum().backward()  # no longer reaches x
    np.testing.assert_array_equal(arr(x.grad), np.full((10, 10), 2.0))
    np.testing.assert_array_equal(arr(y.grad), np.full((10, 10), 2.0))
    view = x.narrow(0, 1, 4)
    with pytest.raises(RuntimeError, match="view"):
        view.detach_()


# covers: test_autograd.py::TestAutograd::test_detach_base
def test_detach_base():
    x = tg.randn(10, 10, requires_grad=True)
    view = x.narrow(0, 1, 4)
    x.detach_()
    assert not x.requires_grad
    assert view.requires_grad
    assert view.grad_fn is not None


# covers: test_autograd.py::TestAutograd::test_detach_then_inplace_raises_in_autograd
def test_detach_then_inplace_raises_in_autograd():
    x = tg.randn((), requires_grad=True)
    y = x**2  # saves x
    z = x.detach()  # shares x's memory and version counter
    z.zero_()
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        y.backward()


# covers: test_autograd.py::TestAutograd::test_leaf_assignment
def test_leaf_assignment():
    x = tg.randn(5, 5)
    y = tg.randn(5, requires_grad=True)
    z = tg.randn(5, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad
    assert x.grad_fn is not None
    x.sum().backward()
    np.testing.assert_array_equal(arr(y.grad), np.ones(5))
    np.testing.assert_array_equal(arr(z.grad), np.full(5, 2.0))


# covers: test_autograd.py::TestAutograd::test_no_grad_assignment
def test_no_grad_assignment():
    x = tg.randn(5, 5, requires_grad=True)
    Y = RNG.standard_normal(5).astype(np.float32)
    with tg.no_grad():
        x[0] = tg.tensor(Y)
    assert x.requires_grad
    assert x.grad_fn is None
    np.testing.assert_array_equal(arr(x)[0], Y)


# covers: test_autograd.py::TestAutograd::test_no_grad_modifies_version
def test_no_grad_modifies_version():
    x = tg.randn(5, requires_grad=True)
    y = tg.randn(5, requires_grad=True)
    z = (x * y).sum()
    with tg.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# covers: test_autograd.py::TestAutograd::test_return_leaf_inplace
# (PyTorch's legacy `InplaceFunction` base is the plain Function here; also asserts the node's class,
# which tapegrad exposes as the node's name)
def test_return_leaf_inplace():
    class Inplace(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga + gb

    x = tg.randn(5, 5)
    y = tg.randn(5, 5, requires_grad=True)
    q, p = Inplace.apply(x, y)
    assert q is x
    assert q.grad_fn.name() == "InplaceBackward"
    assert q.requires_grad
    q.sum().backward()
    np.testing.assert_array_equal(arr(y.grad), np.ones((5, 5)))


# covers: test_autograd.py::TestAutograd::test_variable_traverse
def test_variable_traverse():
    import gc

    def make():
        inp = tg.randn(10, requires_grad=True)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        cycle = [tmp]
        cycle.append(cycle)  # an unreferenced cycle holding an intermediate of the graph
        return out, inp

    out, inp = make()
    gc.collect()
    GO = RNG.standard_normal(10).astype(np.float32)
    out.backward(tg.tensor(GO))
    np.testing.assert_array_equal(arr(inp.grad), GO)
