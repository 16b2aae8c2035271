"""PyTorch's `test_autograd.py` tests of the backward engine and basic tensor/graph facts, carried over.

Covers part 1 of the file (characters 0-192000): gradient summation where one gradient reaches several
places, deep graphs freed without recursion, integer (non-differentiable) nodes inside a graph, `pow` at
zero, dtype conversions in backward, `.numpy()` on tensors that require grad, `.shape` and `dir`.
Oracle: closed-form gradients (counted by hand in the comments) and PyTorch's documented errors.
"""

import numpy as np
import pytest

import tapegrad as tg


def arr(t):
    return np.asarray(t.detach().numpy())


# covers: test_autograd.py::TestAutograd::test_backward_copy
def test_backward_copy():
    x = tg.ones(5, 5, requires_grad=True)
    y = tg.ones(5, 5, requires_grad=True)
    a = x + 2
    b = y + 2
    c = x + 2
    add2 = (a + b) + c
    for _ in range(4):  # a long branch, so that a gradient is buffered in three places
        a = a * 2
        b = b * 2
        c = c * 2
    out = add2 + (a + b + c)
    out.backward(tg.ones(5, 5))
    # x: 16 through a, 16 through c, 2 through add2; y: 16 through b, 1 through add2
    np.testing.assert_array_equal(arr(x.grad), np.full((5, 5), 34.0))
    np.testing.assert_array_equal(arr(y.grad), np.full((5, 5), 17.0))


# covers: test_autograd.py::TestAutograd::test_free_deep_graph
def test_free_deep_graph():
    x = tg.randn(1, requires_grad=True)
    y = x.clone()
    for _ in range(150000):
        y = y + y * 0.000001
    del y  # freeing the chain must not overflow the stack
    z = x * 3
    z.backward()
    np.testing.assert_array_equal(arr(x.grad), [3.0])


# covers: test_autograd.py::TestAutograd::test_free_deep_graph_complicated
def test_free_deep_graph_complicated():
    depth = 100000
    choice = np.random.default_rng(3).integers(0, 2, size=(depth + 1, 2)).astype(np.float32)
    x = tg.randn(1, requires_grad=True)
    y = x.clone()
    prev = [None, None]
    for _ in range(depth):
        older = [t for t in prev[:-1] if t is not None]
        prev.append(y)
        prev.pop(0)
        y += y * 0.000001
        if len(older) == 2:
            y += (tg.tensor(choice[depth]) * tg.cat(older)).sum()
    del y, prev  # freeing a chain with skip connections must not overflow the stack
    (x * 2).backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0])


# covers: test_autograd.py::TestAutograd::test_free_deep_graph_pyfunction
def test_free_deep_graph_pyfunction():
    class Add(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = tg.randn(1, requires_grad=True)
    y = x.clone()
    for _ in range(150000):
        y = Add.apply(y, y)
    del y
    (x * 5).backward()
    np.testing.assert_array_equal(arr(x.grad), [5.0])


# covers: test_autograd.py::TestAutograd::test_isolated_node
# (PyTorch repeats the indices with `repeat`, which tapegrad lacks; `expand` gives the same values)
def test_isolated_node():
    x = tg.randn(5, 5, requires_grad=True)
    y = tg.randn(5, 5, requires_grad=True)
    a = x + y
    _, idx = a.max(1)
    b = idx.unsqueeze(1).expand(5, 5).double()  # integer indices: no gradient flows through them
    o = (b + a).sum()
    o.backward()
    np.testing.assert_array_equal(arr(x.grad), np.ones((5, 5)))
    np.testing.assert_array_equal(arr(y.grad), np.ones((5, 5)))


# covers: test_autograd.py::TestAutograd::test_shape
def test_shape():
    x = tg.randn(3, 4)
    assert len(x.shape) == 2
    assert x.shape[0] == 3
    assert x.shape[1] == 4


# covers: test_autograd.py::TestAutograd::test_numpy_requires_grad
def test_numpy_requires_grad():
    X = np.random.default_rng(8).standard_normal((2, 2)).astype(np.float32)
    x = tg.tensor(X, requires_grad=True)
    msg = r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) instead."
    with pytest.raises(RuntimeError, match=msg):
        x.numpy()
    with tg.no_grad():
        np.testing.assert_array_equal(x.numpy(), X)
    y = tg.tensor(X)
    np.testing.assert_array_equal(y.numpy(), X)
    with tg.no_grad():
        np.testing.assert_array_equal(y.numpy(), X)


# covers: test_autograd.py::TestAutograd::test_type_conversions
# (only the backward through dtype conversions; the legacy tensor-type classes, `.type()`, integer
# dtypes beyond int64 and CUDA are out of scope)
def test_type_conversion_backward():
    f = tg.randn(5, 5).float().requires_grad_()
    f.double().sum().backward()
    assert f.grad.dtype == tg.float32
    np.testing.assert_array_equal(arr(f.grad), np.ones((5, 5)))
    d = tg.randn(5, 5).double().requires_grad_()
    d.float().sum().backward()
    assert d.grad.dtype == tg.float64
    np.testing.assert_array_equal(arr(d.grad), np.ones((5, 5)))



# covers: test_autograd.py::TestAutograd::test_pow_zero_tensor_gradient
@pytest.mark.parametrize(
    "shape, exponent",
    [
        ((10,), "tensor"),
        ((10, 10), "tensor"),
        ((10,), 0),
    ],
)
def test_pow_zero_tensor_gradient(shape, exponent):
    x = tg.zeros(*shape, requires_grad=True)
    e = tg.zeros(*shape) if exponent == "tensor" else exponent
    x.pow(e).sum().backward()
    assert x.grad.abs().sum().item() == 0  # d x**0 / dx = 0, not nan, at x = 0


# covers: test_autograd.py::TestAutograd::test_dir
# (the complex-only attributes of the original are out of scope)
def test_dir():
    x = tg.randn(10, 10)
    keys = dir(x)
    assert "shape" in keys
    for key in keys:
        assert hasattr(x, key), key
