"""Reductions: ``tg.sum(t, dim)`` is ``t.sum(dim)``; the statistics (``var``, ``std`` and their
``*_mean`` pairs), the extrema with their indices, the logical reductions, norms, whole-tensor
comparisons (``allclose``, ``equal``), and the normalisations along a dimension (``softmax``,
``log_softmax``, ``logsumexp``). Each is a one-line call of the native ``Tensor`` method of the same name
(``src/python/tensor_reduce.rs``, ``tensor_nn.rs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from . import _tapegrad as _C
from . import linalg
from ._tapegrad import Tensor, var_mean

if TYPE_CHECKING:
    from ._tapegrad import _Dims, _DTypeLike
    from ._types import aminmax_result, max_result, min_result

__all__ = [
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "argmax",
    "argmin",
    "amax",
    "amin",
    "aminmax",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "all",
    "any",
    "count_nonzero",
    "norm",
    "allclose",
    "equal",
    "trace",
    "softmax",
    "log_softmax",
    "logsumexp",
]


def sum(input: Tensor, dim: _Dims | None = None, keepdim: bool = False, *, dtype: _DTypeLike | None = None) -> Tensor:
    """The sum of all elements, or along ``dim`` (an int or a sequence of ints); with ``dtype``, the
    input is converted to it first and the sum stays in it.

    >>> import tapegrad as tg
    >>> tg.sum(tg.tensor([[1, 2], [3, 4]]), dim=0)
    tensor([4, 6])
    >>> tg.sum(tg.tensor([200, 100], dtype=tg.uint8), dtype=tg.uint8)
    tensor(44, dtype=tapegrad.uint8)
    """
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input: Tensor, dim: _Dims | None = None, keepdim: bool = False, *, dtype: _DTypeLike | None = None) -> Tensor:
    """The mean of all elements, or along ``dim``; with ``dtype``, the input is converted to it first.

    >>> import tapegrad as tg
    >>> tg.mean(tg.tensor([1., 2., 6.]))
    tensor(3.)
    >>> tg.mean(tg.tensor([1, 2]), dtype=tg.float64)
    tensor(1.5000, dtype=tapegrad.float64)
    """
    return input.mean(dim, keepdim, dtype=dtype)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: _DTypeLike | None = None) -> Tensor:
    """Product of all elements, or along ``dim`` (integers give int64).

    >>> import tapegrad as tg
    >>> tg.prod(tg.tensor([[1., 2.], [3., 4.]]), 1)
    tensor([ 2., 12.])
    """
    return input.prod(dim, keepdim, dtype=dtype)


@overload
def max(input: Tensor, dim: None = None, keepdim: bool = False) -> Tensor: ...


@overload
def max(input: Tensor, dim: int, keepdim: bool = False) -> max_result: ...


def max(input, dim=None, keepdim=False):
    """The largest element; with ``dim``, the pair ``(values, indices)`` along that dimension.

    >>> import tapegrad as tg
    >>> x = tg.tensor([[1., 5.], [4., 2.]])
    >>> tg.max(x)
    tensor(5.)
    >>> tg.max(x, 0).indices
    tensor([1, 0])
    """
    return input.max(dim, keepdim)


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


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (of the flattened tensor, or along ``dim``).

    >>> import tapegrad as tg
    >>> tg.argmax(tg.tensor([1., 5., 3.]))
    tensor(1)
    """
    return input.argmax(dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (of the flattened tensor, or along ``dim``).

    >>> import tapegrad as tg
    >>> tg.argmin(tg.tensor([3., 1., 2.]))
    tensor(1)
    """
    return input.argmin(dim, keepdim)


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


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> aminmax_result:
    """The smallest and the largest elements (over ``dim``, when given): ``(min, max)``.

    >>> import tapegrad as tg
    >>> tg.aminmax(tg.tensor([[1., 5.], [4., 2.]]), dim=0)
    aminmax(min=tensor([1., 2.]), max=tensor([4., 5.]))
    """
    return input.aminmax(dim=dim, keepdim=keepdim)


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
        return linalg.matrix_norm(
            input, "nuc", tuple(dim) if isinstance(dim, (tuple, list)) else (-2, -1), keepdim, dtype=dtype
        )
    return input.norm(p, dim, keepdim, dtype)


def _tensor_norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """``Tensor.norm``, PyTorch's older spelling: ``"fro"`` (and a number ``p``) is the vector
    ``p``-norm over ``dim`` (every element when ``None``), ``"nuc"`` the nuclear norm of a matrix.

    >>> import tapegrad as tg
    >>> tg.tensor([[3., 0.], [0., 4.]]).norm()
    tensor(5.)
    """
    if p == "nuc":
        return linalg.matrix_norm(self, "nuc", tuple(dim) if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: unsupported p {p!r}; use a number, 'fro' or 'nuc'")
    return linalg.vector_norm(self, p, dim, keepdim, dtype=dtype)


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


def trace(input: Tensor) -> Tensor:
    """``input.trace()``.

    >>> import tapegrad as tg
    >>> tg.trace(tg.arange(4).reshape(2, 2))
    tensor(3)
    """
    return input.trace()


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
