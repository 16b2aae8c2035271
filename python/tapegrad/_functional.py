"""The functional API (``tg.exp(t)`` is ``t.exp()``) and the ``*_like`` factories, defined
statically so that type checkers see them; ``tapegrad/__init__.py`` re-exports them.

Written out one by one (they were generated in a loop before): each is a one-line call of the
``Tensor`` method of the same name, with that method's parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, SupportsIndex, overload

from . import _tapegrad as _C

if TYPE_CHECKING:
    from ._tapegrad import Tensor, _DeviceLike, _Dims, _DTypeLike, _Number, _TensorLike
    from ._types import max_result

__all__ = [
    "zeros_like", "ones_like", "empty_like", "randn_like", "rand_like", "full_like",
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh",
    "sigmoid", "relu", "clamp", "mm", "matmul", "bmm", "t", "transpose", "reshape", "flatten",
    "unsqueeze", "squeeze", "sum", "mean", "max", "argmax", "clone", "detach", "permute", "narrow",
    "eq", "ne", "lt", "le", "gt", "ge",
    "split", "chunk", "tensor_split", "unbind", "select", "tile", "repeat_interleave", "movedim", "moveaxis",
    "swapaxes", "swapdims", "unflatten", "broadcast_to", "tril", "triu", "diagonal", "trace", "diag",
    "atleast_1d", "atleast_2d", "atleast_3d",
]


# factories shaped like another tensor

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


def randn_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``randn`` (standard normal values) with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> tg.randn_like(tg.zeros(4, dtype=tg.float64)).dtype
    tapegrad.float64
    """
    return _C.randn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


def rand_like(
    t: Tensor, dtype: _DTypeLike | None = None, requires_grad: bool = False, device: _DeviceLike | None = None
) -> Tensor:
    """``rand`` (uniform values in [0, 1)) with the shape and dtype of ``t``.

    >>> import tapegrad as tg
    >>> r = tg.rand_like(tg.zeros(2, 3, dtype=tg.float64))
    >>> r.shape, r.dtype
    ((2, 3), tapegrad.float64)
    """
    return _C.rand(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=device)


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


# arithmetic

def add(input: Tensor, other: _TensorLike) -> Tensor:
    """``input + other``, elementwise with broadcasting.

    >>> import tapegrad as tg
    >>> tg.add(tg.tensor([1., 2.]), 10)
    tensor([11., 12.])
    """
    return input.add(other)


def sub(input: Tensor, other: _TensorLike) -> Tensor:
    """``input - other``.

    >>> import tapegrad as tg
    >>> tg.sub(tg.tensor([5, 7]), tg.tensor([1, 2]))
    tensor([4, 5])
    """
    return input.sub(other)


def mul(input: Tensor, other: _TensorLike) -> Tensor:
    """``input * other``.

    >>> import tapegrad as tg
    >>> tg.mul(tg.tensor([1., 2.]), tg.tensor([3., 4.]))
    tensor([3., 8.])
    """
    return input.mul(other)


def div(input: Tensor, other: _TensorLike) -> Tensor:
    """``input / other`` (true division: integers give floats).

    >>> import tapegrad as tg
    >>> tg.div(tg.tensor([1, 3]), 2)
    tensor([0.5000, 1.5000])
    """
    return input.div(other)


def pow(input: Tensor, exponent: _TensorLike) -> Tensor:
    """``input ** exponent``.

    >>> import tapegrad as tg
    >>> tg.pow(tg.tensor([2., 3.]), 2)
    tensor([4., 9.])
    """
    return input.pow(exponent)


def neg(input: Tensor) -> Tensor:
    """``-input``.

    >>> import tapegrad as tg
    >>> tg.neg(tg.tensor([1., -2.]))
    tensor([-1.,  2.])
    """
    return input.neg()


def abs(input: Tensor) -> Tensor:
    """The absolute value, elementwise.

    >>> import tapegrad as tg
    >>> tg.abs(tg.tensor([-1.5, 2.0]))
    tensor([1.5000, 2.0000])
    """
    return input.abs()


# elementwise functions

def exp(input: Tensor) -> Tensor:
    """``e ** input``, elementwise.

    >>> import tapegrad as tg
    >>> tg.exp(tg.tensor([0.]))
    tensor([1.])
    """
    return input.exp()


def log(input: Tensor) -> Tensor:
    """The natural logarithm, elementwise.

    >>> import tapegrad as tg
    >>> tg.log(tg.tensor([1.]))
    tensor([0.])
    """
    return input.log()


def sqrt(input: Tensor) -> Tensor:
    """The square root, elementwise.

    >>> import tapegrad as tg
    >>> tg.sqrt(tg.tensor([4., 9.]))
    tensor([2., 3.])
    """
    return input.sqrt()


def sin(input: Tensor) -> Tensor:
    """The sine, elementwise.

    >>> import tapegrad as tg
    >>> tg.sin(tg.tensor([0.]))
    tensor([0.])
    """
    return input.sin()


def cos(input: Tensor) -> Tensor:
    """The cosine, elementwise.

    >>> import tapegrad as tg
    >>> tg.cos(tg.tensor([0.]))
    tensor([1.])
    """
    return input.cos()


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent, elementwise.

    >>> import tapegrad as tg
    >>> tg.tanh(tg.tensor([0.]))
    tensor([0.])
    """
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``, elementwise.

    >>> import tapegrad as tg
    >>> tg.sigmoid(tg.tensor([0.]))
    tensor([0.5000])
    """
    return input.sigmoid()


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)``, elementwise.

    >>> import tapegrad as tg
    >>> tg.relu(tg.tensor([-1., 2.]))
    tensor([0., 2.])
    """
    return input.relu()


def clamp(input: Tensor, min: _Number | Tensor | None = None, max: _Number | Tensor | None = None) -> Tensor:
    """Each element limited to ``[min, max]`` (either bound may be None, a number or a tensor).

    >>> import tapegrad as tg
    >>> tg.clamp(tg.tensor([-2., 0.5, 3.]), min=0, max=1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    return input.clamp(min, max)


# linear algebra

def mm(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product of two 2-d tensors.

    >>> import tapegrad as tg
    >>> tg.mm(tg.tensor([[1., 2.]]), tg.tensor([[3.], [4.]]))
    tensor([[11.]])
    """
    return input.mm(other)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product with NumPy's rules (vectors, batches with broadcasting); ``input @ other``.

    >>> import tapegrad as tg
    >>> tg.matmul(tg.tensor([1., 2.]), tg.tensor([3., 4.]))
    tensor(11.)
    """
    return input.matmul(other)


def bmm(input: Tensor, other: Tensor) -> Tensor:
    """Batched matrix product of two 3-d tensors.

    >>> import tapegrad as tg
    >>> tg.bmm(tg.ones(5, 2, 3), tg.ones(5, 3, 4)).shape
    (5, 2, 4)
    """
    return input.bmm(other)


# shapes

def t(input: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dimensions.

    >>> import tapegrad as tg
    >>> tg.t(tg.tensor([[1, 2, 3]]))
    tensor([[1],
            [2],
            [3]])
    """
    return input.t()


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with dimensions ``dim0`` and ``dim1`` swapped.

    >>> import tapegrad as tg
    >>> tg.transpose(tg.zeros(2, 3, 4), 0, 2).shape
    (4, 3, 2)
    """
    return input.transpose(dim0, dim1)


@overload
def reshape(input: Tensor, *shape: SupportsIndex) -> Tensor: ...
@overload
def reshape(input: Tensor, shape: Sequence[SupportsIndex], /) -> Tensor: ...
def reshape(input, *shape):
    """The same values in a new shape (one entry may be -1); the shape as ints or as one sequence.

    >>> import tapegrad as tg
    >>> tg.reshape(tg.arange(6), (2, 3))
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    return input.reshape(*shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dimensions ``start_dim`` to ``end_dim`` merged into one.

    >>> import tapegrad as tg
    >>> tg.flatten(tg.zeros(2, 3, 4), 1).shape
    (2, 12)
    """
    return input.flatten(start_dim, end_dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view with a new dimension of size 1 at ``dim``.

    >>> import tapegrad as tg
    >>> tg.unsqueeze(tg.zeros(3), 0).shape
    (1, 3)
    """
    return input.unsqueeze(dim)


def squeeze(input: Tensor, dim: int | None = None) -> Tensor:
    """A view without the dimensions of size 1 (or without ``dim`` only, when it has size 1).

    >>> import tapegrad as tg
    >>> tg.squeeze(tg.zeros(1, 3, 1)).shape
    (3,)
    """
    return input.squeeze(dim)


@overload
def permute(input: Tensor, *dims: SupportsIndex) -> Tensor: ...
@overload
def permute(input: Tensor, dims: Sequence[SupportsIndex], /) -> Tensor: ...
def permute(input, *dims):
    """A view with the dimensions reordered; the order as ints or as one sequence.

    >>> import tapegrad as tg
    >>> tg.permute(tg.zeros(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return input.permute(*dims)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of ``length`` elements of dimension ``dim`` from ``start`` on.

    >>> import tapegrad as tg
    >>> tg.narrow(tg.arange(6), 0, 2, 3)
    tensor([2, 3, 4])
    """
    return input.narrow(dim, start, length)


def clone(input: Tensor) -> Tensor:
    """A copy with its own memory; gradients flow back to ``input``.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> tg.clone(x)
    tensor([1., 2.], grad_fn=<CloneBackward>)
    """
    return input.clone()


def detach(input: Tensor) -> Tensor:
    """The same values, sharing memory, cut from the graph (no gradient flows through it).

    >>> import tapegrad as tg
    >>> tg.detach(tg.tensor([1., 2.], requires_grad=True)).requires_grad
    False
    """
    return input.detach()


# reductions

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


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (of the flattened tensor, or along ``dim``).

    >>> import tapegrad as tg
    >>> tg.argmax(tg.tensor([1., 5., 3.]))
    tensor(1)
    """
    return input.argmax(dim, keepdim)


# comparisons

def eq(input: Tensor, other: _TensorLike) -> Tensor:
    """``input == other``, elementwise, as a bool tensor.

    >>> import tapegrad as tg
    >>> tg.eq(tg.tensor([1, 2]), 2)
    tensor([False,  True])
    """
    return input.eq(other)


def ne(input: Tensor, other: _TensorLike) -> Tensor:
    """``input != other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.ne(tg.tensor([1, 2]), 2)
    tensor([ True, False])
    """
    return input.ne(other)


def lt(input: Tensor, other: _TensorLike) -> Tensor:
    """``input < other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.lt(tg.tensor([1, 2]), 2)
    tensor([ True, False])
    """
    return input.lt(other)


def le(input: Tensor, other: _TensorLike) -> Tensor:
    """``input <= other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.le(tg.tensor([1, 2]), 2)
    tensor([True, True])
    """
    return input.le(other)


def gt(input: Tensor, other: _TensorLike) -> Tensor:
    """``input > other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.gt(tg.tensor([1, 3]), 2)
    tensor([False,  True])
    """
    return input.gt(other)


def ge(input: Tensor, other: _TensorLike) -> Tensor:
    """``input >= other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.ge(tg.tensor([1, 2]), 2)
    tensor([False,  True])
    """
    return input.ge(other)


# shape operations composed from views (ops/compose.rs)

def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``tensor.split(split_size_or_sections, dim)``.

    >>> import tapegrad as tg
    >>> [p.tolist() for p in tg.split(tg.arange(5), [1, 4])]
    [[0], [1, 2, 3, 4]]
    """
    return tensor.split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.chunk(chunks, dim)``.

    >>> import tapegrad as tg
    >>> len(tg.chunk(tg.arange(6), 4))
    3
    """
    return input.chunk(chunks, dim)


def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``input.tensor_split(indices_or_sections, dim)``.

    >>> import tapegrad as tg
    >>> [p.tolist() for p in tg.tensor_split(tg.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    return input.tensor_split(indices_or_sections, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.unbind(dim)``.

    >>> import tapegrad as tg
    >>> [t.tolist() for t in tg.unbind(tg.tensor([[1, 2], [3, 4]]))]
    [[1, 2], [3, 4]]
    """
    return input.unbind(dim)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)``.

    >>> import tapegrad as tg
    >>> tg.select(tg.tensor([[1, 2], [3, 4]]), 0, 1)
    tensor([3, 4])
    """
    return input.select(dim, index)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input.tile(dims)``.

    >>> import tapegrad as tg
    >>> tg.tile(tg.tensor([1, 2]), (2,))
    tensor([1, 2, 1, 2])
    """
    return input.tile(dims)


def repeat_interleave(input: Tensor, repeats: int, dim: int | None = None) -> Tensor:
    """``input.repeat_interleave(repeats, dim)``.

    >>> import tapegrad as tg
    >>> tg.repeat_interleave(tg.tensor([1, 2]), 3)
    tensor([1, 1, 1, 2, 2, 2])
    """
    return input.repeat_interleave(repeats, dim)


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``input.movedim(source, destination)``.

    >>> import tapegrad as tg
    >>> tg.movedim(tg.zeros(2, 3, 4), (0, 1), (2, 0)).shape
    (3, 4, 2)
    """
    return input.movedim(source, destination)


def moveaxis(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``movedim``, NumPy's spelling.

    >>> import tapegrad as tg
    >>> tg.moveaxis(tg.zeros(2, 3), 1, 0).shape
    (3, 2)
    """
    return input.movedim(source, destination)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``input.transpose(axis0, axis1)``, NumPy's spelling.

    >>> import tapegrad as tg
    >>> tg.swapaxes(tg.zeros(2, 3), 0, 1).shape
    (3, 2)
    """
    return input.swapaxes(axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input.transpose(dim0, dim1)``.

    >>> import tapegrad as tg
    >>> tg.swapdims(tg.zeros(2, 3), 0, 1).shape
    (3, 2)
    """
    return input.swapdims(dim0, dim1)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """``input.unflatten(dim, sizes)``.

    >>> import tapegrad as tg
    >>> tg.unflatten(tg.zeros(6), 0, (2, 3)).shape
    (2, 3)
    """
    return input.unflatten(dim, sizes)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """``input.broadcast_to(size)``.

    >>> import tapegrad as tg
    >>> tg.broadcast_to(tg.tensor([1, 2]), (3, 2)).shape
    (3, 2)
    """
    return input.broadcast_to(size)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """``input.tril(diagonal)``.

    >>> import tapegrad as tg
    >>> tg.tril(tg.ones(2, 2, dtype=tg.int64))
    tensor([[1, 0],
            [1, 1]])
    """
    return input.tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """``input.triu(diagonal)``.

    >>> import tapegrad as tg
    >>> tg.triu(tg.ones(2, 2, dtype=tg.int64))
    tensor([[1, 1],
            [0, 1]])
    """
    return input.triu(diagonal)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input.diagonal(offset, dim1, dim2)``.

    >>> import tapegrad as tg
    >>> tg.diagonal(tg.arange(4).reshape(2, 2))
    tensor([0, 3])
    """
    return input.diagonal(offset, dim1, dim2)


def trace(input: Tensor) -> Tensor:
    """``input.trace()``.

    >>> import tapegrad as tg
    >>> tg.trace(tg.arange(4).reshape(2, 2))
    tensor(3)
    """
    return input.trace()


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """``input.diag(diagonal)``.

    >>> import tapegrad as tg
    >>> tg.diag(tg.arange(4).reshape(2, 2))
    tensor([0, 3])
    """
    return input.diag(diagonal)


def _atleast(n: int, tensors: tuple[Tensor | Sequence[Tensor], ...]) -> Tensor | tuple[Tensor, ...]:
    # One sequence of tensors gives a tuple; one tensor gives a tensor; several give a tuple.
    first = tensors[0] if len(tensors) == 1 else None
    if first is not None and not isinstance(first, _C.Tensor):
        return tuple(_C._atleast(t, n) for t in first)
    out = tuple(_C._atleast(t, n) for t in tensors if isinstance(t, _C.Tensor))
    if len(out) != len(tensors):
        raise TypeError("atleast_nd: expected tensors or one sequence of tensors")
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dimension (a 0-d one becomes ``(1,)``).

    >>> import tapegrad as tg
    >>> tg.atleast_1d(tg.tensor(2.0)).shape
    (1,)
    """
    return _atleast(1, tensors)


def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dimensions (a vector becomes a row ``(1, n)``).

    >>> import tapegrad as tg
    >>> tg.atleast_2d(tg.zeros(3)).shape
    (1, 3)
    """
    return _atleast(2, tensors)


def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least three dimensions (a matrix ``(r, c)`` becomes ``(r, c, 1)``).

    >>> import tapegrad as tg
    >>> tg.atleast_3d(tg.zeros(2, 3)).shape
    (2, 3, 1)
    """
    return _atleast(3, tensors)
