"""Memory held by Python custom functions: saved outputs must not keep their graph alive through a
reference cycle (measured with the cycle collector off), and values saved on ctx live exactly as long
as the graph that needs them.
"""

import gc
import os
import weakref

import numpy as np
import pytest

import tapegrad as tg

N = 1 << 20  # 4 MB of float32
ITERATIONS = 300
MAX_GROWTH = 200 * 2**20


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def gc_off():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class ExpSavesOutput(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class ExpKeepsOutputOnCtx(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.out


class ExpSavesOutputByName(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.saved_variables.out


@pytest.mark.parametrize("fn", [ExpSavesOutput, ExpKeepsOutputOnCtx, ExpSavesOutputByName])
def test_saved_output_does_not_leak(fn, gc_off):
    x = tg.zeros(N, requires_grad=True)
    # warm up the allocator and caches before the baseline
    for _ in range(3):
        fn.apply(x).sum().backward()
    x.grad = None
    before = resident_bytes()
    for i in range(ITERATIONS):
        y = fn.apply(x)
        if i % 2:
            y.sum().backward()  # half the graphs are used, half only dropped
        del y
    growth = resident_bytes() - before
    assert growth < MAX_GROWTH, f"resident memory grew by {growth / 2**20:.0f} MB over {ITERATIONS} calls"
    # and the gradient is still right: d exp(x)/dx at 0 is 1, accumulated 150 times
    np.testing.assert_allclose(x.grad.numpy()[:4], [ITERATIONS // 2] * 4)


class ScaleInPlaceSavingIt(tg.Function):
    """Marks its input dirty and saves it: the saved tensor is now an output of the node."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        assert y.shape == grad.shape
        return grad * 2


def test_saved_dirty_input_does_not_leak(gc_off):
    x = tg.zeros(N, requires_grad=True)
    for _ in range(3):
        ScaleInPlaceSavingIt.apply(x * 1).sum().backward()
    x.grad = None
    before = resident_bytes()
    for i in range(ITERATIONS):
        y = ScaleInPlaceSavingIt.apply(x * 1)
        if i % 2:
            y.sum().backward()
        del y
    growth = resident_bytes() - before
    assert growth < MAX_GROWTH, f"resident memory grew by {growth / 2**20:.0f} MB over {ITERATIONS} calls"
    np.testing.assert_allclose(x.grad.numpy()[:4], [2 * (ITERATIONS // 2)] * 4)


class Payload:
    """A Python object whose lifetime is observed through a weak reference."""


class SavesObjects(tg.Function):
    @staticmethod
    def forward(ctx, x, positional, named, attribute):
        ctx.save_for_backward(x, positional, named=named)
        ctx.attribute = attribute
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x, positional) = ctx.saved_tensors
        assert isinstance(positional, Payload) and isinstance(ctx.saved_variables.named, Payload)
        assert isinstance(ctx.attribute, Payload)
        return grad * 2, None, None, None


def make_payloads():
    objs = [Payload(), Payload(), Payload()]
    return objs, [weakref.ref(o) for o in objs]


def test_ctx_values_die_with_the_output(gc_off):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    objs, refs = make_payloads()
    y = SavesObjects.apply(x, *objs)
    del objs
    assert all(r() is not None for r in refs)
    del y
    assert [r() for r in refs] == [None, None, None]


def test_saved_values_die_after_backward(gc_off):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    objs, refs = make_payloads()
    y = SavesObjects.apply(x, *objs)
    del objs
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    # backward frees the saved values; the free attribute lives with the node, as in PyTorch
    assert refs[0]() is None and refs[1]() is None
    assert refs[2]() is not None
    del y
    assert refs[2]() is None


def test_saved_values_survive_backward_with_retain_graph(gc_off):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    objs, refs = make_payloads()
    y = SavesObjects.apply(x, *objs).sum()
    del objs
    y.backward(retain_graph=True)
    assert all(r() is not None for r in refs)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    assert refs[0]() is None and refs[1]() is None
    del y
    assert refs[2]() is None


def test_values_die_with_a_graph_dropped_deep_inside(gc_off):
    # the custom node is an interior node of a longer graph; dropping the final output frees it
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    objs, refs = make_payloads()
    z = (SavesObjects.apply(x * 3, *objs).sin() * 2).sum()
    del objs
    assert all(r() is not None for r in refs)
    del z
    assert [r() for r in refs] == [None, None, None]


def test_custom_gradient_closure_values_die_with_the_output(gc_off):
    box = [Payload()]
    ref = weakref.ref(box[0])

    @tg.custom_gradient
    def scaled(x):
        kept = box[0]

        def grad(up):
            assert kept is not None
            return up * 5

        return x * 5, grad

    x = tg.tensor([1.0], requires_grad=True)
    y = scaled(x)
    box.clear()
    assert ref() is not None
    y.backward()
    assert x.grad.tolist() == [5.0]
    del y
    assert ref() is None
