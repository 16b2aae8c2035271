"""Utilities beside the core: ``tg.utils.data`` (datasets and loaders)."""

from . import data

__all__ = ["data"]
