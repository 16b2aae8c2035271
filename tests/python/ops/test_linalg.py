"""tg.linalg and the products of issue 15: values against NumPy, gradients and second derivatives
against float64 central differences, errors as PyTorch's."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(1234)


def t64(a, grad=False):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def well_conditioned(*batch, n=3):
    a = RNG.standard_normal((*batch, n, n))
    return a + n * np.eye(n)


def spd(*batch, n=3):
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# ---- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,tol", [(tg.float64, 1e-10), (tg.float32, 1e-4)])
def test_inv_det_slogdet_solve_values(dtype, tol):
    a = well_conditioned(2, 3, n=4)
    b = RNG.standard_normal((2, 3, 4, 2))
    A = tg.tensor(a).to(dtype)
    B = tg.tensor(b).to(dtype)
    np.testing.assert_allclose(tg.linalg.inv(A).numpy(), np.linalg.inv(a), rtol=tol, atol=tol)
    np.testing.assert_allclose(tg.linalg.det(A).numpy(), np.linalg.det(a), rtol=tol, atol=tol)
    sign, logabs = tg.linalg.slogdet(A)
    ns, nl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign.numpy(), ns)
    np.testing.assert_allclose(logabs.numpy(), nl, rtol=tol, atol=tol)
    np.testing.assert_allclose(tg.linalg.solve(A, B).numpy(), np.linalg.solve(a, b), rtol=tol, atol=tol)
    assert tg.linalg.inv(A).dtype == dtype


def test_solve_vector_broadcast_and_left():
    a = well_conditioned(2, n=3)
    v = RNG.standard_normal(3)
    x = tg.linalg.solve(t64(a), t64(v))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, v[None, :, None])[..., 0], rtol=1e-10)
    m = RNG.standard_normal((3, 4))  # 2-D against a (2, 3, 3) batch: a matrix, broadcast, as PyTorch
    np.testing.assert_allclose(tg.linalg.solve(t64(a), t64(m)).numpy(), np.linalg.solve(a, m[None]), rtol=1e-10)
    vb = RNG.standard_normal((2, 3))  # A's shape without its last dimension: a batch of vectors
    np.testing.assert_allclose(tg.linalg.solve(t64(a), t64(vb)).numpy(), np.linalg.solve(a, vb[..., None])[..., 0],
                               rtol=1e-10)
    b = RNG.standard_normal((4, 3))
    xr = tg.linalg.solve(t64(a[0]), t64(b), left=False)
    np.testing.assert_allclose(xr.numpy() @ a[0], b, rtol=1e-10, atol=1e-12)


def test_cholesky_values():
    a = spd(2, n=4)
    np.testing.assert_allclose(tg.linalg.cholesky(t64(a)).numpy(), np.linalg.cholesky(a), rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.cholesky(t64(a), upper=True).numpy(),
                               np.swapaxes(np.linalg.cholesky(a), -1, -2), rtol=1e-10)
    # Only the lower triangle is read.
    junk = a.copy()
    junk[..., 0, 3] = 100.0
    np.testing.assert_allclose(tg.linalg.cholesky(t64(junk)).numpy(), np.linalg.cholesky(a), rtol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (2, 4, 3), (3, 5)])
def test_qr_values(shape):
    a = RNG.standard_normal(shape)
    for mode in ("reduced", "complete"):
        Q, R = tg.linalg.qr(t64(a), mode=mode)
        nq, nr = np.linalg.qr(a, mode=mode)
        assert Q.shape == nq.shape and R.shape == nr.shape
        np.testing.assert_allclose((Q @ R).numpy(), a, atol=1e-12)
        np.testing.assert_allclose(np.abs(R.numpy()), np.abs(nr), atol=1e-10)
        np.testing.assert_allclose(np.triu(R.numpy()), R.numpy())
    assert tg.linalg.qr(t64(a), mode="r").R.shape == np.linalg.qr(a, mode="r").shape


def test_eigh_values_and_uplo():
    a = spd(2, n=4)
    w, V = tg.linalg.eigh(t64(a))
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a), rtol=1e-10)
    np.testing.assert_allclose((V @ (w.unsqueeze(-1) * V.transpose(-2, -1))).numpy(), a, atol=1e-10)
    low = np.tril(a) + np.triu(RNG.standard_normal(a.shape), 1)
    up = np.triu(a) + np.tril(RNG.standard_normal(a.shape), -1)
    np.testing.assert_allclose(tg.linalg.eigvalsh(t64(low)).numpy(), np.linalg.eigvalsh(a), rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.eigvalsh(t64(up), UPLO="U").numpy(), np.linalg.eigvalsh(a), rtol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd_values(shape):
    a = RNG.standard_normal(shape)
    for full in (True, False):
        U, S, Vh = tg.linalg.svd(t64(a), full_matrices=full)
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        assert U.shape == nu.shape and Vh.shape == nvh.shape
        np.testing.assert_allclose(S.numpy(), ns, rtol=1e-10)
        k = ns.shape[-1]
        rec = (U.numpy()[..., :k] * S.numpy()[..., None, :]) @ Vh.numpy()[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=1e-10)
    np.testing.assert_allclose(tg.linalg.svdvals(t64(a)).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)


def test_pinv_lstsq_matrix_power_values():
    a = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(tg.linalg.pinv(t64(a)).numpy(), np.linalg.pinv(a), rtol=1e-8, atol=1e-12)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(tg.linalg.pinv(t64(sing)).numpy(), np.linalg.pinv(sing), rtol=1e-8, atol=1e-12)
    b = RNG.standard_normal((5, 2))
    nx, nres, nrank, nsv = np.linalg.lstsq(a, b, rcond=None)
    res = tg.linalg.lstsq(t64(a), t64(b))
    np.testing.assert_allclose(res.solution.numpy(), nx, rtol=1e-8)
    assert res.residuals.shape == (0,) and res.rank.item() == nrank  # gelsy, as PyTorch's CPU default
    res = tg.linalg.lstsq(t64(a), t64(b), driver="gelsd")
    np.testing.assert_allclose(res.residuals.numpy(), nres, rtol=1e-8)
    np.testing.assert_allclose(res.singular_values.numpy(), nsv, rtol=1e-10)
    low_rank = np.outer(RNG.standard_normal(5), RNG.standard_normal(3))
    assert tg.linalg.lstsq(t64(low_rank), t64(b)).rank.item() == 1
    m = well_conditioned(n=3)
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(tg.linalg.matrix_power(t64(m), n).numpy(), np.linalg.matrix_power(m, n),
                                   rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, math.inf, -math.inf])
def test_vector_norm_values(ord):
    x = RNG.standard_normal((3, 4))
    x[0, 0] = 0.0
    np.testing.assert_allclose(tg.linalg.vector_norm(t64(x), ord).numpy(), np.linalg.norm(x.ravel(), ord), rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.vector_norm(t64(x), ord, dim=1, keepdim=True).numpy(),
                               np.linalg.norm(x, ord, axis=1, keepdims=True), rtol=1e-10)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm_values(ord):
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(tg.linalg.matrix_norm(t64(a), ord).numpy(), np.linalg.norm(a, ord, axis=(-2, -1)),
                               rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.norm(t64(a[0]), ord).numpy(), np.linalg.norm(a[0], ord), rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.matrix_norm(t64(a), ord, dim=(0, 2), keepdim=True).numpy(),
                               np.linalg.norm(a, ord, axis=(0, 2), keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(tg.linalg.norm(t64(a)).numpy(), np.linalg.norm(a.ravel()), rtol=1e-10)


def test_products_values():
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    m, m2 = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    c = RNG.standard_normal((3, 5))
    np.testing.assert_allclose(tg.dot(t64(a), t64(b)).numpy(), a @ b)
    np.testing.assert_allclose(tg.vdot(t64(a), t64(b)).numpy(), np.vdot(a, b))
    np.testing.assert_allclose(tg.outer(t64(a), t64(b)).numpy(), np.outer(a, b))
    np.testing.assert_allclose(tg.inner(t64(m), t64(m)).numpy(), np.inner(m, m), rtol=1e-12)
    np.testing.assert_allclose(tg.mv(t64(m), t64(a)).numpy(), m @ a, rtol=1e-12)
    np.testing.assert_allclose(tg.addmm(t64(c), t64(m), t64(m2), beta=0.5, alpha=2).numpy(), 0.5 * c + 2 * m @ m2,
                               rtol=1e-12)
    nan = np.full((3, 5), np.nan)
    np.testing.assert_allclose(tg.addmm(t64(nan), t64(m), t64(m2), beta=0).numpy(), m @ m2, rtol=1e-12)
    np.testing.assert_allclose(tg.addmv(t64(a[:3]), t64(m), t64(b), alpha=3).numpy(), a[:3] + 3 * m @ b, rtol=1e-12)
    x1, x2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    base = RNG.standard_normal((2, 3, 5))
    np.testing.assert_allclose(tg.baddbmm(t64(base), t64(x1), t64(x2), beta=2).numpy(), 2 * base + x1 @ x2,
                               rtol=1e-12)
    t1, t2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 3, 5))
    np.testing.assert_allclose(tg.tensordot(t64(t1), t64(t2), dims=([1, 2], [1, 0])).numpy(),
                               np.tensordot(t1, t2, axes=([1, 2], [1, 0])), rtol=1e-12)
    np.testing.assert_allclose(tg.tensordot(t64(m), t64(m2), dims=1).numpy(), m @ m2, rtol=1e-12)
    np.testing.assert_allclose(tg.kron(t64(m), t64(c)).numpy(), np.kron(m, c), rtol=1e-12)
    np.testing.assert_allclose(tg.kron(t64(a), t64(m)).numpy(), np.kron(a, m), rtol=1e-12)
    u, v = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(tg.cross(t64(u), t64(v), dim=1).numpy(), np.cross(u, v), rtol=1e-12)
    p, q = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    for pw in (2.0, 1.0, 3.0, math.inf):
        ref = np.linalg.norm(p[:, :, None, :] - q[:, None, :, :], ord=pw, axis=-1)
        np.testing.assert_allclose(tg.cdist(t64(p), t64(q), p=pw).numpy(), ref, rtol=1e-10)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ijk", [(2, 3, 4)]),
    ("iji->j", [(3, 4, 3)]),
])
def test_einsum_values(eq, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    out = tg.einsum(eq, *[t64(x) for x in arrays])
    np.testing.assert_allclose(out.numpy(), np.einsum(eq, *arrays), rtol=1e-10, atol=1e-12)
    assert tg.einsum(eq, [t64(x) for x in arrays]).shape == np.einsum(eq, *arrays).shape


# ---- gradients -----------------------------------------------------------------------------------


def check(fn, *inputs, second=True):
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
    if second:
        assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_inv_det_slogdet_solve_grads():
    A = t64(well_conditioned(2, n=3), True)
    B = t64(RNG.standard_normal((2, 3, 2)), True)
    check(tg.linalg.inv, A)
    check(tg.linalg.det, A)
    check(lambda a: tg.linalg.slogdet(a).logabsdet, A)
    check(tg.linalg.solve, A, B)
    v = t64(RNG.standard_normal(3), True)
    check(tg.linalg.solve, A, v)  # a vector right-hand side broadcast over the batch


def test_cholesky_grads():
    X = t64(RNG.standard_normal((2, 3, 3)), True)

    def f(x, upper=False):
        a = x @ x.transpose(-2, -1) + 3 * tg.eye(3, dtype=tg.float64)
        return tg.linalg.cholesky(a, upper=upper)

    check(f, X)
    check(lambda x: f(x, True), X)


def test_qr_grads():
    X = t64(RNG.standard_normal((2, 4, 3)), True)
    check(lambda x: tg.linalg.qr(x), X)
    W = t64(RNG.standard_normal((3, 5)), True)  # wide: R = [R_X | Qᵀ Y]
    check(lambda x: tg.linalg.qr(x), W)
    with pytest.raises(RuntimeError, match="not differentiable"):
        tg.linalg.qr(X, mode="complete")


def test_svd_full_matrices_grad():
    X = t64(RNG.standard_normal((4, 2)), True)

    def f(x):
        U, S, Vh = tg.linalg.svd(x, full_matrices=True)
        assert U.shape == (4, 4) and Vh.shape == (2, 2)
        k = U[:, :2]
        return (k * S.unsqueeze(0)) @ k.transpose(0, 1)

    check(f, X)


def test_eigh_grads_gauge_invariant():
    X = t64(RNG.standard_normal((2, 3, 3)), True)

    def sym(x):
        return x + x.transpose(-2, -1)

    check(lambda x: tg.linalg.eigh(sym(x)).eigenvalues, X)
    check(lambda x: tg.linalg.eigvalsh(sym(x), UPLO="U"), X)

    def proj(x):  # V diag(w²) Vᵀ does not depend on the eigenvectors' signs
        w, V = tg.linalg.eigh(sym(x))
        return (V * (w * w).unsqueeze(-2)) @ V.transpose(-2, -1)

    check(proj, X)

    def top(x):  # the projector on the top eigenvector
        V = tg.linalg.eigh(sym(x)).eigenvectors[..., -1:]
        return V @ V.transpose(-2, -1)

    check(top, X)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_grads_gauge_invariant(shape):
    X = t64(RNG.standard_normal(shape), True)
    check(tg.linalg.svdvals, X)

    def uv(x):  # U Vh and U diag(S) Uᵀ are sign-invariant
        U, S, Vh = tg.linalg.svd(x, full_matrices=False)
        return U @ Vh, (U * S.unsqueeze(-2)) @ U.transpose(-2, -1)

    check(uv, X)
    check(lambda x: tg.linalg.pinv(x), X)


def test_composite_grads():
    A = t64(well_conditioned(n=3), True)
    check(lambda a: tg.linalg.matrix_power(a, 3), A)
    check(lambda a: tg.linalg.matrix_power(a, -2), A)
    x = t64(RNG.standard_normal((3, 4)), True)
    for ord in (2, 1, 3, math.inf):
        check(lambda t, o=ord: tg.linalg.vector_norm(t, o, dim=1), x)
    for ord in ("fro", "nuc", 2, 1, -math.inf):
        check(lambda t, o=ord: tg.linalg.matrix_norm(t, o), x)
    B = t64(RNG.standard_normal((4, 2)), True)
    check(lambda a, b: tg.linalg.lstsq(a, b).solution, t64(RNG.standard_normal((4, 3)), True), B)


def test_products_grads():
    a, b = t64(RNG.standard_normal(3), True), t64(RNG.standard_normal(3), True)
    m, m2 = t64(RNG.standard_normal((2, 3)), True), t64(RNG.standard_normal((3, 4)), True)
    c = t64(RNG.standard_normal((2, 4)), True)
    check(tg.dot, a, b)
    check(tg.outer, a, b)
    check(tg.mv, m, a)
    check(lambda c_, x, y: tg.addmm(c_, x, y, beta=0.5, alpha=2), c, m, m2)
    check(lambda x, y: tg.kron(x, y), m, t64(RNG.standard_normal((2, 2)), True))
    check(lambda x, y: tg.cross(x, y, dim=-1), t64(RNG.standard_normal((2, 3)), True), t64(RNG.standard_normal((2, 3)), True))
    check(lambda x, y: tg.cdist(x, y), t64(RNG.standard_normal((3, 2)), True), t64(RNG.standard_normal((4, 2)), True))
    check(lambda x, y: tg.einsum("ij,jk->ik", x, y), m, m2)
    check(lambda x: tg.einsum("ii->", x), t64(RNG.standard_normal((3, 3)), True))
    check(lambda x, y: tg.tensordot(x, y, dims=([0], [1])), m, t64(RNG.standard_normal((4, 2)), True))


def test_matrix_power_zero_is_the_identity_even_for_nan():
    A = t64(np.full((2, 3, 3), np.nan), True)
    out = tg.linalg.matrix_power(A, 0)
    np.testing.assert_array_equal(out.detach().numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    out.sum().backward()
    np.testing.assert_array_equal(A.grad.numpy(), np.zeros((2, 3, 3)))


def test_det_gradient_at_a_singular_matrix_is_the_adjugate():
    # d det / dA = adj(A)ᵀ; for [[a, b], [c, d]] that is [[d, -c], [-b, a]].
    for m in ([[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 3.0], [0.0, 5.0]]):
        A = t64(m, True)
        tg.linalg.det(A).backward()
        (a, b), (c, d) = m
        np.testing.assert_allclose(A.grad.numpy(), [[d, -c], [-b, a]], atol=1e-12)
    # rank n-2 in 3x3: the adjugate is zero
    A = t64(np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]), True)
    tg.linalg.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), np.zeros((3, 3)), atol=1e-12)
    # a batch with one singular element: the other keeps det(A) A⁻ᵀ
    a = np.stack([np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([[1.0, 2.0], [2.0, 4.0]])])
    A = t64(a, True)
    tg.linalg.det(A).sum().backward()
    np.testing.assert_allclose(A.grad.numpy()[0], np.linalg.det(a[0]) * np.linalg.inv(a[0]).T, rtol=1e-12)
    np.testing.assert_allclose(A.grad.numpy()[1], [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_norm_gradient_at_zero_is_zero():
    for ord in (2, 1, 3, math.inf):
        x = t64(np.zeros(3), True)
        tg.linalg.vector_norm(x, ord).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    p = t64([[0.0, 0.0]], True)
    tg.cdist(p, t64([[0.0, 0.0]])).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros((1, 2)))


# ---- errors --------------------------------------------------------------------------------------


def test_singular_matrix_raises_linalg_error_naming_the_batch_element():
    a = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(tg.linalg.LinAlgError, match=r"\(Batch element 1\).*singular"):
        tg.linalg.inv(t64(a))
    with pytest.raises(RuntimeError, match="singular"):
        tg.linalg.solve(t64(np.zeros((2, 2))), t64(np.ones(2)))
    with pytest.raises(tg.linalg.LinAlgError, match=r"\(Batch element 0\).*positive-definite"):
        tg.linalg.cholesky(t64(-np.eye(2)[None]))
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)
    sign, logabs = tg.linalg.slogdet(t64(np.zeros((2, 2))))
    assert sign.item() == 0.0 and logabs.item() == -math.inf
    assert tg.linalg.det(t64(np.zeros((2, 2)))).item() == 0.0


def test_shape_and_dtype_errors():
    with pytest.raises(RuntimeError, match="square"):
        tg.linalg.inv(t64(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.linalg.det(t64(np.ones(3)))
    with pytest.raises(RuntimeError, match="floating point"):
        tg.linalg.inv(tg.tensor([[1, 0], [0, 1]]))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tg.linalg.solve(t64(np.eye(3)), t64(np.ones(4)))
    with pytest.raises(RuntimeError, match="UPLO"):
        tg.linalg.eigh(t64(np.eye(2)), UPLO="X")
    with pytest.raises(RuntimeError, match="mode"):
        tg.linalg.qr(t64(np.eye(2)), mode="bogus")
    with pytest.raises(TypeError):
        tg.linalg.inv([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        tg.dot(t64(np.ones((2, 2))), t64(np.ones(2)))
    with pytest.raises(RuntimeError, match="contracted dimensions"):
        tg.tensordot(t64(np.ones((2, 3))), t64(np.ones((2, 3))), dims=1)
    with pytest.raises(RuntimeError, match="einsum"):
        tg.einsum("ij,jk->ik", t64(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match="size 3|length 3"):
        tg.cross(t64(np.ones(2)), t64(np.ones(2)))
    with pytest.raises(TypeError):
        tg.linalg.matrix_power(t64(np.eye(2)), 1.5)
    with pytest.raises(RuntimeError, match="mode='r'"):
        tg.linalg.qr(t64(RNG.standard_normal((3, 2)), True), mode="r")


def test_empty_and_nan_inputs_do_not_crash():
    assert tg.linalg.inv(t64(np.zeros((0, 0)))).shape == (0, 0)
    assert tg.linalg.det(t64(np.zeros((2, 0, 0)))).numpy().tolist() == [1.0, 1.0]
    assert tg.linalg.svdvals(t64(np.zeros((0, 3)))).shape == (0,)
    out = tg.linalg.inv(t64(np.full((2, 2), np.nan)))
    assert np.isnan(out.numpy()).all()


# ---- optional: PyTorch as a second oracle for the gradient conventions -------------------------


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a = spd(n=4)
    g = RNG.standard_normal((4, 4))

    def both(fn_tg, fn_torch, x):
        xt = t64(x, True)
        fn_tg(xt).backward(t64(g) if fn_tg(xt).ndim == 2 else None)
        xr = torch.tensor(x, requires_grad=True)
        out = fn_torch(xr)
        out.backward(torch.tensor(g) if out.ndim == 2 else None)
        np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-8, atol=1e-10)

    both(tg.linalg.cholesky, torch.linalg.cholesky, a)
    both(tg.linalg.inv, torch.linalg.inv, a)
    both(lambda x: tg.linalg.det(x), lambda x: torch.linalg.det(x), a)
    both(lambda x: tg.linalg.eigh(x).eigenvalues.sum() * 1.0, lambda x: torch.linalg.eigh(x).eigenvalues.sum(), a)

    def proj_tg(x):
        w, V = tg.linalg.eigh(x)
        return (V * w.unsqueeze(-2)) @ V.transpose(-2, -1) @ V[..., :1] @ V[..., :1].transpose(-2, -1)

    def proj_torch(x):
        w, V = torch.linalg.eigh(x)
        return (V * w.unsqueeze(-2)) @ V.mT @ V[..., :1] @ V[..., :1].mT

    both(proj_tg, proj_torch, a)
    r = RNG.standard_normal((4, 4))
    both(lambda x: tg.linalg.qr(x).R, lambda x: torch.linalg.qr(x).R, r)
    both(lambda x: tg.linalg.svdvals(x).sum() * 1.0, lambda x: torch.linalg.svdvals(x).sum(), r)


TORCH_CASES = {
    # name: (tapegrad function, torch function name path, input shapes)
    "solve": (lambda a, b: tg.linalg.solve(a, b), lambda t, a, b: t.linalg.solve(a, b), [(3, 3), (3, 2)]),
    "slogdet": (lambda a: tg.linalg.slogdet(a).logabsdet, lambda t, a: t.linalg.slogdet(a).logabsdet, [(3, 3)]),
    "qr_Q": (lambda a: tg.linalg.qr(a).Q, lambda t, a: t.linalg.qr(a).Q, [(4, 3)]),
    "qr_wide": (lambda a: tg.linalg.qr(a).R, lambda t, a: t.linalg.qr(a).R, [(2, 4)]),
    "svd_uv": (lambda a: (lambda r: r.U @ r.Vh)(tg.linalg.svd(a, full_matrices=False)),
               lambda t, a: (lambda r: r.U @ r.Vh)(t.linalg.svd(a, full_matrices=False)), [(4, 3)]),
    "pinv": (lambda a: tg.linalg.pinv(a), lambda t, a: t.linalg.pinv(a), [(4, 3)]),
    "lstsq": (lambda a, b: tg.linalg.lstsq(a, b).solution, lambda t, a, b: t.linalg.lstsq(a, b).solution,
              [(4, 3), (4, 2)]),
    "nuc": (lambda a: tg.linalg.matrix_norm(a, "nuc"), lambda t, a: t.linalg.matrix_norm(a, "nuc"), [(3, 4)]),
    "norm2": (lambda a: tg.linalg.matrix_norm(a, 2), lambda t, a: t.linalg.matrix_norm(a, 2), [(3, 4)]),
    "cdist": (lambda a, b: tg.cdist(a, b), lambda t, a, b: t.cdist(a, b), [(3, 2), (4, 2)]),
    "cdist_p1": (lambda a, b: tg.cdist(a, b, p=1.0), lambda t, a, b: t.cdist(a, b, p=1.0), [(3, 2), (4, 2)]),
    "einsum": (lambda a, b: tg.einsum("ij,kj->ik", a, b), lambda t, a, b: t.einsum("ij,kj->ik", a, b),
               [(3, 2), (4, 2)]),
    "kron": (lambda a, b: tg.kron(a, b), lambda t, a, b: t.kron(a, b), [(2, 3), (2, 2)]),
    "matrix_power": (lambda a: tg.linalg.matrix_power(a, -2), lambda t, a: t.linalg.matrix_power(a, -2),
                     [(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn_tg, fn_torch, shapes = TORCH_CASES[name]
    arrays = [RNG.standard_normal(s) + (2 * np.eye(s[0]) if s[0] == s[1] else 0) for s in shapes]
    xs = [t64(a, True) for a in arrays]
    rs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn_tg(*xs), fn_torch(torch, *rs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-8, atol=1e-10)
    g = RNG.standard_normal(tuple(ref.shape))
    out.backward(t64(g))
    ref.backward(torch.tensor(g))
    for x, r in zip(xs, rs):
        np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_tensor_methods_are_the_functions():
    m = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    v, w = RNG.standard_normal(3), RNG.standard_normal(3)
    M, V, W = t64(m), t64(v), t64(w)
    np.testing.assert_allclose(V.dot(W).numpy(), v @ w)
    np.testing.assert_allclose(V.outer(W).numpy(), np.outer(v, w))
    np.testing.assert_allclose(M.mv(V).numpy(), m @ v)
    np.testing.assert_allclose(M.addmm(M, M, alpha=2).numpy(), m + 2 * m @ m)
    np.testing.assert_allclose(V.cross(W).numpy(), np.cross(v, w))
    np.testing.assert_allclose(M.kron(M).numpy(), np.kron(m, m))
    np.testing.assert_allclose(M.det().numpy(), np.linalg.det(m))
    np.testing.assert_allclose(M.inverse().numpy(), np.linalg.inv(m), rtol=1e-12)
    np.testing.assert_allclose(M.matrix_power(3).numpy(), np.linalg.matrix_power(m, 3), rtol=1e-12)
    np.testing.assert_allclose(M.norm().numpy(), np.linalg.norm(m))
    np.testing.assert_allclose(M.norm(p=1, dim=1).numpy(), np.abs(m).sum(1))
    np.testing.assert_allclose(M.norm(p="nuc").numpy(), np.linalg.norm(m, "nuc"))


def test_vector_norm_of_a_nan_is_nan_with_and_without_grad():
    # found by the differential test: the zero-safe root treated NaN as zero when grad was required
    for requires_grad in (False, True):
        x = tg.tensor([1.0, float("nan")], dtype=tg.float64, requires_grad=requires_grad)
        assert np.isnan(x.norm().item()) and np.isnan(tg.linalg.vector_norm(x, keepdim=True).item())
