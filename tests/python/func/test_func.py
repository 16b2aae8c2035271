"""tg.func and tg.autograd.functional beyond the carried PyTorch suite: float64 central differences as
the oracle, parameters captured by the transformed function, results' history, the forward-engine
switch, pytrees and the docstring examples."""

import inspect

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import func
from tapegrad.autograd import functional as AF
from tapegrad.func._pytree import tree_flatten, tree_map, tree_unflatten


def fd_jacobian(f, xs, eps=1e-6):
    """Central differences of f (arrays -> array) with respect to each array in xs: a list of
    arrays shaped out.shape + x.shape."""
    out0 = np.asarray(f(*xs))
    jacs = []
    for j, x in enumerate(xs):
        jac = np.zeros(out0.shape + x.shape)
        for idx in np.ndindex(x.shape):
            plus = [a.copy() for a in xs]
            minus = [a.copy() for a in xs]
            plus[j][idx] += eps
            minus[j][idx] -= eps
            jac[(Ellipsis,) + idx] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)
        jacs.append(jac)
    return jacs


def _f(x, y):
    return (x.sin() * y[:, None]).tanh() + (x ** 2).sum() * y.sum()


def _f_np(x, y):
    return np.tanh(np.sin(x) * y[:, None]) + (x ** 2).sum() * y.sum()


@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobians_against_finite_differences(api, fwd_impl):
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal((3, 2)), rng.standard_normal(3)
    jx, jy = getattr(func, api)(_f, argnums=(0, 1))(tg.tensor(xa), tg.tensor(ya))
    ex, ey = fd_jacobian(_f_np, [xa, ya])
    np.testing.assert_allclose(jx.numpy(), ex, atol=1e-7)
    np.testing.assert_allclose(jy.numpy(), ey, atol=1e-7)
    assert jx.grad_fn is None and not jx.requires_grad


def test_hessian_against_finite_differences_of_the_gradient(fwd_impl):
    rng = np.random.default_rng(1)
    xa = rng.standard_normal(4)

    def f(x):
        return (x.exp() * x.roll(1, 0)).sum() + (x ** 3).prod()

    def grad_np(x):
        return func.grad(f)(tg.tensor(x)).numpy()

    h = func.hessian(f)(tg.tensor(xa))
    (expected,) = fd_jacobian(grad_np, [xa])
    np.testing.assert_allclose(h.numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), h.numpy().T, atol=1e-12)
    ha = AF.hessian(f, tg.tensor(xa), outer_jacobian_strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(ha.numpy(), expected, atol=1e-6)


def test_jvp_vjp_against_jacobian(fwd_impl):
    rng = np.random.default_rng(2)
    xa, ya, ta, sa = (rng.standard_normal(s) for s in ((3, 2), (3,), (3, 2), (3,)))
    x, y = tg.tensor(xa), tg.tensor(ya)
    ex, ey = fd_jacobian(_f_np, [xa, ya])
    _, t = func.jvp(_f, (x, y), (tg.tensor(ta), tg.tensor(sa)))
    expected_t = np.einsum("abij,ij->ab", ex, ta) + np.einsum("abi,i->ab", ey, sa)
    np.testing.assert_allclose(t.numpy(), expected_t, atol=1e-7)
    ct = rng.standard_normal((3, 2))
    _, vjp_fn = func.vjp(_f, x, y)
    gx, gy = vjp_fn(tg.tensor(ct))
    np.testing.assert_allclose(gx.numpy(), np.einsum("ab,abij->ij", ct, ex), atol=1e-7)
    np.testing.assert_allclose(gy.numpy(), np.einsum("ab,abi->i", ct, ey), atol=1e-7)
    out, t2 = AF.jvp(_f, (x, y), (tg.tensor(ta), tg.tensor(sa)))
    np.testing.assert_allclose(t2.numpy(), expected_t, atol=1e-7)


def test_captured_parameters_keep_their_gradient_path():
    # training through a transform's result: the parameters are captured, the input is not a leaf
    # that requires grad; the gradient must reach them as in PyTorch
    w = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    g = func.grad(lambda x: (w * x ** 2).sum())(x)
    np.testing.assert_allclose(g.detach().numpy(), 2 * w.detach().numpy() * x.numpy())
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy())  # d/dw sum(2 w x) = 2 x
    for api in (func.jacrev, func.jacfwd):
        w.grad = None
        jac = api(lambda x: w * x.sin())(x)
        jac.sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), np.cos(x.numpy()))
    w.grad = None
    _, t = func.jvp(lambda x: w * x ** 2, (x,), (tg.ones(3, dtype=tg.float64),))
    t.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy())
    # nothing captured: a plain result
    g = func.grad(lambda x: (x ** 3).sum())(x)
    assert g.grad_fn is None and not g.requires_grad
    with tg.no_grad():
        g = func.grad(lambda x: (w * x ** 2).sum())(x)
    assert g.grad_fn is None


def test_grad_composes_with_an_outer_backward_pass():
    xa = np.array([0.3, -0.7], dtype=np.float64)
    x = tg.tensor(xa, requires_grad=True)
    g = func.grad(lambda x: (x.sin() * x).sum())(x)  # sin x + x cos x
    (gg,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(xa) - xa * np.sin(xa))


def test_pytree_round_trip_and_none():
    from collections import namedtuple

    P = namedtuple("P", "a b")
    tree = {"x": (1, [2, None, P(3, {"k": 4})]), "y": 5}
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]
    assert tree_unflatten(leaves, spec) == tree
    assert tree_map(lambda v: v * 10, tree)["x"][1][2] == P(30, {"k": 40})
    assert tree_flatten((1,))[1] != tree_flatten([1])[1]


def test_grad_of_dict_argument_and_non_tensor_argnum():
    params = {"w": tg.tensor([1.0, 2.0]), "b": tg.tensor(0.5)}
    g = func.grad(lambda p, x: ((p["w"] * x).sum() + p["b"]) ** 2)(params, tg.tensor([3.0, 4.0]))
    s = 1 * 3 + 2 * 4 + 0.5
    np.testing.assert_allclose(g["w"].numpy(), [2 * s * 3, 2 * s * 4])
    np.testing.assert_allclose(g["b"].numpy(), 2 * s)
    with pytest.raises(ValueError, match="must be Tensor"):
        func.grad(lambda x, n: x * n, argnums=1)(tg.tensor(1.0), 3)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        func.grad(lambda x: x * 2)(tg.ones(2))


def test_forward_impl_switch(monkeypatch):
    monkeypatch.setattr(AF, "_FORWARD_IMPL", "double_vjp")
    assert AF._forward_ad() is None
    try:
        import tapegrad.autograd.forward_ad  # noqa: F401
    except ImportError:
        monkeypatch.setattr(AF, "_FORWARD_IMPL", "forward_ad")
        with pytest.raises(RuntimeError, match="forward_ad is not available"):
            func.jvp(tg.sin, (tg.ones(1),), (tg.ones(1),))
        monkeypatch.setattr(AF, "_FORWARD_IMPL", "auto")
        assert AF._forward_ad() is None


def test_vjp_fn_is_reusable_and_checks_shapes():
    x = tg.tensor([1.0, 2.0])
    out, vjp_fn = func.vjp(lambda x: x ** 2, x)
    for c in ([1.0, 0.0], [0.0, 1.0]):
        (g,) = vjp_fn(tg.tensor(c))
        np.testing.assert_allclose(g.numpy(), 2 * x.numpy() * np.array(c))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        vjp_fn(tg.ones(3))


def test_functional_call_restores_on_error():
    lin = tg.nn.Linear(2, 2)
    w = lin.weight
    with pytest.raises(RuntimeError):
        func.functional_call(lin, {"weight": tg.ones(3, 3)}, (tg.ones(1, 2),))
    assert lin.weight is w


@pytest.mark.parametrize("obj", [getattr(func, n) for n in func.__all__] + [getattr(AF, n) for n in AF.__all__],
                         ids=[f"func.{n}" for n in func.__all__] + [f"functional.{n}" for n in AF.__all__])
def test_public_functions_have_docstring_examples(obj):
    doc = inspect.getdoc(obj)
    assert doc and ">>> " in doc


def test_integer_outputs_and_inputs():
    x = tg.tensor([1.0, 2.0])
    # reverse mode refuses integer outputs, as PyTorch's; forward mode gives an integer zero Jacobian
    with pytest.raises(RuntimeError, match="must be floating-point"):
        func.jacrev(lambda a: (a > 0).long())(x)
    with pytest.raises(RuntimeError, match="must be floating-point"):
        func.vjp(lambda a: (a > 0).long(), x)
    jac = func.jacfwd(lambda a: (a > 0).long())(x)
    assert jac.dtype == tg.int64 and jac.abs().sum().item() == 0
    with pytest.raises(RuntimeError, match="floating point dtype can require gradients"):
        func.grad(lambda a: (a * 2).sum())(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="floating point dtype can require gradients"):
        AF.jacobian(lambda a: a * 2, tg.tensor([1, 2]))


def test_empty_inputs():
    assert tuple(func.jacrev(lambda a: a.sum() + 1)(tg.ones(0)).shape) == (0,)
    assert tuple(func.jacfwd(lambda a: a.sum() + 1)(tg.ones(0)).shape) == (0,)
    assert tuple(AF.jacobian(lambda a: a * 2, tg.ones(0)).shape) == (0, 0)
    assert tuple(func.grad(lambda a: a.sum())(tg.ones(0)).shape) == (0,)


def test_transforms_on_several_threads():
    # the nesting depth is per thread: transforms running at once on several threads keep their
    # own levels (a shared counter would make an outermost call keep or drop history wrongly)
    import threading

    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            xa = rng.standard_normal(3)
            x = tg.tensor(xa)
            for _ in range(20):
                h = func.hessian(lambda v: (v ** 3).sum())(x)
                np.testing.assert_allclose(h.numpy(), np.diag(6 * xa), atol=1e-10)
                g = func.grad(lambda v: (v.sin()).sum())(x)
                assert g.grad_fn is None
                np.testing.assert_allclose(g.numpy(), np.cos(xa), atol=1e-12)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert not errors, errors[0]


def test_exception_inside_transform_restores_state():
    def bad(x):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        func.grad(bad)(tg.ones(()))
    from tapegrad.func import _transforms

    assert _transforms._depth() == 0
    with tg.inference_mode():
        with pytest.raises(ValueError, match="boom"):
            func.grad(bad)(tg.ones(()))
        assert tg.is_inference_mode_enabled()
    # an outermost transform after the failure detaches again
    g = func.grad(lambda x: (x ** 2).sum())(tg.ones(2))
    assert g.grad_fn is None


def test_linearize_inside_grad_and_with_captured_parameters():
    x = tg.tensor([0.3, -0.4], dtype=tg.float64)
    t = tg.tensor([1.0, 2.0], dtype=tg.float64)
    _, jvp_fn = func.linearize(lambda v: v.sin(), x)
    # d/dt of sum(cos(x) * t) is cos(x): the jvp_fn is differentiated by an outer transform
    g = func.grad(lambda s: jvp_fn(s).sum())(t)
    np.testing.assert_allclose(g.numpy(), np.cos(x.numpy()))
    w = tg.tensor([2.0, 3.0], dtype=tg.float64, requires_grad=True)
    _, jvp_fn = func.linearize(lambda v: w * v ** 2, x)
    out = jvp_fn(t)
    np.testing.assert_allclose(out.detach().numpy(), 2 * w.detach().numpy() * x.numpy() * t.numpy())
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy() * t.numpy())


def test_results_built_on_another_transforms_closure_are_plain():
    # vjp_fn and jvp_fn hold graphs on the transforms' own leaves; a transform over them at the top
    # level still returns plain tensors (those leaves are nobody's parameters)
    x, y = tg.tensor(0.7, dtype=tg.float64), tg.tensor(1.3, dtype=tg.float64)
    _, vjp_fn = func.vjp(tg.sin, x)
    g = func.grad(lambda c: vjp_fn(c)[0])(y)
    assert g.grad_fn is None and not g.requires_grad
    np.testing.assert_allclose(g.numpy(), np.cos(0.7))
    _, jvp_fn = func.linearize(lambda v: v.sin() * v, x)
    g = func.grad(lambda s: jvp_fn(s))(y)
    assert g.grad_fn is None
    np.testing.assert_allclose(g.numpy(), np.cos(0.7) * 0.7 + np.sin(0.7))


def test_transforms_inside_a_dual_level_keep_the_callers_tangent():
    # d/dx0 of each transform's result, through a caller's forward_ad level: d/dx0 cos(x) = -sin(x0) e0
    fwad = pytest.importorskip("tapegrad.autograd.forward_ad")
    xa = np.array([0.5, 1.0, 2.0])
    e0 = tg.tensor([1.0, 0.0, 0.0], dtype=tg.float64)

    def f(v):
        return v.sin().sum()

    expected = np.array([-np.sin(xa[0]), 0.0, 0.0])
    with fwad.dual_level():
        a = fwad.make_dual(tg.tensor(xa), e0)
        out, t = func.jvp(f, (a,), (e0,))
        np.testing.assert_allclose(fwad.unpack_dual(t).tangent.numpy(), expected[0], rtol=1e-12)
        np.testing.assert_allclose(fwad.unpack_dual(out).tangent.numpy(), np.cos(xa[0]), rtol=1e-12)
        for g in (func.grad(f)(a), func.jacfwd(f)(a), func.jacrev(f)(a)):
            np.testing.assert_allclose(fwad.unpack_dual(g).tangent.numpy(), expected, rtol=1e-12, atol=1e-15)
