"""``tapegrad.nn``: modules, layers, losses (``tapegrad.nn.functional``), initialisations
(``tapegrad.nn.init``) and utilities (``tapegrad.nn.utils``), after ``torch.nn``."""

from . import functional

__all__ = ["functional"]
