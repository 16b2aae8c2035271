"""``@tg.custom_gradient`` as TensorFlow defines it (API.md §3.4): the decorated function runs with
history kept on the caller's tensors, so ``grad_fn`` may use them differentiably; positional
arguments are the differentiable inputs (numbers and NumPy arrays among them become tensors),
keyword arguments pass through; ``grad_fn`` returns exactly one gradient per tensor argument.

Oracles: derivatives worked out by hand (stated beside each test) and TensorFlow's own test.
"""

import numpy as np
import pytest

import tapegrad as tg


def f64(data, requires_grad=False):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


def test_tensorflow_override_second_order_with_custom_gradient():
    """TensorFlow's gradients_test.py::testOverrideSecondOrderWithCustomGradient, in tapegrad.

    f(x) = x + 10 whose derivative is declared to be g(x), where g(x) = -1.1 is itself a
    custom_gradient function whose derivative is declared to be -2.1. With d = f(c)**4 at c = 1
    (f(c) = 11):
      dd/dc   = 4 f^3 g                        = 4 * 1331 * -1.1                 = -5856.4
      d2d/dc2 = 12 f^2 f' g + 4 f^3 g'          = 12 * 121 * 1.21 + 4 * 1331 * -2.1
                                                = 1756.92 - 11180.4             = -9423.48
    The second term needs grad_fn's use of x to be differentiable: with x detached it is lost and
    the result is 1756.92.
    """

    @tg.custom_gradient
    def f(x):
        def first_order_grad(dz):
            @tg.custom_gradient
            def first_order_custom(unused_x):
                def h(ddz):
                    return -2.1 * ddz

                return -1.1, h

            return dz * first_order_custom(x)

        return x + 10.0, first_order_grad

    c = tg.tensor(1.0, requires_grad=True)
    d = f(c) ** 4.0
    (dd,) = tg.autograd.grad(d, c, create_graph=True)
    np.testing.assert_allclose(dd.item(), 4 * 11.0**3 * -1.1, rtol=1e-6)
    (ddd,) = tg.autograd.grad(dd, c)
    np.testing.assert_allclose(ddd.item(), -9423.48, rtol=1e-6)


def test_second_derivative_through_grad_fn():
    """cube(x) = x**3 with grad dy * 3 x**2: d/dx = 3 x**2, d2/dx2 = 6 x, d3/dx3 = 6 (JAX's
    grad(grad(f)) of a custom_vjp function)."""

    @tg.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3 * x**2

        return x**3, grad

    X = np.array([-1.5, 0.5, 2.0])
    x = f64(X, requires_grad=True)
    (g1,) = tg.autograd.grad(cube(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g1.detach().numpy(), 3 * X**2)
    (g2,) = tg.autograd.grad(g1.sum(), x, create_graph=True)
    np.testing.assert_allclose(g2.detach().numpy(), 6 * X)
    (g3,) = tg.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), np.full(3, 6.0))


def test_body_runs_in_the_callers_grad_mode():
    seen = []

    @tg.custom_gradient
    def f(x):
        seen.append(tg.is_grad_enabled())
        return x * 2, lambda g: g * 2

    x = f64([1.0], requires_grad=True)
    assert f(x).grad_fn.name() == "fBackward"
    with tg.no_grad():
        y = f(x)
    assert not y.requires_grad and y.grad_fn is None
    assert seen == [True, False]


def test_output_gets_its_gradient_from_grad_fn_only():
    """The forward's own history is cut: the declared derivative (7) wins over the real one (2)."""

    @tg.custom_gradient
    def f(x):
        return x * 2, lambda g: g * 7

    x = f64([1.0, -2.0], requires_grad=True)
    f(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])


@pytest.mark.parametrize("returned", [1, 3])
def test_wrong_number_of_gradients_is_refused(returned):
    @tg.custom_gradient
    def two_args(a, b):
        return a * b, lambda g: (g * b,) * returned

    y = two_args(f64([1.0], requires_grad=True), f64([2.0], requires_grad=True))
    with pytest.raises(RuntimeError, match=f"two_args: grad_fn returned {returned} gradients?, expected 2"):
        y.backward()


def test_single_argument_extra_gradient_is_refused():
    @tg.custom_gradient
    def one_arg(a):
        return a * 2, lambda g: (g * 2, g)

    y = one_arg(f64([1.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="one_arg: grad_fn returned 2 gradients, expected 1"):
        y.backward()


def test_one_gradient_as_a_list_or_a_tensor():
    """TensorFlow's own tests return ``[4 * dy]``; a bare tensor is accepted too."""

    @tg.custom_gradient
    def as_list(x):
        return x * x, lambda dy: [4 * dy]

    @tg.custom_gradient
    def as_tensor(x):
        return x * x, lambda dy: 4 * dy

    for fn in (as_list, as_tensor):
        x = f64(1.0, requires_grad=True)
        fn(x).backward()
        assert x.grad.item() == 4.0


def test_numbers_and_arrays_become_tensors():
    got = []

    @tg.custom_gradient
    def f(a, b, c):
        got.extend((a, b, c))

        def grad(dy):
            return dy * b * c, dy * a * c, None

        return a * b * c, grad

    a = f64([2.0, 3.0], requires_grad=True)
    y = f(a, np.array([5.0, 7.0]), 4)
    assert all(isinstance(t, tg.Tensor) for t in got)
    np.testing.assert_array_equal(got[1].numpy(), [5.0, 7.0])
    assert got[1].dtype == tg.float64 and got[2].dtype == tg.int64 and got[2].item() == 4
    np.testing.assert_array_equal(y.detach().numpy(), [40.0, 84.0])
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [20.0, 28.0])


def test_number_output_becomes_a_tensor():
    @tg.custom_gradient
    def constant(x):
        return -1.1, lambda g: -2.1 * g

    x = tg.tensor(1.0, requires_grad=True)
    y = constant(x)
    assert isinstance(y, tg.Tensor) and y.grad_fn.name() == "constantBackward"
    np.testing.assert_allclose(y.item(), -1.1, rtol=1e-6)
    y.backward()
    np.testing.assert_allclose(x.grad.item(), -2.1, rtol=1e-6)


def test_varargs_are_spread():
    """f(*xs) = prod(xs): d/dxs[i] = prod of the others."""

    @tg.custom_gradient
    def prod(*xs):
        assert len(xs) == 3 and all(isinstance(t, tg.Tensor) for t in xs)
        a, b, c = xs

        def grad(dy):
            return dy * b * c, dy * a * c, dy * a * b

        return a * b * c, grad

    xs = [f64([v], requires_grad=True) for v in (2.0, 3.0, 5.0)]
    prod(*xs).backward()
    assert [t.grad.item() for t in xs] == [15.0, 10.0, 6.0]


def test_varargs_gradient_errors_name_the_item():
    @tg.custom_gradient
    def bad(*xs):
        return xs[0] + xs[1], lambda g: (g, tg.ones(7, dtype=tg.float64))

    y = bad(f64([1.0, 2.0], requires_grad=True), f64([1.0, 2.0], requires_grad=True))
    with pytest.raises(RuntimeError, match=r"argument 'xs\[1\]'"):
        y.sum().backward()


def test_keyword_arguments_pass_through():
    """A keyword argument reaches the function untouched (a number stays a number), is no input,
    and wants no gradient, as in TensorFlow."""

    @tg.custom_gradient
    def scaled(x, *, scale, shift=0.0):
        assert isinstance(scale, float) and isinstance(shift, tg.Tensor)
        return x * scale + shift, lambda g: g * scale

    x = f64([1.0, 2.0], requires_grad=True)
    shift = f64([1.0, 1.0], requires_grad=True)
    y = scaled(x, scale=3.0, shift=shift)
    np.testing.assert_array_equal(y.detach().numpy(), [4.0, 7.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert shift.grad is None


def test_list_output_stays_a_list():
    @tg.custom_gradient
    def pair(x):
        return [x * 2, x * 3], lambda g2, g3: g2 * 2 + g3 * 3

    x = f64([1.0], requires_grad=True)
    out = pair(x)
    assert isinstance(out, list) and all(o.grad_fn is not None for o in out)
    (out[0] + out[1]).backward()
    assert x.grad.item() == 5.0
