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
