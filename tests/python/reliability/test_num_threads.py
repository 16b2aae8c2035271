"""tg.set_num_threads / tg.get_num_threads, and parallel work in a forked child (src/parallel.rs,
NOTE [A pool of our own]): the child's first parallel operation must not wait for the parent's
threads, which do not exist in it. Each fork runs in a subprocess with a timeout, so a hang fails
the test instead of hanging the suite."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg


@pytest.fixture
def restore_threads():
    before = tg.get_num_threads()
    yield
    tg.set_num_threads(before)


def test_get_num_threads_defaults_to_the_cores_available():
    code = "import tapegrad as tg; print(tg.get_num_threads())"
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert int(out.stdout) == len(os.sched_getaffinity(0))


def test_set_num_threads_takes_effect_and_results_do_not_change(restore_threads):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    b = rng.standard_normal((400, 500)).astype(np.float32)
    big = rng.standard_normal(1 << 20).astype(np.float32)
    results = []
    for n in (1, 3, 2):
        tg.set_num_threads(n)
        assert tg.get_num_threads() == n
        x = tg.from_numpy(big).requires_grad_()
        (x.exp() * x).sum().backward()
        results.append(((tg.from_numpy(a) @ tg.from_numpy(b)).numpy(), x.grad.numpy()))
    expected_grad = np.exp(big.astype(np.float64)) * (1 + big)
    for mm, grad in results:
        np.testing.assert_allclose(mm, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-6)
    # element-wise results are the same bits whatever the count (each element computed alone)
    assert all(np.array_equal(g, results[0][1]) for _, g in results)


@pytest.mark.parametrize(
    "value, kind, message",
    [
        (0, RuntimeError, "positive integer"),
        (-3, RuntimeError, "positive integer"),
        (2.5, RuntimeError, "expects an int, but got float"),
        ("2", RuntimeError, "expects an int, but got str"),
        (True, RuntimeError, "expects an int, but got bool"),
        (2**70, ValueError, "int64"),
    ],
)
def test_set_num_threads_refuses_what_pytorch_refuses(restore_threads, value, kind, message):
    before = tg.get_num_threads()
    with pytest.raises(kind, match=message):
        tg.set_num_threads(value)
    assert tg.get_num_threads() == before


def test_set_num_threads_takes_numpy_integers(restore_threads):
    tg.set_num_threads(np.int64(1))
    assert tg.get_num_threads() == 1


def printed_by(code):
    """Runs `code` in a fresh interpreter (a hang fails at the timeout) and returns what it printed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


FORK_CHILD = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import tapegrad as tg
    {setup}
    rng = np.random.default_rng(1)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    big = rng.standard_normal(1 << 21).astype(np.float32)

    def work():
        # threaded float32 and float64 GEMMs, a threaded element-wise kernel, a parallel backward of branches, Adam
        c = (tg.from_numpy(a) @ tg.from_numpy(a)).numpy()
        a64 = a.astype(np.float64)
        c64 = (tg.from_numpy(a64) @ tg.from_numpy(a64)).numpy()  # matrixmultiply in row bands
        x = tg.from_numpy(big.copy()).requires_grad_()  # Adam writes into x
        branches = [(x * k).exp().sum() for k in (0.1, 0.2, 0.3)]
        sum(branches).backward()
        opt = tg.optim.Adam([x], lr=0.1)
        opt.step()
        ok = np.allclose(c, a64 @ a64, rtol=1e-4, atol=1e-3) and np.allclose(c64, a64 @ a64, rtol=1e-12, atol=1e-10)
        expected = sum(k * np.exp(k * big.astype(np.float64)) for k in (0.1, 0.2, 0.3))
        return ok and np.allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)

    assert work()  # the parent's pools exist and have run
    pid = os.fork()
    if pid == 0:
        os._exit(0 if work() and tg.get_num_threads() == {threads} else 3)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    assert work()  # the parent's pool still serves the parent
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("threads", [None, 1, 3])
def test_parallel_work_in_a_forked_child_finishes(threads):
    setup = "" if threads is None else f"tg.set_num_threads({threads})"
    expect = "tg.get_num_threads()" if threads is None else str(threads)
    assert printed_by(FORK_CHILD.format(setup=setup, threads=expect)) == "0", "the child failed"


# Another thread keeps a tapegrad lock busy while the main thread forks `forks` children; each child
# exits 0 when its own work (`child_ok`, an expression) gave the right answer.
FORK_WHILE_BUSY = textwrap.dedent(
    """
    import os, threading
    import tapegrad as tg
    stop = False
    started = threading.Event()

    def busy():
        started.set()
        {busy}

    t = threading.Thread(target=busy)
    t.start()
    started.wait()
    codes = []
    for _ in range({forks}):
        pid = os.fork()
        if pid == 0:
            os._exit(0 if {child_ok} else 3)
        codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    stop = True
    t.join()
    print(codes)
    """
)


# src/at_fork.rs, NOTE [Locks across fork]: a lock another thread holds at the fork is waited for,
# never copied held (the child would wait for it forever).
# - The allocator cache's lock, busy with 4 MB blocks freed and requested again. Its handlers were once
#   registered at the first large block, which raced with a fork made meanwhile (a hang in about one
#   run in a hundred); they are now registered at import.
# - The random generator's lock, held throughout a long randn (the child always hung).
FORKED_WHILE_BUSY = {
    "allocating": ("while not stop: tg.zeros(1 << 20).add_(1.0)", 20,
                   "sum(float(tg.ones(1 << 20).sum()) for _ in range(5)) == 5 * (1 << 20)"),
    "sampling": ("for _ in range(3): tg.randn(1 << 22)", 5,
                 "abs(float(tg.randn(1 << 16).numpy().mean())) < 0.05"),
}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("case", list(FORKED_WHILE_BUSY))
def test_a_child_forked_while_another_thread_holds_a_lock_finishes(case):
    busy, forks, child_ok = FORKED_WHILE_BUSY[case]
    code = FORK_WHILE_BUSY.format(busy=busy, forks=forks, child_ok=child_ok)
    assert printed_by(code) == str([0] * forks)
