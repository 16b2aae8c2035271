"""A small backward whose nodes call Python holds the GIL for its whole run (NOTE [The host lock in
backward] in engine.rs): other threads, nested runs and hooks still work, with exact gradients."""

import threading

import numpy as np

import tapegrad as tg


class Scale(tg.Function):
    """y = x * c; its backward runs Python code."""

    @staticmethod
    def forward(ctx, x, c):
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c, None


def chain(x, n, c):
    y = x
    for _ in range(n):
        y = Scale.apply(y, c)
    return y


def test_threads_running_small_python_backwards_at_once_get_their_own_gradients():
    n_threads, rounds, n = 4, 20, 50
    go = threading.Barrier(n_threads, timeout=60)
    errors = []

    def worker(i):
        try:
            c = 1.0 + 0.01 * i
            go.wait()
            for _ in range(rounds):
                x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
                chain(x, n, c).sum().backward()
                np.testing.assert_allclose(x.grad.numpy(), [c**n, c**n], rtol=1e-12)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "backward deadlocked"
    assert errors == []


class OtherThreadBackward(tg.Function):
    """Its backward runs a backward of Python nodes on another thread and waits for it."""

    result = []

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        def inner():
            z = tg.tensor([3.0], dtype=tg.float64, requires_grad=True)
            chain(z, 10, 2.0).sum().backward()
            OtherThreadBackward.result.append(z.grad.item())

        t = threading.Thread(target=inner, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "the inner backward deadlocked"
        return g * 2


def test_backward_of_a_python_node_may_wait_for_a_backward_on_another_thread():
    OtherThreadBackward.result = []
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    OtherThreadBackward.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert OtherThreadBackward.result == [2.0**10]


def test_python_hooks_in_a_small_graph_of_python_nodes():
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    seen = []
    mid = chain(x, 3, 2.0)
    mid.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    y = chain(mid, 2, 3.0)
    y.grad_fn.register_hook(lambda gi, go: seen.append("node"))
    x.register_hook(lambda g: g + 1)
    y.sum().backward()
    # d y / d mid = 9; the hook makes it 90; d mid / d x = 8: 720, plus the leaf hook's 1
    assert seen == ["node", [9.0, 9.0]]
    assert x.grad.tolist() == [721.0, 721.0]


def test_a_large_graph_of_python_nodes_still_runs_with_the_gil_released():
    # 5,000 nodes: above the size that holds the GIL; the result is the same.
    x = tg.tensor([1.0], dtype=tg.float64, requires_grad=True)
    chain(x, 5000, 1.0001).sum().backward()
    assert abs(x.grad.item() - 1.0001**5000) <= 1e-9 * 1.0001**5000
