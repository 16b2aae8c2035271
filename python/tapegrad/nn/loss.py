"""Loss modules: each holds its options and calls its ``tapegrad.nn.functional`` function."""

from __future__ import annotations

from .._tapegrad import Tensor
from . import functional as F
from .module import Module


class MSELoss(Module):
    """Mean squared error.

    >>> import tapegrad as tg
    >>> tg.nn.MSELoss()(tg.tensor([1., 2.]), tg.tensor([0., 0.]))
    tensor(2.5000)
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.mse_loss`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.MSELoss().forward(tg.tensor([1., 2.]), tg.tensor([0., 0.]))
        tensor(2.5000)
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(Module):
    """Mean absolute error.

    >>> import tapegrad as tg
    >>> tg.nn.L1Loss()(tg.tensor([1., -2.]), tg.tensor([0., 0.]))
    tensor(1.5000)
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.l1_loss`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.L1Loss().forward(tg.tensor([1., -2.]), tg.tensor([0., 0.]))
        tensor(1.5000)
        """
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(Module):
    """Smooth L1 (quadratic below ``beta``).

    >>> import tapegrad as tg
    >>> tg.nn.SmoothL1Loss()(tg.tensor([3.]), tg.tensor([0.]))
    tensor(2.5000)
    """

    def __init__(self, beta: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.smooth_l1_loss`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.SmoothL1Loss().forward(tg.tensor([3.]), tg.tensor([0.]))
        tensor(2.5000)
        """
        return F.smooth_l1_loss(input, target, beta=self.beta, reduction=self.reduction)


class HuberLoss(Module):
    """Huber loss (quadratic up to ``delta``).

    >>> import tapegrad as tg
    >>> tg.nn.HuberLoss(delta=2.)(tg.tensor([3.]), tg.tensor([0.]))
    tensor(4.)
    """

    def __init__(self, delta: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.huber_loss`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.HuberLoss(delta=2.).forward(tg.tensor([3.]), tg.tensor([0.]))
        tensor(4.)
        """
        return F.huber_loss(input, target, delta=self.delta, reduction=self.reduction)


class BCELoss(Module):
    """Binary cross entropy of probabilities.

    >>> import tapegrad as tg
    >>> tg.nn.BCELoss()(tg.tensor([0.5]), tg.tensor([1.]))
    tensor(0.6931)
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.BCELoss().forward(tg.tensor([0.5]), tg.tensor([1.]))
        tensor(0.6931)
        """
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(Module):
    """Binary cross entropy of logits (``pos_weight`` scales the positive term).

    >>> import tapegrad as tg
    >>> tg.nn.BCEWithLogitsLoss()(tg.tensor([0.]), tg.tensor([1.]))
    tensor(0.6931)
    """

    def __init__(self, weight: Tensor | None = None, pos_weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy_with_logits`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.BCEWithLogitsLoss().forward(tg.tensor([0.]), tg.tensor([1.]))
        tensor(0.6931)
        """
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, pos_weight=self.pos_weight, reduction=self.reduction)


class KLDivLoss(Module):
    """KL divergence of log-probabilities ``input`` from ``target``.

    >>> import tapegrad as tg
    >>> tg.nn.KLDivLoss(reduction='sum')(tg.tensor([0.]), tg.tensor([1.]))
    tensor(0.)
    """

    def __init__(self, log_target: bool = False, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.kl_div`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.KLDivLoss(reduction='sum').forward(tg.tensor([0.]), tg.tensor([1.]))
        tensor(0.)
        """
        return F.kl_div(input, target, log_target=self.log_target, reduction=self.reduction)


class NLLLoss(Module):
    """Negative log likelihood of log-probabilities at class indices.

    >>> import tapegrad as tg
    >>> tg.nn.NLLLoss()(tg.tensor([[-1., -2.]]), tg.tensor([1]))
    tensor(2.)
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.nll_loss`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.NLLLoss().forward(tg.tensor([[-1., -2.]]), tg.tensor([1]))
        tensor(2.)
        """
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(Module):
    """Cross entropy of logits against class indices or class probabilities.

    >>> import tapegrad as tg
    >>> tg.nn.CrossEntropyLoss()(tg.tensor([[0., 0.]]), tg.tensor([1]))
    tensor(0.6931)
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, label_smoothing: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.cross_entropy`` with this module's options.

        >>> import tapegrad as tg
        >>> tg.nn.CrossEntropyLoss().forward(tg.tensor([[0., 0.]]), tg.tensor([1]))
        tensor(0.6931)
        """
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing, reduction=self.reduction)
