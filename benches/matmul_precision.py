"""float32 matmul throughput at "highest" against "medium" (bfloat16 products: AMX tiles, or
AVX512_BF16 on AMD), in one run: 4096^3, 256^3 and every product of W4's step (forward, and
backward's transposed operands), then the whole W4 step. The two precisions alternate within each
round and the table keeps each one's minimum over the rounds, so that load from other processes hits
both alike. With PyTorch installed, its "medium" runs in the same rounds (`torch medium` column, and
tapegrad's time over PyTorch's); PyTorch on a CPU uses bfloat16 for "medium" through oneDNN where
the CPU has AMX or AVX512_BF16.

    python benches/matmul_precision.py [--rounds N] [--quick]
"""

import argparse

import numpy as np
from timing import best_of as timed
from timing import cpu_model

import tapegrad as tg

try:
    import torch
except ImportError:
    torch = None

W4_SIZES, W4_BATCH = (1024, 4096, 4096, 1024), 256


def products():
    """(label, m, k, n, transpose A, transpose B): 4096^3, 256^3 (W6's size) and W4's nine products."""
    out = [("4096^3", 4096, 4096, 4096, False, False), ("256^3", 256, 256, 256, False, False)]
    for a, b in zip(W4_SIZES, W4_SIZES[1:]):
        out.append((f"W4 fwd x@W {W4_BATCH}x{a}x{b}", W4_BATCH, a, b, False, False))
    for a, b in list(zip(W4_SIZES, W4_SIZES[1:]))[1:]:
        out.append((f"W4 bwd g@W.T {W4_BATCH}x{b}x{a}", W4_BATCH, b, a, False, True))
    for a, b in zip(W4_SIZES, W4_SIZES[1:]):
        out.append((f"W4 bwd x.T@g {a}x{W4_BATCH}x{b}", a, W4_BATCH, b, True, False))
    return out


def operand(lib, rng, rows, cols, transposed):
    if transposed:
        return lib.from_numpy(rng.standard_normal((cols, rows)).astype(np.float32)).t()
    return lib.from_numpy(rng.standard_normal((rows, cols)).astype(np.float32))


def w4_step(lib):
    rng = np.random.default_rng(0)
    ws = [lib.from_numpy((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)).requires_grad_()
          for a, b in zip(W4_SIZES, W4_SIZES[1:])]
    x = lib.from_numpy(rng.standard_normal((W4_BATCH, W4_SIZES[0])).astype(np.float32))
    y = lib.from_numpy(rng.standard_normal((W4_BATCH, W4_SIZES[-1])).astype(np.float32))

    def run():
        h = x
        for i, w in enumerate(ws):
            h = h.mm(w)
            if i < len(ws) - 1:
                h = h.relu()
        loss = ((h - y) ** 2).mean()
        for w in ws:
            w.grad = None
        loss.backward()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="skip 4096^3")
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}; kernel of 'medium': {tg._tapegrad._bf16_matmul_kernel() or 'none (exact float32)'}")
    libs = {"highest": tg, "medium": tg}
    if torch is not None:
        torch.set_float32_matmul_precision("medium")
        libs["torch medium"] = torch
    print(f"{'product':32s} {'highest GFLOP/s':>16s} {'medium GFLOP/s':>15s} {'speedup':>8s}"
          + (f" {'torch medium':>13s} {'tg/torch time':>14s}" if torch is not None else ""))
    rng = np.random.default_rng(0)
    rows = [r for r in products() if not (args.quick and r[0] == "4096^3")]
    for label, m, k, n, ta, tb in rows:
        seed = rng.integers(1 << 30)
        operands = {name: (operand(lib, np.random.default_rng(seed), m, k, ta),
                           operand(lib, np.random.default_rng(seed + 1), k, n, tb)) for name, lib in libs.items()}
        reps = 2 if m * k * n >= 4096**3 else 5 if m * k * n >= 2**26 else 50
        best = dict.fromkeys(libs, float("inf"))
        for _ in range(args.rounds):
            for p in best:
                if libs[p] is tg:
                    tg.set_float32_matmul_precision(p)
                a, b = operands[p]
                best[p] = min(best[p], timed(lambda a=a, b=b: a @ b, reps))
        gflops = {p: 2.0 * m * k * n / t / 1e9 for p, t in best.items()}
        hi, me = gflops["highest"], gflops["medium"]
        line = f"{label:32s} {hi:16.1f} {me:15.1f} {me / hi:7.2f}x"
        if torch is not None:
            line += f" {gflops['torch medium']:13.1f} {best['medium'] / best['torch medium']:13.2f}x"
        print(line)
    steps = {p: w4_step(lib) for p, lib in libs.items()}
    best = dict.fromkeys(libs, float("inf"))
    for _ in range(args.rounds):
        for p, run in steps.items():
            if libs[p] is tg:
                tg.set_float32_matmul_precision(p)
            run()
            best[p] = min(best[p], timed(run, 3))
    tg.set_float32_matmul_precision("highest")
    line = (f"{'W4 step (ms, min)':32s} {best['highest'] * 1e3:16.1f} {best['medium'] * 1e3:15.1f} "
            f"{best['highest'] / best['medium']:7.2f}x")
    if torch is not None:
        line += f" {best['torch medium'] * 1e3:13.1f} {best['medium'] / best['torch medium']:13.2f}x"
    print(line)


if __name__ == "__main__":
    main()
