"""A small pytree: tuples (named tuples included), lists and dicts are containers, anything
else is a leaf. ``None`` is an empty container, as in PyTorch's pytree."""

from __future__ import annotations

from typing import Any, Callable


class TreeSpec:
    """How to rebuild a container from its leaves: ``kind`` is "leaf", "none", "tuple",
    "namedtuple", "list" or "dict"; ``context`` the named tuple's type or the dict's keys."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind: str, context: Any, children: list[TreeSpec]) -> None:
        self.kind = kind
        self.context = context
        self.children = children
        self.num_leaves: int = 1 if kind == "leaf" else sum(c.num_leaves for c in children)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeSpec)
            and self.kind == other.kind
            and self.context == other.context
            and self.children == other.children
        )

    def __hash__(self) -> int:  # pragma: no cover - specs are compared, not hashed
        return hash((self.kind, len(self.children)))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind == "list":
            return "[" + inner + "]"
        if self.kind == "namedtuple":
            return f"{self.context.__name__}({inner})"
        return "(" + inner + (",)" if len(self.children) == 1 else ")")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in order, and the spec that rebuilds it."""
    leaves: list[Any] = []

    def go(t: Any) -> TreeSpec:
        if t is None:
            return TreeSpec("none", None, [])
        if _is_namedtuple(t):
            return TreeSpec("namedtuple", type(t), [go(c) for c in t])
        if isinstance(t, tuple):
            return TreeSpec("tuple", None, [go(c) for c in t])
        if isinstance(t, list):
            return TreeSpec("list", None, [go(c) for c in t])
        if isinstance(t, dict):
            keys = list(t.keys())
            return TreeSpec("dict", keys, [go(t[k]) for k in keys])
        leaves.append(t)
        return TreeSpec("leaf", None, [])

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves: list[Any], spec: TreeSpec) -> Any:
    """Rebuilds the tree of ``spec`` from ``leaves``."""
    it = iter(leaves)

    def go(s: TreeSpec) -> Any:
        if s.kind == "leaf":
            return next(it)
        if s.kind == "none":
            return None
        kids = [go(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(kids)
        if s.kind == "namedtuple":
            return s.context(*kids)
        if s.kind == "list":
            return kids
        return dict(zip(s.context, kids))

    return go(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
