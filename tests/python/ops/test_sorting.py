"""Sorting, selection and scans (sort, argsort, topk, kthvalue, median, mode, cumsum, cumprod,
cummax, cummin, flip, roll): values against NumPy, gradients and second derivatives against
float64 central differences, tie and NaN conventions and errors as PyTorch has them."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(15)


def leaf(a):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def distinct(shape):
    """Values far enough apart that a small perturbation keeps their order (gradcheck)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.5 + RNG.uniform(-0.1, 0.1, size=n)).reshape(shape)


# ---- sort, argsort -------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy_stable(dim, descending):
    a = RNG.integers(0, 4, size=(5, 6)).astype(np.float64)  # many ties: stability shows
    values, indices = tg.tensor(a).sort(dim, descending, stable=True)
    if descending:
        # Stable descending: equal values keep their order, as np.argsort of the negation does.
        want = np.argsort(-a, axis=dim, kind="stable")
    else:
        want = np.argsort(a, axis=dim, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, want, axis=dim))
    np.testing.assert_array_equal(tg.argsort(tg.tensor(a), dim, descending).numpy(), want)


def test_sort_nan_is_largest():
    nan = float("nan")
    a = tg.tensor([1.0, 3.0, 3.0, 2.0, nan, 5.0, nan])
    # PyTorch: sort(descending=True, stable=True) -> indices [4, 6, 5, 1, 2, 3, 0]
    assert a.sort(descending=True, stable=True).indices.tolist() == [4, 6, 5, 1, 2, 3, 0]
    assert a.sort(stable=True).indices.tolist() == [0, 3, 1, 2, 5, 4, 6]


def test_sort_int_bool_and_0d():
    v, i = tg.tensor([3, 1, 2]).sort()
    assert v.dtype == tg.int64 and v.tolist() == [1, 2, 3] and i.tolist() == [1, 2, 0]
    assert tg.tensor([True, False, True]).sort().values.tolist() == [False, True, True]
    v, i = tg.tensor(5.0).sort()
    assert v.shape == () and v.item() == 5.0 and i.item() == 0


def test_sort_gradient():
    x = leaf(distinct((3, 4)))
    assert gradcheck(lambda t: t.sort(1, True).values, (x,))
    assert gradgradcheck(lambda t: t.sort(0).values * t.sort(0).values, (x,))


def test_sort_result_is_named_and_prints_like_torch():
    r = tg.sort(tg.tensor([2.0, 1.0]))
    assert repr(r) == "sort(values=tensor([1., 2.]), indices=tensor([1, 0]))"


# ---- topk, kthvalue ------------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_gradient(largest):
    a = distinct((4, 7))
    v, i = tg.topk(tg.tensor(a), 3, dim=1, largest=largest)
    order = np.argsort(-a if largest else a, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_allclose(v.numpy(), np.take_along_axis(a, order, axis=1))
    assert gradcheck(lambda t: t.topk(3, 1, largest).values, (leaf(a),))
    assert gradgradcheck(lambda t: t.topk(2, 0, largest).values ** 2, (leaf(a),))


def test_topk_ties_and_errors():
    # PyTorch: topk([1., 3., 3., 2.], 2) -> indices [1, 2]
    assert tg.tensor([1.0, 3.0, 3.0, 2.0]).topk(2).indices.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="k out of range"):
        tg.tensor([1.0, 2.0]).topk(3)
    with pytest.raises(TypeError):
        tg.tensor([1.0, 2.0]).topk(1.5)
    assert tg.tensor([1.0, 2.0]).topk(0).values.shape == (0,)


def test_kthvalue():
    a = distinct((3, 5))
    for k in range(1, 6):
        v, i = tg.kthvalue(tg.tensor(a), k, 1)
        np.testing.assert_allclose(v.numpy(), np.sort(a, axis=1)[:, k - 1])
        np.testing.assert_array_equal(i.numpy(), np.argsort(a, axis=1)[:, k - 1])
    v, i = tg.tensor(a).kthvalue(2, 0, keepdim=True)
    assert v.shape == (1, 5) and i.shape == (1, 5)
    assert tg.tensor([1.0, 3.0, 3.0, 2.0]).kthvalue(2).indices.item() == 3  # as PyTorch
    with pytest.raises(RuntimeError, match="k out of range"):
        tg.tensor([1.0, 2.0]).kthvalue(3)
    with pytest.raises(RuntimeError, match="k out of range"):
        tg.tensor([1.0, 2.0]).kthvalue(0)
    assert gradcheck(lambda t: t.kthvalue(2, 1).values, (leaf(a),))


# ---- median, mode --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 4, 5])
def test_median_is_the_lower_median(n):
    a = distinct((3, n))
    v, i = tg.tensor(a).median(1)
    low = np.sort(a, axis=1)[:, (n - 1) // 2]
    np.testing.assert_allclose(v.numpy(), low)
    np.testing.assert_allclose(np.take_along_axis(a, i.numpy()[:, None], 1)[:, 0], low)
    flat = np.sort(a.ravel())[(a.size - 1) // 2]
    assert tg.median(tg.tensor(a)).item() == flat
    if n % 2 == 1:
        np.testing.assert_allclose(v.numpy(), np.median(a, axis=1))
    assert gradcheck(lambda t: t.median(1).values, (leaf(a),))
    assert gradcheck(lambda t: t.median(), (leaf(a),))


def test_median_nan_and_keepdim():
    nan = float("nan")
    # PyTorch: median([1, nan, 3, nan], 0) -> (nan, 1)
    v, i = tg.tensor([1.0, nan, 3.0, nan]).median(0)
    assert np.isnan(v.item()) and i.item() == 1
    assert np.isnan(tg.tensor([1.0, nan]).median().item())
    v, i = tg.tensor(distinct((2, 3))).median(0, keepdim=True)
    assert v.shape == (1, 3) and i.shape == (1, 3)
    with pytest.raises(IndexError):
        tg.zeros(2, 0).median(1)


def test_mode():
    # PyTorch: mode([3, 1, 1, 3, 2]) -> (1, 2); mode([1, 1, 2, 2, 1, 2]) -> (1, 4)
    assert tuple(x.item() for x in tg.tensor([3.0, 1.0, 1.0, 3.0, 2.0]).mode()) == (1.0, 2)
    assert tuple(x.item() for x in tg.tensor([1, 1, 2, 2, 1, 2]).mode(0)) == (1, 4)
    a = RNG.integers(0, 3, size=(4, 9))
    v, i = tg.tensor(a).mode(1)
    for row, val, idx in zip(a, v.tolist(), i.tolist()):
        counts = np.bincount(row, minlength=3)
        assert val == int(np.argmax(counts))  # argmax picks the smallest of the most frequent
        assert idx == int(np.nonzero(row == val)[0][-1])


# ---- cumsum, cumprod -----------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_values(dim):
    a = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(tg.cumsum(tg.tensor(a), dim).numpy(), np.cumsum(a, axis=dim))
    np.testing.assert_allclose(tg.cumprod(tg.tensor(a), dim).numpy(), np.cumprod(a, axis=dim))
    i = RNG.integers(-3, 4, size=(3, 4))
    assert tg.tensor(i).cumsum(dim).dtype == tg.int64
    np.testing.assert_array_equal(tg.tensor(i).cumprod(dim).numpy(), np.cumprod(i, axis=dim))
    assert tg.tensor([True, True]).cumsum(0).tolist() == [1, 2]
    assert tg.tensor([1, 2]).cumsum(0, dtype=tg.float64).dtype == tg.float64
    assert tg.tensor(3.0).cumsum(0).shape == ()


def test_cumsum_gradient():
    x = leaf(RNG.normal(size=(3, 4)))
    assert gradcheck(lambda t: t.cumsum(1), (x,))
    assert gradgradcheck(lambda t: t.cumsum(0) ** 2, (x,))


@pytest.mark.parametrize(
    "a",
    [
        [0.5, -1.5, 2.0, 0.7],
        [0.5, 0.0, 2.0, 0.7],  # one zero
        [0.0, 1.5, 0.0, 0.7],  # two zeros
        [1.3, 0.8, 2.0, 0.0],  # zero last
    ],
)
def test_cumprod_gradient_with_zeros(a):
    x = leaf(a)
    assert gradcheck(lambda t: t.cumprod(0), (x,))
    assert gradgradcheck(lambda t: t.cumprod(0), (x,))
    y = leaf(np.stack([a, a[::-1]], axis=1))
    assert gradcheck(lambda t: t.cumprod(0), (y,))


def test_cumprod_gradient_at_zero_is_the_closed_form():
    # d/dx1 of sum(cumprod([a, 0, b])) = a + a*b
    x = tg.tensor([2.0, 0.0, 3.0], requires_grad=True)
    x.cumprod(0).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0 + 2.0 * 3.0, 0.0]


# ---- cummax, cummin ------------------------------------------------------------------------------


def test_cummax_cummin_ties_nan_like_torch():
    nan = float("nan")
    x = tg.tensor([1.0, 3.0, 3.0, 2.0, nan, 5.0, nan])
    v, i = tg.cummax(x, 0)
    # PyTorch: indices [0, 1, 2, 2, 4, 4, 6]
    assert i.tolist() == [0, 1, 2, 2, 4, 4, 6]
    assert v.tolist()[:4] == [1.0, 3.0, 3.0, 3.0] and all(np.isnan(v.tolist()[4:]))
    assert tg.cummin(tg.tensor([3.0, 1.0, 1.0, 2.0]), 0).indices.tolist() == [0, 1, 2, 2]


def test_cummax_values_and_gradient():
    a = distinct((4, 5))
    np.testing.assert_allclose(tg.tensor(a).cummax(1).values.numpy(), np.maximum.accumulate(a, axis=1))
    np.testing.assert_allclose(tg.tensor(a).cummin(0).values.numpy(), np.minimum.accumulate(a, axis=0))
    assert gradcheck(lambda t: t.cummax(1).values, (leaf(a),))
    assert gradcheck(lambda t: t.cummin(0).values, (leaf(a),))


# ---- flip, roll ----------------------------------------------------------------------------------


def test_flip_roll_values():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = tg.tensor(a)
    np.testing.assert_array_equal(t.flip(0).numpy(), np.flip(a, 0))
    np.testing.assert_array_equal(t.flip(0, 2).numpy(), np.flip(a, (0, 2)))
    np.testing.assert_array_equal(tg.flip(t, [-1, 1]).numpy(), np.flip(a, (2, 1)))
    np.testing.assert_array_equal(t.roll(5).numpy(), np.roll(a, 5))
    np.testing.assert_array_equal(t.roll(-1, 1).numpy(), np.roll(a, -1, 1))
    np.testing.assert_array_equal(tg.roll(t, (1, -7), (0, 2)).numpy(), np.roll(a, (1, -7), (0, 2)))
    with pytest.raises(RuntimeError, match="multiple times"):
        t.flip(0, 0)
    with pytest.raises(RuntimeError):
        t.roll((1, 2), 0)
    with pytest.raises(IndexError):
        t.flip(3)


def test_flip_roll_gradient():
    x = leaf(RNG.normal(size=(3, 4)))
    assert gradcheck(lambda t: t.flip(0, 1) * t, (x,))
    assert gradcheck(lambda t: t.roll((1, 2), (0, 1)) * t, (x,))
    assert gradgradcheck(lambda t: t.roll(3) * t, (x,))


# ---- all, any, count_nonzero ---------------------------------------------------------------------


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_all_any_count_nonzero(dim):
    a = RNG.integers(0, 2, size=(3, 4)) * RNG.normal(size=(3, 4))
    a[0] = 1.0
    t = tg.tensor(a)
    axis = dim
    np.testing.assert_array_equal(tg.all(t, dim).numpy(), np.all(a, axis=axis))
    np.testing.assert_array_equal(t.any(dim).numpy(), np.any(a, axis=axis))
    assert t.all(dim).dtype == tg.bool
    np.testing.assert_array_equal(tg.count_nonzero(t, dim).numpy(), np.count_nonzero(a, axis=axis))
    if dim is not None:
        assert t.all(dim, keepdim=True).numpy().shape == np.all(a, axis=axis, keepdims=True).shape


def test_all_any_nan_and_empty():
    assert tg.tensor([1.0, float("nan")]).all().item() is True
    assert tg.zeros(0).all().item() is True and tg.zeros(0).any().item() is False


# ---- norm, std_mean, aminmax ---------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, "fro", 1, float("inf"), -float("inf"), 3.0, 0.5])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm_values_and_gradient(p, dim):
    a = distinct((3, 4)) - 2.9
    pn = 2 if p == "fro" else p
    axis = dim
    want = np.linalg.norm(a.ravel(), ord=pn) if dim in (None, (0, 1)) else np.linalg.norm(a, ord=pn, axis=dim)
    np.testing.assert_allclose(tg.norm(tg.tensor(a), p, dim).numpy(), want, rtol=1e-12)
    assert gradcheck(lambda t: t.norm(p, dim), (leaf(a),))
    if p in (2, "fro", 3.0):
        assert gradgradcheck(lambda t: t.norm(p, dim), (leaf(a),))
    del axis


def test_norm_two_gradient_at_zero_is_zero():
    # PyTorch: d/dx ||x|| at x = 0 is 0, not NaN.
    x = tg.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=tg.float64, requires_grad=True)
    x.norm(dim=1, keepdim=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]], rtol=1e-15)
    # Any p: zero at a zero slice too (PyTorch: [[0, 0], [0.4449, 0.7908]] for p = 3).
    x = leaf([[0.0, 0.0], [3.0, 4.0]])
    x.norm(3, dim=1).sum().backward()
    want = np.array([[0.0, 0.0], [9.0, 16.0]]) / np.cbrt(91.0) ** 2
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    with pytest.raises(RuntimeError):
        tg.tensor([1, 2]).norm()


def test_std_mean_and_aminmax():
    a = RNG.normal(size=(3, 5))
    s, m = tg.std_mean(tg.tensor(a), 1)
    np.testing.assert_allclose(s.numpy(), np.std(a, axis=1, ddof=1))
    np.testing.assert_allclose(m.numpy(), np.mean(a, axis=1))
    lo, hi = tg.aminmax(tg.tensor(a), dim=0, keepdim=True)
    np.testing.assert_array_equal(lo.numpy(), a.min(0, keepdims=True))
    np.testing.assert_array_equal(hi.numpy(), a.max(0, keepdims=True))
    assert tg.tensor(a).aminmax().max.item() == a.max()


# ---- isclose, allclose, equal --------------------------------------------------------------------


def test_isclose_matches_numpy():
    inf, nan = float("inf"), float("nan")
    a = np.array([1.0, 1.0 + 1e-6, 1.0 + 1e-4, inf, inf, -inf, nan, nan, 0.0, 1e-9])
    b = np.array([1.0, 1.0, 1.0, inf, -inf, 1.0, nan, 1.0, 1e-8, 0.0])
    for equal_nan in (False, True):
        got = tg.isclose(tg.tensor(a), tg.tensor(b), equal_nan=equal_nan).numpy()
        np.testing.assert_array_equal(got, np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=equal_nan))
    assert tg.isclose(tg.tensor([1, 2]), tg.tensor([1, 3])).tolist() == [True, False]
    with pytest.raises(RuntimeError):
        tg.isclose(tg.tensor([1, 2]), tg.tensor([1.0, 3.0]))
    with pytest.raises(RuntimeError):
        tg.isclose(tg.tensor([1.0]), tg.tensor([1.0]), rtol=-1.0)


def test_allclose_equal():
    assert tg.allclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-7]))
    assert not tg.allclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.1]))
    assert tg.tensor([1.0, 2.0]).allclose(tg.tensor([1.0, 2.1]), atol=0.2)
    assert tg.equal(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0]))
    assert not tg.equal(tg.tensor([1.0, 2.0]), tg.tensor([[1.0, 2.0]]))
    assert not tg.equal(tg.tensor([float("nan")]), tg.tensor([float("nan")]))
