"""tg.linalg (faer) against numpy.linalg (LAPACK), float64, one process, best of N runs.

    python benches/linalg.py [n]

Prints milliseconds per call for each operation at n×n (default 512).
"""

import sys

import numpy as np
from timing import best_of

import tapegrad as tg


def best(fn, repeat=5):
    return best_of(fn, repeat, warmup=True) * 1e3


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    s = a @ a.T
    b = rng.standard_normal((n, n))
    ta, ts, tb = tg.tensor(a), tg.tensor(s), tg.tensor(b)
    cases = [
        ("solve", lambda: tg.linalg.solve(ta, tb), lambda: np.linalg.solve(a, b)),
        ("inv", lambda: tg.linalg.inv(ta), lambda: np.linalg.inv(a)),
        ("det", lambda: tg.linalg.slogdet(ta), lambda: np.linalg.slogdet(a)),
        ("cholesky", lambda: tg.linalg.cholesky(ts), lambda: np.linalg.cholesky(s)),
        ("qr", lambda: tg.linalg.qr(ta), lambda: np.linalg.qr(a)),
        ("eigh", lambda: tg.linalg.eigh(ts), lambda: np.linalg.eigh(s)),
        ("svd", lambda: tg.linalg.svd(ta, full_matrices=False), lambda: np.linalg.svd(a, full_matrices=False)),
    ]
    print(f"{n}x{n} float64, ms per call (best of 5); numpy {np.__version__}")
    print(f"{'op':10} {'tapegrad':>10} {'numpy':>10} {'ratio':>7}")
    for name, f_tg, f_np in cases:
        x, y = best(f_tg), best(f_np)
        print(f"{name:10} {x:10.2f} {y:10.2f} {x / y:7.2f}")


if __name__ == "__main__":
    main()
