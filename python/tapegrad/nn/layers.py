"""Layers: linear, embedding, normalization, dropout, shape, activation and attention modules,
with PyTorch's parameter names, shapes and default initialisations."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import tapegrad as tg

from .._tapegrad import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _dtype(dtype: Any) -> Any:
    return tg.float32 if dtype is None else dtype


class Identity(Module):
    """Returns its input.

    >>> import tapegrad as tg
    >>> tg.nn.Identity()(tg.ones(1))
    tensor([1.])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """The input itself.

        >>> import tapegrad as tg
        >>> tg.nn.Identity().forward(tg.zeros(1))
        tensor([0.])
        """
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out, in) from kaiming_uniform(a=sqrt(5)), bias from
    U(-1/sqrt(in), 1/sqrt(in)), as in PyTorch.

    >>> import tapegrad as tg
    >>> m = tg.nn.Linear(3, 2)
    >>> m(tg.ones(4, 3)).shape, m.weight.shape
    ((4, 2), (2, 3))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(tg.empty(out_features, in_features, dtype=_dtype(dtype)))
        if bias:
            self.bias = Parameter(tg.empty(out_features, dtype=_dtype(dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default initialisation.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(4, 1).reset_parameters()
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        """``F.linear(input, weight, bias)``.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(2, 1, bias=False).forward(tg.zeros(1, 2))
        tensor([[0.]], grad_fn=<MmBackward>)
        """
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y[k] = x1 @ weight[k] @ x2 + bias[k]``; weight (out, in1, in2) and bias from
    U(-1/sqrt(in1), 1/sqrt(in1)).

    >>> import tapegrad as tg
    >>> tg.nn.Bilinear(2, 3, 4)(tg.ones(5, 2), tg.ones(5, 3)).shape
    (5, 4)
    """

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(tg.empty(out_features, in1_features, in2_features, dtype=_dtype(dtype)))
        if bias:
            self.bias = Parameter(tg.empty(out_features, dtype=_dtype(dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1), 1/sqrt(in1)) for weight and bias.

        >>> import tapegrad as tg
        >>> tg.nn.Bilinear(1, 1, 1).reset_parameters()
        """
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``F.bilinear(input1, input2, weight, bias)``.

        >>> import tapegrad as tg
        >>> tg.nn.Bilinear(1, 1, 2).forward(tg.ones(3, 1), tg.ones(3, 1)).shape
        (3, 2)
        """
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Embedding(Module):
    """A lookup table of ``num_embeddings`` rows from N(0, 1); the ``padding_idx`` row starts at
    zero and gets no gradient.

    >>> import tapegrad as tg
    >>> e = tg.nn.Embedding(10, 3, padding_idx=0)
    >>> e(tg.tensor([[0, 2]])).shape, e.weight[0].tolist()
    ((1, 2, 3), [0.0, 0.0, 0.0])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        _weight: Tensor | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(tg.empty(num_embeddings, embedding_dim, dtype=_dtype(dtype)))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """N(0, 1), with the padding row zeroed.

        >>> import tapegrad as tg
        >>> tg.nn.Embedding(2, 2).reset_parameters()
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tg.no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        """``F.embedding(input, weight, padding_idx)``.

        >>> import tapegrad as tg
        >>> tg.nn.Embedding(3, 2).forward(tg.tensor([1])).shape
        (1, 2)
        """
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class LayerNorm(Module):
    """Normalizes over the last dims ``normalized_shape``; weight ones, bias zeros.

    >>> import tapegrad as tg
    >>> tg.nn.LayerNorm(2)(tg.tensor([[1., 3.]]))
    tensor([[-1.0000,  1.0000]], grad_fn=<AddBackward>)
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._bias = bias
        if elementwise_affine:
            self.weight = Parameter(tg.ones(*self.normalized_shape, dtype=_dtype(dtype)))
            if bias:
                self.bias = Parameter(tg.zeros(*self.normalized_shape, dtype=_dtype(dtype)))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        """``F.layer_norm``.

        >>> import tapegrad as tg
        >>> tg.nn.LayerNorm(2, elementwise_affine=False).forward(tg.tensor([[1., 3.]]))
        tensor([[-1.0000,  1.0000]])
        """
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, bias={self._bias}"


class RMSNorm(Module):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dims; weight ones.

    >>> import tapegrad as tg
    >>> tg.nn.RMSNorm(2)(tg.tensor([[3., 4.]])).shape
    (1, 2)
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tg.ones(*self.normalized_shape, dtype=_dtype(dtype)))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Tensor) -> Tensor:
        """``F.rms_norm``.

        >>> import tapegrad as tg
        >>> tg.nn.RMSNorm(1, elementwise_affine=False).forward(tg.tensor([[2.]]))
        tensor([[1.]])
        """
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class BatchNorm1d(Module):
    """Batch normalization over (N, C) or (N, C, L) inputs: batch statistics when training (and
    running estimates updated with ``momentum``; ``momentum=None``: a cumulative average), running
    estimates in eval mode. Buffers ``running_mean``, ``running_var``, ``num_batches_tracked``.

    >>> import tapegrad as tg
    >>> bn = tg.nn.BatchNorm1d(1)
    >>> bn(tg.tensor([[1.], [3.]]))
    tensor([[-1.0000],
            [ 1.0000]], grad_fn=<AddBackward>)
    >>> bn.running_mean, bn.running_var
    (tensor([0.2000]), tensor([1.1000]))
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._bias = bias
        dt = _dtype(dtype)
        if affine:
            self.weight = Parameter(tg.ones(num_features, dtype=dt))
            if bias:
                self.bias = Parameter(tg.zeros(num_features, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tg.zeros(num_features, dtype=dt))
            self.register_buffer("running_var", tg.ones(num_features, dtype=dt))
            self.register_buffer("num_batches_tracked", tg.zeros((), dtype=tg.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """``F.batch_norm`` with this module's mode and statistics.

        >>> import tapegrad as tg
        >>> tg.nn.BatchNorm1d(1).eval().forward(tg.tensor([[2.]])).shape
        (1, 1)
        """
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with tg.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            + (f"bias={self._bias}, " if self.affine else "")
            + f"track_running_stats={self.track_running_stats}"
        )


class Dropout(Module):
    """Zeros elements with probability ``p`` when training (scaling the rest by 1/(1-p)).

    >>> import tapegrad as tg
    >>> tg.nn.Dropout(0.5).eval()(tg.ones(2))
    tensor([1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.dropout(input, p, training)``.

        >>> import tapegrad as tg
        >>> tg.nn.Dropout(0.0).forward(tg.ones(1))
        tensor([1.])
        """
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (default 1..-1).

    >>> import tapegrad as tg
    >>> tg.nn.Flatten()(tg.zeros(2, 3, 4)).shape
    (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        """``input.flatten(start_dim, end_dim)``.

        >>> import tapegrad as tg
        >>> tg.nn.Flatten(0).forward(tg.zeros(2, 3)).shape
        (6,)
        """
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``.

    >>> import tapegrad as tg
    >>> tg.nn.Unflatten(1, (3, 4))(tg.zeros(2, 12)).shape
    (2, 3, 4)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        """The reshaped input.

        >>> import tapegrad as tg
        >>> tg.nn.Unflatten(-1, (2, 2)).forward(tg.zeros(4)).shape
        (2, 2)
        """
        d = self.dim % input.ndim if input.ndim else 0
        shape = (*input.shape[:d], *self.unflattened_size, *input.shape[d + 1:])
        return input.reshape(*shape)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---- activations ---------------------------------------------------------------------------------


class ReLU(Module):
    """``max(x, 0)``.

    >>> import tapegrad as tg
    >>> tg.nn.ReLU()(tg.tensor([-1., 1.]))
    tensor([0., 1.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.relu``.

        >>> import tapegrad as tg
        >>> tg.nn.ReLU().forward(tg.tensor([-2.]))
        tensor([0.])
        """
        return F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """``x * Phi(x)`` (``approximate="tanh"`` for the tanh form).

    >>> import tapegrad as tg
    >>> tg.nn.GELU()(tg.tensor([0.]))
    tensor([0.])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """``F.gelu``.

        >>> import tapegrad as tg
        >>> tg.nn.GELU("tanh").forward(tg.tensor([0.]))
        tensor([0.])
        """
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``.

    >>> import tapegrad as tg
    >>> tg.nn.SiLU()(tg.tensor([0.]))
    tensor([0.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.silu``.

        >>> import tapegrad as tg
        >>> tg.nn.SiLU().forward(tg.tensor([0.]))
        tensor([0.])
        """
        return F.silu(input)


class Tanh(Module):
    """``tanh(x)``.

    >>> import tapegrad as tg
    >>> tg.nn.Tanh()(tg.tensor([0.]))
    tensor([0.])
    """

    def forward(self, input: Tensor) -> Tensor:
        """``input.tanh()``.

        >>> import tapegrad as tg
        >>> tg.nn.Tanh().forward(tg.tensor([0.]))
        tensor([0.])
        """
        return input.tanh()


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``.

    >>> import tapegrad as tg
    >>> tg.nn.Sigmoid()(tg.tensor([0.]))
    tensor([0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        """``input.sigmoid()``.

        >>> import tapegrad as tg
        >>> tg.nn.Sigmoid().forward(tg.tensor([0.]))
        tensor([0.5000])
        """
        return input.sigmoid()


class Softmax(Module):
    """Softmax along ``dim``.

    >>> import tapegrad as tg
    >>> tg.nn.Softmax(dim=0)(tg.tensor([0., 0.]))
    tensor([0.5000, 0.5000])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``input.softmax(dim)`` (``dim=None``: PyTorch's legacy choice, 0 for 0-, 1- and 3-d input, else 1).

        >>> import tapegrad as tg
        >>> tg.nn.Softmax(1).forward(tg.tensor([[0., 0.]]))
        tensor([[0.5000, 0.5000]])
        """
        return input.softmax(self.dim if self.dim is not None else (0 if input.ndim in (0, 1, 3) else 1))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``.

    >>> import tapegrad as tg
    >>> tg.nn.LogSoftmax(dim=0)(tg.tensor([0., 0.]))
    tensor([-0.6931, -0.6931])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``input.log_softmax(dim)``.

        >>> import tapegrad as tg
        >>> tg.nn.LogSoftmax(0).forward(tg.tensor([0.]))
        tensor([0.])
        """
        return input.log_softmax(self.dim if self.dim is not None else (0 if input.ndim in (0, 1, 3) else 1))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    >>> import tapegrad as tg
    >>> tg.nn.LeakyReLU(0.1)(tg.tensor([-1.]))
    tensor([-0.1000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.leaky_relu``.

        >>> import tapegrad as tg
        >>> tg.nn.LeakyReLU().forward(tg.tensor([1.]))
        tensor([1.])
        """
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    >>> import tapegrad as tg
    >>> tg.nn.ELU()(tg.tensor([0.]))
    tensor([0.])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.elu``.

        >>> import tapegrad as tg
        >>> tg.nn.ELU().forward(tg.tensor([1.]))
        tensor([1.])
        """
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``).

    >>> import tapegrad as tg
    >>> tg.nn.Softplus()(tg.tensor([0.]))
    tensor([0.6931])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        """``F.softplus``.

        >>> import tapegrad as tg
        >>> tg.nn.Softplus().forward(tg.tensor([30.]))
        tensor([30.])
        """
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


# ---- attention -----------------------------------------------------------------------------------


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under the class name PyTorch gives MultiheadAttention's ``out_proj`` (so that the
    two print alike).

    >>> import tapegrad as tg
    >>> tg.nn.MultiheadAttention(2, 1).out_proj
    NonDynamicallyQuantizableLinear(in_features=2, out_features=2, bias=True)
    """


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters (``in_proj_weight`` (3E, E) from
    xavier_uniform, ``in_proj_bias`` zeros, ``out_proj`` a Linear with zero bias) and call:
    ``(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``. Bool masks
    mark the positions that may NOT be attended; float masks are added to the scores.

    >>> import tapegrad as tg
    >>> mha = tg.nn.MultiheadAttention(4, 2, batch_first=True)
    >>> x = tg.randn(3, 5, 4)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    ((3, 5, 4), (3, 5, 5))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads != 0:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim != embed_dim are not supported")
        dt = _dtype(dtype)
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.in_proj_weight = Parameter(tg.empty(3 * embed_dim, embed_dim, dtype=dt))
        if bias:
            self.in_proj_bias = Parameter(tg.empty(3 * embed_dim, dtype=dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dt)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """The attention output and (when ``need_weights``) the attention weights.

        >>> import tapegrad as tg
        >>> mha = tg.nn.MultiheadAttention(2, 1)
        >>> out, w = mha.forward(tg.ones(3, 1, 2), tg.ones(3, 1, 2), tg.ones(3, 1, 2), need_weights=False)
        >>> out.shape, w
        ((3, 1, 2), None)
        """
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        L, N, E = query.shape
        S = key.shape[0]
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        H, D = self.num_heads, self.head_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
        bq, bk, bv = (b[:E], b[E:2 * E], b[2 * E:]) if b is not None else (None, None, None)
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk)
        v = F.linear(value, wv, bv)

        # (L, N, E) -> (N, H, L, D)
        def heads(t: Tensor, n: int) -> Tensor:
            return t.reshape(n, N, H, D).permute(1, 2, 0, 3)

        q, k, v = heads(q, L), heads(k, S), heads(v, S)
        scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        neg_inf = tg.full((), -math.inf, dtype=scores.dtype)
        zero = tg.zeros((), dtype=scores.dtype)

        # Masks are added to the scores (a bool mask as -inf/0), as in PyTorch: a row with every
        # position masked is NaN, with NaN gradients, there as here.
        def additive(mask: Tensor) -> Tensor:
            return tg.where(mask, neg_inf, zero) if mask.dtype == tg.bool else mask
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                m = attn_mask.reshape(1, 1, L, S)
            elif attn_mask.ndim == 3:
                if attn_mask.shape[0] != N * H:
                    raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be {(N * H, L, S)}.")
                m = attn_mask.reshape(N, H, L, S)
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
            scores = scores + additive(m)
        elif is_causal:
            # As in PyTorch: is_causal is only a hint about attn_mask, which must be given.
            raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got {tuple(key_padding_mask.shape)}")
            kp = key_padding_mask.reshape(N, 1, 1, S)
            scores = scores + additive(kp)
        attn = scores.softmax(-1)
        attn = F.dropout(attn, self.dropout, self.training)
        out = attn.matmul(v)  # (N, H, L, D)
        out = out.permute(2, 0, 1, 3).reshape(L, N, E)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        weights = None
        if need_weights:
            weights = attn.mean(1) if average_attn_weights else attn
            if not batched:
                weights = weights.squeeze(0)
        return out, weights
