"""Function spellings (``tg.softmax(t, 1)`` is ``t.softmax(1)``) of the operations added for
``tapegrad.nn``; ``tapegrad/__init__.py`` re-exports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from . import _tapegrad as _C

if TYPE_CHECKING:
    from ._tapegrad import Tensor, _Dims, _DTypeLike
    from ._types import min_result

__all__ = [
    "softmax", "log_softmax", "logsumexp", "amax", "amin", "min", "argmin", "var", "std", "var_mean",
    "gather", "scatter_add", "index_select", "index_add", "prod",
]

var_mean = _C.var_mean


def softmax(input: Tensor, dim: int, dtype: _DTypeLike | None = None) -> Tensor:
    """``exp(x) / exp(x).sum(dim, keepdim=True)``, computed stably.

    >>> import tapegrad as tg
    >>> tg.softmax(tg.tensor([0., 0.]), 0)
    tensor([0.5000, 0.5000])
    """
    return input.softmax(dim, dtype)


def log_softmax(input: Tensor, dim: int, dtype: _DTypeLike | None = None) -> Tensor:
    """``x - x.logsumexp(dim, keepdim=True)``: finite even for very large logits.

    >>> import tapegrad as tg
    >>> tg.log_softmax(tg.tensor([1e4, 0.]), 0)
    tensor([     0., -10000.])
    """
    return input.log_softmax(dim, dtype)


def logsumexp(input: Tensor, dim: _Dims, keepdim: bool = False) -> Tensor:
    """``log(exp(x).sum(dim))``, computed stably.

    >>> import tapegrad as tg
    >>> tg.logsumexp(tg.tensor([[0., 0.]]), 1)
    tensor([0.6931])
    """
    return input.logsumexp(dim, keepdim)


def amax(input: Tensor, dim: _Dims | None = None, keepdim: bool = False) -> Tensor:
    """The largest values over ``dim`` (all dims when None); ties share the gradient.

    >>> import tapegrad as tg
    >>> tg.amax(tg.tensor([[1., 5.], [4., 2.]]), 0)
    tensor([4., 5.])
    """
    return input.amax(dim, keepdim)


def amin(input: Tensor, dim: _Dims | None = None, keepdim: bool = False) -> Tensor:
    """The smallest values over ``dim`` (all dims when None); ties share the gradient.

    >>> import tapegrad as tg
    >>> tg.amin(tg.tensor([[1., 5.], [4., 2.]]), 1)
    tensor([1., 2.])
    """
    return input.amin(dim, keepdim)


@overload
def min(input: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...
@overload
def min(input: Tensor, dim: int, keepdim: bool = False) -> min_result: ...
def min(input, dim=None, keepdim=False):
    """The smallest element; with ``dim``, the pair ``(values, indices)`` along that dimension.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1., 5.], [4., 2.]])
    >>> tg.min(x)
    tensor(1.)
    >>> tg.min(x, 1).indices
    tensor([0, 1])
    """
    return input.min(dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (of the flattened tensor, or along ``dim``).

    >>> import tapegrad as tg
    >>> tg.argmin(tg.tensor([3., 1., 2.]))
    tensor(1)
    """
    return input.argmin(dim, keepdim)


def var(
    input: Tensor,
    dim: _Dims | bool | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """Variance over ``dim``, dividing by ``N - correction`` (``correction`` 1 by default).

    >>> import tapegrad as tg
    >>> tg.var(tg.tensor([1., 2., 3., 4.]))
    tensor(1.6667)
    >>> tg.var(tg.tensor([1., 2., 3., 4.]), correction=0)
    tensor(1.2500)
    """
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(
    input: Tensor,
    dim: _Dims | bool | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """Standard deviation over ``dim`` (the square root of ``var``).

    >>> import tapegrad as tg
    >>> tg.std(tg.tensor([1., 3.]))
    tensor(1.4142)
    """
    return input.std(dim, unbiased, keepdim, correction=correction)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (and likewise for other dims).

    >>> import tapegrad as tg
    >>> tg.gather(tg.tensor([[1., 2.], [3., 4.]]), 1, tg.tensor([[1], [0]]))
    tensor([[2.],
            [3.]])
    """
    return input.gather(dim, index)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src[pos]`` added at ``index[pos]`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.scatter_add(tg.zeros(3), 0, tg.tensor([0, 2, 0]), tg.ones(3))
    tensor([2., 0., 1.])
    """
    return input.scatter_add(dim, index, src)


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


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: _DTypeLike | None = None) -> Tensor:
    """Product of all elements, or along ``dim`` (integers give int64).

    >>> import tapegrad as tg
    >>> tg.prod(tg.tensor([[1., 2.], [3., 4.]]), 1)
    tensor([ 2., 12.])
    """
    return input.prod(dim, keepdim, dtype=dtype)
