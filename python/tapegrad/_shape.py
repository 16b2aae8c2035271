"""Shapes, views and copies: reshaping, transposing, splitting and joining, diagonals and
triangles, flips and rolls, and ``clone``/``detach``. The functions call the native ``Tensor`` methods
(``src/python/tensor_shape.rs``, ``tensor_compose.rs``); the joins (``cat``, ``stack``, ...) are native
functions re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsIndex, overload

import numpy as np

from . import _tapegrad as _C
from ._tapegrad import (
    Tensor,
    broadcast_tensors,
    cat,
    column_stack,
    dstack,
    hstack,
    meshgrid,
    stack,
    vstack,
)

__all__ = [
    "reshape",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "t",
    "transpose",
    "permute",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "narrow",
    "select",
    "split",
    "chunk",
    "tensor_split",
    "unbind",
    "tile",
    "repeat_interleave",
    "broadcast_to",
    "tril",
    "triu",
    "diagonal",
    "diag",
    "diag_embed",
    "flip",
    "roll",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "clone",
    "detach",
    "detach_",
    "cat",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "meshgrid",
    "broadcast_tensors",
]


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


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """``input.unflatten(dim, sizes)``.

    >>> import tapegrad as tg
    >>> tg.unflatten(tg.zeros(6), 0, (2, 3)).shape
    (2, 3)
    """
    return input.unflatten(dim, sizes)


def squeeze(input: Tensor, dim: int | None = None) -> Tensor:
    """A view without the dimensions of size 1 (or without ``dim`` only, when it has size 1).

    >>> import tapegrad as tg
    >>> tg.squeeze(tg.zeros(1, 3, 1)).shape
    (3,)
    """
    return input.squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view with a new dimension of size 1 at ``dim``.

    >>> import tapegrad as tg
    >>> tg.unsqueeze(tg.zeros(3), 0).shape
    (1, 3)
    """
    return input.unsqueeze(dim)


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


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of ``length`` elements of dimension ``dim`` from ``start`` on.

    >>> import tapegrad as tg
    >>> tg.narrow(tg.arange(6), 0, 2, 3)
    tensor([2, 3, 4])
    """
    return input.narrow(dim, start, length)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)``.

    >>> import tapegrad as tg
    >>> tg.select(tg.tensor([[1, 2], [3, 4]]), 0, 1)
    tensor([3, 4])
    """
    return input.select(dim, index)


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


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input.tile(dims)``.

    >>> import tapegrad as tg
    >>> tg.tile(tg.tensor([1, 2]), (2,))
    tensor([1, 2, 1, 2])
    """
    return input.tile(dims)


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


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """``input.diag(diagonal)``.

    >>> import tapegrad as tg
    >>> tg.diag(tg.arange(4).reshape(2, 2))
    tensor([0, 3])
    """
    return input.diag(diagonal)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonals (``offset`` from the main one, in the plane of dims ``dim1``/``dim2`` of
    the result) are filled by ``input``'s last dimension; zeros elsewhere.

    >>> import tapegrad as tg
    >>> tg.diag_embed(tg.tensor([1.0, 2.0])).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"diag_embed(): argument 'input' must be a Tensor, not {type(input).__name__}")
    for name, v in (("offset", offset), ("dim1", dim1), ("dim2", dim2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"diag_embed(): argument '{name}' must be an int, not {type(v).__name__}")
    offset, dim1, dim2 = int(offset), int(dim1), int(dim2)
    nd = input.dim() + 1  # a 0-dim input leaves only one result dim: the default dims are out of range
    d1, d2 = dim1 + nd if dim1 < 0 else dim1, dim2 + nd if dim2 < 0 else dim2
    if not (0 <= d1 < nd and 0 <= d2 < nd):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                         f"{dim1 if not 0 <= d1 < nd else dim2})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1]
    k = abs(offset)
    m = n + k
    # x[..., i] placed at row i, column i + offset (offset >= 0) or row i + |offset|, column i
    x = input
    if k:
        x = cat([x, _C.zeros(*input.shape[:-1], k, dtype=input.dtype)], dim=-1)
    idx = np.arange(m)
    cond = idx[None, :] == idx[:, None] + offset  # cond[r, c]: c == r + offset
    xs = x.unsqueeze(-1) if offset >= 0 else x.unsqueeze(-2)
    out = _C.where(_C.tensor(cond), xs, _C.zeros((), dtype=input.dtype))
    # the two new dims are the last two (rows, columns); move them to dim1 and dim2
    return out.movedim((nd - 2, nd - 1), (d1, d2))


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


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()`` as a function: cuts ``input`` from the graph in place and returns it.

    >>> import tapegrad as tg
    >>> tg.detach_(tg.tensor([1.0]))
    tensor([1.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"detach_(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.detach_()
