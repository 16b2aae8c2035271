"""Oracles and helpers the Python tests share: float64 central differences (`numeric_grad`,
`check_grads`), a NumPy MLP gradient (`mlp_grads_np`) and `run_in_threads`."""

import threading

import numpy as np

import tapegrad as tg


def numeric_grad(f, arrays, which, eps=1e-6):
    """Central differences of sum(f(*tensors)) with respect to arrays[which] (float64)."""
    base = [np.array(a, dtype=np.float64) for a in arrays]
    out = np.zeros_like(base[which])
    it = np.nditer(base[which], flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        vals = []
        for d in (eps, -eps):
            pert = [b.copy() for b in base]
            pert[which][idx] += d
            vals.append(float(f(*[tg.tensor(p) for p in pert]).sum().item()))
        out[idx] = (vals[0] - vals[1]) / (2 * eps)
    return out


def check_grads(f, arrays, atol=1e-5, rtol=1e-4):
    """Analytic gradients of sum(f(...)) match central differences for every input."""
    ts = [tg.tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]
    f(*ts).sum().backward()
    for i, t in enumerate(ts):
        assert t.grad is not None, f"no gradient reached input {i}"
        np.testing.assert_allclose(t.grad.numpy(), numeric_grad(f, arrays, i), atol=atol, rtol=rtol)


def run_in_threads(fn, args=(), num_threads=10, timeout=20.0, *, pass_index=False, collect=False):
    """Runs ``fn(*args)`` (``fn(i, *args)`` with ``pass_index``, ``i`` the thread's number) on
    ``num_threads`` threads at once and joins each with ``timeout`` seconds: a thread still running
    then fails the test, so a deadlock fails instead of hanging. The first exception a thread raised
    is re-raised here; with ``collect``, all of them are returned instead, as ``(i, exception)``."""
    errors = []

    def target(i):
        try:
            fn(i, *args) if pass_index else fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller
            errors.append((i, e))

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(num_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        raise TimeoutError(f"threads still running after {timeout} s (deadlock?): {alive}")
    if collect:
        return errors
    if errors:
        raise errors[0][1]
    return None


def mlp_grads_np(x, ws, y):
    """Weight gradients of mean((h - y)^2) for h = relu(...relu(x w0)...) w_last, a bias-free ReLU MLP,
    in float64 (NumPy: the oracle of the MLP tests)."""
    hs, h = [x], x
    for i, w in enumerate(ws):
        h = h @ w
        if i < len(ws) - 1:
            h = np.maximum(h, 0)
        hs.append(h)
    g = 2 * (h - y) / h.size
    grads = [None] * len(ws)
    for i in reversed(range(len(ws))):
        grads[i] = hs[i].T @ g
        g = g @ ws[i].T
        if i > 0:
            g = g * (hs[i] > 0)
    return grads
