"""Splits a `perf record -k CLOCK_MONOTONIC` profile of `benches/steps.py --marks` by step, and compares the
slowest steps with the fastest by where their CPU time went (samples per symbol, all threads).

    perf record -F 4000 -k CLOCK_MONOTONIC -o /tmp/w4.data -- python benches/steps.py W4 --steps 40 --marks /tmp/w4.json
    python benches/perf_steps.py /tmp/w4.data /tmp/w4.json

Samples are attributed to a step by their timestamp; a symbol's figure is milliseconds of CPU per step (samples /
frequency), summed over the process's threads (two threads on two cores can give up to 2 x the step's time).
"""

import argparse
import collections
import json
import subprocess

import numpy as np


def samples(data):
    """(time s, thread name, symbol) of every sample of the profile."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym,dso"], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        # comm may contain spaces; the time is the field ending with ':'
        idx = next((i for i, p in enumerate(parts) if p.endswith(":") and p[:-1].replace(".", "").isdigit()), None)
        if idx is None:
            continue
        t = float(parts[idx][:-1])
        rest = parts[idx + 2:]  # after the address
        if rest and rest[-1].startswith("("):
            dso = rest[-1].strip("()").rsplit("/", 1)[-1]
            rest = rest[:-1]
        else:
            dso = "?"
        sym = (" ".join(rest) or "[unknown]") + "  [" + dso + "]"
        yield t, " ".join(parts[:idx - 1]), sym


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("marks")
    parser.add_argument("--freq", type=float, default=4000.0, help="the sampling frequency given to perf record")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with open(args.marks) as fh:
        marks = json.load(fh)
    starts = np.array([m["start"] for m in marks])
    ends = np.array([m["end"] for m in marks])
    per_step = [collections.Counter() for _ in marks]
    for t, _comm, sym in samples(args.data):
        i = np.searchsorted(starts, t, side="right") - 1
        if i >= 0 and t <= ends[i]:
            per_step[i][sym.split("+")[0]] += 1
    ms = np.array([m["ms"] for m in marks])
    order = np.argsort(ms)
    k = max(1, len(order) // 4)
    fast, slow = order[:k], order[-k:]
    def mean(idx):
        c = collections.Counter()
        for i in idx:
            c.update(per_step[i])
        return {s: n / len(idx) / args.freq * 1e3 for s, n in c.items()}
    f, s = mean(fast), mean(slow)
    print(f"fastest {k} steps: {ms[fast].mean():.1f} ms, {sum(f.values()):.1f} ms CPU sampled; "
          f"slowest {k}: {ms[slow].mean():.1f} ms, {sum(s.values()):.1f} ms CPU sampled")
    print(f"{'fast ms':>8} {'slow ms':>8} {'diff':>7}  symbol")
    syms = sorted(set(f) | set(s), key=lambda x: -(s.get(x, 0) + f.get(x, 0)))[:args.top]
    for sym in syms:
        print(f"{f.get(sym, 0):8.2f} {s.get(sym, 0):8.2f} {s.get(sym, 0) - f.get(sym, 0):7.2f}  {sym[:110]}")
    print("largest differences (slow - fast):")
    for sym in sorted(set(f) | set(s), key=lambda x: -(s.get(x, 0) - f.get(x, 0)))[:10]:
        print(f"{f.get(sym, 0):8.2f} {s.get(sym, 0):8.2f} {s.get(sym, 0) - f.get(sym, 0):7.2f}  {sym[:110]}")


if __name__ == "__main__":
    main()
