"""``tapegrad.nn.functional``: the layers, activations and losses of ``tapegrad.nn`` as functions.

Everything here is a native operation or a composition of differentiable tapegrad operations, so
gradients of any order come from the parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

import tapegrad as tg

from .. import _tapegrad as _C
from .._tapegrad import one_hot

if TYPE_CHECKING:
    from .._tapegrad import Tensor

__all__ = [
    "linear", "bilinear", "embedding", "one_hot", "dropout", "layer_norm", "rms_norm", "batch_norm",
    "relu", "relu_", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "leaky_relu", "elu", "selu",
    "softplus", "logsigmoid", "hardtanh",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "scaled_dot_product_attention", "pad", "normalize",
]


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


# ---- layers -------------------------------------------------------------------------------------


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``.

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.linear(tg.tensor([[1., 2.]]), tg.tensor([[1., 1.], [0., 1.]]), tg.tensor([0.5, 0.]))
    tensor([[3.5000, 2.0000]])
    """
    out = input.matmul(weight.t()) if weight.ndim == 2 else input.matmul(weight)
    return out + bias if bias is not None else out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``; ``weight`` has shape (out, in1, in2).

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.bilinear(tg.tensor([[1., 2.]]), tg.tensor([[3.]]), tg.ones(1, 2, 1))
    tensor([[9.]])
    """
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-d (out, in1, in2), got shape {tuple(weight.shape)}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input shapes {tuple(input1.shape)} and {tuple(input2.shape)} do not fit weight "
            f"{tuple(weight.shape)}"
        )
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, in1)
    b = input2.reshape(-1, in2)
    t = a.matmul(weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = (t * b.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out_f)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` at the int64 indices ``input``; rows at ``padding_idx`` get no gradient.

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.embedding(tg.tensor([2, 0]), tg.tensor([[0., 1.], [2., 3.], [4., 5.]]))
    tensor([[4., 5.],
            [0., 1.]])
    """
    if input.dtype not in (tg.int64, tg.int32):
        raise RuntimeError(f"embedding(): indices must be an int64 or int32 tensor, got {input.dtype}")
    out = weight.index_select(0, input.reshape(-1)).reshape(*input.shape, weight.shape[1])
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        pad = (input == padding_idx).unsqueeze(-1)
        out = tg.where(pad, out.detach(), out)
    return out


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeros each element with probability ``p`` and scales the rest by ``1 / (1 - p)`` (when training).

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.dropout(tg.ones(3), p=0.5, training=False)
    tensor([1., 1., 1.])
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = (tg.rand(*input.shape, dtype=input.dtype) >= p).to(input.dtype)
    return input * keep * (1.0 / (1.0 - p))


def _norm_dims(input: Tensor, normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
            f"but got input of size {list(input.shape)}"
        )
    return tuple(range(-len(shape), 0))


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``len(normalized_shape)`` dims
    (biased variance).

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.layer_norm(tg.tensor([[1., 3.]]), 2)
    tensor([[-1.0000,  1.0000]])
    """
    dims = _norm_dims(input, normalized_shape)
    var, mean = tg.var_mean(input, dims, keepdim=True, correction=0)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dims; ``eps`` defaults to the dtype's
    machine epsilon, as in PyTorch.

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.rms_norm(tg.tensor([[3., 4.]]), 2)
    tensor([[0.8485, 1.1314]])
    """
    dims = _norm_dims(input, normalized_shape)
    if eps is None:
        eps = float(np.finfo(np.float32 if input.dtype == tg.float32 else np.float64).eps)
    out = input / ((input * input).mean(dims, keepdim=True) + eps).sqrt()
    return out * weight if weight is not None else out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``: unit-norm vectors, and a zero vector stays zero
    (its gradient is ``1 / eps`` per element, as in PyTorch).

    >>> import tapegrad as tg
    >>> tg.nn.functional.normalize(tg.tensor([[3., 4.]], dtype=tg.float64)).tolist()
    [[0.6, 0.8]]
    """
    if not isinstance(input, tg.Tensor):
        raise TypeError(f"normalize(): argument 'input' must be a Tensor, not {type(input).__name__}")
    denom = tg.norm(input, p, dim, keepdim=True).clamp(min=eps)
    return input / denom


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalizes each channel (dim 1) over the batch and any further dims: batch statistics when
    training (updating the running ones in place, with the unbiased variance), the running ones
    otherwise.

    >>> import tapegrad as tg
    >>> F = tg.nn.functional
    >>> F.batch_norm(tg.tensor([[1.], [3.]]), None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    """
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    c = input.shape[1]
    dims = (0, *range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // c
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
        var, mean = tg.var_mean(input, dims, correction=0)
        if running_mean is not None and running_var is not None:
            with tg.no_grad():
                m = mean.detach().to(running_mean.dtype)
                v = (var.detach() * (count / (count - 1))).to(running_var.dtype)
                running_mean.mul_(1.0 - momentum).add_(m * momentum)
                running_var.mul_(1.0 - momentum).add_(v * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm(): running_mean and running_var are needed when not training")
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) / (var.reshape(shape) + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# ---- activations --------------------------------------------------------------------------------
# silu, gelu, elu, selu, leaky_relu, hardtanh, softplus and logsigmoid are tapegrad's native
# operations (their own kernels and backward formulas, PyTorch's conventions at the kinks), with the
# signatures of torch.nn.functional; they are assigned after relu, tanh and sigmoid below.


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.relu(tg.tensor([-1., 2.]))
    tensor([0., 2.])
    """
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """``relu`` in place: ``input`` becomes ``max(input, 0)``; returns it.

    >>> import tapegrad as tg
    >>> tg.nn.functional.relu_(tg.tensor([-1., 2.]))
    tensor([0., 2.])
    """
    return input.relu_()


def tanh(input: Tensor) -> Tensor:
    """``tanh(x)``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.tanh(tg.tensor([0.]))
    tensor([0.])
    """
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.sigmoid(tg.tensor([0.]))
    tensor([0.5000])
    """
    return input.sigmoid()


gelu = _C.gelu
silu = _C.silu
elu = _C.elu
selu = _C.selu
leaky_relu = _C.leaky_relu
hardtanh = _C.hardtanh
softplus = _C.softplus
logsigmoid = _C.logsigmoid


def softmax(input: Tensor, dim: int, dtype: object = None) -> Tensor:
    """Softmax along ``dim`` (see ``tapegrad.softmax``).

    >>> import tapegrad as tg
    >>> tg.nn.functional.softmax(tg.tensor([0., 0.]), dim=0)
    tensor([0.5000, 0.5000])
    """
    return input.softmax(dim, dtype)  # type: ignore[arg-type]


def log_softmax(input: Tensor, dim: int, dtype: object = None) -> Tensor:
    """Log-softmax along ``dim`` (see ``tapegrad.log_softmax``).

    >>> import tapegrad as tg
    >>> tg.nn.functional.log_softmax(tg.tensor([0., 0.]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    return input.log_softmax(dim, dtype)  # type: ignore[arg-type]


# ---- losses -------------------------------------------------------------------------------------


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target) ** 2``, reduced.

    >>> import tapegrad as tg
    >>> tg.nn.functional.mse_loss(tg.tensor([1., 2.]), tg.tensor([0., 0.]))
    tensor(2.5000)
    """
    _check_reduction(reduction)
    d = input - target
    return _reduce(d * d, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``, reduced.

    >>> import tapegrad as tg
    >>> tg.nn.functional.l1_loss(tg.tensor([1., -2.]), tg.tensor([0., 0.]))
    tensor(1.5000)
    """
    _check_reduction(reduction)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 * d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta`` elsewhere (``d = input - target``).

    >>> import tapegrad as tg
    >>> tg.nn.functional.smooth_l1_loss(tg.tensor([0.5, 3.]), tg.tensor([0., 0.]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(tg.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 * d**2`` where ``|d| <= delta``, ``delta * (|d| - 0.5 * delta)`` elsewhere.

    >>> import tapegrad as tg
    >>> tg.nn.functional.huber_loss(tg.tensor([0.5, 3.]), tg.tensor([0., 0.]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    return _reduce(tg.where(d <= delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction)


def _class_dim_last(t: Tensor) -> Tensor:
    """(N, C, d1, ...) -> (N * d1 * ..., C); (C,) -> (1, C); (N, C) unchanged."""
    if t.ndim == 1:
        return t.unsqueeze(0)
    if t.ndim == 2:
        return t
    c = t.shape[1]
    perm = (0, *range(2, t.ndim), 1)
    return t.permute(*perm).reshape(-1, c)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """``-weight[t] * input[n, t]`` for log-probabilities ``input`` (N, C, ...) and class indices
    ``target`` (N, ...); ``mean`` divides by the summed weights of the targets not ignored.

    >>> import tapegrad as tg
    >>> tg.nn.functional.nll_loss(tg.tensor([[-1., -2.], [-3., -4.]]), tg.tensor([1, 0]))
    tensor(2.5000)
    """
    _check_reduction(reduction)
    if target.dtype != tg.int64:
        raise RuntimeError(f"nll_loss(): expected target of dtype int64 (class indices), got {target.dtype}")
    fits = (input.ndim == 1 and target.ndim == 0) or (
        input.ndim >= 2
        and target.ndim == input.ndim - 1
        and target.shape[0] == input.shape[0]
        and tuple(input.shape[2:]) == tuple(target.shape[1:])
    )
    if not fits:
        raise ValueError(
            f"Expected input batch_size and target shapes to fit: input {tuple(input.shape)}, target {tuple(target.shape)}"
        )
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    logp = _class_dim_last(input)  # (M, C)
    t = target.reshape(-1)
    keep = t != ignore_index
    tv = t.numpy()
    bad = tv[(tv != ignore_index) & ((tv < 0) | (tv >= c))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    safe = tg.where(keep, t, tg.zeros_like(t))
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = weight.index_select(0, safe) if weight is not None else tg.ones(t.shape[0], dtype=input.dtype)
    w = w * keep.to(input.dtype)
    loss = -(picked * w)
    if reduction == "none":
        return loss.reshape(*target.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) or (C,) against class indices (int64) or class
    probabilities (float, the shape of ``input``), with PyTorch's ``weight``, ``ignore_index``,
    ``reduction`` and ``label_smoothing``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.cross_entropy(tg.tensor([[0., 0.]]), tg.tensor([1]))
    tensor(0.6931)
    """
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    c = input.shape[class_dim]
    logp = input.log_softmax(class_dim)
    wshape = [1] * input.ndim
    wshape[class_dim] = c
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(
                f"cross_entropy(): class-probability target must have the input's shape {tuple(input.shape)}, "
                f"got {tuple(target.shape)}"
            )
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / c
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(*wshape)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            n = input.numel() // c
            return loss.sum() / n
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    keep = (target != ignore_index).to(input.dtype)
    terms = logp * weight.reshape(*wshape) if weight is not None else logp
    smooth = -terms.sum(class_dim) * keep
    if reduction == "mean":
        if weight is not None:
            safe = tg.where(target != ignore_index, target, tg.zeros_like(target)).reshape(-1)
            denom = (weight.index_select(0, safe) * keep.reshape(-1)).sum()
        else:
            denom = keep.sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / c)


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """``-(t * log(x) + (1 - t) * log(1 - x))`` for probabilities ``x``, each log clamped at -100 as
    in PyTorch.

    >>> import tapegrad as tg
    >>> tg.nn.functional.binary_cross_entropy(tg.tensor([0.5]), tg.tensor([1.]))
    tensor(0.6931)
    """
    _check_reduction(reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    v = input.detach().numpy()
    if ((v < 0) | (v > 1) | np.isnan(v)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * input.log().clamp(min=-100.0) + (1.0 - target) * (1.0 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """``-(pos_weight * t * logsigmoid(x) + (1 - t) * logsigmoid(-x))``, computed stably.

    >>> import tapegrad as tg
    >>> tg.nn.functional.binary_cross_entropy_with_logits(tg.tensor([0.]), tg.tensor([1.]))
    tensor(0.6931)
    """
    _check_reduction(reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size ({tuple(input.shape)})")
    pos = target * logsigmoid(input)
    if pos_weight is not None:
        pos = pos * pos_weight
    loss = -(pos + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log(target) - input)`` for log-probabilities ``input`` (0 where ``target`` is 0);
    ``reduction="batchmean"`` divides the sum by the batch size.

    >>> import tapegrad as tg
    >>> tg.nn.functional.kl_div(tg.tensor([0., 0.]), tg.tensor([1., 0.]), reduction="sum")
    tensor(0.)
    """
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = tg.where(pos, target, tg.ones_like(target))
        loss = tg.where(pos, target * safe.log(), tg.zeros_like(target)) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim > 0 else 1)
    return _reduce(loss, reduction)


# ---- attention ----------------------------------------------------------------------------------


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v``; a bool mask marks the positions that take part.

    >>> import tapegrad as tg
    >>> q = k = v = tg.tensor([[[1., 0.], [0., 1.]]])
    >>> tg.nn.functional.scaled_dot_product_attention(q, k, v).shape
    (1, 2, 2)
    """
    weights = _attention_weights(query, key, attn_mask, is_causal, scale, allowed_true=True)
    weights = dropout(weights, dropout_p, training=dropout_p > 0)
    return weights.matmul(value)


def _attention_weights(
    query: Tensor,
    key: Tensor,
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float | None,
    allowed_true: bool,
) -> Tensor:
    """Softmax attention weights. A bool mask means "may attend" when ``allowed_true`` (SDPA's
    convention) and "may not attend" otherwise (MultiheadAttention's); a float mask is added."""
    s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = query.matmul(key.transpose(-2, -1)) * s
    L, S = query.shape[-2], key.shape[-2]
    if is_causal:
        causal = tg.tensor(np.triu(np.ones((L, S), dtype=bool), 1))
        scores = tg.where(causal, tg.full((), -math.inf, dtype=scores.dtype), scores)
    if attn_mask is not None:
        if attn_mask.dtype == tg.bool:
            blocked = ~attn_mask if allowed_true else attn_mask
            scores = tg.where(blocked, tg.full((), -math.inf, dtype=scores.dtype), scores)
        else:
            scores = scores + attn_mask
    return scores.softmax(-1)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads ``input``: ``pad`` is ``(left, right)`` for the last dimension, then for the one before,
    and so on. ``mode`` is "constant" (``value``, 0 by default; a negative pad crops), "reflect"
    (mirrored without the edge), "replicate" (the edge repeated) or "circular" (wrapped around). Made
    of differentiable slices and concatenations, so gradients of every order flow.

    >>> import tapegrad as tg
    >>> import tapegrad.nn.functional as F
    >>> F.pad(tg.tensor([[1., 2., 3.]]), (2, 1), mode="reflect")
    tensor([[3., 2., 1., 2., 3., 2.]])
    >>> F.pad(tg.tensor([[1., 2.]]), (1, 1), value=9.0)
    tensor([[9., 1., 2., 9.]])
    """
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pads = list(pad)
    if not _all_ints(pads):
        raise TypeError(f"pad(): pad must be a sequence of ints, got {pad!r}")
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pads)} and input of dimension {input.ndim}"
        )
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        k = len(pads) // 2
        if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(pads)} is not supported for {input.ndim}D input tensor: mode {mode!r} pads "
                "the last 1, 2 or 3 dimensions of an input with one or two more (batch and channel)"
            )
        if _any_negative(pads):
            raise RuntimeError(f"pad(): negative padding is supported in constant mode only, got {tuple(pads)}")
    out = input
    for i in range(len(pads) // 2):
        d = input.ndim - 1 - i
        left, right = pads[2 * i], pads[2 * i + 1]
        n = out.shape[d]
        if mode == "constant":
            out = _pad_constant(out, d, left, right, 0.0 if value is None else value)
            continue
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                "Padding size should be less than the corresponding input dimension, but got: padding "
                f"({left}, {right}) at dimension {d} of input {list(input.shape)}"
            )
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (left or right):
            raise RuntimeError(f"pad(): cannot replicate the edge of an empty dimension {d}")
        pieces = []
        if left:
            if mode == "reflect":
                pieces.append(out.narrow(d, 1, left).flip(d))
            elif mode == "replicate":
                pieces.append(out.narrow(d, 0, 1).repeat_interleave(left, d))
            else:
                pieces.append(out.narrow(d, n - left, left))
        pieces.append(out)
        if right:
            if mode == "reflect":
                pieces.append(out.narrow(d, n - 1 - right, right).flip(d))
            elif mode == "replicate":
                pieces.append(out.narrow(d, n - 1, 1).repeat_interleave(right, d))
            else:
                pieces.append(out.narrow(d, 0, right))
        out = tg.cat(pieces, d) if len(pieces) > 1 else out
    return out


def _all_ints(xs: Sequence[object]) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)


def _any_negative(xs: Sequence[int]) -> bool:
    return any(x < 0 for x in xs)


def _pad_constant(x: Tensor, d: int, left: int, right: int, value: float) -> Tensor:
    n = x.shape[d]
    if left < 0 or right < 0:
        start, stop = max(-left, 0), n - max(-right, 0)
        if stop < start:
            raise RuntimeError(
                f"pad(): the negative padding ({left}, {right}) removes more than the {n} elements of dimension {d}"
            )
        x = x.narrow(d, start, stop - start)
        left, right = max(left, 0), max(right, 0)
    if not left and not right:
        return x
    pieces = []
    for width in (left, right):
        shape = list(x.shape)
        shape[d] = width
        pieces.append(tg.full(tuple(shape), value, dtype=x.dtype))
    return tg.cat([pieces[0], x, pieces[1]], d)
