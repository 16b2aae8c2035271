"""Matrix and vector products: ``mm``, ``matmul`` and ``bmm`` (native), and the products composed of
them (``dot``, ``outer``, ``tensordot``, ``einsum``, ...). A composed product gets its gradient (and
second derivative) from the ``matmul``/``mm``/``bmm``, broadcasting and reshapes it is made of.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from . import _tapegrad as _C
from ._tapegrad import Tensor
from .linalg import vector_norm

__all__ = [
    "mm",
    "matmul",
    "bmm",
    "dot",
    "vdot",
    "inner",
    "outer",
    "mv",
    "addmm",
    "addmv",
    "baddbmm",
    "tensordot",
    "kron",
    "cross",
    "cdist",
    "einsum",
]


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


def _need(x: Any, what: str, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(x).__name__}")
    return x


def _same_dtype(a: Tensor, b: Tensor, op: str) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected both inputs to have the same dtype, but got {a.dtype} and {b.dtype}")


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of equal length (no broadcasting).

    >>> import tapegrad as tg
    >>> tg.dot(tg.tensor([1., 2.]), tg.tensor([3., 4.]))
    tensor(11.)
    """
    _need(input, "input", "dot")
    _need(tensor, "tensor", "dot")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{tensor.shape[0]}] to have "
            "the same number of elements, but got different")
    _same_dtype(input, tensor, "dot")
    if input.dtype == _C.bool:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return input.matmul(tensor)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``dot`` with the first argument conjugated (for real tensors, the same as ``dot``).

    >>> import tapegrad as tg
    >>> tg.vdot(tg.tensor([1., 2.]), tg.tensor([3., 4.]))
    tensor(11.)
    """
    return dot(input, other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum over the last dimensions of both inputs of their product: ``a[..., k] * b[..., k]``,
    with the other dimensions of ``a`` first, then those of ``b``. A 0-D input multiplies.

    >>> import tapegrad as tg
    >>> tg.inner(tg.tensor([[1., 2.], [3., 4.]]), tg.tensor([1., 1.]))
    tensor([3., 7.])
    """
    _need(input, "input", "inner")
    _need(other, "other", "inner")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([input.ndim - 1], [other.ndim - 1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product ``a[i] * b[j]`` of two 1-D tensors.

    >>> import tapegrad as tg
    >>> tg.outer(tg.tensor([1., 2.]), tg.tensor([1., 10.]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    _need(input, "input", "outer")
    _need(vec2, "vec2", "outer")
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.ndim}-D and {vec2.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of an n×m matrix and a vector of length m.

    >>> import tapegrad as tg
    >>> tg.mv(tg.tensor([[1., 2.], [3., 4.]]), tg.tensor([1., 1.]))
    tensor([3., 7.])
    """
    _need(input, "input", "mv")
    _need(vec, "vec", "mv")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype(input, vec, "mv")
    return input.matmul(vec)


def _scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    out = product if alpha == 1 else product * alpha
    shape = _bshape(input, out)
    if shape != list(out.shape):
        raise RuntimeError(f"the input of shape {list(input.shape)} does not broadcast to the product's shape {list(out.shape)}")
    if beta == 0:
        # PyTorch ignores `input` (NaN and inf included) when beta is 0.
        return out
    return out + (input if beta == 1 else input * beta)


def _bshape(a: Tensor, b: Tensor) -> list[int]:
    sa, sb = list(a.shape), list(b.shape)
    n = builtins.max(len(sa), len(sb))
    sa, sb = [1] * (n - len(sa)) + sa, [1] * (n - len(sb)) + sb
    return [x if y == 1 else y for x, y in zip(sa, sb)]


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape, and
    with ``beta=0`` it is ignored (its NaNs too).

    >>> import tapegrad as tg
    >>> tg.addmm(tg.ones(2, 2), tg.eye(2), tg.eye(2), alpha=2)
    tensor([[3., 1.],
            [1., 3.]])
    """
    for x, w in ((input, "input"), (mat1, "mat1"), (mat2, "mat2")):
        _need(x, w, "addmm")
    return _scaled_sum(input, mat1.mm(mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    >>> import tapegrad as tg
    >>> tg.addmv(tg.tensor([1., 1.]), tg.eye(2), tg.tensor([2., 3.]))
    tensor([3., 4.])
    """
    for x, w in ((input, "input"), (mat, "mat"), (vec, "vec")):
        _need(x, w, "addmv")
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``.

    >>> import tapegrad as tg
    >>> tg.baddbmm(tg.zeros(1, 2, 2), tg.ones(1, 2, 3), tg.ones(1, 3, 2))
    tensor([[[3., 3.],
             [3., 3.]]])
    """
    for x, w in ((input, "input"), (batch1, "batch1"), (batch2, "batch2")):
        _need(x, w, "baddbmm")
    return _scaled_sum(input, batch1.bmm(batch2), beta, alpha)


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Any] = 2, out: None = None) -> Tensor:
    """Contracts the last ``dims`` dimensions of ``a`` with the first ``dims`` of ``b`` (or the
    listed dimensions, ``dims=([a dims], [b dims])``), as one matrix product.

    >>> import tapegrad as tg
    >>> tg.tensordot(tg.ones(2, 3), tg.ones(3, 4), dims=1).shape
    (2, 4)
    """
    _need(a, "a", "tensordot")
    _need(b, "b", "tensordot")
    if out is not None:
        raise TypeError("tensordot: out= is not supported")
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(a.ndim - dims, a.ndim))
        db = list(range(dims))
    else:
        if len(dims) != 2:  # type: ignore[arg-type]
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        da_raw, db_raw = dims  # type: ignore[misc]
        da = [da_raw] if isinstance(da_raw, int) else list(da_raw)
        db = [db_raw] if isinstance(db_raw, int) else list(db_raw)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        da = [d % a.ndim if a.ndim else d for d in da]
        db = [d % b.ndim if b.ndim else d for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} and "
                f"second has size {b.shape[y]} in dim {y}")
    _same_dtype(a, b, "tensordot")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    m = 1
    for d in free_a:
        m *= a.shape[d]
    n = 1
    for d in free_b:
        n *= b.shape[d]
    am = a.permute(*free_a, *da).reshape(m, k)
    bm = b.permute(*db, *free_b).reshape(k, n)
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return am.mm(bm).reshape(*shape) if shape else am.mm(bm).reshape(())


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block ``(i, j)`` is ``input[i, j] * other`` (for any number of
    dimensions; the shorter shape is padded with leading ones).

    >>> import tapegrad as tg
    >>> tg.kron(tg.tensor([1., 2.]), tg.tensor([1., 10.]))
    tensor([ 1., 10.,  2., 20.])
    """
    _need(input, "input", "kron")
    _need(other, "other", "kron")
    n = builtins.max(input.ndim, other.ndim)
    a = input.reshape(*([1] * (n - input.ndim) + list(input.shape)))
    b = other.reshape(*([1] * (n - other.ndim) + list(other.shape)))
    ia = []
    ib = []
    for d in range(n):
        ia += [a.shape[d], 1]
        ib += [1, b.shape[d]]
    prod = a.reshape(*ia) * b.reshape(*ib)
    return prod.reshape(*[a.shape[d] * b.shape[d] for d in range(n)]) if n else prod


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The 3-D cross product along ``dim`` (default: the first dimension of size 3; inputs
    broadcast).

    >>> import tapegrad as tg
    >>> tg.cross(tg.tensor([1., 0., 0.]), tg.tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    _need(input, "input", "cross")
    _need(other, "other", "cross")
    shape = _bshape(input, other)
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, got {input.ndim} and {other.ndim}")
    a, b = input.expand(*shape), other.expand(*shape)
    if dim is None:
        dims3 = [d for d, s in enumerate(shape) if s == 3]
        if not dims3:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims3[0]
    dim = dim % len(shape) if shape else dim
    if shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and {other.shape[dim]}")
    a0, a1, a2 = (a.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(dim, i, 1) for i in range(3))
    return _C.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` ``[..., P, M]`` and of ``x2``
    ``[..., R, M]``: shape ``[..., P, R]``. Computed from differences (exact; the gradient at a
    zero distance is 0, as PyTorch).

    >>> import tapegrad as tg
    >>> tg.cdist(tg.tensor([[0., 0.]]), tg.tensor([[3., 4.], [0., 1.]]))
    tensor([[5., 1.]])
    """
    _need(x1, "x1", "cdist")
    _need(x2, "x2", "cdist")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if not x1.dtype.is_floating_point or not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, p, -1)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: ``"ij,jk->ik"`` and the like, with implicit output (the indices that
    appear once, sorted), repeated indices within one operand (a diagonal), ``...`` for broadcast
    dimensions, and operands passed as a list. Each contraction is a ``tensordot``-style matrix
    product, so the gradient is that of the products.

    >>> import tapegrad as tg
    >>> tg.einsum("ij,j->i", tg.tensor([[1., 2.], [3., 4.]]), tg.tensor([1., 1.]))
    tensor([3., 7.])
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ops = [_need(t, "operands", "einsum") for t in operands]
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation" if len(ops) > len(terms)
                           else "einsum(): fewer operands were provided than specified in the equation")
    # "..." stands for the broadcast dimensions: give them letters no equation uses.
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    ell_len = 0
    for t, x in zip(terms, ops):
        if "..." in t:
            ell_len = builtins.max(ell_len, x.ndim - (len(t) - 3))
    ell = "".join(spare[:ell_len])
    subs: list[str] = []
    for t, x in zip(terms, ops):
        if "..." in t:
            n = x.ndim - (len(t) - 3)
            t = t.replace("...", ell[ell_len - n:] if n else "")
        for c in t:
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in the equation string, subscripts must be in [a-zA-Z]")
        if len(t) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the number of dimensions ({x.ndim}) for operand {len(subs)}" + ("" if "..." in eq else " and no ellipsis was given"))
        subs.append(t)
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if not any(c in s for s in subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    else:
        counts: dict[str, int] = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    # Sizes, with broadcasting of size-1 dimensions.
    size: dict[str, int] = {}
    for s, x in zip(subs, ops):
        for c, d in zip(s, x.shape):
            if size.get(c, 1) == 1:
                size[c] = d
            elif d not in (1, size[c]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript {c} has sizes {size[c]} and {d}")
    # Take diagonals of repeated subscripts within one operand.
    tensors = []
    for s, x in zip(subs, ops):
        s, x = _diagonalize(s, x)
        tensors.append((s, x))
    # Contract left to right: keep the indices still needed later or in the output.
    s0, acc = tensors[0]
    for i in range(1, len(tensors)):
        s1, x1 = tensors[i]
        later = set(out).union(*[set(s) for s, _ in tensors[i + 1:]])
        s0, acc = _contract(s0, acc, s1, x1, later, size)
    # Sum out what the output does not keep, then order as the output.
    drop = [d for d, c in enumerate(s0) if c not in out]
    if drop:
        acc = acc.sum(drop)
        s0 = "".join(c for c in s0 if c in out)
    for c in out:
        if c not in s0:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    if len(set(out)) != len(out):
        raise RuntimeError("einsum(): output subscript appears more than once in the output")
    if s0 != out and s0:
        acc = acc.permute(*[s0.index(c) for c in out])
    shape = [size[c] for c in out]
    if list(acc.shape) != shape:
        acc = acc.expand(*shape)
    return acc


def _diagonalize(s: str, x: Tensor) -> tuple[str, Tensor]:
    while len(set(s)) != len(s):
        c = next(ch for ch in s if s.count(ch) > 1)
        i = s.index(c)
        j = s.index(c, i + 1)
        n = x.shape[i]
        mask_shape = [1] * x.ndim
        mask_shape[i] = n
        mask_shape[j] = n
        eye = _C.eye(n, dtype=x.dtype).reshape(*mask_shape)
        x = (x * eye).sum(j)
        s = s[:j] + s[j + 1:]
    return s, x


def _contract(s0: str, a: Tensor, s1: str, b: Tensor, later: set[str], size: dict[str, int]) -> tuple[str, Tensor]:
    """One pairwise contraction as a batched matrix product: batch = shared kept, k = shared dropped."""
    shared = [c for c in s0 if c in s1]
    batch = [c for c in shared if c in later]
    k = [c for c in shared if c not in later]
    # Indices of one operand only that nothing later needs are summed out first.
    only0 = [c for c in s0 if c not in s1 and c not in later]
    if only0:
        a = a.sum([s0.index(c) for c in only0])
        s0 = "".join(c for c in s0 if c not in only0)
    only1 = [c for c in s1 if c not in s0 and c not in later]
    if only1:
        b = b.sum([s1.index(c) for c in only1])
        s1 = "".join(c for c in s1 if c not in only1)
    m_idx = [c for c in s0 if c not in s1]
    n_idx = [c for c in s1 if c not in s0]

    def arrange(s: str, x: Tensor, order: list[str]) -> Tensor:
        x = x.permute(*[s.index(c) for c in order]) if order else x
        full = [size[c] for c in order]
        return x.expand(*full) if list(x.shape) != full else x

    def prod(idx: list[str]) -> int:
        p = 1
        for c in idx:
            p *= size[c]
        return p

    A = arrange(s0, a, batch + m_idx + k).reshape(prod(batch), prod(m_idx), prod(k))
    B = arrange(s1, b, batch + k + n_idx).reshape(prod(batch), prod(k), prod(n_idx))
    if A.dtype != B.dtype:
        raise RuntimeError(f"einsum(): expected all operands to have the same dtype, got {A.dtype} and {B.dtype}")
    C = A.bmm(B).reshape(*[size[c] for c in batch + m_idx + n_idx])
    return "".join(batch + m_idx + n_idx), C
