"""Issue 15, ops15b: ``clip``, ``masked_fill``, ``masked_select``, ``diag_embed``, the in-place random
fills (``uniform_``, ``normal_``, ``bernoulli_``, ...), ``bernoulli``/``multinomial``/``poisson`` and the
generator functions ``seed``/``initial_seed``/``get_rng_state``/``set_rng_state``.

Random draws come from tapegrad's process-wide generator (``tg.manual_seed``: uniform and normal draws
through ``tg.rand``/``tg.randn``, transformed here), or from a ``tg.Generator`` passed as ``generator=``.
A fill writes its values with ``copy_``, so it is an ordinary in-place write: the version counter moves,
a leaf that requires grad is refused outside ``no_grad``, and a view writes through to its base.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _tapegrad as _C
from ._creation import _drawn_with_zero_gradients, rand, randn
from ._generator import Generator
from ._tapegrad import Tensor

_DEFAULT_INITIAL_SEED = 0x7A9E_5EED  # the seed src/tensor/random.rs starts its generator with
_initial_seed = _DEFAULT_INITIAL_SEED


# --- the process-wide generator's seed and state -------------------------------------------------


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


# --- draws ---------------------------------------------------------------------------------------


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


def _number(x: Any, what: str) -> float:
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


# --- in-place random fills (Tensor methods) -----------------------------------------------------


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills ``self`` in place with uniform samples from ``[a, b)``; returns ``self``.

    >>> import tapegrad as tg
    >>> t = tg.zeros(1000).uniform_(2.0, 3.0)
    >>> bool(((t >= 2) & (t < 3)).all())
    True
    """
    _float_only(self, "uniform_")
    lo, hi = _number(a, "uniform_'s from"), _number(b, "uniform_'s to")
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
    m, s = _number(mean, "normal_'s mean"), _number(std, "normal_'s std")
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
    m, s = _number(mean, "log_normal_'s mean"), _number(std, "log_normal_'s std")
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
    lam = _number(lambd, "exponential_'s lambd")
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
    med, sig = _number(median, "cauchy_'s median"), _number(sigma, "cauchy_'s sigma")
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
    q = _number(p, "geometric_'s p")
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
        probs = _number(p, "bernoulli_'s p")
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
        from ._dtype_info import iinfo

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
        from ._dtype_info import iinfo

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


# --- out-of-place random functions ---------------------------------------------------------------


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


# --- masked_fill, masked_select, diag_embed, clip -------------------------------------------------


def _bool_mask(mask: Any, what: str) -> Tensor:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{what}(): argument 'mask' must be a Tensor, not {type(mask).__name__}")
    if mask.dtype != _C.bool:
        raise RuntimeError(f"{what} only supports boolean masks, but got mask with dtype {_dtype_name(mask.dtype)}")
    return mask


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``input`` with ``value`` where the boolean ``mask`` is True (``input`` and ``mask`` broadcast);
    ``value`` is a number or a 0-dim tensor (which gets a gradient).

    >>> import tapegrad as tg
    >>> tg.masked_fill(tg.tensor([1.0, 2.0, 3.0]), tg.tensor([True, False, True]), 0.0).tolist()
    [0.0, 2.0, 0.0]
    """
    import tapegrad as tg

    if not isinstance(input, Tensor):
        raise TypeError(f"masked_fill(): argument 'input' must be a Tensor, not {type(input).__name__}")
    _bool_mask(mask, "masked_fill")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.dim()} dimension(s)."
            )
        v = value.to(input.dtype)
    else:
        if not isinstance(value, bool):
            fv = _number(value, "masked_fill's value")
            if not input.dtype.is_floating_point and input.dtype != _C.bool:
                from ._dtype_info import iinfo

                info = iinfo(input.dtype)
                if not (math.isfinite(fv) and info.min <= fv < info.max + 1):
                    raise RuntimeError(
                        f"value cannot be converted to type {_dtype_name(input.dtype)} without overflow: {value}"
                    )
        v = _C.tensor(value, dtype=input.dtype)
    return tg.where(mask, v, input)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the boolean ``mask`` is True (both broadcast), as a 1-D tensor.

    >>> import tapegrad as tg
    >>> tg.masked_select(tg.tensor([[1.0, 2.0], [3.0, 4.0]]), tg.tensor([True, False])).tolist()
    [1.0, 3.0]
    """
    import tapegrad as tg

    if not isinstance(input, Tensor):
        raise TypeError(f"masked_select(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if not isinstance(mask, Tensor) or mask.dtype != _C.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    x, m = tg.broadcast_tensors(input, mask)
    return x.reshape(-1)[m.reshape(-1)]


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals (``offset`` from the main one, in the plane of dims ``dim1``/``dim2`` of
    the result) are filled by ``input``'s last dimension; zeros elsewhere.

    >>> import tapegrad as tg
    >>> tg.diag_embed(tg.tensor([1.0, 2.0])).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    import tapegrad as tg

    if not isinstance(input, Tensor):
        raise TypeError(f"diag_embed(): argument 'input' must be a Tensor, not {type(input).__name__}")
    for name, v in (("offset", offset), ("dim1", dim1), ("dim2", dim2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"diag_embed(): argument '{name}' must be an int, not {type(v).__name__}")
    offset, dim1, dim2 = int(offset), int(dim1), int(dim2)
    nd = input.dim() + 1  # a 0-dim input leaves only one result dim: the default dims are out of range
    d1, d2 = dim1 + nd if dim1 < 0 else dim1, dim2 + nd if dim2 < 0 else dim2
    if not (0 <= d1 < nd and 0 <= d2 < nd):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                         f"{dim1 if not 0 <= d1 < nd else dim2})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1]
    k = abs(offset)
    m = n + k
    # x[..., i] placed at row i, column i + offset (offset >= 0) or row i + |offset|, column i
    x = input
    if k:
        x = tg.cat([x, _C.zeros(*input.shape[:-1], k, dtype=input.dtype)], dim=-1)
    idx = np.arange(m)
    cond = idx[None, :] == idx[:, None] + offset  # cond[r, c]: c == r + offset
    xs = x.unsqueeze(-1) if offset >= 0 else x.unsqueeze(-2)
    out = tg.where(_C.tensor(cond), xs, _C.zeros((), dtype=input.dtype))
    # the two new dims are the last two (rows, columns); move them to dim1 and dim2
    return out.movedim((nd - 2, nd - 1), (d1, d2))


def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """An alias of ``clamp``.

    >>> import tapegrad as tg
    >>> tg.clip(tg.tensor([-2.0, 0.5, 2.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]
    """
    import tapegrad as tg

    return tg.clamp(input, min, max)


def _clip_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """In-place ``clip`` (an alias of ``clamp_``).

    >>> import tapegrad as tg
    >>> tg.tensor([-2.0, 2.0]).clip_(-1.0, 1.0).tolist()
    [-1.0, 1.0]
    """
    return self.clamp_(min, max)


# --- function forms of in-place methods, Tensor.where (ops15c) ------------------------------------

_INPLACE_EXAMPLES = {
    "exp_": ("tg.tensor([0.0])", "tensor([1.])"),
    "sqrt_": ("tg.tensor([4.0])", "tensor([2.])"),
    "relu_": ("tg.tensor([-1.0, 2.0])", "tensor([0., 2.])"),
    "sigmoid_": ("tg.tensor([0.0])", "tensor([0.5000])"),
    "tanh_": ("tg.tensor([0.0])", "tensor([0.])"),
    "neg_": ("tg.tensor([1.0])", "tensor([-1.])"),
    "detach_": ("tg.tensor([1.0])", "tensor([1.])"),
}


def _function_form(name: str) -> Any:
    def fn(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return getattr(input, name)()

    arg, shown = _INPLACE_EXAMPLES[name]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``input.{name}()`` as a function: changes ``input`` in place and returns it.\n\n"
        f"    >>> import tapegrad as tg\n    >>> tg.{name}({arg})\n    {shown}\n"
    )
    return fn


exp_ = _function_form("exp_")
sqrt_ = _function_form("sqrt_")
relu_ = _function_form("relu_")
sigmoid_ = _function_form("sigmoid_")
tanh_ = _function_form("tanh_")
neg_ = _function_form("neg_")
detach_ = _function_form("detach_")


def index_put_(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``input.index_put_(indices, values, accumulate)`` as a function; returns ``input``.

    >>> import tapegrad as tg
    >>> tg.index_put_(tg.zeros(3), (tg.tensor([0, 0]),), tg.tensor(1.0), accumulate=True)
    tensor([2., 0., 0.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"index_put_(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.index_put_(indices, values, accumulate)


def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``tg.where(condition, self, other)``: ``self`` where ``condition`` holds, else ``other``.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).where(tg.tensor([True, False]), 0.0)
    tensor([1., 0.])
    """
    return _C.where(condition, self, other)


def _install_tensor_methods() -> None:
    """The random fills and the masking/diagonal conveniences as ``Tensor`` methods, where missing."""
    methods: dict[str, Any] = {
        "uniform_": uniform_, "normal_": normal_, "log_normal_": log_normal_, "exponential_": exponential_,
        "cauchy_": cauchy_, "geometric_": geometric_, "bernoulli_": bernoulli_, "random_": random_,
        "bernoulli": bernoulli, "multinomial": multinomial, "masked_fill": masked_fill,
        "masked_select": masked_select, "diag_embed": diag_embed, "clip": clip, "clip_": _clip_,
        "where": _where_method,
    }
    for name, fn in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
