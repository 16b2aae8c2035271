"""Grad-mode context managers, usable as decorators too. Grad mode is per thread.

As decorators they accept the spellings PyTorch accepts: ``@tg.no_grad()``, ``@tg.no_grad``,
``tg.no_grad(fn)`` (likewise ``enable_grad``) and ``@tg.set_grad_enabled(flag)``. The mode applies
to every run of the decorated code: for a generator or a coroutine, to each resumption of its body
(``next``, ``send``, ``throw``, ``close``), with the caller's own mode restored in between.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, cast, overload

from . import _tapegrad as _C

if TYPE_CHECKING:
    from typing_extensions import Self

_F = TypeVar("_F", bound=Callable[..., Any])


class _Grad:
    """Grad mode ``flag``: entering sets it and returns the previous value, which leaving restores."""

    __slots__ = ("flag",)

    def __init__(self, flag):
        self.flag = flag

    def enter(self):
        return _C._set_grad_enabled(self.flag)

    def leave(self, prev):
        _C._set_grad_enabled(prev)


class _Inference:
    """Inference mode ``on``: it also sets grad mode to ``not on``, as PyTorch's does."""

    __slots__ = ("on",)

    def __init__(self, on):
        self.on = on

    def enter(self):
        return _C._set_inference_mode(self.on), _C._set_grad_enabled(not self.on)

    def leave(self, prev):
        _C._set_inference_mode(prev[0])
        _C._set_grad_enabled(prev[1])


def _mode(flag):
    return flag if isinstance(flag, (_Grad, _Inference)) else _Grad(flag)


def _drive(flag, gen):
    """Runs ``gen`` (a generator or coroutine) with the mode ``flag`` at every resumption, passing
    along what is sent or thrown into it, and yields what it yields; returns its return value."""
    mode = _mode(flag)
    resume, arg = gen.send, None
    while True:
        prev = mode.enter()
        try:
            item = resume(arg)
        except StopIteration as stop:
            return stop.value
        finally:
            mode.leave(prev)
        try:
            arg = yield item
            resume = gen.send
        except GeneratorExit:
            prev = mode.enter()
            try:
                gen.close()
            finally:
                mode.leave(prev)
            raise
        except BaseException as exc:  # noqa: BLE001 - thrown in by the caller; forwarded to the body
            resume, arg = gen.throw, exc


class _Awaitable:
    """Awaiting it runs a coroutine under ``_drive``."""

    __slots__ = ("flag", "coro")

    def __init__(self, flag, coro):
        self.flag, self.coro = flag, coro

    def __await__(self):
        return (yield from _drive(self.flag, self.coro))


def _decorate(flag: bool | _Grad | _Inference, fn: _F) -> _F:
    """``fn`` wrapped so that its body runs with grad mode ``flag``."""
    if inspect.isclass(fn):
        warnings.warn(
            "Decorating classes is deprecated: the mode applies only while the class is called "
            "(its __init__), not to its methods. Decorate __init__ or the methods instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif not callable(fn):
        raise TypeError(f"a grad-mode decorator needs a function, got {type(fn).__name__}")

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args, **kwargs):
            return (yield from _drive(flag, fn(*args, **kwargs)))

        return cast(_F, generator)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def coroutine(*args, **kwargs):
            return await _Awaitable(flag, fn(*args, **kwargs))

        return cast(_F, coroutine)

    mode = _mode(flag)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = mode.enter()
        try:
            return fn(*args, **kwargs)
        finally:
            mode.leave(prev)

    return cast(_F, wrapper)


class _GradModeContext:
    """Sets grad mode on entry and restores the previous value on exit. Called with a function
    (``no_grad(fn)``, or ``@no_grad`` without parentheses), it returns the decorated function."""

    _flag = True
    _prev: bool

    # ``no_grad()`` is the context manager; ``no_grad(fn)`` is ``fn`` decorated.
    @overload
    def __new__(cls, orig_func: None = None) -> Self: ...
    @overload
    def __new__(cls, orig_func: _F) -> _F: ...  # type: ignore[misc]
    def __new__(cls, orig_func=None):
        if orig_func is not None:
            return _decorate(cls._flag, orig_func)
        return super().__new__(cls)

    def __enter__(self) -> Self:
        self._prev = _C._set_grad_enabled(self._flag)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn: _F) -> _F:
        """``fn`` with this grad mode around each call of it.

        >>> import tapegrad as tg
        >>> @tg.no_grad()
        ... def double(t):
        ...     return t * 2
        >>> double(tg.ones(2, requires_grad=True)).requires_grad
        False
        """
        return _decorate(self._flag, fn)


class no_grad(_GradModeContext):
    """Operations inside record no history.

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> with tg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _flag = False


class enable_grad(_GradModeContext):
    """Operations inside record history (even within ``no_grad``).

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> with tg.no_grad(), tg.enable_grad():
    ...     y = x * 2
    >>> y.requires_grad
    True
    """

    _flag = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode`` immediately, and restores it when used as a context manager. As a
    decorator, it restores the mode at once and applies ``mode`` to each call of the function.

    >>> import tapegrad as tg
    >>> with tg.set_grad_enabled(False):
    ...     tg.is_grad_enabled()
    False
    >>> tg.is_grad_enabled()
    True
    """

    def __new__(cls, mode: bool) -> Self:
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._flag = mode
        self._prev = _C._set_grad_enabled(self._flag)

    def __enter__(self) -> Self:
        return self

    def __call__(self, fn: _F) -> _F:
        """``fn`` with grad mode ``mode`` around each call of it (the mode is restored at once).

        >>> import tapegrad as tg
        >>> @tg.set_grad_enabled(False)
        ... def double(t):
        ...     return t * 2
        >>> double(tg.ones(2, requires_grad=True)).requires_grad
        False
        """
        _C._set_grad_enabled(self._prev)
        return _decorate(self._flag, fn)


class inference_mode:
    """Inference mode: like ``no_grad`` (nothing is recorded, even under ``enable_grad`` inside
    it), and the tensors made inside are *inference tensors* (``t.is_inference()``), which
    autograd refuses outside inference mode: saving one for backward, writing one in place, or
    setting ``requires_grad`` on one raises. ``inference_mode(False)`` turns it off (and grad mode
    on) inside an inference-mode region. Usable as a decorator, bare or called, on functions,
    generators and coroutines.

    >>> import tapegrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> with tg.inference_mode():
    ...     y = w * 2
    >>> y.requires_grad, y.is_inference()
    (False, True)
    >>> tg.is_inference_mode_enabled()
    False
    """

    @overload
    def __new__(cls, mode: bool = True) -> Self: ...
    @overload
    def __new__(cls, mode: _F) -> _F: ...  # type: ignore[misc]
    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return _decorate(_Inference(True), mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.mode = mode

    def __enter__(self) -> Self:
        self._prev = _Inference(self.mode).enter()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _Inference(self.mode).leave(self._prev)
        return False

    def __call__(self, fn: _F) -> _F:
        """``fn`` with inference mode ``mode`` around each call (each resumption of a generator
        or coroutine).

        >>> import tapegrad as tg
        >>> @tg.inference_mode()
        ... def predict(t):
        ...     return t * 2
        >>> predict(tg.ones(1)).is_inference()
        True
        """
        return _decorate(_Inference(self.mode), fn)

    def clone(self) -> inference_mode:
        """A new context with the same mode (PyTorch's spelling).

        >>> import tapegrad as tg
        >>> tg.inference_mode(False).clone().mode
        False
        """
        return inference_mode(self.mode)


is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled
