"""Anomaly mode: where each node was created and each in-place write happened, and NaN checks."""

from __future__ import annotations

import os
import traceback
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, cast

from . import _tapegrad as _C

if TYPE_CHECKING:
    from typing_extensions import Self

_F = TypeVar("_F", bound=Callable[..., Any])

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_location() -> str:
    """The user's stack (frames outside tapegrad), innermost last, as text.

    >>> from tapegrad._anomaly import user_location
    >>> "in <module>" in user_location()
    True
    """
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames[-8:]))


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly mode on. Making one warns, as PyTorch
    does, that the mode is slow and meant for debugging. Under it, a backward that fails warns
    "Error detected in <node>" with where the node was created and, for a node created by another
    node's backward, where each such ancestor was created.

    >>> import warnings
    >>> import tapegrad as tg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled..."
    ...     with tg.detect_anomaly():
    ...         tg.autograd.is_anomaly_enabled()
    True
    >>> tg.autograd.is_anomaly_enabled()
    False
    """

    _prev: bool
    _prev_nan: bool

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
            "enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> Self:
        self._prev = _C._set_anomaly_enabled(True)
        # check_nan=False keeps the recording but not the NaN check (the flag was ignored)
        self._prev_nan = _C._set_anomaly_check_nan(self.check_nan)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _C._set_anomaly_check_nan(self._prev_nan)
        _C._set_anomaly_enabled(self._prev)
        return False

    def __call__(self, fn: _F) -> _F:
        """``fn`` with anomaly mode on during each call of it.

        >>> import warnings
        >>> import tapegrad as tg
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     checked = tg.detect_anomaly()(tg.autograd.is_anomaly_enabled)
        >>> checked()
        True
        """
        check_nan = self.check_nan

        def wrapper(*args, **kwargs):
            # each call gets its own saved state; the warning was given when the decorator was made
            prev = _C._set_anomaly_enabled(True)
            prev_nan = _C._set_anomaly_check_nan(check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_anomaly_check_nan(prev_nan)
                _C._set_anomaly_enabled(prev)

        return cast(_F, wrapper)


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode (``detect_anomaly``) is on in this thread.

    >>> import tapegrad as tg
    >>> tg.autograd.is_anomaly_enabled()
    False
    """
    return _C._is_anomaly_enabled()
