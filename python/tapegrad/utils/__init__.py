"""Utilities beside the core: ``tg.utils.data`` (datasets and loaders) and ``tg.utils.checkpoint``
(activation checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
