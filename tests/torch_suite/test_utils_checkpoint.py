"""PyTorch's TestCheckpoint (`test/test_utils.py`), carried over.

`nn.Sequential` / `nn.Linear` / `nn.Dropout` are issue 16's, so the networks are lists of plain
callables over tapegrad operations (a linear layer is `x.mm(w) + b`; dropout is a random mask
drawn from tapegrad's generator). Oracle: the same network run without checkpointing (outputs
and the gradients of the input and of every parameter must be equal), closed forms, counts.
"""

import random

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.checkpoint import checkpoint, checkpoint_sequential


def arr(t):
    return np.asarray(t.detach().numpy())


def linear(n_in, n_out, rng):
    w = tg.tensor(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), requires_grad=True)
    b = tg.tensor(rng.standard_normal(n_out) * 0.1, requires_grad=True)
    return (lambda x: x.mm(w) + b), [w, b]


def mlp(rng):
    layers, params = [], []
    for n_in, n_out in ((100, 50), (50, 20), (20, 5)):
        f, p = linear(n_in, n_out, rng)
        layers += [f, lambda x: x.relu()]
        params += p
    return layers, params


def run_plain(layers, x):
    for f in layers:
        x = f(x)
    return x


def check_checkpoint_sequential(layers, params, chunks, inp, use_reentrant):
    out = run_plain(layers, inp)
    expected_out = arr(out)
    out.sum().backward()
    expected_grads = [arr(p.grad) for p in params]
    expected_in = arr(inp.grad)
    for p in params:
        p.grad = None
    detached = inp.detach()
    detached.requires_grad = True
    out = checkpoint_sequential(layers, chunks, detached, use_reentrant=use_reentrant)
    np.testing.assert_array_equal(arr(out), expected_out)
    out.sum().backward()
    np.testing.assert_array_equal(arr(detached.grad), expected_in)
    for p, g in zip(params, expected_grads):
        np.testing.assert_array_equal(arr(p.grad), g)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_trigger
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_trigger(use_reentrant):
    class Net:
        def __init__(self):
            self.counter = 0

        def __call__(self, x):
            self.counter += 1
            return x * tg.tensor(2.0)

    modules = [Net() for _ in range(10)]
    inp = tg.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    out = checkpoint_sequential(modules, 2, inp, use_reentrant=use_reentrant)
    assert [m.counter for m in modules] == [1] * 10
    out.sum().backward()
    # The first segment is recomputed; the last one is not checkpointed.
    assert [m.counter for m in modules] == [2] * 5 + [1] * 5
    np.testing.assert_allclose(arr(inp.grad), np.full((3, 4), 2.0 ** 10))


# covers: test_utils.py::TestCheckpoint::test_checkpoint_valid
def test_checkpoint_valid():
    layers, params = mlp(np.random.default_rng(1))
    inp = tg.tensor(np.random.default_rng(2).standard_normal((1, 100)), requires_grad=True)
    out = checkpoint_sequential(layers, 2, inp, use_reentrant=True)
    with pytest.raises(RuntimeError, match="checkpoint is incompatible"):
        tg.autograd.grad(outputs=[out], grad_outputs=[tg.ones(1, 5, dtype=tg.float64)], inputs=[inp],
                         create_graph=True)
    out = run_plain(layers, inp)
    (expected,) = tg.autograd.grad(outputs=[out], grad_outputs=[tg.ones(1, 5, dtype=tg.float64)], inputs=[inp],
                                   create_graph=True)
    out_ckpt = checkpoint_sequential(layers, 2, inp, use_reentrant=False)
    np.testing.assert_array_equal(arr(out_ckpt), arr(out))
    (got,) = tg.autograd.grad(outputs=[out_ckpt], grad_outputs=[tg.ones(1, 5, dtype=tg.float64)], inputs=[inp],
                              create_graph=True)
    np.testing.assert_array_equal(arr(got), arr(expected))


# covers: test_utils.py::TestCheckpoint::test_checkpoint
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint(use_reentrant):
    layers, params = mlp(np.random.default_rng(3))
    inp = tg.tensor(np.random.default_rng(4).standard_normal((1, 100)), requires_grad=True)
    check_checkpoint_sequential(layers, params, 2, inp, use_reentrant)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_module_list
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_module_list(use_reentrant):
    # An object with children() stands for nn.ModuleList.
    layers, params = mlp(np.random.default_rng(5))

    class ModuleList:
        def children(self):
            return iter(layers)

    inp = tg.tensor(np.random.default_rng(6).standard_normal((1, 100)), requires_grad=True)
    out = run_plain(layers, inp)
    out.sum().backward()
    expected = [arr(p.grad) for p in params]
    for p in params:
        p.grad = None
    out = checkpoint_sequential(ModuleList(), 2, inp.detach().requires_grad_(), use_reentrant=use_reentrant)
    out.sum().backward()
    for p, g in zip(params, expected):
        np.testing.assert_array_equal(arr(p.grad), g)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_sequential_deprecated_multiple_args
def test_checkpoint_sequential_deprecated_multiple_args():
    a = tg.ones(1, 3, requires_grad=True)
    b = tg.ones(1, 3, requires_grad=True)
    for use_reentrant in (True, False):
        with pytest.raises(TypeError):
            checkpoint_sequential([lambda x, y: (x, y)], 1, a, b, use_reentrant=use_reentrant)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_sequential_deprecated_no_args
def test_checkpoint_sequential_deprecated_no_args():
    for use_reentrant in (True, False):
        with pytest.raises(TypeError):
            checkpoint_sequential([lambda: None], 1, use_reentrant=use_reentrant)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_rng_cpu
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_rng_cpu(use_reentrant):
    def dropout(x):
        mask = (tg.rand(*x.shape, dtype=tg.float64) > 0.5) * 2.0
        return x * mask

    for seed in range(5):
        inp = tg.tensor(np.random.default_rng(seed).standard_normal(2000), requires_grad=True)
        tg.manual_seed(seed)
        out = checkpoint(dropout, dropout(inp), use_reentrant=use_reentrant)
        out.sum().backward()
        with_ckpt = arr(inp.grad)
        inp.grad = None
        tg.manual_seed(seed)
        dropout(dropout(inp)).sum().backward()
        np.testing.assert_array_equal(with_ckpt, arr(inp.grad))


# covers: test_utils.py::TestCheckpoint::test_checkpoint_non_tensor
def test_checkpoint_non_tensor():
    def run_fn(t1, t2):
        return t1 if t2 is None else t1 + t2

    inp = tg.tensor(np.random.default_rng(7).standard_normal((1, 100)), requires_grad=True)
    out = checkpoint(run_fn, inp, None, use_reentrant=True)
    out.sum().backward()
    np.testing.assert_array_equal(arr(inp.grad), np.ones((1, 100)))


def foo(t1, t2, scale, t3):
    t4 = t1 + t2 * t3
    t5 = t1 * t2 + t3
    t4 = t4 * scale  # PyTorch writes `t4 *= scale`, the same value
    t5 = t5 * scale
    return scale, t4, None, True, t5, "bar", t1


# covers: test_utils.py::TestCheckpoint::test_checkpoint_non_tensor_inputs_outputs
def test_checkpoint_non_tensor_inputs_outputs():
    rng = np.random.default_rng(8)
    t1 = tg.tensor(rng.random(10), requires_grad=True)
    t2 = tg.tensor(rng.random(10), requires_grad=True)
    t3 = tg.tensor(rng.random(10))
    scale = random.randint(1, 10)
    res = checkpoint(foo, t1, t2, scale, t3, use_reentrant=True)
    a1, a2, a3 = arr(t1), arr(t2), arr(t3)
    assert res[0] == scale and res[2] is None and res[3] is True and res[5] == "bar"
    np.testing.assert_allclose(arr(res[1]), (a1 + a2 * a3) * scale)
    np.testing.assert_allclose(arr(res[4]), (a1 * a2 + a3) * scale)
    np.testing.assert_array_equal(arr(res[6]), a1)
    res[1].sum().backward(retain_graph=True)
    res[4].sum().backward(retain_graph=True)
    res[6].sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        res[6].sum().backward()
    g1, g2 = arr(t1.grad), arr(t2.grad)
    t1.grad = None
    t2.grad = None
    res = foo(t1, t2, scale, t3)
    tg.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    np.testing.assert_allclose(arr(t1.grad), g1)
    np.testing.assert_allclose(arr(t2.grad), g2)


# covers: test_utils.py::TestCheckpoint::test_checkpoint_no_tensors
def test_checkpoint_no_tensors():
    t1, t2, t3 = random.random(), random.random(), random.random()
    scale = random.randint(0, 10)
    res = checkpoint(foo, t1, t2, scale, t3, use_reentrant=True)
    assert res[0] == scale
    assert res[1] == pytest.approx((t1 + t2 * t3) * scale)
    assert res[2] is None and res[3] is True
    assert res[4] == pytest.approx((t1 * t2 + t3) * scale)
    assert res[5] == "bar" and res[6] == t1


# covers: test_utils.py::TestCheckpoint::test_checkpoint_partial_grad
def test_checkpoint_partial_grad():
    # the second input only rides along: the first's gradient goes through
    x = tg.randn(1, 4, requires_grad=True)
    other = tg.randn(1, 4)
    out = checkpoint(lambda a, b: (a, b), x, other, use_reentrant=True)
    out[0].sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.ones((1, 4)))

    # the input that requires grad is not used: the recomputed output has no history
    x = tg.randn(1, 4)
    other = tg.randn(1, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"none of output has requires_grad=True, this checkpoint\(\) is not necessary"):
        out = checkpoint(lambda a, b: a, x, other, use_reentrant=True)
        out.sum().backward()
