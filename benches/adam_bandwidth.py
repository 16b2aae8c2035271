"""W7 (one Adam step over W4's 25M float32 parameters) against the machine's copy bandwidth, in one
run: the same process alternates the step with a large copy (NumPy's `copyto` of 200 MB, on one
thread and split over two threads), each timed as the minimum over rounds. Traffic is counted as
bytes read plus bytes written: 7 × 4 bytes per parameter for Adam (param, grad, exp_avg,
exp_avg_sq read; param, exp_avg, exp_avg_sq written), 2 × the size for a copy.

    python benches/adam_bandwidth.py [--rounds N]
"""

import argparse
import threading

import numpy as np
from timing import best_of

import tapegrad as tg

W4_SIZES = (1024, 4096, 4096, 1024)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ws = [tg.from_numpy((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)).requires_grad_()
          for a, b in zip(W4_SIZES, W4_SIZES[1:])]
    for w in ws:
        w.grad = tg.from_numpy(rng.standard_normal(tuple(w.shape)).astype(np.float32) * 1e-3)
    opt = tg.optim.Adam(ws, lr=1e-3)
    opt.step()
    n = sum(w.numel() for w in ws)
    src = np.ones(2 * n, np.float32)
    dst = np.zeros_like(src)
    half = len(src) // 2

    def copy1():
        np.copyto(dst, src)

    def copy2():
        t = threading.Thread(target=np.copyto, args=(dst[half:], src[half:]))
        t.start()
        np.copyto(dst[:half], src[:half])
        t.join()

    best = {"adam": float("inf"), "copy1": float("inf"), "copy2": float("inf")}
    for _ in range(args.rounds):
        best["adam"] = min(best["adam"], best_of(opt.step, 3))
        best["copy1"] = min(best["copy1"], best_of(copy1, 3))
        best["copy2"] = min(best["copy2"], best_of(copy2, 3))
    adam = 7 * 4 * n / best["adam"] / 1e9
    c1, c2 = (2 * src.nbytes / best[k] / 1e9 for k in ("copy1", "copy2"))
    print(f"Adam step {best['adam'] * 1e3:.2f} ms: {adam:.1f} GB/s")
    print(f"copy, 1 thread: {c1:.1f} GB/s; 2 threads: {c2:.1f} GB/s")
    print(f"Adam / best copy: {adam / max(c1, c2):.0%}")


if __name__ == "__main__":
    main()
