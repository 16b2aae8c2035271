"""Activation checkpointing on a 32-block MLP: peak memory with and without it, same gradients.

Each block is a transformer-style MLP with a residual connection,
``x + silu(x @ W1 + b1) @ W2``, whose hidden layer is four times wider than ``x``; a plain
training step keeps every block's hidden activations for backward, a checkpointed one keeps only
each block's input and recomputes the block when backward reaches it.

Run ``python examples/checkpointing.py``: each mode runs in a fresh process (peak RSS is a
process-wide high-water mark) and reports the peak resident memory above what the weights and
data already took (measured over a second training step, with the gradients already allocated),
then the gradients of both runs are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import tapegrad as tg
from tapegrad.utils.checkpoint import checkpoint

LAYERS, WIDTH, HIDDEN, BATCH = 32, 256, 1024, 1024


def make_model(layers=LAYERS, width=WIDTH, hidden=HIDDEN, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for _ in range(layers):
        w1 = tg.tensor((rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(np.float32), requires_grad=True)
        b1 = tg.tensor(np.zeros(hidden, np.float32), requires_grad=True)
        w2 = tg.tensor((rng.standard_normal((hidden, width)) / np.sqrt(hidden) / 4).astype(np.float32),
                       requires_grad=True)
        params.append((w1, b1, w2))
    return params


def block(x, w1, b1, w2):
    h = x.mm(w1) + b1
    return x + (h * h.sigmoid()).mm(w2)


def train_step(params, x, target, use_checkpoint, lr=1e-3):
    """One SGD step (the gradients stay in ``.grad``, zeroed before the next step); returns the loss."""
    for layer in params:
        for p in layer:
            if p.grad is not None:
                p.grad.zero_()
    for layer in params:
        if use_checkpoint:
            x = checkpoint(block, x, *layer, use_reentrant=False)
        else:
            x = block(x, *layer)
    loss = ((x - target) ** 2).mean()
    loss.backward()
    with tg.no_grad():
        for layer in params:
            for p in layer:
                p.sub_(p.grad * lr)
    return loss.item()


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(mode, out_path):
    """Runs two training steps in this process and reports the peak resident memory of the second
    one above what was resident before it (weights, data, gradients: everything but the step's own
    activations and temporaries); writes the second step's gradients."""
    params = make_model()
    rng = np.random.default_rng(1)
    x = tg.tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    target = tg.tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    train_step(params, x, target, mode == "checkpoint")  # allocates the gradients
    baseline = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak (VmHWM) to the current resident size
    loss = train_step(params, x, target, mode == "checkpoint")
    peak = _status("VmHWM") - baseline
    np.savez(out_path, *[p.grad.numpy() for layer in params for p in layer])
    return {"mode": mode, "peak_above_baseline_mb": peak / 2**20, "loss": loss}


def main():
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("plain", "checkpoint"):
            path = os.path.join(tmp, f"{mode}.npz")
            # Every allocation of 64 KiB or more gets its own mapping, returned to the system when
            # freed, so that resident memory follows the live tensors (glibc's malloc otherwise
            # keeps freed blocks for reuse).
            env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
            out = subprocess.run([sys.executable, __file__, "--measure", mode, path],
                                 check=True, capture_output=True, text=True, env=env).stdout
            results[mode] = json.loads(out.strip().splitlines()[-1])
            results[mode]["grads"] = dict(np.load(path))
        same = all(np.array_equal(results["plain"]["grads"][k], results["checkpoint"]["grads"][k])
                   for k in results["plain"]["grads"])
    plain = results["plain"]["peak_above_baseline_mb"]
    ckpt = results["checkpoint"]["peak_above_baseline_mb"]
    print(f"{LAYERS} blocks, width {WIDTH}, hidden {HIDDEN}, batch {BATCH}, float32")
    print(f"peak memory above weights and data, plain:         {plain:8.1f} MB")
    print(f"peak memory above weights and data, checkpointed:  {ckpt:8.1f} MB")
    print(f"ratio: {ckpt / plain:.3f}")
    print(f"gradients identical: {same}")
    return ckpt / plain, same


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
