"""``gradcheck``: analytic gradients against central finite differences (float64)."""

import numpy as np

from . import _tapegrad as _C
from ._grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Analytic and numerical gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn, inputs):
    return [o for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Returns True when every d(output)/d(input) matches central differences, else raises naming
    the input and the worst mismatch."""
    inputs = _as_tuple(inputs)
    diff_inputs = [(i, t) for i, t in enumerate(inputs) if isinstance(t, _C.Tensor) and t.requires_grad]
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    for i, t in diff_inputs:
        if t.dtype != _C.float64:
            raise GradcheckError(f"gradcheck: input {i} has dtype {t.dtype}; use float64 for reliable finite differences")
    outputs = _outputs(fn, inputs)
    worst = None
    for oi, out in enumerate(outputs):
        if not out.dtype.is_floating_point:
            continue
        n_out = out.numel()
        for i, t in diff_inputs:
            n_in = t.numel()
            analytic = np.zeros((n_out, n_in))
            for k in range(n_out):
                seed = np.zeros(n_out)
                seed[k] = 1.0
                g_out = _C.tensor(seed.reshape(out.shape), dtype=out.dtype)
                out_k = _outputs(fn, inputs)[oi]
                (g,) = _C._run_grad([out_k], [t], [g_out], False, False, True)
                if g is not None:
                    analytic[k] = g.detach().numpy().reshape(-1)
            numeric = np.zeros((n_out, n_in))
            flat = t.detach().numpy().reshape(-1).copy()
            for j in range(n_in):
                vals = []
                for delta in (eps, -eps):
                    pert = flat.copy()
                    pert[j] += delta
                    with no_grad():
                        t.data.copy_(_C.tensor(pert.reshape(t.shape), dtype=t.dtype))
                        o = _outputs(fn, inputs)[oi]
                        vals.append(o.detach().numpy().astype(np.float64).reshape(-1))
                with no_grad():
                    t.data.copy_(_C.tensor(flat.reshape(t.shape), dtype=t.dtype))
                numeric[:, j] = (vals[0] - vals[1]) / (2 * eps)
            err = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
            if err.size and err.max() > 0:
                k, j = np.unravel_index(np.argmax(err), err.shape)
                # plain floats: NumPy 2 scalars print as np.float64(...) in the message
                cand = (err[k, j], i, oi, int(k), int(j), float(analytic[k, j]), float(numeric[k, j]))
                if worst is None or cand[0] > worst[0]:
                    worst = cand
    if worst is not None:
        _, i, oi, k, j, a, n = worst
        msg = (f"Jacobian mismatch for output {oi} with respect to input {i}: at element {j} of the input "
               f"and element {k} of the output, analytic {a!r} vs numerical {n!r} "
               f"(atol={atol}, rtol={rtol})")
        if raise_exception:
            raise GradcheckError(msg)
        return False
    return True
