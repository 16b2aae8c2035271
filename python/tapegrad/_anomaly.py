"""Anomaly mode: where each node was created and each in-place write happened, and NaN checks."""

import os
import traceback

from . import _tapegrad as _C

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_location():
    """The user's stack (frames outside tapegrad), innermost last, as text."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames[-8:]))


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly mode on."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = _C._set_anomaly_enabled(True)
        # check_nan=False keeps the recording but not the NaN check (the flag was ignored)
        self._prev_nan = _C._set_anomaly_check_nan(self.check_nan)
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_check_nan(self._prev_nan)
        _C._set_anomaly_enabled(self._prev)
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()
