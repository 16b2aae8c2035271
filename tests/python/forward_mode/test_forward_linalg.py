"""Forward-mode rules of ``linalg.svd``, ``svdvals`` and ``qr`` against float64 central differences.

Singular vectors are defined up to a sign per pair, which the decomposition at ``A ± eps t`` may
choose differently, so the SVD is checked through quantities that do not depend on those signs: the
singular values, ``U diag(w) Uᵀ`` and ``Vᵀ diag(w) V`` for distinct weights ``w``, and the
reconstruction ``U diag(S) Vh`` (whose tangent is the input's). QR's factors are unique once ``R``'s
diagonal signs are fixed (Householder's choice is continuous for a generic matrix), so they are
compared directly."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD

EPS = 1e-6
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 3, 3)]


def _svd_invariants(A):
    U, S, Vh = tg.linalg.svd(A, full_matrices=False)
    k = S.shape[-1]
    w = tg.arange(1, k + 1, dtype=A.dtype)
    return [S, (U * w) @ U.mT, (Vh.mT * w) @ Vh, (U * S.unsqueeze(-2)) @ Vh, tg.linalg.svdvals(A)]


def _qr(A):
    return list(tg.linalg.qr(A))


def _check(f, shape, seed):
    rng = np.random.default_rng(seed)
    a, t = rng.standard_normal(shape), rng.standard_normal(shape)
    with fwAD.dual_level():
        outs = f(fwAD.make_dual(tg.tensor(a), tg.tensor(t)))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
    plus, minus = f(tg.tensor(a + EPS * t)), f(tg.tensor(a - EPS * t))
    for i, (tan, p, m) in enumerate(zip(tangents, plus, minus)):
        assert tan is not None, f"output {i} has no tangent"
        fd = (p.numpy() - m.numpy()) / (2 * EPS)
        np.testing.assert_allclose(tan.numpy(), fd, rtol=1e-6, atol=1e-7, err_msg=f"output {i}")
    return t, tangents


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("seed", [0, 1])
def test_svd_forward_rule(shape, seed):
    t, tangents = _check(_svd_invariants, shape, seed)
    np.testing.assert_allclose(tangents[3].numpy(), t, rtol=1e-9, atol=1e-10)  # d(U S Vh) = dA


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[-2] >= s[-1]] + [(3, 5)], ids=str)
@pytest.mark.parametrize("seed", [0, 1])
def test_qr_forward_rule(shape, seed):
    _check(_qr, shape, seed)


def test_svd_forward_rule_under_jvp_transform():
    # tg.func.jvp goes through the same rule
    rng = np.random.default_rng(3)
    a, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    _, ts = tg.func.jvp(tg.linalg.svdvals, (tg.tensor(a),), (tg.tensor(t),))
    fd = (np.linalg.svd(a + EPS * t, compute_uv=False) - np.linalg.svd(a - EPS * t, compute_uv=False)) / (2 * EPS)
    np.testing.assert_allclose(ts.numpy(), fd, rtol=1e-6, atol=1e-7)
