"""``tapegrad.nn.utils``: gradient clipping and flattening parameters into one vector."""

from __future__ import annotations

import math
from collections.abc import Iterable

import tapegrad as tg

from .._tapegrad import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scales the gradients in place so that their total ``norm_type``-norm is at most ``max_norm``
    (scale ``max_norm / (norm + 1e-6)``, applied only when below 1); returns the total norm before
    clipping.

    >>> import tapegrad as tg
    >>> p = tg.zeros(2, requires_grad=True)
    >>> (p * tg.tensor([3., 4.])).sum().backward()
    >>> tg.nn.utils.clip_grad_norm_([p], 1.0)
    tensor(5.)
    >>> p.grad
    tensor([0.6000, 0.8000])
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return tg.tensor(0.0)
    norm_type = float(norm_type)
    with tg.no_grad():
        if math.isinf(norm_type):
            per = [g.abs().amax() if g.numel() else tg.tensor(0.0, dtype=g.dtype) for g in grads]
            total = tg.stack([t.to(tg.float64) for t in per]).amax()
        else:
            per = [(g.abs() ** norm_type).sum().to(tg.float64) for g in grads]
            total = tg.stack(per).sum() ** (1.0 / norm_type)
        value = total.item()
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
                "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
        coef = max_norm / (value + 1e-6)
        if coef < 1.0 or math.isnan(coef):
            for g in grads:
                g.mul_(coef)
    return total.to(grads[0].dtype)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamps every gradient in place to ``[-clip_value, clip_value]``.

    >>> import tapegrad as tg
    >>> p = tg.zeros(2, requires_grad=True)
    >>> (p * tg.tensor([3., -0.5])).sum().backward()
    >>> tg.nn.utils.clip_grad_value_([p], 1.0)
    >>> p.grad
    tensor([ 1.0000, -0.5000])
    """
    clip_value = float(clip_value)
    with tg.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable).

    >>> import tapegrad as tg
    >>> tg.nn.utils.parameters_to_vector([tg.ones(2, 2), tg.zeros(1)])
    tensor([1., 1., 1., 1., 0.])
    """
    params = list(parameters)
    if not params:
        raise RuntimeError("parameters_to_vector(): expected a non-empty sequence of tensors")
    return tg.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies consecutive slices of ``vec`` into the parameters, in place (under no_grad).

    >>> import tapegrad as tg
    >>> a, b = tg.zeros(2), tg.zeros(1)
    >>> tg.nn.utils.vector_to_parameters(tg.tensor([1., 2., 3.]), [a, b])
    >>> a, b
    (tensor([1., 2.]), tensor([3.]))
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters(): vec has {vec.numel()} elements (shape {tuple(vec.shape)}), the parameters {total}")
    offset = 0
    with tg.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(*p.shape).to(p.dtype))
            offset += n
