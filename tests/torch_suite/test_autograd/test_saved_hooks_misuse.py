"""PyTorch's `test_autograd.py` tests of saved-tensor hooks entered or exited at the wrong time
(TestAutograd), carried over. Oracle: the closed-form gradient of sin (cos), and the hooks' stack
being empty afterwards (entering `disable_saved_tensors_hooks` succeeds only then)."""

import gc
import weakref

import numpy as np

import tapegrad as tg
from tapegrad.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks


# covers: test_autograd.py::TestAutograd::test_saved_tensor_hooks_extra_exit_during_bw_no_crash
def test_saved_tensor_hooks_extra_exit_during_bw_no_crash():
    def unpack(x):
        outer.__exit__()  # unsupported use, must not crash
        return x

    outer = saved_tensors_hooks(lambda x: x, unpack)
    other = saved_tensors_hooks(lambda x: x, lambda x: x)
    for _ in range(10):
        with other:
            outer.__enter__()
            x = tg.randn(3, 3, requires_grad=True)
            x.sin().sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)
    for _ in range(10):
        outer.__exit__()  # more exits than enters
    # nothing is left on the stack: entering the disabling context is allowed only then
    with disable_saved_tensors_hooks("no hooks expected"):
        pass
    a = tg.tensor(1.0, requires_grad=True)
    a.exp().backward()
    np.testing.assert_allclose(a.grad.item(), np.e, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_saved_tensor_hooks_extra_enter_during_bw_no_leak
def test_saved_tensor_hooks_extra_enter_during_bw_no_leak():
    def scope():
        def unpack(x):
            weak_ctx().__enter__()  # unsupported use, must not keep the hooks alive
            return x

        ctx = saved_tensors_hooks(lambda x: x, unpack)
        weak_ctx = weakref.ref(ctx)
        x = tg.randn(3, 3, requires_grad=True)
        with ctx:
            x.sin().sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)
        return weakref.ref(unpack)

    gc.disable()
    try:
        ref = scope()
        assert ref() is None
    finally:
        gc.enable()


# covers: test_autograd.py::TestAutograd::test_saved_tensors_hook_version_counter_not_shared
def test_saved_tensors_hook_version_counter_not_shared():
    a = tg.tensor(1.0, requires_grad=True)
    replacement = a.clone()
    seen = []

    class Sin(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)  # the unpacked tensor is the pack hook's replacement, not a
            seen.append((a._version - before, x.item()))
            return g

    with saved_tensors_hooks(lambda x: replacement, lambda x: x):
        b = Sin.apply(a)
    b.backward()
    assert seen == [(0, 2.0)]
    assert a.item() == 1.0 and a.grad.item() == 1.0
