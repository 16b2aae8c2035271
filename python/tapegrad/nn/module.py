"""``Module``: the base class of layers, with PyTorch's registration rules (parameters, buffers and
submodules by attribute), traversal orders and dotted names, ``state_dict``, modes, hooks and
``__repr__``."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import tapegrad as tg

from .._tapegrad import Tensor
from .parameter import Parameter, _mark, is_parameter

_hook_ids = itertools.count()


class RemovableHandle:
    """What ``register_forward_hook`` and ``register_forward_pre_hook`` return: ``remove()`` takes
    the hook away (again: nothing happens).

    >>> import tapegrad as tg
    >>> m = tg.nn.Identity()
    >>> h = m.register_forward_hook(lambda mod, args, out: out * 2)
    >>> m(tg.ones(1))
    tensor([2.])
    >>> h.remove()
    >>> m(tg.ones(1))
    tensor([1.])
    """

    def __init__(self, hooks: dict[int, Any]) -> None:
        self.id = next(_hook_ids)
        self._hooks = hooks

    def remove(self) -> None:
        """Removes the hook.

        >>> import tapegrad as tg
        >>> h = tg.nn.Identity().register_forward_pre_hook(lambda mod, args: None)
        >>> h.remove()
        """
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _indent(text: str, spaces: int) -> str:
    """Indents every line of ``text`` but the first by ``spaces``."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of layers. Assigning a ``Parameter``, a ``Module`` or (after ``register_buffer``)
    a tensor as an attribute registers it; ``module(x)`` runs the forward pre-hooks, ``forward``
    and the forward hooks.

    >>> import tapegrad as tg
    >>> class Net(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = tg.nn.Linear(2, 1)
    ...         self.scale = tg.nn.Parameter(tg.ones(1))
    ...     def forward(self, x):
    ...         return self.fc(x) * self.scale
    >>> [name for name, _ in Net().named_parameters()]
    ['scale', 'fc.weight', 'fc.bias']
    """

    training: bool
    _version: int = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; subclasses define it and call the module, not ``forward``.

        >>> import tapegrad as tg
        >>> tg.nn.Identity().forward(tg.ones(1))
        tensor([1.])
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the forward pre-hooks, ``forward``, and the forward hooks.

        >>> import tapegrad as tg
        >>> tg.nn.ReLU()(tg.tensor([-1., 1.]))
        tensor([0., 1.])
        """
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    # ---- registration ---------------------------------------------------------------------------

    def _check_name(self, name: Any, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Adds a parameter (or a None placeholder) under ``name``.

        >>> import tapegrad as tg
        >>> m = tg.nn.Module()
        >>> m.register_parameter("w", tg.nn.Parameter(tg.zeros(2)))
        >>> [n for n, _ in m.named_parameters()]
        ['w']
        """
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not is_parameter(param):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(tapegrad.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a buffer: state that is not a parameter (running statistics); ``persistent=False``
        keeps it out of ``state_dict``.

        >>> import tapegrad as tg
        >>> m = tg.nn.Module()
        >>> m.register_buffer("count", tg.zeros(1))
        >>> list(m.state_dict())
        ['count']
        """
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a submodule under ``name``.

        >>> import tapegrad as tg
        >>> m = tg.nn.Module()
        >>> m.add_module("act", tg.nn.ReLU())
        >>> m
        Module(
          (act): ReLU()
        )
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if is_parameter(value):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (tapegrad.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, keep="_modules")
            self._modules[name] = value
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)")
            d["_modules"][name] = None
        elif params is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: str) -> None:
        """Forgets ``name`` as a plain attribute and in the tables other than ``keep`` (before
        registering it in ``keep``, where an existing entry keeps its place, as in PyTorch)."""
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                del self.__dict__[table][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # copy.deepcopy and pickle rebuild the tensors; the copies of parameters are marked again.
        self.__dict__.update(state)
        for name, p in self._parameters.items():
            if p is not None and not is_parameter(p):
                self._parameters[name] = _mark(p)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` ("" is the module itself).

        >>> import tapegrad as tg
        >>> tg.nn.Sequential(tg.nn.Linear(1, 1)).get_submodule("0")
        Linear(in_features=1, out_features=1, bias=True)
        """
        mod: Module = self
        if target == "":
            return mod
        for part in target.split("."):
            if part not in mod._modules or mod._modules[part] is None:
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}`")
            mod = mod._modules[part]
        return mod

    # ---- traversal ------------------------------------------------------------------------------

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module and every submodule, depth first, each once.

        >>> import tapegrad as tg
        >>> [n for n, _ in tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Sequential(tg.nn.Tanh())).named_modules()]
        ['', '0', '1', '1.0']
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule (see ``named_modules``).

        >>> import tapegrad as tg
        >>> len(list(tg.nn.Sequential(tg.nn.ReLU()).modules()))
        2
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for the direct submodules, each once.

        >>> import tapegrad as tg
        >>> [n for n, _ in tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh()).named_children()]
        ['0', '1']
        """
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct submodules.

        >>> import tapegrad as tg
        >>> list(tg.nn.Sequential(tg.nn.ReLU()).children())
        [ReLU()]
        """
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, table: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, v in getattr(mod, table).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, parameter)`` in PyTorch's order (each module's own parameters in
        registration order, then its submodules'); a shared parameter appears once.

        >>> import tapegrad as tg
        >>> [n for n, _ in tg.nn.Linear(2, 3).named_parameters()]
        ['weight', 'bias']
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        """The parameters (a generator of tensors, for optimizers).

        >>> import tapegrad as tg
        >>> sum(p.numel() for p in tg.nn.Linear(2, 3).parameters())
        9
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)``, in the order of ``named_parameters``.

        >>> import tapegrad as tg
        >>> [n for n, _ in tg.nn.BatchNorm1d(2).named_buffers()]
        ['running_mean', 'running_var', 'num_batches_tracked']
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers.

        >>> import tapegrad as tg
        >>> len(list(tg.nn.BatchNorm1d(2).buffers()))
        3
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ----------------------------------------------------------------------------------

    def state_dict(
        self, destination: dict[str, Tensor] | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name (detached, sharing storage, unless
        ``keep_vars``); a shared parameter appears under each of its names, as in PyTorch.

        >>> import tapegrad as tg
        >>> list(tg.nn.Linear(2, 3).state_dict())
        ['weight', 'bias']
        """
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copies values from ``state_dict`` into the parameters and buffers (in place, under
        no_grad). Returns ``(missing_keys, unexpected_keys)``; with ``strict`` either being non-empty
        is a RuntimeError, as is a shape mismatch in any case.

        >>> import tapegrad as tg
        >>> a, b = tg.nn.Linear(2, 2), tg.nn.Linear(2, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        >>> b.load_state_dict({"weight": a.weight}, strict=False).missing_keys
        ['bias']
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own: dict[str, tuple[Module, str, str]] = {}
        for mod_prefix, mod in self.named_modules(remove_duplicate=False):
            pre = mod_prefix + "." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    own[pre + name] = (mod, "_parameters", name)
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent_buffers_set:
                    own[pre + name] = (mod, "_buffers", name)
        errors: list[str] = []
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        for key, (mod, table, name) in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            target = getattr(mod, table)[name]
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                    f"checkpoint but received {type(value)}"
                )
                continue
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from checkpoint, "
                    f"the shape in current model is {tuple(target.shape)}."
                )
                continue
            with tg.no_grad():
                if assign:
                    new = Parameter(value, target.requires_grad) if table == "_parameters" else value
                    getattr(mod, table)[name] = new
                else:
                    target.copy_(value.to(target.dtype))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(self._get_name(), "\n\t".join(errors))
            )
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and conversions ------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Sets training mode here and in every submodule; returns the module.

        >>> import tapegrad as tg
        >>> tg.nn.Dropout().train(False).training
        False
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """``train(False)``.

        >>> import tapegrad as tg
        >>> tg.nn.Dropout().eval().training
        False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Sets ``requires_grad`` of every parameter; returns the module.

        >>> import tapegrad as tg
        >>> [p.requires_grad for p in tg.nn.Linear(1, 1).requires_grad_(False).parameters()]
        [False, False]
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the parameters' gradients (to None, or to zeros in place).

        >>> import tapegrad as tg
        >>> m = tg.nn.Linear(1, 1)
        >>> m(tg.ones(1, 1)).sum().backward()
        >>> m.zero_grad()
        >>> m.weight.grad is None
        True
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with tg.no_grad():
                    p.grad.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Calls ``fn`` on every submodule (children first) and on the module; returns the module.

        >>> import tapegrad as tg
        >>> names = []
        >>> _ = tg.nn.Sequential(tg.nn.ReLU()).apply(lambda m: names.append(type(m).__name__))
        >>> names
        ['ReLU', 'Sequential']
        """
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_dtype(self, dtype: Any) -> Module:
        """Converts floating parameters and buffers to ``dtype``. tapegrad cannot change a tensor's
        dtype in place (no ``.data`` assignment), so each converted parameter is a new Parameter
        object: build optimizers after converting."""
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is not None and p.dtype.is_floating_point and p.dtype != dtype:
                    new = Parameter(p.detach().to(dtype), p.requires_grad)
                    m._parameters[name] = new
            for name, b in m._buffers.items():
                if b is not None and b.dtype.is_floating_point and b.dtype != dtype:
                    m._buffers[name] = b.to(dtype)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)`` converts floating parameters and buffers (new Parameter objects: see
        docs/api.md); ``to("cpu")`` changes nothing.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(1, 1).to(tg.float64).weight.dtype
        tapegrad.float64
        """
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, tg.dtype):
                dtype = a
            elif isinstance(a, (str, tg.device)):
                device = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            else:
                raise TypeError(f"to() received an invalid argument {a!r}")
        if device is not None and str(device).split(":")[0] != "cpu":
            raise RuntimeError(f"tapegrad has only the CPU device, got {device!r}")
        if dtype is not None:
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
            self._apply_dtype(dtype)
        return self

    def double(self) -> Module:
        """``to(tg.float64)``.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(1, 1).double().bias.dtype
        tapegrad.float64
        """
        return self._apply_dtype(tg.float64)

    def float(self) -> Module:
        """``to(tg.float32)``.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(1, 1).double().float().bias.dtype
        tapegrad.float32
        """
        return self._apply_dtype(tg.float32)

    def cpu(self) -> Module:
        """The module itself (only the CPU exists).

        >>> import tapegrad as tg
        >>> m = tg.nn.ReLU()
        >>> m.cpu() is m
        True
        """
        return self

    # ---- hooks ----------------------------------------------------------------------------------

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; a non-None result replaces the output.

        >>> import tapegrad as tg
        >>> m = tg.nn.Identity()
        >>> _ = m.register_forward_hook(lambda mod, args, out: out + 1)
        >>> m(tg.zeros(1))
        tensor([1.])
        """
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None result replaces the positional
        arguments (a single value is wrapped in a tuple).

        >>> import tapegrad as tg
        >>> m = tg.nn.Identity()
        >>> _ = m.register_forward_pre_hook(lambda mod, args: args[0] * 3)
        >>> m(tg.ones(1))
        tensor([3.])
        """
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    # ---- printing -------------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings, printed inside its ``repr``; subclasses override it.

        >>> import tapegrad as tg
        >>> tg.nn.Linear(2, 3).extra_repr()
        'in_features=2, out_features=3, bias=True'
        """
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_indent(repr(m), 2)}" for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"
