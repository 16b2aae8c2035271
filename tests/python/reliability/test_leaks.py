"""Memory comes back: a long training loop stays flat, and dropping a graph frees it at once.

Resident memory is read from /proc/self/statm. Tensors of a megabyte or more are mapped and unmapped
by the allocator directly, so freeing one shows in RSS immediately; small allocations are reused, so
a leak in the training loop shows as growth over many steps.
"""

import gc
import os
import sys
import weakref

import numpy as np
import pytest
from seed_functions import MyReLU

import tapegrad as tg

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@linux_only
def test_ten_thousand_training_steps_keep_memory_flat():
    # The seed's network and loop, at the seed's sizes (custom ReLU, mm, pow, sum, backward, SGD
    # under no_grad; about 4 s). A graph kept alive per step would be ~100 kB (about 1 GB in total);
    # one leaked Python object per step would be 10,000 objects. Measured here: RSS grows by
    # 0.0 MB after warm-up and the object count by -5..1.
    tg.manual_seed(0)
    n, d_in, h, d_out = 64, 1000, 100, 10
    x = tg.randn(n, d_in)
    y = tg.randn(n, d_out)
    w1 = tg.randn(d_in, h, requires_grad=True)
    w2 = tg.randn(h, d_out, requires_grad=True)
    learning_rate = 1e-6
    steps, warmup = 10_000, 500
    losses = []
    for t in range(steps):
        if t == warmup:
            gc.collect()
            rss_after_warmup = rss_mb()
            objects_after_warmup = len(gc.get_objects())
        y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        if t % 1000 == 0:
            losses.append(loss.item())
        loss.backward()
        with tg.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    del y_pred, loss
    gc.collect()
    growth = rss_mb() - rss_after_warmup
    object_growth = len(gc.get_objects()) - objects_after_warmup
    assert losses[-1] < losses[0] / 1000, f"the network did not train: {losses}"
    assert growth < 10, f"RSS grew by {growth:.1f} MB over {steps - warmup} steps"
    assert object_growth < 100, f"{object_growth} more Python objects after {steps - warmup} steps"


class Token:
    """A plain Python object to save on a ctx and watch with a weakref."""


class SavesObjects(tg.Function):
    """Saves a Python object both with save_for_backward and as a ctx attribute, and a large
    intermediate tensor."""

    @staticmethod
    def forward(ctx, x, token, big):
        ctx.save_for_backward(x, token, big=big * 2)
        ctx.token = token
        return x * 3

    @staticmethod
    def backward(ctx, g):
        assert ctx.saved_tensors[1] is ctx.token
        return g * 3, None, None


def _watch_graph():
    token = Token()
    ref = weakref.ref(token)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = SavesObjects.apply(x, token, tg.ones(0))
    del token
    return x, y, ref


def test_dropping_the_output_frees_the_graph_at_once():
    gc.disable()  # freed by reference counting, not by a later collection
    try:
        x, y, ref = _watch_graph()
        assert ref() is not None
        del y
        assert ref() is None, "the object saved on ctx outlived the graph"
    finally:
        gc.enable()


def test_backward_releases_what_the_graph_saved():
    gc.disable()
    try:
        x, y, ref = _watch_graph()
        y.sum().backward()
        # y is still alive, but its node released the saved values; ctx.token (an attribute, not
        # a saved value) lives as long as the node.
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()
        del y
        assert ref() is None
    finally:
        gc.enable()


class KeepsOutput(tg.Function):
    """Keeps its output on ctx as an attribute: a reference cycle ctx -> output -> node -> ctx that
    only Python's garbage collector can break (through the native node)."""

    @staticmethod
    def forward(ctx, x, token):
        out = x * 2
        ctx.out = out
        ctx.token = token
        return out

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def test_reference_cycle_through_ctx_is_collected():
    token = Token()
    ref = weakref.ref(token)
    x = tg.tensor([1.0], requires_grad=True)
    y = KeepsOutput.apply(x, token)
    del token, y
    gc.collect()
    assert ref() is None, "a cycle through a custom node's ctx was not collected"


class SavesOwnOutput(tg.Function):
    """Saves its own output with save_for_backward (must not make a cycle)."""

    @staticmethod
    def forward(ctx, x, token):
        out = x.exp()
        ctx.save_for_backward(out, token)
        return out

    @staticmethod
    def backward(ctx, g):
        out, _ = ctx.saved_tensors
        return g * out, None


def test_saving_the_output_does_not_keep_the_graph_alive():
    gc.disable()
    try:
        token = Token()
        ref = weakref.ref(token)
        x = tg.tensor([0.5], dtype=tg.float64, requires_grad=True)
        y = SavesOwnOutput.apply(x, token)
        del token
        z = y * 1
        z.backward(retain_graph=True)
        np.testing.assert_allclose(x.grad.numpy(), [np.exp(0.5)])
        del y, z
        assert ref() is None
    finally:
        gc.enable()


@linux_only
def test_saved_large_tensor_memory_goes_back():
    # 50 M float32 elements = 200 MB saved by the custom node (big * 2, made inside forward).
    elements = 50_000_000
    big = tg.ones(elements)
    before = rss_mb()
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = SavesObjects.apply(x, Token(), big)
    with_graph = rss_mb()
    assert with_graph - before > 150, f"the saved tensor should be resident: {before:.0f} -> {with_graph:.0f} MB"
    del y
    after_drop = rss_mb()
    assert after_drop - before < 20, f"dropping the graph left {after_drop - before:.0f} MB behind"

    # and backward releases it while the output itself is still alive
    y = SavesObjects.apply(x, Token(), big)
    assert rss_mb() - before > 150
    y.sum().backward()
    after_backward = rss_mb()
    assert after_backward - before < 20, f"backward left {after_backward - before:.0f} MB of saved values"
    del y
