"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from .module import Module


class Sequential(Module):
    """Modules called in order, each on the previous one's output; indexable, sliceable, and
    extensible with ``append``.

    >>> import tapegrad as tg
    >>> net = tg.nn.Sequential(tg.nn.Linear(2, 4), tg.nn.ReLU())
    >>> len(net), type(net[-1]).__name__, len(net[:1])
    (2, 'ReLU', 1)
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:
        """Each module in turn.

        >>> import tapegrad as tg
        >>> tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh())(tg.tensor([-1., 0.]))
        tensor([0., 0.])
        """
        for m in self._modules.values():
            input = m(input)
        return input

    def _index(self, idx: int) -> int:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    @overload
    def __getitem__(self, idx: int) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> Sequential: ...
    def __getitem__(self, idx: int | slice) -> Module | Sequential:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[self._index(idx)]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for k in keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]:
            del self._modules[k]
        # keep the numbering 0..n-1, as PyTorch does
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Adds ``module`` at the end; returns the container.

        >>> import tapegrad as tg
        >>> len(tg.nn.Sequential().append(tg.nn.ReLU()))
        1
        """
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered as submodules "0", "1", ...

    >>> import tapegrad as tg
    >>> layers = tg.nn.ModuleList([tg.nn.Linear(2, 2) for _ in range(3)])
    >>> len(layers), len(list(layers.parameters()))
    (3, 6)
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx: int) -> int:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    @overload
    def __getitem__(self, idx: int) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> ModuleList: ...
    def __getitem__(self, idx: int | slice) -> Module | ModuleList:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx: int | slice) -> None:
        items = list(self._modules.values())
        del items[idx]
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        """Adds ``module`` at the end; returns the list.

        >>> import tapegrad as tg
        >>> len(tg.nn.ModuleList().append(tg.nn.ReLU()))
        1
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Adds each of ``modules`` at the end; returns the list.

        >>> import tapegrad as tg
        >>> len(tg.nn.ModuleList().extend([tg.nn.ReLU(), tg.nn.Tanh()]))
        2
        """
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Inserts ``module`` before ``index``.

        >>> import tapegrad as tg
        >>> ml = tg.nn.ModuleList([tg.nn.ReLU()])
        >>> ml.insert(0, tg.nn.Tanh())
        >>> type(ml[0]).__name__
        'Tanh'
        """
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules by name, registered as submodules in insertion order.

    >>> import tapegrad as tg
    >>> d = tg.nn.ModuleDict({"act": tg.nn.ReLU()})
    >>> list(d.keys()), "act" in d
    (['act'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        """The names.

        >>> import tapegrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).keys())
        ['a']
        """
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules.

        >>> import tapegrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).values())
        [ReLU()]
        """
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        """``(name, module)`` pairs.

        >>> import tapegrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).items())
        [('a', ReLU())]
        """
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Removes ``key`` and returns its module.

        >>> import tapegrad as tg
        >>> tg.nn.ModuleDict({"a": tg.nn.ReLU()}).pop("a")
        ReLU()
        """
        return self._modules.pop(key)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Adds or replaces modules from a mapping or ``(name, module)`` pairs.

        >>> import tapegrad as tg
        >>> d = tg.nn.ModuleDict()
        >>> d.update([("a", tg.nn.ReLU())])
        >>> len(d)
        1
        """
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for k, m in pairs:
            self[k] = m
