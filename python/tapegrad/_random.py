"""Random numbers: the process-wide generator's seed and state, the random factories (``rand``,
``randn``, ``randint``, ``randperm``, ``normal``, the ``*_like`` forms), sampling from a tensor's
parameters (``bernoulli``, ``multinomial``, ``poisson``) and the in-place fills (``uniform_``,
``normal_``, ...).

Random draws come from tapegrad's process-wide generator (``tg.manual_seed``: uniform and normal draws
through the native ``rand``/``randn``, transformed here), or from a ``tg.Generator`` passed as
``generator=`` (its own NumPy stream). A fill writes its values with ``copy_``, so it is an ordinary
in-place write: the version counter moves, a leaf that requires grad is refused outside ``no_grad``,
and a view writes through to its base.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _tapegrad as _C
from ._creation import _float_dtype, _number, _refuse_bool, _size
from ._dtype_info import iinfo
from ._function import Function
from ._generator import Generator
from ._grad_mode import no_grad
from ._tapegrad import Tensor

if TYPE_CHECKING:
    from ._tapegrad import _DeviceLike, _DTypeLike

__all__ = [
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "rand",
    "randn",
    "rand_like",
    "randn_like",
    "randint",
    "randint_like",
    "randperm",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
]


_DEFAULT_INITIAL_SEED = 0x7A9E_5EED  # the seed src/tensor/random.rs starts its generator with


_initial_seed = _DEFAULT_INITIAL_SEED


def manual_seed(seed: int) -> None:
    """Reseeds tapegrad's process-wide generator (what ``tg.rand``, ``tg.randn`` and the random fills
    draw from), so random results repeat.

    >>> import tapegrad as tg
    >>> tg.manual_seed(3); a = tg.rand(2)
    >>> tg.manual_seed(3); b = tg.rand(2)
    >>> bool((a == b).all())
    True
    """
    global _initial_seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"manual_seed(): seed must be an int, not {type(seed).__name__}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise RuntimeError(f"Overflow when unpacking long: seed {seed} does not fit in 64 bits")
    seed %= 2**64
    _C.manual_seed(seed)
    _initial_seed = seed


def seed() -> int:
    """Reseeds the process-wide generator from the operating system's entropy; returns the seed.

    >>> import tapegrad as tg
    >>> s = tg.seed()
    >>> tg.initial_seed() == s
    True
    """
    s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) % 2**63
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the process-wide generator was last seeded with (``manual_seed`` or ``seed``).

    >>> import tapegrad as tg
    >>> tg.manual_seed(5)
    >>> tg.initial_seed()
    5
    """
    return _initial_seed


def get_rng_state() -> Any:
    """The process-wide generator's state, as an opaque object (PyTorch returns a uint8 tensor) that
    ``set_rng_state`` takes back.

    >>> import tapegrad as tg
    >>> s = tg.get_rng_state(); a = tg.rand(3)
    >>> tg.set_rng_state(s); b = tg.rand(3)
    >>> bool((a == b).all())
    True
    """
    return _C._get_rng_state()


def set_rng_state(new_state: Any) -> None:
    """Puts the process-wide generator back in a state that ``get_rng_state`` returned.

    >>> import tapegrad as tg
    >>> s = tg.get_rng_state(); a = tg.randn(2)
    >>> tg.set_rng_state(s)
    >>> bool((tg.randn(2) == a).all())
    True
    """
    if not isinstance(new_state, _C._RngState):
        raise TypeError(
            f"set_rng_state(): expected a state returned by tg.get_rng_state(), got {type(new_state).__name__}"
        )
    _C._set_rng_state(new_state)


def _drawn(size: tuple[Any, ...], generator: Any, dtype: Any, requires_grad: bool, normal: bool, what: str) -> Tensor:
    """float64 draws of ``generator`` (a ``tg.Generator``: its own NumPy stream) in the shape ``size``
    (ints, or one sequence of ints), as a tensor of ``dtype`` (the default float dtype)."""
    if not isinstance(generator, Generator):
        raise TypeError(f"{what}(): generator must be a tg.Generator, not {type(generator).__name__}")
    shape = _size(size[0] if len(size) == 1 and not isinstance(size[0], int) else size, what)
    draws = generator._rng.standard_normal(shape) if normal else generator._rng.random(shape)
    out = _C.tensor(np.asarray(draws, dtype=np.float64)).to(_float_dtype(dtype))
    if not out.is_floating_point():
        raise RuntimeError(f"{what}(): a floating-point dtype is required, got {out.dtype}")
    return out.requires_grad_() if requires_grad else out


def rand(*size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    """Uniform draws in ``[0, 1)`` of the given shape, from the process-wide generator
    (``tg.manual_seed``) or from ``generator``, a ``tg.Generator`` with its own stream.

    >>> import tapegrad as tg
    >>> g = tg.Generator().manual_seed(1)
    >>> bool((tg.rand(3, generator=g) == tg.rand(3, generator=tg.Generator().manual_seed(1))).all())
    True
    """
    if generator is None:
        return _C.rand(*size, dtype=dtype, requires_grad=requires_grad, device=device)
    return _drawn(size, generator, dtype, requires_grad, False, "rand")


def randn(*size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    """Standard normal draws of the given shape, from the process-wide generator (``tg.manual_seed``)
    or from ``generator``, a ``tg.Generator`` with its own stream.

    >>> import tapegrad as tg
    >>> tg.randn(2, 3, generator=tg.Generator().manual_seed(0)).shape
    (2, 3)
    """
    if generator is None:
        return _C.randn(*size, dtype=dtype, requires_grad=requires_grad, device=device)
    return _drawn(size, generator, dtype, requires_grad, True, "randn")


def randn_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``randn`` (standard normal values) with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> tg.randn_like(tg.zeros(4, dtype=tg.float64)).dtype
    tapegrad.float64
    """
    return _C.randn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def rand_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``rand`` (uniform values in [0, 1)) with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> r = tg.rand_like(tg.zeros(2, 3, dtype=tg.float64))
    >>> r.shape, r.dtype
    ((2, 3), tapegrad.float64)
    """
    return _C.rand(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def _uniform_integers(low: int, high: int, shape: tuple[int, ...], generator: Any = None) -> Tensor:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    u = rand(shape, dtype=_C.float64, generator=generator)
    # floor(u * n) is in [0, n) for u in [0, 1); the min guards the rounding of u * n up to n
    span = high - low
    return (u * span).floor().clamp(max=span - 1).to(_C.int64) + low


def _integer_bound(x: Any, what: str) -> int:
    if isinstance(x, Tensor):
        x = x.item()
    if isinstance(x, (int, np.integer)) and not isinstance(x, builtins.bool):
        return int(x)
    if isinstance(x, float) and x.is_integer():
        return int(x)
    raise TypeError(f"randint(): {what} must be an int, got {x!r}")


def randint(*args: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False,
            generator: Any = None) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or
    ``randint(low, high, size)``; int64 unless ``dtype`` says otherwise.

    >>> import tapegrad as tg
    >>> _ = tg.manual_seed(0)
    >>> t = tg.randint(3, 7, (2, 3))
    >>> t.shape, t.dtype, bool(((t >= 3) & (t < 7)).all())
    ((2, 3), tapegrad.int64, True)
    """
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        low, high, shape = 0, args[0], args[1]
    elif len(args) == 3:
        low, high, shape = args
    else:
        raise TypeError("randint() takes (high, size) or (low, high, size)")
    out = _uniform_integers(_integer_bound(low, "low"), _integer_bound(high, "high"), _size(shape, "randint"),
                             generator)
    if dtype is not None:
        out = out.to(dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out


def randint_like(input: Tensor, *args: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """``randint`` with ``input``'s shape and (unless given) dtype: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``.

    >>> import tapegrad as tg
    >>> t = tg.randint_like(tg.zeros(4), 10)
    >>> t.dtype, bool(((t >= 0) & (t < 10)).all())
    (tapegrad.float32, True)
    """
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint_like() takes (input, high) or (input, low, high)")
    out = _uniform_integers(_integer_bound(low, "low"), _integer_bound(high, "high"), tuple(input.shape))
    out = out.to(input.dtype if dtype is None else dtype)
    return out.requires_grad_() if requires_grad else out


def randperm(n: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
             generator: Any = None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise).

    >>> import tapegrad as tg
    >>> sorted(tg.randperm(5).tolist())
    [0, 1, 2, 3, 4]
    """
    if not isinstance(n, int) or isinstance(n, builtins.bool):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    _refuse_bool(dtype, "randperm")
    out = rand(n, dtype=_C.float64, generator=generator).argsort() if n > 0 else _C.zeros(0, dtype=_C.int64)
    if dtype is not None:
        out = out.to(dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out


_DRAW_NODES: dict[str, Any] = {}


def _drawn_with_zero_gradients(name: str, draw: Any, inputs: Sequence[Any]) -> Tensor:
    """``draw()``; when grad mode is on and a tensor of ``inputs`` requires grad, the sample gets the
    node ``{name}Backward`` whose gradients are zeros, as PyTorch's ``normal``, ``bernoulli`` and
    ``poisson`` record (``NormalBackward``, ``BernoulliBackward``, ``PoissonBackward``)."""
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    if not (_C.is_grad_enabled() and any(t.requires_grad for t in tensors)):
        return draw()
    cls: Any = _DRAW_NODES.get(name)
    if cls is None:
        def forward(ctx: Any, draw: Any, *xs: Tensor) -> Tensor:
            ctx.likes = [(tuple(x.shape), x.dtype) for x in xs]
            return draw()

        def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
            return (None, *(_C.zeros(shape, dtype=dt) for shape, dt in ctx.likes))

        cls = type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
        _DRAW_NODES[name] = cls
    return cls.apply(draw, *tensors)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, dtype: Any = None, requires_grad: bool = False,
           generator: Any = None) -> Tensor:
    """Samples of normal distributions: ``normal(mean, std)`` with a tensor for either (one sample
    per element, broadcast), or ``normal(mean, std, size)`` with two numbers. When ``mean`` or
    ``std`` requires grad the sample has the node ``NormalBackward``, whose gradients are zero (as
    in PyTorch: the sample is not reparametrized).

    >>> import tapegrad as tg
    >>> tg.normal(tg.zeros(3), 0.0)
    tensor([0., 0., 0.])
    >>> tg.normal(2.0, 0.0, (2,))
    tensor([2., 2.])
    """
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        if size is None:
            raise TypeError("normal(): with a number for both mean and std, size is required")
        m, s = _number(mean, "normal's mean"), _number(std, "normal's std")
        if s < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
        out = randn(_size(size, "normal"), dtype=_float_dtype(dtype), generator=generator) * s + m
    else:
        if size is not None:
            raise TypeError("normal(): size is only taken when mean and std are both numbers")
        if s_t and bool((std.detach() < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        if not s_t and _number(std, "normal's std") < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        for t in (mean, std):
            if isinstance(t, Tensor) and not t.is_floating_point():
                raise RuntimeError(f"normal expects floating point mean and std, got {t.dtype}")
        m_v = mean.detach() if m_t else mean
        s_v = std.detach() if s_t else std

        def draw() -> Tensor:
            with no_grad():
                shape = _C.broadcast_tensors(*(t for t in (m_v, s_v) if isinstance(t, Tensor)))[0].shape
                ref = m_v if m_t else s_v
                return randn(shape, dtype=ref.dtype, generator=generator) * s_v + m_v

        out = _drawn_with_zero_gradients("Normal", draw, (mean, std))
    if dtype is not None:
        out = out.to(dtype)
    return out.requires_grad_() if requires_grad else out


def _check_generator(generator: Any) -> None:
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tg.Generator or None, not {type(generator).__name__}")


def _uniform(shape: tuple[int, ...], generator: Any) -> np.ndarray:
    """float64 draws in [0, 1): ``rand``'s, from the process-wide stream or ``generator``'s."""
    _check_generator(generator)
    return rand(shape, dtype=_C.float64, generator=generator).numpy()


def _standard_normal(shape: tuple[int, ...], generator: Any) -> np.ndarray:
    """float64 standard normal draws: ``randn``'s, from the process-wide stream or ``generator``'s."""
    _check_generator(generator)
    return randn(shape, dtype=_C.float64, generator=generator).numpy()


def _numpy_rng(generator: Any) -> np.random.Generator:
    """A NumPy generator for the draws with no transform of uniform ones (Poisson): seeded from the
    process-wide generator (so ``manual_seed`` repeats it) or the given ``tg.Generator``'s own."""
    _check_generator(generator)
    if generator is not None:
        return generator._rng
    r = _C.rand(2, dtype=_C.float64).numpy()
    return np.random.Generator(np.random.PCG64(int(r[0] * 2**32) << 32 | int(r[1] * 2**32)))


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("tapegrad.", "")


def _float_only(t: Tensor, what: str) -> None:
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"{what} is only implemented for floating-point tensors, got {_dtype_name(t.dtype)}")


def _real_number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a real number, not {type(x).__name__}")
    return float(x)


def _write(t: Tensor, values: np.ndarray, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    if t.requires_grad and t.is_leaf and _C.is_grad_enabled():
        raise RuntimeError(
            f"a leaf tensor that requires grad is being used in an in-place operation ({what}). Wrap the "
            "update in `with tapegrad.no_grad():`, or work on a copy (`.clone()`)."
        )
    return t.copy_(_C.tensor(np.array(values, order="C"), dtype=t.dtype))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with uniform samples from ``[a, b)``; returns ``self``.

    >>> import tapegrad as tg
    >>> t = tg.zeros(1000).uniform_(2.0, 3.0)
    >>> bool(((t >= 2) & (t < 3)).all())
    True
    """
    _float_only(self, "uniform_")
    lo, hi = _real_number(a, "uniform_'s from"), _real_number(b, "uniform_'s to")
    top = float(np.finfo(np.float16 if self.dtype == _C.float16 else np.float32 if self.dtype == _C.float32
                         else np.float64).max) if self.dtype != _C.bfloat16 else 3.3895313892515355e38
    for name, v in (("from", lo), ("to", hi)):
        if not -top <= v <= top:
            raise RuntimeError(f"{name} is out of bounds for {_dtype_name(self.dtype)}: {v}")
    if hi - lo > top:
        raise RuntimeError(
            f"uniform_ expects to - from <= the dtype's largest value, but found to={hi} and from={lo} "
            "which result in to - from to exceed the limit"
        )
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={lo} > to={hi}")
    u = _uniform(tuple(self.shape), generator)
    return _write(self, lo + (hi - lo) * u, "uniform_")


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with normal samples of the given mean and standard deviation.

    >>> import tapegrad as tg
    >>> t = tg.zeros(20000).normal_(5.0, 0.5)
    >>> abs(t.mean().item() - 5.0) < 0.05
    True
    """
    _float_only(self, "normal_")
    m, s = _real_number(mean, "normal_'s mean"), _real_number(std, "normal_'s std")
    if not s >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
    return _write(self, m + s * _standard_normal(tuple(self.shape), generator), "normal_")


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with ``exp(N(mean, std))`` samples.

    >>> import tapegrad as tg
    >>> bool((tg.zeros(100).log_normal_() > 0).all())
    True
    """
    _float_only(self, "log_normal_")
    m, s = _real_number(mean, "log_normal_'s mean"), _real_number(std, "log_normal_'s std")
    if not s > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={s}")
    return _write(self, np.exp(m + s * _standard_normal(tuple(self.shape), generator)), "log_normal_")


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with exponential samples of rate ``lambd`` (mean ``1 / lambd``).

    >>> import tapegrad as tg
    >>> bool((tg.zeros(100).exponential_(2.0) >= 0).all())
    True
    """
    _float_only(self, "exponential_")
    lam = _real_number(lambd, "exponential_'s lambd")
    if not lam > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lam}")
    u = _uniform(tuple(self.shape), generator)
    return _write(self, -np.log1p(-u) / lam, "exponential_")


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with Cauchy samples ``median + sigma * tan(pi * (u - 1/2))``.

    >>> import tapegrad as tg
    >>> tg.zeros(3).cauchy_().shape
    (3,)
    """
    _float_only(self, "cauchy_")
    med, sig = _real_number(median, "cauchy_'s median"), _real_number(sigma, "cauchy_'s sigma")
    if not sig > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sig}")
    u = _uniform(tuple(self.shape), generator)
    return _write(self, med + sig * np.tan(np.pi * (u - 0.5)), "cauchy_")


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with geometric samples: the number of Bernoulli(``p``) trials up to and
    including the first success (1, 2, ...).

    >>> import tapegrad as tg
    >>> bool((tg.zeros(100).geometric_(0.5) >= 1).all())
    True
    """
    q = _real_number(p, "geometric_'s p")
    if not 0 < q < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={q}")
    if self.dtype == _C.bool:
        raise NotImplementedError("geometric_ is not implemented for bool tensors")
    u = _uniform(tuple(self.shape), generator)
    return _write(self, np.maximum(np.ceil(np.log1p(-u) / np.log1p(-q)), 1.0), "geometric_")


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with 0/1 samples that are 1 with probability ``p`` (a number, or a tensor
    that broadcasts to ``self``'s shape).

    >>> import tapegrad as tg
    >>> t = tg.zeros(4).bernoulli_(tg.tensor([0.0, 1.0, 0.0, 1.0]))
    >>> t.tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    shape = tuple(self.shape)
    probs: Any
    if isinstance(p, Tensor):
        probs = p.detach().to(_C.float64).numpy()
        if np.any(~((probs >= 0) & (probs <= 1))):
            raise RuntimeError("bernoulli_: expected all probabilities p in [0, 1]")
        try:
            probs = np.broadcast_to(probs, shape)
        except ValueError:
            raise RuntimeError(
                f"bernoulli_: the probabilities of shape {list(p.shape)} do not broadcast to the tensor's shape "
                f"{list(shape)}"
            ) from None
    else:
        probs = _real_number(p, "bernoulli_'s p")
        if not 0 <= probs <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={probs}")
    return _write(self, (_uniform(shape, generator) < probs).astype(np.float64), "bernoulli_")


def random_(self: Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> Tensor:
    """Fills ``self`` in place with integers drawn uniformly: ``random_(to)`` from ``[0, to)``,
    ``random_(from, to)`` from ``[from, to)``, ``random_()`` from ``[0, 2**mantissa]`` for floats (the
    dtype's largest range for integers).

    >>> import tapegrad as tg
    >>> t = tg.zeros(100, dtype=tg.int64).random_(3, 5)
    >>> sorted(set(t.tolist())) == [3, 4] or set(t.tolist()) <= {3, 4}
    True
    """
    names = ("from", "to")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    bound: dict[str, Any] = dict(zip(names[2 - len(args):] if len(args) == 1 else names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise TypeError(f"random_() got an unexpected or repeated keyword argument '{k}'")
        bound[k] = v
    dt = self.dtype
    if dt == _C.bool:
        default_hi = 2
    elif dt.is_floating_point:
        digits = {_C.float64: 53, _C.float32: 24, _C.float16: 11}.get(dt, 8)
        default_hi = 2**digits + 1
    else:
        default_hi = int(iinfo(dt).max) + 1
    for k, v in bound.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"random_(): argument '{k}' must be an int, not {type(v).__name__}")
    lo = int(bound.get("from", 0))
    hi = bound.get("to")
    hi = default_hi if hi is None else int(hi)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    # the dtype must hold every value of [from, to)
    if dt == _C.bool:
        low_ok, high_ok = 0, 1
    elif dt.is_floating_point:
        low_ok, high_ok = -(default_hi - 1), default_hi - 1
    else:
        low_ok, high_ok = int(iinfo(dt).min), int(iinfo(dt).max)
    if not low_ok <= lo <= high_ok:
        raise RuntimeError(f"random_: from={lo} is out of bounds for {_dtype_name(dt)}")
    if not low_ok <= hi - 1 <= high_ok:
        raise RuntimeError(f"random_: to - 1 = {hi - 1} is out of bounds for {_dtype_name(dt)}")
    span = hi - lo
    shape = tuple(self.shape)
    if span <= 2**53:
        u = _uniform(shape, generator)
        vals = np.minimum(np.floor(u * span), span - 1).astype(np.int64) + lo
    else:  # ranges past float64's integers: NumPy's exact integer draws, seeded from the generator
        vals = _numpy_rng(generator).integers(lo, hi, size=shape, dtype=np.int64)
    return _write(self, vals, "random_")


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 samples, each 1 with the probability that ``input`` holds at its place (or ``p`` for all
    places when given); the result has ``input``'s shape and dtype. Without ``p``, an ``input`` that
    requires grad gives the sample the node ``BernoulliBackward`` with zero gradients (as PyTorch).

    >>> import tapegrad as tg
    >>> tg.bernoulli(tg.tensor([0.0, 1.0, 1.0])).tolist()
    [0.0, 1.0, 1.0]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if p is None:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(
                f"bernoulli is only implemented for floating-point tensors, got {_dtype_name(input.dtype)}"
            )
        probs = input.detach()
        return _drawn_with_zero_gradients(
            "Bernoulli", lambda: bernoulli_(_C.zeros(*input.shape, dtype=input.dtype), probs, generator=generator),
            (input,))
    return bernoulli_(_C.zeros(*input.shape, dtype=input.dtype), p, generator=generator)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """Indices drawn from the categories of each row of ``input`` (non-negative weights, 1-D or 2-D),
    ``num_samples`` per row, with or without replacement; int64.

    >>> import tapegrad as tg
    >>> tg.multinomial(tg.tensor([0.0, 0.0, 1.0]), 2, replacement=True).tolist()
    [2, 2]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {_dtype_name(input.dtype)}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"multinomial(): num_samples must be an int, not {type(num_samples).__name__}")
    n = int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    w = input.detach().to(_C.float64).numpy()
    rows = w.reshape(1, -1) if w.ndim == 1 else w
    k = rows.shape[1]
    if not replacement and n > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    sums = rows.sum(axis=1)
    if np.any(sums <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and np.any((rows > 0).sum(axis=1) < n):
        raise RuntimeError(
            "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)"
        )
    if replacement:
        cdf = np.cumsum(rows / sums[:, None], axis=1)
        u = _uniform((rows.shape[0], n), generator)
        out = np.stack([np.searchsorted(c, ui * c[-1], side="right") for c, ui in zip(cdf, u)])
        # a u at the top edge, or a zero-weight category at the end, must not be chosen
        last = np.array([np.flatnonzero(r > 0)[-1] for r in rows])
        out = np.minimum(out, last[:, None])
    else:
        # exponential races: the n smallest E_i / w_i are an ordered draw without replacement
        u = _uniform(rows.shape, generator)
        with np.errstate(divide="ignore"):
            keys = np.where(rows > 0, -np.log1p(-u) / rows, np.inf)
        out = np.argsort(keys, axis=1, kind="stable")[:, :n]
    out = out.astype(np.int64)
    return _C.tensor(out.reshape(n) if w.ndim == 1 else out, dtype=_C.int64)


def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Poisson samples whose rates are ``input`` (non-negative); same shape and dtype.

    >>> import tapegrad as tg
    >>> tg.poisson(tg.zeros(3)).tolist()
    [0.0, 0.0, 0.0]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"poisson is only implemented for floating-point tensors, got {_dtype_name(input.dtype)}")
    rates = input.detach().to(_C.float64).numpy()
    if not np.all(rates >= 0) or not np.all(np.isfinite(rates)):
        raise RuntimeError("poisson: the rates must be finite and non-negative")
    def draw() -> Tensor:
        vals = np.asarray(_numpy_rng(generator).poisson(rates), dtype=np.float64)
        return _C.tensor(vals, dtype=input.dtype)

    # An input that requires grad: the node PoissonBackward, with zero gradients (as PyTorch).
    return _drawn_with_zero_gradients("Poisson", draw, (input,))
