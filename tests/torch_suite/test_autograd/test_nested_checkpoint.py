"""PyTorch's TestNestedCheckpoint (`test_autograd.py`) and TestMultithreadAutograd's tests of
`register_multi_grad_hook`, carried over.

Oracle: the same function computed without checkpointing (gradients of any order must agree),
closed forms, counts of calls. A graph "dies" when the per-node metadata objects PyTorch's test
hangs on every node are freed once the result is gone.
"""

import collections
import threading
import weakref

import numpy as np
import pytest
from oracles import run_in_threads

import tapegrad as tg
from tapegrad.utils.checkpoint import checkpoint, set_checkpoint_early_stop


def grad(fn):
    def wrapper(x):
        with tg.enable_grad():
            out = fn(x)
            (g,) = tg.autograd.grad(out, inputs=(x,), create_graph=True)
        return g

    return wrapper


def total(fn):
    def wrapped(x):
        return fn(x).sum()

    return wrapped


def ckpt(fn):
    def wrapped(*args, **kwargs):
        return checkpoint(fn, *args, use_reentrant=False, **kwargs)

    return wrapped


def cases(fn):
    g, c = grad, ckpt
    return (
        (fn, (c(fn), c(c(fn)))),
        (g(fn), (g(c(fn)), g(c(c(fn))))),
        (g(g(fn)), (g(c(g(fn))), c(g(g(c(fn)))), g(c(g(c(fn)))))),
        (g(g(g(fn))), (g(c(g(g(c(fn))))), g(c(g(c(g(c(fn)))))))),
    )


def iter_graph(root):
    seen, q = {root}, collections.deque([root])
    while q:
        node = q.popleft()
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                q.append(nxt)
        yield node


class Handle:
    def __init__(self, name):
        self.name = name


def assert_graph_dies(fn):
    def scope():
        a = tg.tensor(0.7, requires_grad=True)
        out = fn(a)
        refs = []
        for node in iter_graph(out.grad_fn):
            h = Handle(node.name())
            refs.append(weakref.ref(h))
            node.metadata["blah"] = h
        return refs

    refs = scope()
    alive = [r().name for r in refs if r() is not None]
    assert alive == []


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint
def test_nested_checkpoint(early_stop):
    with set_checkpoint_early_stop(early_stop):
        x = tg.tensor(0.3, requires_grad=True)

        def f(x):
            return x.sin().exp().sin()

        def g(x):
            a = x.sin().exp().sin()
            b = x.sin().exp().sin()
            tg.autograd.grad(a, x)
            tg.autograd.grad(b, x)
            return x.sin()

        for fn in (f, g):
            for expected_fn, actual_fns in cases(fn):
                expected = expected_fn(x)
                for actual_fn in actual_fns:
                    np.testing.assert_allclose(actual_fn(x).item(), expected.item(), rtol=1e-6)
                    assert_graph_dies(actual_fn)


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_two_children
def test_nested_checkpoint_two_children(early_stop):
    with set_checkpoint_early_stop(early_stop):
        g_, s, c = grad, total, ckpt

        def f(x):
            return x.sin().exp().sin()

        def g(x):
            return x.cos().sin().exp()

        def hc(x):
            return c(g)(c(f)(x))

        def h(x):
            return g(f(x))

        a = tg.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
        expected = g_(s(g_(s(h))))(a)
        np.testing.assert_allclose(g_(s(g_(s(c(hc)))))(a).detach().numpy(), expected.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(g_(s(c(g_(s(c(hc))))))(a).detach().numpy(), expected.detach().numpy(),
                                   rtol=1e-10)
        assert_graph_dies(g_(c(hc)))
        assert_graph_dies(g_(s(g_(s(c(hc))))))
        assert_graph_dies(g_(s(c(g_(s(c(hc)))))))


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_non_tensor_inputs_and_outputs
def test_nested_checkpoint_non_tensor_inputs_and_outputs(early_stop):
    def fn(k, a, b, f):
        return f(k * a * b.exp()), 1, "abcd"

    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out, one, text = checkpoint(fn, 3, a, b, lambda x: x.sin(), use_reentrant=False)
    assert (one, text) == (1, "abcd")
    actual = tg.autograd.grad(out, (a, b))
    out, _, _ = fn(3, a, b, lambda x: x.sin())
    expected = tg.autograd.grad(out, (a, b))
    for x, y in zip(actual, expected):
        np.testing.assert_allclose(x.item(), y.item(), rtol=1e-6)


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_kwargs
def test_nested_checkpoint_kwargs(early_stop):
    def fn(a, blah=None):
        out = a.sin().exp()
        if blah is not None:
            out = out * blah
        return out.sin().exp()

    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        actual = tg.autograd.grad(checkpoint(fn, a, blah=b, use_reentrant=False), (a, b))
        expected = tg.autograd.grad(fn(a, blah=b), (a, b))
    for x, y in zip(actual, expected):
        np.testing.assert_allclose(x.item(), y.item(), rtol=1e-6)


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_same_graph
def test_nested_checkpoint_same_graph(early_stop):
    counter = [0]
    a = tg.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out = checkpoint(lambda t: t.sin().cos().sin(), a, use_reentrant=False)
    # The hook goes on the original graph, and backward runs on the original graph.
    out.grad_fn.next_functions[0][0].register_hook(lambda *args: counter.__setitem__(0, counter[0] + 1))
    out.backward()
    assert counter[0] == 1
    np.testing.assert_allclose(a.grad.item(), np.cos(np.cos(np.sin(1.0))) * -np.sin(np.sin(1.0)) * np.cos(1.0),
                               rtol=1e-6)


@pytest.mark.parametrize("early_stop", [True, False])
# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_reentrant_backwards
def test_nested_checkpoint_reentrant_backwards(early_stop):
    def fn(a):
        x = a.sin().cos()
        return x, x.sin()

    a = tg.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        x, out = checkpoint(fn, a, use_reentrant=False)
    # A backward inside a hook, over the part of the graph below the hook.
    out.grad_fn.register_hook(lambda *args: x.backward(retain_graph=True))
    out.backward(retain_graph=True)
    dx = -np.sin(np.sin(1.0)) * np.cos(1.0)
    np.testing.assert_allclose(a.grad.item(), dx + np.cos(np.cos(np.sin(1.0))) * dx, rtol=1e-6)


# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_set_early_stop
def test_nested_checkpoint_set_early_stop():
    counter = [0]

    def clone(x):
        counter[0] += 1
        return x.clone()

    def fn(x):
        return clone(x.sin().cos())  # clone saves nothing: not reached when recomputing with early stop

    def run(**kw):
        counter[0] = 0
        a = tg.tensor(1.0, requires_grad=True)
        out = checkpoint(fn, a, use_reentrant=False, **kw)
        return out, counter

    def count(make):
        out, c = make()
        out.backward()
        return c[0]

    assert count(lambda: run()) == 1
    assert count(lambda: run(early_stop=False)) == 2
    assert count(lambda: run(early_stop=True)) == 1

    def under(flag, **kw):
        with set_checkpoint_early_stop(flag):
            return run(**kw)

    assert count(lambda: under(False)) == 2
    assert count(lambda: under(True)) == 1

    def nested():
        with set_checkpoint_early_stop(False):
            with set_checkpoint_early_stop(True):
                return run(early_stop=False)

    # The innermost context wins, over the explicit argument too (PyTorch's precedence).
    assert count(nested) == 1
    assert count(lambda: under(False, early_stop=True)) == 2
    assert count(lambda: under(True, early_stop=False)) == 1


# covers: test_autograd.py::TestNestedCheckpoint::test_nested_checkpoint_set_early_stop_no_recompution_needed
def test_nested_checkpoint_set_early_stop_no_recomputation_needed():
    # The dispatch-mode count of sin calls is a torch internal; the Python-level counts are kept.
    counter = [0]

    def fn(x):
        counter[0] += 1
        return x.sin()

    for early_stop in (True, False):
        counter[0] = 0
        a = tg.tensor(1.0, requires_grad=True)
        with set_checkpoint_early_stop(early_stop):
            out = checkpoint(fn, a, use_reentrant=False)
        out.backward()
        assert counter[0] == 2
        np.testing.assert_allclose(a.grad.item(), np.cos(1.0), rtol=1e-6)

    def fn2(x):
        counter[0] += 1
        return x.clone()

    for early_stop in (True, False):
        counter[0] = 0
        a = tg.tensor(1.0, requires_grad=True)
        with set_checkpoint_early_stop(early_stop):
            out = checkpoint(fn2, a, use_reentrant=False)
        out.backward()
        assert counter[0] == 1  # nothing saved, nothing unpacked, nothing recomputed


def run_threads(fn, args, n=5):
    run_in_threads(fn, args, num_threads=n)


# covers: test_autograd.py::TestMultithreadAutograd::test_multi_grad_all_hooks
def test_multi_grad_all_hooks_threads():
    t1, t2, t3, t4 = (tg.rand(2, requires_grad=True) for _ in range(4))
    res, count = [None], [0]
    lock = threading.Lock()

    def hook(grads):
        with lock:
            count[0] += 1
            got = [g is not None for g in grads]
            if res[0] is None:
                res[0] = got
            else:
                assert res[0] == got

    handle = tg.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = (t2 * t3).sum()
    run_threads(lambda o: o.backward(inputs=(t2, t3), retain_graph=True), (out,))
    assert count[0] == 5 and res[0] == [False, True, True, False]

    # One backward fails: its hook call is lost, the others' are not.
    res[0], count[0] = None, 0
    errors, calls = [0], [0]

    class Func(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            with lock:
                calls[0] += 1
                if calls[0] == 1:
                    raise RuntimeError("error message")
            return g

    out = (Func.apply(t2) * t3).sum()

    def work(o):
        try:
            o.backward(inputs=(t2, t3), retain_graph=True)
        except RuntimeError:
            with lock:
                errors[0] += 1

    run_threads(work, (out,))
    assert (count[0], errors[0]) == (4, 1)
    assert res[0] == [False, True, True, False]
    handle.remove()


# covers: test_autograd.py::TestMultithreadAutograd::test_multi_grad_any_hooks
def test_multi_grad_any_hooks_threads():
    t1, t2, t3, t4 = (tg.rand(2, requires_grad=True) for _ in range(4))
    count = [0]
    lock = threading.Lock()

    def hook(g):
        with lock:
            count[0] += 1

    tg.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook, mode="any")
    out = (t2 * t3).sum()
    run_threads(lambda o: o.backward(inputs=(t2, t3), retain_graph=True), (out,))
    assert count[0] == 5

    count[0] = 0
    errors, calls = [0], [0]

    class Func(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            with lock:
                calls[0] += 1
                if calls[0] == 1:
                    raise RuntimeError("error message")
            return g

    out = (Func.apply(t2) * t3).sum()

    def work(o):
        try:
            o.backward(inputs=(t2, t3), retain_graph=True)
        except RuntimeError:
            with lock:
                errors[0] += 1

    run_threads(work, (out,))
    # The hook runs before the failing custom backward: five calls.
    assert (count[0], errors[0]) == (5, 1)
