"""PyTorch's `test_autograd.py` tests of `increment_version` and of `var_mean`'s gradient
(TestAutograd, part 1), carried over. Oracle: the version counter's count; var and mean computed
apart (the gradient of the same expression through separate operations) and NumPy."""

import numpy as np

import tapegrad as tg
from tapegrad.autograd.graph import increment_version


# covers: test_autograd.py::TestAutograd::test_increment_version
def test_increment_version():
    a = tg.rand(5, requires_grad=True)
    v = a._version
    increment_version(a)
    assert a._version == v + 1

    a = tg.zeros(5, dtype=tg.int64)  # tapegrad has no int32 (PyTorch uses torch.int)
    v = a._version
    increment_version(a)
    assert a._version == v + 1

    with tg.inference_mode():
        a = tg.rand(5, requires_grad=True)
        increment_version(a)  # allowed on an inference tensor inside inference mode ...
    increment_version(a)  # ... and outside it


# covers: test_autograd.py::TestAutograd::test_var_mean_differentiable
def test_var_mean_differentiable():
    data = np.random.default_rng(0).standard_normal((3, 4, 5, 6, 2, 3))
    dim = [2, 4]
    a = tg.tensor(data, requires_grad=True)
    b = tg.tensor(data, requires_grad=True)
    var1, mean1 = tg.var_mean(a, dim=dim, keepdim=False)
    var2 = b.var(dim=dim, keepdim=False)
    mean2 = b.mean(dim=dim, keepdim=False)
    grad = tg.tensor(np.random.default_rng(1).standard_normal((3, 4, 6, 3)))
    r1 = var1 * var1 * mean1 * mean1
    r2 = var2 * var2 * mean2 * mean2
    np.testing.assert_allclose(r1.detach().numpy(), r2.detach().numpy(), rtol=1e-10)
    want_var = data.var(axis=(2, 4), ddof=1)
    want_mean = data.mean(axis=(2, 4))
    np.testing.assert_allclose(r1.detach().numpy(), want_var**2 * want_mean**2, rtol=1e-10)
    tg.autograd.backward(r1, grad)
    tg.autograd.backward(r2, grad)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


# covers: test_autograd.py::TestAutograd::test_custom_autograd_ac_early_stop
def test_custom_autograd_ac_early_stop():
    import gc
    import weakref

    from tapegrad.utils.checkpoint import checkpoint

    refs = []
    calls = []

    class Saves(tg.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.clone()
            ctx.save_for_backward(y)
            refs.append(weakref.ref(y))
            return y

        @staticmethod
        def backward(ctx, *grads):
            _ = ctx.saved_tensors
            calls.append(len(grads))
            return None

    inp = tg.randn(5, 5, requires_grad=True)

    def scope():
        out = checkpoint(Saves.apply, inp, use_reentrant=False)  # early stop is on by default
        out.sum().backward()

    gc.disable()
    try:
        scope()
        # the forward ran twice (the call and the recomputation), the backward once
        assert len(refs) == 2 and calls == [1]
        # nothing the recomputation saved outlives the backward
        assert all(r() is None for r in refs)
    finally:
        gc.enable()
