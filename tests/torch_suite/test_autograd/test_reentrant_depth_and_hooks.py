"""Reentrant backward (a backward started inside a custom backward or a hook) on the CPU: depth,
priority of the inner graph, gradient hooks that run their own backward, grad mode restored, and
hook closures that hold the graph; part 2 of PyTorch's ``test_autograd.py``.

Oracle: PyTorch 2.x's behaviour as its own tests assert it (call orders and counts), and closed forms
for the gradients.
"""

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import Function

_DEEP_REENTRANT = textwrap.dedent("""
    import tapegrad as tg

    class DeepReentrant(tg.Function):
        @staticmethod
        def forward(ctx, x):
            with tg.enable_grad():
                ctx.x = tg.tensor(x.detach().item(), requires_grad=True)
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            if ctx.x.item() < 0:
                return x
            with tg.enable_grad():
                DeepReentrant.apply(ctx.x).sum().backward()
            return x

    for start in ({start}, 200.0):
        v = tg.tensor(start, requires_grad=True)
        DeepReentrant.apply(v).sum().backward()
        assert v.grad.item() == 1.0, v.grad
    print("ok")
""")


# covers: test_autograd.py::TestAutograd::test_deep_reentrant
# Run in a child process: a reentrant backward handled by plain recursion would overflow the stack
# and take the interpreter down.
def test_deep_reentrant():
    proc = subprocess.run(
        [sys.executable, "-c", _DEEP_REENTRANT.format(start=2000.0)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


# covers: test_autograd.py::TestAutograd::test_reentrant_priority
def test_reentrant_priority():
    order = []

    class MyFunction(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    class Reentrant(Function):
        @staticmethod
        def forward(ctx, x):
            with tg.enable_grad():
                ctx.x = tg.tensor(x.detach().item(), requires_grad=True)
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            order.append("Reentrant")
            if ctx.x.item() < 0:
                return x
            with tg.enable_grad():
                Reentrant.apply(ctx.x).backward()
            return x

    a = MyFunction.apply(tg.tensor(6.0, requires_grad=True))
    b = Reentrant.apply(tg.tensor(9.0, requires_grad=True))
    v = a * b
    v.backward()
    # the whole reentrant chain runs before the other branch of the outer graph
    assert len(order) == 11
    assert order.count("Reentrant") == 10
    assert order[-1] == "MyFunction"


# covers: test_autograd.py::TestAutograd::test_reentrant_with_leaf_variable_hook
# PyTorch only checks that this runs; the value it gives is 4p + 2 (the hook puts back the incoming
# 2p into .grad and returns 2 + 2p, which is accumulated onto it).
def test_reentrant_with_leaf_variable_hook():
    p = np.array([0.5, 1.5, 2.0, -1.0], dtype=np.float32)
    param = tg.tensor(p, requires_grad=True)
    handle = None
    seen = {}

    def add_gradient_penalty_to_grad(grad):
        handle.remove()
        old_param_grad = grad
        param.grad = None
        with tg.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            out = ((g * 2) + new_param).sum()
            out.backward()
        seen["new_param_grad"] = new_param.grad.numpy()
        res = g.grad + grad
        param.grad = old_param_grad
        return res

    handle = param.register_hook(add_gradient_penalty_to_grad)
    (param * param).sum().backward()
    np.testing.assert_allclose(seen["new_param_grad"], np.ones(4))
    np.testing.assert_allclose(param.grad.numpy(), 4 * p + 2, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_reentrant_with_non_leaf_variable_hook
def test_reentrant_with_non_leaf_variable_hook():
    param = tg.rand(10, requires_grad=True)
    handle = None

    def manual_increase_gradient(grad):
        handle.remove()
        with tg.enable_grad():
            g = grad.detach().requires_grad_()
            out = ((g * 2) + 5).sum()
            out.backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    tmp.sum().backward()
    np.testing.assert_allclose(param.grad.numpy(), 6 * param.detach().numpy(), rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_grad_mode_restored_reentrant
@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_mode_restored_reentrant(create_graph):
    checks = []

    class MyFunction(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, go):
            original = tg.is_grad_enabled()
            with tg.enable_grad():
                checks.append(tg.is_grad_enabled())
                foo = tg.rand(*go.shape, requires_grad=True)
                (grad,) = tg.autograd.grad(foo**3, foo, grad_outputs=go)
                checks.append(tg.is_grad_enabled())
            checks.append(tg.is_grad_enabled() == original)
            checks.append(original == create_graph)
            return grad

    inp = tg.rand(3, requires_grad=True)
    MyFunction.apply(inp).sum().backward(create_graph=create_graph)
    assert checks == [True, True, True, True]


# covers: test_autograd.py::TestAutograd::test_hook_closure_cycle
# Left out: the variants with a hook on grad_fn (node hooks, issue 17).
@pytest.mark.parametrize("use_custom_function", [True, False])
def test_hook_closure_cycle(use_custom_function):
    class Function_(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Sentinel:
        pass

    count = [0]

    def scope():
        a = tg.tensor(1.0, requires_grad=True)
        b = Function_.apply(a) if use_custom_function else a.clone()
        grad_fn_b = b.grad_fn
        obj = Sentinel()

        def hook(*args):
            # the closure holds grad_fn_b (a cycle through the graph) and obj (to watch it)
            assert grad_fn_b is not None and obj is not None
            count[0] += 1

        b.register_hook(hook)
        c = b.clone()
        return c, weakref.ref(obj)

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        out, ref = scope()
        out.backward(retain_graph=True)
        gc.collect()
        # the collector must not have broken the hook's closure: it still runs
        out.backward(retain_graph=True)
        assert count[0] == 2
        assert ref() is not None
        del out
        gc.collect()
        assert ref() is None
    finally:
        if was_enabled:
            gc.enable()
