"""``tapegrad.autograd``: custom functions, ``grad``, ``backward``, anomaly mode, ``gradcheck``,
``gradgradcheck``, ``to_dot``, and ``graph`` (saved-tensor hooks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Union, cast

from .. import _tapegrad as _C
from .._anomaly import detect_anomaly, is_anomaly_enabled
from .._dot import to_dot
from .._function import Function, FunctionCtx, once_differentiable
from .._grad_mode import set_grad_enabled
from .._gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import forward_ad, functional, graph  # functional: issue 18's vjp, jvp, jacobian, hessian, hvp, vhp

if TYPE_CHECKING:
    from typing_extensions import TypeAlias

    from .._tapegrad import Tensor, _TensorLike

    _Tensors: TypeAlias = Union[Tensor, graph.GradientEdge, Sequence[Union[Tensor, graph.GradientEdge]]]
    _Inputs: TypeAlias = Union[Tensor, graph.GradientEdge, Sequence[Union[Tensor, graph.GradientEdge]]]
    _Grads: TypeAlias = Union[_TensorLike, Sequence[Union[_TensorLike, None]]]

__all__ = [
    "Function", "FunctionCtx", "once_differentiable", "grad", "backward", "detect_anomaly",
    "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "to_dot", "graph",
    "queue_callback", "Variable", "functional", "forward_ad",
]


def _seq(x):  # a tensor or edge, or an iterable of them (or None), as a list
    if x is None:
        return None
    return [x] if isinstance(x, (_C.Tensor, graph.GradientEdge)) else list(x)


def _edge(x):  # a tensor or an edge as a (node, input_nr) pair
    return tuple(x if isinstance(x, graph.GradientEdge) else graph.get_gradient_edge(x))


def backward(
    tensors: _Tensors,
    grad_tensors: _Grads | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: _Inputs | None = None,
) -> None:
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad`` (or into ``inputs``).
    An input may be a ``graph.GradientEdge``: an edge into a leaf's accumulator stands for the
    leaf, an edge into another node stops the pass there.

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
    ins = [inputs] if isinstance(inputs, graph.GradientEdge) else _seq(inputs)
    if ins is not None:
        # An edge into a leaf's accumulator stands for the leaf itself.
        ins = [i.node.variable if isinstance(i, graph.GradientEdge) and i.node.variable is not None else i
               for i in ins]
    from_edges = any(isinstance(t, graph.GradientEdge) for t in tensors)
    if ins is not None and not ins:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if not from_edges and (ins is None or not any(isinstance(i, graph.GradientEdge) for i in ins)):
        _C._run_backward(cast("list[Tensor]", tensors), grads, retain_graph, create_graph, ins)
        return
    if ins is None:
        # An edge among the outputs: every leaf reached accumulates, as from tensors.
        _C._run_from_edges([_edge(t) for t in tensors], grads, retain_graph, create_graph, None)
        return
    # Edges into inner nodes: the pass stops there (nothing stores the gradient flowing into one);
    # the tensors among the inputs get theirs in .grad, as without edges.
    edges = [_edge(i) for i in ins]
    if from_edges:
        result = _C._run_from_edges([_edge(t) for t in tensors], grads, retain_graph, create_graph, edges)
    else:
        result = _C._run_grad_edges(cast("list[Tensor]", tensors), edges, grads, retain_graph, create_graph)
    done: list[Tensor] = []
    for i, g in zip(ins, result):
        if g is None or isinstance(i, graph.GradientEdge) or any(i is d for d in done):
            continue
        done.append(i)
        if i.grad_fn is not None:
            i.retain_grad()
        with set_grad_enabled(create_graph):
            i.grad = g if i.grad is None else i.grad + g


def grad(
    outputs: _Tensors,
    inputs: _Inputs,
    grad_outputs: _Grads | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Returns the gradients of ``outputs`` with respect to ``inputs`` as a tuple, without touching
    any ``.grad``. An input may be a ``graph.GradientEdge`` (the gradient flowing there). With ``materialize_grads=True``, an input the outputs do not depend on gets zeros
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
    inputs = [inputs] if isinstance(inputs, graph.GradientEdge) else _seq(inputs)
    if not inputs:
        raise ValueError("grad requires non-empty inputs.")
    grads = _seq(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    from_edges = any(isinstance(o, graph.GradientEdge) for o in outputs)
    if from_edges or any(isinstance(i, graph.GradientEdge) for i in inputs):
        edges = [_edge(i) for i in inputs]
        if from_edges:
            result = _C._run_from_edges([_edge(o) for o in outputs], grads, retain_graph, create_graph, edges)
        else:
            result = _C._run_grad_edges(cast("list[Tensor]", outputs), edges, grads, retain_graph, create_graph)
        if not allow_unused and any(g is None for g in result):
            raise RuntimeError(
                "One of the differentiated Tensors appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            )
        if materialize_grads:
            # A tensor input that got nothing gets zeros; an edge has no shape to make them of.
            if any(g is None and isinstance(i, graph.GradientEdge) for g, i in zip(result, inputs)):
                raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
            result = [_C.zeros(*i.shape, dtype=i.dtype, requires_grad=create_graph) if g is None else g
                      for g, i in zip(result, inputs)]
        return tuple(result)
    # No GradientEdge here: the native call checks that each input is a tensor.
    result = _C._run_grad(cast("list[Tensor]", outputs), cast("list[Tensor]", inputs), grads, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        # Under create_graph the zeros take part in the next differentiation, as PyTorch's do.
        result = [_C.zeros(*t.shape, dtype=t.dtype, requires_grad=create_graph) if g is None else g
                  for g, t in zip(result, inputs)]
    return tuple(result)


def queue_callback(callback: Callable[[], object]) -> None:
    """Runs ``callback()`` once the backward pass running on this thread has finished (call it
    from a hook or a custom function's backward); outside a backward pass it raises. PyTorch's
    spelling is ``Variable._execution_engine.queue_callback(callback)``, which works too.

    >>> import tapegrad as tg
    >>> done = []
    >>> x = tg.ones(1, requires_grad=True)
    >>> _ = x.register_hook(lambda g: tg.autograd.queue_callback(lambda: done.append("end")))
    >>> (x * 2).sum().backward()
    >>> done
    ['end']
    """
    _C._queue_callback(callback)


class _ExecutionEngine:
    """PyTorch's ``Variable._execution_engine``: only ``queue_callback``."""

    @staticmethod
    def queue_callback(callback: Callable[[], object]) -> None:
        """See ``tg.autograd.queue_callback``.

        >>> import tapegrad as tg
        >>> tg.autograd.Variable._execution_engine.queue_callback is not None
        True
        """
        _C._queue_callback(callback)


class Variable:
    """Only for PyTorch's spelling ``Variable._execution_engine.queue_callback(cb)``; tensors are
    ``tg.Tensor``.

    >>> import tapegrad as tg
    >>> hasattr(tg.autograd.Variable._execution_engine, "queue_callback")
    True
    """

    _execution_engine = _ExecutionEngine()
