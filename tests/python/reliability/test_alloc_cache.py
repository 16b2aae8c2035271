"""The allocator's large-block cache (NOTE [Large-block cache] in src/alloc.rs): a loop reuses its
large buffers (no page faults after warm-up, values intact), and memory still goes back: at once
for a graph built once or twice, within about a second after a loop ends, and on demand through
the private `_release_cached_memory()`.
"""

import gc
import os
import resource
import sys
import threading
import time

import numpy as np
import pytest
from oracles import mlp_grads_np

import tapegrad as tg
from tapegrad import _tapegrad as C

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")

SIZES, BATCH = (256, 1024, 1024, 256), 256  # every activation and weight gradient is >= 1 MiB


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def make_step(seed=0):
    """One step of a bias-free ReLU MLP with a mean-squared loss, and a NumPy oracle for its
    weight gradients."""
    rng = np.random.default_rng(seed)
    ws_np = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(SIZES, SIZES[1:])]
    x_np = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y_np = rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32)
    ws = [tg.tensor(w, requires_grad=True) for w in ws_np]
    x, y = tg.tensor(x_np), tg.tensor(y_np)

    def step():
        h = x
        for i, w in enumerate(ws):
            h = h.mm(w)
            if i < len(ws) - 1:
                h = h.relu()
        loss = ((h - y) ** 2).mean()
        for w in ws:
            w.grad = None
        loss.backward()
        return [w.grad for w in ws]

    def oracle():
        return mlp_grads_np(x_np.astype(np.float64), [w.astype(np.float64) for w in ws_np], y_np.astype(np.float64))

    return step, oracle


@linux_only
def test_a_loop_takes_no_page_faults_after_warm_up_and_its_values_hold():
    step, oracle = make_step()
    faults = []
    for _ in range(8):
        f0 = minor_faults()
        grads = step()
        faults.append(minor_faults() - f0)
    # A step allocates about 12 MiB of large buffers (three weight gradients, the activations and
    # their gradients, 1 MiB or more each): 3,000 fresh 4 KB pages without reuse, fewer on huge
    # pages. After warm-up the loop reuses them all.
    assert faults[0] > 50, f"the first step should map fresh memory: {faults}"
    assert max(faults[-3:]) <= max(2, faults[0] // 100), f"minor faults per step: {faults}"
    for g, want in zip(grads, oracle()):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-6)
    cached, mapped = C._cached_memory()
    assert cached > 0 and mapped >= cached


@linux_only
def test_a_graph_built_twice_gives_its_memory_back_at_once():
    # A size freed and requested again only once is no loop: 100 MB saved twice, both times
    # unmapped when the graph goes (the rule test_leaks' large-tensor test relies on).
    C._release_cached_memory()
    x = tg.ones(25_000_000, requires_grad=True)
    before = rss_mb()
    for _ in range(2):
        y = (x * 2).exp()  # exp saves its 100 MB output
        assert rss_mb() - before > 80
        del y
        assert rss_mb() - before < 20, f"{rss_mb() - before:.0f} MB stayed resident after the drop"


def loop_then_drop(seed):
    """Runs six steps of a fresh W4-like loop from an empty cache, drops it, and gives the resident
    memory before the loop and the bytes cached right after the drop."""
    step, _ = make_step(seed)
    gc.collect()
    C._release_cached_memory()
    before = rss_mb()
    for _ in range(6):
        step()
    del step
    gc.collect()
    return before, C._cached_memory()[0]


@linux_only
def test_memory_returns_within_a_second_after_a_loop_ends():
    before, cached = loop_then_drop(1)
    assert cached > 4 * 2**20, "the loop's buffers should be cached right after it"
    deadline = time.monotonic() + 5
    while C._cached_memory()[0] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert C._cached_memory()[0] == 0, "the sweeper did not release idle blocks"
    assert rss_mb() - before < 10, f"{rss_mb() - before:.1f} MB stayed resident after the loop"


@linux_only
def test_release_cached_memory_gives_everything_back_at_once():
    before, cached = loop_then_drop(2)
    released = C._release_cached_memory()
    assert released == cached > 0
    assert C._cached_memory()[0] == 0
    assert rss_mb() - before < 10


def test_threads_allocating_large_blocks_keep_their_values():
    # Several threads build and drop tensors of the same few large sizes at once (the kernels run
    # without the GIL), so the cache hands blocks between threads; every value is checked.
    errors = []

    def work(k):
        try:
            for i in range(30):
                n = (1 << 18) * (1 + (i + k) % 3)  # 1, 2 or 3 MiB of float32
                a = tg.full((n,), float(k + 1))
                b = a * 2.0 + float(i)
                got = b.numpy()
                if not (got.min() == got.max() == 2.0 * (k + 1) + i):
                    errors.append((k, i, got.min(), got.max()))
                del a, b, got
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@linux_only
def test_mid_sized_buffers_of_parallel_branches_are_reused_without_faults():
    # W6's shape (src/alloc.rs, `LARGE`): independent branches of 256x256 products whose backward
    # runs on the pool's threads; their 256 KB gradients must not go back to the kernel and be
    # faulted in again at every step (glibc's arenas on those threads did that). From an empty cache:
    # blocks an earlier test freed in the current sweep period may fill the cache's cap, and until
    # the next period begins this loop's frees are unmapped (NOTE [Idle life of a cached block]); the
    # test failed when it ran right after the threads test (pytest -k "threads or mid").
    gc.collect()
    C._release_cached_memory()
    rng = np.random.default_rng(3)
    x = tg.from_numpy(rng.standard_normal((256, 256)).astype(np.float32) / 16)
    ws = [tg.from_numpy(rng.standard_normal((256, 256)).astype(np.float32) / 16).requires_grad_()
          for _ in range(8)]

    def step():
        total = None
        for w in ws:
            h = x
            for _ in range(3):
                h = (h @ w).tanh()
            total = h.sum() if total is None else total + h.sum()
        for w in ws:
            w.grad = None
        total.backward()
        return [w.grad for w in ws]

    for _ in range(4):
        step()
    before = minor_faults()
    for _ in range(5):
        grads = step()
    per_step = (minor_faults() - before) / 5
    # One 256 KB buffer faulted in anew costs 64 faults, and a step frees and requests about fifty
    # (glibc's arenas: ~860 faults per step here); fewer than four buffers' worth may still fault
    # (small blocks of the workers' arenas).
    assert per_step < 4 * 64, f"{per_step:.0f} minor faults per step after warm-up"
    # and the reused buffers hold the right values: each weight's gradient against NumPy float64
    x64 = x.numpy().astype(np.float64)
    for w, g in zip(ws, grads):
        w64 = w.detach().numpy().astype(np.float64)
        hs, h = [], x64
        for _ in range(3):
            h = np.tanh(h @ w64)
            hs.append(h)
        up, expected, inputs = np.ones_like(h), np.zeros_like(w64), [x64] + hs[:-1]
        for h_in, h_out in zip(reversed(inputs), reversed(hs)):
            pre = up * (1 - h_out**2)
            expected += h_in.T @ pre
            up = pre @ w64.T
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-3, atol=1e-4)


@linux_only
def test_a_long_loop_keeps_its_blocks_across_a_pause_and_still_gives_them_back():
    # NOTE [Idle life of a cached block]: after 30 steps every size of the loop has recurred often
    # enough for its blocks to survive a 1.5 s pause (three sweeps); the step after the pause then
    # maps nothing new. Once the loop is dropped they still go, within LONG_LIFE + 1 sweeps (3.5 s).
    step, oracle = make_step(4)
    # The oracle first: NumPy's float64 temporaries go through glibc, which may keep them resident,
    # and the test measures what our allocator gives back.
    expected = oracle()
    gc.collect()
    C._release_cached_memory()
    before = rss_mb()
    for _ in range(30):
        step()
    f0 = minor_faults()
    step()
    steady = minor_faults() - f0
    time.sleep(1.5)
    f0 = minor_faults()
    grads = step()
    after_pause = minor_faults() - f0
    # Unmapped, the loop's ~12 MiB would fault back in as ~3,000 pages (fewer on huge pages: > 50).
    assert after_pause <= steady + 20, f"{after_pause} minor faults after the pause (steady {steady})"
    for g, want in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-6)
    del step, grads
    gc.collect()
    assert C._cached_memory()[0] > 0
    deadline = time.monotonic() + 8
    while C._cached_memory()[0] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert C._cached_memory()[0] == 0, "the sweeper did not release idle blocks"
    assert rss_mb() - before < 10, f"{rss_mb() - before:.1f} MB stayed resident after the loop"
