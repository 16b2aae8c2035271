"""``tapegrad.autograd``: custom functions, ``grad``, ``backward``, anomaly mode, ``gradcheck``,
``gradgradcheck``, ``to_dot``."""

from . import _tapegrad as _C
from ._anomaly import detect_anomaly, is_anomaly_enabled
from ._dot import to_dot
from ._function import Function, FunctionCtx, once_differentiable
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "grad", "backward", "detect_anomaly",
    "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "to_dot",
]


def _seq(x):
    if x is None:
        return None
    return [x] if isinstance(x, _C.Tensor) else list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad`` (or into ``inputs``)."""
    tensors = _seq(tensors)
    grads = _seq(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _C._run_backward(tensors, grads, retain_graph, create_graph, _seq(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """Returns the gradients of ``outputs`` with respect to ``inputs`` as a tuple, without touching
    any ``.grad``. With ``materialize_grads=True``, an input the outputs do not depend on gets zeros
    instead of None (and ``allow_unused`` is implied)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    allow_unused = bool(allow_unused) or materialize_grads
    outputs = _seq(outputs)
    inputs = _seq(inputs)
    if not inputs:
        raise ValueError("grad requires non-empty inputs.")
    grads = _seq(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    result = _C._run_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        # Under create_graph the zeros take part in the next differentiation, as PyTorch's do.
        result = [_C.zeros(*t.shape, dtype=t.dtype, requires_grad=create_graph) if g is None else g
                  for g, t in zip(result, inputs)]
    return tuple(result)
