"""The variance family records one node per call (PyTorch's VarBackward0 ... StdMeanBackward0),
with gradients (and second derivatives) checked against float64 central differences."""

import numpy as np
import pytest
from oracles import check_grads

import tapegrad as tg


@pytest.mark.parametrize(
    "fn, name",
    [
        (lambda x: tg.var_mean(x, 1), "VarMeanBackward"),
        (lambda x: tg.std_mean(x, 1), "StdMeanBackward"),
        (lambda x: (x.var(),), "VarBackward"),
        (lambda x: (x.std(0),), "StdBackward"),
    ],
)
def test_one_node(fn, name):
    x = tg.randn(3, 4, requires_grad=True)
    outs = fn(x)
    nodes = {id(o.grad_fn) for o in outs}
    assert len(nodes) == 1
    node = outs[0].grad_fn
    assert node.name() == name
    # the node leads straight to the leaf's accumulator
    assert len(node.next_functions) == 1
    assert node.next_functions[0][0].name() == "AccumulateGrad"
    for k, o in enumerate(outs):
        assert o.output_nr == k


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_mean_grads(dim, keepdim, correction):
    a = np.random.default_rng(1).normal(size=(3, 4))

    def both(f):
        def g(x):
            s, m = f(x, dim, keepdim=keepdim, correction=correction)
            # weights make the two outputs' gradients distinguishable
            return s * 1.7 + m * -0.6
        return g

    check_grads(both(tg.var_mean), [a])
    check_grads(both(tg.std_mean), [a])
    check_grads(lambda x: tg.var_mean(x, dim, keepdim=keepdim, correction=correction)[1], [a])
    check_grads(lambda x: tg.std_mean(x, dim, keepdim=keepdim, correction=correction)[0], [a])


def test_values_match_numpy():
    a = np.random.default_rng(2).normal(size=(2, 5))
    x = tg.tensor(a)
    v, m = tg.var_mean(x, 1)
    np.testing.assert_allclose(v.numpy(), a.var(1, ddof=1))
    np.testing.assert_allclose(m.numpy(), a.mean(1))
    s, m = tg.std_mean(x, 0, correction=0, keepdim=True)
    np.testing.assert_allclose(s.numpy(), a.std(0, ddof=0, keepdims=True))
    np.testing.assert_allclose(m.numpy(), a.mean(0, keepdims=True))


def test_std_gradient_at_zero_spread_is_zero():
    # as PyTorch: d std / dx is 0 (not NaN) where std is 0
    x = tg.zeros(3, requires_grad=True)
    x.std().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_second_derivative():
    a = np.random.default_rng(3).normal(size=(4,))
    x = tg.tensor(a, requires_grad=True)
    v, m = tg.var_mean(x)
    (g,) = tg.autograd.grad(v + m * 3, x, create_graph=True)
    # d/dx_j of sum_i (2 (x_i - mean) / (n - 1) + 3 / n) * w_i with w = x
    (h,) = tg.autograd.grad((g * x).sum(), x)
    eps = 1e-6

    def grad_dot_x(arr):
        t = tg.tensor(arr, requires_grad=True)
        vv, mm = tg.var_mean(t)
        (gg,) = tg.autograd.grad(vv + mm * 3, t)
        return float((gg.numpy() * arr).sum())

    fd = np.array([(grad_dot_x(a + eps * e) - grad_dot_x(a - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(h.numpy(), fd, atol=1e-5)


def test_integer_input_refused():
    with pytest.raises(RuntimeError, match="floating point"):
        tg.std_mean(tg.tensor([1, 2, 3]))
