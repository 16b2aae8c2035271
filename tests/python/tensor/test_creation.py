"""Issue 15's creation functions, tensor conveniences and small shape operations: values against
NumPy or closed forms, gradients against float64 central differences, errors as PyTorch's."""

import numpy as np
import pytest
from oracles import check_grads

import tapegrad as tg
import tapegrad.nn.functional as F


def test_linspace_logspace_values():
    np.testing.assert_allclose(tg.linspace(-1, 2, 7, dtype=tg.float64).numpy(), np.linspace(-1, 2, 7))
    np.testing.assert_allclose(tg.linspace(0, 1, 5).numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    assert tg.linspace(0, 1, 5).dtype == tg.float32
    assert tg.linspace(3, 7, 1).tolist() == [3.0]
    assert tg.linspace(3, 7, 0).shape == (0,)
    # both ends exact, symmetric spacing
    t = tg.linspace(0.1, 0.7, 4, dtype=tg.float64).numpy()
    assert t[0] == 0.1 and t[-1] == 0.7
    np.testing.assert_allclose(tg.logspace(0, 3, 4, dtype=tg.float64).numpy(), [1, 10, 100, 1000])
    np.testing.assert_allclose(tg.logspace(1, 3, 3, base=2, dtype=tg.float64).numpy(), [2, 4, 8])
    assert tg.linspace(0, 1, 3, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        tg.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        tg.linspace(0, 1, 2.5)


def test_arange_float_steps():
    np.testing.assert_allclose(tg.arange(0, 1, 0.1, dtype=tg.float64).numpy(), np.arange(0, 1, 0.1))
    assert tg.arange(1, 2.5, 0.5).tolist() == [1.0, 1.5, 2.0]
    assert tg.arange(0, 1, 0.1).shape == (10,)


def test_randint_randperm_ranges():
    tg.manual_seed(0)
    t = tg.randint(3, 7, (1000,))
    assert t.dtype == tg.int64 and t.shape == (1000,)
    assert set(t.tolist()) == {3, 4, 5, 6}
    t = tg.randint(2, (5, 2))
    assert set(t.flatten().tolist()) <= {0, 1}
    assert tg.randint(0, 5, size=(3,)).shape == (3,)
    assert tg.randint(5, (2,), dtype=tg.float64).dtype == tg.float64
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        tg.randint(5, 5, (2,))
    like = tg.randint_like(tg.zeros(2, 3, dtype=tg.float64), 1, 3)
    assert like.shape == (2, 3) and like.dtype == tg.float64 and set(like.flatten().tolist()) <= {1.0, 2.0}
    p = tg.randperm(50)
    assert p.dtype == tg.int64 and sorted(p.tolist()) == list(range(50))
    assert tg.randperm(0).shape == (0,)
    with pytest.raises(RuntimeError):
        tg.randperm(-1)
    # reproducible from the seed
    tg.manual_seed(3)
    a = tg.randperm(10).tolist()
    tg.manual_seed(3)
    assert tg.randperm(10).tolist() == a


def test_normal_overloads():
    tg.manual_seed(1)
    m = tg.tensor([0.0, 100.0, -100.0])
    s = tg.normal(m, 0.0)
    np.testing.assert_array_equal(s.numpy(), m.numpy())
    s = tg.normal(5.0, tg.zeros(4))
    np.testing.assert_array_equal(s.numpy(), np.full(4, 5.0))
    s = tg.normal(tg.zeros(20000, dtype=tg.float64), tg.full((20000,), 2.0, dtype=tg.float64))
    assert s.dtype == tg.float64
    assert abs(s.mean().item()) < 0.1 and abs(s.std().item() - 2.0) < 0.1
    s = tg.normal(1.0, 3.0, (20000,))
    assert s.shape == (20000,) and abs(s.mean().item() - 1.0) < 0.15
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        tg.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        tg.normal(tg.zeros(2), tg.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match="size is required"):
        tg.normal(0.0, 1.0)


def test_as_tensor():
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    assert tg.as_tensor(t) is t
    d = tg.as_tensor(t, dtype=tg.float64)
    assert d.dtype == tg.float64 and d.requires_grad and d.grad_fn is not None
    a = np.array([1, 2, 3])
    assert tg.as_tensor(a).tolist() == [1, 2, 3]
    assert tg.as_tensor([1.5]).dtype == tg.float32


def test_new_factories_and_type_as():
    x = tg.zeros(1, dtype=tg.float64)
    assert x.new_zeros(2, 3).shape == (2, 3) and x.new_zeros((2, 3)).dtype == tg.float64
    assert x.new_ones(2).tolist() == [1.0, 1.0]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_empty(3).shape == (3,)
    n = x.new_tensor([1, 2])
    assert n.dtype == tg.float64 and n.tolist() == [1.0, 2.0]
    assert x.new_zeros(2, dtype=tg.int64).dtype == tg.int64
    assert x.new_ones(2, requires_grad=True).requires_grad
    src = tg.tensor([1.0], requires_grad=True)
    copy = x.new_tensor(src)
    assert not copy.requires_grad and copy.grad_fn is None
    i = tg.tensor([1, 2])
    assert i.type_as(x).dtype == tg.float64
    assert x.type_as(x) is x
    assert i.to(x).dtype == tg.float64


def test_element_size_nbytes_data_ptr_storage_offset():
    t = tg.zeros(3, 4)
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 48
    assert tg.zeros(2, dtype=tg.float64).element_size() == 8
    assert tg.zeros(2, dtype=tg.int64).itemsize == 8
    assert tg.zeros(2, dtype=tg.bool).itemsize == 1
    assert t[1].storage_offset() == 4 and t[:, 2].storage_offset() == 2
    assert t[1].data_ptr() - t.data_ptr() == 16
    assert t.view(12).data_ptr() == t.data_ptr()
    assert t.clone().data_ptr() != t.data_ptr()
    assert tg.zeros(0).data_ptr() == 0


def test_mT_mH_H():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = tg.tensor(a)
    np.testing.assert_array_equal(t.mT.numpy(), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(t.mH.numpy(), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(tg.tensor(a[0]).H.numpy(), a[0].T)
    s = tg.tensor(2.0)
    assert s.H is s
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices"):
        _ = tg.zeros(3).mT
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        _ = t.H
    check_grads(lambda x: x.mT * tg.tensor(np.arange(24.0).reshape(2, 4, 3)), [a])


def test_squeeze_tuple():
    t = tg.zeros(1, 2, 1, 3)
    assert t.squeeze((0, 2)).shape == (2, 3)
    assert t.squeeze([0, 1]).shape == (2, 1, 3)
    assert tg.squeeze(t, (0, -2)).shape == (2, 3)
    assert t.squeeze(()).shape == (1, 2, 1, 3)
    with pytest.raises(TypeError):
        t.squeeze("a")
    with pytest.raises(IndexError):
        t.squeeze((0, 9))


def test_unique_dim():
    a = np.array([[1, 2], [1, 2], [0, 5], [1, 3]])
    u, inv, cnt = tg.unique(tg.tensor(a), dim=0, return_inverse=True, return_counts=True)
    ev, einv, ecnt = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), ev)
    np.testing.assert_array_equal(inv.numpy(), einv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), ecnt)
    np.testing.assert_array_equal(tg.tensor(a).unique(dim=1).numpy(), np.unique(a, axis=1))
    assert tg.tensor([3, 1, 3]).unique().tolist() == [1, 3]
    with pytest.raises(IndexError):
        tg.unique(tg.tensor(a), dim=2)


def test_repeat_interleave_tensor_repeats():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = tg.tensor(x).repeat_interleave(tg.tensor([1, 2]), dim=0)
    np.testing.assert_array_equal(out.numpy(), np.repeat(x, [1, 2], axis=0))
    out = tg.tensor(x).repeat_interleave(tg.tensor([1, 2, 0, 1]))
    np.testing.assert_array_equal(out.numpy(), np.repeat(x.reshape(-1), [1, 2, 0, 1]))
    out = tg.tensor(x).repeat_interleave(tg.tensor([2]), dim=1)
    np.testing.assert_array_equal(out.numpy(), np.repeat(x, 2, axis=1))
    assert tg.repeat_interleave(tg.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert tg.tensor([1, 2]).repeat_interleave(tg.tensor([1, 2]), output_size=3).tolist() == [1, 2, 2]
    with pytest.raises(RuntimeError, match="allocated size does not match"):
        tg.tensor([1, 2]).repeat_interleave(tg.tensor([1, 2]), output_size=4)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        tg.tensor([1, 2]).repeat_interleave(tg.tensor([1, -2]))
    with pytest.raises(RuntimeError, match="same size as input along dim"):
        tg.tensor([1, 2]).repeat_interleave(tg.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="1D"):
        tg.tensor([1, 2]).repeat_interleave(tg.tensor([[1, 2]]))
    check_grads(lambda t: t.repeat_interleave(tg.tensor([3, 0]), dim=0) * 1.5, [x])
    check_grads(lambda t: t.repeat_interleave(tg.tensor([2, 1]), dim=1).exp(), [x])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pads", [(1, 2), (2, 0), (0, 1, 1, 1)])
def test_pad_modes_values_and_grads(mode, pads):
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    np_pad = [(0, 0)] * 3
    for i in range(len(pads) // 2):
        np_pad[2 - i] = (pads[2 * i], pads[2 * i + 1])
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    out = F.pad(tg.tensor(a), pads, mode=mode)
    np.testing.assert_allclose(out.numpy(), np.pad(a, np_pad, mode=np_mode))
    w = np.random.default_rng(1).normal(size=out.shape)
    check_grads(lambda t: F.pad(t, pads, mode=mode) * tg.tensor(w), [a])


def test_pad_constant():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(F.pad(tg.tensor(a), (1, 2), value=9.0).numpy(),
                                  np.pad(a, [(0, 0), (1, 2)], constant_values=9.0))
    np.testing.assert_array_equal(F.pad(tg.tensor(a), (0, 0, 1, 0)).numpy(), np.pad(a, [(1, 0), (0, 0)]))
    np.testing.assert_array_equal(F.pad(tg.tensor(a), (-1, 1)).numpy(), [[1, 2, 0], [4, 5, 0]])
    check_grads(lambda t: F.pad(t, (1, -1, 2, 0), value=0.5) * 2.0, [a])


def test_pad_errors():
    x = tg.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="less than or equal to two times"):
        F.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(NotImplementedError):
        F.pad(tg.zeros(3), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode"):
        F.pad(x, (1, 1), mode="bogus")
    with pytest.raises(RuntimeError, match="doesn't take in value"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)


def test_public_functions_carry_their_own_names():
    import types

    for name in tg.__all__:
        obj = getattr(tg, name)
        if isinstance(obj, (types.ModuleType, type)) or not callable(obj):
            continue
        assert obj.__name__ == name, (name, obj.__name__)
        assert getattr(obj, "__qualname__", name) == name, (name, obj.__qualname__)
    assert tg.where.__name__ == "where"


@pytest.fixture
def float64_default():
    tg.set_default_dtype(tg.float64)
    try:
        yield
    finally:
        tg.set_default_dtype(tg.float32)


def test_default_dtype_is_float32():
    assert tg.get_default_dtype() == tg.float32
    assert tg.tensor([1.5]).dtype == tg.float32 and tg.zeros(1).dtype == tg.float32


def test_set_default_dtype_float64(float64_default):
    assert tg.get_default_dtype() == tg.float64
    for t in (tg.tensor([1.5]), tg.tensor(2.5), tg.tensor([[1.0, 2]]), tg.zeros(2), tg.ones(1), tg.empty(1),
              tg.rand(2), tg.randn(2), tg.full((2,), 1.5), tg.eye(2), tg.arange(0, 1, 0.25),
              tg.linspace(0, 1, 3), tg.logspace(0, 1, 3), tg.tensor([1]) / 2, tg.tensor([1]) + 1.5,
              tg.tensor([1]).sqrt(), tg.tensor([True]) / 1, tg.tensor([1, 2]).logsumexp(0)):
        assert t.dtype == tg.float64, t
    assert tg.arange(3).dtype == tg.int64 and tg.tensor([1]).dtype == tg.int64
    # the values are computed in float64: 0.1 is float64's 0.1, not float32's
    assert tg.tensor([0.1]).item() == 0.1
    assert tg.float32 == tg.tensor([1.0], dtype=tg.float32).dtype  # an explicit dtype still wins


def test_set_default_dtype_refuses_non_floats():
    with pytest.raises(TypeError, match="only floating-point types"):
        tg.set_default_dtype(tg.int64)
    with pytest.raises(TypeError, match="only floating-point types"):
        tg.set_default_dtype(tg.bool)
    assert tg.get_default_dtype() == tg.float32
