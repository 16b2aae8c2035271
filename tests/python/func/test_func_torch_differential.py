"""tg.func and tg.autograd.functional against torch.func and torch.autograd.functional on the same
float64 numbers: nested transforms (where level confusion would show), pytrees and argnums. Skipped
where PyTorch is not installed (CI does not install it)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as AF

torch = pytest.importorskip("torch", reason="the differential tests compare against PyTorch, which CI does not install")


def _np(v):
    if isinstance(v, dict):
        return {k: _np(u) for k, u in v.items()}
    if isinstance(v, (tuple, list)):
        return [_np(u) for u in v]
    return v.detach().numpy()


def _same(a, b):
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    else:
        np.testing.assert_allclose(a, b, atol=1e-10, rtol=1e-9)


# each case: a function of (F, lib, x, y) using only spellings both libraries share
CASES = {
    "vjp_of_vjp": lambda F, lib, x, y: F.vjp(lambda z: F.vjp(lib.sin, z)[1](z)[0], x)[1](y)[0],
    "grad_of_vjp": lambda F, lib, x, y: F.grad(lambda z: F.vjp(lib.sin, z)[1](z)[0].sum())(x),
    "jacfwd_jacrev": lambda F, lib, x, y: F.jacfwd(F.jacrev(lambda z: (z.sin() * z.roll(1, 0)).sum() ** 2))(x),
    "jacrev_jacfwd": lambda F, lib, x, y: F.jacrev(F.jacfwd(lambda z: (z.sin() * z.roll(1, 0)).sum() ** 2))(x),
    "jacrev_jacrev_vector": lambda F, lib, x, y: F.jacrev(F.jacrev(lambda z: z.exp() * z.sum()))(x),
    "hessian_argnums": lambda F, lib, x, y: F.hessian(lambda a, b: ((a * b).sin() ** 2).sum(), argnums=(0, 1))(x, y),
    "closure_grad": lambda F, lib, x, y: F.grad(lambda a: F.grad(lambda b: (a * b).sum())(a).sum())(x),
    "closure_grad2": lambda F, lib, x, y: F.grad(lambda a: (a * F.grad(lambda b: (a * b * b).sum())(a)).sum())(x),
    "jvp_of_grad": lambda F, lib, x, y: F.jvp(F.grad(lambda z: (z ** 3).sum()), (x,), (y,))[1],
    "grad_of_jvp": lambda F, lib, x, y: F.grad(lambda a: F.jvp(lambda z: (z.exp() * a).sum(), (a,), (y,))[1])(x),
    "jvp_of_jvp": lambda F, lib, x, y: F.jvp(lambda a: F.jvp(lambda b: (b ** 3 * a).sum(), (a,), (y,))[1], (x,), (y,))[1],
    "pytree_jacrev": lambda F, lib, x, y: F.jacrev(lambda d: {"s": (d["a"] * d["b"]).sum(), "p": d["a"].tanh()})(
        {"a": x, "b": y}),
    "pytree_jacfwd": lambda F, lib, x, y: F.jacfwd(lambda d: {"s": (d["a"] * d["b"]).sum(), "p": d["a"].tanh()})(
        {"a": x, "b": y}),
    "grad_and_value_aux": lambda F, lib, x, y: F.grad_and_value(lambda a, b: ((a * b).sum(), a.cos()), argnums=1,
                                                               has_aux=True)(x, y),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_func_matches_torch(name, fwd_impl):
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal(3), rng.standard_normal(3)
    ours = CASES[name](tg.func, tg, tg.tensor(xa), tg.tensor(ya))
    theirs = CASES[name](torch.func, torch, torch.tensor(xa), torch.tensor(ya))
    _same(_np(ours), _np(theirs))


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "jacobian_forward"])
def test_autograd_functional_matches_torch(name, fwd_impl):
    rng = np.random.default_rng(1)
    xa, ya = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))

    def run(lib, AFm):
        x, y = lib.tensor(xa), lib.tensor(ya)

        def f(a, b):
            return ((a * b).sin() ** 2).sum() + (a ** 3).sum()

        if name in ("vjp", "jvp", "hvp", "vhp"):
            return getattr(AFm, name)(f, (x, y), (y, x) if name != "vjp" else None)
        if name == "jacobian_forward":
            return AFm.jacobian(lambda a, b: (a * b).tanh(), (x, y), strategy="forward-mode", vectorize=True)
        return getattr(AFm, name)(f, (x, y))

    _same(_np(run(tg, AF)), _np(run(torch, torch.autograd.functional)))
