"""Indexing, gathering and scattering: ``gather``/``scatter*``, the ``index_*`` family, masks
(``masked_fill``, ``masked_select``, ``masked_scatter``), ``take``, ``take_along_dim`` and ``nonzero``. The
functions call the native ``Tensor`` methods (``src/python/tensor_index.rs``, ``tensor_scatter.rs``);
``masked_fill`` and ``masked_select`` are composed of ``where`` and boolean indexing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _tapegrad as _C
from ._dtype_info import iinfo
from ._tapegrad import Tensor

__all__ = [
    "gather",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_select",
    "index_add",
    "index_fill",
    "index_put",
    "index_put_",
    "masked_fill",
    "masked_select",
    "masked_scatter",
    "take",
    "take_along_dim",
    "nonzero",
]


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (and likewise for other dims).

    >>> import tapegrad as tg
    >>> tg.gather(tg.tensor([[1., 2.], [3., 4.]]), 1, tg.tensor([[1], [0]]))
    tensor([[2.],
            [3.]])
    """
    return input.gather(dim, index)


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor | float | None = None,
    *,
    value: float | None = None,
    reduce: str | None = None,
) -> Tensor:
    """``input`` with ``src`` (or the number ``value``) written at ``index`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.scatter(tg.zeros(3), 0, tg.tensor([2, 0]), tg.tensor([5., 6.]))
    tensor([6., 0., 5.])
    """
    return input.scatter(dim, index, src, value, reduce=reduce)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src[pos]`` added at ``index[pos]`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.scatter_add(tg.zeros(3), 0, tg.tensor([0, 2, 0]), tg.ones(3))
    tensor([2., 0., 1.])
    """
    return input.scatter_add(dim, index, src)


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``src`` at ``index`` along ``dim`` combined into ``input`` by ``reduce`` ("sum", "prod",
    "mean", "amax" or "amin").

    >>> import tapegrad as tg
    >>> tg.scatter_reduce(tg.zeros(2), 0, tg.tensor([0, 0, 1]), tg.tensor([1., 3., 2.]), "amax")
    tensor([3., 2.])
    """
    return input.scatter_reduce(dim, index, src, reduce, include_self=include_self)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` at ``index`` (1-d int64) along ``dim``.

    >>> import tapegrad as tg
    >>> tg.index_select(tg.tensor([[1., 2.], [3., 4.]]), 0, tg.tensor([1, 1]))
    tensor([[3., 4.],
            [3., 4.]])
    """
    return input.index_select(dim, index)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1.0) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at the slices ``index`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.index_add(tg.zeros(3), 0, tg.tensor([2, 2]), tg.ones(2))
    tensor([0., 0., 2.])
    """
    return input.index_add(dim, index, source, alpha=alpha)


def index_fill(input: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``.

    >>> import tapegrad as tg
    >>> tg.index_fill(tg.ones(2, 2), 1, tg.tensor([0]), 0.)
    tensor([[0., 1.],
            [0., 1.]])
    """
    return input.index_fill(dim, index, value)


def index_put(input: Tensor, indices: tuple[Tensor, ...], values: Tensor | float, accumulate: bool = False) -> Tensor:
    """``input[indices] = values`` out of place (``accumulate``: added, repeated indices summing).

    >>> import tapegrad as tg
    >>> tg.index_put(tg.zeros(3), (tg.tensor([0, 0]),), tg.tensor(1.), accumulate=True)
    tensor([2., 0., 0.])
    """
    return input.index_put(indices, values, accumulate)


def index_put_(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``input.index_put_(indices, values, accumulate)`` as a function; returns ``input``.

    >>> import tapegrad as tg
    >>> tg.index_put_(tg.zeros(3), (tg.tensor([0, 0]),), tg.tensor(1.0), accumulate=True)
    tensor([2., 0., 0.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"index_put_(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.index_put_(indices, values, accumulate)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("tapegrad.", "")


def _real_number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a real number, not {type(x).__name__}")
    return float(x)


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
            fv = _real_number(value, "masked_fill's value")
            if not input.dtype.is_floating_point and input.dtype != _C.bool:
                info = iinfo(input.dtype)
                if not (math.isfinite(fv) and info.min <= fv < info.max + 1):
                    raise RuntimeError(
                        f"value cannot be converted to type {_dtype_name(input.dtype)} without overflow: {value}"
                    )
        v = _C.tensor(value, dtype=input.dtype)
    return _C.where(mask, v, input)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the boolean ``mask`` is True (both broadcast), as a 1-D tensor.

    >>> import tapegrad as tg
    >>> tg.masked_select(tg.tensor([[1.0, 2.0], [3.0, 4.0]]), tg.tensor([True, False])).tolist()
    [1.0, 3.0]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"masked_select(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if not isinstance(mask, Tensor) or mask.dtype != _C.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    x, m = _C.broadcast_tensors(input, mask)
    return x.reshape(-1)[m.reshape(-1)]


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the elements where ``mask`` is true replaced by ``source``'s, in order.

    >>> import tapegrad as tg
    >>> tg.masked_scatter(tg.zeros(3), tg.tensor([True, False, True]), tg.tensor([1., 2.]))
    tensor([1., 0., 2.])
    """
    return input.masked_scatter(mask, source)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements at ``index`` of the flattened ``input``, shaped like ``index``.

    >>> import tapegrad as tg
    >>> tg.take(tg.tensor([[1, 2], [3, 4]]), tg.tensor([0, 3]))
    tensor([1, 4])
    """
    return input.take(index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` along ``dim`` after broadcasting ``input`` and ``indices`` (no ``dim``: flattened).

    >>> import tapegrad as tg
    >>> x = tg.tensor([[3., 1.], [2., 4.]])
    >>> tg.take_along_dim(x, x.argsort(1), 1)
    tensor([[1., 3.],
            [2., 4.]])
    """
    return input.take_along_dim(indices, dim)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The coordinates of the non-zero elements, one row each (``as_tuple``: one tensor per dim).

    >>> import tapegrad as tg
    >>> tg.nonzero(tg.tensor([0, 3, 0, 5]))
    tensor([[1],
            [3]])
    """
    return input.nonzero(as_tuple=as_tuple)
