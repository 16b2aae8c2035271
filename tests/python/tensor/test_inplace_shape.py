"""In-place shape operations (`t_`, `transpose_`, `swapaxes_`, `swapdims_`, `squeeze_`,
`unsqueeze_`) with PyTorch's semantics: the tensor itself changes shape (same Python object, same
storage), `_version` is bumped, a tensor with history gets the view's `grad_fn` on top of its old
one, a leaf that requires grad is refused while recording, a saved copy becomes stale. Oracles:
NumPy for values and strides, closed forms and float64 central differences for gradients.
"""

import numpy as np
import pytest

import tapegrad as tg

OPS = [
    ("t_", (), lambda a: a.T),
    ("transpose_", (0, 1), lambda a: a.swapaxes(0, 1)),
    ("swapaxes_", (1, 0), lambda a: a.swapaxes(1, 0)),
    ("swapdims_", (0, -1), lambda a: a.swapaxes(0, -1)),
    ("unsqueeze_", (1,), lambda a: np.expand_dims(a, 1)),
    ("unsqueeze_", (-1,), lambda a: np.expand_dims(a, -1)),
]


def strides_of(a):
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("name,args,ref", OPS)
def test_values_strides_version_and_identity(name, args, ref):
    a = np.arange(6.0).reshape(2, 3)
    x = tg.tensor(a)
    ptr, v0 = x.data_ptr(), x._version
    out = getattr(x, name)(*args)
    assert out is x
    expect = ref(a)
    assert x.shape == expect.shape
    assert x.stride() == strides_of(expect)
    np.testing.assert_array_equal(x.numpy(), expect)
    assert x.data_ptr() == ptr  # same memory, no copy
    assert x._version == v0 + 1
    assert x.is_leaf and not x.requires_grad


@pytest.mark.parametrize("dim,shape", [(None, (2, 3)), (0, (2, 1, 3)), (2, (1, 2, 3)), (1, (1, 2, 1, 3)),
                                       ((0, 2), (2, 3)), ([0, 1], (2, 1, 3)), ((), (1, 2, 1, 3))])
def test_squeeze_(dim, shape):
    a = np.arange(6.0).reshape(1, 2, 1, 3)
    x = tg.tensor(a)
    r = x.squeeze_() if dim is None else x.squeeze_(dim)
    assert r is x and x.shape == shape and x._version == 1
    np.testing.assert_array_equal(x.numpy(), a.reshape(shape))


def test_writes_after_restride_reach_the_shared_memory():
    x = tg.zeros(2, 3)
    other_view = x[0]
    x.t_()
    x[2, 0] = 5.0  # element (0, 2) of the original layout
    assert other_view.tolist() == [0.0, 0.0, 5.0]


def test_edge_shapes_and_errors():
    s = tg.tensor(1.0)
    assert s.t_().shape == () and s.squeeze_().shape == () and s.squeeze_(0).shape == ()
    assert s.transpose_(0, -1).shape == ()
    assert tg.tensor(1.0).unsqueeze_(0).shape == (1,)
    assert tg.arange(3).t_().shape == (3,)
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions"):
        tg.zeros(2, 3, 4).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.zeros(1, 2, 1, 3).unsqueeze_(5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.zeros(2, 3).transpose_(0, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.tensor(1.0).squeeze_(1)
    with pytest.raises(TypeError, match="dim must be an int or a tuple of ints"):
        tg.zeros(1, 2).squeeze_("0")
    # A failed operation leaves the tensor as it was.
    x = tg.zeros(2, 3)
    with pytest.raises(IndexError):
        x.transpose_(0, 5)
    assert x.shape == (2, 3) and x._version == 0


def test_expanded_and_read_only_tensors_can_be_restrided():
    e = tg.zeros(3).expand(2, 3)
    assert e.t_().shape == (3, 2) and e.stride() == (1, 0)
    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    r = tg.from_numpy(a)
    assert r.t_().tolist() == a.T.tolist()


def test_leaf_that_requires_grad_is_refused_while_recording():
    x = tg.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad is being used in an in-place"):
        x.t_()
    assert x.shape == (2, 3) and x._version == 0
    # A view of such a leaf too.
    v = x[0:2]
    with pytest.raises(RuntimeError, match="a view of a leaf tensor that requires grad"):
        v.unsqueeze_(0)
    # A view made under no_grad, modified with grad mode on.
    with tg.no_grad():
        w = x[0:2]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        w.t_()


def test_leaf_under_no_grad_stays_a_leaf_and_keeps_grad():
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    g = tg.ones(2, 3, dtype=tg.float64)
    x.grad = g
    with tg.no_grad():
        assert x.t_() is x
    assert x.shape == (3, 2) and x.is_leaf and x.requires_grad and x.grad_fn is None and x._version == 1
    assert x.grad is g  # .grad stays (with its old shape), as in PyTorch
    with pytest.raises(RuntimeError, match="cannot be accumulated"):
        (x * 1).sum().backward()
    x.grad = None
    w = tg.tensor(np.arange(6.0).reshape(3, 2))
    (x * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.numpy())


@pytest.mark.parametrize("name,args,fn_name,ref", [
    ("t_", (), "TransposeBackward", lambda a: a.T),
    ("transpose_", (0, 1), "TransposeBackward", lambda a: a.T),
    ("swapdims_", (0, 1), "TransposeBackward", lambda a: a.T),
    ("unsqueeze_", (0,), "UnsqueezeBackward", lambda a: a[None]),
    ("squeeze_", (), "SqueezeBackward", lambda a: a),
])
def test_non_leaf_history_and_gradient(name, args, fn_name, ref):
    a = np.arange(6.0).reshape(2, 3)
    x = tg.tensor(a, requires_grad=True)
    y = x * 2
    mul = y.grad_fn
    assert getattr(y, name)(*args) is y
    assert not y.is_leaf and y._version == 1
    assert y.grad_fn.name() == fn_name
    assert y.grad_fn.next_functions[0][0] is mul
    w = np.arange(1.0, 7.0).reshape(ref(a).shape)
    (y * tg.tensor(w)).sum().backward()
    # d/dx sum(w * f(2x)) = 2 * f^-1(w): the weight brought back to x's layout.
    back = w.T if fn_name == "TransposeBackward" else w.reshape(2, 3)
    np.testing.assert_array_equal(x.grad.numpy(), 2 * back)


def test_view_stays_a_view_of_its_base():
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    base = x * 1
    v = base[0:2]
    v.t_()
    assert v._version == base._version == 1 and not v.is_leaf
    # A write through the base is seen through v (same storage), and gradients flow to x.
    (v * tg.tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(3, 2).T)


def test_saved_tensor_restrided_is_stale():
    x = tg.randn(2, 3, requires_grad=True)
    y = x * 2
    z = y.sin()
    y.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_retain_grad_fills_the_tensor_with_the_retained_value_gradient():
    # PyTorch keeps the retain hook on the value retain_grad was called on.
    x = tg.randn(2, 3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.t_()
    w = np.arange(6.0).reshape(3, 2)
    (y * tg.tensor(w)).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), w.T)


def test_hook_registered_before_stays_on_old_value():
    x = tg.randn(2, 3, requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.shape))
    y.t_()
    y.sum().backward()
    assert seen == [(2, 3)]


def test_one_python_object_after_restride():
    class Keep(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            seen.append(a)
            return g

    seen = []
    x = tg.randn(2, 3, requires_grad=True)
    y = x * 2
    y.unsqueeze_(0)
    Keep.apply(y).sum().backward()
    assert seen[0] is y


def test_second_derivatives_through_restrided_tensor():
    def f(x):
        y = x * x
        y.t_()
        y.unsqueeze_(0)
        y.squeeze_(0)
        return y * tg.tensor(np.arange(1.0, 7.0).reshape(3, 2))

    x = tg.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    assert tg.autograd.gradcheck(f, (x,))
    assert tg.autograd.gradgradcheck(f, (x,))


def test_many_restrides_keep_values():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tg.tensor(a)
    for _ in range(50):
        x.unsqueeze_(0).transpose_(0, 3).squeeze_(3)
        a = np.expand_dims(a, 0).swapaxes(0, 3).squeeze(3)
    assert x.shape == a.shape and x.stride() == strides_of(a)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x._version == 150


def test_restriding_while_other_threads_read_is_safe():
    # Readers hold the tensor (some with the GIL released, on a large tensor) while another thread
    # restrides it: every read sees one whole layout, and the values stay the same memory.
    import threading

    a = np.arange(200.0 * 300.0).reshape(200, 300)
    x = tg.tensor(a)
    total = a.sum()
    stop = threading.Event()
    errors = []

    def reader():
        try:
            while not stop.is_set():
                assert x.sum().item() == total
                assert x.shape in ((200, 300), (300, 200), (1, 300, 200))
        except Exception as e:  # reported below
            errors.append(e)

    def writer():
        try:
            for _ in range(300):
                x.t_()
                x.unsqueeze_(0)
                x.squeeze_(0)
                x.t_()
        except Exception as e:
            errors.append(e)
        finally:
            stop.set()

    threads = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert x.shape == (200, 300) and x._version == 1200
    np.testing.assert_array_equal(x.numpy(), a)
