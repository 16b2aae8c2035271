"""examples/checkpointing.py: a checkpointed training step gives the plain step's gradients and
loss exactly (the memory figures are the example's own output, not a test)."""

import importlib.util
import pathlib

import numpy as np

import tapegrad as tg

ROOT = pathlib.Path(__file__).resolve().parents[3]


def load():
    spec = importlib.util.spec_from_file_location("checkpointing", ROOT / "examples" / "checkpointing.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_checkpointed_step_equals_plain_step():
    ex = load()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    target = rng.standard_normal((8, 6)).astype(np.float32)
    results = []
    for use in (False, True):
        params = ex.make_model(layers=4, width=6, hidden=12, seed=5)
        loss = ex.train_step(params, tg.tensor(x), tg.tensor(target), use)
        results.append((loss, [p.grad.numpy().copy() for layer in params for p in layer],
                        [p.detach().numpy().copy() for layer in params for p in layer]))
    (l0, g0, p0), (l1, g1, p1) = results
    assert l0 == l1
    for a, b in zip(g0 + p0, g1 + p1):
        np.testing.assert_array_equal(a, b)
    # The loss is the mean squared error of the network, computed here in NumPy.
    params = ex.make_model(layers=4, width=6, hidden=12, seed=5)
    h = x.astype(np.float64)
    for w1, b1, w2 in params:
        w1, b1, w2 = (t.detach().numpy().astype(np.float64) for t in (w1, b1, w2))
        z = h @ w1 + b1
        h = h + (z / (1 + np.exp(-z))) @ w2
    np.testing.assert_allclose(l0, ((h - target) ** 2).mean(), rtol=1e-5)
