"""The operations tg.nn needs (softmax family, logsumexp, amax/amin/min/argmin, var/std, gather,
scatter_add, index_select, index_add, integer-tensor indexing, one_hot): values against NumPy,
gradients and second derivatives against float64 central differences (tg.autograd.gradcheck and
gradgradcheck), and errors (as PyTorch raises them)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def leaf(a):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def np_lse(a, axis, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


# ---- softmax family -------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax_values(dim):
    a = RNG.normal(size=(3, 4))
    x = tg.tensor(a)
    lse = np_lse(a, dim, keepdims=True)
    np.testing.assert_allclose(x.softmax(dim).detach().numpy(), np.exp(a - lse), rtol=1e-12)
    np.testing.assert_allclose(x.log_softmax(dim).detach().numpy(), a - lse, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tg.softmax(x, dim).detach().numpy(), np.exp(a - lse), rtol=1e-12)
    np.testing.assert_allclose(tg.log_softmax(x, dim=dim).detach().numpy(), a - lse, rtol=1e-12, atol=1e-12)


def test_softmax_stable_for_large_logits():
    x = tg.tensor([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4]], dtype=tg.float32)
    s = x.softmax(1).detach().numpy()
    ls = x.log_softmax(1).detach().numpy()
    assert np.isfinite(s).all() and np.isfinite(ls).all()
    np.testing.assert_allclose(s, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    np.testing.assert_allclose(ls[0], [0, -1e4, -2e4], rtol=1e-6)
    np.testing.assert_allclose(x.logsumexp(1).detach().numpy(), [1e4, 1e4 + np.log(3)], rtol=1e-6)


def test_logsumexp_infinities():
    x = tg.tensor([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, -np.inf]])
    np.testing.assert_array_equal(x.logsumexp(1).detach().numpy(), [-np.inf, np.inf, 0.0])


def test_softmax_dtype_argument_and_int_refused():
    x = tg.tensor([[1, 2, 3]])
    with pytest.raises(RuntimeError):
        x.softmax(1)
    r = x.softmax(1, dtype=tg.float64)
    assert r.dtype == tg.float64
    np.testing.assert_allclose(r.detach().numpy(), [np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum()])


@pytest.mark.parametrize("dims,keepdim", [(1, False), ((0, 2), True), ((-1,), False), ((), False)])
def test_logsumexp_values(dims, keepdim):
    a = RNG.normal(size=(2, 3, 4))
    axis = tuple(range(3)) if dims == () else dims
    np.testing.assert_allclose(tg.tensor(a).logsumexp(dims, keepdim).detach().numpy(), np_lse(a, axis, keepdim), rtol=1e-12)
    np.testing.assert_allclose(tg.logsumexp(tg.tensor(a), dims, keepdim=keepdim).detach().numpy(), np_lse(a, axis, keepdim))


def test_softmax_family_gradients_and_second_order():
    a = RNG.normal(size=(3, 4))
    for f in (lambda t: t.softmax(1), lambda t: t.log_softmax(0), lambda t: t.logsumexp(1), lambda t: t.logsumexp((0, 1))):
        assert gradcheck(f, (leaf(a),))
        assert gradgradcheck(f, (leaf(a),))


def test_softmax_gradient_closed_form():
    a = RNG.normal(size=(2, 5))
    g = RNG.normal(size=(2, 5))
    x = leaf(a)
    x.softmax(1).backward(tg.tensor(g))
    s = np.exp(a - np_lse(a, 1, True))
    np.testing.assert_allclose(x.grad.detach().numpy(), s * (g - (g * s).sum(1, keepdims=True)), rtol=1e-12)


# ---- amax, amin, min, argmin -----------------------------------------------------------------


@pytest.mark.parametrize("dims,keepdim", [(None, False), (0, False), ((0, 2), True), (-1, True)])
def test_amax_amin_values(dims, keepdim):
    a = RNG.normal(size=(2, 3, 4))
    axis = None if dims is None else dims
    x = tg.tensor(a)
    np.testing.assert_array_equal(x.amax(dims, keepdim).detach().numpy(), np.amax(a, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(x.amin(dims, keepdim).detach().numpy(), np.amin(a, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(tg.amax(x, dims, keepdim).detach().numpy(), np.amax(a, axis=axis, keepdims=keepdim))


def test_amax_ties_share_gradient_and_nan_propagates():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    y = leaf([[1.0, -2.0, -2.0]])
    y.amin().backward()
    np.testing.assert_array_equal(y.grad.detach().numpy(), [[0, 0.5, 0.5]])
    assert np.isnan(tg.tensor([1.0, np.nan]).amin().item())


def test_amax_gradient_fd():
    a = RNG.permutation(24).reshape(2, 3, 4).astype(np.float64)
    assert gradcheck(lambda t: t.amax((0, 2)), (leaf(a),))
    assert gradcheck(lambda t: t.amin(1, True), (leaf(a),))


def test_min_and_argmin():
    a = np.array([[3.0, 1.0, 1.0], [0.0, 5.0, -2.0]])
    x = leaf(a)
    assert x.min().item() == -2.0
    v, i = x.min(1)
    np.testing.assert_array_equal(v.detach().numpy(), [1.0, -2.0])
    np.testing.assert_array_equal(i.detach().numpy(), [1, 2])  # first occurrence
    v2, i2 = tg.min(x, dim=0, keepdim=True)
    assert v2.shape == (1, 3) and i2.detach().numpy().tolist() == [[1, 0, 1]]
    assert x.argmin().item() == 5 and tg.argmin(x, 1).detach().numpy().tolist() == [1, 2]
    assert x.argmin(1, keepdim=True).shape == (2, 1)
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [[0, 1, 0], [0, 0, 1]])
    assert repr(x.min(1)).startswith("min(values=")
    with pytest.raises(IndexError):
        tg.zeros(2, 0).min(1)
    with pytest.raises(RuntimeError):
        tg.zeros(0).min()
    with pytest.raises(RuntimeError):
        tg.tensor([True]).argmin()


def test_min_dim_gradient_fd():
    a = RNG.permutation(12).reshape(3, 4).astype(np.float64)
    assert gradcheck(lambda t: t.min(1)[0], (leaf(a),))
    assert gradcheck(lambda t: t.min(), (leaf(a),))


# ---- var, std, var_mean ----------------------------------------------------------------------


@pytest.mark.parametrize("dims,keepdim,correction", [(None, False, 1), (1, False, 0), ((0, 2), True, 1), (-1, False, 2)])
def test_var_std_values(dims, keepdim, correction):
    a = RNG.normal(size=(3, 4, 5))
    x = tg.tensor(a)
    want = np.var(a, axis=dims, ddof=correction, keepdims=keepdim)
    np.testing.assert_allclose(x.var(dims, keepdim=keepdim, correction=correction).detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(x.std(dims, keepdim=keepdim, correction=correction).detach().numpy(), np.sqrt(want), rtol=1e-12)
    v, m = tg.var_mean(x, dims, keepdim=keepdim, correction=correction)
    np.testing.assert_allclose(v.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(m.detach().numpy(), np.mean(a, axis=dims, keepdims=keepdim), rtol=1e-12)


def test_var_unbiased_spellings():
    a = RNG.normal(size=(4, 3))
    x = tg.tensor(a)
    np.testing.assert_allclose(x.var(False).detach().numpy(), np.var(a), rtol=1e-12)
    np.testing.assert_allclose(x.var(0, False).detach().numpy(), np.var(a, axis=0), rtol=1e-12)
    np.testing.assert_allclose(x.std(0, unbiased=True).detach().numpy(), np.std(a, axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(tg.std(x).detach().numpy(), np.std(a, ddof=1), rtol=1e-12)
    assert np.isnan(tg.tensor([1.0]).var().item())  # n - correction == 0: 0/0, as in PyTorch
    with pytest.raises(RuntimeError):
        tg.tensor([1, 2]).var()


def test_var_std_gradients_and_second_order():
    a = RNG.normal(size=(3, 4))
    assert gradcheck(lambda t: t.var(1), (leaf(a),))
    assert gradcheck(lambda t: t.std(0, correction=0), (leaf(a),))
    assert gradgradcheck(lambda t: t.var(1), (leaf(a),))
    assert gradgradcheck(lambda t: t.std(), (leaf(a),))


# ---- gather, scatter_add, index_select, index_add, one_hot --------------------------------------


def test_gather_values_grad_errors():
    a = RNG.normal(size=(3, 4))
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    x = leaf(a)
    np.testing.assert_array_equal(x.gather(1, tg.tensor(idx)).detach().numpy(), np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(tg.gather(x, -1, tg.tensor(idx)).detach().numpy(), np.take_along_axis(a, idx, 1))
    assert gradcheck(lambda t: t.gather(1, tg.tensor(idx)), (leaf(a),))
    assert gradgradcheck(lambda t: t.gather(1, tg.tensor(idx)) ** 2, (leaf(a),))
    with pytest.raises(IndexError):
        x.gather(1, tg.tensor([[4]]))
    with pytest.raises(RuntimeError):
        x.gather(1, tg.tensor([[0.0]]))


def test_scatter_add_values_grad_errors():
    a = RNG.normal(size=(3, 4))
    src = RNG.normal(size=(2, 4))
    idx = np.array([[0, 2, 2, 1], [2, 2, 0, 0]])
    want = a.copy()
    for i in range(2):
        for j in range(4):
            want[idx[i, j], j] += src[i, j]
    r = tg.tensor(a).scatter_add(0, tg.tensor(idx), tg.tensor(src))
    np.testing.assert_allclose(r.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(tg.scatter_add(tg.tensor(a), 0, tg.tensor(idx), tg.tensor(src)).detach().numpy(), want)
    assert gradcheck(lambda x, s: x.scatter_add(0, tg.tensor(idx), s), (leaf(a), leaf(src)))
    # a smaller index covers only part of src
    r = tg.zeros(3, dtype=tg.float64).scatter_add(0, tg.tensor([1]), tg.tensor([5.0, 7.0], dtype=tg.float64))
    assert r.detach().numpy().tolist() == [0.0, 5.0, 0.0]
    # int64 too (as in PyTorch), exactly
    r = tg.zeros(3, dtype=tg.int64).scatter_add(0, tg.tensor([2, 2]), tg.tensor([2**60, 5]))
    assert r.tolist() == [0, 0, 2**60 + 5]
    r = tg.zeros(2, 2, dtype=tg.int64).index_add(1, tg.tensor([1, 1]), tg.ones(2, 2, dtype=tg.int64))
    assert r.tolist() == [[0, 2], [0, 2]]
    with pytest.raises(IndexError):
        tg.zeros(3).scatter_add(0, tg.tensor([3]), tg.ones(1))
    with pytest.raises(RuntimeError):
        tg.zeros(3).scatter_add(0, tg.tensor([0, 1]), tg.ones(1))
    with pytest.raises(RuntimeError):
        tg.zeros(3).scatter_add(0, tg.tensor([0]), tg.ones(1, dtype=tg.float64))


def test_index_select_and_index_add():
    a = RNG.normal(size=(3, 4))
    x = leaf(a)
    idx = tg.tensor([3, 0, 3])
    np.testing.assert_array_equal(x.index_select(1, idx).detach().numpy(), a[:, [3, 0, 3]])
    np.testing.assert_array_equal(tg.index_select(x, 0, tg.tensor([2])).detach().numpy(), a[[2]])
    assert gradcheck(lambda t: t.index_select(1, idx), (leaf(a),))
    assert gradgradcheck(lambda t: t.index_select(1, idx) ** 2, (leaf(a),))
    with pytest.raises(IndexError):
        x.index_select(0, tg.tensor([3]))
    with pytest.raises(IndexError):
        x.index_select(0, tg.tensor([-1]))
    src = RNG.normal(size=(3, 2))
    r = tg.tensor(a).index_add(1, tg.tensor([1, 1]), tg.tensor(src), alpha=2.0)
    want = a.copy()
    want[:, 1] += 2 * (src[:, 0] + src[:, 1])
    np.testing.assert_allclose(r.detach().numpy(), want, rtol=1e-12)
    assert gradcheck(lambda t, s: t.index_add(1, tg.tensor([1, 3]), s), (leaf(a), leaf(src)))
    with pytest.raises(RuntimeError):
        tg.tensor(a).index_add(1, tg.tensor([1]), tg.tensor(src))


def test_one_hot():
    F = tg.nn.functional
    r = F.one_hot(tg.tensor([[0, 2], [1, 0]]))
    assert r.dtype == tg.int64 and r.shape == (2, 2, 3)
    np.testing.assert_array_equal(r.detach().numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 0]]])
    assert F.one_hot(tg.tensor([1]), num_classes=4).detach().numpy().tolist() == [[0, 1, 0, 0]]
    for bad in (lambda: F.one_hot(tg.tensor([-1])), lambda: F.one_hot(tg.tensor([4]), 3),
                lambda: F.one_hot(tg.tensor([1.0])), lambda: F.one_hot(tg.zeros(0, dtype=tg.int64))):
        with pytest.raises(RuntimeError):
            bad()


# ---- integer-tensor indexing --------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        lambda: ([2, 0, 2],),
        lambda: (slice(None), [1, 3]),
        lambda: ([0, 2], [1, 3]),
        lambda: ([[0], [2]], [1, 3]),
        lambda: (slice(1, None), [0, -1]),
        lambda: (np.array([1, 0]), slice(None), np.array([3, 2])),
        lambda: (slice(None), np.array([[0, 1], [2, 2]]), 1),
        lambda: (Ellipsis, [0, 3]),
        lambda: (None, [1, 2]),
        lambda: (1, [0, 2], slice(1, 3)),
        # a bool mask beside other indices stands for the coordinates of its true elements
        lambda: (np.array([True, False, True]), [0, 2]),
        lambda: (np.array([True, False, True]), slice(None), np.array([4, 1])),
        lambda: (np.array([[True, False, False, True], [False] * 4, [True, True, False, False]]), [0, 1, 2, 3]),
        lambda: (1, np.array([True, False, True, True]), slice(1, 3)),
        lambda: (Ellipsis, np.array([True, False, True, False, True])),
    ],
)
def test_integer_indexing_matches_numpy(key):
    a = RNG.normal(size=(3, 4, 5))
    k = key()
    tk = tuple(tg.tensor(np.asarray(i)) if isinstance(i, np.ndarray) else i for i in k)
    npk = tuple(np.asarray(i) if isinstance(i, list) else i for i in k)
    want = a[npk]
    got = tg.tensor(a)[tk if len(tk) > 1 else tk[0]]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.detach().numpy(), want)
    # the gradient: ones scattered (accumulating) at the selected positions, as np.add.at
    x = leaf(a)
    x[tk if len(tk) > 1 else tk[0]].sum().backward()
    g = np.zeros_like(a)
    np.add.at(g, npk if len(npk) > 1 else npk[0], 1.0)
    np.testing.assert_array_equal(x.grad.detach().numpy(), g)


def test_integer_indexing_second_order_and_errors():
    a = RNG.normal(size=(3, 4))
    assert gradgradcheck(lambda t: t[[0, 2, 2], [1, 1, 3]] ** 3, (leaf(a),))
    x = tg.tensor(a)
    with pytest.raises(IndexError):
        x[[3]]
    with pytest.raises(IndexError):
        x[[0], [-5]]
    with pytest.raises(IndexError):
        x[tg.tensor([0.0])]
    with pytest.raises(RuntimeError):
        x[[0, 1], [0, 1, 2]]  # shapes do not broadcast
    y = tg.tensor(a)
    y[[0]] = 1.0  # integer-list assignment writes the rows (tests/python/ops/test_indexing.py has more)
    assert (y.numpy()[0] == 1.0).all() and (y.numpy()[1:] == a[1:]).all()
    with pytest.raises(IndexError, match="shape of the mask"):
        x[:, tg.tensor([True, False])]
    with pytest.raises(IndexError):
        x[True, [0]]  # a 0-d mask beside other indices
    assert x[[]].shape == (0, 4)


# ---- prod -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False)])
def test_prod_values_and_gradients(dim, keepdim):
    a = RNG.uniform(0.5, 1.5, size=(3, 4)) * RNG.choice([-1, 1], size=(3, 4))
    want = np.prod(a) if dim is None else np.prod(a, axis=dim, keepdims=keepdim)
    np.testing.assert_allclose(tg.tensor(a).prod(dim, keepdim).detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(tg.prod(tg.tensor(a), dim, keepdim).detach().numpy(), want, rtol=1e-12)
    f = (lambda t: t.prod()) if dim is None else (lambda t: t.prod(dim, keepdim))
    assert gradcheck(f, (leaf(a),))
    assert gradgradcheck(f, (leaf(a),))
    # with zeros: one zero in a slice, two zeros in another (exact products of the others)
    z = a.copy()
    z[0, 1] = 0.0
    z[2, 0] = z[2, 3] = 0.0
    assert gradcheck(f, (leaf(z),))
    assert gradgradcheck(f, (leaf(z),))


def test_prod_dtypes():
    assert tg.tensor([2, 3, 4]).prod().item() == 24 and tg.tensor([2, 3]).prod().dtype == tg.int64
    assert tg.tensor([True, True]).prod().dtype == tg.int64
    assert tg.tensor([2**62, 4]).prod().item() == 0  # wraps, as in PyTorch
    assert tg.tensor([1, 2]).prod(dtype=tg.float64).dtype == tg.float64
    assert tg.zeros(0).prod().item() == 1.0 and tg.tensor(3.0).prod(0).item() == 3.0
    with pytest.raises(IndexError):
        tg.zeros(2).prod(1)


def test_prod_gradient_of_long_slices_with_zeros():
    """Past the n x n budget the gradient still is the exact product of the others."""
    n = 3000
    a = RNG.uniform(0.999, 1.001, size=(2, n))
    a[0, 5] = 0.0  # one zero in row 0
    a[1, 7] = a[1, 9] = 0.0  # two in row 1
    x = leaf(a)
    x.prod(1).sum().backward()
    want = np.zeros_like(a)
    want[0, 5] = np.prod(np.delete(a[0], 5))
    np.testing.assert_allclose(x.grad.detach().numpy(), want, rtol=1e-10, atol=0)
    y = leaf(a[0])
    y.prod().backward()
    np.testing.assert_allclose(y.grad.detach().numpy(), want[0], rtol=1e-10, atol=0)
