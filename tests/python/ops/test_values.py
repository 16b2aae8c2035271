"""Forward values, result dtypes and errors of the operations of API.md §1, with NumPy as the oracle.

test_gradients.py checks gradients (and forward values) in float64 on non-empty shapes; this file covers
what it leaves out: float32 and the int64/bool dtypes PyTorch accepts, the dtype each operation gives
(PyTorch's promotion rules), zero-size and 0-d shapes, Python scalars of each kind on both sides, which
results are views of their input (shared memory and version counter, as NumPy's views), in-place writes
and item assignment, factories, and the errors (type, and the words that say what went wrong).
"""

import itertools
import operator

import numpy as np
import pytest
from fd_inputs import augmented_assign
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

F32, F64, I64, BOOL = tg.float32, tg.float64, tg.int64, tg.bool
NP = {F32: np.float32, F64: np.float64, I64: np.int64, BOOL: np.bool_}
DTYPES = [F32, F64, I64, BOOL]
IDS = {F32: "f32", F64: "f64", I64: "i64", BOOL: "bool"}
TOL = {F32: {"rtol": 2e-5, "atol": 2e-6}, F64: {"rtol": 1e-12, "atol": 1e-12}}

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3)


def elements(dtype, lo=-3.0, hi=3.0):
    if dtype is BOOL:
        return st.booleans()
    if dtype is I64:
        return st.integers(int(lo), int(hi))
    return st.floats(lo, hi, width=32 if dtype is F32 else 64, allow_subnormal=False)


def draw_array(data, dtype, shape, lo=-3.0, hi=3.0):
    return data.draw(hnp.arrays(NP[dtype], shape, elements=elements(dtype, lo, hi)), label=f"{IDS[dtype]}{shape}")


def check(t, expected, dtype=None):
    """``t`` has NumPy's shape, the dtype asked for (default: the expected array's), and its values."""
    expected = np.asarray(expected)
    dtype = dtype or {v: k for k, v in NP.items()}[expected.dtype.type]
    assert t.dtype == dtype, (t.dtype, dtype)
    assert t.shape == expected.shape
    got = t.numpy()
    assert got.dtype == NP[dtype]
    if dtype in TOL:
        np.testing.assert_allclose(got, expected.astype(NP[dtype]), **TOL[dtype])
    else:
        np.testing.assert_array_equal(got, expected)


def shape_str(shape):
    return str(list(shape))


def names_shapes(message, *shapes):
    """Each shape appears in the message, as ``[2, 3]`` (or ``2x3`` in a matrix-product message)."""
    for s in shapes:
        forms = (shape_str(s), "x".join(map(str, s)))
        assert any(f in message for f in forms), (s, message)


# ---------------------------------------------------------------------------------------------------------
# PyTorch's promotion rules (the oracle for result dtypes)
# ---------------------------------------------------------------------------------------------------------

CATEGORY = {BOOL: 0, I64: 1, F32: 2, F64: 2}
ORDER = {BOOL: 0, I64: 1, F32: 2, F64: 3}


def promote(a, b):
    return a if ORDER[a] >= ORDER[b] else b


def promote_operands(a, a_ndim, b, b_ndim):
    """A 0-dim tensor beside one with dimensions counts only when its category is higher."""
    if (a_ndim == 0) != (b_ndim == 0):
        dimmed, zero = (a, b) if b_ndim == 0 else (b, a)
        return promote(dimmed, zero) if CATEGORY[zero] > CATEGORY[dimmed] else dimmed
    return promote(a, b)


def scalar_dtype(s):
    return BOOL if isinstance(s, bool) else I64 if isinstance(s, int) else F32


def with_scalar(t_dtype, s):
    """A Python scalar only counts when its category is higher than the tensor's (then: the default dtype)."""
    sd = scalar_dtype(s)
    return sd if CATEGORY[sd] > CATEGORY[t_dtype] else t_dtype


BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}


def binary_result(op, dt, bool_operand):
    """The dtype of ``a op b`` computed in ``dt``, or None when PyTorch refuses it."""
    if op == "-" and bool_operand:
        return None
    if op == "/" and dt in (I64, BOOL):
        return F32
    if op == "**" and dt is BOOL:
        return None
    return dt


def np_binary(op, a, b, dt):
    """NumPy's value of ``a op b`` computed in tapegrad dtype ``dt``."""
    a, b = np.asarray(a).astype(NP[dt]), np.asarray(b).astype(NP[dt])
    with np.errstate(all="ignore"):
        if op == "/":
            if dt in (I64, BOOL):
                return np.true_divide(a.astype(np.float32), b.astype(np.float32))
            return np.true_divide(a, b)
        if dt is BOOL:
            return {"+": np.logical_or, "*": np.logical_and}[op](a, b)
        return BINARY[op](a, b)


# ---------------------------------------------------------------------------------------------------------
# element-wise, one tensor
# ---------------------------------------------------------------------------------------------------------


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


UNARY = {
    "neg": (lambda t: t.neg(), np.negative),
    "-t": (lambda t: -t, np.negative),
    "abs": (lambda t: t.abs(), np.abs),
    "abs()": (lambda t: abs(t), np.abs),
    "exp": (lambda t: t.exp(), np.exp),
    "log": (lambda t: t.log(), np.log),
    "sqrt": (lambda t: t.sqrt(), np.sqrt),
    "sin": (lambda t: t.sin(), np.sin),
    "cos": (lambda t: t.cos(), np.cos),
    "tanh": (lambda t: t.tanh(), np.tanh),
    "sigmoid": (lambda t: t.sigmoid(), sigmoid),
    "relu": (lambda t: t.relu(), lambda x: np.maximum(x, np.zeros((), x.dtype))),
    "tg.sqrt": (lambda t: tg.sqrt(t), np.sqrt),
}
INTEGER_KEEPING = ("neg", "-t", "abs", "abs()", "relu")  # int64 stays int64; bool is refused


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@pytest.mark.parametrize("name", list(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary_values_and_dtype(name, dtype, data):
    f, ref = UNARY[name]
    # log and sqrt of negative numbers are NaN in both; the domain includes them on purpose
    a = draw_array(data, dtype, data.draw(SHAPES, label="shape"), -4.0, 4.0)
    t = tg.tensor(a)
    assert t.dtype == dtype
    if dtype is BOOL and name in INTEGER_KEEPING:
        with pytest.raises(RuntimeError, match="(?i)bool"):
            f(t)
        return
    if dtype in (I64, BOOL):
        want = I64 if name in INTEGER_KEEPING else F32  # as PyTorch: integer math stays, the rest is float32
    else:
        want = dtype
    with np.errstate(all="ignore"):
        expected = ref(a.astype(NP[want]))
    check(f(t), expected, want)
    np.testing.assert_array_equal(t.numpy(), a)  # the input is untouched


def test_unary_special_values_follow_numpy():
    x = np.array([-1.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e-30, 90.0, -90.0], dtype=np.float32)
    t = tg.tensor(x)
    with np.errstate(all="ignore"):
        for name, (f, ref) in UNARY.items():
            # atol: one subnormal step (exp(-90) is 8e-40, below float32's smallest normal)
            np.testing.assert_allclose(f(t).numpy(), ref(x), rtol=2e-6, atol=2e-45, err_msg=name)


# ---------------------------------------------------------------------------------------------------------
# element-wise, two tensors (broadcasting, promotion)
# ---------------------------------------------------------------------------------------------------------

DTYPE_PAIRS = [(F32, F32), (F64, F64), (F32, F64), (F64, F32), (I64, I64), (I64, F32), (F64, I64),
               (BOOL, BOOL), (BOOL, I64), (F32, BOOL), (BOOL, F64)]


def operand_range(op, dtype, side):
    if op == "**":
        if dtype in (I64, BOOL):
            return (0.0, 4.0) if side == "b" else (-4.0, 4.0)  # negative integer powers: tested apart
        return (0.125, 3.0) if side == "a" else (-2.0, 2.0)
    if op == "/" and side == "b" and dtype not in (I64, BOOL):
        return (0.5, 3.0)  # floats: nonzero divisors (integers may divide by 0: inf/nan in both)
    return (-4.0, 4.0)


@pytest.mark.parametrize("da, db", DTYPE_PAIRS, ids=[f"{IDS[a]}-{IDS[b]}" for a, b in DTYPE_PAIRS])
@pytest.mark.parametrize("op", list(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary_tensor_tensor(op, da, db, data):
    sa, sb = data.draw(PAIRS, label="shapes").input_shapes
    a = draw_array(data, da, sa, *operand_range(op, da, "a"))
    b = draw_array(data, db, sb, *operand_range(op, db, "b"))
    dt = promote_operands(da, len(sa), db, len(sb))
    want = binary_result(op, dt, BOOL in (da, db))
    spelling = data.draw(st.sampled_from(["op", "method", "functional"]), label="spelling")
    name = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow"}[op]

    def f(x, y):
        if spelling == "op":
            return BINARY[op](x, y)
        if spelling == "method":
            return getattr(x, name)(y)
        return getattr(tg, name)(x, y)

    ta, tb = tg.tensor(a), tg.tensor(b)
    if want is None:
        with pytest.raises(RuntimeError, match="(?i)bool"):
            f(ta, tb)
        return
    check(f(ta, tb), np_binary(op, a, b, dt), want)


def test_binary_broadcast_error_names_both_shapes():
    for op in BINARY.values():
        with pytest.raises(RuntimeError) as e:
            op(tg.ones(2, 3), tg.ones(4, 3))
        names_shapes(str(e.value), (2, 3), (4, 3))
        assert "non-singleton dimension 0" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        _ = tg.ones(2, 0) < tg.ones(2, 3)
    names_shapes(str(e.value), (2, 0), (2, 3))


# ---------------------------------------------------------------------------------------------------------
# element-wise, a tensor and a Python scalar, either side
# ---------------------------------------------------------------------------------------------------------

SCALARS = st.one_of(st.integers(-3, 3), st.floats(-2.5, 2.5, allow_subnormal=False).filter(lambda v: v != 0.0 or True),
                    st.booleans())


def scalar_case(op, side, dtype, s):
    """(result dtype or None when refused or out of this test's domain, reason)"""
    dt = with_scalar(dtype, s)
    if op == "-" and (dtype is BOOL or isinstance(s, bool)):
        return None
    if op == "/" and dt in (I64, BOOL):
        return F32
    if op == "**":
        if dt is BOOL:
            return BOOL if side == "right" else None  # t ** True is t, True ** t is refused (PyTorch)
        if dt is I64 and side == "right" and s < 0:
            return None  # "Integers to negative integer powers are not allowed."
    return dt


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("op", list(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary_with_python_scalar(op, side, dtype, data):
    s = data.draw(SCALARS, label="scalar")
    lo, hi = (0.125, 3.0) if op == "**" and dtype not in (I64, BOOL) and side == "right" else (-3.0, 3.0)
    if op == "**" and side == "left" and dtype in (I64, BOOL):
        lo = 0.0  # int ** negative int tensor exponent: tested apart
    a = draw_array(data, dtype, data.draw(SHAPES, label="shape"), lo, hi)
    if op == "**" and side == "left" and not isinstance(s, bool):
        s = abs(s)  # a negative base to a fractional power is NaN; that is checked in NumPy terms elsewhere
    if op == "/" and side == "right" and s == 0:
        s = 2
    want = scalar_case(op, side, dtype, s)
    t = tg.tensor(a)

    def f():
        return BINARY[op](t, s) if side == "right" else BINARY[op](s, t)

    if want is None:
        with pytest.raises(RuntimeError, match="(?i)bool|negative integer powers"):
            f()
        return
    dt = with_scalar(dtype, s)
    sv = np.asarray(s).astype(NP[dt])
    if dt is BOOL and op != "/":
        expected = {"+": np.logical_or, "*": np.logical_and, "**": lambda x, y: x | ~y}[op](a, sv)
        if side == "left":
            expected = {"+": np.logical_or, "*": np.logical_and}[op](sv, a)
    else:
        x, y = (a, sv) if side == "right" else (sv, a)
        expected = np_binary(op, x, y, dt)
    out = f()
    check(out, expected, want)
    if dtype in (F32, F64):
        assert out.dtype == dtype  # a Python scalar never changes a float tensor's dtype


def test_true_division_of_integers_is_float32():
    check(tg.tensor([5, -5, 1, 0]) / tg.tensor([2, 2, 0, 0]),
          np.array([2.5, -2.5, np.inf, np.nan], dtype=np.float32))
    check(tg.tensor([5, -7]) / 2, np.array([2.5, -3.5], dtype=np.float32))
    check(tg.tensor([True, False]) / True, np.array([1.0, 0.0], dtype=np.float32))
    check(3 / tg.tensor([2, -4]), np.array([1.5, -0.75], dtype=np.float32))


def test_integer_powers_with_negative_exponents_truncate_like_pytorch():
    base = np.array([2, 1, -1, -1, 0, -2, 3, 5])
    exp = np.array([-1, -3, -1, -2, 3, -2, 0, 2])
    # 1/x^|y| truncated toward zero: 1 and -1 keep their magnitude, every other base gives 0
    want = np.array([0, 1, -1, 1, 0, 0, 1, 25])
    check(tg.tensor(base) ** tg.tensor(exp), want)
    check((-1) ** tg.tensor([0, 1, 2, 3, -1, -2]), np.array([1, -1, 1, -1, -1, 1]))
    check(2 ** tg.tensor([0, 3, -1]), np.array([1, 8, 0]))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tg.tensor([1, 2]) ** -1
    check(tg.tensor([1, 2]) ** -1.0, np.array([1.0, 0.5], dtype=np.float32))  # a float exponent: float32


def test_bool_arithmetic_follows_pytorch():
    a, b = tg.tensor([True, True, False, False]), tg.tensor([True, False, True, False])
    check(a + b, np.array([True, True, True, False]))
    check(a * b, np.array([True, False, False, False]))
    check(a + 1, np.array([2, 2, 1, 1]))
    check(a * 2.5, np.array([2.5, 2.5, 0, 0], dtype=np.float32))
    check(a + tg.tensor([1, 2, 3, 4]), np.array([2, 3, 3, 4]))
    for f in (lambda: a - b, lambda: a - 1, lambda: 1 - a, lambda: tg.tensor([1.0]) - True, lambda: -a,
              lambda: a.neg(), lambda: a.abs(), lambda: a.relu(), lambda: a ** b, lambda: a.argmax()):
        with pytest.raises(RuntimeError, match="(?i)bool"):
            f()


# ---------------------------------------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------------------------------------

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
               "!=": operator.ne}
CMP_METHODS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


@pytest.mark.parametrize("da, db", DTYPE_PAIRS, ids=[f"{IDS[a]}-{IDS[b]}" for a, b in DTYPE_PAIRS])
@pytest.mark.parametrize("op", list(COMPARISONS))
@SETTINGS
@given(data=st.data())
def test_comparisons_give_bool(op, da, db, data):
    sa, sb = data.draw(PAIRS, label="shapes").input_shapes
    # a coarse grid, so that equal values (ties) are common
    a = draw_array(data, da, sa, -2, 2).round(0) if da in TOL else draw_array(data, da, sa, -2, 2)
    b = draw_array(data, db, sb, -2, 2).round(0) if db in TOL else draw_array(data, db, sb, -2, 2)
    ta, tb = tg.tensor(a), tg.tensor(b)
    expected = COMPARISONS[op](a, b)
    check(COMPARISONS[op](ta, tb), expected, BOOL)
    check(getattr(ta, CMP_METHODS[op])(tb), expected, BOOL)
    s = data.draw(st.one_of(st.integers(-2, 2), st.sampled_from([-0.5, 0.0, 1.5])), label="scalar")
    check(COMPARISONS[op](ta, s), COMPARISONS[op](a, s), BOOL)
    check(COMPARISONS[op](s, ta), COMPARISONS[op](s, a), BOOL)


def test_comparisons_with_nan():
    x = tg.tensor([float("nan"), 1.0])
    check(x == x, np.array([False, True]))
    check(x != x, np.array([True, False]))
    check(x < 2.0, np.array([False, True]))


# ---------------------------------------------------------------------------------------------------------
# clamp
# ---------------------------------------------------------------------------------------------------------

BOUNDS = st.one_of(st.none(), st.floats(-2.0, 2.0, width=32))


@pytest.mark.parametrize("dtype", [F32, F64], ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_clamp_floats(dtype, data):
    a = draw_array(data, dtype, data.draw(SHAPES, label="shape"))
    lo, hi = data.draw(BOUNDS, label="min"), data.draw(BOUNDS, label="max")
    assume(lo is not None or hi is not None)
    expected = a.copy()
    if lo is not None:
        expected = np.maximum(expected, NP[dtype](lo))
    if hi is not None:
        expected = np.minimum(expected, NP[dtype](hi))  # PyTorch: min(max(x, lo), hi), so hi wins if lo > hi
    t = tg.tensor(a)
    check(t.clamp(lo, hi), expected, dtype)
    check(t.clamp(min=lo, max=hi), expected, dtype)
    check(tg.clamp(t, lo, hi), expected, dtype)
    v0 = t._version
    assert t.clamp_(lo, hi) is t
    check(t, expected, dtype)
    assert t._version > v0


def test_clamp_dtypes_follow_the_bounds_types():
    x = np.array([-3, -1, 0, 2, 5])
    check(tg.tensor(x).clamp(-1, 2), np.clip(x, -1, 2))  # int bounds: int64
    check(tg.tensor(x).clamp(max=1), np.minimum(x, 1))
    check(tg.tensor(x).clamp(min=0.5), np.maximum(x, 0.5).astype(np.float32))  # a float bound: float32
    check(tg.tensor(x).clamp(-1.5, 2), np.clip(x, -1.5, 2).astype(np.float32))
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor(x).clamp_(min=0.5)
    with pytest.raises((RuntimeError, ValueError), match="min.*max|max.*min"):
        tg.tensor([1.0]).clamp()


# ---------------------------------------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------------------------------------

MATMUL_KINDS = ("1d@1d", "2d@1d", "1d@2d", "2d@2d", "batched@2d", "2d@batched", "batched@batched", "batched@1d",
                "1d@batched")


@pytest.mark.parametrize("dtype", [F32, F64, I64], ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_matmul_kinds(dtype, data):
    m, k, n = data.draw(st.tuples(*[st.integers(0, 4)] * 3), label="m,k,n")
    kind = data.draw(st.sampled_from(MATMUL_KINDS), label="kind")
    ba, bb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=2, min_side=0,
                                                         max_side=3), label="batch").input_shapes
    left, right = kind.split("@")
    sa = {"1d": (k,), "2d": (m, k), "batched": ba + (m, k)}[left]
    sb = {"1d": (k,), "2d": (k, n), "batched": bb + (k, n)}[right]
    a, b = draw_array(data, dtype, sa), draw_array(data, dtype, sb)
    ta, tb = tg.tensor(a), tg.tensor(b)
    expected = np.matmul(a, b)
    check(ta @ tb, expected, dtype)
    check(ta.matmul(tb), expected, dtype)
    check(tg.matmul(ta, tb), expected, dtype)
    if kind == "2d@2d":
        check(ta.mm(tb), expected, dtype)
        check(tg.mm(ta, tb), expected, dtype)
        # transposed operands are read in place
        check(tg.tensor(np.ascontiguousarray(a.T)).t() @ tb, expected, dtype)


def test_matmul_errors_name_both_shapes():
    for f, shapes in [
        (lambda: tg.ones(2, 3).mm(tg.ones(4, 5)), [(2, 3), (4, 5)]),
        (lambda: tg.ones(2, 3) @ tg.ones(4, 5), [(2, 3), (4, 5)]),
        (lambda: tg.ones(3).mm(tg.ones(3, 5)), [(3,), (3, 5)]),
        (lambda: tg.ones(2, 2, 3) @ tg.ones(3, 3, 5), [(2, 2, 3), (3, 3, 5)]),
        (lambda: tg.ones(3) @ tg.ones(4), [(3,), (4,)]),
        (lambda: tg.ones(2, 3) @ tg.ones(4), [(2, 3), (4,)]),
    ]:
        with pytest.raises(RuntimeError) as e:
            f()
        names_shapes(str(e.value), *shapes)
    with pytest.raises(RuntimeError, match="at least 1D"):
        tg.tensor(2.0) @ tg.ones(3)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_t_and_transpose_are_views(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3), label="shape")
    a = draw_array(data, dtype, shape)
    t = tg.tensor(a)
    if len(shape) <= 2:
        check(t.t(), a.T, dtype)
    else:
        with pytest.raises(RuntimeError, match="<= 2 dimensions"):
            t.t()
    n = max(len(shape), 1)
    d0, d1 = data.draw(st.tuples(st.integers(-n, n - 1), st.integers(-n, n - 1)), label="dims")
    v = t.transpose(d0, d1)
    expected = a if a.ndim == 0 else np.swapaxes(a, d0, d1)
    check(v, expected, dtype)
    assert_shares(t, v, a, lambda x: x if x.ndim == 0 else np.swapaxes(x, d0, d1))


def assert_shares(t, v, a, np_view):
    """``v`` is a view of ``t``: a write to t shows in v and back, and they share one version counter.
    ``np_view(array)`` is the same view in NumPy, the oracle for which elements change."""
    if a.size == 0:
        return
    base = a.copy()
    fill = np.asarray(1 if a.dtype == np.bool_ else 7).astype(a.dtype)
    ones = (np.asarray(0 if a.dtype == np.bool_ else 5).astype(a.dtype))
    v0 = t._version
    t.fill_(fill.item())  # write through the base
    base[...] = fill
    np.testing.assert_array_equal(v.numpy(), np_view(base))
    assert v._version == t._version > v0
    v.fill_(ones.item())  # write through the view
    np_view(base)[...] = ones
    np.testing.assert_array_equal(t.numpy(), base)
    assert v._version == t._version


# ---------------------------------------------------------------------------------------------------------
# shape operations
# ---------------------------------------------------------------------------------------------------------


def reshape_targets(shape):
    n = int(np.prod(shape))
    targets = [(-1,), (n,), (1, n), (n, 1), tuple(shape[::-1]), tuple(shape) + (1,), (1, -1)]
    if n == 1:
        targets.append(())
    if n == 0:
        targets += [(0, 5), (3, 0)]
    if len(shape) >= 2:
        targets += [(-1,) + tuple(shape[2:]), tuple(shape[:1]) + (-1,), tuple(shape[:-2]) + (shape[-2] * shape[-1],)]
        if shape[-1] % 2 == 0 and shape[-1]:
            targets.append(tuple(shape[:-1]) + (2, shape[-1] // 2))
    return targets


@st.composite
def strided_inputs(draw, dtype):
    """A contiguous array and a chain of views of it (transpose, step slices, size-1 dims, expand):
    returns (numpy base, function applying the same chain to a NumPy array or a tensor)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    steps = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["T", "step", "unsqueeze", "expand", "flip_dims"]))
        steps.append((kind, draw(st.integers(0, 10))))
    base = draw(hnp.arrays(NP[dtype], shape, elements=elements(dtype)))
    return base, steps


def apply_steps(x, steps, np_side):
    for kind, r in steps:
        nd = x.ndim
        if nd == 0:
            continue
        d = r % nd
        if kind == "T" and nd >= 2:
            x = np.swapaxes(x, d, (d + 1) % nd) if np_side else x.transpose(d, (d + 1) % nd)
        elif kind == "step":
            key = (slice(None),) * d + (slice(r % 2, None, 2),)
            x = x[key]
        elif kind == "unsqueeze":
            x = np.expand_dims(x, d) if np_side else x.unsqueeze(d)
        elif kind == "expand":
            shape = list(x.shape)
            ones = [i for i, s in enumerate(shape) if s == 1]
            if ones:
                shape[ones[r % len(ones)]] = 3
                x = np.broadcast_to(x, shape) if np_side else x.expand(*shape)
        elif kind == "flip_dims" and nd >= 2:
            perm = list(range(nd))[::-1]
            x = np.transpose(x, perm) if np_side else x.permute(*perm)
    return x


@pytest.mark.parametrize("dtype", [F32, I64], ids=IDS.get)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_view_and_reshape_follow_the_stride_rule(dtype, data):
    base, steps = data.draw(strided_inputs(dtype), label="input")
    a = apply_steps(base, steps, True)
    t = apply_steps(tg.tensor(base), steps, False)
    check(t, a, dtype)
    # -1 beside a 0 is ambiguous (an error in both libraries), so it is not drawn
    targets = [s for s in reshape_targets(a.shape) if not (a.size == 0 and -1 in s and 0 in s)]
    target = data.draw(st.sampled_from(targets), label="target")
    expected = a.reshape(target)
    check(t.reshape(target), expected, dtype)
    check(t.reshape(*target), expected, dtype)
    # NumPy's no-copy reshape is the oracle for when a view is possible (PyTorch's rule is the same)
    try:
        np_view = np.reshape(a, target, copy=False)
    except ValueError:
        np_view = None
    if np_view is None:
        with pytest.raises(RuntimeError) as e:
            t.view(*target)
        assert "view size is not compatible with input tensor's size and stride" in str(e.value)
        assert ".reshape(" in str(e.value)
    else:
        v = t.view(*target)
        check(v, expected, dtype)
        check(t.view(target), expected, dtype)
        if not any(s == 0 for s in v.stride()) and a.size:
            # a view: writing through it changes the tensor it came from
            before = t.numpy().copy()
            v.fill_(0)
            assert t._version == v._version
            assert not t.numpy().any()
            t.copy_(tg.tensor(before))
            check(v, before.reshape(target), dtype)


def test_view_and_reshape_numel_errors_name_the_shapes():
    for f in (lambda t: t.view(7), lambda t: t.reshape(4, 2), lambda t: t.reshape(4, -1), lambda t: t.view(-1, 4)):
        with pytest.raises(RuntimeError) as e:
            f(tg.ones(2, 3))
        msg = str(e.value)
        assert "invalid for input of size 6" in msg and "[2, 3]" in msg, msg
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        tg.ones(2, 3).view(-1, -1)


SHAPES_WITH_ONES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3).map(
    lambda s: tuple(1 if i % 2 == 0 else d for i, d in enumerate(s)))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_unsqueeze_squeeze_flatten_are_views(dtype, data):
    a = draw_array(data, dtype, data.draw(SHAPES_WITH_ONES, label="shape"))
    nd = a.ndim
    cases = []  # (tapegrad op, the same view in NumPy)
    d = data.draw(st.integers(-nd - 1, nd), label="unsqueeze dim")
    cases.append((lambda t: t.unsqueeze(d), lambda x: np.expand_dims(x, d)))
    cases.append((lambda t: t.squeeze(), np.squeeze))
    cases.append((lambda t: t.flatten(), lambda x: x.reshape(x.size)))
    if nd:
        sd = data.draw(st.integers(-nd, nd - 1), label="squeeze dim")
        cases.append((lambda t: t.squeeze(sd), lambda x: np.squeeze(x, sd) if x.shape[sd] == 1 else x))
        start, end = sorted(data.draw(st.tuples(st.integers(0, nd - 1), st.integers(0, nd - 1)), label="dims"))
        e = end
        end = end - nd if data.draw(st.booleans(), label="negative end") else end
        merged = int(np.prod(a.shape[start:e + 1]))
        cases.append((lambda t: t.flatten(start, end),
                      lambda x: x.reshape(x.shape[:start] + (merged,) + x.shape[e + 1:])))
    for op, np_op in cases:
        t = tg.tensor(a)
        v = op(t)
        check(v, np_op(a), dtype)
        assert_shares(t, v, a, np_op)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.tensor(a).unsqueeze(nd + 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_expand_and_expand_as_share_memory(dtype, data):
    shape = data.draw(SHAPES_WITH_ONES, label="shape")
    a = draw_array(data, dtype, shape)
    target = [data.draw(st.sampled_from([-1, 0, 1, 2, 3]), label="size") if d == 1 else
              data.draw(st.sampled_from([-1, d]), label="size") for d in shape]
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2), label="leading")
    sizes = tuple(lead) + tuple(target)
    full = tuple(lead) + tuple(shape[i] if s == -1 else s for i, s in enumerate(target))
    t = tg.tensor(a)
    e = t.expand(*sizes)
    check(e, np.broadcast_to(a, full), dtype)
    check(t.expand(sizes), np.broadcast_to(a, full), dtype)
    check(t.expand_as(tg.zeros(*full, dtype=F64)), np.broadcast_to(a, full), dtype)
    if a.size and e.numel():
        t.fill_(True if dtype is BOOL else 2)  # the expanded view sees its base's write
        np.testing.assert_array_equal(e.numpy(), np.broadcast_to(np.full(shape, 2).astype(NP[dtype]), full))
        assert e._version == t._version


def test_expand_errors_name_both_shapes():
    with pytest.raises(RuntimeError) as e:
        tg.ones(2, 3).expand(4, 3)
    names_shapes(str(e.value), (2, 3), (4, 3))
    with pytest.raises(RuntimeError) as e:
        tg.ones(2, 3).expand_as(tg.ones(3, 3))
    names_shapes(str(e.value), (2, 3), (3, 3))
    with pytest.raises(RuntimeError, match=r"number of sizes provided \(1\).*dimensions in the tensor \(2\)"):
        tg.ones(2, 3).expand(3)


@st.composite
def cat_inputs(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    k = draw(st.integers(1, 3))
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in range(k)]
    arrays = []
    for dt in dtypes:
        s = list(shape)
        s[dim] = draw(st.integers(0, 3))
        arrays.append(draw(hnp.arrays(NP[dt], tuple(s), elements=elements(dt))))
    return arrays, dtypes, dim


@SETTINGS
@given(inputs=cat_inputs())
def test_cat_values_and_promotion(inputs):
    arrays, dtypes, dim = inputs
    want = dtypes[0]
    for dt in dtypes[1:]:
        want = promote(want, dt)
    expected = np.concatenate([a.astype(NP[want]) for a in arrays], axis=dim)
    check(tg.cat([tg.tensor(a) for a in arrays], dim), expected, want)
    check(tg.cat(tuple(tg.tensor(a) for a in arrays), dim=dim), expected, want)


@SETTINGS
@given(data=st.data())
def test_stack_values_and_promotion(data):
    shape = data.draw(SHAPES, label="shape")
    dts = data.draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3), label="dtypes")
    arrays = [draw_array(data, dt, shape) for dt in dts]
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)), label="dim")
    want = dts[0]
    for dt in dts[1:]:
        want = promote(want, dt)
    check(tg.stack([tg.tensor(a) for a in arrays], dim), np.stack([a.astype(NP[want]) for a in arrays], dim), want)


def test_cat_and_stack_errors_name_both_shapes():
    with pytest.raises(RuntimeError) as e:
        tg.cat([tg.ones(2, 3), tg.ones(2, 4)], 0)
    names_shapes(str(e.value), (2, 3), (2, 4))
    with pytest.raises(RuntimeError) as e:
        tg.cat([tg.ones(2, 3), tg.ones(3)], 0)
    names_shapes(str(e.value), (2, 3), (3,))
    with pytest.raises(RuntimeError) as e:
        tg.stack([tg.ones(2, 3), tg.ones(3, 2)])
    names_shapes(str(e.value), (2, 3), (3, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.cat([tg.ones(2, 3)], 2)
    with pytest.raises((RuntimeError, ValueError), match="non-empty"):
        tg.cat([], 0)
    with pytest.raises((RuntimeError, ValueError), match="non-empty"):
        tg.stack([])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_contiguous_clone_detach(dtype, data):
    base, steps = data.draw(strided_inputs(dtype), label="input")
    a = apply_steps(base, steps, True)
    t = apply_steps(tg.tensor(base), steps, False)
    c = t.contiguous()
    check(c, a, dtype)
    assert c.is_contiguous()
    if t.is_contiguous():
        assert c is t or c._version == t._version  # no copy needed: the same memory
    cl = t.clone()
    check(cl, a, dtype)
    d = t.detach()
    check(d, a, dtype)
    assert d._version == t._version
    if a.size and all(s != 0 for s in t.stride()):
        before = a.copy()
        cl.fill_(0)  # a clone owns its memory
        check(t, before, dtype)
        d.fill_(1)  # detach shares it
        np.testing.assert_array_equal(t.numpy(), np.ones_like(before))
        assert d._version == t._version


# ---------------------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------------------


@st.composite
def reduce_args(draw, shapes=SHAPES):
    shape = draw(shapes)
    n = max(len(shape), 1)
    kind = draw(st.sampled_from(["all", "dim", "dims"]))
    if kind == "all":
        return shape, None
    if kind == "dim":
        return shape, draw(st.integers(-n, n - 1))
    ds = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return shape, tuple(d - n if i % 2 else d for i, d in enumerate(ds))


def np_axis(a, dim):
    return None if a.ndim == 0 or dim is None else dim


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_sum_and_mean(dtype, data):
    shape, dim = data.draw(reduce_args(), label="shape, dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    a = draw_array(data, dtype, shape)
    t = tg.tensor(a)
    want = I64 if dtype in (I64, BOOL) else dtype  # as PyTorch: integer sums are int64
    kd = keepdim and a.ndim > 0 and dim is not None
    expected = np.sum(a.astype(NP[want]), axis=np_axis(a, dim), keepdims=kd)
    out = t.sum() if dim is None else t.sum(dim, keepdim=keepdim)
    check(out, expected, want)
    check(tg.sum(t) if dim is None else t.sum(dim=dim, keepdim=keepdim), expected, want)
    if dtype in (I64, BOOL):
        with pytest.raises(RuntimeError, match=r"mean\(\).*floating point"):
            t.mean() if dim is None else t.mean(dim)
        return
    with np.errstate(all="ignore"):
        expected = np.mean(a.astype(np.float64), axis=np_axis(a, dim), keepdims=kd)  # NaN when empty
    out = t.mean() if dim is None else t.mean(dim, keepdim=keepdim)
    check(out, expected, dtype)


def test_reduction_dim_errors():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        tg.ones(2, 3).sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        tg.ones(2, 3).sum((0, -2))
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        tg.ones(0, 2).max()
    with pytest.raises(IndexError):
        tg.ones(0, 2).max(0)
    with pytest.raises(IndexError):
        tg.ones(0).argmax()


@pytest.mark.parametrize("dtype", [F32, F64, I64, BOOL], ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_max_and_argmax_resolve_ties_to_the_first_index(dtype, data):
    shape = data.draw(NONEMPTY, label="shape")
    # few distinct values: ties everywhere
    a = draw_array(data, dtype, shape, -1, 1)
    if dtype in TOL:
        a = np.round(a).astype(NP[dtype])
    t = tg.tensor(a)
    check(t.max(), np.max(a), dtype)
    if dtype is not BOOL:
        check(t.argmax(), np.asarray(np.argmax(a)), I64)
    n = max(a.ndim, 1)
    d = data.draw(st.integers(-n, n - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    values, indices = t.max(d, keepdim=keepdim)
    if a.ndim == 0:
        check(values, a, dtype)
        check(indices, np.asarray(0), I64)
        return
    check(values, np.max(a, axis=d, keepdims=keepdim), dtype)
    check(indices, np.argmax(a, axis=d, keepdims=keepdim).astype(np.int64), I64)
    named = t.max(dim=d, keepdim=keepdim)
    check(named.values, np.max(a, axis=d, keepdims=keepdim), dtype)
    check(named.indices, np.argmax(a, axis=d, keepdims=keepdim).astype(np.int64), I64)
    if dtype is not BOOL:
        check(t.argmax(d, keepdim=keepdim), np.argmax(a, axis=d, keepdims=keepdim).astype(np.int64), I64)
        check(t.argmax(dim=d), np.argmax(a, axis=d).astype(np.int64), I64)


def test_max_along_a_dim_with_zero_size_elsewhere():
    values, indices = tg.ones(0, 3).max(1)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype == I64
    values, indices = tg.ones(2, 0, 3).max(-1, keepdim=True)
    assert values.shape == (2, 0, 1) and indices.dtype == I64


# ---------------------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("src", DTYPES, ids=IDS.get)
@pytest.mark.parametrize("dst", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_to_dtype(src, dst, data):
    a = draw_array(data, src, data.draw(SHAPES, label="shape"), -5.0, 5.0)
    t = tg.tensor(a)
    out = t.to(dst)
    # float -> int truncates toward zero; anything -> bool is "nonzero"
    check(out, a.astype(NP[dst]), dst)
    if dst is src:
        assert out is t  # as PyTorch: no copy when nothing changes
    else:
        assert out._version == 0
    check(t.float(), a.astype(np.float32), F32)
    check(t.double(), a.astype(np.float64), F64)
    check(t.to(dtype=dst), a.astype(NP[dst]), dst)


@pytest.mark.parametrize("src, dst", [(F64, F32), (F32, F64)], ids=["f64->f32", "f32->f64"])
@SETTINGS
@given(data=st.data())
def test_gradient_through_a_dtype_cast_comes_back_in_the_source_dtype(src, dst, data):
    # y = sum(w * cast(x)^2): dy/dx = 2 w x, computed in dst and cast back to src (as PyTorch's ToCopyBackward);
    # the second derivative (through create_graph) is 2 w. NumPy computes both in dst, then casts.
    a = draw_array(data, src, data.draw(NONEMPTY, label="shape"))
    w = draw_array(data, dst, a.shape)
    x = tg.tensor(a, requires_grad=True)
    cast = x.to(dst)
    y = (tg.tensor(w) * cast * cast).sum()
    (g,) = tg.autograd.grad(y, [x], create_graph=True)
    check(g.detach(), (2 * w * a.astype(NP[dst])).astype(NP[src]), src)
    g.sum().backward()
    check(x.grad, (2 * w).astype(NP[src]), src)


def test_casts_to_int64_and_bool_leave_the_graph():
    x = tg.tensor([1.5, -2.0], requires_grad=True)
    for dtype in (I64, BOOL):
        out = x.to(dtype)
        assert not out.requires_grad and out.grad_fn is None


def test_to_bool_of_nan_and_negative_zero():
    check(tg.tensor([0.0, -0.0, float("nan"), -0.5]).to(BOOL), np.array([False, False, True, True]))


# ---------------------------------------------------------------------------------------------------------
# factories
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, dtype, want", [
    (3, None, I64), (3.0, None, F32), (True, None, BOOL), (-2, F64, F64), (2.5, F64, F64), (1, BOOL, BOOL),
    (7, F32, F32),
])
@pytest.mark.parametrize("shape", [(2, 3), (0,), (), (1, 0, 2)])
def test_full(shape, value, dtype, want):
    t = tg.full(shape, value) if dtype is None else tg.full(shape, value, dtype=dtype)
    check(t, np.full(shape, value, dtype=NP[want]), want)
    check(tg.full(list(shape), value, dtype=want), np.full(shape, value, dtype=NP[want]), want)


@pytest.mark.parametrize("args, kwargs, want", [
    ((5,), {}, I64), ((2, 7), {}, I64), ((1, 10, 3), {}, I64), ((10, 1, -3), {}, I64), ((5, 5), {}, I64),
    ((5.0,), {}, F32), ((0, 1, 0.25), {}, F32), ((1, 0, -0.3), {}, F32), ((1, 4.5), {}, F32),
    ((-3, 3), {"dtype": F64}, F64), ((0, 5), {"dtype": F32}, F32), ((0.5, 3), {"dtype": F64}, F64),
    ((3, -3, -1), {}, I64), ((0, 1, 0.1), {"dtype": F64}, F64),
])
def test_arange(args, kwargs, want):
    t = tg.arange(*args, **kwargs)
    expected = np.arange(*args, dtype=np.float64 if want in TOL else np.int64)
    check(t, expected.astype(NP[want]), want)


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tg.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        tg.arange(0, 5, -1)


@pytest.mark.parametrize("args", [(3,), (1,), (0,), (2, 4), (4, 2), (3, 0)])
@pytest.mark.parametrize("dtype", [None, F64, I64, BOOL])
def test_eye(args, dtype):
    t = tg.eye(*args) if dtype is None else tg.eye(*args, dtype=dtype)
    want = dtype or F32
    check(t, np.eye(*args, dtype=NP[want]), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@pytest.mark.parametrize("shape", [(2, 3), (0, 4), (), (5,)])
def test_empty_and_like_factories(shape, dtype):
    e = tg.empty(*shape, dtype=dtype)
    assert e.shape == shape and e.dtype == dtype
    assert tg.empty(shape, dtype=dtype).shape == shape
    t = tg.tensor(np.zeros(shape, dtype=NP[dtype]))
    check(tg.zeros_like(t), np.zeros(shape, dtype=NP[dtype]), dtype)
    check(tg.ones_like(t), np.ones(shape, dtype=NP[dtype]), dtype)
    check(tg.zeros_like(t, dtype=F64), np.zeros(shape), F64)
    if dtype in TOL:
        r = tg.randn_like(t)
        assert r.shape == shape and r.dtype == dtype
    else:
        with pytest.raises(RuntimeError):
            tg.randn_like(t)  # as PyTorch: normal samples are only defined for floating dtypes


def test_manual_seed_makes_random_factories_repeatable():
    tg.manual_seed(123)
    a, b, c = tg.randn(4, 5), tg.rand(3), tg.randn_like(tg.zeros(2, 2, dtype=F64))
    tg.manual_seed(123)
    np.testing.assert_array_equal(tg.randn(4, 5).numpy(), a.numpy())
    np.testing.assert_array_equal(tg.rand(3).numpy(), b.numpy())
    np.testing.assert_array_equal(tg.randn_like(tg.zeros(2, 2, dtype=F64)).numpy(), c.numpy())
    tg.manual_seed(124)
    assert not np.array_equal(tg.randn(4, 5).numpy(), a.numpy())
    assert ((b.numpy() >= 0) & (b.numpy() < 1)).all()
    # the draws are standard normal: loose moments over many samples
    tg.manual_seed(0)
    big = tg.randn(20000, dtype=F64).numpy()
    assert abs(big.mean()) < 0.05 and abs(big.std() - 1) < 0.05


# ---------------------------------------------------------------------------------------------------------
# indexing (reads)
# ---------------------------------------------------------------------------------------------------------


@st.composite
def basic_keys(draw, shape):
    """ints (negative too), slices with steps, None and at most one Ellipsis, as NumPy accepts them."""
    key, dims = [], list(shape)
    use_ellipsis = draw(st.booleans())
    n_before = draw(st.integers(0, len(dims)))
    for d in dims[:n_before]:
        key.append(draw(one_index(d)))
    if use_ellipsis:
        key.append(Ellipsis)
        tail = draw(st.integers(0, len(dims) - n_before))
        for d in dims[len(dims) - tail:]:
            key.append(draw(one_index(d)))
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def one_index(d):
    ints = st.integers(-d, d - 1) if d else st.nothing()
    slices = st.builds(slice, st.one_of(st.none(), st.integers(-d - 2, d + 2)),
                       st.one_of(st.none(), st.integers(-d - 2, d + 2)), st.sampled_from([None, 1, 2, 3]))
    return st.one_of(ints, slices, st.just(slice(None)))


def as_view_key(key):
    """NumPy returns a scalar copy when every dimension gets an int; with a trailing Ellipsis it returns the
    0-d view, as PyTorch always does."""
    return key if Ellipsis in key else key + (Ellipsis,)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_basic_indexing_gives_numpy_values_and_views(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), label="shape")
    a = draw_array(data, dtype, shape)
    key = data.draw(basic_keys(shape), label="key")
    t = tg.tensor(a)
    bare = len(key) == 1 and data.draw(st.booleans(), label="bare key")
    v = t[key[0]] if bare else t[key]
    expected = np.asarray(a[key])
    check(v, expected, dtype)
    assert_shares(t, v, a, lambda x: x[as_view_key(key)])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_mask_indexing_gives_copies(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), label="shape")
    a = draw_array(data, dtype, shape)
    k = data.draw(st.integers(1, len(shape)), label="mask dims")
    mask = data.draw(hnp.arrays(np.bool_, shape[:k]), label="mask")
    t = tg.tensor(a)
    out = t[tg.tensor(mask)]
    check(out, a[mask], dtype)
    if out.numel():
        v0 = t._version
        out.fill_(0)
        check(t, a, dtype)  # a copy: the source is untouched
        assert t._version == v0
    if dtype is not BOOL:
        check(t[t > 0], a[a > 0], dtype)


def test_index_errors_name_index_dimension_and_size():
    t = tg.ones(2, 3)
    cases = [((2,), 2, 0, 2), ((-3,), -3, 0, 2), ((0, 3), 3, 1, 3), ((0, -4), -4, 1, 3), ((Ellipsis, 5), 5, 1, 3)]
    for key, idx, dim, size in cases:
        with pytest.raises(IndexError) as e:
            t[key]
        assert str(e.value) == f"index {idx} is out of bounds for dimension {dim} with size {size}", str(e.value)
        with pytest.raises(IndexError, match=f"index {idx} is out of bounds for dimension {dim} with size {size}"):
            t[key] = 1.0
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        tg.tensor(1.0)[0]
    with pytest.raises(IndexError, match=r"mask \[3, 2\].*\[2, 3\]"):
        t[tg.ones(3, 2) > 0]
    with pytest.raises(IndexError):
        t[0, ..., 0, ...]


@pytest.mark.parametrize("flag", [True, False])
def test_python_bool_index_is_a_0d_mask(flag):
    # As NumPy and PyTorch: True adds an axis of size 1, False one of size 0 (a copy, like any mask).
    a = np.arange(6.0).reshape(2, 3)
    x = tg.tensor(a, requires_grad=True)
    out = x[flag]
    check(out.detach(), a[flag])
    (out * 2).sum().backward()
    check(x.grad, np.full(a.shape, 2.0 if flag else 0.0))
    t = tg.tensor(a)
    t[flag] = -1.0
    e = a.copy()
    e[flag] = -1.0
    check(t, e)


def test_slice_steps_below_one_are_value_errors_as_in_pytorch():
    t = tg.ones(4, requires_grad=True)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
    for key in (slice(None, None, -1), (slice(3, 0, -2),)):
        with pytest.raises(ValueError, match=r"slice step must be greater than zero \(got -\d\)"):
            t[key]
        with pytest.raises(ValueError, match="slice step must be greater than zero"):
            t.detach()[key] = 0.0
    assert t.detach()[::3].tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------------------------
# item assignment and in-place operations
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_setitem_scalar_and_broadcast_tensor(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), label="shape")
    a = draw_array(data, dtype, shape)
    key = data.draw(basic_keys(shape), label="key")
    target = np.asarray(a[key]).shape
    t = tg.tensor(a)
    expected = a.copy()
    if data.draw(st.booleans(), label="scalar value"):
        value = data.draw(elements(dtype), label="value")
        t_value = value.item() if hasattr(value, "item") else value
    else:
        # the value broadcasts to the target: drop leading dims, set some to 1; any dtype is cast
        vshape = tuple(1 if data.draw(st.booleans()) else d for d in target[data.draw(st.integers(0, len(target))):])
        vdtype = data.draw(st.sampled_from([dtype, F64] if dtype in TOL else [dtype]), label="value dtype")
        value = draw_array(data, vdtype, vshape)
        t_value = tg.tensor(value)
    v0 = t._version
    expected[as_view_key(key)] = value
    t[key] = t_value
    check(t, expected, dtype)
    assert t._version > v0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_setitem_mask(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), label="shape")
    a = draw_array(data, dtype, shape)
    mask = data.draw(hnp.arrays(np.bool_, shape), label="mask")
    t = tg.tensor(a)
    expected = a.copy()
    if data.draw(st.booleans(), label="scalar"):
        value = data.draw(elements(dtype), label="value")
        expected[mask] = value
        t[tg.tensor(mask)] = value
    else:
        value = draw_array(data, dtype, (int(mask.sum()),))
        expected[mask] = value
        t[tg.tensor(mask)] = tg.tensor(value)
    check(t, expected, dtype)


def test_setitem_shape_errors_name_both_shapes():
    t = tg.ones(2, 3)
    with pytest.raises(RuntimeError) as e:
        t[0] = tg.ones(2)
    names_shapes(str(e.value), (3,), (2,))
    with pytest.raises(RuntimeError) as e:
        t[t > 0] = tg.ones(2)
    names_shapes(str(e.value), (6,), (2,))
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3)))  # a refused write changes nothing


INPLACE_BINARY = {
    "add_": (lambda t, b: t.add_(b), np.add),
    "sub_": (lambda t, b: t.sub_(b), np.subtract),
    "mul_": (lambda t, b: t.mul_(b), np.multiply),
    "div_": (lambda t, b: t.div_(b), np.divide),
}


INPLACE_BINARY.update({name: (augmented_assign(name), ref) for name, ref in
                       [("+=", np.add), ("-=", np.subtract), ("*=", np.multiply), ("/=", np.divide)]})


@pytest.mark.parametrize("dtype", [F32, F64, I64], ids=IDS.get)
@pytest.mark.parametrize("name", list(INPLACE_BINARY))
@SETTINGS
@given(data=st.data())
def test_inplace_arithmetic(name, dtype, data):
    f, ref = INPLACE_BINARY[name]
    shape = data.draw(SHAPES, label="shape")
    drop = data.draw(st.integers(0, len(shape)), label="drop leading")
    bshape = tuple(1 if data.draw(st.booleans()) else d for d in shape[drop:])
    a = draw_array(data, dtype, shape)
    divides = name in ("div_", "/=")
    bdtype = data.draw(st.sampled_from([dtype, F64, I64] if dtype in TOL else [dtype]), label="operand dtype")
    use_scalar = data.draw(st.booleans(), label="python scalar")
    if use_scalar:
        b = data.draw(st.sampled_from([2, -3, 0.5, 1.25]) if dtype in TOL else st.sampled_from([2, -3]))
        tb = b
    else:
        b = draw_array(data, bdtype, bshape, 0.5 if divides and bdtype in TOL else -3.0, 3.0)
        if divides and bdtype is I64:
            b = np.where(b == 0, 2, b)
        tb = tg.tensor(b)
    t = tg.tensor(a)
    v0 = t._version
    if divides and dtype is I64:
        # true division gives float32, which an int64 tensor cannot hold (PyTorch: the same error)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            f(t, tb)
        check(t, a, dtype)
        return
    out = f(t, tb)
    assert out is t
    with np.errstate(all="ignore"):
        expected = ref(a.astype(np.float64), np.asarray(b, dtype=np.float64)).astype(NP[dtype])
    check(t, expected, dtype)  # the tensor keeps its dtype
    assert t._version > v0


def test_inplace_errors():
    t = tg.ones(2, 3)
    with pytest.raises(RuntimeError) as e:
        t.add_(tg.ones(4, 3))
    names_shapes(str(e.value), (2, 3), (4, 3))
    row = tg.ones(1, 3)
    for f in (lambda: row.add_(tg.ones(2, 3)), lambda: row.mul_(tg.ones(2, 3))):
        with pytest.raises(RuntimeError) as e:
            f()
        names_shapes(str(e.value), (1, 3), (2, 3))
    with pytest.raises(RuntimeError) as e:
        row.copy_(tg.ones(2, 3))
    names_shapes(str(e.value), (1, 3), (2, 3))
    with pytest.raises(RuntimeError) as e:
        tg.ones(2, 3).copy_(tg.ones(2, 2))
    names_shapes(str(e.value), (2, 3), (2, 2))
    i = tg.tensor([1, 2, 3])
    for f in (lambda: i.add_(tg.ones(3)), lambda: i.mul_(1.5)):
        with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
            f()
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(row.numpy(), np.ones((1, 3)))


@pytest.mark.parametrize("dst", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_copy_broadcasts_and_casts(dst, data):
    shape = data.draw(SHAPES, label="shape")
    drop = data.draw(st.integers(0, len(shape)), label="drop leading")
    sshape = tuple(1 if data.draw(st.booleans()) else d for d in shape[drop:])
    src_dtype = data.draw(st.sampled_from(DTYPES), label="source dtype")
    a = draw_array(data, dst, shape)
    s = draw_array(data, src_dtype, sshape, -5.0, 5.0)
    t = tg.tensor(a)
    v0 = t._version
    assert t.copy_(tg.tensor(s)) is t
    check(t, np.broadcast_to(s, shape).astype(NP[dst]), dst)
    assert t._version > v0


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS.get)
@SETTINGS
@given(data=st.data())
def test_fill_and_zero(dtype, data):
    a = draw_array(data, dtype, data.draw(SHAPES, label="shape"))
    value = data.draw(elements(dtype) if dtype is not I64 else st.integers(-9, 9), label="value")
    value = value.item() if hasattr(value, "item") else value
    t = tg.tensor(a)
    v0 = t._version
    assert t.fill_(value) is t
    check(t, np.full(a.shape, value, dtype=NP[dtype]), dtype)
    assert t._version > v0
    assert t.zero_() is t
    check(t, np.zeros(a.shape, dtype=NP[dtype]), dtype)


def test_inplace_through_a_strided_view_reaches_the_base_like_numpy():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    t = tg.tensor(a)
    for key, op in [((slice(None), slice(1, None, 2)), lambda x: x.mul_(2.0)),
                    ((slice(None, None, 2), 3), lambda x: x.fill_(-1.0)),
                    ((Ellipsis, None, slice(0, 2)), lambda x: x.clamp_(min=10.0)),
                    ((1,), lambda x: x.div_(4.0)),
                    ((slice(1, 3),), lambda x: x.copy_(tg.tensor([9.0, 8, 7, 6, 5, 4])))]:
        v = t[key]
        op(v)
        npv = a[key]
        if key == (1,):
            npv /= 4.0
        elif key == (slice(1, 3),):
            npv[...] = [9.0, 8, 7, 6, 5, 4]
        elif key[0] == slice(None, None, 2):
            npv[...] = -1.0
        elif key[0] is Ellipsis:
            np.maximum(npv, 10.0, out=npv)
        else:
            npv *= 2.0
        np.testing.assert_array_equal(t.numpy(), a)
        assert v._version == t._version


@pytest.mark.parametrize("dtype", [F32, F64], ids=IDS.get)
def test_transposed_and_expanded_inplace_operands(dtype):
    a = np.arange(12, dtype=NP[dtype]).reshape(3, 4)
    t = tg.tensor(np.ascontiguousarray(a.T)).t()  # non-contiguous destination
    t += tg.tensor(np.array([1.0, 2.0, 3.0, 4.0], dtype=NP[dtype]))
    t *= tg.tensor(np.array([[2.0], [3.0], [0.5]], dtype=NP[dtype])).expand(3, 4)
    check(t, (a + [1.0, 2.0, 3.0, 4.0]) * [[2.0], [3.0], [0.5]], dtype)


# ---------------------------------------------------------------------------------------------------------
# dtype errors and rules beyond arithmetic
# ---------------------------------------------------------------------------------------------------------


def test_float_functions_of_integers_are_float32_and_mean_of_integers_is_an_error():
    check(tg.tensor([4, 2]).sqrt(), np.sqrt(np.array([4, 2], dtype=np.float32)))
    check(tg.tensor([True, False]).exp(), np.exp(np.array([1.0, 0.0], dtype=np.float32)))
    for t in (tg.tensor([1, 2]), tg.tensor([True])):
        with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype"):
            t.mean()
        with pytest.raises(RuntimeError, match=r"mean\(\)"):
            t.mean(0)


def test_mixed_dtype_every_pair_promotes_like_pytorch():
    """One table of every pair of the four dtypes and both dimensionalities, for +, *, <, cat."""
    for (da, db), (na, nb) in itertools.product(itertools.product(DTYPES, DTYPES), [(1, 1), (1, 0), (0, 1), (0, 0)]):
        a = tg.ones(*([2] * na), dtype=da)
        b = tg.ones(*([2] * nb), dtype=db)
        dt = promote_operands(da, na, db, nb)
        assert (a + b).dtype == dt, (da, db, na, nb)
        assert (a * b).dtype == dt
        assert (a < b).dtype == BOOL
        assert (a / b).dtype == (F32 if dt in (I64, BOOL) else dt)
