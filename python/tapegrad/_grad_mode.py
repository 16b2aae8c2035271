"""Grad-mode context managers (usable as decorators too). Grad mode is per thread."""

import functools

from . import _tapegrad as _C


class _GradModeContext:
    """Sets grad mode on entry and restores the previous value on exit."""

    _flag = True

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._flag)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Operations inside record no history."""

    _flag = False


class enable_grad(_GradModeContext):
    """Operations inside record history (even within ``no_grad``)."""

    _flag = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode`` immediately, and restores it when used as a context manager."""

    def __init__(self, mode):
        self._flag = bool(mode)
        self._prev = _C._set_grad_enabled(self._flag)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)
        flag = self._flag

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C._set_grad_enabled(flag)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_grad_enabled(prev)

        return wrapper


is_grad_enabled = _C.is_grad_enabled
