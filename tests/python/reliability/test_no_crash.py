""""No crash, ever" for the Python API (the Rust half is tests/no_panic.rs).

Hypothesis drives random programs over a pool of tensors: shapes with zero-size dimensions and
0-d tensors; float32, float64, int64 and bool; odd values (NaN, infinities, extreme ints). Each
step is one call of the public API (API.md sections 1-3), valid or not: arithmetic with tensors,
Python scalars and junk, unary ops, comparisons, matmul, shape ops, cat/stack, reductions, dtype
conversions, indexing and item assignment, in-place ops, requires_grad toggles, .grad, hooks,
backward / autograd.grad with random gradients, retain_graph / create_graph, and custom functions
in the three spellings, including invalid ones.

The property: every call returns, or raises one of the documented kinds (RuntimeError, IndexError,
ValueError, TypeError, MemoryError), or the user's own exception from a custom function or hook,
unchanged (the very object raised). OverflowError is accepted only where an argument is an int
outside int64 (Python's own conversion error; PyTorch raises it too). Anything else, such as
SystemError or pyo3's PanicException (a BaseException), fails with the program so far.

Results that succeed are checked against NumPy where cheap: element-wise and broadcast arithmetic,
comparisons, unary ops, shape ops, cat/stack, reductions, indexing and in-place writes (shape,
dtype, values with NaN equal to NaN). At the end of every example a fresh computation on new
leaves must still give the right gradient, with grad mode back on.

Examples: TAPEGRAD_NO_CRASH_EXAMPLES (default 300).
"""

import gc
import math
import operator
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tapegrad as tg

pytestmark = pytest.mark.filterwarnings("ignore")

N_EXAMPLES = int(os.environ.get("TAPEGRAD_NO_CRASH_EXAMPLES", "300"))
MAX_STEPS = 24
POOL_MAX = 16

ALLOWED = (RuntimeError, IndexError, ValueError, TypeError, MemoryError)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

DTYPES = [tg.float32, tg.float64, tg.int64, tg.bool]
NP_DTYPE = {tg.float32: np.float32, tg.float64: np.float64, tg.int64: np.int64, tg.bool: np.bool_}
FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -0.5, 1e-300, 1e300, 3e38, 1e-45, math.nan, math.inf, -math.inf]
# Past 2**53 an int64 no longer fits in a float64: these catch any path that goes through f64.
INTS = [0, 1, -3, 7, 2**31, 2**32 + 1, 2**53 + 1, -(2**53) - 3, 2**62 + 3, I64_MAX, I64_MIN]
HUGE_INTS = [2**64, -(2**70), 2**2000]
JUNK = ["abc", None, [1, "x"], object(), 1.5j, {"a": 1}, (), b"x"]


class UserError(Exception):
    """Raised by the custom functions and hooks below; must reach the caller as the same object."""


RAISED: list = []  # every UserError instance raised so far in this example


def user_error(where):
    e = UserError(f"raised on purpose in {where}")
    RAISED.append(e)
    raise e


class Crash(AssertionError):
    pass


def has_huge_int(obj, depth=0):
    if isinstance(obj, bool):
        return False
    if isinstance(obj, int):
        return not I64_MIN <= obj <= I64_MAX
    if isinstance(obj, (list, tuple)) and depth < 3:
        return any(has_huge_int(o, depth + 1) for o in obj)
    if isinstance(obj, dict):
        return any(has_huge_int(o, depth + 1) for o in obj.values())
    if isinstance(obj, slice):
        return any(has_huge_int(o, depth + 1) for o in (obj.start, obj.stop, obj.step))
    return False


class Program:
    """The pool, the log of calls, and the guard every call goes through."""

    def __init__(self, data):
        self.data = data
        self.pool = []
        self.log = []
        self.calls = 0
        self.errors = 0

    def draw(self, strategy, label=None):
        return self.data.draw(strategy, label=label)

    def fail(self, why):
        steps = "\n".join(f"  {i:3}: {s}" for i, s in enumerate(self.log))
        raise Crash(f"{why}\nprogram so far:\n{steps}")

    def call(self, desc, fn, args=(), overflow_ok=False):
        """Runs fn(); returns (True, result) or (False, exception) for an accepted exception.
        ``overflow_ok``: an OverflowError is Python's own answer here (``int()`` of an infinity)."""
        self.log.append(desc)
        self.calls += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return True, fn()
        except UserError as e:
            if not any(e is r for r in RAISED):
                self.fail(f"a UserError that was not raised by the user's code: {e!r}")
            self.errors += 1
            return False, e
        except OverflowError as e:
            if not (overflow_ok or has_huge_int(args)):
                self.fail(f"OverflowError without an out-of-range int argument: {e!r}")
            self.errors += 1
            return False, e
        except ALLOWED as e:
            self.errors += 1
            return False, e
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - PanicException derives from BaseException
            self.fail(f"{desc} raised {type(e).__module__}.{type(e).__name__}: {e}")

    def must(self, desc, fn):
        ok, r = self.call(desc, fn)
        if not ok:
            self.fail(f"{desc} must succeed, raised {type(r).__name__}: {r}")
        return r

    def push(self, t):
        if isinstance(t, tg.Tensor) and t.numel() <= 4096:
            self.pool.append(t)
            if len(self.pool) > POOL_MAX:
                self.pool.pop(0)

    def pick(self, label="t"):
        return self.pool[self.draw(st.integers(0, len(self.pool) - 1), label)]


# ---------------------------------------------------------------------------------------------
# Values and tensors


def shapes(max_dims=3, max_size=3):
    return st.lists(st.integers(0, max_size), min_size=0, max_size=max_dims).map(tuple)


def values(dtype):
    if dtype in (tg.float32, tg.float64):
        return st.one_of(st.sampled_from(FLOATS), st.floats(-10, 10, width=32))
    if dtype is tg.int64:
        return st.one_of(st.sampled_from(INTS), st.integers(-5, 5))
    return st.booleans()


def array(p, shape, dtype):
    n = int(np.prod(shape)) if shape else 1
    vals = p.draw(st.lists(values(dtype), min_size=n, max_size=n), "values")
    return np.array(vals, dtype=NP_DTYPE[dtype]).reshape(shape)


def new_tensor(p, shape=None, dtype=None, allow_grad=True):
    """A fresh tensor, built in one of several ways; returns (tensor, numpy copy)."""
    if shape is None:
        shape = p.draw(shapes(), "shape")
    if dtype is None:
        dtype = p.draw(st.sampled_from(DTYPES), "dtype")
    arr = array(p, shape, dtype)
    how = p.draw(st.integers(0, 3), "how")
    if how == 2 and np.array(arr.tolist()).shape != arr.shape:
        how = 0  # a (0, 3) array's tolist() is [], which is shape (0,)
    rg = allow_grad and dtype in (tg.float32, tg.float64) and p.draw(st.booleans(), "requires_grad")
    if how == 0:
        t = p.must(f"tg.tensor(<{arr.dtype} {shape}>, requires_grad={rg})",
                   lambda: tg.tensor(arr, requires_grad=rg))
    elif how == 1:
        t = p.must(f"tg.from_numpy(<{arr.dtype} {shape}>)", lambda: tg.from_numpy(arr.copy()))  # shares: `arr` stays the oracle
        if rg:
            t.requires_grad = True
    elif how == 2:
        t = p.must(f"tg.tensor(<list {shape}>, dtype={dtype})",
                   lambda: tg.tensor(arr.tolist(), dtype=dtype, requires_grad=rg))
    else:
        t = p.must(f"tg.full({shape}, v, dtype={dtype})",
                   lambda: tg.full(shape, arr.flat[0].item() if arr.size else 0, dtype=dtype))
        arr = np.full(shape, arr.flat[0] if arr.size else 0, dtype=NP_DTYPE[dtype])
        if rg:
            t.requires_grad = True
    return t, arr


def snap(p, t):
    """A NumPy copy of a tensor's current values (must always work)."""
    return np.array(p.must("t.detach().numpy()", lambda: t.detach().numpy()), copy=True)


# ---------------------------------------------------------------------------------------------
# NumPy oracles

CATEGORY = {tg.bool: 0, tg.int64: 1, tg.float32: 2, tg.float64: 2}
ORDER = [tg.bool, tg.int64, tg.float32, tg.float64]


def promote(*dts):
    return max(dts, key=ORDER.index)


def scalar_dtype(s):
    if isinstance(s, bool):
        return tg.bool
    if isinstance(s, int):
        return tg.int64
    return tg.float32  # the default float dtype


def result_dtype(operands):
    """PyTorch's promotion: tensors with dims, then 0-d tensors, then Python scalars, each group
    taking part only when it is of a higher category (bool < int < float)."""
    dim = [o.dtype for o in operands if isinstance(o, tg.Tensor) and o.ndim > 0]
    zero = [o.dtype for o in operands if isinstance(o, tg.Tensor) and o.ndim == 0]
    scal = [scalar_dtype(o) for o in operands if not isinstance(o, tg.Tensor)]
    result = None
    for group in (dim, zero, scal):
        if not group:
            continue
        g = promote(*group)
        if result is None:
            result = g
        elif CATEGORY[g] > CATEGORY[result]:
            result = g if group is scal else promote(result, g)
    return result


def close(actual, expected, dtype, what, p, rtol=None):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        p.fail(f"{what}: shape {actual.shape}, NumPy says {expected.shape}")
    if dtype in (tg.float32, tg.float64):
        if rtol is None:
            rtol = 2e-6 if dtype is tg.float32 else 1e-12
        exp = expected.astype(np.float64)
        act = actual.astype(np.float64)
        with np.errstate(all="ignore"):
            bad = ~((np.isnan(act) & np.isnan(exp)) | (act == exp)
                    | (np.abs(act - exp) <= 1e-30 + rtol * np.abs(exp)))
    else:
        bad = actual != expected
    if np.any(bad):
        i = tuple(np.argwhere(bad)[0])
        p.fail(f"{what}: value {actual[i]!r} at {i}, NumPy says {expected[i]!r}")


def np_compute(arrs, fn, dtype):
    """fn on the operands cast to the result dtype (integer results wrap, as in PyTorch)."""
    nd = NP_DTYPE[dtype]
    cast = [a.astype(nd) if isinstance(a, np.ndarray) else nd(a) for a in arrs]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fn(*cast))


# ---------------------------------------------------------------------------------------------
# Operations: each draws its arguments, makes calls through p.call, and checks what succeeds.


def operand(p, allow_junk=True):
    """A second operand: a pool tensor, a fresh tensor (kept as NumPy too), a scalar or junk."""
    kind = p.draw(st.sampled_from(["pool", "fresh", "float", "int", "bool", "huge", "junk"]
                                  if allow_junk else ["pool", "fresh", "float", "int", "bool"]), "operand")
    if kind == "pool":
        t = p.pick("b")
        return t, snap(p, t)
    if kind == "fresh":
        return new_tensor(p)
    if kind == "float":
        v = p.draw(st.sampled_from(FLOATS + [0.5, 3.0]), "scalar")
        return v, v
    if kind == "int":
        v = p.draw(st.sampled_from(INTS + [2, -1]), "scalar")
        return v, v
    if kind == "bool":
        v = p.draw(st.booleans(), "scalar")
        return v, v
    if kind == "huge":
        return (v := p.draw(st.sampled_from(HUGE_INTS), "scalar")), None
    return p.draw(st.sampled_from(JUNK), "junk"), None


BINARY = {
    "+": (operator.add, np.add), "-": (operator.sub, np.subtract), "*": (operator.mul, np.multiply),
    "/": (operator.truediv, np.true_divide), "**": (operator.pow, np.power),
}
METHODS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
COMPARE = {
    "<": (operator.lt, np.less), "<=": (operator.le, np.less_equal), ">": (operator.gt, np.greater),
    ">=": (operator.ge, np.greater_equal), "==": (operator.eq, np.equal), "!=": (operator.ne, np.not_equal),
}


def op_binary(p):
    a = p.pick("a")
    an = snap(p, a)
    b, bn = operand(p)
    name = p.draw(st.sampled_from(sorted(BINARY) + sorted(METHODS) + ["r" + k for k in BINARY]), "op")
    # A sequence times an int tensor is Python's repetition (the tensor is an index): a huge count
    # is Python's own OverflowError ("repeated string is too long"), as with PyTorch.
    repeats = isinstance(b, (str, bytes, list, tuple))
    if name in METHODS:
        sym = METHODS[name]
        ok, r = p.call(f"a.{name}(b) a={a.dtype}{a.shape} b={b!r:.40}", lambda: getattr(a, name)(b), (b,), repeats)
        x, y, xn, yn = a, b, an, bn
    elif name.startswith("r"):
        sym = name[1:]
        ok, r = p.call(f"b {sym} a a={a.dtype}{a.shape} b={b!r:.40}", lambda: BINARY[sym][0](b, a), (b,), repeats)
        x, y, xn, yn = b, a, bn, an
    else:
        sym = name
        ok, r = p.call(f"a {sym} b a={a.dtype}{a.shape} b={b!r:.40}", lambda: BINARY[sym][0](a, b), (b,), repeats)
        x, y, xn, yn = a, b, an, bn
    if bn is None:  # junk or out-of-range operand ('abc' * int64 0-d tensor is str repetition, fine)
        if ok and isinstance(r, tg.Tensor):
            p.fail(f"{sym} with operand {b!r:.40} succeeded: {r!r:.80}")
        return
    try:
        bshape = np.broadcast_shapes(np.shape(xn), np.shape(yn))
    except ValueError:
        if ok:
            p.fail(f"{sym} of shapes {np.shape(xn)} and {np.shape(yn)} succeeded (NumPy cannot broadcast)")
        return
    if not ok:
        return
    p.push(r)
    if tuple(r.shape) != bshape:
        p.fail(f"{sym}: shape {r.shape}, NumPy broadcasting says {bshape}")
    dts = [o.dtype for o in (x, y) if isinstance(o, tg.Tensor)] + [scalar_dtype(o) for o in (x, y)
                                                                   if not isinstance(o, tg.Tensor)]
    if all(d is tg.bool for d in dts):
        return  # bool arithmetic: checked for shape only
    expected = result_dtype([x, y])
    if sym == "/" and CATEGORY[expected] < 2:
        expected = tg.float32
    if r.dtype is not expected:
        p.fail(f"{sym} of {dts}: dtype {r.dtype}, PyTorch's promotion gives {expected}")
    if sym == "**" and CATEGORY[expected] < 2:
        return  # integer powers: negative exponents are an error, skip values
    close(snap(p, r), np_compute([xn, yn], BINARY[sym][1], expected), expected, f"{sym} values", p,
          rtol=1e-5 if sym == "**" and expected is tg.float32 else None)


def op_compare(p):
    a = p.pick("a")
    an = snap(p, a)
    b, bn = operand(p)
    sym = p.draw(st.sampled_from(sorted(COMPARE)), "cmp")
    ok, r = p.call(f"a {sym} b a={a.dtype}{a.shape} b={b!r:.40}", lambda: COMPARE[sym][0](a, b), (b,))
    if bn is None or not ok:
        if ok and not isinstance(r, (bool, type(NotImplemented))) and sym not in ("==", "!="):
            p.fail(f"{sym} with junk {b!r:.40} gave {r!r:.80}")
        return
    try:
        bshape = np.broadcast_shapes(np.shape(an), np.shape(bn))
    except ValueError:
        if ok:
            p.fail(f"{sym} of shapes {an.shape} and {np.shape(bn)} succeeded (NumPy cannot broadcast)")
        return
    p.push(r)
    if r.dtype is not tg.bool or tuple(r.shape) != bshape:
        p.fail(f"{sym}: {r.dtype}{r.shape}, expected bool{bshape}")
    dt = result_dtype([a, b])
    close(snap(p, r), np_compute([an, bn], COMPARE[sym][1], dt), tg.bool, f"{sym} values", p)


UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)),
    # issue 15 (tests/python/ops/test_elementwise.py has their own tests)
    "log1p": np.log1p, "expm1": np.expm1, "log2": np.log2, "log10": np.log10, "exp2": np.exp2,
    "square": np.square, "reciprocal": np.reciprocal, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
}


def op_unary(p):
    a = p.pick("a")
    an = snap(p, a)
    name = p.draw(st.sampled_from(sorted(UNARY) + ["-", "abs()", "clamp", "clip"]), "unary")
    if name in ("clamp", "clip"):
        lo = p.draw(st.one_of(st.none(), st.sampled_from(FLOATS), st.integers(-3, 3), st.sampled_from(JUNK[:2])))
        hi = p.draw(st.one_of(st.none(), st.sampled_from(FLOATS), st.integers(-3, 3), st.sampled_from(HUGE_INTS)))
        ok, r = p.call(f"a.{name}(min={lo!r}, max={hi!r}) a={a.dtype}{a.shape}",
                       lambda: getattr(a, name)(min=lo, max=hi), (lo, hi))
        if ok:
            p.push(r)
            if tuple(r.shape) != an.shape:
                p.fail(f"clamp changed the shape {an.shape} -> {r.shape}")
            if a.dtype in (tg.float32, tg.float64) and r.dtype is a.dtype and isinstance(lo, (float, int, type(None))) \
                    and isinstance(hi, (float, int, type(None))) and (lo is not None or hi is not None):
                nd = NP_DTYPE[a.dtype]
                exp = an
                with np.errstate(all="ignore"):
                    if lo is not None:
                        exp = np.where(np.isnan(exp), exp, np.maximum(exp, nd(lo)))
                    if hi is not None:
                        exp = np.where(np.isnan(exp), exp, np.minimum(exp, nd(hi)))
                if not (lo is not None and math.isnan(lo)) and not (hi is not None and math.isnan(hi)):
                    close(snap(p, r), exp, a.dtype, "clamp values", p)
        return
    fn = {"-": operator.neg, "abs()": abs}.get(name) or getattr(tg.Tensor, name)
    ok, r = p.call(f"{name}(a) a={a.dtype}{a.shape}", lambda: fn(a))
    if not ok:
        return
    p.push(r)
    if tuple(r.shape) != an.shape:
        p.fail(f"{name} changed the shape {an.shape} -> {r.shape}")
    key = {"-": "neg", "abs()": "abs"}.get(name, name)
    if a.dtype in (tg.float32, tg.float64):
        if r.dtype is not a.dtype:
            p.fail(f"{name} of {a.dtype} gave {r.dtype}")
        close(snap(p, r), np_compute([an], UNARY[key], a.dtype), a.dtype, f"{name} values", p,
              rtol=1e-5 if a.dtype is tg.float32 else 1e-12)
    elif a.dtype is tg.int64 and key in ("neg", "abs", "relu"):
        close(snap(p, r), np_compute([an], UNARY[key], tg.int64), r.dtype, f"{name} values", p)


def op_matmul(p):
    a, b = p.pick("a"), p.pick("b")
    if p.draw(st.integers(0, 5), "junk?") == 0:
        b = p.draw(st.sampled_from(JUNK + [[1.0, 2.0], 2.0]), "junk")
    how = p.draw(st.sampled_from(["@", "mm", "matmul", "bmm"]), "how")
    fn = {"@": operator.matmul, "mm": tg.Tensor.mm, "matmul": tg.Tensor.matmul, "bmm": tg.Tensor.bmm}[how]
    ok, r = p.call(f"a {how} b a={a.dtype}{a.shape} b={getattr(b, 'shape', b)!r:.40}", lambda: fn(a, b))
    if not ok or not isinstance(b, tg.Tensor):
        return
    p.push(r)
    try:
        expected = np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape
    except ValueError:
        p.fail(f"{how} of {a.shape} and {b.shape} succeeded; NumPy refuses")
    if tuple(r.shape) != expected:
        p.fail(f"{how}: shape {r.shape}, NumPy says {expected}")
    if how == "mm" and (a.ndim != 2 or b.ndim != 2):
        p.fail(f"mm accepted {a.ndim}-d and {b.ndim}-d operands")
    dt = result_dtype([a, b])
    if dt is tg.float64 and r.dtype is tg.float64:
        an, bn = snap(p, a).astype(np.float64), snap(p, b).astype(np.float64)
        if np.all(np.isfinite(an)) and np.all(np.isfinite(bn)) and np.abs(an).max(initial=0) < 1e10 \
                and np.abs(bn).max(initial=0) < 1e10:
            close(snap(p, r), np.matmul(an, bn), tg.float64, f"{how} values", p, rtol=1e-9)


def dim_arg(p, label="dim"):
    return p.draw(st.one_of(st.integers(-4, 4), st.sampled_from([1.5, "0", None, 2**70, True])), label)


def np_or_none(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception:  # noqa: BLE001 - NumPy's refusal is the answer
        return None


def norm_dim(d, n):
    if not isinstance(d, int) or isinstance(d, bool):
        return None
    n = max(n, 1)
    return d + n if -n <= d < 0 else d if 0 <= d < n else None


def op_shape(p):
    a = p.pick("a")
    an = snap(p, a)
    kind = p.draw(st.sampled_from(["transpose", "t", "reshape", "view", "squeeze", "unsqueeze", "expand",
                                   "flatten", "permute", "expand_as", "contiguous", "clone", "detach",
                                   "narrow"]), "shape op")
    expected = None  # a function of the NumPy array, when the op is well defined on it
    if kind == "transpose":
        d0, d1 = dim_arg(p), dim_arg(p)
        ok, r = p.call(f"a.transpose({d0!r}, {d1!r}) a={a.shape}", lambda: a.transpose(d0, d1), (d0, d1))
        n0, n1 = norm_dim(d0, an.ndim), norm_dim(d1, an.ndim)
        if n0 is not None and n1 is not None:
            expected = (lambda x: np.swapaxes(x, n0, n1)) if an.ndim else (lambda x: x)
    elif kind == "t":
        ok, r = p.call(f"a.t() a={a.shape}", a.t)
        if an.ndim <= 2:
            expected = np.transpose
        elif ok:
            p.fail(f"t() of a {an.ndim}-d tensor succeeded")
    elif kind in ("reshape", "view"):
        shape = p.draw(st.one_of(st.lists(st.integers(-2, 4), max_size=4),
                                 st.lists(st.sampled_from([1.5, "a", None, 2**70, 2]), min_size=1, max_size=2)), "shape")
        as_tuple = p.draw(st.booleans(), "as tuple")
        args = (tuple(shape),) if as_tuple else tuple(shape)
        ok, r = p.call(f"a.{kind}(*{args!r}) a={a.shape}", lambda: getattr(a, kind)(*args), args)
        if all(isinstance(s, int) and not isinstance(s, bool) and s >= -1 for s in shape) \
                and shape.count(-1) <= 1 and not has_huge_int(shape):
            np_shape = np_or_none(lambda: an.reshape(shape).shape)
            if np_shape is None and ok:
                p.fail(f"{kind}{tuple(shape)} of {an.shape} succeeded; NumPy refuses")
            if np_shape is not None and kind == "reshape" and not ok:
                p.fail(f"reshape{tuple(shape)} of {an.shape} refused: {r}")
            expected = (lambda x: x.reshape(shape)) if np_shape is not None else None
    elif kind == "squeeze":
        d = p.draw(st.one_of(st.none(), st.integers(-4, 4), st.just("x")), "dim")
        ok, r = p.call(f"a.squeeze({d!r}) a={a.shape}", lambda: a.squeeze() if d is None else a.squeeze(d))
        if d is None:
            expected = np.squeeze
        elif (nd := norm_dim(d, an.ndim)) is not None:
            def expected(x):
                return (np.squeeze(x, nd) if x.ndim and x.shape[nd] == 1 else x)
    elif kind == "unsqueeze":
        d = dim_arg(p)
        ok, r = p.call(f"a.unsqueeze({d!r}) a={a.shape}", lambda: a.unsqueeze(d), (d,))
        nd = norm_dim(d, an.ndim + 1)
        if nd is not None and -an.ndim - 1 <= d <= an.ndim:
            def expected(x):
                return (np.expand_dims(x, nd))
    elif kind == "expand":
        sizes = p.draw(st.lists(st.integers(-1, 3), max_size=4), "sizes")
        ok, r = p.call(f"a.expand(*{sizes}) a={a.shape}", lambda: a.expand(*sizes))
        lead = len(sizes) - an.ndim
        if lead >= 0 and all(s >= 0 for s in sizes[:lead]):
            target = tuple(sizes[:lead]) + tuple(an.shape[i] if s == -1 else s for i, s in enumerate(sizes[lead:]))
            if np_or_none(lambda: np.broadcast_to(an, target)) is not None:
                def expected(x):
                    return (np.broadcast_to(x, target))
    elif kind == "expand_as":
        b = p.pick("b")
        ok, r = p.call(f"a.expand_as(b) a={a.shape} b={b.shape}", lambda: a.expand_as(b))
        if np_or_none(lambda: np.broadcast_to(an, b.shape)) is not None:
            def expected(x):
                return (np.broadcast_to(x, tuple(b.shape)))
    elif kind == "flatten":
        s, e = p.draw(st.integers(-3, 3), "start"), p.draw(st.integers(-3, 3), "end")
        ok, r = p.call(f"a.flatten({s}, {e}) a={a.shape}", lambda: a.flatten(s, e))
        n = max(an.ndim, 1)
        ns, ne = norm_dim(s, n), norm_dim(e, n)
        if ns is not None and ne is not None and ns <= ne:
            shp = an.shape if an.ndim else (1,)
            target = shp[:ns] + (int(np.prod(shp[ns:ne + 1])),) + shp[ne + 1:]
            def expected(x):
                return (x.reshape(target))
    elif kind == "permute":
        dims = p.draw(st.lists(st.integers(-3, 3), max_size=4), "dims")
        ok, r = p.call(f"a.permute(*{dims}) a={a.shape}", lambda: a.permute(*dims))
        nds = [norm_dim(d, an.ndim) for d in dims]
        if len(dims) == an.ndim and None not in nds and len(set(nds)) == len(nds):
            def expected(x):
                return (np.transpose(x, nds))
        elif ok and an.ndim:
            p.fail(f"permute{tuple(dims)} of {an.shape} succeeded")
    elif kind == "narrow":
        d, s, n = dim_arg(p), p.draw(st.integers(-1, 4)), p.draw(st.integers(-1, 4))
        ok, r = p.call(f"a.narrow({d!r}, {s}, {n}) a={a.shape}", lambda: a.narrow(d, s, n), (d,))
        nd = norm_dim(d, an.ndim)
        if an.ndim and nd is not None and s >= 0 and n >= 0 and s + n <= an.shape[nd]:
            def expected(x):
                return (np.take(x, range(s, s + n), axis=nd))
    else:
        ok, r = p.call(f"a.{kind}() a={a.shape}", getattr(a, kind))
        def expected(x):
            return (x)
    if not ok:
        return
    p.push(r)
    if expected is not None:
        e = expected(an)
        close(snap(p, r), e, a.dtype, f"{kind} values", p)
        if r.dtype is not a.dtype:
            p.fail(f"{kind} changed the dtype {a.dtype} -> {r.dtype}")


def op_cat(p):
    k = p.draw(st.integers(0, 3), "count")
    ts = [p.pick() for _ in range(k)]
    d = dim_arg(p)
    fn = p.draw(st.sampled_from(["cat", "stack"]), "fn")
    junk = p.draw(st.integers(0, 6), "junk?")
    arg = ts if junk else p.draw(st.sampled_from([ts + ["x"], "abc", None, tuple(ts) + (1.0,), 3]), "junk")
    ok, r = p.call(f"tg.{fn}({[getattr(t, 'shape', t) for t in (arg if isinstance(arg, (list, tuple)) else [arg])]},"
                   f" dim={d!r})", lambda: getattr(tg, fn)(arg, d), (d,))
    if not ok or not junk:
        if ok and not junk:
            p.fail(f"tg.{fn} of junk {arg!r:.60} succeeded")
        return
    p.push(r)
    if len({t.dtype for t in ts}) != 1:
        return
    arrs = [snap(p, t) for t in ts]
    if fn == "stack":
        e = np_or_none(lambda: np.stack(arrs, axis=d)) if isinstance(d, int) and not isinstance(d, bool) else None
    else:
        e = np_or_none(lambda: np.concatenate(arrs, axis=d)) if isinstance(d, int) and not isinstance(d, bool) \
            and all(x.ndim for x in arrs) else None
    if e is not None:
        close(snap(p, r), e, ts[0].dtype, f"{fn} values", p)


def op_reduce(p):
    a = p.pick("a")
    an = snap(p, a)
    kind = p.draw(st.sampled_from(["sum", "mean", "max", "argmax"]), "reduce")
    keep = p.draw(st.booleans(), "keepdim")
    if kind in ("sum", "mean"):
        d = p.draw(st.one_of(st.none(), st.integers(-4, 4), st.lists(st.integers(-3, 3), max_size=3).map(tuple),
                             st.sampled_from([1.5, "0", [0, "x"], 2**70])), "dim")
        ok, r = p.call(f"a.{kind}(dim={d!r}, keepdim={keep}) a={a.dtype}{a.shape}",
                       lambda: getattr(a, kind)(dim=d, keepdim=keep), (d,))
        if not ok:
            return
        p.push(r)
        if isinstance(d, (float, str, list)):
            p.fail(f"{kind}(dim={d!r}) succeeded")
        if d is None:
            axis = None
        else:
            dims = (d,) if isinstance(d, int) else d
            if an.ndim == 0:
                return  # PyTorch accepts dims 0 and -1 of a 0-d tensor; NumPy does not
            axis = tuple(norm_dim(x, an.ndim) for x in dims) if dims else None
            if axis is not None and (None in axis or len(set(axis)) != len(axis)):
                p.fail(f"{kind}(dim={d!r}) of {an.shape} succeeded")
        keep_np = keep  # PyTorch: dim=None or () with keepdim keeps every dimension as 1
        if kind == "sum":
            dt = tg.int64 if a.dtype in (tg.bool, tg.int64) else a.dtype
            e = np_compute([an], lambda x: np.sum(x, axis=axis, keepdims=keep_np), dt)
        else:
            if a.dtype not in (tg.float32, tg.float64):
                p.fail(f"mean of {a.dtype} succeeded")
            dt = a.dtype
            # The sum in the tensor's dtype, then scaled (as in PyTorch: float32 overflows to inf).
            count = an.size // max(np.sum(an, axis=axis, keepdims=True).size, 1) if an.size else 0
            e = np_compute([an], lambda x: np.sum(x, axis=axis, keepdims=keep_np) * (x.dtype.type(1) / count), dt)
        if r.dtype is not dt:
            p.fail(f"{kind} of {a.dtype} gave {r.dtype}, expected {dt}")
        if dt is tg.float32 and kind == "sum" and d is None:
            # The full float32 sum accumulates in float64 (more accurate than PyTorch's float32
            # cascade): where float32 partial sums overflow, either answer is accepted.
            wide = np_compute([an.astype(np.float64)], lambda x: np.sum(x), tg.float64).astype(np.float32)
            got = snap(p, r)
            if not (np.isnan(got) and np.isnan(wide)) and got != wide:
                close(got, e, dt, f"{kind} values", p, rtol=1e-4)
        elif dt is tg.float32 or (dt is tg.float64 and not np.all(np.isfinite(an))):
            close(snap(p, r), e, dt, f"{kind} values", p, rtol=1e-4)
        else:
            close(snap(p, r), e, dt, f"{kind} values", p, rtol=1e-9)
        return
    d = p.draw(st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([1.5, "x"])), "dim")
    ok, r = p.call(f"a.{kind}(dim={d!r}, keepdim={keep}) a={a.dtype}{a.shape}",
                   lambda: getattr(a, kind)(dim=d, keepdim=keep) if d is not None else getattr(a, kind)(), (d,))
    if not ok:
        return
    outs = list(r) if isinstance(r, tuple) else [r]
    for o in outs:
        p.push(o)
    if an.size == 0 and not (d is not None and an.ndim and an.shape[norm_dim(d, an.ndim) or 0] != 0):
        p.fail(f"{kind} of an empty {an.shape} tensor succeeded")
    if isinstance(d, (float, str)):
        p.fail(f"{kind}(dim={d!r}) succeeded")
    if an.ndim == 0:
        return
    axis = None if d is None else norm_dim(d, an.ndim)
    if d is not None and axis is None:
        p.fail(f"{kind}(dim={d}) of {an.shape} succeeded")
    keep_np = keep and d is not None
    if kind == "max" and d is not None:
        if len(outs) != 2:
            p.fail(f"max(dim) gave {len(outs)} results")
        vals, idx = outs
        close(snap(p, vals), np.max(an, axis=axis, keepdims=keep_np), a.dtype, "max values", p)
        # The indices must point at the maximum (NaN counts as the maximum).
        picked = np.take_along_axis(an, np.expand_dims(snap(p, idx), axis) if not keep_np else snap(p, idx), axis)
        close(picked.squeeze(axis) if not keep_np else picked, snap(p, vals), a.dtype, "max(dim) index", p)
    elif kind == "max":
        close(snap(p, outs[0]), np.max(an), a.dtype, "max values", p)
    else:
        e = np.argmax(an, axis=axis, keepdims=keep_np)
        if a.dtype is not tg.bool:
            close(snap(p, outs[0]), e, tg.int64, "argmax", p)


def op_to(p):
    a = p.pick("a")
    an = snap(p, a)
    target = p.draw(st.sampled_from(DTYPES + ["float64", "int64", "cuda", None, 5, 1.5, np.float32, float]), "dtype")
    how = p.draw(st.sampled_from(["to", "float", "double", "long", "bool"]), "how")
    if how == "to":
        ok, r = p.call(f"a.to({target!r}) a={a.dtype}{a.shape}", lambda: a.to(target))
        dt = {"float64": tg.float64, "int64": tg.int64, np.float32: tg.float32, float: tg.float32,
              None: a.dtype}.get(target, target)  # to(None) changes nothing, as in PyTorch
    else:
        ok, r = p.call(f"a.{how}() a={a.dtype}{a.shape}", getattr(a, how))
        dt = {"float": tg.float32, "double": tg.float64, "long": tg.int64, "bool": tg.bool}[how]
    if not ok:
        return
    p.push(r)
    if dt not in DTYPES:
        p.fail(f"to({target!r}) succeeded")
    if r.dtype is not dt or tuple(r.shape) != an.shape:
        p.fail(f"to({dt}) gave {r.dtype}{r.shape}")
    if not (a.dtype in (tg.float32, tg.float64) and dt in (tg.int64,)):  # NaN/inf -> int is unspecified
        with np.errstate(all="ignore"):
            close(snap(p, r), an.astype(NP_DTYPE[dt]), dt, "to values", p)


def index_key(p, a):
    def item():
        return p.draw(st.one_of(
            st.integers(-4, 4), st.sampled_from([None, Ellipsis, 2**70, 1.5, "x", True]),
            st.builds(slice, st.one_of(st.none(), st.integers(-4, 4)), st.one_of(st.none(), st.integers(-4, 4)),
                      st.one_of(st.none(), st.integers(-2, 3))),
            st.just("mask"), st.just("tensor-int"), st.just("np-int"), st.just("np-bool")), "index")
    n = p.draw(st.integers(0, 3), "index len")
    parts = [item() for _ in range(n)]
    out = []
    for x in parts:
        if x == "mask":
            m = p.pick("mask")
            if m.dtype is not tg.bool and p.draw(st.booleans()):
                m = p.must("mask = a > 0", lambda m=m: m > 0)
            out.append(m)
        elif x == "tensor-int":
            out.append(tg.tensor(p.draw(st.integers(-3, 3))))
        elif x == "np-int":
            ty = p.draw(st.sampled_from([np.int64, np.int32, np.intp, np.uint8]), "numpy int type")
            out.append(ty(p.draw(st.integers(0 if ty is np.uint8 else -3, 3))))
        elif x == "np-bool":
            out.append(np.bool_(p.draw(st.booleans())))
        else:
            out.append(x)
    return out[0] if n == 1 and p.draw(st.booleans()) else tuple(out)


def np_key(p, key):
    """The same key for NumPy, or None when NumPy's meaning differs."""
    parts = key if isinstance(key, tuple) else (key,)
    out = []
    for x in parts:
        if isinstance(x, tg.Tensor):
            if x.dtype is tg.bool:
                out.append(snap(p, x))
            elif x.dtype is tg.int64 and x.ndim == 0:
                out.append(int(x.item()))
            else:
                return None
        elif isinstance(x, (bool, np.bool_)):
            out.append(x)  # a 0-d mask in both
        elif isinstance(x, np.integer):
            out.append(int(x))
        elif isinstance(x, slice):
            if x.step is not None and x.step <= 0:
                return None
            out.append(x)
        elif x is None or x is Ellipsis or (isinstance(x, int) and not isinstance(x, bool) and not has_huge_int(x)):
            out.append(x)
        else:
            return None
    if sum(x is Ellipsis for x in out) > 1:
        return None
    return tuple(out) if isinstance(key, tuple) else out[0]


def op_getitem(p):
    a = p.pick("a")
    an = snap(p, a)
    key = index_key(p, a)
    ok, r = p.call(f"a[{key!r:.80}] a={a.dtype}{a.shape}", lambda: a[key], (key,))
    nk = np_key(p, key)
    e = None if nk is None else np_or_none(lambda: an[nk])
    if ok:
        p.push(r)
    if nk is None:
        return
    if e is None and ok:
        p.fail(f"a[{key!r:.80}] of {an.shape} succeeded; NumPy refuses")
    # A mask combined with other indices is refused (a limitation, with an IndexError that says so).
    if e is not None and not ok and not any(isinstance(x, (bool, np.bool_)) or (isinstance(x, tg.Tensor) and x.dtype is tg.bool)
                                            for x in (key if isinstance(key, tuple) else (key,))):
        p.fail(f"a[{key!r:.80}] of {an.shape} raised {type(r).__name__}: {r}; NumPy gives {np.shape(e)}")
    if ok and e is not None and not int_apart_from_array(key):
        close(snap(p, r), e, a.dtype, "getitem values", p)


def int_apart_from_array(key):
    """Whether `key` holds an integer and an array or mask index with a slice, `...` or None between
    them. NumPy then counts the integer as an advanced index and puts the broadcast dimensions first;
    PyTorch (the reference) applies the integer as a basic index: `torch.zeros(3, 1, 2)[0, ..., mask]`
    with an all-False mask of 2 has shape (1, 0), NumPy's (0, 1). NumPy is no oracle for that shape."""
    if not isinstance(key, tuple):
        return False
    kinds = []
    for x in key:
        if isinstance(x, (bool, np.bool_)):
            kinds.append("array")
        elif isinstance(x, (int, np.integer)):
            kinds.append("int")
        elif x is None or x is Ellipsis or isinstance(x, slice):
            kinds.append("basic")
        else:
            kinds.append("array")
    if "int" not in kinds or "array" not in kinds:
        return False
    advanced = [i for i, k in enumerate(kinds) if k != "basic"]
    return any(kinds[i] == "basic" for i in range(advanced[0], advanced[-1] + 1))


def op_setitem(p):
    a = p.pick("a")
    an = snap(p, a)
    key = index_key(p, a)
    kind = p.draw(st.sampled_from(["scalar", "tensor", "junk"]), "value kind")
    if kind == "scalar":
        v = p.draw(st.one_of(st.sampled_from(FLOATS), st.sampled_from(INTS), st.booleans()), "value")
        vn = v
    elif kind == "tensor":
        v, vn = new_tensor(p, shape=p.draw(shapes(2, 2)), dtype=a.dtype if p.draw(st.booleans()) else None)
    else:
        v, vn = p.draw(st.sampled_from(JUNK[:4] + HUGE_INTS[:1])), None
    before = a._version
    nk = np_key(p, key)  # before the write: the mask may be the tensor written to
    ok, r = p.call(f"a[{key!r:.80}] = {v!r:.40} a={a.dtype}{a.shape}", lambda: a.__setitem__(key, v), (key, v))
    if not ok:
        if a._version == before:
            close(snap(p, a), an, a.dtype, "a failed item assignment changed the tensor", p)
        return
    if vn is None:
        p.fail(f"assigning {v!r:.40} succeeded")
    if a.requires_grad and a.is_leaf and tg.is_grad_enabled():
        p.fail("item assignment to a leaf that requires grad succeeded")
    if nk is None or not (a.dtype in (tg.float32, tg.float64) or CATEGORY[result_dtype([vn])] <= CATEGORY[a.dtype]):
        return
    if np.ndim(vn) > 0 and int_apart_from_array(key):
        return  # NumPy orders the indexed dimensions otherwise, so a value broadcasts differently
    e = an.copy()
    target = np_or_none(lambda: e[nk])
    if target is None:
        p.fail(f"a[{key!r:.80}] = ... succeeded; NumPy refuses the key")
    # PyTorch's rule for the value: broadcast to the indexed shape after dropping leading size-1 dims
    # (NumPy's mask assignment is stricter: it takes 0-d or 1-d values only).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        val = np.asarray(vn).astype(e.dtype)
    while val.ndim > np.ndim(target) and val.shape[0] == 1:
        val = val[0]
    try:
        e[nk] = np.broadcast_to(val, np.shape(target))
    except ValueError:
        p.fail(f"a[{key!r:.80}] = value of shape {np.shape(vn)} succeeded; it does not broadcast to {np.shape(target)}")
    close(snap(p, a), e, a.dtype, "setitem values", p)


INPLACE = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.true_divide,
           "+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.true_divide}
IOPS = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv}


def op_inplace(p):
    a = p.pick("a")
    an = snap(p, a)
    name = p.draw(st.sampled_from(sorted(INPLACE) + ["zero_", "fill_", "clamp_", "copy_"]), "inplace")
    b, bn = (None, None) if name == "zero_" else operand(p)
    if name == "clamp_":
        b = bn = p.draw(st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([0.5, -0.5])))
    before = a._version
    if name in IOPS:
        ok, r = p.call(f"a {name} b a={a.dtype}{a.shape} b={b!r:.40}", lambda: IOPS[name](a, b), (b,))
        if ok and r is not a:
            p.fail(f"{name} did not return the same tensor")
    elif name == "zero_":
        ok, r = p.call(f"a.zero_() a={a.dtype}{a.shape}", a.zero_)
    elif name == "clamp_":
        ok, r = p.call(f"a.clamp_(min={b}) a={a.dtype}{a.shape}", lambda: a.clamp_(min=b))
    else:
        ok, r = p.call(f"a.{name}(b) a={a.dtype}{a.shape} b={b!r:.40}", lambda: getattr(a, name)(b), (b,))
    if not ok:
        if a._version == before:
            close(snap(p, a), an, a.dtype, f"a failed {name} changed the tensor", p)
        return
    if name not in IOPS and r is not a:
        p.fail(f"{name} did not return the same tensor")
    if a.requires_grad and a.is_leaf and tg.is_grad_enabled():
        p.fail(f"{name} on a leaf that requires grad succeeded")
    if a._version <= before and (an.size or name != "zero_"):
        p.fail(f"{name} did not bump the version ({before} -> {a._version})")
    if name != "zero_" and name != "clamp_" and bn is None:
        p.fail(f"{name} with {b!r:.40} succeeded")
    if tuple(a.shape) != an.shape:
        p.fail(f"{name} changed the shape")
    if isinstance(b, tg.Tensor) and not isinstance(bn, np.ndarray):
        return
    if name == "zero_":
        e = np.zeros_like(an)
    elif name == "fill_":
        e = np.full_like(an, 0) if an.size == 0 else np.array(np.broadcast_to(np.asarray(bn), ()).astype(an.dtype)
                                                               if np.ndim(bn) == 0 else an)
        if np.ndim(bn) != 0 or (an.dtype == np.int64 and not abs(float(bn)) < 2.0**63):
            return  # NaN, inf or out-of-range floats into int64: unspecified (NumPy and PyTorch differ)
        with np.errstate(all="ignore"):
            e = np.full_like(an, np.asarray(bn).astype(an.dtype))
    elif name == "copy_":
        if np_or_none(lambda: np.broadcast_to(bn, an.shape)) is None:
            p.fail(f"copy_ of {np.shape(bn)} into {an.shape} succeeded")
        if an.dtype != np.float64 and an.dtype != np.float32 and np.asarray(bn).dtype.kind == "f":
            return
        with np.errstate(all="ignore"):
            e = np.broadcast_to(np.asarray(bn).astype(an.dtype), an.shape)
    elif name == "clamp_":
        if bn is None or a.dtype not in (tg.float32, tg.float64):
            return
        e = np.where(np.isnan(an), an, np.maximum(an, an.dtype.type(bn)))
    else:
        if a.dtype is tg.bool or (CATEGORY[result_dtype([a, b])] > CATEGORY[a.dtype]) or (
                name in ("div_", "/=") and a.dtype is tg.int64):
            return
        # Computed in the promoted dtype, then written in a's dtype (as PyTorch does).
        e = np_compute([an, bn], INPLACE[name], result_dtype([a, b])).astype(an.dtype)
        if e.shape != an.shape:
            p.fail(f"{name}: broadcast to {e.shape} written into {an.shape}")
    # A view of `a` passed as b aliases the memory; NumPy's answer then differs: only a fresh b counts.
    close(snap(p, a), e, a.dtype, f"{name} values", p)


def views_a_tensor_requiring_grad(p, a):
    """Whether `a` shares memory with another tensor of the pool that requires grad: then `a` is a
    view made under no_grad, whose requires_grad PyTorch reads from its base, so that setting it to
    False on the view reads back True (`torch.tensor(1., requires_grad=True)` viewed under no_grad)."""
    def extent(t):
        size = t.numel() * t.element_size()
        return (t.data_ptr(), t.data_ptr() + size) if size else None

    mine = extent(a)
    if mine is None:
        return False
    for t in p.pool:
        theirs = extent(t) if t is not a and t.requires_grad else None
        if theirs and theirs[0] < mine[1] and mine[0] < theirs[1]:
            return True
    return False


def op_grad_flags(p):
    a = p.pick("a")
    kind = p.draw(st.sampled_from(["requires_grad=", "requires_grad_", "detach", "grad=", "retain_grad",
                                   "grad_fn", "repr", "item", "tolist", "numpy", "float()", "int()", "bool()",
                                   "len", "iter", "size", "asarray", "version"]), "flag op")
    if kind == "requires_grad=":
        flag = p.draw(st.sampled_from([True, False, None, "yes", 1]))
        ok, _ = p.call(f"a.requires_grad = {flag!r} a={a.dtype}{a.shape}", lambda: setattr(a, "requires_grad", flag))
        if ok and isinstance(flag, bool) and a.requires_grad != (flag or not a.is_leaf) \
                and not (flag is False and views_a_tensor_requiring_grad(p, a)):
            p.fail(f"requires_grad = {flag} reads back {a.requires_grad}")
        if ok and flag is True and a.dtype not in (tg.float32, tg.float64):
            p.fail(f"requires_grad on a {a.dtype} tensor succeeded")
    elif kind == "requires_grad_":
        ok, r = p.call("a.requires_grad_()", a.requires_grad_)
    elif kind == "detach":
        ok, r = p.call("a.detach()", a.detach)
        if ok:
            p.push(r)
            if r.requires_grad or r.grad_fn is not None:
                p.fail("detach() kept history")
    elif kind == "grad=":
        g = p.draw(st.sampled_from(["pool", "fresh", None, "junk", 1.0]))
        if g == "pool":
            g = p.pick("g")
        elif g == "fresh":
            g = new_tensor(p, shape=tuple(a.shape), dtype=a.dtype, allow_grad=False)[0]
        elif g == "junk":
            g = p.draw(st.sampled_from(JUNK))
        ok, _ = p.call(f"a.grad = {getattr(g, 'shape', g)!r:.40} a={a.dtype}{a.shape}", lambda: setattr(a, "grad", g))
        if ok and g is not None and not isinstance(g, tg.Tensor):
            p.fail(f"a.grad = {g!r:.40} succeeded")
    elif kind == "retain_grad":
        p.call("a.retain_grad()", a.retain_grad)
    elif kind == "grad_fn":
        fn = a.grad_fn
        if fn is not None:
            p.must("a.grad_fn.name(), next_functions", lambda: (fn.name(), fn.next_functions, repr(fn)))
    else:
        f = {"repr": repr, "item": lambda t: t.item(), "tolist": lambda t: t.tolist(), "numpy": lambda t: t.numpy(),
             "float()": float, "int()": int, "bool()": bool, "len": len, "iter": lambda t: list(iter(t)),
             "size": lambda t: t.size(p.draw(st.integers(-4, 4))), "asarray": np.asarray,
             "version": lambda t: t._version}[kind]
        # int() of an infinite float is an OverflowError in Python, and so in PyTorch and here.
        infinite = kind == "int()" and a.dtype.is_floating_point and a.numel() == 1 and bool(
            np.isinf(snap(p, a)).any())
        ok, r = p.call(f"{kind}(a) a={a.dtype}{a.shape}", lambda: f(a), overflow_ok=infinite)
        if ok and kind in ("item", "float()", "int()") and a.numel() != 1:
            p.fail(f"{kind} of a tensor with {a.numel()} elements succeeded")
        if ok and kind == "tolist":
            e = snap(p, a).tolist()
            if np.asarray(r, dtype=float).shape != np.asarray(e, dtype=float).shape:
                p.fail(f"tolist() gave {r!r:.60}, NumPy {e!r:.60}")
        if ok and kind == "iter":
            for x in r:
                p.push(x)


def hook_fn(p, owner):
    kind = p.draw(st.sampled_from(["none", "double", "raise", "junk", "wrong shape", "pool"]), "hook")
    if kind == "none":
        return kind, lambda g: None
    if kind == "double":
        return kind, lambda g: g * 2
    if kind == "raise":
        return kind, lambda g: user_error("a hook")
    if kind == "junk":
        j = p.draw(st.sampled_from(JUNK + [1.0]))
        return kind, lambda g: j
    if kind == "wrong shape":
        return kind, lambda g: tg.ones(7, 2)
    t = p.pick("hook result")
    return kind, lambda g: t


def op_hook(p):
    a = p.pick("a")
    kind, fn = hook_fn(p, a)
    if p.draw(st.integers(0, 8)) == 0:
        fn = p.draw(st.sampled_from(JUNK))
    ok, h = p.call(f"a.register_hook(<{kind}>) a={a.dtype}{a.shape} rg={a.requires_grad}", lambda: a.register_hook(fn))
    if ok and p.draw(st.booleans(), "remove"):
        p.call("handle.remove()", h.remove)
        p.call("handle.remove() again", h.remove)


def grad_for(p, t):
    kind = p.draw(st.sampled_from(["none", "random", "pool", "wrong shape", "junk", "int"]), "gradient")
    if kind == "none":
        return None
    if kind == "random":
        return p.must("tg.randn(shape)", lambda: tg.randn(*t.shape, dtype=t.dtype if t.dtype in (
            tg.float32, tg.float64) else tg.float32))
    if kind == "pool":
        return p.pick("gradient")
    if kind == "wrong shape":
        return tg.ones(*(tuple(t.shape) + (2,)))
    if kind == "int":
        return tg.ones(*t.shape, dtype=tg.int64)
    return p.draw(st.sampled_from(JUNK + [1.0]))


def op_backward(p):
    a = p.pick("a")
    g = grad_for(p, a)
    retain = p.draw(st.sampled_from([None, True, False]), "retain_graph")
    create = p.draw(st.booleans(), "create_graph")
    use_inputs = p.draw(st.integers(0, 3), "inputs")
    inputs = None if use_inputs == 0 else [p.pick("input") for _ in range(use_inputs)]
    how = p.draw(st.sampled_from(["method", "autograd.backward"]), "how")
    desc = (f"{how}(a, gradient={getattr(g, 'shape', g)!r:.30}, retain_graph={retain}, create_graph={create}, "
            f"inputs={None if inputs is None else [i.shape for i in inputs]}) a={a.dtype}{a.shape} "
            f"rg={a.requires_grad}")
    if how == "method":
        ok, r = p.call(desc, lambda: a.backward(g, retain_graph=retain, create_graph=create, inputs=inputs))
    else:
        ok, r = p.call(desc, lambda: tg.autograd.backward(a, g, retain_graph=retain, create_graph=create,
                                                          inputs=inputs))
    if ok and not a.requires_grad:
        p.fail("backward of a tensor that does not require grad succeeded")
    if ok and g is None and a.numel() != 1:
        p.fail(f"backward without a gradient on a {a.shape} tensor succeeded")
    for t in [a] + (inputs or []):
        if t.grad is not None:
            if tuple(t.grad.shape) != tuple(t.shape):
                p.fail(f"a .grad of shape {t.grad.shape} on a tensor of shape {t.shape}")
            p.push(t.grad)


def op_grad(p):
    outs = [p.pick("output") for _ in range(p.draw(st.integers(1, 2)))]
    ins = [p.pick("input") for _ in range(p.draw(st.integers(0, 2)))]
    gos = None if p.draw(st.booleans()) else [grad_for(p, o) for o in outs]
    retain = p.draw(st.sampled_from([None, True, False]), "retain_graph")
    create = p.draw(st.booleans(), "create_graph")
    unused = p.draw(st.booleans(), "allow_unused")
    if p.draw(st.integers(0, 8)) == 0:
        ins = p.draw(st.sampled_from(["x", None, [1.0], [ins, 3]]))
    desc = (f"tg.autograd.grad({[o.shape for o in outs]}, {[getattr(i, 'shape', i) for i in ins] if isinstance(ins, list) else ins!r},"
            f" grad_outputs={gos if gos is None else [getattr(g, 'shape', g) for g in gos]!r:.60}, retain_graph={retain},"
            f" create_graph={create}, allow_unused={unused})")
    ok, r = p.call(desc, lambda: tg.autograd.grad(outs, ins, gos, retain_graph=retain, create_graph=create,
                                                  allow_unused=unused))
    if not ok:
        return
    if not isinstance(ins, list) or len(r) != len(ins):
        p.fail(f"autograd.grad returned {len(r)} results for {ins!r:.60}")
    for g, i in zip(r, ins):
        if g is None:
            if not unused:
                p.fail("autograd.grad returned None without allow_unused")
            continue
        if tuple(g.shape) != tuple(i.shape):
            p.fail(f"autograd.grad: gradient of shape {g.shape} for an input of shape {i.shape}")
        p.push(g)


# ---------------------------------------------------------------------------------------------
# Custom functions, valid and not


def good_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g * x * 2


class Square(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    backward = staticmethod(good_backward)


def make_function(p):
    """A custom function class with a random defect (or none); returns (name, callable, n_args)."""
    fwd_kind = p.draw(st.sampled_from(["ok", "ok", "ok", "raise", "non-tensor", "none", "tuple+junk", "save twice",
                                       "save odd", "saved in forward", "mark_dirty junk", "mark_dirty other",
                                       "mark_non_diff", "materialize off", "list", "input itself"]), "forward")
    bwd_kind = p.draw(st.sampled_from(["ok", "ok", "count+", "count0", "shape", "type", "dict ok", "dict unknown",
                                       "raise", "none", "int dtype", "save in backward", "bool", "list",
                                       "numpy", "needs_input_grad"]), "backward")

    def forward(ctx, x, c=2.0):
        if fwd_kind == "raise":
            user_error("forward")
        if fwd_kind == "save twice":
            ctx.save_for_backward(x)
            ctx.save_for_backward(x)
        elif fwd_kind == "save odd":
            ctx.save_for_backward(object(), None, "s", [x], x, name=x, other=3)
        elif fwd_kind == "saved in forward":
            _ = ctx.saved_tensors
        else:
            ctx.save_for_backward(x)
        if fwd_kind == "mark_dirty junk":
            ctx.mark_dirty("x", 3)
        if fwd_kind == "mark_dirty other":
            ctx.mark_dirty(x * 1)
        if fwd_kind == "materialize off":
            ctx.set_materialize_grads(False)
        y = x * c
        if fwd_kind == "mark_non_diff":
            ctx.mark_non_differentiable(y, "junk")
        if fwd_kind == "non-tensor":
            return "hello"
        if fwd_kind == "none":
            return None
        if fwd_kind == "tuple+junk":
            return y, "junk", 3, x.sum()
        if fwd_kind == "list":
            return [y, y]
        if fwd_kind == "input itself":
            return x
        return y

    def backward(ctx, *gs):
        g = gs[0]
        if bwd_kind == "raise":
            user_error("backward")
        if bwd_kind == "save in backward":
            ctx.save_for_backward(g)
        if bwd_kind == "needs_input_grad":
            _ = ctx.needs_input_grad.x, ctx.needs_input_grad[0], ctx.needs_input_grad["c"]
            try:
                _ = ctx.needs_input_grad.nope
                user_error("needs_input_grad.nope did not raise")
            except AttributeError:
                pass
        saved = ctx.saved_tensors
        x = saved[-1] if saved else None
        if g is None:
            return None
        grad = g * 2.0 if x is None else g * 2.0
        return {
            "ok": grad, "count+": (grad, None, grad), "count0": (), "shape": tg.ones(5, 3),
            "type": "gradient", "dict ok": {"x": grad}, "dict unknown": {"nope": grad}, "none": None,
            "int dtype": tg.ones(*grad.shape, dtype=tg.int64), "bool": True, "list": [grad, None],
            "numpy": np.ones(grad.shape), "save in backward": grad, "needs_input_grad": grad,
        }[bwd_kind]

    name = f"Fn_{fwd_kind}_{bwd_kind}".replace(" ", "_").replace("+", "plus")
    spelling = p.draw(st.sampled_from(["class", "factory", "custom_gradient"]), "spelling")
    if spelling == "class":
        cls = type(name, (tg.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
        return name, cls.apply
    if spelling == "factory":
        return name, tg.autograd_function(forward=forward, backward=backward, name=name)

    cg_kind = p.draw(st.sampled_from(["ok", "raise", "not a tuple", "grad junk", "grad count", "grad raise",
                                      "grad shape"]), "custom_gradient")

    def f(x, c=2.0):
        if cg_kind == "raise":
            user_error("custom_gradient forward")
        y = x * c
        if cg_kind == "not a tuple":
            return y

        def grad(upstream):
            if cg_kind == "grad raise":
                user_error("custom_gradient grad")
            return {"ok": upstream * c, "grad junk": "junk", "grad count": (upstream, upstream, upstream),
                    "grad shape": tg.zeros(4, 4)}.get(cg_kind, upstream * c)
        return y, grad

    f.__name__ = f"cg_{cg_kind}".replace(" ", "_")
    return f.__name__, tg.custom_gradient(f)


def op_custom(p):
    name, fn = make_function(p)
    a = p.pick("a")
    argk = p.draw(st.sampled_from(["x", "x, c", "x, c=tensor", "none", "too many", "junk", "kw"]), "args")
    c = p.draw(st.sampled_from([2.0, -1, 0.5]))
    args, kwargs = {"x": ((a,), {}), "x, c": ((a, c), {}), "x, c=tensor": ((a, p.pick("c")), {}),
                    "none": ((), {}), "too many": ((a, c, c, c), {}), "junk": (("junk",), {}),
                    "kw": ((), {"x": a, "c": c})}[argk]
    ok, r = p.call(f"{name}({argk}) a={a.dtype}{a.shape} rg={a.requires_grad}", lambda: fn(*args, **kwargs))
    if not ok:
        return
    outs = r if isinstance(r, (tuple, list)) else [r]
    for o in outs:
        if isinstance(o, tg.Tensor):
            p.push(o)
    if p.draw(st.booleans(), "backward now"):
        o = next((o for o in outs if isinstance(o, tg.Tensor)), None)
        if o is not None:
            retain = p.draw(st.booleans())
            p.call(f"{name} output .sum().backward(retain_graph={retain})",
                   lambda: o.sum().backward(retain_graph=retain))
            if retain:
                p.call(f"{name} output .sum().backward() again", lambda: o.sum().backward())


def op_context(p):
    """Runs the next operation inside a grad-mode or anomaly context; the mode must come back."""
    ctx = p.draw(st.sampled_from(["no_grad", "enable_grad", "set_grad_enabled(False)", "detect_anomaly"]), "context")
    mgr = {"no_grad": tg.no_grad, "enable_grad": tg.enable_grad, "detect_anomaly": tg.autograd.detect_anomaly,
           "set_grad_enabled(False)": lambda: tg.set_grad_enabled(False)}[ctx]
    before = tg.is_grad_enabled()
    p.log.append(f"with {ctx}:")
    with mgr():
        op = p.draw(st.sampled_from(OPS_NO_CONTEXT), "op")
        op(p)
    if tg.is_grad_enabled() != before:
        p.fail(f"grad mode not restored after {ctx}")


def op_misc_invalid(p):
    """Calls with arguments of the wrong Python type or out of range."""
    a = p.pick("a")
    j = p.draw(st.sampled_from(JUNK + [1.5, -1, 2**70, [2, -1], (2, 1.5)]), "junk")
    calls = {
        "tg.tensor(j)": lambda: tg.tensor(j),
        "tg.tensor(ragged)": lambda: tg.tensor([[1.0, 2.0], [3.0]]),
        "tg.tensor([1, j])": lambda: tg.tensor([1.0, j]),
        "tg.tensor(huge list)": lambda: tg.tensor([1, 2**70]),
        "tg.zeros(j)": lambda: tg.zeros(j),
        "tg.zeros(-1)": lambda: tg.zeros(-1),
        "tg.zeros(2**40, 2**40)": lambda: tg.zeros(2**40, 2**40),
        "tg.ones(3, dtype=j)": lambda: tg.ones(3, dtype=j),
        "tg.full((2,), j)": lambda: tg.full((2,), j),
        "tg.arange(j)": lambda: tg.arange(j),
        "tg.eye(j)": lambda: tg.eye(j),
        "tg.randn(2, device=j)": lambda: tg.randn(2, device=j if j is not None else "cuda"),
        "a.sum(j)": lambda: a.sum(j),
        "a.reshape(j)": lambda: a.reshape(j),
        "a.transpose(j, 0)": lambda: a.transpose(j, 0),
        "a.unsqueeze(j)": lambda: a.unsqueeze(j),
        "a.max(dim=j)": lambda: a.max(dim=j),
        "a.mm(j)": lambda: a.mm(j),
        "a.expand(j)": lambda: a.expand(j),
        "a.to(j)": lambda: a.to(j),
        "a.backward(j)": lambda: a.backward(j),
        "a.register_hook(j)": lambda: a.register_hook(j),
        "a[j]": lambda: a[j],
        "a.narrow(0, j, 1)": lambda: a.narrow(0, j, 1),
        "tg.cat(j)": lambda: tg.cat(j),
        "tg.stack([a, j])": lambda: tg.stack([a, j]),
        "tg.where(a, j, a)": lambda: tg.where(a, j, a),
        "tg.autograd.grad(a, j)": lambda: tg.autograd.grad(a, j),
        "tg.autograd.backward(j)": lambda: tg.autograd.backward(j),
        "a.fill_(j)": lambda: a.fill_(j),
        "a.copy_(j)": lambda: a.copy_(j),
        "a.clamp(j)": lambda: a.clamp(j),
        "a.pow(j)": lambda: a.pow(j),
        "a.view(j)": lambda: a.view(j),
        "a.flatten(j)": lambda: a.flatten(j),
        "tg.autograd_function(j, j)": lambda: tg.autograd_function(j, j),
        "tg.Function.apply(a)": lambda: tg.Function.apply(a),
        "to_dot(a)": lambda: tg.autograd.to_dot(a),
    }
    which = p.draw(st.sampled_from(sorted(calls)), "call")
    args = (j, 2**70) if which == "tg.tensor(huge list)" else (j,)  # its int past int64 is an OverflowError
    ok, r = p.call(f"{which} j={j!r:.40} a={a.dtype}{a.shape}", calls[which], args)
    if ok and isinstance(r, tg.Tensor):
        p.push(r)


# Huge views: a count past int64 is refused at once; a valid one is only ever read in ways whose
# output is itself too big to allocate (a small output over 2**60 inputs would be a legitimate
# hour-long loop, in PyTorch too, so `argmax()` without dim and `mm` to a small matrix are left out).
HUGE_SHAPES = [(2**32, 2**32), (2**31, 2**32), (2**62, 2), (2**40, 2**40, 0), (2**20, 2**20, 2**20),
               (2**21, 2**21, 2**21), (2**40, 0), (0, 2**62, 2**62)]
HUGE_READS = {
    "repr": repr, "sum": lambda x: x.sum(), "mean": lambda x: x.mean(), "max": lambda x: x.max(),
    "sum(dim)": lambda x: x.sum(x.ndim - 1), "argmax(dim)": lambda x: x.argmax(dim=x.ndim - 1),
    "max(dim)": lambda x: x.max(dim=0), "contiguous": lambda x: x.contiguous(), "x + 1": lambda x: x + 1,
    "x * x": lambda x: x * x, "where": lambda x: tg.where(x > 0, x, 0.0), "numpy": lambda x: x.numpy(),
    "tolist": lambda x: x.tolist() if x.numel() else None, "reshape(-1)": lambda x: x.reshape(-1).shape,
    "bmm": lambda x: x.reshape(x.shape[0], x.shape[1], -1) @ x.reshape(x.shape[0], -1, x.shape[1]),
    "index": lambda x: x[1:, 0].shape, "expand more": lambda x: x.expand(2**20, *x.shape),
}


def op_hostile(p):
    """Attack families of issue 20: huge expanded shapes, int64 extremes against exact Python ints,
    odd NumPy arrays (non-native byte order, > 32 dims, uint64 (refused), NumPy scalar operands)."""
    family = p.draw(st.sampled_from(["huge", "int", "numpy"]), "family")
    if family == "huge":
        shape = p.draw(st.sampled_from(HUGE_SHAPES), "huge shape")
        dt = p.draw(st.sampled_from([tg.float32, tg.int64]), "dtype")
        ok, x = p.call(f"tg.ones(1, dtype={dt}).expand{shape}", lambda: tg.ones(1, dtype=dt).expand(*shape))
        fits = math.prod(d for d in shape if d) <= I64_MAX
        if ok != fits:
            p.fail(f"expand{shape}: {'accepted' if ok else 'refused'}, but its count {'fits' if fits else 'does not fit'}")
        if not ok:
            return
        if x.numel() != math.prod(shape):
            p.fail(f"numel of expand{shape} is {x.numel()}")
        name = p.draw(st.sampled_from(sorted(HUGE_READS)), "read")
        ok, r = p.call(f"huge {name}", lambda: HUGE_READS[name](x))
        if ok and name == "repr" and x.numel() == 0 and f"size=({', '.join(map(str, shape))})" not in r:
            p.fail(f"repr of an empty huge tensor: {r}")
        if ok and name == "sum" and x.numel() == 0 and r.item() != 0:
            p.fail(f"sum of an empty tensor is {r.item()}")
    elif family == "int":
        v = p.draw(st.one_of(st.sampled_from(INTS), st.integers(I64_MIN, I64_MAX)), "int")
        w = p.draw(st.one_of(st.sampled_from(INTS), st.integers(I64_MIN, I64_MAX)), "int 2")
        wrap = lambda z: (z + 2**63) % 2**64 - 2**63  # noqa: E731
        t = tg.tensor([v])
        checks = {
            "t + w": (lambda: t + w, wrap(v + w)), "w - t": (lambda: w - t, wrap(w - v)),
            "t * w": (lambda: t * w, wrap(v * w)), "t.clamp(min=w)": (lambda: t.clamp(min=w), max(v, w)),
            "t ** |w|": (lambda: t ** abs(w) if w != I64_MIN else t ** 0, wrap(pow(v, abs(w), 2**64)) if w != I64_MIN else 1),
            "int(t)": (lambda: int(t), v), "item": (lambda: t.item(), v), "index": (lambda: operator.index(t[0]), v),
            "repr": (lambda: repr(t), f"tensor([{v}])"), "t == w": (lambda: t == w, v == w),
        }
        name = p.draw(st.sampled_from(sorted(checks)), "int check")
        fn, want = checks[name]
        r = p.must(f"{name} with t = tensor([{v}]), w = {w}", fn)
        got = r.tolist()[0] if isinstance(r, tg.Tensor) else r
        if got != want:
            p.fail(f"{name} with t = tensor([{v}]), w = {w}: {got!r}, exact answer {want!r}")
        lo, hi = sorted((v, w))
        if hi - lo < 64:
            r = p.must(f"tg.arange({lo}, {hi})", lambda: tg.arange(lo, hi))
            if r.tolist() != list(range(lo, hi)):
                p.fail(f"tg.arange({lo}, {hi}) = {r.tolist()}")
    else:
        kind = p.draw(st.sampled_from(["byteorder", "many dims", "uint64", "np scalar"]), "numpy kind")
        if kind == "byteorder":
            a = np.arange(3).astype(p.draw(st.sampled_from([">f8", ">f4", ">i8"]), "dtype"))
            ok, r = p.call("tg.tensor(<big-endian array>)", lambda: tg.tensor(a))
            if ok or not isinstance(r, TypeError) or "byte order" not in str(r):
                p.fail(f"a big-endian array was not refused with a TypeError naming the byte order: {r!r}")
        elif kind == "many dims":
            nd = p.draw(st.integers(30, 40), "ndim")
            a = np.arange(2.0).reshape([1] * (nd - 1) + [2])
            t = p.must(f"tg.tensor(<{nd}-dim array>)", lambda: tg.tensor(a))
            back = p.must(f"<{nd}-dim tensor>.numpy()", lambda: t.numpy())
            if back.shape != a.shape or not np.array_equal(back, a):
                p.fail(f"{nd}-dim round trip changed the array: {back.shape}")
        elif kind == "uint64":
            v = p.draw(st.sampled_from([0, I64_MAX, 2**63, 2**64 - 1]), "value")
            ok, r = p.call(f"tg.tensor(np.array([{v}], np.uint64))", lambda: tg.tensor(np.array([v], np.uint64)), (v,))
            # no uint64 dtype: refused by name, never converted (or wrapped) to int64
            if ok or not isinstance(r, TypeError) or "uint64" not in str(r):
                p.fail(f"uint64 {v}: {r!r}")
        else:
            a = p.pick("a")
            an = snap(p, a)
            ty = p.draw(st.sampled_from([np.int64, np.int32, np.float64, np.float32, np.bool_]), "numpy type")
            s = ty(p.draw(st.integers(-3, 3), "value"))
            ok, r = p.call(f"a + {ty.__name__}({s})", lambda: a + s)
            if ok and r.shape != an.shape:
                p.fail(f"a + NumPy scalar changed the shape: {r.shape} vs {an.shape}")


OPS_NO_CONTEXT = [op_binary, op_binary, op_compare, op_unary, op_unary, op_matmul, op_shape, op_shape, op_cat,
                  op_reduce, op_reduce, op_to, op_getitem, op_getitem, op_setitem, op_inplace, op_inplace,
                  op_grad_flags, op_hook, op_backward, op_backward, op_grad, op_custom, op_custom, op_misc_invalid,
                  op_hostile]
OPS = OPS_NO_CONTEXT + [op_context]


# ---------------------------------------------------------------------------------------------
# The library still works


def check_still_works(p):
    if not tg.is_grad_enabled():
        p.fail("grad mode left off")
    rng = np.random.default_rng(len(p.log))
    for dt in (np.float64, np.float32):
        an, bn = rng.standard_normal((2, 3)).astype(dt), rng.standard_normal((2, 3)).astype(dt)
        x = tg.tensor(an, requires_grad=True)
        y = tg.tensor(bn, requires_grad=True)
        p.must("fresh (x*y).sum().backward()", lambda x=x, y=y: (x * y).sum().backward())
        close(x.grad.numpy(), bn, tg.float64 if dt == np.float64 else tg.float32, "fresh gradient of x", p)
        close(y.grad.numpy(), an, tg.float64 if dt == np.float64 else tg.float32, "fresh gradient of y", p)
    x = tg.tensor(np.array([1.5, -2.0]), requires_grad=True)
    (gx,) = p.must("fresh Square + autograd.grad", lambda: tg.autograd.grad(Square.apply(x).sum(), x))
    close(gx.numpy(), np.array([3.0, -4.0]), tg.float64, "fresh custom-function gradient", p)


STATS: dict = {}


@settings(max_examples=N_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
@given(st.data())
def random_program(data):
    RAISED.clear()
    p = Program(data)
    for _ in range(data.draw(st.integers(1, 4), "initial tensors")):
        p.push(new_tensor(p)[0])
    n = data.draw(st.integers(1, MAX_STEPS), "steps")
    for _ in range(n):
        op = data.draw(st.sampled_from(OPS), "op")
        op(p)
        STATS[op.__name__] = STATS.get(op.__name__, 0) + 1
    check_still_works(p)
    for k, v in (("examples", 1), ("calls", p.calls), ("refused", p.errors)):
        STATS[k] = STATS.get(k, 0) + v
    p.pool.clear()
    RAISED.clear()
    if STATS["examples"] % 50 == 0:
        gc.collect()


def test_random_programs_never_crash():
    STATS.clear()
    random_program()
    print(f"\nno-crash: {STATS.get('examples', 0)} examples, {STATS.get('calls', 0)} calls, "
          f"{STATS.get('refused', 0)} refused with a documented exception; per op: "
          + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items()) if k.startswith("op_")))
    # Hypothesis really ran the programs (none was filtered away), and every operation kind came up.
    assert STATS.get("examples", 0) >= min(N_EXAMPLES, 100) // 2
    if N_EXAMPLES >= 100:
        assert {op.__name__ for op in OPS} <= set(STATS)


def fixed_pool_runner(op):
    @settings(max_examples=8, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        RAISED.clear()
        p = Program(data)
        for shape, dt in [((), tg.float32), ((2, 3), tg.float64), ((0, 3), tg.float32), ((3,), tg.int64),
                          ((2, 1, 3), tg.float32), ((2, 3), tg.bool)]:
            p.push(new_tensor(p, shape=shape, dtype=dt)[0])
        for _ in range(3):
            op(p)
        check_still_works(p)
    return run


@pytest.mark.parametrize("op", list(dict.fromkeys(OPS)), ids=lambda op: op.__name__)
def test_each_op_on_a_fixed_pool(op):
    """Each operation kind on a varied pool (0-d, empty, int64, bool, float32/64), whatever the
    random test draws: 8 derandomized examples of 3 calls each."""
    fixed_pool_runner(op)()
