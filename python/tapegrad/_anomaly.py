"""Anomaly mode: where each node was created and each in-place write happened, and NaN checks."""

import os
import traceback
import warnings

from . import _tapegrad as _C

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_location():
    """The user's stack (frames outside tapegrad), innermost last, as text."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames[-8:]))


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly mode on. Making one warns, as PyTorch
    does, that the mode is slow and meant for debugging. Under it, a backward that fails warns
    "Error detected in <node>" with where the node was created and, for a node created by another
    node's backward, where each such ancestor was created."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
            "enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )

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

        return wrapper


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()
