"""Function spellings (``tg.sort(t)`` is ``t.sort()``) of the sorting, selection and scan
operations; ``tapegrad/__init__.py`` re-exports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _tapegrad as _C

if TYPE_CHECKING:
    from ._tapegrad import Tensor, _Dims, _DTypeLike
    from ._types import (
        aminmax_result,
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
    "flip",
    "roll",
    "all",
    "any",
    "count_nonzero",
    "norm",
    "std_mean",
    "aminmax",
    "isclose",
    "allclose",
    "equal",
    "scatter",
    "scatter_reduce",
    "index_fill",
    "index_put",
    "masked_scatter",
    "take",
    "take_along_dim",
    "nonzero",
    "unique",
    "searchsorted",
    "bucketize",
]

searchsorted = _C.searchsorted
bucketize = _C.bucketize


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


def flip(input: Tensor, dims: int | tuple[int, ...] | list[int]) -> Tensor:
    """A copy of ``input`` with the order of its elements reversed along ``dims``.

    >>> import tapegrad as tg
    >>> tg.flip(tg.tensor([[1, 2], [3, 4]]), [0, 1])
    tensor([[4, 3],
            [2, 1]])
    """
    return input.flip(dims)


def roll(
    input: Tensor, shifts: int | tuple[int, ...] | list[int], dims: int | tuple[int, ...] | list[int] | None = None
) -> Tensor:
    """``input`` with its elements shifted by ``shifts`` along ``dims``, wrapping around; without
    ``dims``, over the flattened tensor.

    >>> import tapegrad as tg
    >>> tg.roll(tg.tensor([1, 2, 3, 4]), 1)
    tensor([4, 1, 2, 3])
    """
    return input.roll(shifts, dims)


def all(input: Tensor, dim: _Dims | None = None, keepdim: bool = False) -> Tensor:
    """Whether every element (over ``dim``, when given) is non-zero; NaN counts as non-zero.

    >>> import tapegrad as tg
    >>> tg.all(tg.tensor([[1, 0], [2, 3]]), 1)
    tensor([False,  True])
    """
    return input.all(dim, keepdim)


def any(input: Tensor, dim: _Dims | None = None, keepdim: bool = False) -> Tensor:
    """Whether some element (over ``dim``, when given) is non-zero.

    >>> import tapegrad as tg
    >>> tg.any(tg.tensor([[0, 0], [2, 0]]), 1)
    tensor([False,  True])
    """
    return input.any(dim, keepdim)


def count_nonzero(input: Tensor, dim: _Dims | None = None) -> Tensor:
    """The number of non-zero elements (over ``dim``, when given), as int64.

    >>> import tapegrad as tg
    >>> tg.count_nonzero(tg.tensor([[1., 0.], [2., 3.]]))
    tensor(3)
    """
    return input.count_nonzero(dim)


def norm(
    input: Tensor,
    p: float | str | None = "fro",
    dim: _Dims | None = None,
    keepdim: bool = False,
    dtype: _DTypeLike | None = None,
) -> Tensor:
    """The vector norm of order ``p`` (2 or ``'fro'``, 1, ``inf``, ``-inf``, any number) over
    ``dim`` (all elements when None). The 2-norm's gradient at zero is zero.

    >>> import tapegrad as tg
    >>> tg.norm(tg.tensor([3., 4.]))
    tensor(5.)
    """
    if p == "nuc":
        from . import linalg

        return linalg.matrix_norm(
            input, "nuc", tuple(dim) if isinstance(dim, (tuple, list)) else (-2, -1), keepdim, dtype=dtype
        )
    return input.norm(p, dim, keepdim, dtype)


def std_mean(
    input: Tensor,
    dim: _Dims | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> tuple[Tensor, Tensor]:
    """The standard deviation and the mean over ``dim``, as the pair ``(std, mean)``.

    >>> import tapegrad as tg
    >>> tg.std_mean(tg.tensor([1., 3.]))
    (tensor(1.4142), tensor(2.))
    """
    return _C.std_mean(input, dim, unbiased, keepdim, correction=correction)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> aminmax_result:
    """The smallest and the largest elements (over ``dim``, when given): ``(min, max)``.

    >>> import tapegrad as tg
    >>> tg.aminmax(tg.tensor([[1., 5.], [4., 2.]]), dim=0)
    aminmax(min=tensor([1., 2.]), max=tensor([4., 5.]))
    """
    return input.aminmax(dim=dim, keepdim=keepdim)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|``, elementwise; equal infinities are close.

    >>> import tapegrad as tg
    >>> tg.isclose(tg.tensor([1., 2.]), tg.tensor([1. + 1e-9, 2.1]))
    tensor([ True, False])
    """
    return input.isclose(other, rtol, atol, equal_nan)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element of ``input`` is close to ``other``'s (see ``isclose``).

    >>> import tapegrad as tg
    >>> tg.allclose(tg.tensor([1., 2.]), tg.tensor([1., 2. + 1e-7]))
    True
    """
    return input.allclose(other, rtol, atol, equal_nan)


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and equal elements.

    >>> import tapegrad as tg
    >>> tg.equal(tg.tensor([1., 2.]), tg.tensor([1., 2.]))
    True
    """
    return input.equal(other)


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


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The sorted distinct elements; optionally each element's index among them and the counts.

    >>> import tapegrad as tg
    >>> tg.unique(tg.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    """
    return input.unique(sorted, return_inverse, return_counts, dim)
