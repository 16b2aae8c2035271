"""Sorting, selection and scans: ``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``mode``,
the cumulative ``cum*`` scans, ``unique``, ``searchsorted`` and ``bucketize``. The functions call the
native ``Tensor`` methods (``src/python/tensor_sort.rs``); ``unique(dim=)`` is computed with NumPy.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as np

from . import _tapegrad as _C
from ._tapegrad import Tensor, bucketize, searchsorted

if TYPE_CHECKING:
    from ._tapegrad import _DTypeLike
    from ._types import (
        cummax_result,
        cummin_result,
        kthvalue_result,
        median_result,
        mode_result,
        sort_result,
        topk_result,
    )

__all__ = [
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "median",
    "mode",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "unique",
    "searchsorted",
    "bucketize",
]


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> sort_result:
    """Sorted values along ``dim`` and the indices they came from; NaN sorts as the largest value.

    >>> import tapegrad as tg
    >>> tg.sort(tg.tensor([3., 1., 2.]), descending=True)
    sort(values=tensor([3., 2., 1.]), indices=tensor([0, 2, 1]))
    """
    return input.sort(dim, descending, stable=stable)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.argsort(tg.tensor([3., 1., 2.]))
    tensor([1, 2, 0])
    """
    return input.argsort(dim, descending, stable=stable)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> topk_result:
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their indices.

    >>> import tapegrad as tg
    >>> tg.topk(tg.tensor([3., 1., 2.]), 2).indices
    tensor([0, 2])
    """
    return input.topk(k, dim, largest, sorted)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> kthvalue_result:
    """The ``k``-th smallest value along ``dim`` (``k`` counts from 1) and its index.

    >>> import tapegrad as tg
    >>> tg.kthvalue(tg.tensor([3., 1., 2.]), 1).values
    tensor(1.)
    """
    return input.kthvalue(k, dim, keepdim)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | median_result:
    """The lower median of all elements, or ``(values, indices)`` along ``dim``; NaN propagates.

    >>> import tapegrad as tg
    >>> tg.median(tg.tensor([4., 1., 3., 2.]))
    tensor(2.)
    """
    return input.median(dim, keepdim)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> mode_result:
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and the
    index of its last occurrence.

    >>> import tapegrad as tg
    >>> tg.mode(tg.tensor([2., 1., 2., 1.]))
    mode(values=tensor(1.), indices=tensor(3))
    """
    return input.mode(dim, keepdim)


def cumsum(input: Tensor, dim: int, *, dtype: _DTypeLike | None = None) -> Tensor:
    """Cumulative sum along ``dim``; integer and bool inputs give int64.

    >>> import tapegrad as tg
    >>> tg.cumsum(tg.tensor([1., 2., 3.]), 0)
    tensor([1., 3., 6.])
    """
    return input.cumsum(dim, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: _DTypeLike | None = None) -> Tensor:
    """Cumulative product along ``dim``; its gradient is exact where the input has zeros.

    >>> import tapegrad as tg
    >>> tg.cumprod(tg.tensor([1., 2., 3.]), 0)
    tensor([1., 2., 6.])
    """
    return input.cumprod(dim, dtype=dtype)


def cummax(input: Tensor, dim: int) -> cummax_result:
    """Running maximum along ``dim`` and the index where each was reached.

    >>> import tapegrad as tg
    >>> tg.cummax(tg.tensor([1., 3., 2.]), 0).indices
    tensor([0, 1, 1])
    """
    return input.cummax(dim)


def cummin(input: Tensor, dim: int) -> cummin_result:
    """Running minimum along ``dim`` and the index where each was reached.

    >>> import tapegrad as tg
    >>> tg.cummin(tg.tensor([3., 1., 2.]), 0).values
    tensor([3., 1., 1.])
    """
    return input.cummin(dim)


_native_unique = Tensor.unique


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
