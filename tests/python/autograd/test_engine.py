"""The engine features of API.md section 2, by value: ``tg.autograd.grad``, ``tg.autograd.backward`` and
``t.backward(inputs=...)``, gradient hooks and ``retain_grad``, ``gradcheck``, ``detect_anomaly`` and
``to_dot``; and ``examples/graph_to_svg.py``.

Oracles are NumPy formulas and float64 central differences; where behaviour is a choice it is PyTorch's.
"""

import collections
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from seed_functions import MyReLU

import tapegrad as tg

ROOT = pathlib.Path(__file__).resolve().parents[3]


def f64(data, requires_grad=False):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


def npy(t):
    return t.detach().numpy()


# --- tg.autograd.grad ---------------------------------------------------------------------------------


def test_grad_single_output_single_input_against_numpy(rng):
    a = rng.standard_normal((3, 4))
    x = f64(a, requires_grad=True)
    (g,) = tg.autograd.grad((x.sin() * x).sum(), x)
    np.testing.assert_allclose(npy(g), np.cos(a) * a + np.sin(a), rtol=1e-12)
    assert g.dtype == tg.float64 and g.shape == (3, 4)


def test_grad_several_inputs_in_order(rng):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    x, w, bias = (f64(v, requires_grad=True) for v in (a, b, c))
    out = (x.mm(w) + bias).tanh().sum()
    gw, gx, gb = tg.autograd.grad(out, [w, x, bias])
    d = 1 - np.tanh(a @ b + c) ** 2  # upstream of the tanh
    np.testing.assert_allclose(npy(gx), d @ b.T, rtol=1e-12)
    np.testing.assert_allclose(npy(gw), a.T @ d, rtol=1e-12)
    np.testing.assert_allclose(npy(gb), d.sum(0), rtol=1e-12)


def test_grad_several_outputs_sum_their_gradients():
    x = f64([1.0, 2.0, -3.0], requires_grad=True)
    y1 = (x * x).sum()  # scalar: its grad_output may be None
    y2 = x.exp()  # vector: needs one
    v = np.array([0.5, -1.0, 2.0])
    (g,) = tg.autograd.grad([y1, y2], x, grad_outputs=[None, f64(v)])
    np.testing.assert_allclose(npy(g), 2 * np.array([1.0, 2.0, -3.0]) + v * np.exp([1.0, 2.0, -3.0]), rtol=1e-12)


def test_grad_outputs_weight_the_vector_jacobian_product(rng):
    a = rng.standard_normal((2, 3))
    v = rng.standard_normal((3, 3))
    x = f64(a, requires_grad=True)
    y = x.t().mm(x)  # [3, 3]
    (g,) = tg.autograd.grad(y, x, grad_outputs=f64(v))
    # d<v, A^T A>/dA = A (v + v^T)
    np.testing.assert_allclose(npy(g), a @ (v + v.T), rtol=1e-12)


def test_grad_outputs_none_for_a_scalar_is_ones_and_required_for_a_vector():
    x = f64([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad((x * 3).sum(), x, grad_outputs=None)
    assert npy(g).tolist() == [3.0, 3.0]
    y = x * 3
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*output 1"):
        tg.autograd.grad([(x * x).sum(), y], x, grad_outputs=[None, None])


def test_grad_outputs_of_the_wrong_shape_name_both_shapes():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a shape of \[3\].*output\[0\] has a shape of \[2\]"):
        tg.autograd.grad(y, x, grad_outputs=f64([1.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"\[2, 1\].*\[2\]"):
        tg.autograd.grad(y, x, grad_outputs=f64([[1.0], [1.0]]))
    # the graph was not consumed by the refused calls
    (g,) = tg.autograd.grad(y, x, grad_outputs=f64([1.0, 5.0]))
    assert npy(g).tolist() == [2.0, 10.0]


def test_grad_float32_grad_outputs_for_a_float64_output():
    x = f64([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(x * x, x, grad_outputs=tg.tensor([0.5, 3.0]))
    assert g.dtype == tg.float64
    assert npy(g).tolist() == [1.0, 12.0]


def test_grad_unused_input_is_an_error_unless_allowed():
    x = f64([1.0, 2.0], requires_grad=True)
    unused = f64([5.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"input 1\).*not have been used in the graph.*allow_unused=True"):
        tg.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = tg.autograd.grad(y, [x, unused], allow_unused=True)
    assert gu is None
    assert npy(gx).tolist() == [2.0, 4.0]


def test_grad_input_that_only_reaches_another_branch_is_unused():
    x = f64([1.0], requires_grad=True)
    w = f64([2.0], requires_grad=True)
    y = (x * 3).sum()
    _side = w * 4  # w has history, but not in y's graph
    (g,) = tg.autograd.grad(y, [w], allow_unused=True)
    assert g is None


def test_grad_frees_the_graph_by_default_and_retain_graph_keeps_it():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    expected = np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))
    first = tg.autograd.grad(y, x, retain_graph=True)[0]
    second = tg.autograd.grad(y, x, retain_graph=True)[0]
    third = tg.autograd.grad(y, x)[0]  # default: frees
    for g in (first, second, third):
        np.testing.assert_allclose(npy(g), expected, rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        tg.autograd.grad(y, x)


def test_grad_create_graph_gives_higher_derivatives():
    a = np.array([0.5, -1.5, 2.0])
    x = f64(a, requires_grad=True)
    y = (x**3).sum()
    (g1,) = tg.autograd.grad(y, x, create_graph=True)
    assert g1.requires_grad and g1.grad_fn is not None
    np.testing.assert_allclose(npy(g1), 3 * a**2, rtol=1e-12)
    (g2,) = tg.autograd.grad(g1.sum(), x, create_graph=True)
    np.testing.assert_allclose(npy(g2), 6 * a, rtol=1e-12)
    (g3,) = tg.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(npy(g3), [6.0, 6.0, 6.0], rtol=1e-12)
    # create_graph keeps the first graph unless told otherwise
    (again,) = tg.autograd.grad(y, x)
    np.testing.assert_allclose(npy(again), 3 * a**2, rtol=1e-12)
    assert x.grad is None


def test_grad_create_graph_mixed_second_derivative():
    # f = sum(sin(x) * y^2): d/dy (df/dx . v) = 2 y cos(x) v
    a, b, v = np.array([0.3, -1.2]), np.array([2.0, 0.7]), np.array([1.5, -0.5])
    x, y = f64(a, requires_grad=True), f64(b, requires_grad=True)
    (gx,) = tg.autograd.grad((x.sin() * y * y).sum(), x, create_graph=True)
    (gy,) = tg.autograd.grad(gx, y, grad_outputs=f64(v))
    np.testing.assert_allclose(npy(gy), 2 * b * np.cos(a) * v, rtol=1e-12)


def test_grad_with_respect_to_non_leaf_inputs():
    a = np.array([0.2, -0.7, 1.1])
    x = f64(a, requires_grad=True)
    h = x * x  # non-leaf
    s = h.sin()  # non-leaf
    out = (s * 2).sum()
    gh, gx, gs = tg.autograd.grad(out, [h, x, s])
    np.testing.assert_allclose(npy(gs), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(npy(gh), 2 * np.cos(a * a), rtol=1e-12)
    np.testing.assert_allclose(npy(gx), 2 * np.cos(a * a) * 2 * a, rtol=1e-12)


def test_grad_of_an_output_with_respect_to_itself_is_its_grad_output():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2
    (g,) = tg.autograd.grad(y, y, grad_outputs=f64([3.0, -4.0]))
    assert npy(g).tolist() == [3.0, -4.0]


def test_grad_does_not_touch_the_grad_of_leaves():
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0], requires_grad=True)
    x.grad = f64([10.0, 20.0])
    tg.autograd.grad((x * w).sum(), [x, w])
    assert npy(x.grad).tolist() == [10.0, 20.0]
    assert w.grad is None
    # only the requested inputs are computed; the other leaf is not filled either
    (gx,) = tg.autograd.grad((x * w).sum(), x)
    assert npy(gx).tolist() == [3.0, 4.0]
    assert w.grad is None


def test_grad_through_the_seed_custom_function():
    a = np.array([[-1.0, 0.5], [2.0, -0.25]])
    x = f64(a, requires_grad=True)
    (g,) = tg.autograd.grad((MyReLU.apply(x) * x).sum(), x)
    np.testing.assert_allclose(npy(g), np.where(a > 0, 2 * a, 0.0))


def test_grad_inputs_or_outputs_that_do_not_require_grad_are_errors():
    x = f64([1.0, 2.0], requires_grad=True)
    c = f64([3.0, 4.0])
    y = (x * c).sum()
    with pytest.raises(RuntimeError, match="input 1 of grad does not require grad"):
        tg.autograd.grad(y, [x, c])
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad((c * 2).sum(), x)
    # nothing was consumed by the refused call
    (g,) = tg.autograd.grad(y, x)
    assert npy(g).tolist() == [3.0, 4.0]


# --- tg.autograd.backward and t.backward ---------------------------------------------------------------


def test_autograd_backward_several_tensors_and_grad_tensors():
    a = np.array([1.0, -2.0, 0.5])
    x = f64(a, requires_grad=True)
    y1 = (x * x).sum()
    y2 = x.sin()
    v = np.array([2.0, 1.0, -3.0])
    tg.autograd.backward([y1, y2], [None, f64(v)])
    np.testing.assert_allclose(npy(x.grad), 2 * a + v * np.cos(a), rtol=1e-12)


def test_autograd_backward_single_tensor_and_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    tg.autograd.backward(x * x, f64([3.0, 0.5]))
    assert npy(x.grad).tolist() == [6.0, 2.0]


def test_autograd_backward_refuses_bad_gradients():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="1 gradients for 2 tensors"):
        tg.autograd.backward([y, x * 2], [None])
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*output 1.*\[2\]"):
        tg.autograd.backward([y, x * 2])
    with pytest.raises(RuntimeError, match=r"shape of \[2\].*shape of \[\]"):
        tg.autograd.backward(y, f64([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        tg.autograd.backward(f64([1.0]).sum())
    assert x.grad is None
    y.backward()  # still intact
    assert npy(x.grad).tolist() == [2.0, 4.0]


def test_backward_retain_graph_and_accumulation_over_two_calls():
    a = np.array([0.5, 1.5])
    x = f64(a, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    once = npy(x.grad).copy()
    np.testing.assert_allclose(once, np.exp(a) * (1 + a), rtol=1e-12)
    tg.autograd.backward(y, retain_graph=False)
    np.testing.assert_allclose(npy(x.grad), 2 * once, rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    np.testing.assert_allclose(npy(x.grad), 2 * once, rtol=1e-12)


def test_backward_accumulates_across_two_graphs_on_the_same_leaf():
    x = f64([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 5).sum().backward()
    assert npy(x.grad).tolist() == [7.0, 9.0]


@pytest.mark.parametrize("spelling", ["method", "function"])
def test_backward_create_graph_gives_a_differentiable_grad(spelling):
    a = np.array([0.5, -1.0, 2.0])
    x = f64(a, requires_grad=True)
    y = (x**3).sum()
    if spelling == "method":
        y.backward(create_graph=True)
    else:
        tg.autograd.backward(y, create_graph=True)
    assert x.grad.requires_grad
    np.testing.assert_allclose(npy(x.grad), 3 * a**2, rtol=1e-12)
    (g2,) = tg.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(npy(g2), 6 * a, rtol=1e-12)
    y.backward()  # create_graph kept the graph: accumulates 3a^2 again
    np.testing.assert_allclose(npy(x.grad), 6 * a**2, rtol=1e-12)


def test_backward_inputs_accumulates_only_into_those_inputs():
    a, b, c = np.array([1.0, -2.0]), np.array([3.0, 0.5]), np.array([0.25, 4.0])
    x, w, u = f64(a, requires_grad=True), f64(b, requires_grad=True), f64(c, requires_grad=True)
    loss = (x * w * u).sum()
    loss.backward(inputs=[w], retain_graph=True)
    assert x.grad is None and u.grad is None
    np.testing.assert_allclose(npy(w.grad), a * c)
    loss.backward(inputs=x)  # a single tensor works too
    np.testing.assert_allclose(npy(x.grad), b * c)
    np.testing.assert_allclose(npy(w.grad), a * c)  # not accumulated again
    assert u.grad is None


def test_backward_inputs_through_autograd_backward():
    x, w = f64([1.0, 2.0], requires_grad=True), f64([3.0, 4.0], requires_grad=True)
    tg.autograd.backward((x * w).sum(), inputs=[x])
    assert npy(x.grad).tolist() == [3.0, 4.0] and w.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * w).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tg.autograd.backward((x * w).sum(), inputs=[])
    assert npy(x.grad).tolist() == [3.0, 4.0] and w.grad is None


def test_backward_inputs_non_leaf_retains_its_gradient_as_in_pytorch():
    a = np.array([1.0, -2.0])
    x = f64(a, requires_grad=True)
    h = x * 3
    loss = (h * h).sum()
    loss.backward(inputs=[h], retain_graph=True)
    np.testing.assert_allclose(npy(h.grad), 2 * 3 * a)
    assert x.grad is None
    # PyTorch makes a non-leaf input retain its gradient: a later full backward adds to it
    assert h.retains_grad
    loss.backward()
    np.testing.assert_allclose(npy(h.grad), 2 * 2 * 3 * a)
    np.testing.assert_allclose(npy(x.grad), 2 * 3 * 3 * a)


def test_backward_inputs_non_leaf_that_already_retains_is_counted_once():
    a = np.array([0.5, 2.0])
    x = f64(a, requires_grad=True)
    h = x.exp()
    h.retain_grad()
    loss = (h * h).sum()
    loss.backward(inputs=[h, x])
    np.testing.assert_allclose(npy(h.grad), 2 * np.exp(a), rtol=1e-12)
    np.testing.assert_allclose(npy(x.grad), 2 * np.exp(2 * a), rtol=1e-12)


@pytest.mark.parametrize("root", ["leaf", "non-leaf", "function"])
def test_float32_gradient_into_a_float64_graph_gives_float64_grad(root):
    x = f64([1.5, -2.0], requires_grad=True)
    g32 = tg.tensor([0.1, 3.0])  # float32: 0.1 is not exact
    assert g32.dtype == tg.float32
    g_as_f64 = np.float32(0.1).astype(np.float64), 3.0
    if root == "leaf":
        x.backward(g32)
        expected = np.array(g_as_f64)
    elif root == "non-leaf":
        (x * 2).backward(g32)
        expected = 2 * np.array(g_as_f64)
    else:
        tg.autograd.backward([x * x], [g32])
        expected = 2 * np.array([1.5, -2.0]) * np.array(g_as_f64)
    assert x.grad.dtype == tg.float64
    np.testing.assert_allclose(npy(x.grad), expected, rtol=1e-15)
    # a second backward adds in float64
    (x * 1).backward(tg.tensor([1.0, 1.0]))
    assert x.grad.dtype == tg.float64
    np.testing.assert_allclose(npy(x.grad), expected + 1, rtol=1e-15)


def test_backward_of_a_non_scalar_needs_a_gradient():
    x = f64([[1.0, 2.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs.*\[1, 2\]"):
        tg.autograd.backward(x * 2)
    # a one-element non-scalar is fine
    (x[:, :1] * 7).backward()
    assert npy(x.grad).tolist() == [[7.0, 0.0]]


# --- register_hook and retain_grad -----------------------------------------------------------------


def test_hook_returning_none_observes_the_numpy_gradient_and_keeps_it():
    a = np.array([0.3, -0.8, 1.7])
    x = f64(a, requires_grad=True)
    h = x * x
    seen = []
    h.register_hook(lambda g: seen.append(npy(g).copy()))
    h.sin().sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], np.cos(a * a), rtol=1e-12)
    np.testing.assert_allclose(npy(x.grad), np.cos(a * a) * 2 * a, rtol=1e-12)


def test_hook_on_a_non_leaf_changes_what_flows_below_it():
    a = np.array([0.3, -0.8])
    x = f64(a, requires_grad=True)
    h = x * x
    h.register_hook(lambda g: g * 3 - 1)
    h.exp().sum().backward()
    np.testing.assert_allclose(npy(x.grad), (3 * np.exp(a * a) - 1) * 2 * a, rtol=1e-12)


@pytest.mark.parametrize("where", ["leaf", "non-leaf"])
def test_several_hooks_run_in_registration_order(where):
    x = f64([1.0, 2.0], requires_grad=True)
    t = x if where == "leaf" else x * 1
    order = []

    def double(g):
        order.append("double")
        return g * 2

    def add_one(g):
        order.append("add_one")
        return g + 1

    t.register_hook(double)
    t.register_hook(add_one)
    (t * f64([3.0, 5.0])).sum().backward()
    assert order == ["double", "add_one"]
    # (g * 2) + 1, not (g + 1) * 2
    assert npy(x.grad).tolist() == [7.0, 11.0]


def test_hook_on_a_leaf_sets_its_grad_and_sees_the_summed_gradient_once():
    x = f64([1.0, 2.0], requires_grad=True)
    calls = []

    def hook(g):
        calls.append(npy(g).tolist())
        return g * 10

    x.register_hook(hook)
    (x * 2 + x * x).sum().backward()
    assert calls == [[4.0, 6.0]]  # 2 + 2x, summed before the hook
    assert npy(x.grad).tolist() == [40.0, 60.0]


def test_removed_hooks_stop_running():
    x = f64([1.0, 2.0], requires_grad=True)
    h1 = x.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g + 100)
    h1.remove()
    h1.remove()  # idempotent
    (x * 3).sum().backward()
    assert npy(x.grad).tolist() == [103.0, 103.0]
    x.grad = None
    y = x * 1
    hy = y.register_hook(lambda g: g * 0)
    hy.remove()
    (y * 4).sum().backward()
    assert npy(x.grad).tolist() == [104.0, 104.0]  # leaf hook still there, y's gone


def test_hooks_run_during_autograd_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (g,) = tg.autograd.grad((x * x).sum(), x)
    assert npy(g).tolist() == [20.0, 40.0]
    assert x.grad is None


def test_hook_and_retain_grad_need_requires_grad():
    c = f64([1.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        c.register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        c.retain_grad()


def test_retain_grad_on_hidden_layers_matches_numpy(rng):
    xv, w1v, w2v = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
    x = f64(xv)
    w1, w2 = f64(w1v, requires_grad=True), f64(w2v, requires_grad=True)
    h = x.mm(w1)
    r = h.tanh()
    out = r.mm(w2)
    for t in (h, r, out):
        t.retain_grad()
    loss = (out * out).sum()
    loss.backward()
    d_out = 2 * (np.tanh(xv @ w1v) @ w2v)
    d_r = d_out @ w2v.T
    d_h = d_r * (1 - np.tanh(xv @ w1v) ** 2)
    np.testing.assert_allclose(npy(out.grad), d_out, rtol=1e-12)
    np.testing.assert_allclose(npy(r.grad), d_r, rtol=1e-12)
    np.testing.assert_allclose(npy(h.grad), d_h, rtol=1e-12)
    np.testing.assert_allclose(npy(w1.grad), xv.T @ d_h, rtol=1e-12)
    assert h.retains_grad and not h.grad.requires_grad


def test_retain_grad_accumulates_over_two_backward_calls():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    loss = (h * h).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(npy(h.grad), 2 * 2 * np.array([3.0, 6.0]))


def test_retain_grad_runs_after_hooks_registered_later():
    # PyTorch: the retained gradient is the one after every hook, whatever the registration order
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    h.register_hook(lambda g: g * 2)
    h.sum().backward()
    assert npy(h.grad).tolist() == [2.0, 2.0]
    assert npy(x.grad).tolist() == [6.0, 6.0]


def test_retain_grad_on_a_leaf_is_a_no_op():
    x = f64([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    x.retain_grad()
    assert x.is_leaf and not x.retains_grad
    (x * x).sum().backward()
    assert npy(x.grad).tolist() == [2.0, 4.0]


def test_grad_of_a_non_leaf_without_retain_grad_is_none_with_a_warning():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3
    (h * h).sum().backward()
    assert not h.retains_grad
    with pytest.warns(UserWarning, match="not a leaf Tensor.*retain_grad"):
        assert h.grad is None
    # no warning for leaves, for tensors that retain, or for tensors without grad
    k = x * 2
    k.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None
        assert k.grad is None
        assert f64([1.0]).grad is None


class _FirstGradOnly(tg.Function):
    """p + q whose backward gives no gradient (None) to p."""

    @staticmethod
    def forward(ctx, p, q):
        return p + q

    @staticmethod
    def backward(ctx, g):
        return None, g


def test_hooks_see_an_undefined_gradient_as_none():
    # PyTorch: a tensor that no gradient reaches in a backward that runs its node sees None in its
    # hooks (leaf and non-leaf), and a hook that returns a tensor defines the gradient
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([1.0, 1.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(("y", g)))
    x.register_hook(lambda g: seen.append(("x", g)))
    _FirstGradOnly.apply(y, w).sum().backward()
    assert seen == [("y", None), ("x", None)]  # y's node runs and passes nothing on to x
    assert x.grad is None and npy(w.grad).tolist() == [1.0, 1.0]

    seen.clear()
    _FirstGradOnly.apply(x, w).sum().backward()
    assert seen == [("x", None)] and x.grad is None

    z = x * 3
    z.register_hook(lambda g: f64([10.0, 20.0]) if g is None else g)
    _FirstGradOnly.apply(z, w).sum().backward()
    assert npy(x.grad).tolist() == [30.0, 60.0]  # the hook's gradient times dz/dx = 3
    bad = x * 3
    bad.register_hook(lambda g: f64([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="shape"):
        _FirstGradOnly.apply(bad, w).sum().backward()


# --- gradcheck ---------------------------------------------------------------------------------------


def test_gradcheck_passes_for_correct_functions(rng):
    a, b = f64(rng.standard_normal((2, 3)), True), f64(rng.standard_normal((3, 2)), True)
    assert tg.autograd.gradcheck(lambda x, w: (x.mm(w).tanh() * 2).sum(0), (a, b)) is True
    assert tg.autograd.gradcheck(lambda x: x.sigmoid() * x.exp() / (x * x + 1), (a,)) is True
    assert tg.autograd.gradcheck(lambda x, w: x.t() @ x.mm(w), [a, b]) is True
    c = f64(rng.uniform(0.5, 2.0, (4,)), True)
    assert tg.autograd.gradcheck(lambda x: (x.log() + x.sqrt()).pow(2), c) is True
    assert tg.autograd.gradcheck(MyReLU.apply, (f64([-1.0, 0.7, 2.0], True),)) is True


def test_gradcheck_with_several_outputs():
    x = f64([0.3, -1.2, 2.0], True)
    y = f64([1.5, 0.5, -0.5], True)
    assert tg.autograd.gradcheck(lambda a, b: (a * b, (a - b).exp().sum()), (x, y)) is True


def test_gradcheck_leaves_inputs_unchanged_and_grad_untouched():
    x = f64([0.3, -1.2, 2.0], True)
    tg.autograd.gradcheck(lambda a: a.sin() * a, (x,))
    assert npy(x).tolist() == [0.3, -1.2, 2.0]
    assert x.grad is None


class WrongBroadcastMul(tg.Function):
    """out[r, c] = a[c] * b[r, 0]; the gradient for b carries an extra 0.1 * a^2 * b term."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = (g * b).sum(0)
        gb = (g * a).sum(1, keepdim=True) + (g * a * a).sum(1, keepdim=True) * b * 0.1
        return ga, gb


def jacobians_of_wrong_mul(a, b):
    """The analytic (wrong) and true Jacobians of out.reshape(-1) with respect to b.reshape(-1)."""
    rows, cols = b.shape[0], a.shape[0]
    analytic = np.zeros((rows * cols, rows))
    true = np.zeros((rows * cols, rows))
    for r in range(rows):
        for c in range(cols):
            true[r * cols + c, r] = a[c]
            analytic[r * cols + c, r] = a[c] + 0.1 * a[c] ** 2 * b[r, 0]
    return analytic, true


def parse_mismatch(msg):
    m = re.search(
        r"output (\d+) with respect to input (\d+): at element (\d+) of the input and element (\d+) of the output, "
        r"analytic (\S+) vs numerical (\S+) ",
        msg,
    )
    assert m, msg
    oi, ii, j, k = (int(v) for v in m.groups()[:4])
    return oi, ii, j, k, float(m.group(5)), float(m.group(6))


def test_gradcheck_names_the_input_and_the_real_worst_mismatch():
    av, bv = np.array([1.0, -3.0, 2.0]), np.array([[0.5], [-2.0]])
    a, b = f64(av, True), f64(bv, True)
    with pytest.raises(tg.autograd.GradcheckError) as e:
        tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b))
    assert isinstance(e.value, RuntimeError)
    oi, ii, j, k, analytic, numeric = parse_mismatch(str(e.value))
    an, true = jacobians_of_wrong_mul(av, bv)
    err = np.abs(an - true) - (1e-5 + 1e-3 * np.abs(true))
    k_exp, j_exp = np.unravel_index(np.argmax(err), err.shape)
    assert (oi, ii) == (0, 1)  # the gradient for a is right; b's is wrong
    assert (k, j) == (k_exp, j_exp) == (4, 1)  # out[1, 1] = a[1] * b[1]: the largest error
    np.testing.assert_allclose(analytic, an[k_exp, j_exp], rtol=1e-12)  # -3 + 0.1 * 9 * -2 = -4.8
    np.testing.assert_allclose(numeric, true[k_exp, j_exp], rtol=1e-6)  # -3
    assert "atol=1e-05" in str(e.value) and "rtol=0.001" in str(e.value)


def test_gradcheck_tolerances_are_atol_plus_rtol_times_numerical():
    # the worst error is |-4.8 - -3| = 1.8 at |numerical| = 3
    a, b = f64([1.0, -3.0, 2.0], True), f64([[0.5], [-2.0]], True)
    assert tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b), atol=1.81, rtol=0.0) is True
    assert tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b), atol=0.0, rtol=0.61) is True
    assert tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b), atol=0.0, rtol=0.59, raise_exception=False) is False
    with pytest.raises(tg.autograd.GradcheckError):
        tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b), atol=1.79, rtol=0.0)


def test_gradcheck_uses_eps_for_the_finite_differences():
    # central difference of x^3 at 1 with step h is 3 + h^2 exactly
    x = f64([1.0], True)
    assert tg.autograd.gradcheck(lambda t: t**3, (x,)) is True
    with pytest.raises(tg.autograd.GradcheckError) as e:
        tg.autograd.gradcheck(lambda t: t**3, (x,), eps=0.1)
    *_, analytic, numeric = parse_mismatch(str(e.value))
    np.testing.assert_allclose(analytic, 3.0, rtol=1e-12)
    np.testing.assert_allclose(numeric, (1.1**3 - 0.9**3) / 0.2, rtol=1e-9)


def test_gradcheck_skips_inputs_that_do_not_require_grad():
    # b's gradient is wrong, but b does not require grad: only a is checked
    a, b = f64([1.0, -3.0, 2.0], True), f64([[0.5], [-2.0]])
    assert tg.autograd.gradcheck(WrongBroadcastMul.apply, (a, b)) is True

    def scaled(x, k, c):
        return x * c * k

    assert tg.autograd.gradcheck(scaled, (a, 3, f64([2.0]))) is True


def test_gradcheck_checks_float32_inputs_with_a_warning_naming_the_input():
    # PyTorch: a low-precision input is checked, with a warning naming it (its tuple position)
    x64 = f64([1.0, 2.0], True)
    x32 = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"Input #1 requires gradient and is not a double precision") as w:
        # float32 steps of 1e-3 are exact to ~1e-7 relative: d(a*b)/db = a within 1e-3
        assert tg.autograd.gradcheck(lambda a, b: a * b, (x64, x32), eps=1e-3, atol=1e-3) is True
    assert len(w) == 1 and "#0" not in str(w[0].message)
    with pytest.warns(UserWarning, match="Input #0"):
        # and it still detects a wrong gradient: d(x^3)/dx = 3x^2 = 3 at 1, the hook makes it 6
        def doubled_cube(a):
            y = a**3
            y.register_hook(lambda g: g * 2)
            return y

        assert tg.autograd.gradcheck(doubled_cube, (tg.tensor([1.0], requires_grad=True),), eps=1e-3, atol=1e-2,
                                     raise_exception=False) is False
    with pytest.raises(ValueError, match="at least one input tensor with requires_grad=True"):
        tg.autograd.gradcheck(lambda a: a * 2, (f64([1.0]),))


# --- detect_anomaly ----------------------------------------------------------------------------------


def _make_division(a, b):
    return a / b  # anomaly: division created here


def _loss_through_a_helper(a, b):
    return _make_division(a, b).sum()  # anomaly: helper called here


def _line(marker):
    lines = pathlib.Path(__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line and "_line(" not in line)


def test_anomaly_names_the_node_the_output_and_its_creation_stack():
    a = f64([0.0, 1.0], requires_grad=True)
    b = f64([0.0, 2.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        loss = _loss_through_a_helper(a, b)
        with pytest.raises(RuntimeError) as e:
            loss.backward()
    msg = str(e.value)
    # d(a/b)/da = 1/b is inf at b = 0 (not an anomaly); d/db = -a/b^2 is 0/0 = nan: output 1
    assert "'DivBackward'" in msg and "nan values in its 1th output" in msg, msg
    assert "SumBackward" not in msg
    assert f'line {_line("# anomaly: division created here")}, in _make_division' in msg, msg
    assert f'line {_line("# anomaly: helper called here")}, in _loss_through_a_helper' in msg, msg
    assert a.grad is None and b.grad is None


def test_anomaly_records_creation_only_while_on():
    x = f64([1.0], requires_grad=True)
    assert (x * 2).grad_fn.created_at is None
    with tg.autograd.detect_anomaly():
        y = x.exp()  # anomaly: exp created here
    assert f'line {_line("# anomaly: exp created here")}' in y.grad_fn.created_at
    assert "y = x.exp()" in y.grad_fn.created_at


def test_anomaly_lets_infinities_through_and_library_stays_usable():
    x = f64([0.0, 4.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        x.sqrt().sum().backward()  # d sqrt/dx at 0 is inf, not nan
        np.testing.assert_allclose(npy(x.grad), [np.inf, 0.25])
        x.grad = None
        with pytest.raises(RuntimeError, match="nan"):
            (x.sqrt() * 0).sum().backward()
        (x * 3).sum().backward()
    assert npy(x.grad).tolist() == [3.0, 3.0]


def test_anomaly_check_nan_false_records_but_does_not_raise():
    x = f64([0.0, 4.0], requires_grad=True)
    with tg.autograd.detect_anomaly(check_nan=False):
        assert tg.autograd.is_anomaly_enabled()
        y = (x.sqrt() * 0).sum()
        assert y.grad_fn.created_at is not None
        y.backward()
    g = npy(x.grad)
    assert np.isnan(g[0]) and g[1] == 0.0
    # and the flag is restored: the next detect_anomaly() checks again
    with tg.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="SqrtBackward"):
            (x.sqrt() * 0).sum().backward()


def test_detect_anomaly_warns_that_it_is_for_debugging():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will increase the runtime "
                                         "and should only be enabled for debugging."):
        with tg.autograd.detect_anomaly():
            pass

    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled") as record:
        @tg.autograd.detect_anomaly()
        def f():
            return tg.autograd.is_anomaly_enabled()
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calling the decorated function does not warn again
        assert f() is True and f() is True
    assert not tg.autograd.is_anomaly_enabled()


class _NanBackward(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class _RecordsInBackward(tg.Function):
    """The identity with a wrong backward that records _NanBackward (a node created during a backward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _NanBackward.apply(g * x)  # anomaly: child created here


def test_anomaly_failure_warns_with_the_node_and_its_parent_forward_call():
    x = f64([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            out = _RecordsInBackward.apply(x)  # anomaly: parent created here
            (g,) = tg.autograd.grad(out.sum(), x, create_graph=True)
            with pytest.raises(RuntimeError, match="'_NanBackwardBackward' returned nan values") as e:
                g.sum().backward()
    msgs = [str(m.message) for m in w if m.category is UserWarning]
    assert msgs[0].startswith("Anomaly Detection has been enabled")
    child, parent = _line("# anomaly: child created here"), _line("# anomaly: parent created here")
    assert msgs[1].startswith("Error detected in _NanBackwardBackward. Traceback of forward call that caused the error:")
    assert f"line {child}, in backward" in msgs[1], msgs[1]
    assert msgs[2].startswith("\n\nPrevious calculation was induced by _RecordsInBackwardBackward. Traceback of "
                              "forward call that induced the previous calculation:")
    assert f"line {parent}," in msgs[2] and f"line {child}," not in msgs[2], msgs[2]
    assert len(msgs) == 3, msgs
    # the error itself tells the same story
    text = str(e.value)
    assert f"line {child}, in backward" in text and f"line {parent}," in text, text
    assert "was created while the backward of _RecordsInBackwardBackward ran" in text, text


def test_anomaly_failure_without_forward_information_says_so():
    x = f64([1.0, 2.0], requires_grad=True)
    out = _NanBackward.apply(x).sum()  # recorded outside anomaly mode
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="nan values"):
                out.backward()
    msgs = [str(m.message) for m in w]
    assert msgs[1:] == ["Error detected in _NanBackwardBackward. No forward pass information available. Enable "
                        "detect anomaly during forward pass for more information."]
    # no warning when the backward succeeds, nor outside anomaly mode
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="shape"):
            _NanBackward.apply(x).sum().backward(f64([1.0, 2.0]))
        with tg.autograd.detect_anomaly():
            (x * 2).sum().backward()
    assert [str(m.message)[:30] for m in w] == ["Anomaly Detection has been ena"]


# --- to_dot -------------------------------------------------------------------------------------------

NODE = re.compile(r'^  (n\d+) \[label="([^"]*)"\];$', re.M)
EDGE = re.compile(r"^  (n\d+) -> (n\d+);$", re.M)
SAVED = re.compile(
    r'^  (s(\d+)_\d+) \[label="saved \[([0-9, ]*)\] (\w+)\\nversion (\d+)(?:\\nSTALE: now version (\d+))?", '
    r"shape=note(, color=red, fontcolor=red)?\];$",
    re.M,
)
SAVED_EDGE = re.compile(r"^  (s\d+_\d+) -> (n\d+) \[style=dashed, arrowhead=none\];$", re.M)


def walk(root):
    """The graph behind a grad_fn, walked through next_functions: (nodes, edges)."""
    nodes, edges, stack, seen = [], [], [root], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                edges.append((node, nxt))
                stack.append(nxt)
    return nodes, edges


def parse_dot(text):
    """{node id: label}, [(id, id)] edges, and {node id: [saved dicts]} from to_dot's text."""
    labels = dict(NODE.findall(text))
    edges = EDGE.findall(text)
    saved = collections.defaultdict(list)
    owners = dict(SAVED_EDGE.findall(text))
    for sid, _, shape, dtype, version, now, red in SAVED.findall(text):
        saved[owners[sid]].append(
            {"shape": f"[{shape}]", "dtype": dtype, "version": int(version),
             "stale_now": int(now) if now else None, "red": bool(red)}
        )
    return labels, edges, saved


def seed_step(dtype=tg.float32):
    tg.manual_seed(0)
    x = tg.randn(3, 4, dtype=dtype)
    y = tg.randn(3, 2, dtype=dtype)
    w1 = tg.randn(4, 5, dtype=dtype, requires_grad=True)
    w2 = tg.randn(5, 2, dtype=dtype, requires_grad=True)
    h = x.mm(w1)
    loss = (MyReLU.apply(h).mm(w2) - y).pow(2).sum()
    return loss, h


def check_dot_matches_graph(text, root):
    assert text.startswith("digraph tapegrad {") and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}") == 1
    labels, edges, _ = parse_dot(text)
    nodes, walked = walk(root.grad_fn)
    assert len(labels) == len(nodes)
    names = {nid: label.split("\\n")[0] for nid, label in labels.items()}
    assert collections.Counter(names.values()) == collections.Counter(n.name() for n in nodes)
    assert len(edges) == len(walked)
    assert collections.Counter((names[p], names[c]) for p, c in edges) == collections.Counter(
        (p.name(), c.name()) for p, c in walked
    )
    (first,) = re.findall(r"^  output -> (n\d+) \[dir=back\];$", text, re.M)
    assert names[first] == root.grad_fn.name()
    return labels, names


def test_to_dot_nodes_and_edges_match_the_graph():
    loss, _ = seed_step()
    text = tg.autograd.to_dot(loss)
    _, names = check_dot_matches_graph(text, loss)
    assert sorted(names.values()) == sorted(
        ["SumBackward", "PowBackward", "SubBackward", "MmBackward", "MmBackward", "MyReLUBackward",
         "AccumulateGrad", "AccumulateGrad"]
    )
    assert 'output [label="output [] float32", shape=ellipse];' in text


def test_to_dot_leaves_are_accumulate_grad_nodes_with_their_shape():
    loss, _ = seed_step(tg.float64)
    labels, _, _ = parse_dot(tg.autograd.to_dot(loss))
    leaves = sorted(label for label in labels.values() if label.startswith("AccumulateGrad"))
    assert leaves == ["AccumulateGrad\\nleaf [4, 5] float64", "AccumulateGrad\\nleaf [5, 2] float64"]


def test_to_dot_leaf_used_twice_is_one_node_with_two_incoming_edges():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x * x.exp()).sum()
    text = tg.autograd.to_dot(y)
    labels, names = check_dot_matches_graph(text, y)
    (leaf,) = [nid for nid, name in names.items() if name == "AccumulateGrad"]
    _, edges, _ = parse_dot(text)
    assert sorted(names[p] for p, c in edges if c == leaf) == ["ExpBackward", "MulBackward"]


def test_to_dot_lists_saved_tensors_with_shape_dtype_and_version():
    loss, _ = seed_step()
    labels, _, saved = parse_dot(tg.autograd.to_dot(loss))
    by_name = collections.defaultdict(list)
    for nid, items in saved.items():
        by_name[labels[nid]].append(sorted(s["shape"] for s in items))
        assert all(s["dtype"] == "float32" and s["version"] == 0 and s["stale_now"] is None for s in items)
        assert not any(s["red"] for s in items)
    assert by_name["MyReLUBackward"] == [["[3, 5]"]]  # exactly what MyReLU saved
    mms = by_name["MmBackward"]
    assert len(mms) == 2
    # each mm saved at least what its needed gradient reads: x for w1's, and both operands of the second
    assert any("[3, 4]" in m for m in mms)
    assert any({"[3, 5]", "[5, 2]"} <= set(m) for m in mms)


def test_to_dot_marks_a_saved_tensor_modified_in_place_as_stale():
    loss, h = seed_step()
    h.add_(1)
    text = tg.autograd.to_dot(loss)
    labels, _, saved = parse_dot(text)
    stale = [(labels[nid], s) for nid, items in saved.items() for s in items if s["stale_now"] is not None]
    assert len(stale) == 1
    name, s = stale[0]
    assert name == "MyReLUBackward"
    assert s == {"shape": "[3, 5]", "dtype": "float32", "version": 0, "stale_now": 1, "red": True}
    h.mul_(2)
    _, _, saved = parse_dot(tg.autograd.to_dot(loss))
    assert [s["stale_now"] for items in saved.values() for s in items if s["stale_now"]] == [2]
    with pytest.raises(tg.SavedTensorModifiedError):
        loss.backward()


def test_to_dot_saved_version_is_the_version_at_save_time():
    x = f64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    c = x * 1
    c.add_(1)  # version 1 before it is saved
    y = c.sin().sum()
    labels, _, saved = parse_dot(tg.autograd.to_dot(y))
    (sin_id,) = [nid for nid, label in labels.items() if label == "SinBackward"]
    assert saved[sin_id] == [{"shape": "[2, 3]", "dtype": "float64", "version": 1, "stale_now": None, "red": False}]
    c.mul_(2)
    _, _, saved = parse_dot(tg.autograd.to_dot(y))
    assert saved[sin_id][0]["version"] == 1 and saved[sin_id][0]["stale_now"] == 2


def test_to_dot_after_backward_shows_freed_saved_tensors():
    loss, _ = seed_step()
    loss.backward(retain_graph=True)
    assert "saved tensors freed" not in tg.autograd.to_dot(loss)
    loss.backward()
    text = tg.autograd.to_dot(loss)
    labels, _, saved = parse_dot(text)
    assert not saved
    freed = re.findall(r'^  (n\d+)_freed \[label="saved tensors freed", shape=plaintext\];$', text, re.M)
    assert sorted(labels[n] for n in freed) == ["MmBackward", "MmBackward", "MyReLUBackward", "PowBackward"]
    check_dot_matches_graph(text, loss)  # the structure is still there


def test_to_dot_of_tensors_without_history():
    text = tg.autograd.to_dot(f64([[1.0, 2.0]], requires_grad=True))
    assert 'output [label="output [1, 2] float64", shape=ellipse];' in text
    assert not NODE.findall(text) and " -> " not in text
    with pytest.raises(TypeError, match="Tensor"):
        tg.autograd.to_dot(np.zeros(2))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` program is not installed")
def test_to_dot_output_is_accepted_by_graphviz():
    loss, h = seed_step()
    h.add_(1)
    r = subprocess.run(["dot", "-Tplain"], input=tg.autograd.to_dot(loss), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "MyReLUBackward" in r.stdout and "STALE" in r.stdout


# --- examples/graph_to_svg.py ------------------------------------------------------------------------

EXAMPLE = ROOT / "examples" / "graph_to_svg.py"


def run_example(out_dir, env=None):
    return subprocess.run([sys.executable, str(EXAMPLE), str(out_dir)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(ROOT))


def load_example():
    spec = importlib.util.spec_from_file_location("graph_to_svg", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_graph_example_writes_the_dot_file(tmp_path):
    out = tmp_path / "out"
    r = run_example(out)
    assert r.returncode == 0, r.stderr
    text = (out / "graph.dot").read_text()
    loss = load_example().build()
    check_dot_matches_graph(text, loss)
    labels, _, saved = parse_dot(text)
    assert sorted(labels.values()) == sorted(
        ["SumBackward", "PowBackward", "SubBackward", "MmBackward", "MmBackward", "MyReLUBackward",
         "AccumulateGrad\\nleaf [1000, 100] float32", "AccumulateGrad\\nleaf [100, 10] float32"]
    )
    (relu,) = [nid for nid, label in labels.items() if label == "MyReLUBackward"]
    assert [s["shape"] for s in saved[relu]] == ["[64, 100]"]
    assert str(out / "graph.dot") in r.stdout


def test_graph_example_without_graphviz_says_how_to_render(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run_example(tmp_path, env={"PATH": str(empty), "PYTHONPATH": ":".join(sys.path)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "graph.dot").exists() and not (tmp_path / "graph.svg").exists()
    assert f"dot -Tsvg {tmp_path / 'graph.dot'} -o {tmp_path / 'graph.svg'}" in r.stdout


def test_graph_example_renders_svg_with_graphviz(tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz Python package is not installed")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's `dot` program is not installed")
    r = run_example(tmp_path)
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "graph.svg").read_text()
    assert "<svg" in svg and svg.rstrip().endswith("</svg>")
    assert "MyReLUBackward" in svg and svg.count("MmBackward") == 2
    assert str(tmp_path / "graph.svg") in r.stdout
