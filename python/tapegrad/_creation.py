"""Creating tensors: ``as_tensor``, ``linspace``, ``logspace``, the ``*_like`` factories, and the
``Tensor.new_*``/``type_as`` conveniences. The native factories (``tensor``, ``zeros``, ``ones``,
``empty``, ``full``, ``arange``, ``eye``, ``from_numpy``) are re-exported from ``_tapegrad``; the random
ones are in ``_random.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _tapegrad as _C
from ._tapegrad import Tensor, arange, empty, eye, from_numpy, full, ones, tensor, zeros

if TYPE_CHECKING:
    from ._tapegrad import _DeviceLike, _DTypeLike, _Number

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "eye",
    "linspace",
    "logspace",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
]


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


def zeros_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``zeros`` with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> tg.zeros_like(tg.tensor([[1, 2, 3]]))
    tensor([[0, 0, 0]])
    """
    return _C.zeros(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def ones_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``ones`` with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> tg.ones_like(tg.tensor([2., 3.]), dtype=tg.float64)
    tensor([1., 1.], dtype=tapegrad.float64)
    """
    return _C.ones(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def empty_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``empty`` with the shape and dtype of ``t`` (its values are zeros in tapegrad).

    >>> import tapegrad as tg
    >>> tg.empty_like(tg.ones(2, 3)).shape
    (2, 3)
    """
    return _C.empty(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def full_like(
    t: Tensor,
    fill_value: _Number,
    dtype: _DTypeLike | None = None,
    requires_grad: bool = False,
    device: _DeviceLike | None = None,
) -> Tensor:
    """``full`` with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> tg.full_like(tg.zeros(2, 2), 7.0)
    tensor([[7., 7.],
            [7., 7.]])
    """
    return _C.full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


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
