"""The two other spellings of a custom operation: ``tg.autograd_function`` (API.md §3.3, R torch)
and ``@tg.custom_gradient`` (§3.4, TensorFlow/Keras). Both end in ``Function.apply``.
"""

import numpy as np
import pytest
from oracles import check_grads

import tapegrad as tg


def f64(data, requires_grad=False):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


# --- autograd_function: the seed's examples, verbatim ------------------------------------------------


def forward(ctx, tensor, constant):
    ctx.save_for_backward(constant=constant)
    return tensor * constant


def backward(ctx, grad_output):
    return {"tensor": grad_output * ctx.saved_variables["constant"]}


mul_constant = tg.autograd_function(forward=forward, backward=backward)


def test_mul_constant_as_written_in_the_api():
    x = tg.tensor([1.0], requires_grad=True)
    mul_constant(x, 2).backward()
    assert repr(x.grad) == "tensor([2.])"


def test_mul_constant_against_finite_differences():
    check_grads(lambda t: mul_constant(t, -1.75), [np.array([[1.0, 2.0], [0.5, -3.0]])])
    check_grads(lambda t: mul_constant(constant=3.0, tensor=t), [np.array([0.25, 4.0])])


def linear_forward(ctx, input, weight, bias=None):
    ctx.save_for_backward(input=input, weight=weight, bias=bias)
    output = input.mm(weight.t())
    if bias is not None:
        output = output + bias.unsqueeze(0).expand_as(output)
    return output


def linear_backward(ctx, grad_output):
    s = ctx.saved_variables
    grads = {"input": None, "weight": None, "bias": None}
    if ctx.needs_input_grad.input:
        grads["input"] = grad_output.mm(s.weight)
    if ctx.needs_input_grad.weight:
        grads["weight"] = grad_output.t().mm(s.input)
    if s.bias is not None and ctx.needs_input_grad.bias:
        grads["bias"] = grad_output.sum(dim=0)
    return grads


linear = tg.autograd_function(forward=linear_forward, backward=linear_backward)


def test_linear_against_finite_differences(rng):
    check_grads(linear, [rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)])
    check_grads(lambda x, w: linear(x, w), [rng.standard_normal((4, 3)), rng.standard_normal((5, 3))])


def test_linear_bias_by_keyword_and_partial_needs(rng):
    X, W, B = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal(2)
    x, w, b = f64(X), f64(W, requires_grad=True), f64(B)
    out = linear(x, weight=w, bias=b)
    np.testing.assert_allclose(out.detach().numpy(), X @ W.T + B)
    G = rng.standard_normal((3, 2))
    out.backward(f64(G))
    np.testing.assert_allclose(w.grad.numpy(), G.T @ X)
    assert x.grad is None and b.grad is None


# --- autograd_function: behaves as a Function ------------------------------------------------------


def test_factory_result_behaves_as_a_function():
    assert callable(mul_constant)
    x = f64([1.0, 2.0], requires_grad=True)
    y = mul_constant.apply(x, 4.0)
    assert y.grad_fn.name().endswith("Backward")
    assert y.tolist() == [4.0, 8.0]
    with tg.no_grad():
        assert mul_constant(x, 2.0).grad_fn is None


def test_named_factory_gives_the_node_name():
    def square_forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    def square_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad

    square = tg.autograd_function(forward=square_forward, backward=square_backward, name="Square")
    y = square(f64([3.0], requires_grad=True))
    assert y.grad_fn.name() == "SquareBackward"
    check_grads(square, [np.array([-1.0, 0.5, 2.0])])


def test_lambdas_with_tuple_result():
    # y = a * b; dy/da = b, dy/db = a
    mul = tg.autograd_function(
        forward=lambda ctx, a, b: (ctx.save_for_backward(a, b), a * b)[1],
        backward=lambda ctx, g: (g * ctx.saved_tensors[1], g * ctx.saved_tensors[0]),
    )
    check_grads(mul, [np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])])


def test_lambda_factory_errors_name_the_function_and_parameter():
    bad = tg.autograd_function(
        forward=lambda ctx, tensor, constant: tensor * constant,
        backward=lambda ctx, g: {"tensor": g, "scale": g},
    )
    y = bad(f64([1.0], requires_grad=True), 2.0)
    with pytest.raises(RuntimeError, match="unknown argument 'scale'") as e:
        y.backward()
    assert "AutogradFunction" in str(e.value)


def test_factory_needs_callables():
    with pytest.raises(TypeError, match="callable"):
        tg.autograd_function(forward=forward, backward=None)


def test_factory_functions_see_ctx_like_a_class():
    got = {}

    def fwd(ctx, x, k):
        got["needs"] = tuple(ctx.needs_input_grad)
        got["grad_enabled"] = tg.is_grad_enabled()
        ctx.k = k
        return x * k, "note"

    def bwd(ctx, g, g_note):
        got["g_note"] = g_note
        return g * ctx.k, None

    f = tg.autograd_function(forward=fwd, backward=bwd)
    x = f64([1.0, 2.0], requires_grad=True)
    y, note = f(x, 5.0)
    assert note == "note"
    y.sum().backward()
    assert got == {"needs": (True, False), "grad_enabled": False, "g_note": None}
    assert x.grad.tolist() == [5.0, 5.0]


# --- custom_gradient ---------------------------------------------------------------------------------


@tg.custom_gradient
def log1pexp(x):
    e = x.exp()

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return (1 + e).log(), grad


def test_log1pexp_gradient_is_exactly_one_at_100():
    x = tg.tensor(100.0, requires_grad=True)
    y = log1pexp(x)
    y.backward()
    assert x.grad.item() == 1.0
    # the same math through the built-in operations overflows: exp(100) is inf in float32
    z = tg.tensor(100.0, requires_grad=True)
    (1 + z.exp()).log().backward()
    assert np.isnan(z.grad.item())


def test_log1pexp_against_finite_differences():
    X = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(log1pexp(f64(X)).numpy(), np.log1p(np.exp(X)))
    check_grads(log1pexp, [X])


def test_custom_gradient_node_and_name():
    y = log1pexp(f64([1.0], requires_grad=True))
    assert y.grad_fn.name() == "log1pexpBackward"
    assert log1pexp.__name__ == "log1pexp"


@tg.custom_gradient
def weighted_product(x, w, power=2):
    """Several tensor arguments and a non-tensor one: y = w * x ** power."""
    xp = x**power

    def grad(upstream):
        return upstream * w * power * x ** (power - 1), upstream * xp

    return w * xp, grad


def test_custom_gradient_several_tensor_arguments():
    rng = np.random.default_rng(3)
    check_grads(weighted_product, [rng.standard_normal(5), rng.standard_normal(5)])
    # a keyword argument passes through untouched and wants no gradient (TensorFlow's rule)
    check_grads(lambda x, w: weighted_product(x, w, power=3), [rng.standard_normal(5), rng.standard_normal(5)])
    # a positional number becomes a tensor argument, so this grad (two gradients for three) is refused
    y = weighted_product(f64([1.0], requires_grad=True), f64([2.0]), 3)
    with pytest.raises(RuntimeError, match="weighted_product: grad_fn returned 2 gradients, expected 3"):
        y.backward()


def test_custom_gradient_only_some_inputs_require_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, -1.0])
    weighted_product(x, w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, -4.0])
    assert w.grad is None


@tg.custom_gradient
def sin_cos(x):
    """Two outputs: grad takes one upstream gradient per output."""
    s, c = x.sin(), x.cos()

    def grad(ds, dc):
        return ds * c - dc * s

    return (s, c), grad


def test_custom_gradient_several_outputs():
    X = np.array([0.3, -1.0, 2.5])
    s, c = sin_cos(f64(X))
    np.testing.assert_allclose(s.numpy(), np.sin(X))
    np.testing.assert_allclose(c.numpy(), np.cos(X))

    def f(t):
        s, c = sin_cos(t)
        return s * 2 + c * c

    check_grads(f, [X])

    # using one output only: the other upstream gradient arrives as zeros
    x = f64(X, requires_grad=True)
    sin_cos(x)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(X))


@tg.custom_gradient
def mixed(a, scale, b, op):
    """Tensors around a number (converted to a tensor, as TensorFlow does) and a string (passed
    through): grad returns one gradient per tensor argument, the number's included."""
    assert isinstance(scale, tg.Tensor) and op == "mul"

    def grad(up):
        return up * scale * b, None, up * scale * a

    return a * b * scale, grad


def test_custom_gradient_converts_numbers_and_skips_other_arguments():
    rng = np.random.default_rng(4)
    check_grads(lambda a, b: mixed(a, 1.5, b, "mul"), [rng.standard_normal(3), rng.standard_normal(3)])
    check_grads(lambda a, b: mixed(a, np.float64(-0.5), b, "mul"), [rng.standard_normal(3), rng.standard_normal(3)])


def test_custom_gradient_must_return_a_grad_function():
    @tg.custom_gradient
    def no_grad_fn(x):
        return x * 2, "not callable"

    with pytest.raises(TypeError, match="no_grad_fn must return \\(output, grad_fn\\)"):
        no_grad_fn(f64([1.0], requires_grad=True))


def test_custom_gradient_wrong_gradient_names_the_function():
    @tg.custom_gradient
    def wrong_shape(x):
        return x * 2, lambda up: tg.ones(7, dtype=tg.float64)

    y = wrong_shape(f64([1.0, 2.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="wrong_shape") as e:
        y.sum().backward()
    assert "argument 'x'" in str(e.value)


def test_custom_gradient_exception_in_grad_reaches_caller():
    err = ValueError("from grad")

    @tg.custom_gradient
    def fails(x):
        def grad(up):
            raise err

        return x * 2, grad

    with pytest.raises(ValueError) as e:
        fails(f64([1.0], requires_grad=True)).backward()
    assert e.value is err
