"""``.grad`` assignment and layout, ``requires_grad`` rules, Python-scalar conversions, warnings from
a backward, and the gradients of ``max`` and ``where``, carried over from PyTorch's test_autograd.py
(part 3: mostly TestAutogradDeviceType on the CPU).

Oracle: PyTorch's documented behaviour (errors, types, strides), closed forms (a maximum shared by
k elements gives each of them 1/k), Python's own int/float/bool conversions, and float64 central
differences through ``tg.autograd.gradcheck`` / ``_gradgradcheck.gradgradcheck``.
"""

import gc
import math
import sys
import warnings
import weakref

import numpy as np
import pytest

import tapegrad as tg

from ._gradgradcheck import gradgradcheck


def _randn(*shape, seed=0, requires_grad=False, dtype=tg.float64):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tg.tensor(data, dtype=dtype, requires_grad=requires_grad)


def _mask_not_all_zeros(shape, seed=0):
    rng = np.random.default_rng(seed)
    while True:
        m = rng.integers(0, 2, size=shape).astype(bool)
        if m.any():
            return tg.tensor(m)


# covers: test_autograd.py::TestAutogradDeviceType::test_grad_assignment
def test_grad_assignment_wrong_type_raises_type_error():
    x = _randn(5, 5, dtype=tg.float32)
    with pytest.raises(TypeError):
        x.grad = 0


# covers: test_autograd.py::TestAutogradDeviceType::test_grad_assignment
def test_grad_assignment_wrong_type_message():
    x = _randn(5, 5, dtype=tg.float32)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = 0


# covers: test_autograd.py::TestAutogradDeviceType::test_grad_assignment
def test_grad_assignment_wrong_shape_raises():
    x = _randn(5, 5, dtype=tg.float32)
    with pytest.raises(RuntimeError):
        x.grad = _randn(2, 2, dtype=tg.float32)
    assert x.grad is None


# covers: test_autograd.py::TestAutogradDeviceType::test_grad_assignment
def test_grad_assignment_wrong_dtype_raises():
    x = _randn(5, 5, dtype=tg.float32)
    with pytest.raises(RuntimeError):
        x.grad = tg.ones(5, 5, dtype=tg.int64)


# covers: test_autograd.py::TestAutogradDeviceType::test_grad_assignment
def test_grad_assignment_self_raises():
    x = _randn(5, 5, dtype=tg.float32)
    with pytest.raises(RuntimeError):
        x.grad = x


# covers: test_autograd.py::TestAutogradDeviceType::test_set_requires_grad_only_for_floats
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64])
def test_set_requires_grad_only_for_floats(dtype):
    # tapegrad's integer dtype is int64 (int8/16/32 are not there yet).
    def f1():
        tg.ones(1, dtype=dtype).requires_grad_()

    def f2():
        a = tg.ones(1, dtype=dtype)
        a.requires_grad = True

    def f3():
        tg.ones(1, dtype=dtype, requires_grad=True)

    a = tg.ones(1, dtype=dtype)
    a.requires_grad = False  # always allowed
    a.requires_grad_(False)
    assert not a.requires_grad
    for f in (f1, f2, f3):
        if dtype.is_floating_point:
            f()
        else:
            with pytest.raises(RuntimeError, match="floating point"):
                f()


# covers: test_autograd.py::TestAutogradDeviceType::test_requires_grad_factory
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_requires_grad_factory(dtype):
    x = _randn(2, 3, dtype=dtype)
    for fn in (tg.ones_like, tg.randn_like):
        for requires_grad in (True, False):
            out = fn(x, dtype=dtype, device="cpu", requires_grad=requires_grad)
            assert out.requires_grad == requires_grad
            assert out.dtype is dtype
            assert out.shape == (2, 3)
            assert str(x.device) == "cpu"


# covers: test_autograd.py::TestAutogradDeviceType::test_strided_leaf_grad_layout
def test_dense_leaf_grad_has_the_leaf_layout():
    # channels_last is spelled as the permutation that produces it: (2, 4, 5, 3) permuted to
    # (2, 3, 4, 5) has strides (60, 1, 15, 3).
    a = tg.rand(2, 4, 5, 3).permute(0, 3, 1, 2).requires_grad_()
    b = tg.rand(2, 3, 4, 5).requires_grad_()
    a.sum().backward()  # broadcast gradient
    assert a.grad.stride() == a.stride()
    b.sum().backward()
    assert b.grad.stride() == b.stride()
    a.grad = None
    b.grad = None
    (a * b).sum().backward()  # non-broadcast gradient
    assert a.grad.stride() == a.stride()
    assert b.grad.stride() == b.stride()


# covers: test_autograd.py::TestAutogradDeviceType::test_strided_leaf_grad_layout
def test_non_dense_leaf_grad_is_row_major():
    # empty_strided((2, 2), (4, 2)) is spelled as every other column of a (2, 4) buffer.
    c = tg.zeros(2, 4)[:, ::2]
    assert c.stride() == (4, 2)
    c.copy_(tg.rand(2, 2))
    c.requires_grad_()
    d = tg.rand(2, 2)
    c.sum().backward()
    assert c.grad.stride() == (2, 1)
    c.grad = None
    (c * d).sum().backward()
    assert c.grad.stride() == (2, 1)
    np.testing.assert_array_equal(c.grad.numpy(), d.numpy())


# covers: test_autograd.py::TestAutogradDeviceType::test_pyscalar_conversions
def test_pyscalar_conversions_exact():
    l = tg.zeros(1, 1, 1, dtype=tg.int64)  # noqa: E741 - the original's name
    l[0] = -12345
    assert int(l) == -12345
    f = _randn(1, 1)
    f[0] = -12345.1
    assert float(f) == -12345.1
    f[0] = math.nan
    assert math.isnan(float(f))
    f[0] = math.inf
    assert float(f) == math.inf
    f[0] = -math.inf
    assert float(f) == -math.inf
    big = 1234567890123456789  # an int64 that float64 cannot hold exactly
    assert big != int(float(big))
    l[0] = big
    assert float(l) == float(big)

    def nonzero(t, value, expected):
        t[0] = value
        assert bool(t) is expected

    nonzero(l, 0, False)
    nonzero(l, -2, True)
    nonzero(f, 0.0, False)
    nonzero(f, sys.float_info.min, True)
    nonzero(f, math.nan, bool(math.nan))
    nonzero(f, math.inf, bool(math.inf))
    nonzero(f, -math.inf, bool(-math.inf))


# covers: test_autograd.py::TestAutogradDeviceType::test_pyscalar_conversions
def test_pyscalar_conversions_float_to_int():
    f = tg.zeros(1, 1, dtype=tg.float64)
    f[0] = math.nan
    with pytest.raises(ValueError):
        int(f[0])
    f[0] = math.inf
    with pytest.raises(OverflowError):
        int(f[0])
    f[0] = -math.inf
    with pytest.raises(OverflowError):
        int(f[0])
    f[0] = sys.float_info.max
    assert int(f) == sys.float_info.max


class _WarnInBackward(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        warnings.warn("Warn from backward", UserWarning, stacklevel=1)
        return g


# covers: test_autograd.py::TestAutogradDeviceType::test_warning_in_backward
def test_warning_in_backward():
    # The original uses an internal op that warns in its backward; a custom Function does the same.
    a = tg.zeros((), requires_grad=True)
    b = _WarnInBackward.apply(a)
    with pytest.warns(UserWarning, match="Warn from backward"):
        b.backward()
    assert a.grad.item() == 1.0


# covers: test_autograd.py::TestAutogradDeviceType::test_min_max_median_backprops_to_all_values
@pytest.mark.parametrize("f", [tg.max, lambda x: x.max()], ids=["tg.max", "Tensor.max"])
def test_max_backprops_to_all_values(f):
    # min, median and nanmedian are not in tapegrad yet (issue 15): only max is carried over.
    x = tg.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
    f(x).backward()
    assert x.grad.sum().item() == pytest.approx(1.0)
    assert int((x.grad.numpy() == np.float32(1 / 3)).sum()) == 3


# covers: test_autograd.py::TestAutogradDeviceType::test_min_max_median_backprops_to_all_values
def test_max_of_all_nan_backprops_evenly():
    x = tg.tensor([math.nan, math.nan, math.nan], requires_grad=True)
    tg.max(x).backward()
    assert x.grad.sum().item() == pytest.approx(1.0)
    assert int((x.grad.numpy() == np.float32(1 / 3)).sum()) == 3


# covers: test_autograd.py::TestAutogradDeviceType::test_where_functional
def test_where_functional():
    x = _randn(5, 5, seed=1, requires_grad=True)
    y = _randn(5, 5, seed=2, requires_grad=True)
    cond = _mask_not_all_zeros((5, 5), seed=3)

    def where(cond, x, y):
        return tg.where(cond, x, y)

    assert tg.autograd.gradcheck(where, [cond, x, y])
    assert gradgradcheck(where, [cond, x, y], [_randn(5, 5, seed=4)])

    x = _randn(5, 1, 5, seed=5, requires_grad=True)
    y = _randn(5, 5, 1, seed=6, requires_grad=True)
    assert tg.autograd.gradcheck(where, [cond, x, y])
    assert gradgradcheck(where, [cond, x, y], [_randn(5, 5, 5, seed=7)])


# covers: test_autograd.py::TestAutogradDeviceType::test_where_scalar
def test_where_scalar():
    x = _randn(5, 5, seed=8, requires_grad=True)
    cond = _mask_not_all_zeros((5, 5), seed=9)

    def where_scalar_first(cond, x):
        return tg.where(cond, 4.0, x)

    def where_scalar_second(cond, x):
        return tg.where(cond, x, 4.0)

    for fn in (where_scalar_first, where_scalar_second):
        assert tg.autograd.gradcheck(fn, (cond, x))
        assert gradgradcheck(fn, (cond, x))
    # closed form: the gradient reaches x exactly where x was chosen
    (g,) = tg.autograd.grad(where_scalar_first(cond, x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), (~cond.numpy()).astype(np.float64))


# covers: test_autograd.py::TestAutogradForwardMode::test_detach_view_tracking
def test_detach_does_not_keep_its_source_alive():
    # The only backward-mode behaviour of the forward-mode class: detach()'s result must not keep
    # the tensor it came from alive.
    foo = tg.rand(2)
    foo_weak = weakref.ref(foo)
    out = foo.detach()
    del foo
    gc.collect()
    assert foo_weak() is None
    assert out.shape == (2,)
