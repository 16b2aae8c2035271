"""The dtypes uint8, int8, int16, int32, float16 and bfloat16 beside bool, int64, float32 and
float64: promotion (PyTorch's `result_type`), casts, wrapping integer arithmetic, NumPy exchange,
reductions, products and gradients. Oracles: a hand-written promotion table, NumPy's modular
integer arithmetic and float16 rounding, and (where installed) PyTorch itself."""

import itertools
import re

import numpy as np
import pytest

import tapegrad as tg

try:
    import torch
except ImportError:  # the torch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
DTYPES = [getattr(tg, n) for n in NAMES]
INTS = [tg.uint8, tg.int8, tg.int16, tg.int32, tg.int64]
FLOATS = [tg.float16, tg.bfloat16, tg.float32, tg.float64]
NUMPY_NAMES = [n for n in NAMES if n != "bfloat16"]


def ones(dt, ndim=1):
    return tg.ones(*([2] * ndim), dtype=dt) if ndim else tg.ones((), dtype=dt)


# ---------------------------------------------------------------- promotion, without torch

# (a, b, result) for tensors with dimensions on both sides
PAIRS = [
    ("bool", "bool", "bool"),
    ("bool", "uint8", "uint8"),
    ("bool", "float16", "float16"),
    ("uint8", "int8", "int16"),
    ("uint8", "int16", "int16"),
    ("uint8", "int32", "int32"),
    ("int8", "int16", "int16"),
    ("int32", "int64", "int64"),
    ("int64", "float16", "float16"),
    ("uint8", "bfloat16", "bfloat16"),
    ("float16", "bfloat16", "float32"),
    ("float16", "float32", "float32"),
    ("bfloat16", "float64", "float64"),
    ("int64", "float32", "float32"),
]


@pytest.mark.parametrize("a, b, want", PAIRS)
def test_promotion_table(a, b, want):
    ta, tb = ones(getattr(tg, a)), ones(getattr(tg, b))
    assert tg.result_type(ta, tb) is getattr(tg, want)
    assert tg.result_type(tb, ta) is getattr(tg, want)
    assert tg.promote_types(getattr(tg, a), getattr(tg, b)) is getattr(tg, want)


# (tensor dtype, tensor ndim, other operand, result): 0-dim tensors and Python scalars count only
# across categories
MIXED = [
    ("int64", 1, 2.5, "float32"),  # a float scalar is the default dtype
    ("uint8", 1, 1000, "uint8"),
    ("int8", 1, True, "int8"),
    ("bool", 1, 3, "int64"),
    ("bool", 1, 2.0, "float32"),
    ("float16", 1, 2.5, "float16"),
    ("bfloat16", 1, 7, "bfloat16"),
    ("int32", 1, ("float64", 0), "float64"),  # 0-dim, higher category: its own dtype
    ("float16", 1, ("float64", 0), "float16"),  # same category: ignored
    ("int8", 1, ("int64", 0), "int8"),
    ("bool", 1, ("uint8", 0), "uint8"),
    ("int32", 0, ("float16", 0), "float16"),  # two 0-dim tensors promote as usual
    ("uint8", 0, ("int8", 0), "int16"),
    ("int16", 0, 2.5, "float32"),
    ("float16", 0, 2.5, "float16"),
]


@pytest.mark.parametrize("dt, ndim, other, want", MIXED)
def test_promotion_with_scalars_and_zero_dim(dt, ndim, other, want):
    t = ones(getattr(tg, dt), ndim)
    o = ones(getattr(tg, other[0]), other[1]) if isinstance(other, tuple) else other
    assert tg.result_type(t, o) is getattr(tg, want)
    assert tg.result_type(o, t) is getattr(tg, want)
    assert (t * o).dtype is getattr(tg, want)


def test_dtype_attributes():
    sizes = dict(zip(NAMES, [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]))
    for n, dt in zip(NAMES, DTYPES):
        assert dt.itemsize == sizes[n]
        assert dt.is_floating_point == (n.startswith("float") or n == "bfloat16")
        assert dt.is_signed == (n not in ("bool", "uint8"))
        assert repr(dt) == f"tapegrad.{n}"
    assert tg.half is tg.float16 and tg.int is tg.int32 and tg.short is tg.int16
    assert [tg.zeros(1, dtype=dt).element_size() for dt in DTYPES] == [sizes[n] for n in NAMES]
    assert tg.long is tg.int64 and tg.float is tg.float32 and tg.double is tg.float64


def test_iinfo_finfo_match_numpy():
    for n in ["uint8", "int8", "int16", "int32", "int64"]:
        info, ref = tg.iinfo(getattr(tg, n)), np.iinfo(n)
        assert (info.min, info.max, info.bits, info.dtype) == (ref.min, ref.max, ref.bits, n)
    for n in ["float16", "float32", "float64"]:
        info, ref = tg.finfo(getattr(tg, n)), np.finfo(n)
        assert (info.eps, info.max, info.min, info.tiny, info.bits) == (
            float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal), ref.bits
        )
        assert info.resolution == 10.0 ** -ref.precision
    bf = tg.finfo(tg.bfloat16)
    assert (bf.eps, bf.tiny, bf.bits) == (2.0**-7, 2.0**-126, 16)
    # the largest bfloat16 is a bfloat16 value; the next float32 above it rounds to inf
    assert tg.tensor([bf.max], dtype=tg.float32).bfloat16().item() == bf.max
    assert tg.finfo().dtype == "float32"
    with pytest.raises(TypeError):
        tg.iinfo(tg.float32)
    with pytest.raises(TypeError):
        tg.finfo(tg.int32)
    with pytest.raises(TypeError):
        tg.iinfo(tg.bool)


# ---------------------------------------------------------------- integer arithmetic and casts


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32"])
def test_integer_arithmetic_wraps_like_numpy(name, rng):
    info = np.iinfo(name)
    a = rng.integers(info.min, info.max, size=50, endpoint=True).astype(name)
    b = rng.integers(info.min, info.max, size=50, endpoint=True).astype(name)
    ta, tb = tg.tensor(a), tg.tensor(b)
    assert ta.dtype is getattr(tg, name)
    with np.errstate(over="ignore"):
        for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta + 100, a + np.array(100).astype(name))]:
            assert got.dtype is getattr(tg, name)
            np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta ^ tb).numpy(), a ^ b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    np.testing.assert_array_equal(tg.maximum(ta, tb).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal((ta < tb).numpy(), a < b)


def test_uint8_overflow_examples():
    assert (tg.tensor([200], dtype=tg.uint8) + 100).tolist() == [44]
    assert (tg.tensor([0], dtype=tg.uint8) - 1).tolist() == [255]
    assert (tg.tensor([100], dtype=tg.int8) * 2).tolist() == [-56]
    assert (-tg.tensor([-128], dtype=tg.int8)).tolist() == [-128]
    # the scalar is converted to the tensor's type before comparing, as PyTorch does
    assert (tg.tensor([200], dtype=tg.uint8) == 456).tolist() == [True]
    # true division of integers is float32
    assert (tg.tensor([3], dtype=tg.int16) / 2).dtype is tg.float32


def test_float_to_int_casts():
    x = tg.tensor([300.0, -1.0, 3e9, -3.7, 2.9])
    assert x.byte().tolist() == [44, 255, 0, 253, 2]
    assert x.char().tolist() == [44, -1, 0, -3, 2]
    assert x.short().tolist() == [300, -1, 0, -3, 2]
    assert x.int().tolist() == [300, -1, -(2**31), -3, 2]
    assert tg.tensor([70000.0]).half().tolist() == [float("inf")]
    assert tg.tensor([1, 2], dtype=tg.int64).to(tg.int8).dtype is tg.int8


def test_tensor_from_python_numbers_checks_range():
    with pytest.raises(RuntimeError, match="without overflow"):
        tg.tensor([300], dtype=tg.uint8)
    with pytest.raises(RuntimeError, match="without overflow"):
        tg.tensor([-1.0], dtype=tg.uint8)
    with pytest.raises(RuntimeError, match="without overflow"):
        tg.tensor(200, dtype=tg.int8)
    assert tg.tensor([-1], dtype=tg.uint8).tolist() == [255]  # PyTorch lets negative ints wrap
    assert tg.tensor([0.1], dtype=tg.float16).item() == float(np.float16(0.1))


# ---------------------------------------------------------------- NumPy exchange


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_numpy_round_trip_keeps_dtype(name, rng):
    a = (rng.standard_normal((3, 4)) * 50).astype(name)
    t = tg.tensor(a)
    assert t.dtype is getattr(tg, name)
    back = t.numpy()
    assert back.dtype == np.dtype(name)
    np.testing.assert_array_equal(back, a)
    # non-contiguous and 0-d arrays too
    np.testing.assert_array_equal(tg.from_numpy(a.T).numpy(), a.T)
    assert tg.tensor(a[0, 0]).dtype is getattr(tg, name)


@pytest.mark.parametrize("bad", ["uint16", "uint32", "uint64", "complex64", "object", "U3", "longdouble", ">f8", ">i4"])
def test_numpy_dtypes_without_a_tensor_dtype_are_refused(bad):
    a = np.zeros(2, dtype=bad)
    with pytest.raises(TypeError, match=re.escape(str(np.dtype(bad))) if bad[0] != ">" else "byte order"):
        tg.from_numpy(a)


def test_bfloat16_numpy_is_a_type_error():
    with pytest.raises(TypeError, match="BFloat16"):
        tg.zeros(2, dtype=tg.bfloat16).numpy()


# ---------------------------------------------------------------- operations on every dtype


def rounded(values, name):
    """float32 values rounded to `name` (float16 by NumPy, bfloat16 by truncating with rounding)."""
    v = np.asarray(values, dtype=np.float32)
    if name == "bfloat16":
        bits = v.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32)
    return v.astype(name).astype(np.float32)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_ops_compute_in_float32_and_round(name, rng):
    dt = getattr(tg, name)
    a = rounded(rng.standard_normal((4, 5)), name)
    b = rounded(rng.standard_normal((5, 3)), name)
    ta, tb = tg.tensor(a).to(dt), tg.tensor(b).to(dt)
    assert ta.dtype is dt
    # the scalar is rounded to the tensor's dtype first, as in PyTorch
    np.testing.assert_array_equal((ta * 3.1).float().numpy(), rounded(a * rounded(3.1, name), name))
    np.testing.assert_array_equal(ta.exp().float().numpy(), rounded(np.exp(a), name))
    np.testing.assert_array_equal((ta @ tb).float().numpy(), rounded(a @ b, name))
    np.testing.assert_array_equal(ta.sum(1).float().numpy(), rounded(a.sum(1), name))
    np.testing.assert_array_equal(ta.mean().float().numpy(), rounded(a.mean(), name))
    assert ta.sum().dtype is dt and ta.max().dtype is dt and ta.argmax().dtype is tg.int64
    assert ta.max().item() == a.max() and ta.argmax().item() == a.argmax()


@pytest.mark.parametrize("dt", DTYPES, ids=NAMES)
def test_shape_index_and_select_ops_keep_dtype(dt):
    src = np.arange(12).reshape(3, 4) % 5
    t = tg.tensor(src).to(dt)
    want = src.astype(bool) if dt is tg.bool else src
    assert t.dtype is dt
    np.testing.assert_array_equal(t[1:, ::2].float().numpy(), want[1:, ::2])
    np.testing.assert_array_equal(t[tg.tensor([2, 0])].float().numpy(), want[[2, 0]])
    np.testing.assert_array_equal(tg.cat([t, t]).float().numpy(), np.concatenate([want, want]))
    np.testing.assert_array_equal(tg.stack([t, t], 1).float().numpy(), np.stack([want, want], 1))
    cond = tg.tensor(src > 1)
    w = tg.where(cond, t, t.flip(0) if hasattr(t, "flip") else t)
    assert w.dtype is dt
    assert t.max().dtype is dt
    if dt is not tg.bool:  # PyTorch has no bool argmax either
        assert t.argmax().item() == int(np.argmax(want))
    assert (t == t).all().item()


@pytest.mark.parametrize("dt", INTS + [tg.bool], ids=lambda d: d.name)
def test_integer_sums_are_int64_and_mean_is_refused(dt):
    t = tg.tensor([1, 0, 1]).to(dt)
    assert t.sum().dtype is tg.int64 and t.sum().item() == 2
    assert t.prod().dtype is tg.int64
    with pytest.raises(RuntimeError, match="mean"):
        t.mean()


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_gradients_in_the_tensors_dtype(name):
    dt = getattr(tg, name)
    x = tg.tensor([0.5, -1.25, 2.0]).to(dt).requires_grad_()
    (x * x).sum().backward()
    assert x.grad.dtype is dt
    np.testing.assert_array_equal(x.grad.float().numpy(), [1.0, -2.5, 4.0])
    y = tg.tensor([[1.0, 2.0]]).to(dt).requires_grad_()
    w = tg.tensor([[3.0], [4.0]]).to(dt).requires_grad_()
    (y @ w).sum().backward()
    assert y.grad.dtype is dt and w.grad.dtype is dt
    np.testing.assert_array_equal(y.grad.float().numpy(), [[3.0, 4.0]])
    np.testing.assert_array_equal(w.grad.float().numpy(), [[1.0], [2.0]])


def test_integer_tensors_cannot_require_grad():
    for dt in INTS:
        with pytest.raises(RuntimeError):
            tg.zeros(2, dtype=dt).requires_grad_()


def test_factories_take_every_dtype():
    for dt in DTYPES:
        assert tg.zeros(2, dtype=dt).dtype is dt
        assert tg.full((2,), 1, dtype=dt).tolist() == ([True, True] if dt is tg.bool else [1, 1])
        assert tg.eye(2, dtype=dt).dtype is dt
    assert tg.arange(5, dtype=tg.int8).tolist() == [0, 1, 2, 3, 4]
    assert tg.arange(0, 1, 0.25, dtype=tg.float16).tolist() == [0.0, 0.25, 0.5, 0.75]


def test_repr_names_the_dtype():
    assert repr(tg.tensor([1, 2], dtype=tg.int32)) == "tensor([1, 2], dtype=tapegrad.int32)"
    assert repr(tg.tensor([1.5], dtype=tg.float16)) == "tensor([1.5000], dtype=tapegrad.float16)"


# ---------------------------------------------------------------- against PyTorch


def torch_dtype(dt):
    return getattr(torch, dt.name)


SCALARS = [True, 3, -2, 2.5]


@needs_torch
def test_result_type_matches_torch_for_every_pair():
    shapes = [(2,), ()]
    bad = []
    for (da, sa), (db, sb) in itertools.product(itertools.product(DTYPES, shapes), repeat=2):
        ta, tb = tg.ones(sa, dtype=da), tg.ones(sb, dtype=db)
        want = torch.result_type(torch.ones(sa, dtype=torch_dtype(da)), torch.ones(sb, dtype=torch_dtype(db)))
        got = tg.result_type(ta, tb)
        if got.name != str(want).removeprefix("torch."):
            bad.append((da, sa, db, sb, got, want))
    for (da, sa), s in itertools.product(itertools.product(DTYPES, shapes), SCALARS):
        want = torch.result_type(torch.ones(sa, dtype=torch_dtype(da)), s)
        got = tg.result_type(tg.ones(sa, dtype=da), s)
        if got.name != str(want).removeprefix("torch."):
            bad.append((da, sa, s, got, want))
    assert not bad


def same(got, want):
    """Same dtype name and the same values (NaN equal to NaN)."""
    if got.dtype.name != str(want.dtype).removeprefix("torch."):
        return False
    return np.array_equal(np.array(got.double().tolist()), np.array(want.double().tolist()), equal_nan=True)


@needs_torch
def test_op_result_dtypes_and_values_match_torch():
    """`+`, `*`, `<` and `/` over every pair of dtypes and scalar kinds: same dtype (or same error
    kind) and the same values as PyTorch."""
    vals = [0, 1, 2, 3]
    mismatches = []
    operands = [(dt, shape) for dt in DTYPES for shape in [(4,), ()]]
    for (da, sa), (db, sb) in itertools.product(operands, repeat=2):
        def make(lib, dt, shape):
            mk = lib.tensor(vals if shape else 3, dtype=getattr(lib, dt.name))
            return mk

        for op in ["add", "mul", "lt", "div", "sub"]:
            try:
                want = getattr(torch, op)(make(torch, da, sa), make(torch, db, sb))
            except RuntimeError:
                want = RuntimeError
            try:
                got = getattr(tg, op)(make(tg, da, sa), make(tg, db, sb))
            except RuntimeError:
                got = RuntimeError
            if want is RuntimeError or got is RuntimeError:
                if want is not got:
                    mismatches.append((op, da, sa, db, sb, got, want))
                continue
            if not same(got, want):
                mismatches.append((op, da, sa, db, sb, got, want))
    for (da, sa), s in itertools.product(operands, SCALARS):
        for op in ["add", "mul", "lt", "sub"]:
            try:
                want = getattr(torch, op)(make(torch, da, sa), s)
            except RuntimeError:
                want = RuntimeError
            try:
                got = getattr(tg, op)(make(tg, da, sa), s)
            except RuntimeError:
                got = RuntimeError
            if want is RuntimeError or got is RuntimeError:
                if want is not got:
                    mismatches.append((op, da, sa, s, got, want))
                continue
            if not same(got, want):
                mismatches.append((op, da, sa, s, got, want))
    assert not mismatches, [(m[0], *[str(x) for x in m[1:-2]], m[-2], m[-1]) for m in mismatches[:8]]


@needs_torch
@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_float_to_int_casts_match_torch(name):
    vals = [300.0, -1.0, 3e9, -3.7, 2.9, 255.5, -129.0, 1e20]
    want = torch.tensor(vals).to(getattr(torch, name)).tolist()
    assert tg.tensor(vals).to(getattr(tg, name)).tolist() == want


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_unary_ops_match_torch_bitwise(name, rng):
    a = rng.standard_normal(64).astype(np.float32) * 3
    t = tg.tensor(a).to(getattr(tg, name))
    r = torch.tensor(a).to(getattr(torch, name))
    for op in ["exp", "sin", "tanh", "sigmoid", "abs", "neg", "sqrt", "log1p"]:
        got = getattr(t, op)().float().numpy()
        want = getattr(r, op)().float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=op)
    np.testing.assert_array_equal((t + 0.1).float().numpy(), (r + 0.1).float().numpy())
    np.testing.assert_array_equal(t.sum().float().numpy(), r.sum().float().numpy())
    np.testing.assert_array_equal(t.cumsum(0).float().numpy(), r.cumsum(0).float().numpy())


# ---------------------------------------------------------------- smaller rules


def test_index_tensors_of_narrow_types():
    t = tg.arange(5) * 10
    assert t[tg.tensor([3, 1], dtype=tg.int32)].tolist() == [30, 10]
    assert t[tg.tensor([1, 0, 1, 0, 0], dtype=tg.uint8)].tolist() == [0, 20]  # a mask, as in PyTorch
    assert t[np.array([4, 0], dtype=np.int16)].tolist() == [40, 0]  # NumPy arrays index as integers
    assert t[np.int8(2)].item() == 20
    with pytest.raises(IndexError):
        t[tg.tensor([1], dtype=tg.int16)]


def test_any_all_of_uint8_are_uint8_and_int_dot_keeps_dtype():
    u = tg.tensor([0, 3], dtype=tg.uint8)
    assert u.any().dtype is tg.uint8 and u.any().item() == 1 and u.all().item() == 0
    assert tg.tensor([0, 3], dtype=tg.int8).any().dtype is tg.bool
    a = tg.tensor([100, 100], dtype=tg.int8)
    d = tg.dot(a, a)
    assert d.dtype is tg.int8 and d.item() == np.int8(np.int64(20000).astype(np.int8))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_softmax_is_float32_rounded_once(name, rng):
    a = rounded(rng.standard_normal((3, 5)) * 4, name)
    t = tg.tensor(a).to(getattr(tg, name))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(t.softmax(1).float().numpy(), rounded(e / e.sum(1, keepdims=True), name), rtol=0, atol=1e-6)
    assert t.softmax(1).dtype is getattr(tg, name)


@pytest.mark.parametrize("dt", DTYPES, ids=NAMES)
def test_save_load_round_trip(dt, tmp_path):
    t = tg.tensor([0, 1, 3]).to(dt)
    tg.save({"t": t}, tmp_path / "t.npz")
    back = tg.load(tmp_path / "t.npz")["t"]
    assert back.dtype is dt and back.tolist() == t.tolist()


def _ops_table():
    """(name, f(lib, dtype_name)) over both libraries; each builds its own inputs."""
    base, other = [0, 3, -2, 7], [5, -1, 2, 2]

    def mk(L, n, v=base):
        return L.tensor(v, dtype=L.float64).to(getattr(L, n))

    return {
        "abs": lambda L, n: mk(L, n).abs(), "neg": lambda L, n: -mk(L, n), "sign": lambda L, n: mk(L, n).sign(),
        "exp": lambda L, n: mk(L, n).exp(), "sqrt": lambda L, n: mk(L, n).sqrt(), "floor": lambda L, n: mk(L, n).floor(),
        "round": lambda L, n: mk(L, n).round(), "sigmoid": lambda L, n: mk(L, n).sigmoid(),
        "relu": lambda L, n: mk(L, n).relu(), "square": lambda L, n: mk(L, n).square(),
        "sum": lambda L, n: mk(L, n).sum(), "max": lambda L, n: mk(L, n).max(), "min": lambda L, n: mk(L, n).min(),
        "argmax": lambda L, n: mk(L, n).argmax(), "prod": lambda L, n: mk(L, n).prod(),
        "cumsum": lambda L, n: mk(L, n).cumsum(0), "mean": lambda L, n: mk(L, n).mean(), "var": lambda L, n: mk(L, n).var(),
        "maxdim": lambda L, n: mk(L, n).max(0)[0], "sort": lambda L, n: mk(L, n).sort()[0], "any": lambda L, n: mk(L, n).any(),
        "matmul": lambda L, n: mk(L, n).reshape(2, 2) @ mk(L, n).reshape(2, 2),
        "floordiv": lambda L, n: mk(L, n) // mk(L, n, other), "rem_s": lambda L, n: mk(L, n) % 3,
        "pow_s": lambda L, n: mk(L, n) ** 2, "div_s": lambda L, n: mk(L, n) / 2,
        "shl": lambda L, n: mk(L, n) << 2, "and": lambda L, n: mk(L, n) & mk(L, n, other),
        "clamp": lambda L, n: mk(L, n).clamp(0, 5), "clampf": lambda L, n: mk(L, n).clamp(0.5, 5),
        "where": lambda L, n: L.where(mk(L, "bool"), mk(L, n), mk(L, n, other)),
        "cat_mixed": lambda L, n: L.cat([mk(L, n), mk(L, "int64")]), "maximum": lambda L, n: L.maximum(mk(L, n), mk(L, n, other)),
        "eq": lambda L, n: mk(L, n) == 3, "lt_f": lambda L, n: mk(L, n) < 2.5, "isnan": lambda L, n: mk(L, n).isnan(),
        "softmax": lambda L, n: mk(L, n).softmax(0), "full_like": lambda L, n: L.full_like(mk(L, n), 2),
        "mask": lambda L, n: mk(L, n)[mk(L, n) > 0], "gather": lambda L, n: mk(L, n).gather(0, L.tensor([3, 0])),
        "iadd_f": lambda L, n: mk(L, n).__iadd__(2.5), "copy_": lambda L, n: mk(L, n).copy_(mk(L, "float64", [1.7, -1.7, 300, 2])),
        "item": lambda L, n: L.tensor(mk(L, n)[1].item()),
    }


@needs_torch
@pytest.mark.parametrize("op", sorted(_ops_table()))
def test_ops_on_every_dtype_match_torch(op):
    """Each operation on each dtype: the same dtype and values as PyTorch (within the 16-bit types'
    rounding), or an error where PyTorch errors."""
    f = _ops_table()[op]
    bad = []
    for n in NAMES:
        outs = []
        for lib in (torch, tg):
            try:
                outs.append(f(lib, n))
            except (RuntimeError, TypeError) as e:  # PyTorch's NotImplementedError is a RuntimeError
                outs.append(type(e) if isinstance(e, TypeError) else RuntimeError)
        want, got = outs
        if isinstance(want, type) or isinstance(got, type):
            if want is not got:
                bad.append((n, want, got))
        elif str(want.dtype).removeprefix("torch.") != got.dtype.name or not np.allclose(
            np.array(want.double().tolist()), np.array(got.double().tolist()), rtol=1e-2, atol=1e-2, equal_nan=True
        ):
            bad.append((n, want, got))
    assert not bad


def test_sum_and_mean_take_a_dtype():
    u = tg.tensor([200, 100], dtype=tg.uint8)
    assert u.sum().item() == 300 and u.sum().dtype is tg.int64
    s = u.sum(dtype=tg.uint8)
    assert s.dtype is tg.uint8 and s.item() == 44  # wraps, as PyTorch's
    assert tg.tensor([1, 2]).mean(dtype=tg.float64).item() == 1.5
    x = tg.tensor([0.5, 1.5], dtype=tg.float16, requires_grad=True)
    y = x.sum(dtype=tg.float32)
    assert y.dtype is tg.float32
    y.backward()
    assert x.grad.dtype is tg.float16 and x.grad.tolist() == [1.0, 1.0]


def test_int32_indices_for_index_select_and_embedding():
    w = tg.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    idx = tg.tensor([2, 0], dtype=tg.int32)
    assert w.index_select(0, idx).tolist() == [[4.0, 5.0], [0.0, 1.0]]
    assert tg.nn.functional.embedding(idx, w).tolist() == [[4.0, 5.0], [0.0, 1.0]]
    with pytest.raises(RuntimeError):
        w.index_select(0, tg.tensor([1], dtype=tg.int16))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizers_update_half_parameters(name, opt):
    """A 16-bit parameter is updated (in float32, rounded on store) close to a float32 run."""
    runs = []
    for dt in (getattr(tg, name), tg.float32):
        p = tg.tensor([1.0, 2.0, -0.5], dtype=dt, requires_grad=True)
        o = getattr(tg.optim, opt)([p], lr=0.1)
        for _ in range(3):
            o.zero_grad()
            (p * p).sum().backward()
            o.step()
        assert p.dtype is dt
        runs.append(np.array(p.tolist()))
    assert not np.allclose(runs[1], [1.0, 2.0, -0.5])  # it moved
    np.testing.assert_allclose(runs[0], runs[1], rtol=2e-2, atol=2e-2)


def test_prod_and_cumsum_keep_a_requested_dtype():
    u = tg.tensor([16, 20], dtype=tg.uint8)
    assert u.prod().item() == 320 and u.prod().dtype is tg.int64
    assert u.prod(dtype=tg.uint8).item() == 320 % 256
    assert u.cumsum(0, dtype=tg.uint8).tolist() == [16, 36]
    assert tg.tensor([200, 100], dtype=tg.uint8).cumsum(0, dtype=tg.uint8).tolist() == [200, 44]
    assert u.cumprod(0, dtype=tg.int16).dtype is tg.int16
