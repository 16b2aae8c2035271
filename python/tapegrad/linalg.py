"""``tg.linalg``: decompositions, solvers, determinants and norms, each with its backward.

The decompositions run in Rust on ``faer`` (``src/ops/decomp.rs``), one matrix of the batch at a
time. Their gradients are written here with differentiable tensor operations, so a second
derivative (``create_graph=True``) needs no extra formula. Everything else (``pinv``, ``lstsq``,
``matrix_power``, the norms) is composed of differentiable operations and gets its gradient from them.

Gradient conventions follow PyTorch: ``eigh`` and ``svd`` gradients are only meaningful for losses
that do not depend on the sign (gauge) of the eigen/singular vectors; ``cholesky``'s gradient is
the symmetric one.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from . import _tapegrad as _C
from ._creation import full_like, ones_like, zeros_like
from ._errors import LinAlgError
from ._function import Function

Tensor = _C.Tensor

__all__ = [
    "LinAlgError", "inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd",
    "svdvals", "pinv", "lstsq", "matrix_power", "norm", "vector_norm", "matrix_norm",
]


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-2, -1)


def _eye_like(x: Tensor, n: int) -> Tensor:
    return _C.eye(n, dtype=x.dtype)


def _diag_embed(v: Tensor) -> Tensor:
    """``[..., n]`` to ``[..., n, n]`` with ``v`` on the diagonal (differentiable)."""
    return v.unsqueeze(-1) * _eye_like(v, v.shape[-1])


def _diagonal(x: Tensor) -> Tensor:
    """The diagonal of the last two dimensions of a square ``x`` (differentiable)."""
    return (x * _eye_like(x, x.shape[-1])).sum(-1)


def _tril_mask(x: Tensor, n: int, strict: bool) -> Tensor:
    rows = _C.arange(n).unsqueeze(1)
    cols = _C.arange(n).unsqueeze(0)
    return (cols < rows if strict else cols <= rows).to(x.dtype)


def _differentiated(A: Tensor) -> bool:
    """Whether a derivative of ``A`` is taken: it requires grad under grad mode, or it carries a
    forward-mode tangent (a dual tensor)."""
    if A.requires_grad and _C.is_grad_enabled():
        return True
    return any(_C._unpack_dual(A, level)[1] is not None for level in range(_C._dual_level_count()))


def _check_float(a: Any, op: str) -> Tensor:
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}: argument must be a Tensor, got {type(a).__name__}")
    return a


# ---- the decompositions: forward in Rust, backward here -------------------------------------


class LinalgInv(Function):
    @staticmethod
    def forward(ctx, A):
        out = _C._linalg_inv(A)
        ctx.save_for_backward(out)
        ctx.save_for_forward(out)
        return out

    @staticmethod
    def jvp(ctx, tA):
        (ai,) = ctx.saved_tensors
        return -(ai @ tA @ ai)

    @staticmethod
    def backward(ctx, g):
        (ai,) = ctx.saved_tensors
        ait = _mT(ai)
        return -(ait @ g @ ait)


class LinalgSolve(Function):
    @staticmethod
    def forward(ctx, A, B):
        X = _C._linalg_solve(A, B)
        ctx.save_for_backward(A, X)
        ctx.save_for_forward(A, X)
        return X

    @staticmethod
    def jvp(ctx, tA, tB):
        # A X = B: A dX = dB - dA X
        A, X = ctx.saved_tensors
        return solve(A, tB - tA @ X)

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = solve(_mT(A), g)
        gA = -(gB @ _mT(X)) if ctx.needs_input_grad[0] else None
        return gA, gB


class LinalgDet(Function):
    @staticmethod
    def forward(ctx, A):
        d = _C._linalg_det(A)
        ctx.save_for_backward(A, d)
        ctx.save_for_forward(A, d)
        return d

    @staticmethod
    def jvp(ctx, tA):
        # d det A = det A tr(A⁻¹ dA) (an invertible A)
        A, d = ctx.saved_tensors
        return d * (inv(A) * _mT(tA)).sum(-1).sum(-1)

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        if (d == 0).to(_C.int64).sum().item() == 0:
            return (g * d).unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))
        # A singular matrix (somewhere in the batch): the gradient is the transposed adjugate, from
        # the SVD A = U S Vh as det(U) det(Vh) U diag(prod_{j != i} s_j) Vh. A first derivative only
        # (computed on values), as PyTorch's at a singular matrix.
        U, S, Vh = _C._linalg_svd(A.detach(), False, True)
        assert U is not None and Vh is not None
        n = S.shape[-1]
        eye = _eye_like(S, n)
        others = (S.unsqueeze(-2) * (1.0 - eye) + eye).prod(-1)
        sign = _C._linalg_det(U) * _C._linalg_det(Vh)
        return (g * sign).unsqueeze(-1).unsqueeze(-1) * ((U * others.unsqueeze(-2)) @ Vh)


class LinalgSlogdet(Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs = _C._linalg_slogdet(A)
        ctx.save_for_backward(A)
        ctx.save_for_forward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def jvp(ctx, tA):
        (A,) = ctx.saved_tensors
        return None, (inv(A) * _mT(tA)).sum(-1).sum(-1)

    @staticmethod
    def backward(ctx, _gsign, glog):
        (A,) = ctx.saved_tensors
        return glog.unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))


class LinalgCholesky(Function):
    @staticmethod
    def forward(ctx, A):
        L = _C._linalg_cholesky(A, False)
        ctx.save_for_backward(L)
        ctx.save_for_forward(L)
        return L

    @staticmethod
    def jvp(ctx, tA):
        # dL = L Φ(L⁻¹ dA L⁻ᵀ), Φ = the lower triangle with a halved diagonal
        (L,) = ctx.saved_tensors
        n = L.shape[-1]
        Li = inv(L)
        P = Li @ tA @ _mT(Li)
        P = P * _tril_mask(L, n, strict=True) + 0.5 * _diag_embed(_diagonal(P))
        return L @ P

    @staticmethod
    def backward(ctx, gL):
        # A = L Lᵀ: gA = sym(L⁻ᵀ Φ(Lᵀ ḡL) L⁻¹), Φ = the lower triangle with a halved diagonal.
        (L,) = ctx.saved_tensors
        n = L.shape[-1]
        gL = gL * _tril_mask(L, n, strict=False)
        P = _mT(L) @ gL
        P = P * _tril_mask(L, n, strict=True) + 0.5 * _diag_embed(_diagonal(P))
        Li = inv(L)
        S = _mT(Li) @ P @ Li
        return 0.5 * (S + _mT(S))


class LinalgEigh(Function):
    @staticmethod
    def forward(ctx, A, upper):
        w, V = _C._linalg_eigh(A, upper, True)
        ctx.save_for_backward(w, V)
        ctx.save_for_forward(w, V)
        return w, V

    @staticmethod
    def jvp(ctx, tA, _upper):
        # a symmetric dA: with P = Vᵀ dA V, dw = diag(P) and dV = V (F ∘ P), F[i, j] = 1 / (w[j] - w[i])
        # off the diagonal, 0 on it
        w, V = ctx.saved_tensors
        n = w.shape[-1]
        P = _mT(V) @ tA @ V
        eye = _eye_like(w, n)
        E = w.unsqueeze(-2) - w.unsqueeze(-1) + eye
        return _diagonal(P), V @ ((1.0 - eye) * P / E)

    @staticmethod
    def backward(ctx, gw, gV):
        w, V = ctx.saved_tensors
        n = w.shape[-1]
        inner = _diag_embed(gw) if gw is not None else 0.0 * _diag_embed(w)
        if gV is not None:
            E = w.unsqueeze(-2) - w.unsqueeze(-1)  # E[i, j] = w[j] - w[i]
            off = 1.0 - _eye_like(w, n)
            E = E + _eye_like(w, n)  # no division by zero on the diagonal, masked below
            VgV = _mT(V) @ gV
            inner = inner + off * (VgV - _mT(VgV)) * 0.5 / E
        gA = V @ inner @ _mT(V)
        return gA, None


class LinalgSvd(Function):
    @staticmethod
    def forward(ctx, A):
        U, S, Vh = _C._linalg_svd(A, False, True)
        ctx.save_for_backward(U, S, Vh)
        ctx.save_for_forward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def jvp(ctx, tA):
        # With P = Uᵀ dA V (k×k) and F[i, j] = 1 / (s_j² - s_i²) off the diagonal (0 on it):
        # dS = diag(P), dU = U (F ∘ (P S + S Pᵀ)) + (I - U Uᵀ) dA V S⁻¹,
        # dV = V (F ∘ (S P + Pᵀ S)) + (I - V Vᵀ) dAᵀ U S⁻¹ (distinct, nonzero singular values).
        U, S, Vh = ctx.saved_tensors
        m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
        V = _mT(Vh)
        dAV = tA @ V
        P = _mT(U) @ dAV
        s2 = S * S
        eye = _eye_like(S, k)
        F = (1.0 - eye) / (s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye)
        Sr = S.unsqueeze(-2)  # scales columns
        Sc = S.unsqueeze(-1)  # scales rows
        dU = U @ (F * (P * Sr + Sc * _mT(P)))
        dV = V @ (F * (Sc * P + _mT(P) * Sr))
        if m > k:
            dU = dU + (dAV - U @ P) / Sr
        if n > k:
            dAtU = _mT(tA) @ U
            dV = dV + (dAtU - V @ _mT(P)) / Sr
        return dU, _diagonal(P), _mT(dV)

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        gA = None
        inner = _diag_embed(gS) if gS is not None else 0.0 * _diag_embed(S)
        if gU is None and gVh is None:
            return U @ inner @ Vh
        V = _mT(Vh)
        gV = _mT(gVh) if gVh is not None else None
        s2 = S * S
        eye = _eye_like(S, k)
        E = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye  # E[i, j] = s_j² - s_i², 1 on the diagonal
        off = 1.0 - eye
        Sd = _diag_embed(S)
        if gU is not None:
            UgU = _mT(U) @ gU
            inner = inner + (off * (UgU - _mT(UgU)) / E) @ Sd
        if gV is not None:
            VgV = _mT(V) @ gV
            inner = inner + Sd @ (off * (VgV - _mT(VgV)) / E)
        gA = U @ inner @ Vh
        Sinv = (1.0 / S).unsqueeze(-2)
        if gU is not None and m > k:
            gA = gA + ((gU - U @ (_mT(U) @ gU)) * Sinv) @ Vh
        if gV is not None and n > k:
            gA = gA + U @ _mT((gV - V @ (_mT(V) @ gV)) * Sinv)
        return gA


class LinalgQr(Function):
    @staticmethod
    def forward(ctx, A):
        Q, R = _C._linalg_qr(A, False)
        ctx.save_for_backward(Q, R)
        ctx.save_for_forward(Q, R)
        return Q, R

    @staticmethod
    def jvp(ctx, tA):
        # Reduced QR of a tall A (m >= n): with X = Qᵀ dA R⁻¹ and Ω = L - Lᵀ, L the strictly lower
        # triangle of X (Qᵀ dQ is antisymmetric, dR R⁻¹ upper triangular):
        # dR = (X - Ω) R and dQ = dA R⁻¹ - Q (X - Ω).
        Q, R = ctx.saved_tensors
        n = R.shape[-1]
        dAR = _mT(solve(_mT(R), _mT(tA)))  # dA R⁻¹
        X = _mT(Q) @ dAR
        L = X * _tril_mask(R, n, strict=True)
        T = X - (L - _mT(L))
        return dAR - Q @ T, T @ R

    @staticmethod
    def backward(ctx, gQ, gR):
        # Reduced QR of a tall (m >= n) A: M = Rᵀ ḡR − ḡQᵀ Q, gA = (ḡQ + Q copyltu(M)) R⁻ᵀ.
        Q, R = ctx.saved_tensors
        n = R.shape[-1]
        M = 0.0 * _mT(R) @ R
        if gR is not None:
            M = M + R @ _mT(gR)
        if gQ is not None:
            M = M - _mT(gQ) @ Q
        low = _tril_mask(R, n, strict=True)
        M = M * low + _mT(M * low) + _diag_embed(_diagonal(M))
        b = Q @ M
        if gQ is not None:
            b = b + gQ
        return _mT(solve(R, _mT(b)))


# ---- the public functions ---------------------------------------------------------------------


def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (or of each matrix of a batch ``[..., n, n]``).

    A singular matrix raises ``tg.linalg.LinAlgError`` naming the batch element.

    >>> import tapegrad as tg
    >>> tg.linalg.inv(tg.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    return LinalgInv.apply(_check_float(A, "linalg.inv"))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A``.

    ``B`` is a batch of vectors when it is 1-D or has ``A``'s shape without its last dimension;
    batch dimensions broadcast.

    >>> import tapegrad as tg
    >>> tg.linalg.solve(tg.tensor([[2., 0.], [0., 4.]]), tg.tensor([2., 8.]))
    tensor([1., 2.])
    """
    _check_float(A, "linalg.solve")
    _check_float(B, "linalg.solve")
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    if A.ndim < 2:
        raise RuntimeError(f"linalg.solve: The input tensor A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} and B of type {B.dtype} instead")
    # PyTorch's rule: B is a (batch of) vector(s) when 1-D, or when its shape is A's without the last dim.
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({tuple(A.shape)} and {tuple(B.shape)})")
    batch = _broadcast(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]), "linalg.solve")
    Ab = A.expand(*batch, *A.shape[-2:]) if tuple(A.shape[:-2]) != batch else A
    Bb = Bm.expand(*batch, *Bm.shape[-2:]) if tuple(Bm.shape[:-2]) != batch else Bm
    X = LinalgSolve.apply(Ab, Bb)
    return X.squeeze(-1) if vector else X


def _broadcast(a: tuple[int, ...], b: tuple[int, ...], op: str) -> tuple[int, ...]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"{op}: batch shapes {a} and {b} cannot be broadcast")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (or of each matrix of a batch).

    Its gradient is ``det(A) · A⁻ᵀ``, and at a singular ``A`` the transposed adjugate (from the
    SVD; a first derivative only there, as in PyTorch).

    >>> import tapegrad as tg
    >>> tg.linalg.det(tg.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.0000)
    """
    return LinalgDet.apply(_check_float(A, "linalg.det"))


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def slogdet(A: Tensor) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant; a singular matrix gives ``(0, -inf)``.

    >>> import tapegrad as tg
    >>> tg.linalg.slogdet(tg.tensor([[1., 2.], [3., 4.]])).sign
    tensor(-1.)
    """
    sign, logabs = LinalgSlogdet.apply(_check_float(A, "linalg.slogdet"))
    return SlogdetResult(sign, logabs)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``A = L Lᵀ``) of a symmetric positive-definite matrix; with
    ``upper=True`` the factor ``U = Lᵀ``. Only the lower (upper) triangle of ``A`` is read.

    >>> import tapegrad as tg
    >>> tg.linalg.cholesky(tg.tensor([[4., 2.], [2., 2.]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    _check_float(A, "linalg.cholesky")
    if upper:
        return _mT(LinalgCholesky.apply(_mT(A)))
    return LinalgCholesky.apply(A)


class QrResult(NamedTuple):
    Q: Tensor
    R: Tensor


def qr(A: Tensor, mode: str = "reduced") -> QrResult:
    """``(Q, R)`` with ``A = Q R``, ``Q`` orthonormal columns and ``R`` upper triangular.

    ``mode``: ``"reduced"`` (default), ``"complete"`` or ``"r"`` (``Q`` empty). As in PyTorch, there
    is no gradient for ``mode="r"``, nor for ``mode="complete"`` of a tall matrix.

    >>> import tapegrad as tg
    >>> A = tg.tensor([[3., 0.], [4., 5.]])
    >>> Q, R = tg.linalg.qr(A)
    >>> bool(((Q @ R) - A).abs().max() < 1e-5)
    True
    """
    _check_float(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'")
    tall = A.ndim >= 2 and A.shape[-2] >= A.shape[-1]
    if mode == "reduced" and tall:
        Q, R = LinalgQr.apply(A)
        return QrResult(Q, R)
    if _differentiated(A):
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        if not tall or A.shape[-2] == A.shape[-1]:
            # A wide A = [X | Y] (X square): Q R_X = X, and R = [R_X | Qᵀ Y]; differentiable through both.
            m = A.shape[-2]
            Q, RX = LinalgQr.apply(A.narrow(-1, 0, m))
            return QrResult(Q, _C.cat([RX, _mT(Q) @ A.narrow(-1, m, A.shape[-1] - m)], -1))
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    Q, R = _C._linalg_qr(A, mode == "complete")
    if mode == "r":
        Q = _C.zeros(0, dtype=A.dtype)
    return QrResult(Q, R)


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _uplo(UPLO: str) -> bool:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, reading its lower
    (``UPLO="L"``) or upper (``"U"``) triangle.

    >>> import tapegrad as tg
    >>> tg.linalg.eigh(tg.tensor([[2., 1.], [1., 2.]])).eigenvalues
    tensor([1., 3.])
    """
    _check_float(A, "linalg.eigh")
    w, V = LinalgEigh.apply(A, _uplo(UPLO))
    return EighResult(w, V)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix.

    >>> import tapegrad as tg
    >>> tg.linalg.eigvalsh(tg.tensor([[2., 1.], [1., 2.]]))
    tensor([1., 3.])
    """
    _check_float(A, "linalg.eigvalsh")
    upper = _uplo(UPLO)
    if _differentiated(A):
        return LinalgEigh.apply(A, upper)[0]
    return _C._linalg_eigh(A, upper, False)[0]


class SvdResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(A: Tensor, full_matrices: bool = True) -> SvdResult:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending.

    With ``full_matrices=False`` the reduced factors. The gradient needs distinct singular values
    and a loss that does not depend on the signs of the singular vectors; with ``full_matrices=True``
    the columns past ``min(m, n)`` get no gradient (as in PyTorch).

    >>> import tapegrad as tg
    >>> tg.linalg.svd(tg.tensor([[3., 0.], [0., 4.]])).S
    tensor([4., 3.])
    """
    _check_float(A, "linalg.svd")
    if not full_matrices or (A.ndim >= 2 and A.shape[-1] == A.shape[-2]):
        U, S, Vh = LinalgSvd.apply(A)
        return SvdResult(U, S, Vh)
    Uf_, Sf, Vhf_ = _C._linalg_svd(A, True, True)
    assert Uf_ is not None and Vhf_ is not None
    Uf, Vhf = Uf_, Vhf_
    if not (_differentiated(A)):
        return SvdResult(Uf, Sf, Vhf)
    # The full factors' extra columns (rows) span the complement and carry no gradient, as in
    # PyTorch; the first k come from the differentiable reduced SVD.
    U, S, Vh = LinalgSvd.apply(A)
    k = S.shape[-1]
    m, n = A.shape[-2], A.shape[-1]
    if m > k:
        U = _C.cat([U, Uf.narrow(-1, k, m - k)], -1)
    if n > k:
        Vh = _C.cat([Vh, Vhf.narrow(-2, k, n - k)], -2)
    return SvdResult(U, S, Vh)


def svdvals(A: Tensor) -> Tensor:
    """The singular values of a matrix, descending.

    >>> import tapegrad as tg
    >>> tg.linalg.svdvals(tg.tensor([[3., 0.], [0., -4.]]))
    tensor([4., 3.])
    """
    _check_float(A, "linalg.svdvals")
    if _differentiated(A):
        # Through the full reduced SVD, so that the gradient (U diag(ḡS) Vh) is itself differentiable.
        return LinalgSvd.apply(A)[1]
    return _C._linalg_svd(A, False, False)[1]


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse, from the SVD: singular values at most
    ``max(atol, rtol · σ_max)`` are treated as zero (``rtol`` defaults to ``ε · max(m, n)``).

    >>> import tapegrad as tg
    >>> tg.linalg.pinv(tg.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    _check_float(A, "linalg.pinv")
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        eps = 1.1920928955078125e-07 if A.dtype == _C.float32 else 2.220446049250313e-16
        rtol = 0.0 if (atol is not None and atol > 0) else eps * max(m, n)
    U, S, Vh = svd(A, full_matrices=False)
    if S.shape[-1] == 0:
        return _mT(A) * 0.0
    smax = S.amax(-1, keepdim=True)
    cutoff = smax * rtol
    if atol is not None:
        cutoff = _C.maximum(cutoff, full_like(cutoff, atol))
    keep = S > cutoff
    safe = _C.where(keep, S, ones_like(S))
    Sinv = _C.where(keep, 1.0 / safe, zeros_like(S))
    return (_mT(Vh) * Sinv.unsqueeze(-2)) @ _mT(U)


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:
    """The least-squares solution of ``A X ≈ B``, as ``pinv(A) @ B`` (differentiable).

    As in PyTorch: ``residuals`` (squared residual norms per column) is filled only when ``A`` is
    tall, of full rank, and ``driver`` is not ``"gelsy"`` (the default); ``rank`` is empty for
    ``"gels"``; ``singular_values`` is filled for ``"gelsd"`` and ``"gelss"``. Every driver computes
    the same minimum-norm solution here (through the SVD).

    >>> import tapegrad as tg
    >>> A = tg.tensor([[1., 0.], [0., 1.], [0., 0.]])
    >>> tg.linalg.lstsq(A, tg.tensor([[1.], [2.], [3.]])).solution
    tensor([[1.],
            [2.]])
    """
    _check_float(A, "linalg.lstsq")
    _check_float(B, "linalg.lstsq")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype {A.dtype} and other's dtype {B.dtype}")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got {A.shape[-2]} and {Bm.shape[-2]}")
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    if driver is not None and driver not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {drivers}")
    driver = driver or "gelsy"
    X = pinv(A, rtol=rcond) @ Bm
    m, n = A.shape[-2], A.shape[-1]
    S = svdvals(A.detach())
    eps = 1.1920928955078125e-07 if A.dtype == _C.float32 else 2.220446049250313e-16
    cut = S.amax(-1, keepdim=True) * (rcond if rcond is not None else eps * max(m, n)) if S.shape[-1] else S
    rank = (S > cut).to(_C.int64).sum(-1) if driver != "gels" else _C.zeros(0, dtype=_C.int64)
    empty = _C.zeros(0, dtype=A.dtype)
    residuals = empty
    if driver != "gelsy" and m > n and (rank != n).to(_C.int64).sum().item() == 0:
        r = A @ X - Bm
        residuals = (r * r).sum(-2)
    singular_values = S if driver in ("gelsd", "gelss") else empty
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, singular_values)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (``n = 0``: the identity; ``n < 0``: powers of
    ``inv(A)``), by repeated squaring.

    >>> import tapegrad as tg
    >>> tg.linalg.matrix_power(tg.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2] if A.ndim >= 2 else ''} by {A.shape[-1] if A.ndim else ''} matrices")
    if n == 0:
        # The identity whatever A holds (NaN included); connected to A with a zero gradient, as PyTorch.
        eye = _eye_like(A, A.shape[-1]).expand(*A.shape)
        return _C.where(ones_like(A, dtype=_C.bool), eye, A) if A.requires_grad else eye.clone()
    if n < 0:
        A, n = inv(A), -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    assert result is not None
    return result


def vector_norm(x: Tensor, ord: float = 2, dim: int | tuple[int, ...] | None = None, keepdim: bool = False,
                *, dtype: Any = None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (every element when ``None``): ``ord`` may be any
    real, ``inf`` (max |x|), ``-inf`` (min |x|) or ``0`` (count of non-zeros).

    >>> import tapegrad as tg
    >>> tg.linalg.vector_norm(tg.tensor([3., 4.]))
    tensor(5.)
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'x' must be Tensor, not {type(x).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {x.dtype}")
    dims = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if dims is None and keepdim:
        dims = tuple(range(x.ndim))
    a = x.abs()
    red = dims if dims is not None else tuple(range(x.ndim))
    if ord == math.inf:
        return a.amax(red, keepdim=keepdim) if x.ndim else a
    if ord == -math.inf:
        return a.amin(red, keepdim=keepdim) if x.ndim else a
    if ord == 0:
        return (a != 0).to(x.dtype).sum(red, keepdim=keepdim) if x.ndim else (a != 0).to(x.dtype)
    s = (lambda t: t.sum(red, keepdim=keepdim)) if x.ndim else (lambda t: t)
    if ord == 2:
        return _safe_root(s(x * x), 0.5)
    if ord == 1:
        return s(a)
    return _safe_root(s(a ** ord), 1.0 / ord)


def _safe_root(s: Tensor, p: float) -> Tensor:
    """``s ** p`` whose gradient at ``s = 0`` is 0, not NaN (PyTorch's norm subgradient); a NaN
    ``s`` stays NaN."""
    if not s.requires_grad:
        return s ** p
    nonzero = s != 0
    safe = _C.where(nonzero, s, ones_like(s))
    return _C.where(nonzero, safe ** p, zeros_like(s))


def matrix_norm(A: Tensor, ord: str | float = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False,
                *, dtype: Any = None) -> Tensor:
    """The matrix norm over the two dimensions ``dim``: ``"fro"``, ``"nuc"`` (sum of singular
    values), ``2``/``-2`` (largest/smallest singular value), ``1``/``-1`` (max/min column sum of
    ``|A|``), ``inf``/``-inf`` (max/min row sum).

    >>> import tapegrad as tg
    >>> tg.linalg.matrix_norm(tg.tensor([[1., -2.], [3., 4.]]), ord=1)
    tensor(6.)
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_norm(): argument 'A' must be Tensor, not {type(A).__name__}")
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got shape {tuple(A.shape)}")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {A.dtype}")
    d0, d1 = (d % A.ndim for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        perm = [i for i in range(A.ndim) if i not in (d0, d1)] + [d0, d1]
        S = svdvals(A.permute(*perm))
        if ord == "nuc":
            out = S.sum(-1)
        elif ord == 2:
            out = S.amax(-1)
        else:
            out = S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord in (1, -1, math.inf, -math.inf):
        sum_dim, pick_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(sum_dim, keepdim=True)
        out = sums.amax(pick_dim, keepdim=True) if ord > 0 else sums.amin(pick_dim, keepdim=True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord: str | float | None = None, dim: int | tuple[int, ...] | None = None, keepdim: bool = False,
         *, dtype: Any = None) -> Tensor:
    """``vector_norm`` or ``matrix_norm``, chosen as PyTorch: a string ``ord`` or a 2-tuple
    ``dim`` means a matrix norm; ``ord=None`` is the 2-norm of the flattened input (Frobenius).

    >>> import tapegrad as tg
    >>> tg.linalg.norm(tg.tensor([[3., 0.], [0., 4.]]))
    tensor(5.)
    """
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.ndim == 2):
        if dim is None:
            if A.ndim != 2:
                raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
            dim = (-2, -1)
        return matrix_norm(A, ord, (dim[0], dim[1]), keepdim, dtype=dtype)
    if dim is None and A.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, float(ord), dim, keepdim, dtype=dtype)
