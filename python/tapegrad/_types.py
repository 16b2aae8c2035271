"""Small result types."""

from collections import namedtuple

max_result = namedtuple("max", ["values", "indices"])
