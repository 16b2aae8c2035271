"""The seed's three examples: the two-layer network, `linear` and `mul_constant`."""

import importlib.util
import pathlib

import numpy as np
import pytest

import tapegrad as tg

ROOT = pathlib.Path(__file__).resolve().parents[3]


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_two_layer_net_loss_falls_five_orders():
    net = load_example("two_layer_net")
    logged = []
    losses = net.train(steps=500, log=lambda *a: logged.append(a))
    assert losses[0] / losses[-1] >= 1e5
    assert [step for step, _ in logged] == [1, 100, 200, 300, 400, 500]


def test_two_layer_net_matches_numpy_first_step():
    """The first step's gradient equals the same math done in NumPy."""
    net = load_example("two_layer_net")
    tg.manual_seed(3)
    x = tg.randn(8, 20)
    y = tg.randn(8, 3)
    w1 = tg.randn(20, 6, requires_grad=True)
    w2 = tg.randn(6, 3, requires_grad=True)
    loss = (net.MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
    loss.backward()
    X, Y, W1, W2 = (t.detach().numpy().astype(np.float64) for t in (x, y, w1, w2))
    h = X @ W1
    r = np.maximum(h, 0)
    g = 2 * (r @ W2 - Y)
    gw2 = r.T @ g
    gw1 = X.T @ ((g @ W2.T) * (h > 0))
    np.testing.assert_allclose(w2.grad.numpy(), gw2, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(w1.grad.numpy(), gw1, rtol=1e-4, atol=1e-3)


def mul_constant_forward(ctx, tensor, constant):
    ctx.save_for_backward(constant=constant)
    return tensor * constant


def mul_constant_backward(ctx, grad_output):
    return {"tensor": grad_output * ctx.saved_variables["constant"]}


def test_mul_constant_seed():
    mul_constant = tg.autograd_function(forward=mul_constant_forward, backward=mul_constant_backward)
    x = tg.tensor([1.0], requires_grad=True)
    mul_constant(x, 2).backward()
    assert x.grad.tolist() == [2.0]


def test_mul_constant_with_lambdas():
    mul_constant = tg.autograd_function(
        forward=lambda ctx, tensor, constant: (ctx.save_for_backward(constant=constant), tensor * constant)[1],
        backward=lambda ctx, g: {"tensor": g * ctx.saved_variables.constant},
    )
    x = tg.tensor([1.0, -2.0], requires_grad=True)
    mul_constant(x, 3.5).sum().backward()
    assert x.grad.tolist() == [3.5, 3.5]


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


def test_linear_seed_against_numpy(rng):
    linear = tg.autograd_function(forward=linear_forward, backward=linear_backward)
    X, W, B = rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    x = tg.tensor(X, requires_grad=True)
    w = tg.tensor(W, requires_grad=True)
    b = tg.tensor(B, requires_grad=True)
    out = linear(x, w, b)
    np.testing.assert_allclose(out.detach().numpy(), X @ W.T + B)
    G = rng.standard_normal((5, 3))
    out.backward(tg.tensor(G))
    np.testing.assert_allclose(x.grad.numpy(), G @ W)
    np.testing.assert_allclose(w.grad.numpy(), G.T @ X)
    np.testing.assert_allclose(b.grad.numpy(), G.sum(0))


def test_linear_seed_without_bias(rng):
    linear = tg.autograd_function(forward=linear_forward, backward=linear_backward)
    x = tg.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    w = tg.tensor(rng.standard_normal((3, 4)))
    linear(x, w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 3)) @ w.numpy())
    assert w.grad is None


def test_two_layer_net_nn_follows_the_seed_loss_curve():
    """The nn/optim version, started from the seed's weights, sees the seed's losses."""
    seed_losses = load_example("two_layer_net").train(steps=60, log=lambda *a: None)
    nn_losses = load_example("two_layer_net_nn").train(steps=60, log=lambda *a: None)
    np.testing.assert_allclose(nn_losses, seed_losses, rtol=2e-4)
    assert nn_losses[0] / nn_losses[-1] > 10


def test_digits_mlp_with_a_custom_activation_learns():
    """A real data set shipped with scikit-learn; skipped when scikit-learn is absent (optional)."""
    pytest.importorskip("sklearn", reason="scikit-learn is optional: pip install '.[examples]'")
    digits = load_example("digits")
    lines = []
    accuracy = digits.train(epochs=20, log=lines.append)
    assert len(lines) == 20 and lines[-1].startswith("epoch 20")
    assert accuracy >= 0.95


def test_squareplus_gradient_is_its_derivative():
    digits = load_example("digits")
    x = tg.tensor(np.linspace(-3, 3, 13), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(digits.SquarePlus.apply, (x,))
