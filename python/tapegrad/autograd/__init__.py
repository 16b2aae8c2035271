"""``tapegrad.autograd``: custom functions, ``grad``, ``backward``, anomaly mode, ``gradcheck``,
``gradgradcheck``, ``to_dot``, and ``graph`` (saved-tensor hooks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Union

from .. import _tapegrad as _C
from .._anomaly import detect_anomaly, is_anomaly_enabled
from .._dot import to_dot
from .._function import Function, FunctionCtx, once_differentiable
from .._gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import graph

if TYPE_CHECKING:
    from typing_extensions import TypeAlias

    from .._tapegrad import Tensor, _TensorLike

    _Tensors: TypeAlias = Union[Tensor, Sequence[Tensor]]
    _Grads: TypeAlias = Union[_TensorLike, Sequence[Union[_TensorLike, None]]]

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "grad", "backward", "detect_anomaly",
    "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "to_dot", "graph",
]


def _seq(x):  # a tensor or an iterable of them (or None) as a list
    if x is None:
        return None
    return [x] if isinstance(x, _C.Tensor) else list(x)


def backward(
    tensors: _Tensors,
    grad_tensors: _Grads | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Iterable[Tensor] | None = None,
) -> None:
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad`` (or into ``inputs``).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> tg.autograd.backward([(x * x).sum()])
    >>> x.grad
    tensor([2., 4.])
    """
    tensors = _seq(tensors)
    grads = _seq(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _C._run_backward(tensors, grads, retain_graph, create_graph, _seq(inputs))


def grad(
    outputs: _Tensors,
    inputs: _Tensors,
    grad_outputs: _Grads | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Returns the gradients of ``outputs`` with respect to ``inputs`` as a tuple, without touching
    any ``.grad``. With ``materialize_grads=True``, an input the outputs do not depend on gets zeros
    instead of None (and ``allow_unused`` is implied).

    >>> import tapegrad as tg
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> tg.autograd.grad((x ** 3).sum(), x)
    (tensor([ 3., 12.]),)
    >>> x.grad is None
    True
    """
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
