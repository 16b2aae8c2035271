"""The composed shape operations (issue 15's shape list): values against NumPy's functions of the
same meaning, gradients (and second derivatives) against float64 finite differences, views that
share memory, PyTorch's errors; and an optional comparison with PyTorch itself."""

import importlib

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 6))
B3 = RNG.standard_normal((2, 3, 4))
V = np.arange(10.0)


def tg64(a):
    return tg.tensor(np.asarray(a, dtype=np.float64))


def pieces(ts):
    return [t.numpy() for t in ts]


# (id, tapegrad function of a tensor, NumPy function of an array, input)
VALUE_CASES = [
    ("split-int", lambda t: pieces(t.split(4)), lambda a: np.split(a, [4, 8]), V),
    ("split-list-dim1", lambda t: pieces(t.split([1, 2, 3], dim=1)), lambda a: np.split(a, [1, 3], axis=1), A),
    ("chunk", lambda t: pieces(t.chunk(4)), lambda a: np.split(a, [3, 6, 9]), V),
    ("chunk-dim-1", lambda t: pieces(tg.chunk(t, 4, dim=-1)), lambda a: np.split(a, [2, 4], axis=-1), A),
    ("tensor_split-sections", lambda t: pieces(t.tensor_split(3)), lambda a: np.array_split(a, 3), V),
    ("tensor_split-points", lambda t: pieces(t.tensor_split([2, 20, 1, -3])), lambda a: np.split(a, [2, 20, 1, 7]), V),
    ("unbind-1", lambda t: pieces(t.unbind(1)), lambda a: [a[:, i] for i in range(a.shape[1])], A),
    ("select", lambda t: t.select(-1, 2).numpy(), lambda a: a[..., 2], B3),
    ("repeat", lambda t: t.repeat(2, 1, 3).numpy(), lambda a: np.tile(a, (2, 1, 3)), A),
    ("tile-short", lambda t: t.tile((2,)).numpy(), lambda a: np.tile(a, (1, 2)), A),
    ("repeat_interleave-flat", lambda t: t.repeat_interleave(2).numpy(), lambda a: np.repeat(a, 2), A),
    ("repeat_interleave-dim", lambda t: tg.repeat_interleave(t, 3, dim=1).numpy(), lambda a: np.repeat(a, 3, axis=1), B3),
    ("movedim", lambda t: t.movedim((0, 2), (2, 0)).numpy(), lambda a: np.moveaxis(a, (0, 2), (2, 0)), B3),
    ("moveaxis", lambda t: tg.moveaxis(t, 0, -1).numpy(), lambda a: np.moveaxis(a, 0, -1), B3),
    ("swapaxes", lambda t: t.swapaxes(0, 2).numpy(), lambda a: np.swapaxes(a, 0, 2), B3),
    ("unflatten", lambda t: t.unflatten(1, (2, -1)).numpy(), lambda a: a.reshape(4, 2, 3), A),
    ("broadcast_to", lambda t: t.broadcast_to((3, 10)).numpy(), lambda a: np.broadcast_to(a, (3, 10)), V),
    ("reshape_as", lambda t: t.reshape_as(tg.zeros(6, 4)).numpy(), lambda a: a.reshape(6, 4), A),
    ("tril", lambda t: t.tril().numpy(), np.tril, A),
    ("tril-k", lambda t: tg.tril(t, -1).numpy(), lambda a: np.tril(a, -1), B3),
    ("triu-k", lambda t: t.triu(2).numpy(), lambda a: np.triu(a, 2), A),
    ("diagonal", lambda t: t.diagonal().numpy(), np.diagonal, A),
    ("diagonal-offset", lambda t: t.diagonal(2).numpy(), lambda a: np.diagonal(a, 2), A),
    ("diagonal-neg-offset", lambda t: t.diagonal(-1).numpy(), lambda a: np.diagonal(a, -1), A),
    ("diagonal-dims", lambda t: t.diagonal(1, 2, 0).numpy(), lambda a: np.diagonal(a, 1, 2, 0), B3),
    ("diagonal-empty", lambda t: t.diagonal(9).numpy(), lambda a: np.diagonal(a, 9), A),
    ("trace", lambda t: t.trace().numpy(), np.trace, A),
    ("diag-of-matrix", lambda t: t.diag(-2).numpy(), lambda a: np.diag(a, -2), A),
    ("diag-of-vector", lambda t: tg.diag(t, 1).numpy(), lambda a: np.diag(a, 1), V[:4]),
    ("diag-of-vector-neg", lambda t: t.diag(-2).numpy(), lambda a: np.diag(a, -2), V[:3]),
    ("hstack-vectors", lambda t: tg.hstack([t, t[:2]]).numpy(), lambda a: np.hstack([a, a[:2]]), V),
    ("hstack-matrices", lambda t: tg.hstack((t, t)).numpy(), lambda a: np.hstack((a, a)), A),
    ("vstack", lambda t: tg.vstack([t, t]).numpy(), lambda a: np.vstack([a, a]), V),
    ("dstack", lambda t: tg.dstack([t, t]).numpy(), lambda a: np.dstack([a, a]), A),
    ("column_stack", lambda t: tg.column_stack([t[:4], tg.zeros(4, 2, dtype=tg.float64)]).numpy(),
     lambda a: np.column_stack([a[:4], np.zeros((4, 2))]), V),
    ("atleast_3d", lambda t: tg.atleast_3d(t).numpy(), np.atleast_3d, A),
    ("atleast_2d", lambda t: tg.atleast_2d(t).numpy(), np.atleast_2d, V),
    ("pad", lambda t: tg._tapegrad._pad_constant(t, [1, 2, 0, 1], 1.5).numpy(),
     lambda a: np.pad(a, ((0, 1), (1, 2)), constant_values=1.5), A),
    ("pad-negative", lambda t: tg._tapegrad._pad_constant(t, [-1, 2], 0).numpy(),
     lambda a: np.pad(a[:, 1:], ((0, 0), (0, 2))), A),
]


@pytest.mark.parametrize("case", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_match_numpy(case):
    _, f, g, a = case
    got, expected = f(tg64(a)), g(a)
    if isinstance(expected, list):
        assert len(got) == len(expected)
        for x, y in zip(got, expected):
            np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_array_equal(got, expected)


def test_meshgrid_and_broadcast_tensors_match_numpy():
    x, y, z = np.arange(2.0), np.arange(3.0), np.arange(4.0)
    for indexing in ("ij", "xy"):
        got = tg.meshgrid(tg64(x), tg64(y), tg64(z), indexing=indexing)
        for g, e in zip(got, np.meshgrid(x, y, z, indexing=indexing)):
            np.testing.assert_array_equal(g.numpy(), e)
    got = tg.meshgrid([tg64(x), tg64(y)], indexing="xy")
    for g, e in zip(got, np.meshgrid(x, y)):
        np.testing.assert_array_equal(g.numpy(), e)
    a, b = np.ones((2, 1)), np.arange(3.0)
    for g, e in zip(tg.broadcast_tensors(tg64(a), tg64(b)), np.broadcast_arrays(a, b)):
        np.testing.assert_array_equal(g.numpy(), e)


# (id, function of one float64 tensor returning a tensor or tuple, input shape)
GRAD_CASES = [
    ("split", lambda t: t.split([1, 2], dim=1), (2, 3)),
    ("chunk", lambda t: t.chunk(2), (5, 2)),
    ("tensor_split", lambda t: t.tensor_split([1, 3], dim=1), (2, 4)),
    ("unbind", lambda t: t.unbind(0), (3, 2)),
    ("select", lambda t: t.select(1, -1), (2, 3)),
    ("repeat", lambda t: t.repeat(2, 1, 2), (2, 3)),
    ("tile", lambda t: t.tile((2, 1)), (3,)),
    ("repeat_interleave", lambda t: t.repeat_interleave(2, dim=0), (2, 3)),
    ("movedim", lambda t: t.movedim(0, -1) * tg.arange(6.0, dtype=tg.float64).reshape(3, 1, 2), (2, 3, 1)),
    ("unflatten", lambda t: t.unflatten(0, (2, 3)), (6,)),
    ("tril", lambda t: t.tril(1) * t, (3, 4)),
    ("triu", lambda t: t.triu(-1) * t, (2, 3, 3)),
    ("diagonal", lambda t: t.diagonal() * t.diagonal(), (3, 4)),
    ("diagonal-offset-dims", lambda t: t.diagonal(-1, 2, 0) ** 2, (3, 2, 4)),
    ("trace", lambda t: t.trace() * t.sum(), (3, 3)),
    ("diag-vector", lambda t: t.diag(1) * t.diag(1), (3,)),
    ("diag-matrix", lambda t: t.diag(-1) ** 3, (3, 3)),
    ("pad", lambda t: tg._tapegrad._pad_constant(t * t, [2, -1, 1, 0], 0.5), (2, 3)),
    ("hstack", lambda t: tg.hstack([t, t * t]), (2, 2)),
    ("vstack", lambda t: tg.vstack([t, t.exp()]), (3,)),
    ("dstack", lambda t: tg.dstack([t, t]) * 2, (2, 2)),
    ("column_stack", lambda t: tg.column_stack([t, t * 3]), (3,)),
    ("meshgrid", lambda t: tg.meshgrid(t, t * t), (3,)),
    ("broadcast_tensors", lambda t: tg.broadcast_tensors(t, t.reshape(-1, 1)), (3,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_against_finite_differences(case):
    _, f, shape = case
    x = tg64(RNG.standard_normal(shape)).requires_grad_()
    assert tg.autograd.gradcheck(f, (x,))
    assert tg.autograd.gradgradcheck(f, (x,))


def test_pieces_and_diagonals_are_views_of_their_input():
    base = tg.zeros(3, 4)
    base.split(2, dim=1)[1].fill_(1.0)
    base.unbind(0)[0].add_(2.0)
    base.diagonal(1).fill_(5.0)
    np.testing.assert_array_equal(base.numpy(), [[2, 5, 3, 3], [0, 0, 5, 1], [0, 0, 1, 5]])


def test_in_place_write_through_a_diagonal_view_is_differentiated():
    x = tg64(RNG.standard_normal((3, 3))).requires_grad_()
    y = x.clone()
    y.diagonal().mul_(3.0)
    (y * y).sum().backward()
    expected = 2 * x.detach().numpy() * np.where(np.eye(3) == 1, 9.0, 1.0)
    np.testing.assert_allclose(x.grad.numpy(), expected)


@pytest.mark.parametrize(
    "f, exc, message",
    [
        (lambda: tg.arange(10).split([3, 3]), RuntimeError,
         r"split_with_sizes expects split_sizes to sum exactly to 10 \(input tensor's size at dimension 0\)"),
        (lambda: tg.arange(10).split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
        (lambda: tg.arange(10).chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
        (lambda: tg.tensor(1.0).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
        (lambda: tg.arange(10).select(0, 10), IndexError, r"select\(\): index 10 out of range"),
        (lambda: tg.zeros(2, 5).repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
        (lambda: tg.zeros(2, 5).movedim((0, 1), (1, 1)), RuntimeError, r"movedim: repeated dim in `destination`"),
        (lambda: tg.arange(10).unflatten(0, (3, -1)), RuntimeError,
         r"unflatten: Provided sizes \[3, -1\] don't multiply up to the size of dim 0 \(10\)"),
        (lambda: tg._tapegrad._pad_constant(tg.zeros(3), [1, 2, 3], 0), RuntimeError,
         "Padding length must be divisible by 2"),
        (lambda: tg.arange(10).tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
        (lambda: tg.zeros(2, 2).diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
        (lambda: tg.zeros(2, 2, 2).diag(), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
        (lambda: tg.meshgrid(tg.zeros(2, 2)), RuntimeError, "Expected 0D or 1D tensor"),
        (lambda: tg.meshgrid(tg.zeros(2), indexing="yx"), RuntimeError, "indexing must be one of"),
        (lambda: tg.broadcast_tensors(tg.zeros(2, 1), tg.zeros(3, 2)), RuntimeError,
         r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
    ],
)
def test_errors_are_pytorchs(f, exc, message):
    with pytest.raises(exc, match=message):
        f()


# --- against PyTorch (optional) ------------------------------------------------------------

TORCH_CASES = [
    lambda m, t: m.tensor_split(t, [-2, 1, 4], dim=1),
    lambda m, t: t.split(3, dim=-1),
    lambda m, t: t.chunk(5, dim=1),
    lambda m, t: m.tile(t, (2, 1, 1)),
    lambda m, t: t.repeat_interleave(2, dim=-1),
    lambda m, t: m.movedim(t, (1, 0), (0, 2)),
    lambda m, t: t.diagonal(-1, 0, 2) * 2,
    lambda m, t: (t.tril(-1) + t.triu(2)).sum(0),
    lambda m, t: m.dstack([t[0], t[1]]),
    lambda m, t: m.column_stack([t[0, 0], t[1, 1]]),
]


@pytest.mark.parametrize("case", range(len(TORCH_CASES)))
def test_values_and_gradients_match_pytorch(case):
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        pytest.skip("torch is not installed (optional differential test)")
    a = RNG.standard_normal((2, 4, 6))
    outs = {}
    for m, t in ((tg, tg64(a).requires_grad_()), (torch, torch.tensor(a, requires_grad=True))):
        res = TORCH_CASES[case](m, t)
        res = res if isinstance(res, tuple) else (res,)
        sum(((r * r).sum() for r in res), m.zeros((), dtype=m.float64)).backward()
        outs[m.__name__] = ([r.detach().numpy() for r in res], t.grad.numpy())
    (v1, g1), (v2, g2) = outs["tapegrad"], outs["torch"]
    assert len(v1) == len(v2)
    for x, y in zip(v1, v2):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
