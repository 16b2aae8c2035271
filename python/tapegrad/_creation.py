"""Issue 15's creation functions and tensor conveniences written over the native ones: ``as_tensor``,
``linspace``, ``logspace``, ``randint``, ``randint_like``, ``randperm``, ``normal``; ``Tensor.new_*``,
``type_as``, ``mT``/``mH``/``H``; ``unique(dim=)`` and ``repeat_interleave(repeats_tensor)``.

Random draws come from tapegrad's generator (``tg.manual_seed``), through ``tg.rand``/``tg.randn``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _tapegrad as _C
from ._grad_mode import no_grad
from ._tapegrad import Tensor

__all__ = [
    "as_tensor", "linspace", "logspace", "rand", "randn", "randint", "randint_like", "randperm", "normal", "unique",
    "repeat_interleave",
]

_native_unique = Tensor.unique


def _size(size: Any, what: str) -> tuple[int, ...]:
    if isinstance(size, int) and not isinstance(size, builtins.bool):
        return (size,)
    if isinstance(size, Sequence) and builtins.all(
        isinstance(s, int) and not isinstance(s, builtins.bool) for s in size
    ):
        return tuple(size)
    raise TypeError(f"{what}: size must be an int or a sequence of ints, got {size!r}")


def _number(x: Any, what: str) -> float:
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError(f"{what} must be a number or a one-element tensor, got a tensor of shape {x.shape}")
        return float(x.item())
    if isinstance(x, (int, float, np.number)) and not isinstance(x, builtins.bool):
        return float(x)
    raise TypeError(f"{what} must be a number, got {type(x).__name__}")


def _float_dtype(dtype: Any) -> Any:
    return _C.get_default_dtype() if dtype is None else dtype


def _drawn(size: tuple[Any, ...], generator: Any, dtype: Any, requires_grad: bool, normal: bool, what: str) -> Tensor:
    """float64 draws of ``generator`` (a ``tg.Generator``: its own NumPy stream) in the shape ``size``
    (ints, or one sequence of ints), as a tensor of ``dtype`` (the default float dtype)."""
    from ._generator import Generator

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


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor: a tensor of the requested dtype is returned as it is (no copy), another
    tensor is converted (keeping its history); a NumPy array shares its memory (as ``from_numpy``)
    when no other dtype is asked for, as in PyTorch; anything else is copied, as ``tg.tensor`` does.

    >>> import numpy as np, tapegrad as tg
    >>> t = tg.tensor([1., 2.])
    >>> tg.as_tensor(t) is t
    True
    >>> a = np.zeros(2)
    >>> s = tg.as_tensor(a); a[0] = 3.0
    >>> s
    tensor([3., 0.], dtype=tapegrad.float64)
    >>> tg.as_tensor([1, 2], dtype=tg.float64)
    tensor([1., 2.], dtype=tapegrad.float64)
    """
    if isinstance(data, Tensor):
        if device is not None:
            data = data.to(device)
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and data.dtype.isnative and data.dtype.kind in "biuf":
        if device is not None:
            _C.zeros(0, device=device)  # the device check of every factory
        try:
            shared = _C.from_numpy(data)
        except (TypeError, ValueError):
            # A dtype or layout that cannot be shared (uint16, unaligned, ...): copied below, where a
            # dtype tapegrad lacks is refused.
            pass
        else:
            return shared if dtype is None or shared.dtype == dtype else shared.to(dtype)
    return _C.tensor(data, dtype=dtype, device=device)


def _linspace_values(start: float, end: float, steps: int) -> np.ndarray:
    # As PyTorch: the first half counts up from start, the second half down from end, so that both
    # ends are exact and the spacing is symmetric.
    if steps == 1:
        return np.array([start])
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    return np.where(i < half, start + step * i, end - step * (steps - 1 - i))


def _check_steps(steps: Any, what: str) -> int:
    if not isinstance(steps, int) or isinstance(steps, builtins.bool):
        raise TypeError(f"{what}(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps


def _refuse_bool(dtype: Any, kernel: str) -> None:
    # PyTorch has no bool kernel for the range factories (NotImplementedError, as it raises).
    if dtype is _C.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def linspace(
    start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included.

    >>> import tapegrad as tg
    >>> tg.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    steps = _check_steps(steps, "linspace")
    _refuse_bool(dtype, "linspace_cpu")
    a, b = _number(start, "linspace's start"), _number(end, "linspace's end")
    values = _linspace_values(a, b, steps)
    return _C.tensor(values, dtype=_float_dtype(dtype), device=device, requires_grad=requires_grad)


def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the exponent.

    >>> import tapegrad as tg
    >>> tg.logspace(0, 3, 4)
    tensor([   1.,   10.,  100., 1000.])
    """
    steps = _check_steps(steps, "logspace")
    _refuse_bool(dtype, "logspace_cpu")
    a, b = _number(start, "logspace's start"), _number(end, "logspace's end")
    values = np.power(_number(base, "logspace's base"), _linspace_values(a, b, steps))
    return _C.tensor(values, dtype=_float_dtype(dtype), device=device, requires_grad=requires_grad)


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
        from ._function import Function

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


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The sorted distinct elements (or, with ``dim``, the distinct slices along ``dim``); optionally
    each element's (slice's) index among them and the counts.

    >>> import tapegrad as tg
    >>> tg.unique(tg.tensor([[1, 2], [1, 2], [0, 5]]), dim=0)
    tensor([[0, 5],
            [1, 2]])
    """
    if dim is None:
        return _native_unique(input, sorted, return_inverse, return_counts)
    if not isinstance(dim, int) or isinstance(dim, builtins.bool):
        raise TypeError(f"unique(): dim must be an int, got {type(dim).__name__}")
    n = max(input.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    arr = input.detach().numpy()
    if arr.ndim == 0:
        arr = arr.reshape(1)
    d = dim % arr.ndim
    if arr.shape[d] == 0:
        if builtins.any(s == 0 for i, s in enumerate(arr.shape) if i != d) or arr.ndim == 1:
            values, inverse, counts = arr, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        else:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied")
    else:
        values, inverse, counts = np.unique(arr, axis=d, return_inverse=True, return_counts=True)
    out = _C.tensor(np.ascontiguousarray(values), dtype=input.dtype)
    result: list[Tensor] = [out]
    if return_inverse:
        result.append(_C.tensor(np.asarray(inverse, dtype=np.int64).reshape(-1)))
    if return_counts:
        result.append(_C.tensor(np.asarray(counts, dtype=np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


def _tensor_unique(
    self: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The sorted distinct elements (``tg.unique``; with ``dim``, the distinct slices).

    >>> import tapegrad as tg
    >>> tg.tensor([3, 1, 3]).unique()
    tensor([1, 3])
    """
    return unique(self, sorted, return_inverse, return_counts, dim)


def repeat_interleave(
    input: Tensor, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """``input.repeat_interleave(repeats, dim)``; with a 1-D int64 tensor alone,
    ``repeat_interleave(repeats)`` repeats each index ``i`` ``repeats[i]`` times.

    >>> import tapegrad as tg
    >>> tg.repeat_interleave(tg.tensor([1, 2]), 3)
    tensor([1, 1, 1, 2, 2, 2])
    >>> tg.repeat_interleave(tg.tensor([2, 1]))
    tensor([0, 0, 1])
    """
    if repeats is None:
        if input.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return _C.arange(input.numel()).repeat_interleave(input, 0, output_size=output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size)


# ---- Tensor conveniences ------------------------------------------------------------------


def _sizes(size: tuple[Any, ...], what: str) -> tuple[int, ...]:
    if len(size) == 1 and not isinstance(size[0], int):
        return _size(size[0], what)
    return _size(size, what)


def _finish(out: Tensor, requires_grad: bool) -> Tensor:
    return out.requires_grad_() if requires_grad else out


def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros of the given size, with this tensor's dtype unless ``dtype`` is given.

    >>> import tapegrad as tg
    >>> tg.zeros(1, dtype=tg.float64).new_zeros(2, 3).dtype
    tapegrad.float64
    """
    return _finish(_C.zeros(*_sizes(size, "new_zeros"), dtype=dtype or self.dtype), requires_grad)


def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones of the given size, with this tensor's dtype unless ``dtype`` is given.

    >>> import tapegrad as tg
    >>> tg.tensor([1, 2]).new_ones(2)
    tensor([1, 1])
    """
    return _finish(_C.ones(*_sizes(size, "new_ones"), dtype=dtype or self.dtype), requires_grad)


def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of the given size (zeros in tapegrad), with this tensor's dtype
    unless ``dtype`` is given.

    >>> import tapegrad as tg
    >>> tg.zeros(1).new_empty((2, 2)).shape
    (2, 2)
    """
    return _finish(_C.empty(*_sizes(size, "new_empty"), dtype=dtype or self.dtype), requires_grad)


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere in a tensor of the given size, with this tensor's dtype unless
    ``dtype`` is given.

    >>> import tapegrad as tg
    >>> tg.zeros(1).new_full((2,), 7)
    tensor([7., 7.])
    """
    return _finish(_C.full(_size(size, "new_full"), fill_value, dtype=dtype or self.dtype), requires_grad)


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` (without history), with this tensor's dtype unless ``dtype`` is given.

    >>> import tapegrad as tg
    >>> tg.zeros(1, dtype=tg.float64).new_tensor([1, 2])
    tensor([1., 2.], dtype=tapegrad.float64)
    """
    if isinstance(data, Tensor):
        data = data.detach()
        out = data.to(dtype or self.dtype).clone() if (dtype or self.dtype) != data.dtype else data.clone()
    else:
        out = _C.tensor(data, dtype=dtype or self.dtype)
    return _finish(out, requires_grad)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor converted to ``other``'s dtype (itself when they match).

    >>> import tapegrad as tg
    >>> tg.tensor([1, 2]).type_as(tg.zeros(1))
    tensor([1., 2.])
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' must be Tensor, not {type(other).__name__}")
    return self.to(other.dtype)


def _mT(self: Tensor) -> Tensor:
    """The last two dimensions swapped (a view); for batches of matrices.

    >>> import tapegrad as tg
    >>> tg.zeros(4, 2, 3).mT.shape
    (4, 3, 2)
    """
    if self.ndim < 2:
        raise RuntimeError(
            f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
        )
    return self.transpose(-2, -1)


def _mH(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions: ``mT`` for real tensors.

    >>> import tapegrad as tg
    >>> tg.zeros(2, 3).mH.shape
    (3, 2)
    """
    if self.ndim < 2:
        raise RuntimeError(
            f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
        )
    return self.transpose(-2, -1)


def _H(self: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (``t()`` for real tensors; a 0-D tensor is itself).

    >>> import tapegrad as tg
    >>> tg.tensor([[1., 2.]]).H
    tensor([[1.],
            [2.]])
    """
    if self.ndim == 0:
        return self
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return self.t()


def _install_tensor_methods() -> None:
    """The conveniences as ``Tensor`` methods and properties, as PyTorch has them."""
    methods: dict[str, Any] = {
        "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
        "new_tensor": new_tensor, "type_as": type_as, "unique": _tensor_unique,
        "mT": property(_mT, doc=_mT.__doc__), "mH": property(_mH, doc=_mH.__doc__),
        "H": property(_H, doc=_H.__doc__),
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
