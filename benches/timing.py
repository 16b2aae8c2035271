"""What the benchmark scripts share: the best-of-N timer and the processor's name.

The scripts run as `python benches/<script>.py`, so this directory is on `sys.path` and they import
this module by name.
"""

import platform
import time


def best_of(fn, reps, warmup=False):
    """The fastest of `reps` calls of `fn`, in seconds (after one untimed call when `warmup`)."""
    if warmup:
        fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cpu_model():
    """The processor's model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
