"""Several Python threads running forward and backward at once.

The graphs are separate but share leaves, and contain custom Python ``tg.Function`` nodes (which need
the GIL in the middle of a backward that runs without it). All data are small integers, so every
gradient is exact whatever order the threads add their contributions in: a lost or doubled update
shows up as a wrong number, never as rounding. Every wait has a timeout, so a deadlock fails the test
instead of hanging it.
"""

import threading

import numpy as np
from oracles import run_in_threads
from seed_functions import MyReLU

import tapegrad as tg

N_THREADS = 6
ROUNDS = 25
STEPS_PER_ROUND = 3
TIMEOUT = 60.0


class Scale(tg.Function):
    """y = x * w, written in Python."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


def _run_threads(target, n, timeout=TIMEOUT):
    """Runs target(i) in n threads; returns the exceptions they raised; fails on a hang."""
    return run_in_threads(target, num_threads=n, timeout=timeout, pass_index=True, collect=True)


def _thread_data(i):
    """Per-thread integer data: input x (3x4), loss weights c (3x4), and a thread-private leaf a (4,)."""
    rng = np.random.default_rng(100 + i)
    x = rng.integers(-3, 4, size=(3, 4)).astype(np.float64)
    c = rng.integers(-2, 3, size=(3, 4)).astype(np.float64)
    a = rng.integers(-3, 4, size=(4,)).astype(np.float64)
    return x, c, a


def _expected(x, c, a, w, b):
    """NumPy oracle for loss = sum(c * relu(x * w + b + a))."""
    y = x * w + b + a
    mask = (y >= 0).astype(np.float64)  # MyReLU passes the gradient at 0
    gy = c * mask
    return {"w": gy * x, "b": gy.sum(0), "a": gy.sum(0)}


W0 = np.array([[1.0, -2.0, 3.0, 0.0], [2.0, 1.0, -1.0, 2.0], [-3.0, 2.0, 1.0, 1.0]])
B0 = np.array([1.0, -1.0, 0.0, 2.0])


def _loss(x, c, a, w, b):
    y = Scale.apply(tg.tensor(x), w) + b + a
    return (MyReLU.apply(y) * tg.tensor(c)).sum()


def test_concurrent_backward_into_shared_leaves_sums_exactly():
    w = tg.tensor(W0, requires_grad=True)
    b = tg.tensor(B0, requires_grad=True)
    data = [_thread_data(i) for i in range(N_THREADS)]
    expected = [_expected(x, c, a, W0, B0) for x, c, a in data]
    privates = [tg.tensor(a, requires_grad=True) for _, _, a in data]
    start = threading.Barrier(N_THREADS + 1, timeout=TIMEOUT)
    done = threading.Barrier(N_THREADS + 1, timeout=TIMEOUT)

    def worker(i):
        x, c, _ = data[i]
        for _ in range(ROUNDS):
            start.wait()
            for _ in range(STEPS_PER_ROUND):
                _loss(x, c, privates[i], w, b).backward()
            done.wait()

    errors = []

    def coordinator():
        for r in range(ROUNDS):
            # Every round starts from grad=None, so the first accumulation into each leaf races too.
            w.grad = None
            b.grad = None
            for p in privates:
                p.grad = None
            start.wait()
            done.wait()
            want_w = STEPS_PER_ROUND * sum(e["w"] for e in expected)
            want_b = STEPS_PER_ROUND * sum(e["b"] for e in expected)
            np.testing.assert_array_equal(w.grad.numpy(), want_w, err_msg=f"round {r}: w.grad")
            np.testing.assert_array_equal(b.grad.numpy(), want_b, err_msg=f"round {r}: b.grad")
            for i, p in enumerate(privates):
                np.testing.assert_array_equal(p.grad.numpy(), STEPS_PER_ROUND * expected[i]["a"])

    threads_errors = []
    t = threading.Thread(target=lambda: threads_errors.extend(_run_threads(worker, N_THREADS)), daemon=True)
    t.start()
    try:
        coordinator()
    except BaseException as e:
        errors.append(e)
        start.abort()
        done.abort()
    t.join(TIMEOUT)
    assert not t.is_alive(), "worker threads hung"
    assert not errors, errors
    assert not threads_errors, threads_errors


def test_concurrent_autograd_grad_returns_each_threads_own_gradient():
    w = tg.tensor(W0, requires_grad=True)
    b = tg.tensor(B0, requires_grad=True)
    go = threading.Barrier(N_THREADS, timeout=TIMEOUT)
    iterations = 40

    def worker(i):
        x, c, a_np = _thread_data(i)
        a = tg.tensor(a_np, requires_grad=True)
        want = _expected(x, c, a_np, W0, B0)
        go.wait()
        for _ in range(iterations):
            gw, gb, ga = tg.autograd.grad(_loss(x, c, a, w, b), [w, b, a])
            np.testing.assert_array_equal(gw.numpy(), want["w"])
            np.testing.assert_array_equal(gb.numpy(), want["b"])
            np.testing.assert_array_equal(ga.numpy(), want["a"])

    assert _run_threads(worker, N_THREADS) == []
    # grad() accumulates nowhere
    assert w.grad is None and b.grad is None


def test_concurrent_backward_through_one_retained_graph():
    # One shared prefix (with a custom node), retained; every thread backpropagates through it.
    w = tg.tensor(W0, requires_grad=True)
    shared = Scale.apply(w, tg.tensor(W0)) + w  # w*w + w
    iterations = 20
    go = threading.Barrier(N_THREADS, timeout=TIMEOUT)

    def worker(i):
        _, c, _ = _thread_data(i)
        go.wait()
        for _ in range(iterations):
            (MyReLU.apply(shared) * tg.tensor(c)).sum().backward(retain_graph=True)

    assert _run_threads(worker, N_THREADS) == []
    y = W0 * W0 + W0
    total = sum(_thread_data(i)[1] for i in range(N_THREADS)) * iterations
    np.testing.assert_array_equal(w.grad.numpy(), total * (y >= 0) * (W0 + 1))


def test_concurrent_hooks_on_a_shared_leaf():
    # A Python hook on the shared leaf runs on every thread's backward; it counts its calls.
    w = tg.tensor(W0, requires_grad=True)
    calls = []
    lock = threading.Lock()

    def hook(g):
        with lock:
            calls.append(threading.get_ident())
        return g * 2

    w.register_hook(hook)
    iterations = 30
    go = threading.Barrier(N_THREADS, timeout=TIMEOUT)

    def worker(i):
        go.wait()
        for _ in range(iterations):
            Scale.apply(w, tg.tensor(np.full((3, 4), float(i + 1)))).sum().backward()
            _ = w.grad  # read while other threads write it

    assert _run_threads(worker, N_THREADS) == []
    assert len(calls) == N_THREADS * iterations
    assert len(set(calls)) == N_THREADS
    want = 2 * iterations * sum(range(1, N_THREADS + 1))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), float(want)))


def test_grad_mode_is_per_thread():
    # Thread A enters no_grad and holds it while thread B records; then B enters no_grad while A
    # leaves it and records. Events force the interleaving.
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    a_in_no_grad = threading.Event()
    b_recorded = threading.Event()
    b_in_no_grad = threading.Event()
    a_recorded = threading.Event()
    seen = {}

    def thread_a(_):
        with tg.no_grad():
            a_in_no_grad.set()
            seen["a_inside"] = (tg.is_grad_enabled(), (w * 2).requires_grad, Scale.apply(w, w).requires_grad)
            assert b_recorded.wait(TIMEOUT)
            # B's recording did not switch A's mode back on
            seen["a_still_inside"] = (tg.is_grad_enabled(), (w * 3).requires_grad)
        assert b_in_no_grad.wait(TIMEOUT)
        y = Scale.apply(w, w)
        seen["a_after"] = (tg.is_grad_enabled(), y.requires_grad)
        y.sum().backward()
        a_recorded.set()

    def thread_b(_):
        assert a_in_no_grad.wait(TIMEOUT)
        y = Scale.apply(w, tg.tensor([3.0, 4.0]))
        seen["b_while_a_off"] = (tg.is_grad_enabled(), y.requires_grad, y.grad_fn is not None)
        b_recorded.set()
        with tg.set_grad_enabled(False):
            b_in_no_grad.set()
            assert a_recorded.wait(TIMEOUT)
            # A's recording (and its backward, which turns grad mode on and off) left B's mode alone
            seen["b_inside"] = (tg.is_grad_enabled(), (w * 2).requires_grad)
        seen["b_after"] = tg.is_grad_enabled()

    errors = _run_threads(lambda i: (thread_a, thread_b)[i](i), 2)
    assert errors == []
    assert seen == {
        "a_inside": (False, False, False),
        "b_while_a_off": (True, True, True),
        "a_still_inside": (False, False),
        "a_after": (True, True),
        "b_inside": (False, False),
        "b_after": True,
    }
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.array([1.0, 2.0]))
    assert tg.is_grad_enabled()


RACE_THREADS = 4
RACE_STEPS = 60
RACE_SIZE = 50_000


def _backward_all_at_once(losses_for_thread, **backward_kwargs):
    """Builds each thread's losses first, then releases all threads into backward together, so the
    accumulations into the shared tensor overlap as much as possible."""
    go = threading.Barrier(RACE_THREADS, timeout=TIMEOUT)

    def worker(i):
        losses = losses_for_thread(i)
        go.wait()
        for loss in losses:
            loss.backward(**backward_kwargs)

    assert _run_threads(worker, RACE_THREADS) == []


def test_concurrent_create_graph_accumulation_loses_no_update():
    # With create_graph=True the gradient is accumulated out of place (old + g, then stored): that
    # read-add-store must be one step, or a thread's store overwrites another's sum.
    w = tg.zeros(RACE_SIZE, dtype=tg.float64, requires_grad=True)
    _backward_all_at_once(lambda i: [(w * float(i + 1)).sum() for _ in range(RACE_STEPS)], create_graph=True)
    want = RACE_STEPS * sum(range(1, RACE_THREADS + 1))
    got = w.grad.detach().numpy()
    assert (got == want).all(), f"w.grad is {got[:3]}..., expected {want} everywhere (lost updates)"


def test_concurrent_retain_grad_accumulation_loses_no_update():
    # A shared non-leaf that retains its gradient, reached by every thread's backward.
    w = tg.zeros(RACE_SIZE, dtype=tg.float64, requires_grad=True)
    h = w * 1.0
    h.retain_grad()
    _backward_all_at_once(lambda i: [(h * float(i + 1)).sum() for _ in range(RACE_STEPS)], retain_graph=True)
    want = RACE_STEPS * sum(range(1, RACE_THREADS + 1))
    assert (w.grad.numpy() == want).all()
    got = h.grad.numpy()
    assert (got == want).all(), f"h.grad is {got[:3]}..., expected {want} everywhere (lost updates)"


def test_concurrent_first_accumulation_into_an_empty_grad_loses_no_update():
    # Many rounds that each start from grad=None: every thread may find no gradient yet and store its
    # own; all but one would be lost if finding and storing were two steps.
    w = tg.zeros(RACE_SIZE, dtype=tg.float64, requires_grad=True)
    rounds = 60
    start = threading.Barrier(RACE_THREADS + 1, timeout=TIMEOUT)
    done = threading.Barrier(RACE_THREADS + 1, timeout=TIMEOUT)
    bad_rounds = []

    def worker(i):
        for _ in range(rounds):
            loss = (w * float(i + 1)).sum()
            start.wait()
            loss.backward()
            done.wait()

    def coordinator(_):
        want = sum(range(1, RACE_THREADS + 1))
        for r in range(rounds):
            w.grad = None
            start.wait()
            done.wait()
            if not (w.grad.numpy() == want).all():
                bad_rounds.append(r)

    errors = _run_threads(lambda i: coordinator(i) if i == RACE_THREADS else worker(i), RACE_THREADS + 1)
    assert errors == []
    assert bad_rounds == [], f"gradients lost in rounds {bad_rounds}"
