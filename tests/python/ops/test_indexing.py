"""Writing at computed positions and reading by index: scatter, scatter_reduce, index_fill,
index_put (and ``t[int tensors] = v``), masked_scatter, fill_diagonal_, take, take_along_dim,
nonzero, searchsorted, bucketize, unique. Values against NumPy (or literals taken from PyTorch),
gradients against float64 central differences, in-place version and leaf rules."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(16)


def leaf(a):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def np_scatter(a, dim, index, src):
    out = a.copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] = src[pos]
    return out


# ---- scatter -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_src_and_value(dim):
    a = RNG.normal(size=(4, 5))
    # Distinct targets along dim (a permutation per lane) so the result does not depend on order.
    if dim == 0:
        index = np.stack([RNG.permutation(4)[:3] for _ in range(3)], axis=1)  # shape (3, 3)
    else:
        index = np.stack([RNG.permutation(5)[:3] for _ in range(3)], axis=0)
    src = RNG.normal(size=(4, 5))
    got = tg.tensor(a).scatter(dim, tg.tensor(index), tg.tensor(src))
    np.testing.assert_array_equal(got.numpy(), np_scatter(a, dim, index, src))
    got = tg.scatter(tg.tensor(a), dim, tg.tensor(index), 2.5)
    np.testing.assert_array_equal(got.numpy(), np_scatter(a, dim, index, np.full(index.shape, 2.5)))
    idx = tg.tensor(index)
    assert gradcheck(lambda x, s: x.scatter(dim, idx, s), (leaf(a), leaf(src)))
    assert gradgradcheck(lambda x, s: x.scatter(dim, idx, s) ** 2, (leaf(a), leaf(src)))


def test_scatter_errors():
    x = tg.zeros(3)
    with pytest.raises(IndexError):
        x.scatter(0, tg.tensor([3]), tg.ones(1))
    with pytest.raises(RuntimeError):
        x.scatter(0, tg.tensor([0.0]), tg.ones(1))
    with pytest.raises(RuntimeError):
        x.scatter(0, tg.tensor([0]), tg.ones(1, dtype=tg.float64))
    with pytest.raises(TypeError):
        x.scatter(0, tg.tensor([0]))


def test_scatter_inplace_version_and_leaf_rules():
    x = tg.zeros(3)
    v = x._version
    assert x.scatter_(0, tg.tensor([1]), tg.tensor([4.0])) is x
    assert x.tolist() == [0.0, 4.0, 0.0] and x._version > v
    x.scatter_add_(0, tg.tensor([1, 1]), tg.tensor([1.0, 2.0]))
    assert x.tolist() == [0.0, 7.0, 0.0]
    w = tg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.scatter_(0, tg.tensor([1]), tg.tensor([4.0]))
    # In place on a non-leaf: the gradient flows to the source and around the written element.
    a = leaf([1.0, 2.0, 3.0])
    s = leaf([10.0])
    y = a * 1.0
    y.scatter_(0, tg.tensor([1]), s)
    (y * tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 3.0] and s.grad.tolist() == [2.0]


# ---- scatter_reduce ------------------------------------------------------------------------------

# Literals from PyTorch 2.x: torch.tensor([1., 2, 3, 4]).scatter_reduce(0, [0, 0, 1, 1], [5., 1, 2, 9], r, include_self=s)
REDUCE = {
    ("sum", True): [7.0, 13.0, 3.0, 4.0],
    ("sum", False): [6.0, 11.0, 3.0, 4.0],
    ("prod", True): [5.0, 36.0, 3.0, 4.0],
    ("prod", False): [5.0, 18.0, 3.0, 4.0],
    ("mean", True): [7.0 / 3, 13.0 / 3, 3.0, 4.0],
    ("mean", False): [3.0, 5.5, 3.0, 4.0],
    ("amax", True): [5.0, 9.0, 3.0, 4.0],
    ("amax", False): [5.0, 9.0, 3.0, 4.0],
    ("amin", True): [1.0, 2.0, 3.0, 4.0],
    ("amin", False): [1.0, 2.0, 3.0, 4.0],
}


@pytest.mark.parametrize("key", sorted(REDUCE))
def test_scatter_reduce_values_and_gradient(key):
    reduce, include_self = key
    x, idx, src = tg.tensor([1.0, 2, 3, 4]), tg.tensor([0, 0, 1, 1]), tg.tensor([5.0, 1, 2, 9])
    got = x.scatter_reduce(0, idx, src, reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), REDUCE[key], rtol=1e-6)
    a, s = RNG.normal(size=6), RNG.normal(size=8)
    index = tg.tensor(RNG.integers(0, 4, size=8))
    assert gradcheck(lambda x, s: x.scatter_reduce(0, index, s, reduce, include_self=include_self), (leaf(a), leaf(s)))


def test_scatter_reduce_ties_share_and_prod_zero():
    # amax ties: PyTorch shares the gradient evenly among the equal values (self included).
    x = leaf([2.0, 0.0])
    s = leaf([2.0, 1.0])
    x.scatter_reduce(0, tg.tensor([0, 0]), s, "amax").sum().backward()
    assert x.grad.tolist() == [0.5, 1.0] and s.grad.tolist() == [0.5, 0.0]
    # Without include_self, an equal self value still counts among the ties (PyTorch: s.grad [0.5, 0]).
    x = leaf([2.0, 0.0])
    s = leaf([2.0, 1.0])
    x.scatter_reduce(0, tg.tensor([0, 0]), s, "amax", include_self=False).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0] and s.grad.tolist() == [0.5, 0.0]
    # prod with a zero: the gradient of the others' product, exact.
    x = leaf([3.0])
    s = leaf([0.0, 2.0])
    x.scatter_reduce(0, tg.tensor([0, 0]), s, "prod").sum().backward()
    assert x.grad.tolist() == [0.0] and s.grad.tolist() == [6.0, 0.0]
    with pytest.raises(RuntimeError, match="reduce argument"):
        tg.zeros(2).scatter_reduce(0, tg.tensor([0]), tg.ones(1), "max")


# ---- index_fill, index_put, t[int tensors] = v ---------------------------------------------------


def test_index_fill():
    a = RNG.normal(size=(3, 4))
    want = a.copy()
    want[:, [0, 2]] = -1.0
    got = tg.tensor(a).index_fill(1, tg.tensor([0, -2]), -1.0)
    np.testing.assert_array_equal(got.numpy(), want)
    t = tg.tensor(a)
    assert t.index_fill_(0, tg.tensor([1]), tg.tensor(7.0, dtype=tg.float64)) is t
    assert (t.numpy()[1] == 7.0).all()
    assert gradcheck(lambda x: x.index_fill(1, tg.tensor([0, 2]), 0.5), (leaf(a),))
    with pytest.raises(IndexError):
        tg.zeros(2).index_fill(0, tg.tensor([2]), 1.0)


def test_setitem_integer_tensors_matches_numpy():
    a = RNG.normal(size=(4, 5))
    rows, cols = np.array([0, 2, 3]), np.array([1, 4, 0])
    t = tg.tensor(a)
    t[tg.tensor(rows), tg.tensor(cols)] = tg.tensor([7.0, 8.0, 9.0], dtype=tg.float64)
    want = a.copy()
    want[rows, cols] = [7.0, 8.0, 9.0]
    np.testing.assert_array_equal(t.numpy(), want)
    t = tg.tensor(a)
    t[tg.tensor([1, 3])] = 0.0
    want = a.copy()
    want[[1, 3]] = 0.0
    np.testing.assert_array_equal(t.numpy(), want)
    t = tg.tensor(a)
    t[1:, tg.tensor([0, 2])] = tg.tensor([1.0, 2.0], dtype=tg.float64)
    want = a.copy()
    want[1:, [0, 2]] = [1.0, 2.0]
    np.testing.assert_array_equal(t.numpy(), want)
    # Repeated index: the last value wins (PyTorch on CPU: tensor([0., 2., 0., 3., 0.])).
    t = tg.zeros(5)
    t[tg.tensor([1, 1, 3])] = tg.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [0.0, 2.0, 0.0, 3.0, 0.0]
    with pytest.raises(IndexError):
        tg.zeros(3)[tg.tensor([5])] = 1.0
    with pytest.raises(RuntimeError, match="shape mismatch"):
        tg.zeros(3)[tg.tensor([0, 1])] = tg.ones(3)


def test_index_put_accumulate_and_gradient():
    t = tg.zeros(3)
    assert t.index_put_((tg.tensor([0, 0, 2]),), tg.tensor([1.0, 2.0, 5.0]), accumulate=True) is t
    assert t.tolist() == [3.0, 0.0, 5.0]
    a, v = RNG.normal(size=(3, 4)), RNG.normal(size=3)
    rows, cols = tg.tensor([0, 2, 2]), tg.tensor([1, 3, 3])
    for acc in (False, True):
        if acc:
            f = lambda x, v: x.index_put((rows, cols), v, accumulate=True)  # noqa: E731
        else:
            f = lambda x, v: x.index_put((rows[:2], cols[:2]), v[:2])  # noqa: E731
        assert gradcheck(f, (leaf(a), leaf(v)))
        assert gradgradcheck(lambda x, v, f=f: f(x, v) ** 2, (leaf(a), leaf(v)))
    # Through __setitem__ on a non-leaf: differentiable with respect to both.
    x, val = leaf(a), leaf(v[:2])
    y = x * 1.0
    y[rows[:2], cols[:2]] = val
    (y * 2.0).sum().backward()
    g = np.full((3, 4), 2.0)
    g[[0, 2], [1, 3]] = 0.0
    np.testing.assert_array_equal(x.grad.numpy(), g)
    assert val.grad.tolist() == [2.0, 2.0]


def test_masked_scatter_and_fill_diagonal():
    m = tg.tensor([[True, False], [False, True]])
    got = tg.zeros(2, 2).masked_scatter(m, tg.tensor([1.0, 2.0, 3.0]))
    assert got.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    t = tg.zeros(2, 2)
    assert t.masked_scatter_(tg.tensor([True, False]), tg.tensor([5.0, 6.0])) is t
    assert t.tolist() == [[5.0, 0.0], [6.0, 0.0]]
    e = tg.zeros(5, 3)
    e.fill_diagonal_(1.0, wrap=True)
    # PyTorch: rows 0-2 the identity, row 3 zeros, row 4 [1, 0, 0]
    want = np.zeros((5, 3))
    want[[0, 1, 2, 4], [0, 1, 2, 0]] = 1.0
    np.testing.assert_array_equal(e.numpy(), want)
    e = tg.zeros(5, 3).fill_diagonal_(2.0)
    np.testing.assert_array_equal(e.numpy(), np.pad(np.eye(3) * 2, ((0, 2), (0, 0))))
    c = tg.zeros(3, 3, 3).fill_diagonal_(1.0)
    assert c.sum().item() == 3.0 and c[2, 2, 2].item() == 1.0
    with pytest.raises(RuntimeError):
        tg.zeros(2, 3, 3).fill_diagonal_(1.0)


# ---- take, take_along_dim, nonzero ---------------------------------------------------------------


def test_take_and_take_along_dim():
    a = RNG.normal(size=(3, 4))
    idx = np.array([[0, -1], [5, 11]])
    np.testing.assert_array_equal(tg.take(tg.tensor(a), tg.tensor(idx)).numpy(), np.take(a, idx))
    with pytest.raises(IndexError):
        tg.tensor(a).take(tg.tensor([12]))
    order = np.argsort(a, axis=1)
    got = tg.take_along_dim(tg.tensor(a), tg.tensor(order), 1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, order, 1))
    # Broadcasting outside dim.
    got = tg.tensor(a).take_along_dim(tg.tensor([[0, 2]]), 1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, np.broadcast_to([[0, 2]], (3, 2)), 1))
    flat = tg.tensor(a).take_along_dim(tg.tensor([3, 0]))
    np.testing.assert_array_equal(flat.numpy(), a.ravel()[[3, 0]])
    assert gradcheck(lambda x: x.take(tg.tensor([[0, 0], [5, -1]])), (leaf(a),))
    assert gradcheck(lambda x: x.take_along_dim(tg.tensor(order[:, :2]), 1), (leaf(a),))


def test_nonzero():
    a = RNG.integers(0, 2, size=(3, 4)) * RNG.integers(1, 5, size=(3, 4))
    np.testing.assert_array_equal(tg.nonzero(tg.tensor(a)).numpy(), np.argwhere(a))
    for got, want in zip(tg.tensor(a).nonzero(as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    assert tg.zeros(2, 3).nonzero().shape == (0, 2)
    assert tg.tensor([0.0, float("nan")]).nonzero().tolist() == [[1]]


# ---- searchsorted, bucketize, unique -------------------------------------------------------------


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(side):
    seq = np.sort(RNG.integers(0, 10, size=12)).astype(np.float64)
    vals = RNG.integers(-1, 12, size=(3, 5)).astype(np.float64)
    got = tg.searchsorted(tg.tensor(seq), tg.tensor(vals), side=side)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))
    assert got.dtype == tg.int64
    got = tg.searchsorted(tg.tensor(seq), tg.tensor(vals), right=side == "right")
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))
    # Batched: one sorted row per row of values.
    seqs = np.sort(RNG.normal(size=(3, 6)), axis=1)
    vals = RNG.normal(size=(3, 4))
    got = tg.searchsorted(tg.tensor(seqs), tg.tensor(vals), side=side).numpy()
    for r in range(3):
        np.testing.assert_array_equal(got[r], np.searchsorted(seqs[r], vals[r], side=side))
    bnd = np.array([1.0, 3.0, 5.0, 7.0])
    x = np.array([[0.0, 3.0], [6.0, 9.0]])
    got = tg.bucketize(tg.tensor(x), tg.tensor(bnd), right=side == "right")
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(bnd, x, side=side))


def test_searchsorted_errors_and_scalars():
    assert tg.searchsorted(tg.tensor([1, 3, 5]), 3).item() == 1
    with pytest.raises(RuntimeError, match="opposites"):
        tg.searchsorted(tg.tensor([1, 3]), tg.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError):
        tg.searchsorted(tg.tensor([[1, 3], [2, 4]]), tg.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError):
        tg.bucketize(tg.tensor([1]), tg.tensor([[1, 2]]))


def test_unique_matches_numpy():
    a = RNG.integers(-3, 4, size=(4, 5))
    vals, inv, counts = tg.unique(tg.tensor(a), return_inverse=True, return_counts=True)
    w_vals, w_inv, w_counts = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(vals.numpy(), w_vals)
    np.testing.assert_array_equal(inv.numpy(), w_inv.reshape(a.shape))
    np.testing.assert_array_equal(counts.numpy(), w_counts)
    np.testing.assert_array_equal(tg.tensor(a.astype(float)).unique().numpy(), w_vals)
    # unique(dim=) is supported now (issue 15): the distinct rows, as NumPy's axis=
    np.testing.assert_array_equal(tg.tensor(a).unique(dim=0).numpy(), np.unique(a, axis=0))
