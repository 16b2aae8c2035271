"""tapegrad against PyTorch and NumPy on the workloads of docs/performance.md (W1-W6; W7: one Adam
step over W4's parameters; W8: W4 trained as a `tg.nn` model with `tg.optim.Adam`; W9: the 100x100
Jacobian of an MLP with `func.jacrev` and `func.jacfwd`), and single float32 matrix products (MM rows:
4096^3, 256^3, the W1 shapes; `/1t` rows on one thread), measured against the machine's own limits.

The run starts by measuring the machine: its float32 FMA roof (AVX-512 and AVX2, one thread and all
threads, `tapegrad._tapegrad._roof`) and its memory copy bandwidth (`_copy_bandwidth`); both come with the
`bench` feature of the build (`maturin develop --release --features bench`), which the wheel users install lacks. Every dense
workload then gets GFLOP/s and the fraction of the roof (the all-thread roof, or the one-thread roof
for `/1t` rows) beside its ratio to PyTorch; W7 a fraction of the copy bandwidth.

Each implementation of a workload runs in a child process of its own (warm-up first, then its
rounds), in two passes that alternate the implementations (`--interleave`: all of a workload's
implementations in one process, taking turns round by round), and the parent prints a table of
medians, min..max and the ratio tapegrad / PyTorch, then one line per performance target that the
rows measure, held or not held with its figure (`TARGETS`). PyTorch and NumPy comparisons are optional: a
missing package is skipped with a message.

    python benches/compare.py                 # all workloads
    python benches/compare.py W1 W3           # some
    python benches/compare.py --repeats 7

PyTorch for the comparison: `pip install torch` (CPU use only; the PyPI build is large).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
from timing import cpu_model

REPEATS = 5
# Seconds of each copy-bandwidth probe (best round of several, both store kinds; NOTE [Copy probe]).
COPY_SECONDS = 0.4


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def try_import(name):
    try:
        return __import__(name)
    except ImportError:
        return None


# ---------------------------------------------------------------- W1: the seed's two-layer net
N, D_IN, H, D_OUT, STEPS, LR = 64, 1000, 100, 10, 500, 1e-6


def w1_data():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((N, D_IN), (N, D_OUT), (D_IN, H), (H, D_OUT))]


def w1_tapegrad():
    import tapegrad as tg

    class MyReLU(tg.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

    x, y, a, b = (tg.from_numpy(v) for v in w1_data())
    w1, w2 = a.requires_grad_(), b.requires_grad_()

    def run():
        nonlocal w1, w2
        for _ in range(STEPS):
            loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
            loss.backward()
            with tg.no_grad():
                w1 -= LR * w1.grad
                w2 -= LR * w2.grad
                w1.grad.zero_()
                w2.grad.zero_()
        return loss.item()

    return run


def w1_torch():
    import torch

    class MyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

    x, y, a, b = (torch.from_numpy(v.copy()) for v in w1_data())
    w1, w2 = a.requires_grad_(), b.requires_grad_()

    def run():
        nonlocal w1, w2
        for _ in range(STEPS):
            loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
            loss.backward()
            with torch.no_grad():
                w1 -= LR * w1.grad
                w2 -= LR * w2.grad
                w1.grad.zero_()
                w2.grad.zero_()
        return loss.item()

    return run


def w1_numpy():
    x, y, w1, w2 = w1_data()

    def run():
        nonlocal w1, w2
        for _ in range(STEPS):
            h = x @ w1
            r = np.maximum(h, 0)
            diff = r @ w2 - y
            loss = float((diff * diff).sum())
            g = 2 * diff
            gw2 = r.T @ g
            gr = g @ w2.T
            gr[h < 0] = 0
            gw1 = x.T @ gr
            w1 = w1 - LR * gw1
            w2 = w2 - LR * gw2
        return loss

    return run


# ---------------------------------------------------------------- W2: 1000 small element-wise ops
def w2_chain(x):
    for _ in range(250):
        x = x * 1.001
        x = x + 0.1
        x = x.sin()
        x = x.exp() * 0.5
    return x


def w2_make(lib):
    def factory():
        x = lib.ones(16, requires_grad=True)

        def run():
            x.grad = None
            w2_chain(x).sum().backward()
            return float(x.grad.sum())

        return run

    return factory


# ---------------------------------------------------------------- W3: a custom Function 1000 times
def w3_make(lib, fn_base, builtin=False):
    def factory():
        class MulConstant(fn_base):
            @staticmethod
            def forward(ctx, tensor, constant):
                ctx.constant = constant
                return tensor * constant

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.constant, None

        x = lib.ones(16, requires_grad=True)

        def run():
            x.grad = None
            y = x
            for _ in range(1000):
                y = y * 1.0001 if builtin else MulConstant.apply(y, 1.0001)
            y.sum().backward()
            return float(x.grad.sum())

        return run

    return factory


# ---------------------------------------------------------------- W4: an MLP step
W4_SIZES, W4_BATCH = (1024, 4096, 4096, 1024), 256


def w4_make(lib):
    def factory():
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
            return loss.item()

        return run

    return factory


# ---------------------------------------------------------------- W5: a 200,000-node chain
W5_N = 200_000


def w5_make(lib):
    def factory():
        def run():
            x = lib.ones(1, requires_grad=True)
            y = x
            for _ in range(W5_N):
                y = y * 1.0001
            y.sum().backward()
            return float(x.grad.sum())

        return run

    return factory


# ---------------------------------------------------------------- W6: 32 independent branches
def w6_make(lib):
    def factory():
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.standard_normal((256, 256)).astype(np.float32) / 16)
        ws = [lib.from_numpy(rng.standard_normal((256, 256)).astype(np.float32) / 16).requires_grad_()
              for _ in range(32 * 6)]

        def run():
            total = None
            for b in range(32):
                h = x
                for k in range(6):
                    h = h.mm(ws[b * 6 + k]).tanh()
                total = h.sum() if total is None else total + h.sum()
            for w in ws:
                w.grad = None
            total.backward()
            return total.item()

        return run

    return factory


# ---------------------------------------------------------------- W7: one Adam step over W4's parameters
# W7/L3: the same step over one 1M-parameter tensor (16 MiB with its gradient and moments), which
# stays in the 32 MiB last-level cache; `W7_L3_STEPS` steps per round, so a round is not a few
# timer ticks. Each W7 row is compared with a copy of its own working set's size, measured in the
# same child process between its rounds (NOTE [Copy probe] in src/roof.rs).
W7_L3_PARAMS, W7_L3_STEPS = 1 << 20, 50


def w7_make(lib, shapes=None, steps=1, **opt_kw):
    """`steps` `optimizer.step()` calls of Adam over the W4 MLP's weights (25M float32 parameters) or
    over tensors of `shapes`, gradients already in place: tapegrad's one native call per group against
    PyTorch's default CPU path (the single-tensor loop), and for reference PyTorch's `foreach=True` and
    `fused=True`."""
    def factory():
        rng = np.random.default_rng(0)
        ws = [lib.from_numpy((rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)).requires_grad_()
              for s in (shapes or list(zip(W4_SIZES, W4_SIZES[1:])))]
        for w in ws:
            w.grad = lib.from_numpy(rng.standard_normal(tuple(w.shape)).astype(np.float32) * 1e-3)
        opt = lib.optim.Adam(ws, lr=1e-3, **opt_kw)
        opt.step()  # creates the state, so the timed steps are steady-state ones

        def run():
            for _ in range(steps):
                opt.step()
            return 0.0

        return run

    return factory


def w7_rows(tg, torch, name):
    shapes, steps = ([(W7_L3_PARAMS,)], W7_L3_STEPS) if name == "W7/L3" else (None, 1)
    return {"tapegrad": w7_make(tg, shapes, steps),
            "torch": w7_make(torch, shapes, steps) if torch else None,
            "torch foreach": w7_make(torch, shapes, steps, foreach=True) if torch else None,
            "torch fused": w7_make(torch, shapes, steps, fused=True) if torch else None}


# ---------------------------------------------------------------- W8: W4 as a model: tg.nn + tg.optim
def w8_make(lib):
    """W4's MLP written as users write it: `nn.Sequential` of bias-free `nn.Linear` and `nn.ReLU`,
    `nn.MSELoss`, Adam; one full training step (zero_grad, forward, backward, step)."""
    def factory():
        lib.manual_seed(0)
        layers = []
        for i, (a, b) in enumerate(zip(W4_SIZES, W4_SIZES[1:])):
            layers.append(lib.nn.Linear(a, b, bias=False))
            if i < len(W4_SIZES) - 2:
                layers.append(lib.nn.ReLU())
        model = lib.nn.Sequential(*layers)
        opt = lib.optim.Adam(model.parameters(), lr=1e-4)
        loss_fn = lib.nn.MSELoss()
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.standard_normal((W4_BATCH, W4_SIZES[0])).astype(np.float32))
        y = lib.from_numpy(rng.standard_normal((W4_BATCH, W4_SIZES[-1])).astype(np.float32))

        def run():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()

        return run

    return factory


# ---------------------------------------------------------------- W9: a 100x100 Jacobian of an MLP
W9_N, W9_HIDDEN = 100, 256


def w9_make(lib, api):
    """The Jacobian of x -> W3 tanh(W2 tanh(W1 x + b1) + b2) + b3 (100 -> 256 -> 256 -> 100, float32,
    the parameters captured, not differentiated) at one x, with `func.jacrev` or `func.jacfwd`.
    tapegrad loops over basis vectors (no vmap); torch.func vectorizes them with vmap."""
    def factory():
        rng = np.random.default_rng(0)
        sizes = (W9_N, W9_HIDDEN, W9_HIDDEN, W9_N)
        ws = [lib.from_numpy((rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32))
              for a, b in zip(sizes, sizes[1:])]
        bs = [lib.from_numpy(rng.standard_normal(b).astype(np.float32)) for b in sizes[1:]]
        x = lib.from_numpy(rng.standard_normal(W9_N).astype(np.float32))

        def mlp(x):
            for i, (w, b) in enumerate(zip(ws, bs)):
                x = w @ x + b
                if i < len(ws) - 1:
                    x = x.tanh()
            return x

        jac = getattr(lib.func, api)(mlp)

        def run():
            return float(jac(x).sum().item())

        return run

    return factory


# ---------------------------------------------------------------- floating-point work per round
# Multiply-adds of the products actually computed (an input that does not require grad gets no
# gradient product), two FLOP each; element-wise work is not counted.
W1_FLOP = 2 * STEPS * (N * D_IN * H + N * H * D_OUT      # forward
                       + H * N * D_OUT + N * D_OUT * H    # backward: r.T @ g, g @ w2.T
                       + D_IN * N * H)                    # backward: x.T @ gr (x needs no grad)
_W4_MACS = sum(a * b for a, b in zip(W4_SIZES, W4_SIZES[1:])) * W4_BATCH
W4_FLOP = 2 * (3 * _W4_MACS - W4_BATCH * W4_SIZES[0] * W4_SIZES[1])  # no gradient for the input x
W6_FLOP = 2 * 32 * (6 + 6 + 5) * 256 ** 3  # forward, weight gradients, input gradients but the first


# ---------------------------------------------------------------- MM: single float32 matrix products
# (m, k, n, A transposed, B transposed): a transposed operand is a `.t()` view, as in backward.
MM_SHAPES = {
    "MM4096": (4096, 4096, 4096, False, False),
    "MM4096/1t": (4096, 4096, 4096, False, False),
    "MM256": (256, 256, 256, False, False),
    "MM256/1t": (256, 256, 256, False, False),
    "MM64x1000x100": (64, 1000, 100, False, False),
    "MM1000x64x100-TN": (1000, 64, 100, True, False),
    "MM64x100x1000-NT": (64, 100, 1000, False, True),
}


def mm_flop(name):
    m, k, n, _, _ = MM_SHAPES[name]
    return 2 * m * k * n


def mm_calls(name):
    return max(1, int(2e9 // mm_flop(name)))  # about 2 GFLOP per round


def mm_make(lib, name):
    m, k, n, ta, tb = MM_SHAPES[name]
    calls = mm_calls(name)

    def factory():
        rng = np.random.default_rng(0)
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        if lib == "numpy":
            a, b = (a.T if ta else a), (b.T if tb else b)
            mm = np.matmul
        else:
            a, b = lib.from_numpy(a), lib.from_numpy(b)
            a, b = (a.t() if ta else a), (b.t() if tb else b)
            mm = lib.mm

        def run():
            for _ in range(calls):
                c = mm(a, b)
            return float(c[0, 0])

        return run

    return factory


def workloads():
    tg = try_import("tapegrad")
    torch = try_import("torch")
    w = {
        "W1": {"tapegrad": w1_tapegrad, "torch": w1_torch if torch else None, "numpy": w1_numpy},
        "W2": {"tapegrad": w2_make(tg), "torch": w2_make(torch) if torch else None},
        "W3": {"tapegrad": w3_make(tg, tg.Function), "tapegrad-builtin": w3_make(tg, tg.Function, builtin=True),
               "torch": w3_make(torch, torch.autograd.Function) if torch else None,
               "torch-builtin": w3_make(torch, torch.autograd.Function, builtin=True) if torch else None},
        "W4": {"tapegrad": w4_make(tg), "torch": w4_make(torch) if torch else None},
        "W5": {"tapegrad": w5_make(tg), "torch": w5_make(torch) if torch else None},
        "W6": {"tapegrad": w6_make(tg), "torch": w6_make(torch) if torch else None},
        "W7": w7_rows(tg, torch, "W7"),
        "W7/L3": w7_rows(tg, torch, "W7/L3"),
        "W8": {"tapegrad": w8_make(tg), "torch": w8_make(torch) if torch else None},
        "W9": {"tapegrad-jacrev": w9_make(tg, "jacrev"), "tapegrad-jacfwd": w9_make(tg, "jacfwd"),
               "torch-jacrev": w9_make(torch, "jacrev") if torch else None,
               "torch-jacfwd": w9_make(torch, "jacfwd") if torch else None},
    }
    for name in MM_SHAPES:
        w[name] = {"tapegrad": mm_make(tg, name), "torch": mm_make(torch, name) if torch else None,
                   "numpy": mm_make("numpy", name)}
    return w


UNITS = {"W1": ("ms/step", 1e3 / STEPS), "W2": ("us/op", 1e6 / 1000), "W3": ("us/call", 1e6 / 1000),
         "W4": ("ms/step", 1e3), "W5": ("s", 1.0), "W6": ("ms/step", 1e3), "W7": ("ms/step", 1e3),
         "W7/L3": ("ms/step", 1e3 / W7_L3_STEPS),
         "W8": ("ms/step", 1e3), "W9": ("ms/jac", 1e3)}
UNITS.update({name: ("ms/call", 1e3 / mm_calls(name)) for name in MM_SHAPES})
# GFLOP per round of the dense workloads (W8 also runs Adam, which is not counted).
FLOP = {"W1": W1_FLOP, "W4": W4_FLOP, "W6": W6_FLOP, "W8": W4_FLOP}
FLOP.update({name: mm_flop(name) * mm_calls(name) for name in MM_SHAPES})
# W7's bytes per round: parameter, gradient and two moments read, three written (7 float32 each);
# its working set is 4 float32 per parameter, and the copy it is compared with copies a buffer of half
# that into another (MiB per buffer, `_copy_bandwidth`'s `mbytes`).
W7_PARAMS = {"W7": sum(a * b for a, b in zip(W4_SIZES, W4_SIZES[1:])), "W7/L3": W7_L3_PARAMS}
W7_BYTES = {"W7": 7 * 4 * W7_PARAMS["W7"], "W7/L3": 7 * 4 * W7_L3_PARAMS * W7_L3_STEPS}
W7_COPY_MIB = {k: max(1, round(4 * 4 * n / 2 / 2**20)) for k, n in W7_PARAMS.items()}

# The performance targets that a row of this table measures, one summary line each at the end of the
# run: (row, measure, bound, what). Measures: "ratio" tapegrad / torch of the medians (at most the
# bound); "roof" the fastest round's fraction of the roof (at least); "roof-median" the median round's
# (shown beside W4's, not a target of its own); "copy" W7's traffic over the copy beside it (at
# least); "faults" minor page faults in a steady-state round (at most).
TARGETS = [
    ("MM4096", "roof", 0.88, "SGEMM 4096^3 on all cores"),
    ("MM256", "roof", 0.60, "W6's 256^3"),
    ("MM64x1000x100", "roof", 0.60, "W1's 64x1000x100"),
    ("MM1000x64x100-TN", "roof", 0.60, "W1's 1000x64x100 (A transposed)"),
    ("MM64x100x1000-NT", "roof", 0.60, "W1's 64x100x1000 (B transposed)"),
    ("W1", "ratio", 0.6, "W1 against PyTorch"),
    ("W2", "ratio", 0.15, "W2 against PyTorch"),
    ("W3", "ratio", 0.2, "W3 against PyTorch"),
    ("W4", "ratio", 0.6, "W4 against PyTorch"),
    ("W4", "roof", 0.80, "W4's fastest step"),
    ("W4", "roof-median", 0.80, "W4's median step"),
    ("W4", "faults", 100, "W4: no page faults after its first step"),
    ("W6", "ratio", 0.5, "W6 against PyTorch"),
    ("W7", "copy", 0.70, "the fused optimizer step against the memory's copy bandwidth"),
]


def target_lines(summary):
    """One line per target whose row ran: held or not, with the figure."""
    lines = []
    for row, measure, bound, what in TARGETS:
        got = summary.get(row, {}).get(measure)
        if got is None:
            continue
        if measure == "ratio":
            held, figure = got <= bound, f"{got:.2f}x PyTorch's median (target <= {bound}x)"
        elif measure == "faults":
            held, figure = got <= bound, f"{got} minor faults in a steady-state round (target: none; <= {bound})"
        elif measure == "copy":
            held, figure = got >= bound, f"{100 * got:.0f}% of the copy beside it (target >= {100 * bound:.0f}%)"
        else:
            held, figure = got >= bound, f"{100 * got:.0f}% of the roof (target >= {100 * bound:.0f}%)"
        lines.append(f"target {row:17} {'held' if held else 'NOT held':8}  {what}: {figure}")
    return lines


def chain_memory(libname):
    """Child process: resident bytes per node of a fresh W5 chain (before backward).

    Measured in a process that has built no graph before, so that the chain's memory cannot come
    from pages freed by an earlier run (which made an in-loop measurement read zero).
    """
    lib = __import__(libname)
    x = lib.ones(1, requires_grad=True)
    (x * 1.0001).sum().backward()  # load lazily initialised machinery first
    before = rss_bytes()
    y = x
    for _ in range(W5_N):
        y = y * 1.0001
    print(json.dumps({"bytes_per_node": (rss_bytes() - before) / W5_N}))


def one_thread(name):
    """Whether workload `name` runs on one thread (its child process is started that way)."""
    return name.endswith("/1t")


def minor_faults():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# NOTE [Warm-up of a training loop]: W4, W6 and W8 are training steps, and their targets are about a
# loop's steady state. tapegrad's large-block cache keeps a size only once it has recurred twice
# (NOTE [Large-block cache] in src/alloc.rs, rule 1), so a loop's first three steps map fresh memory;
# with one warm-up round the first two timed rounds of a child pay that (W4 on the 2-core Zen 5: 179
# and 178 ms, then 79-84), and with each child timing only half of `--repeats` rounds, up to half of
# the rounds would be such steps (W4's median 88-92 ms against steps.py's 77-84). Three warm-up rounds,
# for every implementation alike, time the steady state.
WARMUP = {"W4": 3, "W6": 3, "W8": 3}


def run_one(name, repeats, settle=0.0, only=None):
    """Child process: alternate the implementations of one workload (or run `only` that one) and print JSON.

    Besides the times, records each implementation's minor page faults per round (the last round's,
    `resource.getrusage`): a workload that reuses its buffers pays none after its first round."""
    # PyTorch's thread count is set here, once, for the whole child: `/1t` rows on one thread, the
    # others on all. Nothing else may set it (`workloads()` must not), or the `/1t` rows run PyTorch
    # on every core.
    torch = try_import("torch")
    if torch is not None:
        torch.set_num_threads(1 if one_thread(name) else (os.cpu_count() or 1))
    impls = {k: f() for k, f in workloads()[name].items() if f is not None and only in (None, k)}
    times = {k: [] for k in impls}
    extra = {k: {} for k in impls}
    for run in impls.values():  # warm-up (NOTE [Warm-up of a training loop])
        for _ in range(WARMUP.get(name, 1)):
            run()
    for _ in range(repeats):
        for k, run in impls.items():
            if settle:
                time.sleep(settle)
            if name in W7_COPY_MIB:
                # The copy W7 is measured against, at its working set's size, just before the round
                # (NOTE [Copy probe]).
                from tapegrad import _tapegrad as C

                copy = C._copy_bandwidth(os.cpu_count() or 1, W7_COPY_MIB[name], COPY_SECONDS)
                extra[k].setdefault("copy", []).append(copy)
            f0 = minor_faults()
            t0 = time.perf_counter()
            result = run()
            times[k].append(time.perf_counter() - t0)
            extra[k]["faults"] = minor_faults() - f0
            extra[k]["result"] = result
    print(json.dumps({"times": times, "extra": extra}))


def child_run(name, repeats, settle, env, impl=None):
    """Runs one child process over workload `name` and returns its JSON (RuntimeError on failure)."""
    cmd = [sys.executable, __file__, "--child", name, "--repeats", str(repeats), "--settle", str(settle)]
    out = subprocess.run(cmd + (["--impl", impl] if impl else []), capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name, args, env):
    """Times of every implementation of `name`: interleaved in one child, or each in children of its own
    (NOTE [Isolated implementations])."""
    if not args.isolate:
        return child_run(name, args.repeats, args.settle, env)
    impls = [k for k, f in workloads()[name].items() if f is not None]
    data = {"times": {k: [] for k in impls}, "extra": {k: {} for k in impls}}
    first = (args.repeats + 1) // 2
    for repeats in (first, args.repeats - first):
        for k in impls if repeats else ():
            part = child_run(name, repeats, args.settle, env, k)
            data["times"][k] += part["times"][k]
            copies = data["extra"][k].get("copy", []) + part["extra"][k].get("copy", [])
            data["extra"][k].update(part["extra"][k])
            if copies:
                data["extra"][k]["copy"] = copies
    return data


def machine_limits():
    """Child process: the FMA roof and copy bandwidth, one thread and all threads, as JSON."""
    from tapegrad import _tapegrad as C

    if not hasattr(C, "_roof"):
        sys.exit("compare.py measures the machine with the probes of the `bench` feature, which this build of "
                 "tapegrad lacks: build it with `maturin develop --release --features bench`")
    threads = os.cpu_count() or 1
    out = {"threads": threads, "roof": {}, "copy": {}}
    for isa in ("avx512", "avx2"):
        for t in (1, threads):
            try:
                out["roof"][f"{isa}/{t}"] = C._roof(isa, t, 0.3)
            except ValueError:
                pass
    for t in (1, threads):
        out["copy"][str(t)] = C._copy_bandwidth(t, W7_COPY_MIB["W7"], 4 * COPY_SECONDS)
    out["copy_l3"] = C._copy_bandwidth(threads, W7_COPY_MIB["W7/L3"], 4 * COPY_SECONDS)
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=list(UNITS))
    parser.add_argument("--repeats", type=int, default=REPEATS)
    # A sleep before each round: kept for experiments, off by default (NOTE [Isolated implementations]).
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds to sleep before each timed round (lets other libraries' threads idle)")
    # NOTE [Isolated implementations]: interleaved round by round in one process, the libraries share
    # more than the machine: NumPy's OpenBLAS threads spin about 0.1 s after each call and torch's OpenMP
    # threads spin too, so a two-thread product of whichever implementation runs next finds its second
    # core taken (2-core Zen 5: tapegrad's GEMM helper got 9% of a core, OpenBLAS's worker 52%,
    # torch's 37%; 256^3 read 0.13-0.20 ms instead of 0.065). A sleep before each round (`--settle`)
    # frees the core but leaves every next round cold (W9, torch's jacrev: 0.47 -> 11.5 ms median).
    # So by default each implementation runs in a child process of its own, as a program using one
    # library would, the children alternating in two passes so that slow drifts of the machine reach
    # every implementation alike; `--interleave` gives the older one-process rounds.
    parser.add_argument("--interleave", dest="isolate", action="store_false",
                        help="alternate the implementations round by round in one process (default: each "
                             "implementation in a process of its own, two alternating passes)")
    parser.add_argument("--impl", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--memory", help=argparse.SUPPRESS)
    parser.add_argument("--limits", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.limits:
        machine_limits()
        return
    if args.child:
        run_one(args.child, args.repeats, args.settle, args.impl)
        return
    if args.memory:
        chain_memory(args.memory)
        return
    torch = try_import("torch")
    print(f"machine: {cpu_model()} ({platform.machine()}), {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"numpy {np.__version__}; torch {torch.__version__ if torch else 'not installed (comparisons skipped)'}")
    if hasattr(os, "getloadavg"):
        print("load average at start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("implementations: " + ("each in a process of its own, two alternating passes" if args.isolate
                                 else "interleaved round by round in one process (--interleave)") + f"; settle {args.settle} s")
    limits = subprocess.run([sys.executable, __file__, "--limits"], capture_output=True, text=True)
    roof = {}
    if limits.returncode == 0:
        lim = json.loads(limits.stdout.strip().splitlines()[-1])
        threads = lim["threads"]
        for key, gf in lim["roof"].items():
            isa, t = key.split("/")
            print(f"roof  FMA float32 {isa:7} {int(t):3} thread(s) {gf:9.1f} GFLOP/s (measured together)")
        for t, gb in lim["copy"].items():
            print(f"copy  bandwidth           {int(t):3} thread(s) {gb:9.1f} GB/s (read + written; 2 x "
                  f"{W7_COPY_MIB['W7']} MiB, W7's working set)")
        print(f"copy  bandwidth in cache  {threads:3} thread(s) {lim['copy_l3']:9.1f} GB/s (2 x {W7_COPY_MIB['W7/L3']} MiB, "
              "W7/L3's working set)")
        isa = "avx512" if "avx512/1" in lim["roof"] else "avx2"
        one = lim["roof"].get(f"{isa}/1")
        # The all-core roof is the cores' one-thread roofs added: measuring all threads at once
        # needs every core free at the same moment, which a shared machine rarely gives (the
        # all-thread line above then reads low; on a quiet machine the two agree).
        roof = {1: one, threads: threads * one if one else None}
        print(f"'of roof': GFLOP/s of the fastest round over the {isa} roof of the threads the row uses: "
              f"{threads} x the one-thread roof = {roof[threads]:.1f} GFLOP/s (one thread for /1t rows: "
              f"{one:.1f}); W7 rows: GB/s over the best {threads}-thread copy of the same working set, measured "
              "between the row's own rounds")
    else:
        threads = os.cpu_count() or 1
        print(f"machine limits not measured:\n{limits.stderr}")
    print(f"{'id':18} {'impl':18} {'median':>12} {'min..max':>24}  {'tapegrad/torch':>14} {'GFLOP/s':>8} "
          f"{'of roof':>7}  notes")
    summary = {}  # per row: the figures `TARGETS` reads
    for name in args.workloads:
        env = dict(os.environ)
        if one_thread(name):
            env.update(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        try:
            data = measure(name, args, env)
        except RuntimeError as e:
            print(f"{name}: failed\n{e}")
            continue
        if name == "W5":
            for k in data["extra"]:
                mem = subprocess.run([sys.executable, __file__, "--memory", k], capture_output=True, text=True)
                if mem.returncode == 0:
                    data["extra"][k]["bytes_per_node"] = [json.loads(mem.stdout)["bytes_per_node"]]
        unit, scale = UNITS[name]
        med = {k: statistics.median(v) * scale for k, v in data["times"].items()}
        found = summary.setdefault(name, {})
        if "tapegrad" in med and "torch" in med:
            found["ratio"] = med["tapegrad"] / med["torch"]
        row_roof = roof.get(1 if one_thread(name) else threads)
        for k, v in data["times"].items():
            lo, hi = min(v) * scale, max(v) * scale
            base = k.split("-")[0]
            suffix = k[len(base):]
            ratio = ""
            if base == "tapegrad" and ("torch" + suffix) in med:
                ratio = f"{med[k] / med['torch' + suffix]:.2f}"
            gflops = frac = ""
            if name in FLOP:
                g = FLOP[name] / (min(v) * 1e9)
                gflops = f"{g:.1f}"
                frac = f"{100 * g / row_roof:.0f}%" if row_roof else ""
                if k == "tapegrad" and row_roof:
                    found["roof"] = g / row_roof
                    found["roof-median"] = FLOP[name] / (statistics.median(v) * 1e9) / row_roof
            notes = []
            ex = data["extra"][k]
            if name == "W1":
                notes.append(f"final loss {ex['result']:.3g}")
            if name in W7_BYTES:
                gbs = W7_BYTES[name] / (min(v) * 1e9)
                notes.append(f"{gbs:.1f} GB/s of optimizer traffic (fastest round)")
                if ex.get("copy"):
                    frac = f"{100 * gbs / max(ex['copy']):.0f}%"
                    if k == "tapegrad":
                        found["copy"] = gbs / max(ex["copy"])
                    notes.append(f"copy beside it {max(ex['copy']):.1f} GB/s (probes {min(ex['copy']):.0f}.."
                                 f"{max(ex['copy']):.0f})")
            if k == "tapegrad" and "faults" in ex:
                found["faults"] = ex["faults"]
            if name in ("W4", "W6", "W8") and "faults" in ex:
                notes.append(f"{ex['faults']} minor faults/round")
            if "bytes_per_node" in ex:
                notes.append(f"{statistics.median(ex['bytes_per_node']):.0f} bytes/node")
            print(f"{name:18} {k:18} {med[k]:10.3f} {unit:7} {lo:9.3f}..{hi:<9.3f}  {ratio:>14} {gflops:>8} "
                  f"{frac:>7}  {'; '.join(notes)}")
        if name == "W3":
            for lib in ("tapegrad", "torch"):
                if lib in med and lib + "-builtin" in med:
                    print(f"{'':18} {lib + ' overhead':18} {med[lib] - med[lib + '-builtin']:10.3f} us/call  "
                          "(custom minus built-in multiply)")

    for line in target_lines(summary):
        print(line)


if __name__ == "__main__":
    main()
