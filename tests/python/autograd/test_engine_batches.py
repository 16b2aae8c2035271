"""A batch of one product and accumulators runs on the calling thread (NOTE [A batch of one large
node] in src/autograd/engine.rs): W8's `nn.Linear` shape, where each weight's gradient reaches its
accumulator through `t()`'s node beside the next layer's product. The values must be those of the
math, with fresh `.grad`s and with `.grad`s that already hold a value (the accumulator adds), and
with the engine's parallel batches turned off. Oracle: NumPy float64 backpropagation by hand.
"""

import numpy as np
import pytest

import tapegrad as tg

SIZES = (96, 256, 256, 64)  # every weight >= 16,384 elements: large enough to batch
BATCH = 64


def numpy_grads(x, y, ws):
    """dL/dw for L = mean((relu(relu(x w0^T) w1^T) w2^T - y)^2), in float64."""
    hs, pre = [x], []
    for i, w in enumerate(ws):
        z = hs[-1] @ w.T
        pre.append(z)
        hs.append(np.maximum(z, 0.0) if i < len(ws) - 1 else z)
    g = 2.0 * (hs[-1] - y) / y.size
    grads = [None] * len(ws)
    for i in reversed(range(len(ws))):
        if i < len(ws) - 1:
            g = g * (pre[i] > 0)
        grads[i] = g.T @ hs[i]
        g = g @ ws[i]
    return grads


@pytest.mark.parametrize("accumulate", [False, True])
def test_linear_layers_gradients_match_numpy(accumulate):
    rng = np.random.default_rng(7)
    ws_np = [rng.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(SIZES, SIZES[1:])]
    x_np = rng.standard_normal((BATCH, SIZES[0]))
    y_np = rng.standard_normal((BATCH, SIZES[-1]))
    ws = [tg.from_numpy(w.astype(np.float32)).requires_grad_() for w in ws_np]
    x, y = tg.from_numpy(x_np.astype(np.float32)), tg.from_numpy(y_np.astype(np.float32))
    start = [rng.standard_normal(w.shape) for w in ws_np]
    if accumulate:
        for w, s in zip(ws, start):
            w.grad = tg.from_numpy(s.astype(np.float32))
    h = x
    for i, w in enumerate(ws):
        h = h.mm(w.t())
        if i < len(ws) - 1:
            h = h.relu()
    ((h - y) ** 2).mean().backward()
    # the oracle from the float32 values the tensors hold
    want = numpy_grads(x_np.astype(np.float32).astype(np.float64), y_np.astype(np.float32).astype(np.float64),
                       [w.astype(np.float32).astype(np.float64) for w in ws_np])
    for w, wg, s in zip(ws, want, start):
        expected = wg + (s.astype(np.float32).astype(np.float64) if accumulate else 0.0)
        got = w.grad.numpy().astype(np.float64)
        np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-6)
        assert w.grad.is_contiguous()


def test_same_values_with_and_without_parallel_batches():
    rng = np.random.default_rng(8)
    ws_np = [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32) for a, b in zip(SIZES, SIZES[1:])]
    x = tg.from_numpy(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))

    def grads():
        ws = [tg.from_numpy(w.copy()).requires_grad_() for w in ws_np]
        h = x
        for i, w in enumerate(ws):
            h = h.mm(w.t())
            if i < len(ws) - 1:
                h = h.tanh()
        h.sum().backward()
        return [w.grad.numpy().copy() for w in ws]

    before = tg.get_num_threads()
    tg.set_num_threads(2)
    try:
        two = grads()
        tg.set_num_threads(1)
        one = grads()
    finally:
        tg.set_num_threads(before)
    for a, b in zip(two, one):
        # the same sums in the same order: bit-identical
        np.testing.assert_array_equal(a, b)
