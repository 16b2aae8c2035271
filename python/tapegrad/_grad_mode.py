"""Grad-mode context managers, usable as decorators too. Grad mode is per thread.

As decorators they accept the spellings PyTorch accepts: ``@tg.no_grad()``, ``@tg.no_grad``,
``tg.no_grad(fn)`` (likewise ``enable_grad``) and ``@tg.set_grad_enabled(flag)``. The mode applies
to every run of the decorated code: for a generator or a coroutine, to each resumption of its body
(``next``, ``send``, ``throw``, ``close``), with the caller's own mode restored in between.
"""

import functools
import inspect
import warnings

from . import _tapegrad as _C


def _drive(flag, gen):
    """Runs ``gen`` (a generator or coroutine) with grad mode ``flag`` at every resumption, passing
    along what is sent or thrown into it, and yields what it yields; returns its return value."""
    resume, arg = gen.send, None
    while True:
        prev = _C._set_grad_enabled(flag)
        try:
            item = resume(arg)
        except StopIteration as stop:
            return stop.value
        finally:
            _C._set_grad_enabled(prev)
        try:
            arg = yield item
            resume = gen.send
        except GeneratorExit:
            prev = _C._set_grad_enabled(flag)
            try:
                gen.close()
            finally:
                _C._set_grad_enabled(prev)
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


def _decorate(flag, fn):
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

        return generator

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def coroutine(*args, **kwargs):
            return await _Awaitable(flag, fn(*args, **kwargs))

        return coroutine

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = _C._set_grad_enabled(flag)
        try:
            return fn(*args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)

    return wrapper


class _GradModeContext:
    """Sets grad mode on entry and restores the previous value on exit. Called with a function
    (``no_grad(fn)``, or ``@no_grad`` without parentheses), it returns the decorated function."""

    _flag = True

    def __new__(cls, orig_func=None):
        if orig_func is not None:
            return _decorate(cls._flag, orig_func)
        return super().__new__(cls)

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._flag)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        return _decorate(self._flag, fn)


class no_grad(_GradModeContext):
    """Operations inside record no history."""

    _flag = False


class enable_grad(_GradModeContext):
    """Operations inside record history (even within ``no_grad``)."""

    _flag = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode`` immediately, and restores it when used as a context manager. As a
    decorator, it restores the mode at once and applies ``mode`` to each call of the function."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._flag = mode
        self._prev = _C._set_grad_enabled(self._flag)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)
        return _decorate(self._flag, fn)


is_grad_enabled = _C.is_grad_enabled
