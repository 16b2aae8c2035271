"""`gradgradcheck` for the carried-over PyTorch tests (our own code).

``gradgradcheck`` checks second derivatives the way PyTorch's does: the first gradients, computed with
``create_graph=True`` against grad-outputs that themselves require grad, are handed to
``tg.autograd.gradcheck``, whose oracle is float64 central differences.
"""

import numpy as np

import tapegrad as tg


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def gradgradcheck(fn, inputs, grad_outputs=None, seed=0):
    inputs = _as_tuple(inputs)
    n = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, tg.Tensor) and t.requires_grad]
    outs = [o for o in _as_tuple(fn(*inputs)) if isinstance(o, tg.Tensor)]
    rng = np.random.default_rng(seed)
    if grad_outputs is None:
        gos = [rng.standard_normal(o.shape) for o in outs]
    else:
        gos = [np.asarray(g.detach().numpy() if isinstance(g, tg.Tensor) else g, dtype=np.float64)
               for g in _as_tuple(grad_outputs)]
    gos = tuple(tg.tensor(g, dtype=tg.float64, requires_grad=True) for g in gos)

    def first(*args):
        ins, go = args[:n], args[n:]
        # the first derivative needs a graph, whatever grad mode the caller is in
        with tg.enable_grad():
            out = [o for o in _as_tuple(fn(*ins)) if isinstance(o, tg.Tensor)]
            grads = tg.autograd.grad(out, [ins[i] for i in diff], list(go), create_graph=True,
                                     allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return tg.autograd.gradcheck(first, inputs + gos)
