"""``tapegrad.utils``: helpers built on the engine."""

from . import checkpoint

__all__ = ["checkpoint"]
