"""The float32 GEMM's thread team (src/ops/gemm/team.rs) in a forked child process.

The child inherits the parent's record of helper threads but not the threads; its products must run
(serially) instead of waiting for helpers that do not exist. Values are checked against NumPy in
float64.
"""

import os
import sys
import time

import numpy as np
import pytest

import tapegrad as tg


def _product(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 256)).astype(np.float32)
    got = (tg.tensor(a) @ tg.tensor(b)).numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(got - want)))


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs fork")
def test_product_in_forked_child_after_parent_used_threads():
    assert _product(0) < 1e-3  # 19.7M multiply-adds: the parent's team runs it
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 when its product is right
        code = 2
        try:
            code = 0 if _product(1) < 1e-3 else 1
        finally:
            os._exit(code)
    deadline = 60.0
    start = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's matrix multiply did not finish in 60 s (hung on the team)")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _product(2) < 1e-3  # and the parent's team still works


def test_elementwise_passes_shared_with_the_helper_match_numpy():
    # Right after a two-thread product the team's helper is awake, and a cheap element-wise pass of
    # 2^15 to 2^18 values shares its chunks with it (NOTE [Element-wise work on the team] in
    # src/ops/kernel.rs): in place, out of place, one and two operands, fills, and a length that is
    # not a multiple of the chunk (8192), all against NumPy. The caller claims chunks from the front
    # and the helper from the back: an in-place pass shows a chunk done twice, or skipped.
    rng = np.random.default_rng(5)
    x = tg.tensor(rng.standard_normal((64, 1000)).astype(np.float32))
    w_np = rng.standard_normal((1000, 100)).astype(np.float32)
    g_np = rng.standard_normal((1000, 100)).astype(np.float32)
    w, g = tg.tensor(w_np.copy()), tg.tensor(g_np)
    for n in (100_000, 40_001, 250_000):
        a_np = rng.standard_normal(n).astype(np.float32)
        b_np = rng.standard_normal(n).astype(np.float32)
        a, b = tg.tensor(a_np.copy()), tg.tensor(b_np)
        x @ w  # wakes the helper
        a.sub_(b)
        np.testing.assert_array_equal(a.numpy(), a_np - b_np)
        x @ w
        np.testing.assert_array_equal((a * b).numpy(), (a_np - b_np) * b_np)
        x @ w
        np.testing.assert_array_equal((a * 2.0).numpy(), (a_np - b_np) * np.float32(2.0))
        x @ w
        a.neg_()
        np.testing.assert_array_equal(a.numpy(), -(a_np - b_np))
        x @ w
        b.zero_()  # `zero_` and `fill_` share their passes too
        assert not b.numpy().any()
        x @ w
        b.fill_(-2.5)
        np.testing.assert_array_equal(b.numpy(), np.full(n, -2.5, np.float32))
    for n in (40_001, 65_536):  # the vector transcendentals (fastmath), up to W6's 256x256 layer
        v_np = rng.standard_normal(n).astype(np.float32) * 3
        v = tg.tensor(v_np)
        for name in ("tanh", "exp", "sigmoid"):
            x @ w
            want = {"tanh": np.tanh, "exp": np.exp, "sigmoid": lambda z: 1 / (1 + np.exp(-z))}[name](v_np.astype(np.float64))
            np.testing.assert_allclose(getattr(v, name)().numpy(), want, rtol=1e-6, atol=1e-30, err_msg=name)
    x @ w
    w.sub_(g)  # the operand the product just read (W1's weight update)
    np.testing.assert_array_equal(w.numpy(), w_np - g_np)
