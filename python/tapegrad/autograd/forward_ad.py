"""``tapegrad.autograd.forward_ad``: forward-mode automatic differentiation with dual tensors.

A dual tensor carries a *tangent* (a directional derivative) beside its value, at a *dual level*.
Every built-in operation on dual tensors computes its result's tangent in the same call, so the
tangent of a function's output is its Jacobian-vector product. Levels nest (each has its own
tangents), unlike PyTorch, where a second level is an error; a tangent's level ends when the level
is exited.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import _tapegrad as _C

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


def _is_fwd_grad_enabled() -> bool:
    """Whether operations on this thread compute tangents (forward grad mode, on by default; off
    inside a custom Function's ``forward``).

    >>> _is_fwd_grad_enabled()
    True
    """
    return _C._is_fwd_grad_enabled()


class _set_fwd_grad_enabled:
    """Sets this thread's forward grad mode from construction; as a context manager, restores the
    previous mode at the end of the ``with`` block. While off, operations compute no tangents.

    >>> import tapegrad as tg
    >>> with dual_level():
    ...     d = make_dual(tg.tensor([1.]), tg.tensor([1.]))
    ...     with _set_fwd_grad_enabled(False):
    ...         y = d * 2
    ...     unpack_dual(y).tangent is None
    True
    """

    def __init__(self, mode: bool) -> None:
        self.prev = _C._set_fwd_grad_enabled(bool(mode))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _C._set_fwd_grad_enabled(self.prev)


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal (a view of the tensor without the level's
    tangent) and the tangent (``None`` when the tensor has none at that level).

    >>> import tapegrad as tg
    >>> UnpackedDualTensor(tg.tensor([1.]), None).tangent is None
    True
    """

    primal: _C.Tensor
    tangent: _C.Tensor | None


def enter_dual_level() -> int:
    """Enters a new dual level and returns its index (0 for the outermost). Levels nest; exit
    them in the reverse order (:func:`exit_dual_level`), or use :class:`dual_level`.

    >>> level = enter_dual_level()
    >>> exit_dual_level(level=level)
    """
    return _C._enter_dual_level()


def exit_dual_level(*, level: int | None = None) -> None:
    """Exits dual level ``level`` (the last one entered by default); only the last level may be
    exited. The tangents of that level are dropped.

    >>> level = enter_dual_level()
    >>> exit_dual_level()
    """
    _C._exit_dual_level(level)


class dual_level:
    """Context manager of a dual level: entered on ``with``, exited at its end. ``as`` gives the
    level's index. Usable as a decorator too.

    >>> import tapegrad as tg
    >>> with dual_level():
    ...     x = make_dual(tg.tensor([1., 2.]), tg.tensor([1., 0.]))
    ...     unpack_dual(x * x).tangent
    tensor([2., 0.])
    """

    def __enter__(self) -> int:
        self._level = enter_dual_level()
        return self._level

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level(level=self._level)

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper


def _check_float(t: Any, what: str) -> None:
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"make_dual: {what} must be a Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")


def make_dual(tensor: _C.Tensor, tangent: _C.Tensor, *, level: int | None = None) -> _C.Tensor:
    """A dual tensor: a view of ``tensor`` whose tangent at ``level`` (the last level entered by
    default) is ``tangent``. The tangent must have the tensor's shape; both must be floating point.

    >>> import tapegrad as tg
    >>> with dual_level():
    ...     d = make_dual(tg.tensor([0.]), tg.tensor([3.]))
    ...     unpack_dual(d.sin()).tangent
    tensor([3.])
    """
    if _C._dual_level_count() == 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    _check_float(tensor, "primal")
    _check_float(tangent, "tangent")
    return _C._make_dual(tensor, tangent, level)


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """The primal and the tangent of ``tensor`` at ``level`` (the last level entered by default),
    as ``UnpackedDualTensor(primal, tangent)``; the tangent is ``None`` when there is none (also
    when no level is live, and for a value that is not a tensor, returned as the primal).

    >>> import tapegrad as tg
    >>> unpack_dual(tg.tensor([1.])).tangent is None
    True
    """
    if _C._dual_level_count() == 0 or not isinstance(tensor, _C.Tensor):
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)
