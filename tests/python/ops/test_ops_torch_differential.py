"""Differential tests against PyTorch for the issue-15 operations that had none (ops15c): the same
inputs in both libraries, a few seeds and both float dtypes; the results must agree in values and
dtype, the gradients of every float64 leaf must agree, and a call that PyTorch refuses must be
refused with the same kind of exception. tests/python/ops/test_api_coverage.py checks that every operation
named in issue 15 appears in one of the differential test files.
"""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch", reason="the differential tests compare against PyTorch, which CI does not install")

SEEDS = (0, 1, 2)


def _F(L):
    return torch.nn.functional if L is torch else tg.nn.functional


def _inputs(seed, dtype):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((3, 5)).astype(dtype),
        "y": rng.standard_normal((3, 5)).astype(dtype),
        "z": rng.standard_normal((2, 3, 4)).astype(dtype),
        "v": rng.standard_normal(4).astype(dtype),
        "w": rng.standard_normal(4).astype(dtype),
        "sq": rng.standard_normal((4, 4)).astype(dtype),
        "pos": (rng.random((3, 5)) + 0.2).astype(dtype),
        "row": rng.standard_normal((1, 5)).astype(dtype),
        "mask": rng.random((3, 5)) > 0.5,
        "idx": rng.integers(0, 5, size=(3, 2)),
        "perm": np.stack([rng.permutation(5)[:2] for _ in range(3)]),
        "cols": np.array([0, 3]),
        "labels": rng.integers(0, 5, size=3),
        "sorted": np.sort(rng.standard_normal(6)).astype(dtype),
        "scalar": np.array(rng.standard_normal()).astype(dtype),
    }


def _make(L, arrays, grad):
    out = {}
    for k, a in arrays.items():
        t = L.tensor(a)
        if grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        out[k] = t
    return out


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [t for x in r for t in _flat(x)]
    if hasattr(r, "_fields") or type(r).__name__.endswith("_result"):
        return [t for x in tuple(r) for t in _flat(x)]
    return [r]


def _np(t):
    if isinstance(t, (bool, int, float)):
        return np.array(t)
    t = t.detach()
    if str(t.dtype).endswith("bfloat16") or str(t.dtype).endswith("float16"):
        t = t.float()
    return t.numpy()


# name -> fn(L, X). X holds the library's tensors (float ones require grad).
CASES = {
    "full_like": lambda L, X: L.full_like(X["x"], 2.5),
    "as_tensor": lambda L, X: (L.as_tensor([[1.5, 2.0], [3.0, -1.0]]), L.as_tensor([1, 2]),
                               L.as_tensor([[1.5, 2.0]], dtype=L.float64) * X["scalar"]),
    "clip": lambda L, X: X["x"].clip(-0.5, 0.5) + L.clip(X["y"], X["x"], X["x"] + 1),
    "isinf": lambda L, X: L.isinf(X["x"].log()),
    "logical_and": lambda L, X: L.logical_and(X["x"] > 0, X["y"] > 0),
    "logical_or": lambda L, X: L.logical_or(X["x"] > 0, X["y"]),
    "logical_not": lambda L, X: L.logical_not(X["x"]),
    "logical_xor": lambda L, X: L.logical_xor(X["x"] > 0, X["mask"]),
    "amin": lambda L, X: X["x"].amin(dim=1) + L.amin(X["z"], dim=(0, 2)).sum(),
    "aminmax": lambda L, X: L.aminmax(X["x"], dim=0),
    "count_nonzero": lambda L, X: L.count_nonzero(X["x"] > 0, dim=1),
    "argmin": lambda L, X: (X["x"].argmin(dim=1), L.argmin(X["z"])),
    "median": lambda L, X: (X["x"].median(dim=1).values, L.median(X["x"])),
    "argsort": lambda L, X: X["x"].argsort(dim=1, descending=True),
    "topk": lambda L, X: X["x"].topk(2, dim=1),
    "kthvalue": lambda L, X: L.kthvalue(X["x"], 2, dim=1),
    "allclose": lambda L, X: (L.allclose(X["x"], X["x"] + 1e-9), L.allclose(X["x"], X["y"])),
    "isclose": lambda L, X: L.isclose(X["x"], X["x"] * (1 + 1e-9)),
    "softmax": lambda L, X: L.softmax(X["x"], dim=1) * X["y"],
    "log_softmax": lambda L, X: L.log_softmax(X["x"] * 80, dim=-1) * X["y"],
    "normalize": lambda L, X: _F(L).normalize(X["x"], dim=1) * X["y"],
    "one_hot": lambda L, X: _F(L).one_hot(L.tensor(X["labels"].tolist() if L is tg else X["labels"]), 6),
    "cross_entropy": lambda L, X: _F(L).cross_entropy(X["x"] * 30, X["labels"]),
    "index_put_": lambda L, X: (X["x"] * 1).index_put_((X["labels"],), X["v"][:1] * 1, accumulate=True),
    "scatter": lambda L, X: X["x"].scatter(1, X["perm"], X["y"][:, :2]),
    "scatter_": lambda L, X: (X["x"] * 1).scatter_(1, X["perm"], X["y"][:, :2]),
    "scatter_reduce": lambda L, X: X["x"].scatter_reduce(1, X["idx"], X["y"][:, :2], "sum", include_self=False),
    "index_fill": lambda L, X: X["x"].index_fill(1, X["cols"], -1.0),
    "index_fill_": lambda L, X: (X["x"] * 2).index_fill_(1, X["cols"], 0.25),
    "masked_fill": lambda L, X: X["x"].masked_fill(X["mask"], 0.5),
    "masked_fill_": lambda L, X: (X["x"] * 1).masked_fill_(X["mask"], -2.0),
    "masked_select": lambda L, X: X["x"].masked_select(X["mask"]),
    "masked_scatter": lambda L, X: X["x"].masked_scatter(X["mask"], X["y"]),
    "take_along_dim": lambda L, X: L.take_along_dim(X["x"], X["idx"], dim=1),
    "nonzero": lambda L, X: L.nonzero(X["mask"]),
    "select": lambda L, X: X["z"].select(1, 2),
    "diagonal": lambda L, X: X["x"].diagonal(offset=1) + L.diagonal(X["z"], 0, 1, 2).sum(),
    "diag_embed": lambda L, X: L.diag_embed(X["v"], offset=-1),
    "trace": lambda L, X: X["sq"].trace(),
    "searchsorted": lambda L, X: L.searchsorted(X["sorted"], X["v"], right=True),
    "bucketize": lambda L, X: L.bucketize(X["v"], X["sorted"]),
    "chunk": lambda L, X: X["x"].chunk(2, dim=1),
    "unbind": lambda L, X: L.unbind(X["z"], 1),
    "tensor_split": lambda L, X: L.tensor_split(X["x"], [1, 4], dim=1),
    "repeat": lambda L, X: X["x"].repeat(2, 1, 2),
    "tile": lambda L, X: L.tile(X["v"], (2, 2)),
    "movedim": lambda L, X: X["z"].movedim(0, -1) * 1,
    "reshape_as": lambda L, X: X["x"].reshape_as(X["x"].t()),
    "unflatten": lambda L, X: X["z"].unflatten(2, (2, 2)),
    "broadcast_tensors": lambda L, X: L.broadcast_tensors(X["x"], X["row"]),
    "hstack": lambda L, X: L.hstack([X["x"], X["y"]]),
    "vstack": lambda L, X: L.vstack([X["v"], X["w"]]),
    "dstack": lambda L, X: L.dstack([X["x"], X["y"]]),
    "column_stack": lambda L, X: L.column_stack([X["v"], X["w"]]),
    "meshgrid": lambda L, X: L.meshgrid(X["v"], X["w"][:3], indexing="ij"),
    "atleast_1d": lambda L, X: L.atleast_1d(X["scalar"]),
    "atleast_2d": lambda L, X: L.atleast_2d(X["v"]),
    "atleast_3d": lambda L, X: L.atleast_3d(X["x"]),
    "exp_": lambda L, X: ((X["x"] * 1).exp_(), L.exp_(X["y"] * 1)),
    "sqrt_": lambda L, X: ((X["pos"] * 1).sqrt_(), L.sqrt_(X["pos"] + 1)),
    "relu_": lambda L, X: ((X["x"] * 1).relu_(), L.relu_(X["y"] * 1), _F(L).relu_(X["x"] * 2)),
    "sigmoid_": lambda L, X: ((X["x"] * 1).sigmoid_(), L.sigmoid_(X["y"] * 1)),
    "tanh_": lambda L, X: ((X["x"] * 1).tanh_(), L.tanh_(X["y"] * 1)),
    "neg_": lambda L, X: ((X["x"] * 1).neg_(), L.neg_(X["y"] * 1)),
    "pow_": lambda L, X: ((X["pos"] * 1).pow_(1.5), (X["pos"] * 1).pow_(X["pos"])),
    "fill_diagonal_": lambda L, X: (X["sq"] * 1).fill_diagonal_(0.5),
    "addcmul_": lambda L, X: (X["x"] * 1).addcmul_(X["y"], X["pos"], value=0.5),
    "addcdiv_": lambda L, X: (X["x"] * 1).addcdiv_(X["y"], X["pos"], value=-2),
    "lerp_": lambda L, X: (X["x"] * 1).lerp_(X["y"], 0.3),
    "t_": lambda L, X: (X["x"] * 1).t_() * 1,
    "transpose_": lambda L, X: (X["z"] * 1).transpose_(0, 2) * 1,
    "swapaxes_": lambda L, X: (X["z"] * 1).swapaxes_(1, 2) * 1,
    "squeeze_": lambda L, X: (X["row"] * 1).squeeze_(0) * 1,
    "unsqueeze_": lambda L, X: (X["x"] * 1).unsqueeze_(1) * 1,
    "detach_": lambda L, X: (X["x"] * 1).detach_() * X["y"],
    "new_ones": lambda L, X: X["x"].new_ones((2, 3)),
    "new_tensor": lambda L, X: X["x"].new_tensor([1, 2, 3]),
    "half": lambda L, X: X["x"].half(),
    "is_contiguous": lambda L, X: (X["x"].is_contiguous(), X["x"].t().is_contiguous(), X["z"][:, 1].is_contiguous()),
    "tensor_where": lambda L, X: X["x"].where(X["mask"], X["y"]),
    "isnan": lambda L, X: (L.isnan(X["x"].log()), X["x"].sqrt().isnan()),
    "broadcast_to": lambda L, X: L.broadcast_to(X["row"], (3, 5)) * X["x"],
    "swapaxes": lambda L, X: X["z"].swapaxes(0, 2) * 1 + L.swapaxes(X["z"], 1, 0).sum(),
    "diag": lambda L, X: (L.diag(X["v"], 1), X["sq"].diag(-1), L.diag(X["x"])),
    "tril": lambda L, X: (X["x"].tril(1), L.tril(X["z"], -1)),
    "triu": lambda L, X: (X["x"].triu(-1), L.triu(X["z"], 2)),
    "dot": lambda L, X: (L.dot(X["v"], X["w"]), X["v"].dot(X["w"] * 2)),
    "vdot": lambda L, X: L.vdot(X["v"], X["w"]),
    "inner": lambda L, X: (L.inner(X["x"], X["y"]), X["v"].inner(X["w"])),
    "outer": lambda L, X: (L.outer(X["v"], X["w"]), X["v"].outer(X["w"][:2])),
    "mv": lambda L, X: (L.mv(X["sq"], X["v"]), X["sq"].mv(X["w"])),
    "addmm": lambda L, X: L.addmm(X["sq"], X["sq"], X["sq"].t(), beta=0.5, alpha=2.0),
    "addmv": lambda L, X: L.addmv(X["v"], X["sq"], X["w"], beta=2.0, alpha=-1.0),
    "baddbmm": lambda L, X: L.baddbmm(X["z"][:, :, :3], X["z"], X["z"].transpose(1, 2)[:, :, :3]),
    "tensordot": lambda L, X: (L.tensordot(X["z"], X["sq"], dims=1), L.tensordot(X["z"], X["z"], dims=([1, 2], [1, 2]))),
    "cross": lambda L, X: L.cross(X["x"][:, :3], X["y"][:, :3], dim=1),
    "vector_norm": lambda L, X: (L.linalg.vector_norm(X["x"], 3, dim=1), L.linalg.vector_norm(X["z"], float("inf"))),
}

# Calls that PyTorch refuses: tapegrad must refuse them with an exception of the same kind.
ERRORS = {
    "topk k too large": lambda L, X: X["x"].topk(6, dim=1),
    "kthvalue k out of range": lambda L, X: X["x"].kthvalue(0, dim=1),
    "select out of range": lambda L, X: X["z"].select(1, 3),
    "one_hot negative": lambda L, X: _F(L).one_hot(L.tensor([-1, 0]), 3),
    "one_hot float": lambda L, X: _F(L).one_hot(L.tensor([1.0])),
    "t_ of 3-d": lambda L, X: (X["z"] * 1).t_(),
    "squeeze_ dim out of range": lambda L, X: (X["x"] * 1).squeeze_(2),
    "transpose_ of leaf": lambda L, X: X["x"].transpose_(0, 1),
    "movedim repeated": lambda L, X: X["z"].movedim((0, 0), (1, 2)),
    "take_along_dim ndim": lambda L, X: L.take_along_dim(X["x"], X["labels"], dim=1),
    "masked_fill float mask": lambda L, X: X["x"].masked_fill(X["x"], 0.0),
    "index_fill float index": lambda L, X: X["x"].index_fill(1, X["v"], 0.0),
    "cross_entropy bad target": lambda L, X: _F(L).cross_entropy(X["x"], L.tensor([0, 1, 7])),
    "meshgrid bad indexing": lambda L, X: L.meshgrid(X["v"], X["w"], indexing="xx"),
    "unflatten bad sizes": lambda L, X: X["z"].unflatten(2, (3, 2)),
    "trace of 3-d": lambda L, X: X["z"].trace(),
    "diag_embed same dims": lambda L, X: L.diag_embed(X["v"], dim1=0, dim2=0),
    "lerp_ of ints": lambda L, X: L.tensor([1, 2]).lerp_(L.tensor([3, 4]), 0.5),
    "median of bool": lambda L, X: L.median(X["mask"]),
    "topk of bool": lambda L, X: L.topk(X["mask"], 1),
    "arange bool": lambda L, X: L.arange(3, dtype=L.bool),
    "invert float": lambda L, X: ~X["x"],
    "dot of 2-d": lambda L, X: L.dot(X["x"], X["y"]),
    "mv shape mismatch": lambda L, X: L.mv(X["sq"], X["x"][0]),
    "cross without size 3": lambda L, X: L.cross(X["x"], X["y"], dim=1),
    "broadcast_to smaller": lambda L, X: L.broadcast_to(X["x"], (5,)),
    "tril of 1-d": lambda L, X: L.tril(X["v"]),
}


def _run(L, name, fn, seed, dtype, grad):
    X = _make(L, _inputs(seed, dtype), grad)
    return X, fn(L, X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, seed, dtype):
    fn = CASES[name]
    grad = dtype == np.float64 and name not in ("detach_",)
    Xt, rt = _run(torch, name, fn, seed, dtype, grad)
    Xg, rg = _run(tg, name, fn, seed, dtype, grad)
    outs_t, outs_g = _flat(rt), _flat(rg)
    assert len(outs_t) == len(outs_g), name
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=1e-6)
    if name == "half":
        tol = dict(rtol=1e-3, atol=1e-3)
    for a, b in zip(outs_t, outs_g):
        if isinstance(a, bool):
            assert a == b, name
            continue
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (name, a.dtype, b.dtype)
        assert tuple(a.shape) == tuple(b.shape), name
        assert a.requires_grad == b.requires_grad, name
        np.testing.assert_allclose(_np(b), _np(a), equal_nan=True, **tol, err_msg=name)
    if not grad:
        return
    rng = np.random.default_rng(100 + seed)
    loss_t, loss_g = 0, 0
    for a, b in zip(outs_t, outs_g):
        if isinstance(a, bool) or not a.requires_grad:
            continue
        w = rng.standard_normal(tuple(a.shape))
        loss_t = loss_t + (a * torch.tensor(w, dtype=a.dtype)).sum()
        loss_g = loss_g + (b * tg.tensor(w, dtype=b.dtype)).sum()
    if isinstance(loss_t, int):
        return
    loss_t.backward()
    loss_g.backward()
    for k in Xt:
        gt, gg = Xt[k].grad, Xg[k].grad
        assert (gt is None) == (gg is None), (name, k)
        if gt is not None:
            np.testing.assert_allclose(gg.numpy(), gt.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"{name}: d/d{k}")


def _kind(e):
    for k in (IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(e, k):
            return k.__name__
    return type(e).__name__


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refusals_match_torch(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as et:
        _run(torch, name, fn, 0, np.float64, True)
    with pytest.raises(Exception) as eg:
        _run(tg, name, fn, 0, np.float64, True)
    assert _kind(eg.value) == _kind(et.value), (name, repr(et.value), repr(eg.value))
    # NotImplementedError where PyTorch raises it (a dtype without a kernel).
    if isinstance(et.value, NotImplementedError):
        assert isinstance(eg.value, NotImplementedError), (name, repr(eg.value))


@pytest.mark.parametrize("op", ["t_", "transpose_", "squeeze_", "unsqueeze_", "swapaxes_", "swapdims_"])
def test_inplace_shape_ops_metadata_matches_torch(op):
    args = {"t_": (), "transpose_": (0, 1), "squeeze_": (), "unsqueeze_": (1,), "swapaxes_": (1, 0),
            "swapdims_": (0, 1)}[op]
    a = np.arange(6.0).reshape(2, 1, 3)[:, 0]
    for L in (torch, tg):
        x = L.tensor(a, requires_grad=True)
        y = x * 2
        r = getattr(y, op)(*args)
        assert r is y
        if L is torch:
            ref = (tuple(y.shape), y.stride(), y._version, y.is_leaf, y.requires_grad)
        else:
            assert (tuple(y.shape), y.stride(), y._version, y.is_leaf, y.requires_grad) == ref, op


@pytest.mark.parametrize("fill", ["uniform_(-1, 2)", "normal_(3, 0.5)", "bernoulli_(0.3)", "exponential_(2.0)"])
def test_random_fills_metadata_and_zero_gradients_match_torch(fill):
    got = []
    for L in (torch, tg):
        x = L.tensor(np.ones(1000), requires_grad=True)
        y = x * 1
        r = eval("y." + fill)
        assert r is y
        y.sum().backward()
        got.append((y.requires_grad, y.is_leaf, y._version, x.grad.abs().sum().item(), str(y.dtype).split(".")[-1]))
        if fill.startswith("uniform"):
            assert -1 <= y.min().item() and y.max().item() < 2
        if fill.startswith("bernoulli"):
            assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    assert got[0] == got[1]


def _draw(L, name, p):
    return {
        "normal": lambda: L.normal(p, p),
        "bernoulli": lambda: L.bernoulli(p),
        "poisson": lambda: L.poisson(p),
        "rand_like": lambda: L.rand_like(p),
        "randn_like": lambda: L.randn_like(p),
        "randint_like": lambda: L.randint_like(p, 3, 7),
        "new_empty": lambda: p.new_empty((4, 1)),
    }[name]()


@pytest.mark.parametrize("name", ["normal", "bernoulli", "poisson", "rand_like", "randn_like", "randint_like",
                                  "new_empty"])
def test_random_and_uninitialized_results_match_torch_in_metadata(name):
    got = []
    for L in (torch, tg):
        p = L.tensor(np.full((2, 3), 0.5), requires_grad=True)
        out = _draw(L, name, p)
        grad = None
        if out.requires_grad:
            out.sum().backward()
            grad = p.grad.abs().sum().item()
        got.append((tuple(out.shape), str(out.dtype).split(".")[-1], out.requires_grad, out.is_leaf, grad))
        if name == "randint_like":
            assert 3 <= out.min().item() and out.max().item() < 7
    assert got[0] == got[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_])
def test_as_tensor_of_an_array_shares_memory_like_torch(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t, r = tg.as_tensor(a), torch.as_tensor(a)
    assert str(t.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
    assert t.data_ptr() == r.data_ptr() == a.ctypes.data
    other = tg.float32 if dtype == np.float64 else tg.float64
    assert tg.as_tensor(a, dtype=other).data_ptr() != a.ctypes.data
    assert tg.as_tensor(a, dtype=t.dtype).data_ptr() == torch.as_tensor(a, dtype=r.dtype).data_ptr()
