"""PyTorch's `test_autograd.py` tests of `backward` / `autograd.grad` and `.grad` semantics, carried over.

Covers part 1 of the file (characters 0-192000): options of `tg.autograd.grad` and `backward`
(`retain_graph`, `create_graph`, `inputs`, `allow_unused`, `grad_outputs`, `materialize_grads`),
accumulation into `.grad`, gradients of non-leaves, second order, and the errors of bad calls.
Oracle: closed-form derivatives evaluated with NumPy on the same seeded inputs.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def arr(t):
    return np.asarray(t.detach().numpy())


def leaf(a, requires_grad=True):
    return tg.tensor(np.asarray(a), requires_grad=requires_grad)


RNG = np.random.default_rng(4321)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# covers: test_autograd.py::TestAutograd::test_unused_grad_requires_grad_with_materialize
def test_unused_grad_requires_grad_with_materialize():
    x = tg.ones(10, requires_grad=True)
    y = tg.ones(10, requires_grad=True)
    z = (x**2).sum()
    g = tg.autograd.grad(z, (x, y), allow_unused=True, materialize_grads=True, create_graph=False)
    assert not g[0].requires_grad
    assert not g[1].requires_grad
    np.testing.assert_array_equal(arr(g[0]), np.full(10, 2.0))
    np.testing.assert_array_equal(arr(g[1]), np.zeros(10))


# covers: test_autograd.py::TestAutograd::test_grad_materialize_grads
def test_grad_materialize_grads():
    x = tg.tensor(0.5, requires_grad=True)
    a = tg.tensor(1.0, requires_grad=True)
    y = x * a
    dydx = tg.autograd.grad(y, x, create_graph=True)
    d2_none = tg.autograd.grad(dydx, x, create_graph=True, allow_unused=True)
    d2 = tg.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
    d3 = tg.autograd.grad(d2, x, materialize_grads=True)  # allow_unused implied
    assert d2_none[0] is None
    assert d2[0].item() == 0
    assert d3[0].item() == 0
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when"):
        tg.autograd.grad(y, x, allow_unused=False, materialize_grads=True)


def _accumulate(create_graph):
    x = leaf(randn(5, 5))
    y = x + 2
    y.backward(tg.ones(5, 5), retain_graph=True)
    first = x.grad
    first_copy = arr(first).copy()
    y.backward(tg.ones(5, 5), create_graph=create_graph)
    return x, first, first_copy


# covers: test_autograd.py::TestAutograd::test_accumulate_grad
def test_accumulate_grad():
    # without create_graph the second gradient is added into the same tensor, in place
    _, first, first_copy = _accumulate(create_graph=False)
    np.testing.assert_array_equal(arr(first), first_copy * 2)
    # with create_graph a new tensor is made and the first one is left as it was
    x, first, first_copy = _accumulate(create_graph=True)
    np.testing.assert_array_equal(arr(first), first_copy)
    np.testing.assert_array_equal(arr(x.grad), first_copy * 2)


# covers: test_autograd.py::TestAutograd::test_accumulate_grad_tensor_reference
# (the sparse-gradient cases are out of scope: tapegrad has no sparse tensors)
@pytest.mark.parametrize(
    "create_graph",
    [False, True],
)
def test_accumulate_grad_tensor_reference(create_graph):
    params = tg.tensor([1.5, 1.5]).requires_grad_()
    params.grad = tg.tensor([1.5, 1.5])
    before = params.grad
    params.backward(tg.tensor([1.5, 1.5]), create_graph=create_graph)
    assert (params.grad is before) == (not create_graph)


# covers: test_autograd.py::TestAutograd::test_accumulate_grad_tensor_reference
# (the same fact seen through the data: the tensor held before backward is the one accumulated into,
# unless create_graph asks for a new one)
@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulate_grad_tensor_reference_memory(create_graph):
    params = tg.tensor([1.5, 1.5]).requires_grad_()
    params.grad = tg.tensor([1.5, 1.5])
    before = params.grad
    params.backward(tg.tensor([1.5, 1.5]), create_graph=create_graph)
    np.testing.assert_array_equal(arr(params.grad), [3.0, 3.0])
    np.testing.assert_array_equal(arr(before), [1.5, 1.5] if create_graph else [3.0, 3.0])


# covers: test_autograd.py::TestAutograd::test_accumulate_grad_with_zero_numel_grad
def test_accumulate_grad_with_zero_numel_grad():
    a = tg.rand(4, 0, requires_grad=True)
    b = tg.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    np.testing.assert_array_equal(arr(b.grad), np.zeros((4, 1)))
    assert a.grad.shape == (4, 0)


# covers: test_autograd.py::TestAutograd::test_hessian_vector
def test_hessian_vector():
    X, Y = randn(2, 2), randn(2, 2)
    x, y = leaf(X), leaf(Y)
    z = x**2 + y * x + y**2
    z.backward(tg.ones(2, 2), create_graph=True)
    np.testing.assert_allclose(arr(x.grad), 2 * X + Y, rtol=1e-6)
    np.testing.assert_allclose(arr(y.grad), X + 2 * Y, rtol=1e-6)
    grad_sum = 2 * x.grad + y.grad
    grad_sum.backward(tg.ones(2, 2))
    # d(2*(2x+y) + (x+2y))/dx = 5, /dy = 4, added to the first gradients
    np.testing.assert_allclose(arr(x.grad), 2 * X + Y + 5, rtol=1e-6)
    np.testing.assert_allclose(arr(y.grad), X + 2 * Y + 4, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_grad
def test_grad():
    X, Y = randn(2, 2), randn(2, 2)
    x, y = leaf(X), leaf(Y)
    z = x**2 + y * x + y**2
    z.backward(tg.ones(2, 2), create_graph=True)
    grad_sum = 2 * x.grad + y.grad
    (x_hv,) = tg.autograd.grad(outputs=[grad_sum], grad_outputs=[tg.ones(2, 2)], inputs=[x], create_graph=True)
    np.testing.assert_allclose(arr(x_hv), np.full((2, 2), 5.0))
    # autograd.grad leaves .grad alone
    np.testing.assert_allclose(arr(x.grad), 2 * X + Y, rtol=1e-6)
    np.testing.assert_allclose(arr(y.grad), X + 2 * Y, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"):
        tg.autograd.grad(outputs=[grad_sum], grad_outputs=[tg.ones(2)], inputs=[x], create_graph=True)


# covers: test_autograd.py::TestAutograd::test_grad_nonleaf
def test_grad_nonleaf():
    X0, Y = randn(2, 2), randn(2, 2)
    x_init, y = leaf(X0), leaf(Y)
    x = x_init
    go = tg.ones(2, 2)

    def fn(t):
        return t**2 + y * t + y**2

    X = X0.astype(np.float64)
    for _ in range(5):
        (gx,) = tg.autograd.grad(fn(x), x, grad_outputs=go, create_graph=True)
        assert y.grad is None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # x is a non-leaf after the first step
            assert x.grad is None
        np.testing.assert_allclose(arr(gx), 2 * X + Y, rtol=1e-5, atol=1e-6)
        x = x + 0.05 * gx
        X = X + 0.05 * (2 * X + Y)
    # gradient ascent raised the value
    assert fn(x).sum().item() > fn(x_init).sum().item()
    x.backward(go)
    assert y.grad is not None
    assert x_init.grad is not None


# covers: test_autograd.py::TestAutograd::test_grad_nonleaf_many_outputs
# (PyTorch takes the two halves with `chunk`, which tapegrad lacks; two slices are the same halves.)
def test_grad_nonleaf_many_outputs():
    x = tg.randn(4, 2, requires_grad=True)
    a, b = x[:2], x[2:]
    called = []
    x.register_hook(lambda *g: called.append(True))
    GO = randn(2, 2)
    ga, gb = tg.autograd.grad(a + 2 * b, [a, b], grad_outputs=tg.tensor(GO), create_graph=True)
    np.testing.assert_array_equal(arr(ga), GO)
    np.testing.assert_array_equal(arr(gb), GO * 2)
    assert not called
    assert x.grad is None


# covers: test_autograd.py::TestAutograd::test_sharded_grad
def test_sharded_grad():
    leaves = [tg.zeros(5, 5, requires_grad=True) for _ in range(10)]
    inter = [lf * i + lf * lf for i, lf in enumerate(leaves)]
    loss = inter[0] * 0
    for i, v in enumerate(inter):
        loss = loss + v * i
    loss = loss.sum()
    d_inter = []
    for k in range(0, len(inter), 2):
        d_inter.extend(tg.autograd.grad(loss, inter[k : k + 2], retain_graph=True))
    tg.autograd.backward(inter, d_inter)
    for i, lf in enumerate(leaves):
        # d loss / d leaf_i = i * (i + 2 * leaf_i) at leaf_i = 0
        np.testing.assert_array_equal(arr(lf.grad), np.full((5, 5), i * i * 1.0))


# covers: test_autograd.py::TestAutograd::test_backward_badcalls
def test_backward_badcalls():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.ones(1).backward()


# covers: test_autograd.py::TestAutograd::test_grad_badcalls
def test_grad_badcalls():
    x = tg.ones(1)
    y = x**2
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(y, x)
    x = tg.ones(1, requires_grad=True)
    (g,) = tg.autograd.grad(x**2, x)
    np.testing.assert_array_equal(arr(g), [2.0])


# covers: test_autograd.py::TestAutograd::test_grad_empty_inputs
def test_grad_empty_inputs():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="grad requires non-empty inputs"):
        tg.autograd.grad(2 * x, [], grad_outputs=tg.tensor([1.0]))


# covers: test_autograd.py::TestAutograd::test_grad_fn_badcalls
def test_grad_fn_badcalls():
    x = tg.ones(1, requires_grad=True)
    y = x**2
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn()
    g = y.grad_fn(x.detach())  # one output gradient in, the input gradient 2 * x out
    np.testing.assert_array_equal(arr(g), [2.0])


# covers: test_autograd.py::TestAutograd::test_grad_unreachable
def test_grad_unreachable():
    x = tg.ones(1, requires_grad=True)
    y = tg.ones(1, requires_grad=True)
    _z = x * 2
    _w = y * 2
    gx, gy = tg.autograd.grad(x * 2, [x, y], allow_unused=True)
    np.testing.assert_array_equal(arr(gx), [2.0])
    assert gy is None
    z = tg.ones(1, requires_grad=True)
    gx, gz = tg.autograd.grad(x * 2, [x, z], allow_unused=True)
    np.testing.assert_array_equal(arr(gx), [2.0])
    assert gz is None
    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        tg.autograd.grad(x * 2, [x, y], allow_unused=False)


# covers: test_autograd.py::TestAutograd::test_grad_unreachable_discovery
def test_grad_unreachable_discovery():
    class MustNotRun(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("this node should not be executed")

    x = MustNotRun.apply(tg.randn(1, requires_grad=True) * 2)
    y = tg.randn(1, requires_grad=True)
    (gy,) = tg.autograd.grad(x, (y,), allow_unused=True)
    assert gy is None

    x = MustNotRun.apply(tg.randn(1, requires_grad=True) * 2)
    y = tg.randn(1, requires_grad=True)
    z = tg.randn(1, requires_grad=True)
    gy, gz = tg.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gy is None
    np.testing.assert_array_equal(arr(gz), [1.0])

    x = MustNotRun.apply(tg.randn(1, requires_grad=True) * 2)
    y = tg.randn(1, requires_grad=True)
    tg.autograd.backward(x, inputs=(y,))  # allow_unused is implied here
    assert y.grad is None


# covers: test_autograd.py::TestAutograd::test_tensor_grad_warnings
def test_tensor_grad_warnings():
    dummy = tg.empty(1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dummy.requires_grad_()
        _ = dummy.grad  # a leaf: no warning
        assert len(w) == 0
        dummy = dummy.clone()
        _ = dummy.grad  # a non-leaf: warns
        assert len(w) == 1
        assert issubclass(w[0].category, UserWarning)
        dummy.retain_grad()
        _ = dummy.grad  # a non-leaf that retains its gradient: no more warnings
        assert len(w) == 1


# covers: test_autograd.py::TestAutograd::test_backward
def test_backward():
    V, X, Z, GO = randn(5, 5), randn(5, 5), randn(5, 5), randn(5, 5)
    Y = RNG.random((5, 5)).astype(np.float32) + 0.1
    v, x, y, z = leaf(V), leaf(X), leaf(Y), leaf(Z)
    go = tg.tensor(GO)
    v.backward(go)
    np.testing.assert_array_equal(arr(v.grad), GO)
    a = x + (y * z) + 4 * z**2 * x / y
    a.backward(go)
    np.testing.assert_allclose(arr(x.grad), (4 * Z**2 / Y + 1) * GO, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(arr(y.grad), (Z - 4 * X * Z**2 / Y**2) * GO, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(arr(z.grad), (8 * X * Z / Y + Y) * GO, rtol=1e-4, atol=1e-4)


# covers: test_autograd.py::TestAutograd::test_multi_backward
def test_multi_backward():
    X, Y, Q, A, B, GZ, GC = (randn(5, 5) for _ in range(7))
    x, y, q, a, b = leaf(X), leaf(Y), leaf(Q), leaf(A), leaf(B)
    q2 = q * 2
    z = x + y + q2
    c = a * b + q2
    tg.autograd.backward([z, c], [tg.tensor(GZ), tg.tensor(GC)])
    np.testing.assert_array_equal(arr(x.grad), GZ)
    np.testing.assert_array_equal(arr(y.grad), GZ)
    np.testing.assert_allclose(arr(a.grad), GC * B, rtol=1e-6)
    np.testing.assert_allclose(arr(b.grad), GC * A, rtol=1e-6)
    np.testing.assert_allclose(arr(q.grad), (GC + GZ) * 2, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_multi_backward_no_grad
def test_multi_backward_no_grad():
    x = tg.randn(5, 5, requires_grad=True)
    y = tg.randn(5, 5)
    z = x + y
    q = y * 2  # has no history
    with pytest.raises(RuntimeError):
        tg.autograd.backward([z, q], [tg.ones(5, 5), tg.ones(5, 5)])


# covers: test_autograd.py::TestAutograd::test_backward_with_inputs
def test_backward_with_inputs():
    X, Y = RNG.standard_normal((2, 2)), RNG.standard_normal((2, 2))
    x, y = leaf(X), leaf(Y)

    def fn():
        return x**2 + y * x + y**2

    go = tg.ones(2, 2, dtype=tg.float64)
    gx, gy = 2 * X + Y, X + 2 * Y

    def reset():
        with tg.no_grad():
            x.grad.zero_()
            y.grad.zero_()

    tg.autograd.backward(fn(), go, inputs=[x, y])
    np.testing.assert_allclose(arr(x.grad), gx)
    np.testing.assert_allclose(arr(y.grad), gy)
    reset()
    tg.autograd.backward(fn(), go, inputs=[x])
    np.testing.assert_allclose(arr(x.grad), gx)
    np.testing.assert_array_equal(arr(y.grad), np.zeros((2, 2)))
    reset()
    tg.autograd.backward(fn(), go, inputs=[y])
    np.testing.assert_allclose(arr(y.grad), gy)
    np.testing.assert_array_equal(arr(x.grad), np.zeros((2, 2)))
    reset()
    tg.autograd.backward(fn(), go, inputs=y)
    np.testing.assert_allclose(arr(y.grad), gy)
    np.testing.assert_array_equal(arr(x.grad), np.zeros((2, 2)))
    reset()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tg.autograd.backward(fn(), go, inputs=[])


# covers: test_autograd.py::TestAutograd::test_backward_with_scalar_input
def test_backward_with_scalar_input():
    X = RNG.standard_normal(())
    x = leaf(X)
    (x**2).backward(inputs=x)
    np.testing.assert_allclose(arr(x.grad), 2 * X)


# covers: test_autograd.py::TestAutograd::test_backward_with_nonleaf_inputs
def test_backward_with_nonleaf_inputs():
    X, Y = RNG.standard_normal((2, 2)), RNG.standard_normal((2, 2))
    x, y = leaf(X), leaf(Y)
    z = leaf(RNG.standard_normal((2, 2)))
    xn = x * 1
    out = xn**2 + y * xn + y**2
    out.backward(tg.ones(2, 2, dtype=tg.float64), create_graph=True, inputs=[x, y, xn])
    np.testing.assert_allclose(arr(y.grad), X + 2 * Y)
    np.testing.assert_allclose(arr(x.grad), 2 * X + Y)
    np.testing.assert_allclose(arr(xn.grad), 2 * X + Y)
    # backward has no allow_unused: an input outside the graph just gets no gradient
    out.backward(tg.ones(2, 2, dtype=tg.float64), create_graph=True, inputs=[z])
    assert z.grad is None


# covers: test_autograd.py::TestAutograd::test_dependent_backward
def test_dependent_backward():
    X, GY, GZ = randn(10), randn(10), randn(10)
    x = leaf(X)
    y = x**2
    z = y**3
    tg.autograd.backward([y, z], [tg.tensor(GY), tg.tensor(GZ)])
    np.testing.assert_allclose(arr(x.grad), 2 * X * GY + 6 * X**5 * GZ, rtol=1e-4, atol=1e-5)


# covers: test_autograd.py::TestAutograd::test_duplicate_backward_root
def test_duplicate_backward_root():
    A, B, GO = randn(5, 5), randn(5, 5), randn(5, 5)
    a, b = leaf(A), leaf(B)
    x = a * b
    go = tg.tensor(GO)
    tg.autograd.backward([x, x], [go, go])
    np.testing.assert_allclose(arr(a.grad), B * GO * 2, rtol=1e-6)
    np.testing.assert_allclose(arr(b.grad), A * GO * 2, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_backward_no_grad
def test_backward_no_grad():
    a = tg.randn(5, 5, requires_grad=True)
    b = a + 2
    with pytest.raises(RuntimeError):
        tg.autograd.backward([b], [None])


# covers: test_autograd.py::TestAutograd::test_backward_twice_with_saved_values
# (PyTorch builds c with an integer-array index assignment, which tapegrad lacks; b * b saves values too)
def test_backward_twice_with_saved_values():
    b = leaf(RNG.standard_normal(3))
    c = b * b
    c.backward(tg.ones(3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(tg.ones(3, dtype=tg.float64))


# covers: test_autograd.py::TestAutograd::test_backward_twice_retained_graph_with_saved_values
# covers: test_autograd.py::TestAutograd::test_backward_twice_retained_graph_without_saved_values
def test_backward_twice_retained_graph_with_saved_values():
    B = RNG.standard_normal(3)
    b = leaf(B)
    c = b * b
    c.backward(tg.ones(3, dtype=tg.float64), retain_graph=True)
    c.backward(tg.ones(3, dtype=tg.float64))
    np.testing.assert_allclose(arr(b.grad), 4 * B)


# covers: test_autograd.py::TestAutograd::test_backward_twice_without_saved_values
def test_backward_twice_without_saved_values():
    b = leaf(RNG.standard_normal(3))
    c = b + 1
    c.backward(tg.ones(3, dtype=tg.float64))
    c.backward(tg.ones(3, dtype=tg.float64))
    np.testing.assert_array_equal(arr(b.grad), [2.0, 2.0, 2.0])


# covers: test_autograd.py::TestAutograd::test_backward_create_graph_warns
def test_backward_create_graph_warns():
    b = leaf(RNG.standard_normal(3))
    c = b * b
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        c.backward(tg.ones_like(c), create_graph=True)
    b.grad = None
    with warnings.catch_warnings(record=True) as ws2:
        warnings.simplefilter("always")
        tg.autograd.grad(c, b, tg.ones_like(c), create_graph=True)
    assert not any("Using backward() with create_graph=True" in str(w.message) for w in ws2)
    assert any("Using backward() with create_graph=True" in str(w.message) for w in ws)


# covers: test_autograd.py::TestAutograd::test_next_functions
def test_next_functions():
    x = tg.randn(5, 5, requires_grad=True)
    y = tg.randn(5, 5, requires_grad=True)
    a = x + y
    assert a.grad_fn is not None
    nf = a.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].name() == "AccumulateGrad" and nf[0][1] == 0
    assert nf[1][0].name() == "AccumulateGrad" and nf[1][1] == 0
    b = a + 5
    nf = b.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0] is a.grad_fn
    assert nf[1][0] is None


# covers: test_autograd.py::TestAutograd::test_requires_grad
def test_requires_grad():
    x, y = tg.randn(5, 5), tg.randn(5, 5)
    z = tg.randn(5, 5, requires_grad=True)
    a = x + y
    assert not a.requires_grad
    b = a + z
    assert b.requires_grad

    def must_not_run(g):
        raise AssertionError("a hook of a tensor without gradient ran")

    # PyTorch puts hooks in a private dict; here they can only be registered where they apply
    with pytest.raises(RuntimeError):
        a.register_hook(must_not_run)
    b.backward(tg.ones(5, 5))
    np.testing.assert_array_equal(arr(z.grad), np.ones((5, 5)))


# covers: test_autograd.py::TestAutograd::test_requires_grad_
def test_requires_grad_():
    x = tg.randn(5, 5)
    y = tg.randn(5, 5, requires_grad=True)
    assert x.requires_grad_() is x and x.requires_grad
    assert y.requires_grad_() is y and y.requires_grad
    assert x.requires_grad_(True) is x and x.requires_grad
    assert y.requires_grad_(True) is y and y.requires_grad
    z = x * y
    with pytest.raises(RuntimeError):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert z.requires_grad_(True) is z and z.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert y.requires_grad_(False) is y and not y.requires_grad


# covers: test_autograd.py::TestAutograd::test_requires_grad_inplace
def test_requires_grad_inplace():
    a = tg.randn(5, 5)
    b = tg.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad
    a = tg.randn(5, 5) + 0
    b = tg.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad


# covers: test_autograd.py::TestAutograd::test_attribute_deletion
def test_attribute_deletion():
    x = tg.randn(5, 5, requires_grad=True)
    del x.grad
    assert x.grad is None
    with pytest.raises(RuntimeError):
        del x.data
    with pytest.raises(TypeError):
        x.data = None
    with pytest.raises(RuntimeError):
        del x.requires_grad


# covers: test_autograd.py::TestAutograd::test_unused_output
# (PyTorch splits x with `chunk`, which tapegrad lacks; slices of two rows are the same pieces)
def test_unused_output():
    x = tg.randn(10, 10, requires_grad=True)
    outputs = [x[2 * i : 2 * i + 2] for i in range(5)]
    o = outputs[2] * 4 + 2
    o.sum().backward()
    expected = np.zeros((10, 10))
    expected[4:6] = 4
    np.testing.assert_array_equal(arr(x.grad), expected)

    with tg.no_grad():
        x.grad.zero_()
    GO = randn(2, 10)
    outputs = [x[2 * i : 2 * i + 2] for i in range(5)]
    outputs[0].backward(tg.tensor(GO))
    expected = np.zeros((10, 10))
    expected[:2] = GO
    np.testing.assert_array_equal(arr(x.grad), expected)


# covers: test_autograd.py::TestAutograd::test_select_expanded_v
def test_select_expanded_v():
    V = RNG.random(10).astype(np.float32)
    v = tg.tensor(V).expand(10, 10)
    a = tg.rand(10, 10, 10, requires_grad=True)
    (res,) = tg.autograd.grad(a[0], a, v)
    expected = np.zeros((10, 10, 10), dtype=np.float32)
    expected[0] = np.broadcast_to(V, (10, 10))
    np.testing.assert_array_equal(arr(res), expected)


# covers: test_autograd.py::TestAutograd::test_slice_expanded_v
def test_slice_expanded_v():
    V = RNG.random((10, 1)).astype(np.float32)
    v = tg.tensor(V).expand(2, 10, 10)
    a = tg.rand(10, 10, 10, requires_grad=True)
    (res,) = tg.autograd.grad(a[3:5], a, v)
    expected = np.zeros((10, 10, 10), dtype=np.float32)
    expected[3:5] = np.broadcast_to(V, (2, 10, 10))
    np.testing.assert_array_equal(arr(res), expected)


# covers: test_autograd.py::TestAutograd::test_select_sum
# (PyTorch's `select(0, 1)` is `x[1]` here; its gradgradcheck is left out: tapegrad has none yet)
def test_select_sum():
    x = leaf(RNG.standard_normal(10))
    assert tg.autograd.gradcheck(lambda t: t[1].sum(), [x])
    x[1].sum().backward()
    expected = np.zeros(10)
    expected[1] = 1
    np.testing.assert_array_equal(arr(x.grad), expected)


def _check_index(x_np, y, idx):
    if y.grad is not None:
        with tg.no_grad():
            y.grad.zero_()
    indexed = y[idx]
    np.testing.assert_array_equal(arr(indexed), x_np[idx])
    indexed.sum().backward()
    expected = np.zeros(x_np.shape, dtype=np.float32)
    expected[idx] = 1
    np.testing.assert_array_equal(arr(y.grad), expected)


# covers: test_autograd.py::TestAutograd::test_indexing
# (only the basic indices and the bool mask: the integer-array ("advanced") indices of the original
# need integer-array indexing, which tapegrad lacks (issue 15))
def test_indexing():
    X = np.arange(1.0, 17, dtype=np.float32).reshape(4, 4)
    y = tg.tensor(X, requires_grad=True)
    for idx in [
        1,
        (1, 1),
        slice(1, None),
        slice(None, 2),
        (slice(None, 2), 2),
        (slice(1, 2), 2),
        (1, slice(2, None)),
        (slice(None, None), slice(2, None)),
        (Ellipsis, slice(2, None)),
    ]:
        _check_index(X, y, idx)
    mask = RNG.random((4, 4)) < 0.5
    if y.grad is not None:
        with tg.no_grad():
            y.grad.zero_()
    out = y[tg.tensor(mask)]
    np.testing.assert_array_equal(arr(out), X[mask])
    out.sum().backward()
    np.testing.assert_array_equal(arr(y.grad), mask.astype(np.float32))


# covers: test_autograd.py::TestAutograd::test_index_backward_does_not_save_tensor
def test_index_backward_does_not_save_tensor():
    a = tg.tensor([1.0, 0, 0])
    b = tg.zeros(3, requires_grad=True)
    t = b + 0
    t[a != 0] = t[a != 0]  # the read must not save t, which the write then changes
    t.backward(tg.zeros_like(t))
    np.testing.assert_array_equal(arr(b.grad), np.zeros(3))
