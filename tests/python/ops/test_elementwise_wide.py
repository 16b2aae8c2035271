"""Element-wise kernels compiled for the CPU's widest vectors (issue 19, NOTE [Wide element-wise
loops] in src/ops/kernel.rs) and the map that replaces a broadcast walk when one operand is a single
value expanded (the gradient of a `sum` reaching an element-wise backward).

The loops run the same IEEE operations on every path, so the oracle is NumPy's own float32/float64
arithmetic, compared exactly; lengths around the vector widths (15, 16, 17, 31, 33) exercise the
loop tails, and 300,001 the split over threads. Gradients are checked against NumPy float64 formulas.
"""

import numpy as np
import pytest

import tapegrad as tg

SIZES = [1, 15, 16, 17, 31, 33, 1000, 100_003, 300_001]


def arrays(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(dtype)
    b = (rng.standard_normal(n) + 3.0).astype(dtype)  # away from 0: division
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_binary_results_equal_numpys_exactly(dtype, n):
    a_np, b_np = arrays(n, dtype)
    a, b = tg.from_numpy(a_np), tg.from_numpy(b_np)
    np.testing.assert_array_equal((a + b).numpy(), a_np + b_np)
    np.testing.assert_array_equal((a - b).numpy(), a_np - b_np)
    np.testing.assert_array_equal((a * b).numpy(), a_np * b_np)
    np.testing.assert_array_equal((a / b).numpy(), a_np / b_np)
    np.testing.assert_array_equal((a * 0.25).numpy(), a_np * dtype(0.25))
    np.testing.assert_array_equal((-a).numpy(), -a_np)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_in_place_updates_equal_numpys_exactly(dtype, n):
    a_np, b_np = arrays(n, dtype, seed=1)
    w = tg.from_numpy(a_np.copy())
    g = tg.from_numpy(b_np)
    lr = 1e-3
    expected = a_np.copy()
    with tg.no_grad():
        w -= lr * g
        expected -= dtype(lr) * b_np
        np.testing.assert_array_equal(w.numpy(), expected)
        w.add_(g)
        expected += b_np
        np.testing.assert_array_equal(w.numpy(), expected)
        w.mul_(g)
        expected *= b_np
        np.testing.assert_array_equal(w.numpy(), expected)
        w.mul_(0.5)
        expected *= dtype(0.5)
        np.testing.assert_array_equal(w.numpy(), expected)
        w.zero_()
        assert not w.numpy().any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_expanded_single_value_operand_on_either_side(dtype):
    rng = np.random.default_rng(2)
    b_np = (rng.standard_normal((37, 41)) + 3.0).astype(dtype)
    b = tg.from_numpy(b_np)
    s = tg.from_numpy(np.array(2.5, dtype=dtype))
    for e in (s.expand(37, 41), s.reshape(1, 1).expand(37, 41)):
        assert not e.is_contiguous()
        c = dtype(2.5)
        np.testing.assert_array_equal((e - b).numpy(), c - b_np)
        np.testing.assert_array_equal((b - e).numpy(), b_np - c)
        np.testing.assert_array_equal((e / b).numpy(), c / b_np)
        np.testing.assert_array_equal((b / e).numpy(), b_np / c)
        np.testing.assert_array_equal((e * b).numpy(), c * b_np)
    # a row expanded over rows is not a single value: the general broadcast path, same values
    row_np = rng.standard_normal((1, 41)).astype(dtype)
    row = tg.from_numpy(row_np).expand(37, 41)
    np.testing.assert_array_equal((row - b).numpy(), row_np - b_np)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, -3.0])
def test_tanh_backward_from_a_sum_matches_numpy(dtype, scale):
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((256, 256)).astype(dtype)
    x = tg.from_numpy(x_np).requires_grad_()
    (x.tanh().sum() * scale).backward()
    y = np.tanh(x_np.astype(np.float64))
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), scale * (1.0 - y * y), rtol=tol, atol=tol)
