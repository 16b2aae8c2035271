"""PyTorch's test/autograd/test_functional.py (TestAutogradFunctional), carried over to
``tg.autograd.functional``: the same behaviours and expected values, in our own code.

The originals run each test for plain tensors and for a LoggingTensor subclass; only the plain-tensor
case is carried (tapegrad has no tensor subclasses, see scope/functional.md). Tests parametrized over
``vectorize`` run both values (without vmap both loop). The forward-mode paths run once per forward
engine present (``forward_ad`` when the build has it, and the double-vjp construction).
Values are checked against closed forms, float64 central differences (gradcheck) or each other.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as AF
from tapegrad.autograd import gradcheck, gradgradcheck

VEC = pytest.mark.parametrize("vectorize", [True, False])


def np_(t):
    return t.detach().numpy()


def assert_close(a, b, atol=1e-6, rtol=1e-5):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_close(x, y, atol, rtol)
        return
    a = np_(a) if isinstance(a, tg.Tensor) else np.asarray(a)
    b = np_(b) if isinstance(b, tg.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


def same_struct(res, base):
    if isinstance(base, tg.Tensor):
        assert isinstance(res, tg.Tensor)
        assert tuple(res.shape) == tuple(base.shape)
    else:
        assert isinstance(base, tuple) and isinstance(res, tuple) and len(res) == len(base)
        for r, b in zip(res, base):
            assert isinstance(r, tg.Tensor) and isinstance(b, tg.Tensor)
            assert tuple(r.shape) == tuple(b.shape)


def interleaved_struct(res, base1, base2):
    # res[i][j] pairs base1[i] with base2[j]; a tensor base drops that level
    if isinstance(base1, tg.Tensor) and isinstance(base2, tg.Tensor):
        assert isinstance(res, tg.Tensor)
        assert tuple(res.shape) == tuple(base1.shape) + tuple(base2.shape)
    elif isinstance(base1, tuple) and isinstance(base2, tg.Tensor):
        assert isinstance(res, tuple) and len(res) == len(base1)
        for r, b1 in zip(res, base1):
            assert tuple(r.shape) == tuple(b1.shape) + tuple(base2.shape)
    elif isinstance(base1, tg.Tensor) and isinstance(base2, tuple):
        assert isinstance(res, tuple) and len(res) == len(base2)
        for r, b2 in zip(res, base2):
            assert tuple(r.shape) == tuple(base1.shape) + tuple(b2.shape)
    else:
        assert isinstance(res, tuple) and len(res) == len(base1)
        for r, b1 in zip(res, base1):
            assert isinstance(r, tuple) and len(r) == len(base2)
            for rr, b2 in zip(r, base2):
                assert tuple(rr.shape) == tuple(b1.shape) + tuple(b2.shape)


def detached_float(a):
    # a float tensor that requires grad but whose graph does not reach ``a``
    return a.long().float().requires_grad_().clone()


# --------------------------------------------------------------------------------------------- vjp


# covers: test_functional.py::TestAutogradFunctional::test_vjp_err_check
def test_vjp_err_check():
    def foo(a):
        return 3 * a.narrow(0, 0, 3)

    def bar(a):
        return 3 * a.narrow(0, 0, 3), "bar"

    inp = tg.rand(4)
    v = tg.ones(3)
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor"):
        AF.vjp(foo, (inp, 2), v)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to vjp must"):
        AF.vjp(bar, inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns"):
        AF.vjp(foo, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        AF.vjp(foo, inp, (tg.ones_like(inp), tg.ones_like(inp)))
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        AF.vjp(foo, inp, v[:2])
    res = AF.vjp(foo, inp, v)[1]
    same_struct(res, inp)
    assert_close(res, [3.0, 3.0, 3.0, 0.0])


# covers: test_functional.py::TestAutogradFunctional::test_vjp_err_check_strict
def test_vjp_err_check_strict():
    def foo(a):
        return a.detach()

    inp = tg.rand(4)
    v = tg.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        AF.vjp(foo, inp, v, strict=True)
    res = AF.vjp(foo, inp, v, strict=False)
    same_struct(res[1], inp)
    assert res[1].abs().sum().item() == 0.0

    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 0"):
        AF.vjp(detached_float, inp, v, strict=True)
    res = AF.vjp(detached_float, inp, v, strict=False)
    same_struct(res[1], inp)
    assert res[1].abs().sum().item() == 0.0

    def ident(a):
        return a.clone()

    inp.requires_grad_()
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is independent of input 0."):
        AF.vjp(ident, inp, v, create_graph=True, strict=True)
    res = AF.vjp(ident, inp, v, create_graph=True, strict=False)
    same_struct(res[1], inp)
    assert_close(res[1], v)


# covers: test_functional.py::TestAutogradFunctional::test_vjp_no_grad
def test_vjp_no_grad():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(4, 4)
    v = tg.ones(4)
    with tg.no_grad():
        res = AF.vjp(reducer, inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert_close(res[1], np.ones((4, 4)))

    inputs.requires_grad_()
    v.requires_grad_()
    with tg.no_grad():
        res = AF.vjp(reducer, inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert_close(res[1], np.ones((4, 4)))


# covers: test_functional.py::TestAutogradFunctional::test_vjp_output
def test_vjp_output():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(4, 4)
    v = tg.ones(4)
    res = AF.vjp(reducer, inputs, v)
    same_struct(res[1], inputs)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert_close(res[0], np_(inputs).sum(1))

    def adder(x, y):
        return 2 * x + 3 * y

    inputs = (tg.rand(2), tg.rand(2))
    v = tg.ones(2)
    out, vjp_val = AF.vjp(adder, inputs, v)
    same_struct(vjp_val, inputs)
    assert out.grad_fn is None and vjp_val[0].grad_fn is None and vjp_val[1].grad_fn is None
    assert_close(vjp_val, ([2.0, 2.0], [3.0, 3.0]))

    def adder2(x, y):
        return 2 * x + 3 * y, x + y

    inputs = (tg.rand(2), tg.rand(2))
    v = (tg.tensor([1.0, 0.0]), tg.tensor([1.0, 0.0]))
    out, vjp_val = AF.vjp(adder2, inputs, v)
    same_struct(vjp_val, inputs)
    assert out[0].grad_fn is None and out[1].grad_fn is None
    assert vjp_val[0].grad_fn is None and vjp_val[1].grad_fn is None
    assert_close(vjp_val, ([3.0, 0.0], [4.0, 0.0]))


# covers: test_functional.py::TestAutogradFunctional::test_vjp_scalar
def test_vjp_scalar():
    def reducer(x):
        return x.sum()

    inputs = tg.rand(4, 4)
    v = tg.ones([])
    res = AF.vjp(reducer, inputs, v)
    same_struct(res[0], v)
    same_struct(res[1], inputs)
    res = AF.vjp(reducer, inputs)
    same_struct(res[0], v)
    same_struct(res[1], inputs)
    assert_close(res[1], np.ones((4, 4)))

    def expander(x):
        return x.unsqueeze(0).repeat(4)

    inputs = tg.rand([])
    v = tg.ones(4)
    res = AF.vjp(expander, inputs, v)
    same_struct(res[0], v)
    same_struct(res[1], inputs)
    assert_close(res[1], 4.0)


# covers: test_functional.py::TestAutogradFunctional::test_vjp_create_graph
def test_vjp_create_graph():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(2, 2, dtype=tg.float64)
    v = tg.ones(2, dtype=tg.float64)
    inputs.requires_grad_()
    v.requires_grad_()
    res = AF.vjp(reducer, inputs, v, create_graph=True)
    same_struct(res[1], inputs)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    # (the original passes the captured `inputs`; PyTorch perturbs it in place, ours perturbs copies)
    assert gradcheck(lambda inp, v: AF.vjp(reducer, inp, v, create_graph=True), (inputs, v))
    assert gradgradcheck(lambda inp, v: AF.vjp(reducer, inp, v, create_graph=True), (inputs, v))

    def adder(x, y):
        return 2 * x + 3 * y, x * y

    inputs = (tg.rand(2, dtype=tg.float64, requires_grad=True), tg.rand(2, dtype=tg.float64, requires_grad=True))
    v = (tg.tensor([1.0, 0.0], dtype=tg.float64, requires_grad=True),
         tg.tensor([1.0, 0.0], dtype=tg.float64, requires_grad=True))
    assert gradcheck(lambda *a: AF.vjp(adder, a[:2], a[2:], create_graph=True)[1], inputs + v)
    assert gradgradcheck(lambda *a: AF.vjp(adder, a[:2], a[2:], create_graph=True)[1], inputs + v)

    def foo(*args):
        x, y = args[:2]
        v = args[2:]
        x = x.cos()
        val, grad = AF.vjp(adder, (x, y), v, create_graph=True)
        return val[0].exp() + val[1].exp() + grad[0].exp() + grad[1].exp() + x.exp() + y.exp()

    assert gradcheck(foo, inputs + v)
    assert gradgradcheck(foo, inputs + v)


# --------------------------------------------------------------------------------------------- jvp


# covers: test_functional.py::TestAutogradFunctional::test_jvp_err_check
def test_jvp_err_check():
    def foo(a):
        return 3 * a.narrow(0, 0, 3)

    def bar(a):
        return 3 * a.narrow(0, 0, 3), "bar"

    inp = tg.rand(4)
    v = tg.rand(4)
    with pytest.raises(TypeError, match="The inputs given to jvp must be either a Tensor"):
        AF.jvp(foo, (inp, 2), v)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to jvp must"):
        AF.jvp(bar, inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the user-provided function"):
        AF.jvp(foo, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        AF.jvp(foo, inp, (v, v))
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        AF.jvp(foo, inp, v[:2])
    res = AF.jvp(foo, inp, v)[1]
    same_struct(res, foo(inp))
    assert_close(res, 3 * np_(v)[:3])


# covers: test_functional.py::TestAutogradFunctional::test_jvp_err_check_strict
def test_jvp_err_check_strict():
    def foo(a):
        return a.detach()

    inp = tg.rand(4)
    v = tg.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        AF.jvp(foo, inp, v, strict=True)
    res = AF.jvp(foo, inp, v, strict=False)
    same_struct(res[1], res[0])
    assert res[1].abs().sum().item() == 0.0

    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 0"):
        AF.jvp(detached_float, inp, v, strict=True)
    res = AF.jvp(detached_float, inp, v, strict=False)
    same_struct(res[1], res[0])
    assert res[1].abs().sum().item() == 0.0

    def ident(a):
        return a.clone()

    inp.requires_grad_()
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is independent of input 0."):
        AF.jvp(ident, inp, v, create_graph=True, strict=True)
    res = AF.jvp(ident, inp, v, create_graph=True, strict=False)
    same_struct(res[1], inp)
    assert_close(res[1], v)


# covers: test_functional.py::TestAutogradFunctional::test_jvp_no_grad
def test_jvp_no_grad():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    with tg.no_grad():
        res = AF.jvp(reducer, inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert_close(res[1], [4.0] * 4)

    inputs.requires_grad_()
    v.requires_grad_()
    with tg.no_grad():
        res = AF.jvp(reducer, inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert_close(res[1], [4.0] * 4)


# covers: test_functional.py::TestAutogradFunctional::test_jvp_output
def test_jvp_output():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    res = AF.jvp(reducer, inputs, v)
    same_struct(res[1], res[0])
    assert res[0].grad_fn is None and res[1].grad_fn is None

    def adder(x, y):
        return 2 * x + 3 * y

    inputs = (tg.rand(2), tg.rand(2))
    v = (tg.ones(2), tg.ones(2))
    out, jvp_val = AF.jvp(adder, inputs, v)
    same_struct(jvp_val, out)
    assert out.grad_fn is None and jvp_val.grad_fn is None
    assert_close(jvp_val, [5.0, 5.0])

    def adder2(x, y):
        return 2 * x + 3 * y, x + y

    inputs = (tg.rand(2), tg.rand(2))
    v = (tg.tensor([1.0, 0.0]), tg.tensor([1.0, 0.0]))
    out, jvp_val = AF.jvp(adder2, inputs, v)
    same_struct(jvp_val, out)
    assert out[0].grad_fn is None and out[1].grad_fn is None
    assert jvp_val[0].grad_fn is None and jvp_val[1].grad_fn is None
    assert_close(jvp_val, ([5.0, 0.0], [2.0, 0.0]))


# covers: test_functional.py::TestAutogradFunctional::test_jvp_scalar
def test_jvp_scalar():
    def reducer(x):
        return x.sum()

    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    res = AF.jvp(reducer, inputs, v)
    same_struct(res[0], tg.zeros([]))
    same_struct(res[1], res[0])
    assert_close(res[1], 16.0)

    def expander(x):
        return x.unsqueeze(0).repeat(4)

    inputs = tg.rand([])
    v = tg.ones([])
    res = AF.jvp(expander, inputs, v)
    same_struct(res[0], tg.zeros(4))
    same_struct(res[1], res[0])
    res = AF.jvp(expander, inputs)
    same_struct(res[0], tg.zeros(4))
    same_struct(res[1], res[0])
    assert_close(res[1], [1.0] * 4)


# covers: test_functional.py::TestAutogradFunctional::test_jvp_create_graph
def test_jvp_create_graph():
    def reducer(x):
        return x.sum(dim=1)

    inputs = tg.rand(2, 2, dtype=tg.float64)
    v = tg.ones(2, 2, dtype=tg.float64)
    inputs.requires_grad_()
    v.requires_grad_()
    res = AF.jvp(reducer, inputs, v, create_graph=True)
    same_struct(res[1], res[0])
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert gradcheck(lambda inp, v: AF.jvp(reducer, inp, v, create_graph=True), (inputs, v))
    assert gradgradcheck(lambda inp, v: AF.jvp(reducer, inp, v, create_graph=True), (inputs, v))

    def adder(x, y):
        return 2 * x + 3 * y, x * y

    inputs = (tg.rand(2, dtype=tg.float64, requires_grad=True), tg.rand(2, dtype=tg.float64, requires_grad=True))
    v = (tg.tensor([1.0, 0.0], dtype=tg.float64, requires_grad=True),
         tg.tensor([1.0, 0.0], dtype=tg.float64, requires_grad=True))
    assert gradcheck(lambda *a: AF.jvp(adder, a[:2], a[2:], create_graph=True)[1], inputs + v)
    assert gradgradcheck(lambda *a: AF.jvp(adder, a[:2], a[2:], create_graph=True)[1], inputs + v)

    def foo(*args):
        x, y = args[:2]
        v = args[2:]
        x = x.cos()
        val, grad = AF.jvp(adder, (x, y), v, create_graph=True)
        return val[0].exp() + val[1].exp() + grad[0].exp() + grad[1].exp() + x.exp() + y.exp()

    assert gradcheck(foo, inputs + v)
    assert gradgradcheck(foo, inputs + v)


# ---------------------------------------------------------------------------------------- jacobian


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_raises_no_warnings
# covers: test_functional.py::TestAutogradFunctional::test_hessian_vectorize_raises_no_warnings
@pytest.mark.parametrize("api", [AF.jacobian, AF.hessian])
def test_vectorize_raises_no_warnings(api, recwarn):
    x = tg.randn(3)
    res = api(lambda a: (a ** 2).sum(), x, vectorize=True)
    assert len(recwarn) == 0
    if api is AF.hessian:
        assert_close(res, 2 * np.eye(3))
    else:
        assert_close(res, 2 * np_(x))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_err_check
@VEC
def test_jacobian_err_check(vectorize):
    def foo(a):
        return 3 * a.narrow(0, 0, 3)

    def bar(a):
        return 3 * a.narrow(0, 0, 3), "bar"

    inp = tg.rand(4)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor"):
        AF.jacobian(foo, (inp, 2), vectorize=vectorize)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to jacobian must"):
        AF.jacobian(bar, inp, vectorize=vectorize)
    res = AF.jacobian(foo, inp, vectorize=vectorize)
    interleaved_struct(res, foo(inp), inp)
    assert_close(res, 3 * np.eye(4)[:3])

    def foo2(a, b):
        return b, 3 * a.narrow(0, 0, 3)

    inp = (tg.rand(4), tg.rand(5))
    res = AF.jacobian(foo2, inp, vectorize=vectorize)
    interleaved_struct(res, foo2(*inp), inp)
    assert_close(res[0][1], np.eye(5))
    assert_close(res[1][0], 3 * np.eye(4)[:3])


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_err_check_strict
def test_jacobian_err_check_strict():
    def foo(a):
        return a.detach()

    inp = tg.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        AF.jacobian(foo, inp, strict=True)
    res = AF.jacobian(foo, inp, strict=False)
    interleaved_struct(res, foo(inp), inp)
    assert res.abs().sum().item() == 0.0

    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 0."):
        AF.jacobian(detached_float, inp, strict=True)
    res = AF.jacobian(detached_float, inp, strict=False)
    interleaved_struct(res, foo(inp), inp)
    assert res.abs().sum().item() == 0.0

    def ident(a):
        return a.clone()

    inp.requires_grad_()
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is independent of input 0."):
        AF.jacobian(ident, inp, create_graph=True, strict=True)
    res = AF.jacobian(ident, inp, create_graph=True, strict=False)
    interleaved_struct(res, inp, inp)
    assert_close(res, np.eye(4))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_err_check_strict_vectorize
def test_jacobian_err_check_strict_vectorize():
    with pytest.raises(RuntimeError, match="not supported together"):
        AF.jacobian(lambda x: x, tg.rand(4), strict=True, vectorize=True)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_no_grad
def test_jacobian_no_grad():
    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = tg.rand(4, 4)
    expected = np.zeros((4, 4, 4))
    for i in range(4):
        expected[i, i, :] = np.exp(np_(inputs)[i])
    with tg.no_grad():
        res = AF.jacobian(exp_reducer, inputs)
    assert res.grad_fn is None
    assert_close(res, expected)
    with tg.no_grad():
        res = AF.jacobian(exp_reducer, inputs, create_graph=True)
    assert res.grad_fn is not None
    assert_close(res, expected)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_output
@VEC
def test_jacobian_output(vectorize):
    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = tg.rand(4, 4)
    res = AF.jacobian(exp_reducer, inputs, vectorize=vectorize)
    interleaved_struct(res, exp_reducer(inputs), inputs)
    assert res.grad_fn is None

    def identity(x):
        return x.clone()

    inputs = tg.rand(4)
    res = AF.jacobian(identity, inputs, vectorize=vectorize)
    interleaved_struct(res, identity(inputs), inputs)
    assert res.grad_fn is None
    assert_close(res, np.eye(4))

    def add_exp_reducer(x, y):
        return (x + y.exp()).sum(dim=1)

    inputs = (tg.rand(4, 4), tg.rand(4, 4))
    res = AF.jacobian(add_exp_reducer, inputs, vectorize=vectorize)
    interleaved_struct(res, add_exp_reducer(*inputs), inputs)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    expected_y = np.zeros((4, 4, 4))
    for i in range(4):
        expected_y[i, i, :] = np.exp(np_(inputs[1])[i])
    assert_close(res[1], expected_y)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_scalar
@VEC
def test_jacobian_scalar(vectorize):
    inputs = tg.rand(4, 4)
    res = AF.jacobian(lambda x: x.sum(), inputs, vectorize=vectorize)
    same_struct(res, inputs)
    assert_close(res, np.ones((4, 4)))

    inputs = tg.rand([])
    res = AF.jacobian(lambda x: x.unsqueeze(0).repeat(4), inputs, vectorize=vectorize)
    same_struct(res, tg.zeros(4))
    assert_close(res, np.ones(4))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_create_graph
@VEC
def test_jacobian_create_graph(vectorize):
    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = tg.rand(4, 4, dtype=tg.float64, requires_grad=True)
    res = AF.jacobian(exp_reducer, inputs, create_graph=True, vectorize=vectorize)
    interleaved_struct(res, exp_reducer(inputs), inputs)
    assert res.grad_fn is not None
    assert gradcheck(lambda inp: AF.jacobian(exp_reducer, inp, create_graph=True, vectorize=vectorize), inputs)
    assert gradgradcheck(lambda inp: AF.jacobian(exp_reducer, inp, create_graph=True, vectorize=vectorize), inputs)

    def add_exp_reducer(x, y):
        return (x + y).exp().sum(dim=1)

    inputs = (tg.rand(4, 4, dtype=tg.float64, requires_grad=True),
              tg.rand(4, 4, dtype=tg.float64, requires_grad=True))
    res = AF.jacobian(add_exp_reducer, inputs, create_graph=True, vectorize=vectorize)
    interleaved_struct(res, add_exp_reducer(*inputs), inputs)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert gradcheck(lambda *inp: AF.jacobian(add_exp_reducer, inp, create_graph=True, vectorize=vectorize), inputs)
    assert gradgradcheck(lambda *inp: AF.jacobian(add_exp_reducer, inp, create_graph=True, vectorize=vectorize),
                         inputs)

    def foo(x, y):
        x = x.cos()
        val, jac = AF.jacobian(add_exp_reducer, (x, y), create_graph=True, vectorize=vectorize)
        res = val[0].exp().sum() + val[1].exp().sum() + jac[0].exp().sum()
        return res + jac[1].exp().sum() + x.exp().sum() + y.exp().sum()

    assert gradcheck(foo, inputs)
    assert gradgradcheck(foo, inputs)


def check_jacobian_vectorize(f, inputs, test_forward_ad=True):
    expected = AF.jacobian(f, inputs, vectorize=False)
    assert_close(AF.jacobian(f, inputs, vectorize=True), expected)
    if test_forward_ad:
        assert_close(AF.jacobian(f, inputs, strategy="forward-mode", vectorize=True), expected)
    return expected


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_simple
def test_jacobian_vectorize_correctness_simple(fwd_impl):
    x = tg.randn(2, 3, 5)
    jac = check_jacobian_vectorize(lambda x: 3 * x ** 2, x)
    assert_close(jac.reshape(30, 30), np.diag(6 * np_(x).reshape(-1)), rtol=1e-5, atol=1e-5)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_multi_input
def test_jacobian_vectorize_correctness_multi_input(fwd_impl):
    def f(x, y):
        return (x.cos() * x) @ y.sin()

    x, y = tg.randn(2, 3), tg.randn(3, 5)
    jac = check_jacobian_vectorize(f, (x, y))
    # d out[i, k] / d y[j, l] = (x.cos() * x)[i, j] * cos(y[j, l]) when k == l
    a = np.cos(np_(x)) * np_(x)
    expected = np.einsum("ij,kl,jl->ikjl", a, np.eye(5), np.cos(np_(y)))
    assert_close(jac[1], expected, atol=1e-5)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_multi_input_multi_output
def test_jacobian_vectorize_correctness_multi_input_multi_output(fwd_impl):
    def f(x, y):
        return (x * x) @ y, x @ (x.sum(1) * y), y.sum()

    jac = check_jacobian_vectorize(f, (tg.randn(5, 3), tg.randn(3, 5)))
    assert_close(jac[2][1], np.ones((3, 5)))
    assert_close(jac[2][0], np.zeros((5, 3)))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_unrelated_outputs
def test_jacobian_vectorize_correctness_unrelated_outputs(fwd_impl):
    jac = check_jacobian_vectorize(lambda x, y: (x, y, x, y), (tg.randn(2), tg.randn(3)))
    assert_close(jac[0], (np.eye(2), np.zeros((2, 3))))
    assert_close(jac[3], (np.zeros((3, 2)), np.eye(3)))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_zero_dim
def test_jacobian_vectorize_correctness_zero_dim(fwd_impl):
    x, y = tg.randn(3), tg.randn(3)
    jac = check_jacobian_vectorize(lambda x, y: (x.sum(), y.sum(), x * y), (x, y))
    assert_close(jac[2][0], np.diag(np_(y)))

    x = tg.randn([])
    jac = check_jacobian_vectorize(lambda x: tg.stack([x, x, x]), x)
    assert_close(jac, np.ones(3))

    x, y = tg.randn([]), tg.randn(1)
    jac = check_jacobian_vectorize(lambda x, y: (y.sum(), x * y), (x, y))
    assert tuple(jac[0][0].shape) == () and tuple(jac[1][1].shape) == (1, 1)
    assert_close(jac[1][0], np_(y))


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_vectorize_correctness_different_dtype
def test_jacobian_vectorize_correctness_different_dtype():
    def f(x, y):
        return (x * y).float(), (x * y).double()

    x, y = tg.randn(3), tg.randn(3)
    jac = check_jacobian_vectorize(f, (x, y), test_forward_ad=False)
    # reverse mode: the Jacobian has the input's dtype
    assert jac[1][0].dtype == tg.float32
    assert_close(jac[1][0], np.diag(np_(y)))


def check_hessian_vectorize(f, inputs):
    expected = AF.hessian(f, inputs, vectorize=False)
    assert_close(AF.hessian(f, inputs, vectorize=True), expected)
    assert_close(AF.hessian(f, inputs, outer_jacobian_strategy="forward-mode", vectorize=True), expected, atol=1e-5)
    return expected


# covers: test_functional.py::TestAutogradFunctional::test_hessian_vectorize_correctness_simple
def test_hessian_vectorize_correctness_simple(fwd_impl):
    x = tg.randn(2, 3, 5)
    h = check_hessian_vectorize(lambda x: (3 * x ** 2).sum(), x)
    assert_close(h.reshape(30, 30), 6 * np.eye(30))


# covers: test_functional.py::TestAutogradFunctional::test_hessian_vectorize_correctness_multi_input
def test_hessian_vectorize_correctness_multi_input(fwd_impl):
    def f(x, y, z):
        return ((x.relu() * x) @ y.sin() @ z).sum()

    h = check_hessian_vectorize(f, (tg.randn(2, 3), tg.randn(3, 5), tg.randn(5, 5)))
    interleaved_struct(h, (tg.zeros(2, 3), tg.zeros(3, 5), tg.zeros(5, 5)),
                       (tg.zeros(2, 3), tg.zeros(3, 5), tg.zeros(5, 5)))
    # f is linear in z
    assert_close(h[2][2], np.zeros((5, 5, 5, 5)))


# covers: test_functional.py::TestAutogradFunctional::test_hessian_vectorize_correctness_unrelated_outputs
def test_hessian_vectorize_correctness_unrelated_outputs(fwd_impl):
    h = check_hessian_vectorize(lambda x, y: (x ** 2).sum(), (tg.randn(2), tg.randn(3)))
    assert_close(h[0][0], 2 * np.eye(2))
    assert_close(h[1][1], np.zeros((3, 3)))
    h = check_hessian_vectorize(lambda x, y: tg.ones([]), (tg.randn(2), tg.randn(3)))
    assert_close(h[0][1], np.zeros((2, 3)))


# ----------------------------------------------------------------------------------------- hessian


# covers: test_functional.py::TestAutogradFunctional::test_hessian_err_check
@VEC
def test_hessian_err_check(vectorize):
    def foo(a):
        return 3 * a.narrow(0, 0, 3).exp().sum()

    def bar(a):
        return 3 * a.narrow(0, 0, 3), "bar"

    def bar2(a):
        return 3 * a.narrow(0, 0, 3)

    def bar3(a):
        return 3 * a.narrow(0, 0, 3), 3 * a.narrow(0, 0, 3)

    inp = tg.rand(4)
    with pytest.raises(TypeError, match="The inputs given to hessian must be either a Tensor"):
        AF.hessian(foo, (inp, 2), vectorize=vectorize)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to hessian must"):
        AF.hessian(bar, inp, vectorize=vectorize)
    with pytest.raises(RuntimeError,
                       match="The Tensor returned by the function given to hessian should contain a single element"):
        AF.hessian(bar2, inp, vectorize=vectorize)
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
        AF.hessian(bar3, inp, vectorize=vectorize)
    res = AF.hessian(foo, inp, vectorize=vectorize)
    interleaved_struct(res, inp, inp)
    expected = np.zeros((4, 4))
    expected[:3, :3] = np.diag(3 * np.exp(np_(inp)[:3]))
    assert_close(res, expected)

    def foo2(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    inp = (tg.rand(4), tg.rand(5))
    res = AF.hessian(foo2, inp, vectorize=vectorize)
    interleaved_struct(res, inp, inp)
    cross = np.zeros((4, 5))
    cross[:3, :3] = 3 * np.eye(3)
    assert_close(res[0][1], cross)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_err_check_strict
def test_hessian_err_check_strict():
    def foo(a):
        return a.detach().sum()

    def bar(a):
        return detached_float(a).sum()

    def bar2(a):
        return (3 * a).sum()

    inp = tg.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        AF.hessian(foo, inp, strict=True)
    res = AF.hessian(foo, inp, strict=False)
    interleaved_struct(res, inp, inp)
    assert res.abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        AF.hessian(bar, inp, strict=True)
    res = AF.hessian(bar, inp, strict=False)
    interleaved_struct(res, inp, inp)
    assert res.abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is"):
        AF.hessian(bar2, inp, strict=True)
    res = AF.hessian(bar2, inp, strict=False)
    interleaved_struct(res, inp, inp)
    assert res.abs().sum().item() == 0.0


# covers: test_functional.py::TestAutogradFunctional::test_hessian_err_check_strict_vectorize
def test_hessian_err_check_strict_vectorize():
    with pytest.raises(RuntimeError, match="not supported together"):
        AF.hessian(lambda x: (x ** 3).sum(), tg.rand(4), strict=True, vectorize=True)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_no_grad
def test_hessian_no_grad():
    def pow_reducer(x):
        return x.pow(3).sum()

    inputs = tg.rand(2, 2)
    expected = np.diag(6 * np_(inputs).reshape(-1)).reshape(2, 2, 2, 2)
    with tg.no_grad():
        res = AF.hessian(pow_reducer, inputs)
    for i in range(2):
        for j in range(2):
            assert res[i][j].grad_fn is None
    assert_close(res, expected)
    with tg.no_grad():
        res = AF.hessian(pow_reducer, inputs, create_graph=True)
    for i in range(2):
        for j in range(2):
            assert res[i][j].grad_fn is not None
    assert_close(res, expected)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_output
@VEC
def test_hessian_output(vectorize):
    inputs = tg.rand(2, 2)
    res = AF.hessian(lambda x: x.pow(3).sum(), inputs, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)
    assert res.grad_fn is None
    assert_close(res, np.diag(6 * np_(inputs).reshape(-1)).reshape(2, 2, 2, 2))

    def add_pow_reducer(x, y):
        return (x + y).pow(3).sum()

    inputs = (tg.rand(2, 2), tg.rand(2, 2))
    res = AF.hessian(add_pow_reducer, inputs, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)
    for i in range(2):
        for j in range(2):
            assert res[i][j].grad_fn is None
    s = np_(inputs[0]) + np_(inputs[1])
    block = np.diag(6 * s.reshape(-1)).reshape(2, 2, 2, 2)
    assert_close(res[0][1], block)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_scalar
@VEC
def test_hessian_scalar(vectorize):
    def reducer(x):
        return x.sum()

    inputs = tg.rand(4, 4)
    res = AF.hessian(reducer, inputs, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)
    assert res.abs().sum().item() == 0.0
    inputs = tg.rand([])
    res = AF.hessian(reducer, inputs, vectorize=vectorize)
    same_struct(res, inputs)
    inputs = tg.rand(4, 4)
    res = AF.hessian(lambda x: x.sum().view(1, 1, 1), inputs, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_create_graph
@VEC
def test_hessian_create_graph(vectorize):
    def pow_reducer(x):
        return x.pow(3).sum()

    inputs = tg.rand(2, 2, dtype=tg.float64, requires_grad=True)
    res = AF.hessian(pow_reducer, inputs, create_graph=True, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)
    assert res.grad_fn is not None
    assert gradcheck(lambda inp: AF.hessian(pow_reducer, inp, create_graph=True, vectorize=vectorize), inputs)
    assert gradgradcheck(lambda inp: AF.hessian(pow_reducer, inp, create_graph=True, vectorize=vectorize), inputs)

    def add_pow_reducer(x, y):
        return (x + y).pow(3).sum()

    inputs = (tg.rand(2, 2, dtype=tg.float64, requires_grad=True),
              tg.rand(2, 2, dtype=tg.float64, requires_grad=True))
    res = AF.hessian(add_pow_reducer, inputs, create_graph=True, vectorize=vectorize)
    interleaved_struct(res, inputs, inputs)
    for i in range(2):
        for j in range(2):
            assert res[i][j].grad_fn is not None

    def flatten(inp):
        return tuple(b for row in inp for b in row)

    assert gradcheck(lambda *inp: flatten(AF.hessian(add_pow_reducer, inp, create_graph=True, vectorize=vectorize)),
                     inputs)
    assert gradgradcheck(
        lambda *inp: flatten(AF.hessian(add_pow_reducer, inp, create_graph=True, vectorize=vectorize)), inputs)

    def foo(x, y):
        x = x.cos()
        val, hess = AF.hessian(add_pow_reducer, (x, y), create_graph=True, vectorize=vectorize)
        res = val[0].cos().sum() + val[1].cos().sum() + hess[0].cos().sum()
        return res + hess[1].cos().sum() + x.cos().sum() + y.cos().sum()

    assert gradcheck(foo, inputs)
    assert gradgradcheck(foo, inputs)


# -------------------------------------------------------------------------------------- vhp and hvp


def _foo_exp3(a):
    return 3 * a.narrow(0, 0, 3).exp().sum()


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_err_check
# covers: test_functional.py::TestAutogradFunctional::test_hvp_err_check
def test_hessian_product_err_check(name):
    api = getattr(AF, name)

    def bar(a):
        return 3 * a.narrow(0, 0, 3), "bar"

    def bar2(a):
        return 3 * a.narrow(0, 0, 3)

    inp = tg.rand(4)
    v = tg.rand(4)
    api(_foo_exp3, inp, v)
    with pytest.raises(TypeError, match=f"The inputs given to {name} must be either a Tensor"):
        api(_foo_exp3, (inp, 2), v)
    with pytest.raises(TypeError, match=f"The outputs of the user-provided function given to {name} must"):
        api(bar, inp, v)
    with pytest.raises(RuntimeError,
                       match=f"The Tensor returned by the function given to {name} should contain a single element"):
        api(bar2, inp, v)
    with pytest.raises(RuntimeError, match="v has invalid size:"):
        api(_foo_exp3, inp, tg.rand(5))
    with pytest.raises(TypeError, match=f"The v given to {name} must be either a Tensor or a tuple of Tensors"):
        api(_foo_exp3, inp, (v, 2))
    res = api(_foo_exp3, inp, v)
    same_struct(res[1], inp)
    expected = np.zeros(4)
    expected[:3] = 3 * np.exp(np_(inp)[:3]) * np_(v)[:3]
    assert_close(res[1], expected)

    def foo(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    inp = (tg.rand(4), tg.rand(5))
    v = (tg.rand(4), tg.rand(5))
    res = api(foo, inp, v)
    same_struct(res[1], inp)
    ea = np.zeros(4)
    ea[:3] = 3 * np_(v[1])[:3]
    assert_close(res[1][0], ea)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_err_check_strict
# covers: test_functional.py::TestAutogradFunctional::test_hvp_err_check_strict
def test_hessian_product_err_check_strict(name):
    api = getattr(AF, name)
    inp = tg.rand(4)
    v = tg.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        api(lambda a: a.detach().sum(), inp, v, strict=True)
    res = api(lambda a: a.detach().sum(), inp, v, strict=False)
    same_struct(res[1], inp)
    assert res[1].abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 0"):
        api(lambda a: detached_float(a).sum(), inp, v, strict=True)
    res = api(lambda a: detached_float(a).sum(), inp, v, strict=False)
    same_struct(res[1], inp)
    assert res[1].abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is"):
        api(lambda a: (3 * a).sum(), inp, v, strict=True)
    res = api(lambda a: (3 * a).sum(), inp, v, strict=False)
    same_struct(res[1], inp)
    assert res[1].abs().sum().item() == 0.0


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_no_grad
# covers: test_functional.py::TestAutogradFunctional::test_hvp_no_grad
def test_hessian_product_no_grad(name):
    api = getattr(AF, name)
    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    with tg.no_grad():
        res = api(lambda x: x.exp().sum(), inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert_close(res[1], np.exp(np_(inputs)))
    with tg.no_grad():
        res = api(lambda x: x.exp().sum(), inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert_close(res[1], np.exp(np_(inputs)))


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_output
# covers: test_functional.py::TestAutogradFunctional::test_hvp_output
def test_hessian_product_output(name):
    api = getattr(AF, name)
    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    res = api(_foo_exp3, inputs, v)
    same_struct(res[1], inputs)
    assert res[0].grad_fn is None and res[1].grad_fn is None

    def bar(a, b):
        return (a + 3 * b.narrow(0, 0, 3)).exp().sum()

    inputs = (tg.rand(3), tg.rand(4))
    v = (tg.ones(3), tg.ones(4))
    out, val = api(bar, inputs, v)
    same_struct(val, inputs)
    assert out.grad_fn is None and val[0].grad_fn is None and val[1].grad_fn is None
    e = np.exp(np_(inputs[0]) + 3 * np_(inputs[1])[:3])
    # H v with v = ones: d/da = e * (1 + 3), d/db[:3] = 3 e (1 + 3)
    assert_close(val[0], 4 * e, rtol=1e-5)
    assert_close(val[1][:3], 12 * e, rtol=1e-5)
    assert_close(val[1][3], 0.0)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_scalar
# covers: test_functional.py::TestAutogradFunctional::test_hvp_scalar
def test_hessian_product_scalar(name):
    api = getattr(AF, name)

    def reducer(x):
        return x.exp().sum() if name == "hvp" else x.sum()

    inputs = tg.rand(4, 4)
    v = tg.ones(4, 4)
    res = api(reducer, inputs, v)
    same_struct(res[1], inputs)
    inputs = tg.rand([])
    v = tg.rand([])
    res = api(reducer, inputs, v)
    same_struct(res[1], inputs)
    res = api(reducer, inputs)
    same_struct(res[1], inputs)
    if name == "hvp":
        assert_close(res[1], np.exp(np_(inputs)))
    else:
        assert_close(res[1], 0.0)
    inputs = tg.rand(4, 4)
    v = tg.rand(4, 4)
    res = api(lambda x: reducer(x).view(1, 1, 1), inputs, v)
    same_struct(res[1], inputs)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
# covers: test_functional.py::TestAutogradFunctional::test_vhp_create_graph
# covers: test_functional.py::TestAutogradFunctional::test_hvp_create_graph
def test_hessian_product_create_graph(name):
    api = getattr(AF, name)
    inputs = tg.rand(4, 4, dtype=tg.float64, requires_grad=True)
    v = tg.ones(4, 4, dtype=tg.float64, requires_grad=True)
    res = api(_foo_exp3, inputs, v, create_graph=True)
    same_struct(res[1], inputs)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None
    assert gradcheck(lambda inp, v: api(_foo_exp3, inp, v, create_graph=True), (inputs, v))
    assert gradgradcheck(lambda inp, v: api(_foo_exp3, inp, v, create_graph=True), (inputs, v))

    def bar(a, b):
        return (a + 3 * b.narrow(0, 0, 3)).exp().sum()

    inputs = (tg.rand(3, dtype=tg.float64, requires_grad=True), tg.rand(4, dtype=tg.float64, requires_grad=True))
    v = (tg.ones(3, dtype=tg.float64, requires_grad=True), tg.ones(4, dtype=tg.float64, requires_grad=True))
    out, val = api(bar, inputs, v, create_graph=True)
    same_struct(val, inputs)
    assert out.grad_fn is not None and val[0].grad_fn is not None and val[1].grad_fn is not None
    assert gradcheck(lambda *a: api(bar, a[:2], a[2:], create_graph=True)[1], inputs + v)
    assert gradgradcheck(lambda *a: api(bar, a[:2], a[2:], create_graph=True)[1], inputs + v)

    def foo(*args):
        x, y = args[:2]
        v = args[2:]
        x = x.cos()
        val, grad = api(bar, (x, y), v, create_graph=True)
        return val.cos() + grad[0].cos().sum() + grad[1].cos() + x.cos().sum() + y.cos()

    assert gradcheck(foo, inputs + v)
    assert gradgradcheck(foo, inputs + v)


# covers: test_functional.py::TestAutogradFunctional::test_jacobian_match_vjp_jvp
def test_jacobian_match_vjp_jvp():
    def foo(x):
        return x ** 3 + x.sum()

    inputs = tg.rand(4)
    v = tg.rand(4)
    jac = AF.jacobian(foo, inputs)
    jvp = AF.jvp(foo, inputs, v)[1]
    vjp = AF.vjp(foo, inputs, v)[1]
    assert_close(jvp, tg.mm(jac, v.unsqueeze(1)).squeeze(1))
    assert_close(vjp, tg.mm(v.unsqueeze(0), jac).squeeze(0))
    assert_close(jac, np.diag(3 * np_(inputs) ** 2) + 1)


# covers: test_functional.py::TestAutogradFunctional::test_hessian_match_vhp_hvp
def test_hessian_match_vhp_hvp():
    inputs = tg.rand(4)
    v = tg.rand(4)
    hes = AF.hessian(_foo_exp3, inputs)
    hvp = AF.hvp(_foo_exp3, inputs, v)[1]
    vhp = AF.vhp(_foo_exp3, inputs, v)[1]
    assert_close(hvp, tg.mm(hes, v.unsqueeze(1)).squeeze(1))
    assert_close(vhp, tg.mm(v.unsqueeze(0), hes).squeeze(0))


# ------------------------------------------------------------------------------ forward-mode checks


def test_forward_mode_jacobian_needs_vectorize_and_refuses_strict_and_create_graph():
    # PyTorch's forward-mode Jacobian is only built with vectorize=True, refuses strict=True and
    # create_graph=True, and checks the strategy's spelling.
    x = tg.rand(3)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a * 2, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="not supported together"):
        AF.jacobian(lambda a: a * 2, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(NotImplementedError, match="not\\s+supported together"):
        AF.jacobian(lambda a: a * 2, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(AssertionError, match="Expected strategy to be either"):
        AF.jacobian(lambda a: a * 2, x, strategy="sideways")
    with pytest.raises(AssertionError, match="Expected strategy to be either"):
        AF.hessian(lambda a: a.sum(), x, outer_jacobian_strategy="sideways")


def test_forward_mode_jacobian_against_finite_differences(fwd_impl):
    # float64 central differences as the oracle for a function with several inputs and outputs
    rng = np.random.default_rng(3)
    xa, ya = rng.standard_normal((2, 3)), rng.standard_normal(3)

    def f(x, y):
        return (x * y).sin(), (x ** 2).sum(1) * y[:2].exp()

    x, y = tg.tensor(xa), tg.tensor(ya)
    jac = AF.jacobian(f, (x, y), strategy="forward-mode", vectorize=True)
    eps = 1e-6
    for j, base in enumerate((xa, ya)):
        for idx in np.ndindex(base.shape):
            plus = [xa.copy(), ya.copy()]
            minus = [xa.copy(), ya.copy()]
            plus[j][idx] += eps
            minus[j][idx] -= eps
            outs_p = f(*[tg.tensor(a) for a in plus])
            outs_m = f(*[tg.tensor(a) for a in minus])
            for i in range(2):
                col = (np_(outs_p[i]) - np_(outs_m[i])) / (2 * eps)
                got = np_(jac[i][j])[(Ellipsis,) + idx]
                np.testing.assert_allclose(got, col, atol=1e-6)


# covers: test_functional.py::TestAutogradFunctional::test_construct_standard_basis_for
def test_construct_standard_basis_for():
    cases = [
        (tg.randn(2, 3),),
        (tg.randn(1),),
        (tg.randn([]),),
        (tg.randn(1), tg.randn([]), tg.randn([])),
        (tg.randn(2), tg.randn(3), tg.randn([])),
        (tg.randn(2), tg.randn([]), tg.randn(3)),
        (tg.randn(2, 3), tg.randn(3), tg.randn(3, 4, 2)),
        (tg.randn(2, dtype=tg.float64), tg.randn(3, dtype=tg.float32)),
    ]
    for inputs in cases:
        numels = tuple(t.numel() for t in inputs)
        results = AF._construct_standard_basis_for(inputs, numels)
        for r, t in zip(results, inputs):
            assert r.dtype == t.dtype
        full = np.concatenate([np_(r).astype(np.float32) for r in results], axis=1)
        np.testing.assert_array_equal(full, np.eye(full.shape[0], dtype=np.float32))
