"""``tapegrad.nn.init``: in-place initialisations (under no_grad, each returns the tensor), drawing
from tapegrad's generator (``tg.manual_seed``), with PyTorch's formulas for bounds and gains."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from .._tapegrad import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "xavier_uniform_", "xavier_normal_",
    "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    >>> import tapegrad as tg
    >>> round(tg.nn.init.calculate_gain("relu"), 4)
    1.4142
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in t.shape[2:]:
        receptive *= s
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fill(t: Tensor, values: Tensor) -> Tensor:
    with tg.no_grad():
        t.copy_(values.to(t.dtype))
    return t


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fills with values from U(a, b).

    >>> import tapegrad as tg
    >>> t = tg.nn.init.uniform_(tg.empty(100), -2., -1.)
    >>> bool(t.amin() >= -2) and bool(t.amax() < -1)
    True
    """
    r = tg.rand(*tensor.shape, dtype=tg.float64)
    return _fill(tensor, r * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fills with values from N(mean, std**2).

    >>> import tapegrad as tg
    >>> tg.nn.init.normal_(tg.empty(2, 3)).shape
    (2, 3)
    """
    r = tg.randn(*tensor.shape, dtype=tg.float64)
    return _fill(tensor, r * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills with ``val``.

    >>> import tapegrad as tg
    >>> tg.nn.init.constant_(tg.empty(2), 0.5)
    tensor([0.5000, 0.5000])
    """
    with tg.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fills with zeros.

    >>> import tapegrad as tg
    >>> tg.nn.init.zeros_(tg.ones(2))
    tensor([0., 0.])
    """
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fills with ones.

    >>> import tapegrad as tg
    >>> tg.nn.init.ones_(tg.zeros(2))
    tensor([1., 1.])
    """
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    >>> import tapegrad as tg
    >>> bool(tg.nn.init.xavier_uniform_(tg.empty(3, 5)).abs().max() <= 1.0)
    True
    """
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    >>> import tapegrad as tg
    >>> tg.nn.init.xavier_normal_(tg.empty(3, 5)).shape
    (3, 5)
    """
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (``Linear`` uses ``a=sqrt(5)``).

    >>> import tapegrad as tg, math
    >>> bool(tg.nn.init.kaiming_uniform_(tg.empty(4, 9), a=math.sqrt(5)).abs().max() <= 1 / 3)
    True
    """
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std**2) with ``std = gain / sqrt(fan)``.

    >>> import tapegrad as tg
    >>> tg.nn.init.kaiming_normal_(tg.empty(4, 9), mode="fan_out").shape
    (4, 9)
    """
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Tensor:
    """N(mean, std**2) restricted to ``[a, b]`` (draws outside are redrawn).

    >>> import tapegrad as tg
    >>> t = tg.nn.init.trunc_normal_(tg.empty(1000), std=1.0, a=-0.5, b=0.5)
    >>> bool(t.abs().max() <= 0.5)
    True
    """
    if not a < b:
        raise ValueError(f"trunc_normal_: a ({a}) must be below b ({b})")
    n = tensor.numel()
    out = np.empty(0)
    for _ in range(1000):
        if out.size >= n:
            break
        draw = tg.randn(max(2 * n, 16), dtype=tg.float64).numpy() * std + mean
        out = np.concatenate([out, draw[(draw >= a) & (draw <= b)]])
    else:
        raise ValueError(f"trunc_normal_: [a, b] = [{a}, {b}] is too unlikely under N({mean}, {std}**2)")
    return _fill(tensor, tg.tensor(out[:n].reshape(tensor.shape)))


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """A (semi-)orthogonal matrix (the Q of a QR factorisation of Gaussian values, signs fixed by
    R's diagonal), times ``gain``; further dims are flattened into the columns.

    >>> import tapegrad as tg, numpy as np
    >>> q = tg.nn.init.orthogonal_(tg.empty(3, 3, dtype=tg.float64)).numpy()
    >>> bool(np.allclose(q @ q.T, np.eye(3)))
    True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows if rows else 0
    flat = tg.randn(rows, cols, dtype=tg.float64).numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, tg.tensor(q.reshape(tensor.shape) * gain))
