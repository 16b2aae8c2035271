"""``Parameter``: a tensor marked as a module parameter.

tapegrad's ``Tensor`` is a native class that cannot be subclassed, so ``Parameter(data)`` returns a
plain ``Tensor`` (sharing ``data``'s storage, ``requires_grad=True`` by default) that is recorded as
a parameter: ``isinstance(p, tg.nn.Parameter)`` is true for it and false for other tensors. The
record is weak: it lives exactly as long as the tensor's Python object.
"""

from __future__ import annotations

import weakref
from typing import Any

import tapegrad as tg

from .._tapegrad import Tensor

# id(tensor object) -> weak reference to it; an entry leaves with its tensor.
_MARKED: dict[int, weakref.ref[Tensor]] = {}


def _forget(key: int) -> Any:
    def callback(_ref: weakref.ref[Tensor]) -> None:
        if _MARKED.get(key) is _ref:
            del _MARKED[key]

    return callback


def _mark(t: Tensor) -> Tensor:
    key = id(t)
    _MARKED[key] = weakref.ref(t, _forget(key))
    return t


def is_parameter(obj: object) -> bool:
    """True for a tensor made by ``Parameter`` (or marked as one).

    >>> import tapegrad as tg
    >>> tg.nn.parameter.is_parameter(tg.nn.Parameter(tg.zeros(2)))
    True
    """
    ref = _MARKED.get(id(obj))
    return ref is not None and ref() is obj


class _ParameterMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """A module parameter: ``Parameter(data, requires_grad=True)`` returns a tensor sharing
    ``data``'s storage, detached from any graph, that modules register when assigned as attributes.

    >>> import tapegrad as tg
    >>> p = tg.nn.Parameter(tg.ones(2))
    >>> isinstance(p, tg.nn.Parameter), p.requires_grad, p.is_leaf
    (True, True, True)
    >>> isinstance(tg.ones(2), tg.nn.Parameter)
    False
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = tg.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            if not (t.dtype.is_floating_point):
                raise RuntimeError("Only Tensors of floating point dtype can require gradients")
            t.requires_grad_(True)
        return _mark(t)


def parameter_repr(p: Tensor) -> str:
    """PyTorch's printing of a parameter: ``Parameter containing:`` and the tensor.

    >>> import tapegrad as tg
    >>> print(tg.nn.parameter.parameter_repr(tg.nn.Parameter(tg.zeros(1))))
    Parameter containing:
    tensor([0.], requires_grad=True)
    """
    return "Parameter containing:\n" + repr(p)

