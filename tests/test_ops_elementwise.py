"""Element-wise operations of issue 15, driven by one table per kind (unary, binary).

Oracles: NumPy and the ``math``/``statistics`` modules for values (float64 and float32 inputs);
float64 central differences of those same NumPy functions for first derivatives (not tapegrad's
own forward); ``tg.autograd.gradgradcheck`` for second derivatives of the smooth ones; PyTorch's
documented conventions, written out as closed forms, for edge values, dtypes, kinks and errors.
"""

import doctest
import math
import statistics

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(15)


def _vec(f):
    return np.vectorize(f, otypes=[float])


def _erfinv(y):
    if y in (1.0, -1.0):
        return math.copysign(math.inf, y)
    if not -1.0 < y < 1.0:
        return math.nan
    return statistics.NormalDist().inv_cdf((1.0 + y) / 2.0) / math.sqrt(2.0)


class Unary:
    """One row: the oracle on float64 arrays, the interval inputs are drawn from, points the
    derivative is not taken near (kinks), and the dtype rule for integer inputs."""

    def __init__(self, oracle, lo=-3.0, hi=3.0, smooth=True, kinks=(), ints="float", method=True, kwargs=None,
                 edges=()):
        self.oracle, self.lo, self.hi, self.smooth, self.kinks = oracle, lo, hi, smooth, kinks
        self.ints, self.method, self.kwargs, self.edges = ints, method, kwargs or {}, edges


UNARY = {
    "log1p": Unary(np.log1p, lo=-0.9, edges=[(-1.0, -math.inf), (-2.0, math.nan), (1e-30, 1e-30)]),
}


def _name(key):
    return key.split("[")[0]


def _apply(key, x):
    row = UNARY[key]
    return getattr(tg, _name(key))(x, **row.kwargs)


def _draw(row, n=40):
    x = RNG.uniform(row.lo, row.hi, n)
    for k in row.kinks:  # keep every point a little away from a kink, where the derivative jumps
        x = np.where(np.abs(x - k) < 1e-2, x + 3e-2, x)
    return x


@pytest.mark.parametrize("key", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unary_values(key, dtype):
    row = UNARY[key]
    x = _draw(row).astype(dtype)
    got = _apply(key, tg.tensor(x)).numpy()
    want = row.oracle(x.astype(np.float64))
    assert got.dtype == np.dtype(dtype)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_edge_values(key):
    row = UNARY[key]
    if not row.edges:
        pytest.skip("no edge values listed")
    xs, want = zip(*row.edges)
    got = _apply(key, tg.tensor(list(xs), dtype=tg.float64)).tolist()
    for x, g, w in zip(xs, got, want):
        assert (math.isnan(g) and math.isnan(w)) or g == w or math.isclose(g, w, rel_tol=1e-12), (x, g, w)


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_gradient_against_central_differences(key):
    row = UNARY[key]
    x = _draw(row, 25)
    w = RNG.uniform(-1, 1, x.shape)
    xt = tg.tensor(x, requires_grad=True)
    (_apply(key, xt) * tg.tensor(w)).sum().backward()
    h = 1e-6
    numeric = w * (row.oracle(x + h) - row.oracle(x - h)) / (2 * h)
    np.testing.assert_allclose(xt.grad.numpy(), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", sorted(k for k in UNARY if UNARY[k].smooth))
def test_unary_second_derivative(key):
    x = tg.tensor(_draw(UNARY[key], 6), requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: _apply(key, t), (x,))


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_method_and_in_place_agree_with_the_function(key):
    row = UNARY[key]
    x = tg.tensor(_draw(row, 8))
    want = _apply(key, x).numpy()
    if not row.method:
        return
    name = _name(key)
    np.testing.assert_array_equal(getattr(x, name)(**row.kwargs).numpy(), want)
    y = x.clone()
    version = y._version
    assert getattr(y, name + "_")(**row.kwargs) is y
    np.testing.assert_array_equal(y.numpy(), want)
    assert y._version == version + 1


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_integer_and_bool_inputs(key):
    row = UNARY[key]
    ints = tg.tensor([-2, 0, 1, 3])
    bools = tg.tensor([True, False])
    if row.ints == "float":  # computed as float32, as PyTorch
        for t in (ints, bools):
            got = _apply(key, t)
            assert got.dtype == tg.float32
            want = _apply(key, t.to(tg.float32))
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    elif row.ints == "refused":
        for t in (ints, bools):
            with pytest.raises(RuntimeError, match="not implemented for"):
                _apply(key, t)
    else:  # "exact": int64 in, int64 out
        got = _apply(key, ints)
        assert got.dtype == tg.int64
        np.testing.assert_array_equal(got.numpy(), row.oracle(ints.numpy().astype(np.float64)).astype(np.int64))


def test_in_place_on_an_integer_tensor_is_refused_for_float_results():
    t = tg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.log1p_()
    assert t.tolist() == [1, 2]


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.log1p_()


def test_in_place_records_the_operation():
    x = tg.tensor([0.5, 2.0], dtype=tg.float64, requires_grad=True)
    y = x * 1
    y.log1p_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.array([0.5, 2.0])), rtol=1e-15)


def test_functions_take_tensors_only():
    with pytest.raises(TypeError):
        tg.log1p([1.0, 2.0])


NATIVE_DOCS = sorted({_name(k) for k in UNARY})


@pytest.mark.parametrize("name", NATIVE_DOCS)
def test_native_docstring_examples_run(name):
    fn = getattr(tg, name)
    test = doctest.DocTestParser().get_doctest(fn.__doc__ or "", {}, name, None, 0)
    assert test.examples, f"tg.{name} needs a docstring with a >>> example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"an example of tg.{name} failed (output above)"
