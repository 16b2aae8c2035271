"""Per-step timing of one compare.py workload (W4, W6 or W8), to tell what its slow steps are.

Runs the workload's tapegrad step many times in this process and records for each step: its time,
the process's minor and major page faults and involuntary context switches (`getrusage`), the CPU time
of this process's threads (`/proc/self/task/*/schedstat`) and the CPU time the rest of the machine
used meanwhile (`/proc/stat` busy time minus ours; Linux only). It prints the fastest, middle and
slowest steps with those figures and the correlation of step time with the others' CPU time.

    python benches/steps.py W4 --steps 200
    python benches/steps.py W4 --steps 40 --pause 0.7   # a pause before each step (allocator sweeps)
    python benches/steps.py W4 --warmup 30 --steps 8 --pause 1.5   # a long loop's pauses

On the 2-core Zen 5 VM shared with other jobs (2026-11-24, load 2.1-3.2), W4's slow steps (1.15x the
median and more) came with the other processes' CPU time (correlation 0.84 over 200 steps), not with
page faults (1 per step); in a calmer run the slow ones came with more CPU time of our own (the same work
on slower memory, and a team member waiting for a preempted one). After a pause longer than a cached
block's idle life (NOTE [Idle life of a cached block] in src/alloc.rs) a step takes ~1,800 minor faults
(the cached blocks were unmapped) and about 10 ms more CPU.
"""

import argparse
import glob
import json
import os
import resource
import time

import numpy as np
from compare import w4_make, w6_make, w8_make

import tapegrad as tg


def our_cpu_ms():
    total = 0
    for f in glob.glob("/proc/self/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except OSError:  # a thread that exited meanwhile
            pass
    return total / 1e6


def machine_busy_ms():
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) * 1000.0 / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=["W4", "W6", "W8"])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to sleep before each step")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (without pauses)")
    parser.add_argument("--marks", help="write each step's CLOCK_MONOTONIC start, end and figures to this JSON "
                                        "file (to split a `perf record -k CLOCK_MONOTONIC` profile by step: "
                                        "benches/perf_steps.py)")
    args = parser.parse_args()
    run = {"W4": w4_make, "W6": w6_make, "W8": w8_make}[args.workload](tg)()
    for _ in range(args.warmup):
        run()
    rows, marks = [], []
    for _ in range(args.steps):
        if args.pause:
            time.sleep(args.pause)
        r0, c0, b0 = resource.getrusage(resource.RUSAGE_SELF), our_cpu_ms(), machine_busy_ms()
        m0 = time.clock_gettime(time.CLOCK_MONOTONIC)
        t0 = time.perf_counter()
        run()
        dt = (time.perf_counter() - t0) * 1e3
        marks.append((m0, time.clock_gettime(time.CLOCK_MONOTONIC)))
        r1, c1, b1 = resource.getrusage(resource.RUSAGE_SELF), our_cpu_ms(), machine_busy_ms()
        rows.append((dt, r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt, r1.ru_nivcsw - r0.ru_nivcsw,
                     c1 - c0, max(0.0, (b1 - b0) - (c1 - c0))))
    a = np.array(rows)
    if args.marks:
        with open(args.marks, "w") as fh:
            json.dump([{"start": m0, "end": m1, "ms": r[0], "minflt": r[1], "our_cpu_ms": r[4], "others_ms": r[5]}
                       for (m0, m1), r in zip(marks, rows)], fh)
    med = np.median(a[:, 0])
    print(f"{args.workload}, {args.steps} steps, pause {args.pause} s: median {med:.1f} ms, fastest {a[:, 0].min():.1f}, "
          f"p90 {np.percentile(a[:, 0], 90):.1f}, slowest {a[:, 0].max():.1f}; load {os.getloadavg()[0]:.2f}")
    print(f"{'ms':>7} {'minflt':>7} {'majflt':>7} {'invcsw':>7} {'our cpu ms':>11} {'others ms':>10}")
    order = np.argsort(a[:, 0])
    n = len(order)
    for i in list(order[:3]) + list(order[n // 2:n // 2 + 2]) + list(order[-5:]):
        print(f"{a[i, 0]:7.1f} {a[i, 1]:7.0f} {a[i, 2]:7.0f} {a[i, 3]:7.0f} {a[i, 4]:11.1f} {a[i, 5]:10.0f}   step {i}")
    slow = a[:, 0] > 1.15 * med
    if slow.any() and (~slow).any():
        print(f"{slow.sum()} slow steps (> 1.15 x median): others' CPU {a[slow, 5].mean():.0f} ms per step against "
              f"{a[~slow, 5].mean():.0f}, minor faults {a[slow, 1].mean():.0f} against {a[~slow, 1].mean():.0f}")
    if n > 2 and a[:, 5].std() > 0:
        print(f"correlation of step time with the others' CPU time: {np.corrcoef(a[:, 0], a[:, 5])[0, 1]:.2f}")


if __name__ == "__main__":
    main()
