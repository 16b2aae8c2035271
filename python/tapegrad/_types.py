"""Small result types."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._tapegrad import Tensor


class max_result(NamedTuple):
    """What ``t.max(dim)`` returns: the largest values along ``dim`` and their indices.

    >>> import tapegrad as tg
    >>> values, indices = tg.tensor([[1., 5.], [4., 2.]]).max(dim=1)
    >>> values
    tensor([5., 4.])
    >>> indices
    tensor([1, 0])
    """

    values: Tensor
    indices: Tensor


# Printed as PyTorch prints its result (``max(values=..., indices=...)``).
max_result.__name__ = max_result.__qualname__ = "max"


class min_result(NamedTuple):
    """What ``t.min(dim)`` returns: the smallest values along ``dim`` and their indices.

    >>> import tapegrad as tg
    >>> values, indices = tg.tensor([[1., 5.], [4., 2.]]).min(dim=1)
    >>> values
    tensor([1., 2.])
    >>> indices
    tensor([0, 1])
    """

    values: Tensor
    indices: Tensor


min_result.__name__ = min_result.__qualname__ = "min"


class sort_result(NamedTuple):
    """What ``t.sort()`` returns: the sorted values and the indices they came from.

    >>> import tapegrad as tg
    >>> tg.tensor([3., 1., 2.]).sort().indices
    tensor([1, 2, 0])
    """

    values: Tensor
    indices: Tensor


sort_result.__name__ = sort_result.__qualname__ = "sort"


class topk_result(NamedTuple):
    """What ``t.topk(k)`` returns: the ``k`` largest values and their indices.

    >>> import tapegrad as tg
    >>> tg.tensor([3., 1., 2.]).topk(2).values
    tensor([3., 2.])
    """

    values: Tensor
    indices: Tensor


topk_result.__name__ = topk_result.__qualname__ = "topk"


class kthvalue_result(NamedTuple):
    """What ``t.kthvalue(k)`` returns: the ``k``-th smallest value and its index.

    >>> import tapegrad as tg
    >>> tg.tensor([3., 1., 2.]).kthvalue(2).indices
    tensor(2)
    """

    values: Tensor
    indices: Tensor


kthvalue_result.__name__ = kthvalue_result.__qualname__ = "kthvalue"


class median_result(NamedTuple):
    """What ``t.median(dim)`` returns: the lower medians along ``dim`` and their indices.

    >>> import tapegrad as tg
    >>> tg.tensor([4., 1., 3., 2.]).median(0).values
    tensor(2.)
    """

    values: Tensor
    indices: Tensor


median_result.__name__ = median_result.__qualname__ = "median"


class mode_result(NamedTuple):
    """What ``t.mode(dim)`` returns: the most frequent values along ``dim`` and their indices.

    >>> import tapegrad as tg
    >>> tg.tensor([3., 1., 1., 2.]).mode().values
    tensor(1.)
    """

    values: Tensor
    indices: Tensor


mode_result.__name__ = mode_result.__qualname__ = "mode"


class cummax_result(NamedTuple):
    """What ``t.cummax(dim)`` returns: the running maxima and where each was reached.

    >>> import tapegrad as tg
    >>> tg.tensor([1., 3., 2.]).cummax(0).values
    tensor([1., 3., 3.])
    """

    values: Tensor
    indices: Tensor


cummax_result.__name__ = cummax_result.__qualname__ = "cummax"


class cummin_result(NamedTuple):
    """What ``t.cummin(dim)`` returns: the running minima and where each was reached.

    >>> import tapegrad as tg
    >>> tg.tensor([3., 1., 2.]).cummin(0).indices
    tensor([0, 1, 1])
    """

    values: Tensor
    indices: Tensor


cummin_result.__name__ = cummin_result.__qualname__ = "cummin"


class aminmax_result(NamedTuple):
    """What ``tg.aminmax(t)`` returns: the smallest and the largest values.

    >>> import tapegrad as tg
    >>> tg.aminmax(tg.tensor([3., 1., 2.])).max
    tensor(3.)
    """

    min: Tensor
    max: Tensor


aminmax_result.__name__ = aminmax_result.__qualname__ = "aminmax"
