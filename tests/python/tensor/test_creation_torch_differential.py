"""Differential checks against PyTorch for issue 15's creation functions, conveniences, padding,
repeat_interleave with counts, unique(dim=) and the one-node variance family: same inputs in both
libraries, same values, gradients and error types."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch", reason="the differential tests compare against PyTorch, which CI does not install")
TF = torch.nn.functional


def _both(a, requires_grad=True):
    return (tg.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("args", [(0, 1, 5), (-2.5, 3.0, 8), (1, -1, 2), (3, 3, 1), (0, 10, 11), (0.1, 0.7, 7)])
def test_linspace_logspace(args):
    np.testing.assert_allclose(tg.linspace(*args, dtype=tg.float64).numpy(),
                               torch.linspace(*args, dtype=torch.float64).numpy(), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(tg.linspace(*args).numpy(), torch.linspace(*args).numpy(), rtol=1e-6)
    np.testing.assert_allclose(tg.logspace(*args, base=2.0, dtype=tg.float64).numpy(),
                               torch.logspace(*args, base=2.0, dtype=torch.float64).numpy(), rtol=1e-13)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pads", [(1, 2), (0, 2, 1, 0), (2, 1, 1, 2, 1, 1)])
def test_pad_matches_torch(mode, pads):
    shape = (1, 2, 3, 4, 5)[: len(pads) // 2 + 2]
    a = np.random.default_rng(len(pads)).normal(size=shape)
    x, y = _both(a)
    w = np.random.default_rng(7).normal(size=TF.pad(y, pads, mode=mode).shape)
    out_tg = F.pad(x, pads, mode=mode)
    out_t = TF.pad(y, pads, mode=mode)
    np.testing.assert_allclose(out_tg.detach().numpy(), out_t.detach().numpy())
    (out_tg * tg.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("counts, dim", [([1, 2], 0), ([2], 1), ([0, 3, 1, 2, 0, 1], None), ([3, 0], 0)])
def test_repeat_interleave_counts(counts, dim):
    a = np.arange(6.0).reshape(2, 3)
    x, y = _both(a)
    o1 = x.repeat_interleave(tg.tensor(counts), dim)
    o2 = y.repeat_interleave(torch.tensor(counts), dim)
    np.testing.assert_array_equal(o1.detach().numpy(), o2.detach().numpy())
    w = np.random.default_rng(0).normal(size=o2.shape)
    (o1 * tg.tensor(w)).sum().backward()
    (o2 * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy())
    np.testing.assert_array_equal(tg.repeat_interleave(tg.tensor(counts)).numpy(),
                                  torch.repeat_interleave(torch.tensor(counts)).numpy())


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dim):
    a = np.array([[1, 2, 1], [1, 2, 1], [0, 5, 0], [1, 2, 1]])
    r1 = tg.unique(tg.tensor(a), dim=dim, return_inverse=True, return_counts=True)
    r2 = torch.unique(torch.tensor(a), dim=dim, return_inverse=True, return_counts=True)
    for p, q in zip(r1, r2):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_conveniences_match_torch():
    a = np.arange(24.0).reshape(2, 3, 4)
    x, y = tg.tensor(a), torch.tensor(a)
    for attr in ("mT", "mH"):
        np.testing.assert_array_equal(getattr(x, attr).numpy(), getattr(y, attr).numpy())
    np.testing.assert_array_equal(x[0].H.numpy(), y[0].H.numpy())
    for name in ("element_size",):
        assert getattr(x, name)() == getattr(y, name)()
    assert x.itemsize == y.itemsize and x.nbytes == y.nbytes
    assert x[1, 2].storage_offset() == y[1, 2].storage_offset()
    assert x[:, 1].storage_offset() == y[:, 1].storage_offset()
    assert (x[1].data_ptr() - x.data_ptr()) == (y[1].data_ptr() - y.data_ptr())
    assert x.squeeze((0, 1)).shape == tuple(y.squeeze((0, 1)).shape)
    assert tg.zeros(1, 3, 1).squeeze((0, 2)).shape == tuple(torch.zeros(1, 3, 1).squeeze((0, 2)).shape)
    i = np.array([1, 2])
    assert str(tg.tensor(i).type_as(x).dtype).split(".")[-1] == str(torch.tensor(i).type_as(y).dtype).split(".")[-1]
    assert x.new_full((2,), 3).tolist() == y.new_full((2,), 3).tolist()
    assert x.new_zeros(2, 3).shape == tuple(y.new_zeros(2, 3).shape)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dim, correction, keepdim", [(None, 1, False), (0, 0, True), ((0, 2), 2, False)])
def test_var_std_mean_one_node(fn, dim, correction, keepdim):
    a = np.random.default_rng(3).normal(size=(3, 4, 2))
    x, y = _both(a)
    o1 = getattr(tg, fn)(x, dim, keepdim=keepdim, correction=correction)
    o2 = getattr(torch, fn)(y, dim, keepdim=keepdim, correction=correction)
    assert o1[0].grad_fn is o1[1].grad_fn
    assert o2[0].grad_fn.name().rstrip("0") == o1[0].grad_fn.name()
    for p, q in zip(o1, o2):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12)
    (o1[0] * 1.3 - o1[1] * 0.7).sum().backward()
    (o2[0] * 1.3 - o2[1] * 0.7).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.randint(5, 5, (2,)),
        lambda L: L.randperm(-1),
        lambda L: L.linspace(0, 1, -2),
        lambda L: L.normal(0.0, -1.0, (2,)),
        lambda L: L.tensor([1.0, 2.0]).repeat_interleave(L.tensor([1, -1])),
        lambda L: L.tensor([1.0, 2.0]).repeat_interleave(L.tensor([1, 1]), output_size=3),
        lambda L: L.zeros(3).mT,
        lambda L: L.zeros(2, 2, 2).H,
    ],
)
def test_errors_have_torch_types(call):
    with pytest.raises(Exception) as e1:
        call(tg)
    with pytest.raises(Exception) as e2:
        call(torch)
    assert isinstance(e1.value, type(e2.value)) or isinstance(e2.value, type(e1.value)), (e1.value, e2.value)


def test_default_dtype_follows_torch():
    def dtypes(L):
        return [str(t.dtype).split(".")[-1] for t in (
            L.tensor([1.5]), L.tensor(2.5), L.zeros(1), L.rand(1), L.full((1,), 1.5), L.arange(0, 1, 0.5),
            L.arange(3), L.eye(2), L.tensor([1]) / 2, L.tensor([1]) + 1.5, L.tensor([1]).sqrt(),
            L.tensor([True]) / 1, L.linspace(0, 1, 3), L.logspace(0, 1, 3), L.tensor([1, 2]).logsumexp(0),
        )]

    for d in ("float64", "float32"):
        tg.set_default_dtype(getattr(tg, d))
        torch.set_default_dtype(getattr(torch, d))
        try:
            assert dtypes(tg) == dtypes(torch)
        finally:
            tg.set_default_dtype(tg.float32)
            torch.set_default_dtype(torch.float32)
