"""Hostile numeric inputs: wrapped element counts, values that lose precision through f64, and
silent dtype conversions (issue 20, items 1-6, 12-18, 29, and their siblings).

Classes tested here:

* Element counts and byte sizes: every shape a tensor can get (factories, expand, reshape/view,
  broadcasting) has an element count that fits in int64; a larger one is a `RuntimeError` naming
  the shape, an allocation that cannot succeed a `MemoryError` naming its size. A count never
  wraps (a wrapped count of 0 made a huge view look empty and skipped the bounds checks).
* Printing reads only the elements it shows (an empty or a huge expanded tensor prints without
  allocating).
* More than 32 dimensions: NumPy's limit, a clear error at the NumPy boundary.
* Python ints and NumPy integers stay exact: scalar arithmetic, clamp bounds, powers, `item()`,
  `int()`, `operator.index`, `repr`, `arange` and tensor construction never go through f64;
  values outside int64 are an `OverflowError`/`RuntimeError`, never a wrap.
* No silent dtype conversion from NumPy: non-native byte order, complex, object and uint64 values
  beyond int64 are refused with a message naming the problem.
* NumPy integer and bool scalars index like Python ints and bools.

The oracle is PyTorch 2.x's behaviour (checked by hand with the PyTorch of the dev environment),
with exact Python ints and NumPy for the values. Crash reproducers run in a child process with a
timeout, so that an abort or a segfault fails the test instead of the run.
"""

import operator
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


def run_child(code, timeout=120):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr)."""
    prog = "import tapegrad as tg\nimport numpy as np\n" + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def expect_child_raises(code, kinds, match=None):
    """The statement raises one of `kinds` (names of exception classes) in a child, which exits
    normally: no abort, segfault or Rust panic."""
    probe = f"""
try:
{textwrap.indent(textwrap.dedent(code), '    ')}
except BaseException as e:
    print("RAISED", type(e).__name__, str(e)[:300])
else:
    print("NO EXCEPTION")
"""
    rc, out, err = run_child(probe)
    assert rc == 0, f"child died (rc={rc}): {err[-2000:]}"
    assert "PanicException" not in out, out
    line = out.strip().splitlines()[-1]
    assert line.startswith("RAISED"), out
    kind = line.split()[1]
    assert kind in kinds, out
    if match is not None:
        assert match in line, out
    return line


# ---------------------------------------------------------------------------------------------
# Element counts (items 1-5, 18)
# ---------------------------------------------------------------------------------------------


def test_repr_of_empty_tensor_with_huge_dim_does_not_allocate():
    rc, out, err = run_child("print(repr(tg.zeros(2**40, 0)))")
    assert rc == 0, err[-2000:]
    assert out.strip() == "tensor([], size=(1099511627776, 0))"


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: tg.zeros(0), "tensor([])"),
        (lambda: tg.zeros(2, 0), "tensor([], size=(2, 0))"),
        (lambda: tg.zeros(0, 3, dtype=tg.int64), "tensor([], size=(0, 3), dtype=tapegrad.int64)"),
        (lambda: tg.zeros(0, dtype=tg.bool), "tensor([], dtype=tapegrad.bool)"),
        (lambda: tg.zeros(0, 3, requires_grad=True), "tensor([], size=(0, 3), requires_grad=True)"),
    ],
)
def test_repr_of_empty_tensors_spells_the_shape(make, expected):
    assert repr(make()) == expected


def test_repr_of_huge_expanded_view_is_summarized_without_copying():
    x = tg.tensor([1.5, 2.5]).reshape(2, 1).expand(2, 2**40)
    lines = repr(x).splitlines()
    # PyTorch's layout: the `...` entry is written as " ..." after the separator.
    assert lines == ["tensor([[1.5000, 1.5000, 1.5000,  ..., 1.5000, 1.5000, 1.5000],",
                     "        [2.5000, 2.5000, 2.5000,  ..., 2.5000, 2.5000, 2.5000]])"]


def test_repr_summarized_values_are_the_edges():
    a = np.arange(3000).reshape(3, 1000)
    r = repr(tg.tensor(a))
    rows = r.splitlines()
    assert len(rows) == 3
    for row, arr_row in zip(rows, a):
        nums = [int(tok) for tok in row.replace("tensor(", "").replace("[", "").replace("]", "").replace(")", "")
                .replace("...", "").replace(",", " ").split()]
        assert nums == list(arr_row[:3]) + list(arr_row[-3:])


def test_where_with_unallocatable_broadcast_is_memory_error():
    expect_child_raises(
        "tg.where(tg.zeros(2**20, 1, dtype=tg.bool), tg.zeros(1, 2**20), 0.)",
        {"MemoryError"},
        match="4398046511104 bytes",
    )


@pytest.mark.parametrize(
    "stmt",
    [
        "x.argmax(dim=1)",
        "x.max(dim=1)",
        "x.sum()",
        "x.mean()",
        "x.reshape(4, 2**62).mm(tg.ones(1).expand(2**62, 1))",
        "tg.where(tg.ones(1, dtype=tg.bool), x, x)",
    ],
)
def test_expand_past_int64_elements_is_refused(stmt):
    # 2**64 elements: the count wrapped to 0 and the view looked empty.
    line = expect_child_raises(f"x = tg.ones(1).expand(2**32, 2**32)\n{stmt}", {"RuntimeError"},
                               match="[4294967296, 4294967296]")
    assert "numel" in line


@pytest.mark.parametrize(
    "make",
    [
        lambda: tg.ones(1).expand(2**31, 2**32),  # 2**63: one past int64
        lambda: tg.ones(1).expand(2**62, 1).expand(2**62, 2),
        lambda: tg.ones(1, 1).expand(2**40, 1) + tg.ones(1, 1).expand(1, 2**40),  # broadcast
        lambda: tg.where(tg.ones(2**40, 1, dtype=tg.bool).expand(2**40, 1), 1.0, tg.zeros(1, 2**40)),
        lambda: tg.zeros(2, 0).reshape(0, 2**62, 4),  # empty, but the other extents overflow
        lambda: tg.zeros(2, 0).reshape(-1, 2**62, 4),
    ],
)
def test_shapes_past_int64_elements_are_refused(make):
    with pytest.raises((RuntimeError, MemoryError), match="numel|allocate"):
        make()


def test_largest_expand_is_allowed_and_counts_exactly():
    x = tg.ones(1).expand(2**31, 2**31)
    assert x.numel() == 2**62
    assert x.shape == (2**31, 2**31)
    y = x.reshape(4, 2**60)
    assert y.shape == (4, 2**60) and y.numel() == 2**62
    assert y.stride() == (0, 0)
    # Too big to reduce in memory: an error naming the size (PyTorch would grind through 2**62 adds).
    with pytest.raises(MemoryError, match="bytes"):
        x.sum()
    with pytest.raises(MemoryError, match="bytes"):
        x.mean()


def test_reductions_of_large_expanded_views_count_every_element():
    # Small enough to compute: the count enters mean() and the sum exactly.
    x = tg.full((1,), 3.0).expand(2**12, 2**8)
    assert x.sum().item() == 3.0 * 2**20
    assert x.mean().item() == 3.0
    assert x.sum(1).shape == (2**12,)
    assert x.argmax(dim=1).tolist() == [0] * 2**12


# ---------------------------------------------------------------------------------------------
# More than 32 dimensions at the NumPy boundary (item 6)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stmt",
    [
        "r = tg.zeros(*[1]*33).numpy(); assert r.shape == (1,) * 33 and r.dtype == np.float32",
        "r = tg.zeros(*[1]*33).tolist(); assert np.asarray(r).shape == (1,) * 33",
        "r = np.asarray(tg.ones(*[1]*40, dtype=tg.int64)); assert r.shape == (1,) * 40 and r.sum() == 1",
        "t = tg.tensor(np.full([1]*33, 2.5)); assert t.shape == (1,) * 33 and t.dtype == tg.float64",
        "t = tg.tensor(np.arange(6).reshape([1]*32 + [2, 3]).astype(np.int32)); assert t.flatten().tolist() == list(range(6))",
    ],
)
def test_more_than_32_dims_cross_the_numpy_boundary(stmt):
    rc, out, err = run_child(stmt + "\nprint('ok')")
    assert rc == 0, err[-2000:]
    assert out.strip() == "ok"


def test_more_dims_than_numpy_has_is_a_clear_error():
    expect_child_raises("tg.zeros(*[1]*65).numpy()", {"ValueError"}, match="64")


# ---------------------------------------------------------------------------------------------
# Python ints stay exact (items 12-16)
# ---------------------------------------------------------------------------------------------

BIG = 2**53 + 1


def wrap64(v):
    """`v` reduced to int64 as two's-complement hardware wraps it."""
    return (v + 2**63) % 2**64 - 2**63


@pytest.mark.parametrize(
    "f, expected",
    [
        (lambda t: t + BIG, [BIG, BIG + 5]),
        (lambda t: BIG + t, [BIG, BIG + 5]),
        (lambda t: t - BIG, [-BIG, 5 - BIG]),
        (lambda t: BIG - t, [BIG, BIG - 5]),
        (lambda t: t * BIG, [0, wrap64(5 * BIG)]),
        (lambda t: t.add(BIG), [BIG, BIG + 5]),
        (lambda t: t.mul(BIG), [0, wrap64(5 * BIG)]),
        (lambda t: t.clamp(min=BIG), [BIG, BIG]),
        (lambda t: (t + BIG + 2).clamp(max=BIG), [BIG, BIG]),
        (lambda t: t + I64_MAX, [I64_MAX, wrap64(I64_MAX + 5)]),
        (lambda t: t - I64_MIN, [wrap64(-I64_MIN), wrap64(5 - I64_MIN)]),
    ],
)
def test_int_scalar_arithmetic_is_exact(f, expected):
    assert f(tg.tensor([0, 5])).tolist() == expected


def test_int_scalar_inplace_and_clamp_inplace_are_exact():
    t = tg.tensor([0, 5])
    t += BIG
    assert t.tolist() == [BIG, BIG + 5]
    t -= BIG
    assert t.tolist() == [0, 5]
    t *= BIG
    assert t.tolist() == [0, wrap64(5 * BIG)]
    u = tg.tensor([0, 2**62])
    u.clamp_(min=BIG, max=BIG + 2)
    assert u.tolist() == [BIG, BIG + 2]


def test_int_scalar_with_float_tensor_rounds_once():
    # float32 from the exact int (one rounding), not from its float64 rounding (two roundings).
    v = 2**53 + 2**29 + 1
    want = int(np.array([v], np.int64).astype(np.float32)[0])  # NumPy casts int64 -> float32 in one rounding
    assert want == 2**53 + 2**30
    assert int((tg.tensor([0.0]) + v).item()) == want
    x = tg.tensor([0.0])
    x += v
    assert int(x.item()) == want
    assert int(tg.tensor([0.0]).clamp(min=v).item()) == want


def test_int_comparisons_with_big_scalars_are_exact():
    t = tg.tensor([BIG - 1, BIG])
    assert (t == BIG - 1).tolist() == [True, False]
    assert (t < BIG).tolist() == [True, False]


@pytest.mark.parametrize("base", [2, 3, -3, 0, 1, -1, 7, I64_MAX])
@pytest.mark.parametrize("exp", [0, 1, 63, 64, 2**32 + 1, 2**62 + 1, I64_MAX])
def test_int_pow_uses_the_whole_exponent(base, exp):
    want = wrap64(pow(base, exp, 2**64))
    assert (tg.tensor([base]) ** exp).tolist() == [want]
    assert (tg.tensor([base]) ** tg.tensor([exp])).tolist() == [want]
    assert (base ** tg.tensor([exp])).tolist() == [want]


@pytest.mark.parametrize("v", [BIG, 2**62 + 1, I64_MAX, I64_MIN, -BIG])
def test_int_conversions_are_exact(v):
    t = tg.tensor(v)
    assert t.item() == v and type(t.item()) is int
    assert int(t) == v
    assert operator.index(t) == v
    assert repr(t) == f"tensor({v})"
    assert repr(tg.tensor([v, 1])) == f"tensor([{v}, {1:>{len(str(v))}}])"
    assert tg.arange(10)[tg.tensor(v % 10)].item() == v % 10


@pytest.mark.parametrize("v", [1e20, -1e20, 2.0**63, 0.5, -2.5, 3.4e38])
def test_int_of_float_tensor_is_pythons_int(v):
    assert int(tg.tensor(v, dtype=tg.float64)) == int(v)
    assert int(tg.tensor(v)) == int(np.float32(v))


def test_int_of_nan_and_inf_raise_as_python_does():
    with pytest.raises(ValueError, match="NaN"):
        int(tg.tensor(float("nan")))
    with pytest.raises(OverflowError, match="infinity"):
        int(tg.tensor(float("inf")))
    with pytest.raises(OverflowError, match="infinity"):
        int(tg.tensor(float("-inf"), dtype=tg.float64))


@pytest.mark.parametrize(
    "args",
    [
        (2**62, 2**62 + 3),
        (BIG, BIG + 2),
        (0, I64_MAX, 2**62),
        (I64_MIN, I64_MAX, 2**62),
        (I64_MAX, I64_MIN, -(2**62)),
        (I64_MAX - 2, I64_MAX),
        (5, 0, -2),
        (0, 7, 3),
        (3, 3),
    ],
)
def test_int_arange_is_exact(args):
    want = list(range(*args))
    t = tg.arange(*args)
    assert t.dtype == tg.int64
    assert t.tolist() == want


def test_int_arange_errors():
    with pytest.raises(RuntimeError, match="step"):
        tg.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="sign"):
        tg.arange(5, 0, 1)
    with pytest.raises(MemoryError):
        tg.arange(I64_MIN, I64_MAX)


@pytest.mark.parametrize(
    "data",
    [
        [2**63],
        2**63,
        [[1], [2**63]],
        [2**63, 1],
        [2**64],
        2**64,
        [-(2**63) - 1],
    ],
)
def test_ints_outside_int64_are_refused(data):
    with pytest.raises((OverflowError, RuntimeError), match="int64|overflow"):
        tg.tensor(data)


@pytest.mark.parametrize("data", [np.array([2**64 - 1], np.uint64), np.array([[0], [2**63]], np.uint64), np.array([1], np.uint64)])
def test_uint64_arrays_are_refused_by_name(data):
    # tapegrad has no uint64 dtype: a TypeError naming it, never a conversion to int64
    with pytest.raises(TypeError, match="uint64"):
        tg.tensor(data)


def test_ints_inside_int64_and_beside_floats_convert():
    assert tg.tensor([I64_MIN, I64_MAX]).tolist() == [I64_MIN, I64_MAX]
    # A float among them makes the data float, as in PyTorch.
    t = tg.tensor([2**63, 1.5], dtype=tg.float64)
    assert t.tolist() == [2.0**63, 1.5]
    t = tg.tensor([1.5, -(2**70)], dtype=tg.float64)
    assert t.tolist() == [1.5, -(2.0**70)]


# ---------------------------------------------------------------------------------------------
# No silent dtype conversion from NumPy (item 17)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [">f8", ">f4", ">i8", ">i4"])
def test_non_native_byte_order_is_refused(dt):
    a = np.array([1.5, 2.0]).astype(dt)
    with pytest.raises(TypeError, match="byte order"):
        tg.tensor(a)
    with pytest.raises(TypeError, match="byte order"):
        tg.from_numpy(a)
    # The suggested conversion works and keeps the values.
    b = a.astype(a.dtype.newbyteorder("="))
    np.testing.assert_array_equal(tg.tensor(b).numpy(), b)


@pytest.mark.parametrize(
    "arr, kind",
    [
        (np.array([1 + 1j]), TypeError),
        (np.array([1.5], np.longdouble), TypeError),
        (np.array([1], object), TypeError),
        (np.array(["a"]), TypeError),
        (np.array([np.datetime64("2020-01-01")]), TypeError),
    ],
)
def test_unsupported_numpy_dtypes_are_refused(arr, kind):
    if arr.dtype == np.longdouble and np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("long double is float64 on this platform")
    with pytest.raises(kind):
        tg.tensor(arr)


def test_zero_dim_numpy_scalars_of_other_widths_stay_zero_dim():
    for v in [np.int32(5), np.uint8(5), np.float16(5), np.int16(-5)]:
        t = tg.tensor(v)
        assert t.shape == ()
        assert t.item() == v


# ---------------------------------------------------------------------------------------------
# NumPy scalars as indices (item 29)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [np.int64(1), np.int32(-1), np.intp(2), np.uint8(3), np.int16(0), np.array(2)])
def test_numpy_integer_scalars_index_like_ints(key):
    a = np.arange(5) * 10
    t = tg.tensor(a)
    assert t[key].shape == ()
    assert t[key].item() == a[key]
    if -3 <= int(key) < 3:
        a2 = np.arange(12).reshape(3, 4)
        np.testing.assert_array_equal(tg.tensor(a2)[key, 1:].numpy(), a2[key, 1:])
    t[key] = 7
    a[key] = 7
    assert t.tolist() == a.tolist()


@pytest.mark.parametrize("flag", [True, False])
def test_numpy_bool_scalar_indexes_like_python_bool(flag):
    a = np.arange(3)
    t = tg.tensor(a)
    assert t[np.bool_(flag)].shape == a[np.bool_(flag)].shape == t[flag].shape
    t[np.bool_(flag)] = 9
    a[np.bool_(flag)] = 9
    assert t.tolist() == a.tolist()


def test_reduction_of_an_empty_tensor_with_a_huge_expanded_axis_does_not_abort():
    # The sum over the empty axis would be 2**40 zeros: refused as MemoryError, never an abort.
    with pytest.raises(MemoryError, match="cannot allocate"):
        tg.ones(1).expand(2**40, 0).sum(1)
    # Summing everything gives one zero; no intermediate the size of the other axis is built.
    assert tg.ones(1, dtype=tg.int64).expand(2**40, 0).sum().item() == 0
