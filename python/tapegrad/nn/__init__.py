"""``tapegrad.nn``: modules, layers and losses after ``torch.nn``, with ``tapegrad.nn.functional``
(the same as functions), ``tapegrad.nn.init`` (initialisations) and ``tapegrad.nn.utils``
(gradient clipping, parameter vectors). See docs/api.md, "tapegrad.nn"."""

from . import functional, init, utils
from .containers import ModuleDict, ModuleList, Sequential
from .layers import (
    ELU,
    GELU,
    BatchNorm1d,
    Bilinear,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MultiheadAttention,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, RemovableHandle
from .parameter import Parameter

__all__ = [
    "functional", "init", "utils", "Module", "Parameter", "RemovableHandle",
    "Sequential", "ModuleList", "ModuleDict",
    "Identity", "Linear", "Bilinear", "Embedding", "LayerNorm", "RMSNorm", "BatchNorm1d", "Dropout", "Flatten",
    "Unflatten", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU", "ELU", "Softplus",
    "MultiheadAttention",
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss",
]
