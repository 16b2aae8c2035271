"""``tg.finfo`` and ``tg.iinfo``: the numeric limits of each dtype, as PyTorch's."""

from __future__ import annotations

import builtins

from ._tapegrad import dtype as _dtype
from ._tapegrad import float32 as _float32

# bits, eps, max, smallest normal, decimal precision (resolution = 10 ** -precision)
_FLOATS: dict[str, tuple[int, float, float, float, int]] = {
    "float16": (16, 2.0**-10, 65504.0, 2.0**-14, 3),
    "bfloat16": (16, 2.0**-7, (2.0 - 2.0**-7) * 2.0**127, 2.0**-126, 2),
    "float32": (32, 2.0**-23, (2.0 - 2.0**-23) * 2.0**127, 2.0**-126, 6),
    "float64": (64, 2.0**-52, (2.0 - 2.0**-52) * 2.0**1023, 2.0**-1022, 15),
}
# bits, signed
_INTS: dict[str, tuple[int, builtins.bool]] = {
    "uint8": (8, False),
    "int8": (8, True),
    "int16": (16, True),
    "int32": (32, True),
    "int64": (64, True),
}


class finfo:
    """The limits of a floating-point dtype (the default dtype, float32, when none is given).

    >>> import tapegrad as tg
    >>> tg.finfo(tg.float16).max, tg.finfo(tg.bfloat16).eps
    (65504.0, 0.0078125)
    """

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __init__(self, type: _dtype = _float32) -> None:
        if not isinstance(type, _dtype) or type.name not in _FLOATS:
            raise TypeError(f"tapegrad.finfo() requires a floating point input type, got {type!r}; use tapegrad.iinfo for integers")
        bits, eps, big, tiny, digits = _FLOATS[type.name]
        self.bits, self.eps, self.max, self.min = bits, eps, big, -big
        self.tiny = self.smallest_normal = tiny
        self.resolution = 10.0**-digits
        self.dtype = type.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:.6g}, min={self.min:.6g}, max={self.max:.6g}, eps={self.eps:.6g}, "
            f"smallest_normal={self.smallest_normal:.6g}, tiny={self.tiny:.6g}, dtype={self.dtype})"
        )


class iinfo:
    """The limits of an integer dtype.

    >>> import tapegrad as tg
    >>> tg.iinfo(tg.uint8).max, tg.iinfo(tg.int32).min
    (255, -2147483648)
    """

    bits: int
    max: int
    min: int
    dtype: str

    def __init__(self, type: _dtype) -> None:
        if not isinstance(type, _dtype) or type.name not in _INTS:
            raise TypeError(f"tapegrad.iinfo() requires an integer input type, got {type!r}; use tapegrad.finfo for floats")
        bits, signed = _INTS[type.name]
        self.bits = bits
        self.min = -(2 ** (bits - 1)) if signed else 0
        self.max = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:.6g}, max={self.max:.6g}, dtype={self.dtype})"
