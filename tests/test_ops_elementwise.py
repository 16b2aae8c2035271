"""Element-wise operations of issue 15, driven by one table per kind (unary, binary).

Oracles: NumPy and the ``math``/``statistics`` modules for values (float64 and float32 inputs);
float64 central differences of those same NumPy functions for first derivatives (not tapegrad's
own forward); ``tg.autograd.gradgradcheck`` for second derivatives of the smooth ones; PyTorch's
documented conventions, written out as closed forms, for edge values, dtypes, kinks and errors.
"""

import doctest
import math

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(15)


def _vec(f):
    return np.vectorize(f, otypes=[float])


def _erfinv(y):
    """By bisection on math.erf, or on math.erfc in the tail (1 - |y| is exact there)."""
    if y in (1.0, -1.0):
        return math.copysign(math.inf, y)
    if not -1.0 < y < 1.0:
        return math.nan
    a, lo, hi = abs(y), 0.0, 30.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (math.erf(mid) < a) if a <= 0.5 else (math.erfc(mid) > 1 - a):
            lo = mid
        else:
            hi = mid
    return math.copysign(lo, y)


class Unary:
    """One row: the oracle on float64 arrays, the interval inputs are drawn from, points the
    derivative is not taken near (kinks), the dtype rules for int64 and bool inputs ("float":
    computed as float32; "exact": int64 stays int64; "refused"; for bools also "int" and "same"),
    whether ``Tensor`` has the method, keyword arguments, and edge values ``(x, f(x))``."""

    def __init__(self, oracle, lo=-3.0, hi=3.0, kinks=(), ints="float", bools=None, method=True, kwargs=None,
                 edges=(), rtol64=1e-12):
        self.oracle, self.lo, self.hi, self.kinks = oracle, lo, hi, kinks
        self.ints, self.method, self.kwargs, self.edges, self.rtol64 = ints, method, kwargs or {}, edges, rtol64
        self.bools = bools or {"float": "float", "exact": "refused", "refused": "refused"}[ints]


INF, NAN = math.inf, math.nan
INTEGERS = tuple(range(-4, 5))
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _gelu(x):
    return x * 0.5 * (1 + _vec(math.erf)(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _softplus(beta, threshold):
    return lambda x: np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


UNARY = {
    "log1p": Unary(np.log1p, lo=-0.9, edges=[(-1.0, -INF), (-2.0, NAN), (1e-30, 1e-30)]),
    "expm1": Unary(np.expm1, edges=[(-INF, -1.0), (INF, INF), (1e-30, 1e-30)]),
    "log2": Unary(np.log2, lo=0.1, hi=5.0, edges=[(0.0, -INF), (-1.0, NAN), (8.0, 3.0), (INF, INF)]),
    "log10": Unary(np.log10, lo=0.1, hi=5.0, edges=[(0.0, -INF), (-1.0, NAN), (1000.0, 3.0)]),
    "exp2": Unary(np.exp2, edges=[(-INF, 0.0), (10.0, 1024.0)]),
    "rsqrt": Unary(lambda x: 1 / np.sqrt(x), lo=0.1, hi=5.0,
                   edges=[(0.0, INF), (-0.0, -INF), (-1.0, NAN), (INF, 0.0), (4.0, 0.5)]),
    "square": Unary(np.square, ints="exact", bools="int", edges=[(-INF, INF), (-3.0, 9.0)]),
    "reciprocal": Unary(lambda x: 1 / x, kinks=(0.0,), edges=[(0.0, INF), (-0.0, -INF), (INF, 0.0)]),
    "sign": Unary(np.sign, kinks=(0.0,), ints="exact", bools="same",
                  edges=[(NAN, 0.0), (-0.0, 0.0), (-INF, -1.0), (2.0, 1.0)]),
    "floor": Unary(np.floor, kinks=INTEGERS, ints="exact", edges=[(-0.5, -1.0), (INF, INF), (2.0, 2.0)]),
    "ceil": Unary(np.ceil, kinks=INTEGERS, ints="exact", edges=[(-0.5, -0.0), (-INF, -INF), (0.1, 1.0)]),
    "trunc": Unary(np.trunc, kinks=INTEGERS, ints="exact", edges=[(-1.5, -1.0), (1.5, 1.0)]),
    "round": Unary(np.round, kinks=tuple(k + 0.5 for k in INTEGERS), ints="exact",
                   edges=[(0.5, 0.0), (1.5, 2.0), (2.5, 2.0), (-0.5, -0.0), (-2.5, -2.0), (INF, INF)]),
    "round[decimals=2]": Unary(lambda x: np.round(x, 2), ints="refused", kwargs=dict(decimals=2),
                               edges=[(0.125, 0.12), (0.375, 0.38), (1.0, 1.0)]),
    "round[decimals=-2]": Unary(lambda x: np.round(x, -2), lo=-500.0, hi=500.0, ints="refused",
                                kwargs=dict(decimals=-2), edges=[(1250.0, 1200.0), (1350.0, 1400.0)]),
    "frac": Unary(lambda x: x - np.trunc(x), kinks=INTEGERS, ints="refused", edges=[(INF, NAN), (-1.5, -0.5)]),
    "tan": Unary(np.tan, lo=-1.2, hi=1.2, edges=[(0.0, 0.0)]),
    "asin": Unary(np.arcsin, lo=-0.95, hi=0.95, edges=[(1.0, math.pi / 2), (2.0, NAN)]),
    "acos": Unary(np.arccos, lo=-0.95, hi=0.95, edges=[(-1.0, math.pi), (2.0, NAN)]),
    "atan": Unary(np.arctan, edges=[(INF, math.pi / 2)]),
    "sinh": Unary(np.sinh, edges=[(INF, INF)]),
    "cosh": Unary(np.cosh, edges=[(-INF, INF)]),
    "asinh": Unary(np.arcsinh, edges=[(-INF, -INF)]),
    "acosh": Unary(np.arccosh, lo=1.1, hi=4.0, edges=[(1.0, 0.0), (0.5, NAN)]),
    "atanh": Unary(np.arctanh, lo=-0.95, hi=0.95, edges=[(1.0, INF), (-1.0, -INF), (2.0, NAN)]),
    "erf": Unary(_vec(math.erf), edges=[(INF, 1.0), (-INF, -1.0)]),
    "erfc": Unary(_vec(math.erfc), lo=-3.0, hi=5.0, edges=[(INF, 0.0), (-INF, 2.0)]),
    "erfinv": Unary(_vec(_erfinv), lo=-0.99, hi=0.99, rtol64=1e-13,
                    edges=[(1.0, INF), (-1.0, -INF), (1.5, NAN), (-0.0, -0.0), (0.5, _erfinv(0.5)),
                           (1 - 1e-12, _erfinv(1 - 1e-12)), (-1 + 1e-15, _erfinv(-1 + 1e-15)), (1e-300, 1e-300 * math.sqrt(math.pi) / 2)]),
    "silu": Unary(lambda x: x / (1 + np.exp(-x)), ints="refused", method=False),
    "gelu": Unary(_gelu, ints="refused", method=False),
    "gelu[tanh]": Unary(_gelu_tanh, ints="refused", method=False, kwargs=dict(approximate="tanh")),
    "elu": Unary(lambda x: np.where(x > 0, x, np.expm1(x)), kinks=(0.0,), ints="refused", method=False),
    "elu[alpha=0.5]": Unary(lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), kinks=(0.0,), ints="refused",
                            method=False, kwargs=dict(alpha=0.5)),
    "selu": Unary(lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), kinks=(0.0,),
                  ints="refused", method=False),
    "leaky_relu": Unary(lambda x: np.where(x > 0, x, 0.01 * x), kinks=(0.0,), ints="refused", method=False,
                        edges=[(NAN, NAN)]),
    "leaky_relu[0.2]": Unary(lambda x: np.where(x > 0, x, 0.2 * x), kinks=(0.0,), ints="refused", method=False,
                             kwargs=dict(negative_slope=0.2)),
    "hardtanh": Unary(lambda x: np.clip(x, -1, 1), kinks=(-1.0, 1.0), ints="exact", method=False,
                      edges=[(NAN, NAN), (-INF, -1.0)]),
    "hardtanh[-0.5,2]": Unary(lambda x: np.clip(x, -0.5, 2), kinks=(-0.5, 2.0), ints="exact", method=False,
                              kwargs=dict(min_val=-0.5, max_val=2.0)),
    "softplus": Unary(_softplus(1.0, 20.0), lo=-5.0, hi=25.0, kinks=(20.0,), ints="refused", method=False,
                      edges=[(30.0, 30.0), (-1000.0, 0.0)]),
    "softplus[beta=2,threshold=5]": Unary(_softplus(2.0, 5.0), kinks=(2.5,), ints="refused", method=False,
                                          kwargs=dict(beta=2.0, threshold=5.0)),
    "logsigmoid": Unary(lambda x: -np.logaddexp(0, -x), lo=-20.0, hi=20.0, ints="refused", method=False,
                        edges=[(-1000.0, -1000.0), (1000.0, 0.0), (0.0, -math.log(2))]),
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
    tol = dict(rtol=row.rtol64, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_edge_values(key):
    row = UNARY[key]
    if not row.edges:
        pytest.skip("no edge values listed")
    xs, want = zip(*row.edges)
    got = _apply(key, tg.tensor(list(xs), dtype=tg.float64)).tolist()
    for x, g, w in zip(xs, got, want):
        same = (math.isnan(g) and math.isnan(w)) or g == w or math.isclose(g, w, rel_tol=1e-12)
        assert same and (math.isnan(w) or math.copysign(1, g) == math.copysign(1, w)), (x, g, w)


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


@pytest.mark.parametrize("key", sorted(UNARY))
def test_unary_second_derivative(key):
    x = tg.tensor(_draw(UNARY[key], 6), requires_grad=True)  # away from kinks: piecewise ones too
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
    for t, rule in ((ints, row.ints), (bools, row.bools)):
        if rule == "float":  # computed as float32, as PyTorch
            got = _apply(key, t)
            assert got.dtype == tg.float32
            np.testing.assert_array_equal(got.numpy(), _apply(key, t.to(tg.float32)).numpy())
        elif rule == "refused":
            with pytest.raises(RuntimeError, match="not (implemented|supported) for"):
                _apply(key, t)
        elif rule == "same":
            got = _apply(key, t)
            assert got.dtype == t.dtype and got.tolist() == t.tolist()
        else:  # "exact" for int64, "int" for bools: int64 out, the oracle's value
            got = _apply(key, t)
            assert got.dtype == tg.int64
            want = row.oracle(t.numpy().astype(np.float64))
            np.testing.assert_array_equal(got.numpy(), want.astype(np.int64))


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


# Gradients where the derivative jumps or blows up: PyTorch's conventions, as closed forms.
KINK_GRADIENTS = [
    ("sign", {}, 0.0, 0.0),
    ("floor", {}, 1.0, 0.0),
    ("round", {}, 0.5, 0.0),
    ("frac", {}, 2.0, 1.0),
    ("leaky_relu", {"negative_slope": 0.2}, 0.0, 0.2),
    ("hardtanh", {}, 1.0, 0.0),
    ("hardtanh", {}, -1.0, 0.0),
    ("elu", {"alpha": 0.5}, 0.0, 0.5),
    ("selu", {}, 0.0, SELU_ALPHA * SELU_SCALE),
    ("asin", {}, 1.0, INF),
    ("acos", {}, -1.0, -INF),
    ("atanh", {}, 1.0, INF),
    ("erfinv", {}, 1.0, INF),
    ("erfinv", {}, 0.0, math.sqrt(math.pi) / 2),
    ("acosh", {}, 1.0, INF),
    ("rsqrt", {}, 0.0, -INF),
    ("reciprocal", {}, 0.0, -INF),
    ("log2", {}, 0.0, INF),
    ("softplus", {}, 20.5, 1.0),
    ("gelu", {}, 0.0, 0.5),
    ("silu", {}, 0.0, 0.5),
    ("logsigmoid", {}, 0.0, 0.5),
]


@pytest.mark.parametrize("name, kwargs, x, want", KINK_GRADIENTS)
def test_gradient_conventions_at_kinks_and_edges(name, kwargs, x, want):
    xt = tg.tensor([x], dtype=tg.float64, requires_grad=True)
    getattr(tg, name)(xt, **kwargs).sum().backward()
    assert xt.grad.item() == pytest.approx(want, rel=1e-12)


def test_a_non_finite_gradient_does_not_leak_through_a_zero_derivative():
    # the derivative of a step is exactly 0, whatever the upstream gradient (PyTorch's zeros_like)
    x = tg.tensor([0.3, 1.7], requires_grad=True)
    (tg.floor(x) * tg.tensor([INF, NAN])).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"])
def test_in_place_forms_of_the_older_operations(name):
    x = tg.tensor(RNG.uniform(0.1, 2.0, 7), requires_grad=True)
    want = getattr(x, name)().detach().numpy()
    y = x * 1
    assert getattr(y, name + "_")() is y
    np.testing.assert_array_equal(y.detach().numpy(), want)
    w = RNG.uniform(-1, 1, 7)
    (y * tg.tensor(w)).sum().backward()
    xt = tg.tensor(x.detach().numpy(), requires_grad=True)
    (getattr(xt, name)() * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, kwargs", [("silu", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
                                          ("leaky_relu", {"negative_slope": 0.1}), ("hardtanh", {})])
def test_activation_inplace_flag_writes_into_the_input(name, kwargs):
    x = tg.tensor([-1.5, 0.5, 2.0], dtype=tg.float64)
    want = getattr(tg, name)(x, **kwargs).tolist()
    y = x.clone()
    assert getattr(tg, name)(y, inplace=True, **kwargs) is y
    assert y.tolist() == want and y._version == 1


def test_gelu_refuses_an_unknown_approximation():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        tg.gelu(tg.tensor([1.0]), approximate="fast")


def test_round_with_decimals_rounds_half_to_even_in_the_tensors_dtype():
    # 2.675 is 2.67499999999999982236431605997495353221893310546875, but 2.675 * 100 rounds to 267.5,
    # and then to even: 2.68, as PyTorch (which scales the same way); 0.125 * 100 = 12.5 gives 0.12.
    assert tg.round(tg.tensor([2.675], dtype=tg.float64), decimals=2).item() == 2.68
    assert tg.round(tg.tensor([0.125, 0.135], dtype=tg.float64), decimals=2).tolist() == [0.12, 0.14]
    assert tg.tensor([1, 2]).round().tolist() == [1, 2]
