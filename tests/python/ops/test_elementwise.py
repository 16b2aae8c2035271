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


# ---------------------------------------------------------------------------------------------
# Two-input functions: one row each, (NumPy oracle, interval of a, interval of b).

BINARY = {
    "maximum": (np.maximum, (-3, 3), (-3, 3)),
    "minimum": (np.minimum, (-3, 3), (-3, 3)),
    "fmax": (np.fmax, (-3, 3), (-3, 3)),
    "fmin": (np.fmin, (-3, 3), (-3, 3)),
    "fmod": (np.fmod, (-5, 5), (0.5, 2)),
    "remainder": (np.remainder, (-5, 5), (-2, -0.5)),
    "floor_divide": (np.floor_divide, (-5, 5), (0.5, 2)),
    "atan2": (np.arctan2, (-3, 3), (-3, 3)),
}
DIFFERENTIABLE = sorted(set(BINARY) - {"floor_divide"})


def _pair(name, n=30):
    _, (alo, ahi), (blo, bhi) = BINARY[name]
    return RNG.uniform(alo, ahi, n), RNG.uniform(blo, bhi, n)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_binary_values(name, dtype):
    a, b = (v.astype(dtype) for v in _pair(name))
    got = getattr(tg, name)(tg.tensor(a), tg.tensor(b))
    assert got.dtype == getattr(tg, dtype)
    want = BINARY[name][0](a.astype(np.float64), b.astype(np.float64))
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got.numpy(), want, **tol)
    np.testing.assert_array_equal(getattr(tg.tensor(a), name)(tg.tensor(b)).numpy(), got.numpy())


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasts(name):
    a, b = RNG.uniform(1, 3, (3, 1)), RNG.uniform(0.5, 2, (4,))
    got = getattr(tg, name)(tg.tensor(a), tg.tensor(b))
    np.testing.assert_allclose(got.numpy(), BINARY[name][0](a, b), rtol=1e-12)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_binary_gradients_against_central_differences(name):
    f = BINARY[name][0]
    a, b = _pair(name)
    w = RNG.uniform(-1, 1, a.shape)
    at, bt = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    (getattr(tg, name)(at, bt) * tg.tensor(w)).sum().backward()
    h = 1e-6
    np.testing.assert_allclose(at.grad.numpy(), w * (f(a + h, b) - f(a - h, b)) / (2 * h), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bt.grad.numpy(), w * (f(a, b + h) - f(a, b - h)) / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_binary_second_derivatives(name):
    a, b = (tg.tensor(v, requires_grad=True) for v in _pair(name, 5))
    assert tg.autograd.gradgradcheck(lambda x, y: getattr(tg, name)(x, y), (a, b))


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_extremum_ties_share_the_gradient_and_nan_rules(name):
    a = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor([1.0, 5.0, 0.0], dtype=tg.float64, requires_grad=True)
    getattr(tg, name)(a, b).sum().backward()
    a_wins = [0.5, 0.0, 1.0] if name in ("maximum", "fmax") else [0.5, 1.0, 0.0]
    assert a.grad.tolist() == a_wins and b.grad.tolist() == [1 - v for v in a_wins]
    nan = tg.tensor([NAN, 1.0, NAN])
    other = tg.tensor([2.0, NAN, NAN])
    got = getattr(tg, name)(nan, other).tolist()
    if name.startswith("f"):  # a NaN is ignored (NaN only when both are)
        assert got[:2] == [2.0, 1.0] and math.isnan(got[2])
    else:
        assert all(math.isnan(v) for v in got)


def test_nan_gradient_conventions_of_fmax_and_maximum():
    for name, want_a in (("fmax", [0.0, 1.0]), ("maximum", [1.0, 1.0])):
        a = tg.tensor([NAN, 1.0], requires_grad=True)
        b = tg.tensor([2.0, NAN], requires_grad=True)
        getattr(tg, name)(a, b).sum().backward()
        assert a.grad.tolist() == want_a, name


def test_integer_division_family_matches_python():
    pairs = [(a, b) for a in (-7, -5, 0, 5, 7, 2**62) for b in (-3, -2, 2, 3)]
    a = tg.tensor([p[0] for p in pairs])
    b = tg.tensor([p[1] for p in pairs])
    assert (a // b).tolist() == [x // y for x, y in pairs]
    assert (a % b).tolist() == [x % y for x, y in pairs]
    assert tg.fmod(a, b).tolist() == [int(math.fmod(x, y)) for x, y in pairs]
    assert (a // b).dtype == tg.int64 and tg.maximum(a, b).tolist() == [max(x, y) for x, y in pairs]
    for f in (lambda: a // 0, lambda: a % tg.tensor(0), lambda: tg.fmod(a, 0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f()


def test_float_floor_division_and_remainder_match_python():
    xs = [5.0, -5.0, 0.0, -0.0, 1.0, -1.0, 7.5]
    ys = [2.0, 0.0, -0.0, 3.0, INF, -INF, -2.5]
    pairs = [(x, y) for x in xs for y in ys]
    a, b = (tg.tensor([p[i] for p in pairs], dtype=tg.float64) for i in (0, 1))

    def py(op, x, y):
        try:
            return op(x, y)
        except ZeroDivisionError:
            return np.floor_divide(x, y) if op is float.__floordiv__ else np.remainder(x, y)

    for got, op in (((a // b).tolist(), float.__floordiv__), ((a % b).tolist(), float.__mod__)):
        for (x, y), g in zip(pairs, got):
            w = float(py(op, x, y))
            if op is float.__mod__ and w == 0.0:  # a zero remainder keeps fmod's sign, as PyTorch's
                w = math.copysign(0.0, math.fmod(x, y))
            assert (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w)), (
                op, x, y, g, w)


def test_operators_with_scalars_and_reflected_forms():
    t = tg.tensor([7, -7])
    assert (t // 2).tolist() == [3, -4] and (t % 3).tolist() == [1, 2]
    assert (15 // t).tolist() == [2, -3] and (15 % t).tolist() == [1, -6]
    assert (t // 2.5).dtype == tg.float32 and (t % 2.5).tolist() == [2.0, 0.5]
    assert (1 << tg.tensor([2, 3])).tolist() == [4, 8] and (tg.tensor([-8]) >> 1).tolist() == [-4]
    u = tg.tensor([7.0, -7.0])
    before = u._version
    u //= 2
    u %= 3
    assert u.tolist() == [0.0, 2.0] and u._version == before + 2
    with pytest.raises(TypeError):
        t // "2"


def test_floor_divide_has_no_derivative():
    x = tg.tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for floor_divide is not implemented"):
        (x // 2).sum().backward()


def test_division_family_dtype_rules():
    ints, bools = tg.tensor([3, 4]), tg.tensor([True, False])
    assert tg.atan2(ints, ints).dtype == tg.float32
    assert tg.maximum(bools, tg.tensor([False, False])).tolist() == [True, False]
    for name in ("fmod", "remainder", "floor_divide"):
        with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
            getattr(tg, name)(bools, bools)


def test_lerp_addcmul_addcdiv_values_and_gradients():
    s, e, w = (RNG.uniform(-2, 2, 6) for _ in range(3))
    st, et, wt = (tg.tensor(v, requires_grad=True) for v in (s, e, w))
    out = tg.lerp(st, et, wt)
    np.testing.assert_allclose(out.detach().numpy(), s + w * (e - s), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(st.grad.numpy(), 1 - w, rtol=1e-12)
    np.testing.assert_allclose(et.grad.numpy(), w, rtol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), e - s, rtol=1e-12)
    assert tg.lerp(tg.tensor([0.0, 10.0]), tg.tensor([10.0, 20.0]), 0.5).tolist() == [5.0, 15.0]
    x, a, b = (tg.tensor(v, requires_grad=True) for v in (s, e, w + 3))
    out = tg.addcmul(x, a, b, value=0.5)
    np.testing.assert_allclose(out.detach().numpy(), s + 0.5 * e * (w + 3), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 0.5 * (w + 3), rtol=1e-12)
    x, a, b = (tg.tensor(v, requires_grad=True) for v in (s, e, w + 3))
    out = x.addcdiv(a, b, value=-2)
    np.testing.assert_allclose(out.detach().numpy(), s - 2 * e / (w + 3), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * e / (w + 3) ** 2, rtol=1e-12)
    assert tg.addcmul(tg.tensor([1, 2]), tg.tensor([3, 4]), tg.tensor([5, 6])).tolist() == [16, 26]
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        tg.addcdiv(tg.tensor([1]), tg.tensor([3]), tg.tensor([2]))
    y = tg.tensor([1.0])
    assert y.addcmul_(tg.tensor([2.0]), tg.tensor([3.0])) is y and y.tolist() == [7.0]


def test_nan_to_num_values_and_gradient():
    x = tg.tensor([NAN, INF, -INF, 1.5], requires_grad=True)
    y = tg.nan_to_num(x)
    big = float(np.finfo(np.float32).max)
    assert y.tolist() == [0.0, big, -big, 1.5]
    assert x.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0).tolist() == [1.0, 2.0, -2.0, 1.5]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert tg.nan_to_num(tg.tensor([1, 2])).tolist() == [1, 2]
    d = tg.tensor([INF], dtype=tg.float64)
    assert d.nan_to_num().item() == np.finfo(np.float64).max


def test_isnan_isinf_isfinite_against_numpy():
    v = np.array([NAN, INF, -INF, 0.0, -1.5])
    for name in ("isnan", "isinf", "isfinite"):
        for dtype in (tg.float32, tg.float64):
            t = tg.tensor(v, dtype=dtype)
            assert getattr(tg, name)(t).tolist() == getattr(np, name)(v).tolist()
            assert getattr(t, name)().dtype == tg.bool
        assert getattr(tg, name)(tg.tensor([1, 2])).tolist() == [name == "isfinite"] * 2
        assert getattr(tg, name)(tg.tensor([True])).tolist() == [name == "isfinite"]


def test_logical_operations_against_numpy():
    a = np.array([0.0, 2.0, -1.0, 0.0])
    b = np.array([0, 0, 3, 5])
    for name in ("logical_and", "logical_or", "logical_xor"):
        got = getattr(tg, name)(tg.tensor(a), tg.tensor(b))
        assert got.dtype == tg.bool and got.tolist() == getattr(np, name)(a, b).tolist()
        assert getattr(tg.tensor(a), name)(tg.tensor(b)).tolist() == got.tolist()
    assert tg.logical_not(tg.tensor(a)).tolist() == np.logical_not(a).tolist()
    assert tg.tensor(b).logical_not().tolist() == np.logical_not(b).tolist()


def test_bitwise_operations_against_python_integers():
    xs, ys = [12, -7, 0, 2**62, -(2**63)], [10, 3, -1, 5, 1]
    a, b = tg.tensor(xs), tg.tensor(ys)
    assert tg.bitwise_and(a, b).tolist() == [x & y for x, y in zip(xs, ys)]
    assert tg.bitwise_or(a, b).tolist() == [x | y for x, y in zip(xs, ys)]
    assert a.bitwise_xor(b).tolist() == [x ^ y for x, y in zip(xs, ys)]
    assert tg.bitwise_not(a).tolist() == [~x for x in xs] and a.bitwise_not().tolist() == [~x for x in xs]
    shifts = tg.tensor([0, 1, 63, 64, -1])
    assert (tg.tensor([1, 1, 1, 1, 1]) << shifts).tolist() == [1, 2, -(2**63), 0, 0]
    assert (tg.tensor([-8, -8, -8, -8, 8]) >> shifts).tolist() == [-8, -4, -1, -1, 0]
    p, q = tg.tensor([True, True, False]), tg.tensor([True, False, False])
    assert tg.bitwise_and(p, q).tolist() == [True, False, False]
    assert tg.bitwise_xor(p, q).dtype == tg.bool and tg.bitwise_not(p).tolist() == [False, False, True]


@pytest.mark.parametrize("f", [lambda t: tg.bitwise_and(t, t), lambda t: tg.bitwise_or(t, 1), lambda t: t << 1,
                               lambda t: tg.bitwise_not(t), lambda t: tg.tensor([True]) << tg.tensor([True])])
def test_bitwise_on_floats_is_refused(f):
    with pytest.raises((RuntimeError, TypeError), match="not implemented for|only implemented on"):
        f(tg.tensor([1.0]))


def test_pow_in_place():
    x = tg.tensor([1.5, 2.0], dtype=tg.float64, requires_grad=True)
    y = x * 1
    assert y.pow_(3) is y and y.tolist() == [1.5**3, 8.0]
    y.sum().backward()
    assert x.grad.tolist() == [3 * 1.5**2, 12.0]
    z = tg.tensor([2.0, 3.0])
    z.pow_(tg.tensor([2.0, 0.5]))
    assert z.tolist() == pytest.approx([4.0, math.sqrt(3.0)])


NATIVE_DOCS = sorted({_name(k) for k in UNARY} | set(BINARY) | {
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "bitwise_not",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "nan_to_num", "lerp",
    "addcmul", "addcdiv"})


@pytest.mark.parametrize("name", NATIVE_DOCS)
def test_native_docstring_examples_run(name):
    fn = getattr(tg, name)
    test = doctest.DocTestParser().get_doctest(fn.__doc__ or "", {}, name, None, 0)
    assert test.examples, f"tg.{name} needs a docstring with a >>> example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"an example of tg.{name} failed (output above)"


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_divisor_without_gradient_keeps_nothing_and_the_dividend_still_gets_one(name):
    # found by the differential test: x.fmod(0.75) saved nothing and then lacked its inputs
    x = tg.tensor([2.5, -1.0], dtype=tg.float64, requires_grad=True)
    getattr(x, name)(0.75).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    y = tg.tensor([2.5], requires_grad=True)
    d = tg.tensor([0.75])
    z = getattr(tg, name)(y, d)
    d.mul_(2)  # the divisor is not saved, so writing to it afterwards is allowed
    z.sum().backward()
    assert y.grad.tolist() == [1.0]


def test_elu_gradient_at_nan_takes_the_positive_branch():
    # PyTorch's elu backward tests x <= 0 for the negative branch, so a NaN input gets grad * scale
    # (found by the differential test)
    x = tg.tensor([NAN, -1.0], dtype=tg.float64, requires_grad=True)
    tg.selu(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([SELU_SCALE, SELU_SCALE * SELU_ALPHA * math.exp(-1.0)], rel=1e-12)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_gradient_when_both_are_nan_goes_to_the_first(name):
    # PyTorch's convention (found by the differential test)
    a = tg.tensor([NAN], requires_grad=True)
    b = tg.tensor([NAN], requires_grad=True)
    getattr(tg, name)(a, b).sum().backward()
    assert a.grad.tolist() == [1.0] and b.grad.tolist() == [0.0]


def test_atan2_gradient_at_the_origin_is_zero():
    # PyTorch's convention (found by the differential test); elsewhere b/(a²+b²) and -a/(a²+b²)
    a = tg.tensor([0.0, 1.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor([0.0, 2.0], dtype=tg.float64, requires_grad=True)
    tg.atan2(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 2 / 5] and b.grad.tolist() == [0.0, -1 / 5]


def test_bitwise_operators_are_bitwise_on_integers_and_logical_on_bools():
    # PyTorch: `&`, `|`, `^`, `~` are bitwise_and/or/xor/not.
    np.testing.assert_array_equal((tg.tensor([12, -1]) & tg.tensor([10, 6])).numpy(), [12 & 10, -1 & 6])
    np.testing.assert_array_equal((tg.tensor([12]) | 3).numpy(), [15])
    np.testing.assert_array_equal((tg.tensor([12]) ^ 10).numpy(), [6])
    np.testing.assert_array_equal((~tg.tensor([0, 5])).numpy(), [-1, -6])
    np.testing.assert_array_equal((tg.tensor([True, False]) ^ True).numpy(), [False, True])
    np.testing.assert_array_equal((~tg.tensor([True, False])).numpy(), [False, True])
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        tg.tensor([1.0]) & tg.tensor([1.0])


def test_asinh_of_huge_values_does_not_overflow():
    # found by test_no_crash: std's asinh squares its argument (3e38 as float32 gave inf)
    for dtype, npdt in ((tg.float32, np.float32), (tg.float64, np.float64)):
        x = np.array([3e38, -3e38, 1e19, 2.0], dtype=npdt)
        np.testing.assert_allclose(tg.tensor(x, dtype=dtype).asinh().numpy(), np.arcsinh(x), rtol=1e-6)
