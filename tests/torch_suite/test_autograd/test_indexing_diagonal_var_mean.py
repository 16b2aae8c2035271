"""Tests of test_autograd.py that were out of scope while tapegrad lacked the operations they use
(issue 15/16: integer-array indexing, diagonal, var_mean, unbind/split/chunk, min/median, atan2,
trace, scatter_reduce, detach_, nn.BatchNorm1d), carried over now that those exist."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck


def _np(t):
    return t.detach().numpy()


# covers: test_autograd.py::TestAutograd::test_indexing_duplicates
# (PyTorch reads a list of lists as a tuple of indices, a form it deprecates; tapegrad reads it as one
# integer-array index, as NumPy does (README), so the indices are spelled as tuples here)
def test_indexing_duplicates():
    idx = [1, 1, 3, 2, 1, 2]
    y = tg.arange(1.0, 17).view(4, 4).requires_grad_()
    y[tg.tensor(idx)].sum().backward()
    expected = np.zeros((4, 4))
    for i in idx:
        expected[i] += 1
    np.testing.assert_array_equal(_np(y.grad), expected)

    y = tg.arange(1.0, 17).view(4, 4).requires_grad_()
    y[(idx, [0])].sum().backward()
    expected = np.zeros((4, 4))
    for i in idx:
        expected[i, 0] += 1
    np.testing.assert_array_equal(_np(y.grad), expected)

    y = tg.arange(1.0, 17).view(4, 4).requires_grad_()
    y[([[1, 2], [0, 0]], [[0, 1], [1, 1]])].sum().backward()
    np.testing.assert_array_equal(
        _np(y.grad), [[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    )

    y = tg.arange(1.0, 65).view(4, 4, 4).requires_grad_()
    y[(slice(None), [1, 1, 3, 2, 1, 2], [0])].sum().backward()
    expected = np.zeros((4, 4, 4))
    for i in idx:
        expected[:, i, 0] += 1
    np.testing.assert_array_equal(_np(y.grad), expected)


# covers: test_autograd.py::TestAutograd::test_diagonal_expanded_v
def test_diagonal_expanded_v():
    value = float(np.random.default_rng(0).random())
    v_expanded = tg.tensor(value, dtype=tg.float64).expand(10)
    a = tg.rand(10, 10, dtype=tg.float64, requires_grad=True)
    (result,) = tg.autograd.grad(a.diagonal(), a, v_expanded)
    np.testing.assert_allclose(_np(result), np.eye(10) * value)


# covers: test_autograd.py::TestAutograd::test_hooks_cpp
def test_hooks_cpp():
    bn = tg.nn.BatchNorm1d(5, affine=False).double()
    bn.eval()
    counter = [0]

    def bw_hook(grad):
        counter[0] += 1
        return grad * 2

    x = tg.ones(5, 5, dtype=tg.float64, requires_grad=True)
    z = bn(x)
    z.register_hook(bw_hook)
    z.sum().backward()
    assert counter[0] == 1
    # eval mode: z = x / sqrt(running_var + eps) with running_var 1, so dz/dx = 1 / sqrt(1 + 1e-5)
    np.testing.assert_allclose(_np(x.grad), np.full((5, 5), 2.0 / math.sqrt(1 + 1e-5)), rtol=1e-12)


# covers: test_autograd.py::TestAutograd::test_retains_grad_inplace_multiple_outputs
# (the var_mean half; the custom Function half is in test_hooks.py)
def test_retains_grad_inplace_multiple_outputs_var_mean():
    b_np = np.random.default_rng(6).random((3, 3))
    b = tg.tensor(b_np, requires_grad=True)
    var, mean = tg.var_mean(b, dim=0)
    var.retain_grad()
    mean.retain_grad()
    var.mul_(2)
    (var + mean).sum().backward()
    gvar, gmean = var.grad, mean.grad

    a = tg.tensor(b_np, requires_grad=True)
    var, mean = tg.var_mean(a, dim=0)
    var.mul_(2)
    out = (var + mean).sum()
    gvar_expected, gmean_expected = tg.autograd.grad(out, inputs=(var, mean))
    np.testing.assert_array_equal(_np(gvar), _np(gvar_expected))
    np.testing.assert_array_equal(_np(gmean), _np(gmean_expected))
    np.testing.assert_array_equal(_np(gvar), np.ones(3))
    np.testing.assert_array_equal(_np(gmean), np.ones(3))
    # and the leaf: d(2 var + mean)/db = 2 * 2 (b - mean) / (n - 1) + 1 / n, per column
    np.testing.assert_allclose(_np(b.grad), 2 * (b_np - b_np.mean(0)) + 1 / 3)


# covers: test_autograd.py::TestAutograd::test_tensor_hooks_inplace_multiple_outputs
# (the var_mean half; the custom Function half is in test_hooks.py)
def test_tensor_hooks_inplace_multiple_outputs_var_mean():
    counts = [0, 0, 0]
    b_np = np.random.default_rng(7).random((3, 3))
    b = tg.tensor(b_np, requires_grad=True)
    out1, out2 = tg.var_mean(b, dim=0)
    ones = np.ones(3)

    def fn0(g):
        counts[0] += 1
        np.testing.assert_array_equal(_np(g), ones * 2)

    def fn1(g):
        counts[1] += 1
        np.testing.assert_array_equal(_np(g), ones * 3)

    def fn2(g):
        counts[2] += 1
        np.testing.assert_array_equal(_np(g), ones)

    handles = [out1.register_hook(fn0), out2.register_hook(fn1)]
    out1.mul_(2)
    handles.append(out1.register_hook(fn2))
    (out1 + out2 * 3).sum().backward()
    assert counts == [1, 1, 1]
    # d(2 var + 3 mean)/db: 2 * 2 (b - mean) / 2 + 3 / 3 per column
    np.testing.assert_allclose(_np(b.grad), 2 * (b_np - b_np.mean(0)) + 1.0)
    for h in handles:
        h.remove()


# covers: test_autograd.py::TestAutograd::test_saved_variable_saved_original_inplace_detach
def test_saved_variable_saved_original_inplace_detach():
    # a saved input detached in place: its history is gone, so backward refuses it
    a = tg.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached"):
        b.backward()
    # a saved output detached in place is fine (the node keeps its own handle on it)
    leaf = tg.tensor(1.0, requires_grad=True)
    a = leaf.clone()
    b = a.exp()
    a.detach_()
    b.backward()
    # the edge to leaf was taken when exp ran: the gradient still reaches it, as in PyTorch
    assert leaf.grad.item() == pytest.approx(math.e)


# covers: test_autograd.py::TestAutogradDeviceType::test_min_max_median_backprops_to_all_values
# (nanmedian is missing in tapegrad)
@pytest.mark.parametrize("f", [tg.min, tg.max, tg.median])
def test_min_max_median_backprops_to_all_values(f):
    x1 = tg.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
    x2 = tg.tensor([float("nan")] * 3, requires_grad=True)
    for x in (x1, x2):
        f(x).backward()
        assert x.grad.sum().item() == pytest.approx(1.0)
        assert (x.grad == 1 / 3).sum().item() == 3


# covers: test_autograd.py::TestAutogradDeviceType::test_scatter_index_reduce_amin_amax_backprops_to_all_values
# (scatter_reduce only: index_reduce is missing in tapegrad)
@pytest.mark.parametrize("reduction", ["amin", "amax"])
def test_scatter_reduce_amin_amax_backprops_to_all_values(reduction):
    inp = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    src = inp.clone().detach().requires_grad_(True)
    idx = tg.arange(2).unsqueeze(-1).expand(2, 3)
    # every position of inp ties with the src element scattered onto it: the gradient is shared
    out = tg.scatter_reduce(inp, 0, idx, src, reduction)
    out.sum().backward()
    np.testing.assert_allclose(_np(inp.grad), np.full((2, 3), 0.5))
    np.testing.assert_allclose(_np(src.grad), np.full((2, 3), 0.5))
    inp.grad = None
    assert gradcheck(lambda a, s: tg.scatter_reduce(a, 0, idx, s, reduction), (inp, src))


# covers: test_autograd.py::TestAutogradDeviceType::test_scatter_index_reduce_prod_gradgrad_error
# (scatter_reduce only; the first derivative with two zeros on one position: PyTorch then refuses the
# second derivative, tapegrad's treats the product of the others as a constant (README))
def test_scatter_reduce_prod_two_zeros_first_derivative():
    inp = tg.tensor([1.0], dtype=tg.float64, requires_grad=True)
    src = tg.tensor([0.0, 0.0], dtype=tg.float64, requires_grad=True)
    idx = tg.tensor([0, 0])
    assert gradcheck(lambda a, s: tg.scatter_reduce(a, 0, idx, s, "prod"), (inp, src))
    out = tg.scatter_reduce(inp, 0, idx, src, "prod")
    out.sum().backward()
    # d(a * s0 * s1) = (s0 s1, a s1, a s0) = 0 everywhere
    np.testing.assert_array_equal(_np(inp.grad), [0.0])
    np.testing.assert_array_equal(_np(src.grad), [0.0, 0.0])


# covers: test_autograd.py::TestAutogradMultipleDispatch::test_atan2_zero_gradient
def test_atan2_zero_gradient():
    y = tg.zeros(4, dtype=tg.float64, requires_grad=True)
    x = tg.zeros(4, dtype=tg.float64, requires_grad=True)
    tg.atan2(y, x).sum().backward()
    np.testing.assert_array_equal(_np(y.grad), np.zeros(4))
    np.testing.assert_array_equal(_np(x.grad), np.zeros(4))
    assert not np.isnan(_np(y.grad)).any() and not np.isnan(_np(x.grad)).any()


# covers: test_autograd.py::TestAutogradMultipleDispatch::test_trace_backward_nonsquare_171704
@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (1, 4), (4, 1)])
def test_trace_backward_nonsquare(shape):
    x = tg.randn(*shape, dtype=tg.float64, requires_grad=True)
    x.trace().backward()
    np.testing.assert_array_equal(_np(x.grad), np.eye(*shape))
    assert gradcheck(lambda t: t.trace(), (x,))


# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_multiple_outputs
# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_of_multiple_output_view
# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_multiple_output_view_of_view
# covers: test_autograd.py::TestAutogradDeviceType::test_inplace_on_view_multi_output_safe
# PyTorch refuses an in-place write to a piece of unbind/split/chunk (a view of a function that
# returns several views); tapegrad's pieces are ordinary views, so the write is allowed and
# differentiated (docs/differences.md). Checked here: the gradient is right.
@pytest.mark.parametrize(
    "pieces",
    [
        lambda t: t.unbind(),
        lambda t: [p.view_as(p) for p in t.unbind()],
        lambda t: t.view_as(t).unbind(),
        lambda t: t.split(1),
        lambda t: t.split([1, 1, 1]),
        lambda t: t.chunk(3),
    ],
)
def test_inplace_on_pieces_of_multi_view_functions(pieces):
    a_np = np.arange(9.0).reshape(3, 3)
    a = tg.tensor(a_np, requires_grad=True)
    b = a * 1.0
    p = pieces(b)
    p[0].mul_(2.0)
    p[2].add_(1.0)
    w = np.arange(1.0, 10.0).reshape(3, 3)
    out = b * tg.tensor(w)
    out.sum().backward()
    expected = w.copy()
    expected[0] *= 2  # row 0 doubled; row 2 shifted (no change to its gradient)
    np.testing.assert_allclose(_np(a.grad), expected)
    np.testing.assert_allclose(_np(b), a_np * [[2.0], [1.0], [1.0]] + [[0.0], [0.0], [1.0]])


# covers: test_autograd.py::TestAutograd::test_grad_fn_prehooks_multiple_outputs
# (the built-in half: var_mean's one node for two outputs; the custom-function half is in
# test_edges_prehooks.py)
def test_grad_fn_prehooks_multiple_outputs_var_mean():
    b_np = np.random.default_rng(8).random((3, 3))
    b = tg.tensor(b_np, requires_grad=True)
    var, mean = tg.var_mean(b, dim=0)
    seen = []

    def prehook(grad_output):
        gvar, gmean = grad_output
        seen.append((_np(gvar).copy(), _np(gmean).copy()))
        return (gvar * 2, gmean * 3)

    assert var.grad_fn is mean.grad_fn
    var.grad_fn.register_prehook(prehook)
    (var + mean).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0][0], np.ones(3))
    np.testing.assert_array_equal(seen[0][1], np.ones(3))
    # 2 * d var + 3 * d mean, per column: 2 * 2 (b - mean) / 2 + 3 / 3
    np.testing.assert_allclose(_np(b.grad), 2 * (b_np - b_np.mean(0)) + 1.0)
