"""tg.utils.checkpoint: both forms give the plain call's gradients and keep no saved tensors."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import saved_tensors_hooks
from tapegrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def block(w):
    return lambda t: (t.mm(w)).tanh()


def _setup(seed=0):
    rng = np.random.default_rng(seed)
    x = tg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    ws = [tg.tensor(rng.standard_normal((3, 3)), requires_grad=True) for _ in range(3)]
    return x, ws


def _grads(run):
    x, ws = _setup()
    out = run(x, ws)
    out.sum().backward()
    return [x.grad.numpy()] + [w.grad.numpy() for w in ws]


def _plain(x, ws):
    for w in ws:
        x = block(w)(x)
    return x


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gradients_equal_the_plain_ones(reentrant):
    def run(x, ws):
        for w in ws:
            x = checkpoint(block(w), x, use_reentrant=reentrant)
        return x

    for a, b in zip(_grads(run), _grads(_plain)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_checkpoint_gradients_against_central_differences():
    a = np.array([0.3, -0.7, 1.1])
    x = tg.tensor(a, requires_grad=True)

    def f(t):
        return (t.sin() * t.exp()).sum()

    checkpoint(f, x, use_reentrant=False).backward()
    eps = 1e-6
    fd = [((np.sin(a + eps * e) * np.exp(a + eps * e)).sum() - (np.sin(a - eps * e) * np.exp(a - eps * e)).sum())
          / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)


def test_non_reentrant_keeps_placeholders_and_recomputes_once():
    calls = []

    def f(t):
        calls.append(1)
        return t.exp().sin()

    x = tg.tensor([0.1, 0.2], requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    assert len(calls) == 1
    # The graph keeps no tensor: every saved slot went through the checkpoint's pack hook.
    info = y.grad_fn._saved_tensors_info
    assert len(info) == 1
    y.sum().backward()
    assert len(calls) == 2  # one recomputation for all saved tensors
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.exp([0.1, 0.2])) * np.exp([0.1, 0.2]), rtol=1e-6)


def test_kwargs_and_non_tensor_arguments():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t, k, scale=1.0: (t * k * scale).exp(), x, 2.0, use_reentrant=False, scale=0.5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t, x, use_reentrant=True, scale=0.5)


def test_use_reentrant_must_be_given_or_warns():
    x = tg.ones(1, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x).backward()
    assert x.grad.tolist() == [2.0]


def test_nested_checkpoints():
    def inner(t):
        return t.sin() * t

    def outer(t):
        return checkpoint(inner, t.exp(), use_reentrant=False).cos()

    a = np.array([0.2, -0.4])
    x = tg.tensor(a, requires_grad=True)
    checkpoint(outer, x, use_reentrant=False).sum().backward()
    u = np.exp(a)
    v = np.sin(u) * u
    expected = -np.sin(v) * (np.cos(u) * u + np.sin(u)) * u
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_nondeterministic_function_is_reported():
    n = [0]

    def f(t):
        n[0] += 1
        return t.exp().exp() if n[0] == 1 else t.exp()

    x = tg.ones(1, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different number of tensors was saved"):
        y.backward()

    n[0] = 0

    def g(t):
        n[0] += 1
        return t * t if n[0] == 1 else (t * t.expand(3)).sum(0, keepdim=True)

    y = checkpoint(g, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.sum().backward()


def test_recomputation_saving_more_tensors_is_accepted():
    # The recomputation's extra saves come after those backward needs (PyTorch stops early).
    n = [0]

    def f(t):
        n[0] += 1
        return t.exp() if n[0] == 1 else t.exp().exp()

    x = tg.tensor([0.5], requires_grad=True)
    checkpoint(f, x, use_reentrant=False).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5]), rtol=1e-6)


def test_checkpoint_under_no_grad_just_runs():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        y = checkpoint(lambda t: t * 3, x, use_reentrant=False)
    assert y.requires_grad is False and y.tolist() == [3.0, 3.0]


def test_checkpoint_inside_outer_hooks_only_packs_what_is_outside():
    packed = []
    x = tg.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        y = checkpoint(lambda t: t.exp(), x, use_reentrant=False) * x
    assert len(packed) == 2  # mul's two operands; exp's output went to the checkpoint
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(1.0) * (1 + 1.0) * np.ones(2), rtol=1e-6)  # d(x e^x)


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(reentrant, segments):
    def run(x, ws):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return checkpoint_sequential([block(w) for w in ws], segments, x, use_reentrant=reentrant)

    for a, b in zip(_grads(run), _grads(_plain)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("reentrant", [False, True])
def test_preserve_rng_state_recomputes_the_same_random_numbers(reentrant):
    def f(t):
        noise = tg.rand(3, dtype=tg.float64)  # a dropout-like random mask
        return (t * noise).exp().sum(), noise

    tg.manual_seed(7)
    x = tg.tensor([0.1, 0.2, 0.3], dtype=tg.float64, requires_grad=True)
    out, noise = checkpoint(f, x, use_reentrant=reentrant)
    after_forward = tg.rand(2, dtype=tg.float64).tolist()  # the caller's stream goes on
    out.backward()
    n = noise.detach().numpy()
    # The gradient uses the noise of the original run: d/dx exp(x n) = n exp(x n).
    np.testing.assert_allclose(x.grad.numpy(), n * np.exp(x.detach().numpy() * n), rtol=1e-12)
    # And the recomputation did not disturb the caller's random stream.
    tg.manual_seed(7)
    tg.rand(3, dtype=tg.float64)
    assert tg.rand(2, dtype=tg.float64).tolist() == after_forward
