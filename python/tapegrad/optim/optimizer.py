"""The ``Optimizer`` base class: PyTorch's shape (``param_groups``, ``state``, ``defaults``,
``add_param_group``, ``zero_grad``, ``state_dict``/``load_state_dict``, ``step(closure)``).

Each subclass's ``step`` gathers one parameter group's parameters, gradients, state tensors and step
counters and makes one native call for the whole group (``_tapegrad._optimizer_step``), which
updates every tensor in place without the GIL (docs/design.md, "Optimizers").
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from typing import Any, Callable, Dict, Iterable, List, Union

from .. import _tapegrad as _C
from .._grad_mode import enable_grad
from .._tapegrad import Tensor


class _RequiredParameter:
    """The default of a hyperparameter that every group must give (SGD's ``lr`` in old PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()

ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]]]


def _check_unsupported(fused: Any = None, capturable: Any = False, differentiable: Any = False) -> None:
    """PyTorch's ``fused``/``capturable``/``differentiable`` are accepted only as off."""
    for name, value, off in (("fused", fused, (None, False)), ("capturable", capturable, (False,)),
                             ("differentiable", differentiable, (False,))):
        if value not in off:
            raise ValueError(
                f"{name}={value!r} is not supported by tapegrad: the update of a parameter group always runs "
                f"in one native call, in place, without recording (pass {name}=False)"
            )


class Optimizer:
    """Base class of the optimizers. ``params`` is an iterable of tensors or of dicts (parameter
    groups, each with a ``"params"`` entry and optional hyperparameters that override
    ``defaults``).

    >>> import tapegrad as tg
    >>> w = tg.zeros(2, requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1)
    >>> opt.param_groups[0]["lr"], len(opt.param_groups[0]["params"])
    (0.1, 1)
    """

    def __init__(self, params: ParamsT, defaults: Dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, Dict[str, Any]] = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got a Tensor"
            )
        param_groups: list[Any] = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters, with hyperparameters of its own (missing ones come from
        ``defaults``).

        >>> import tapegrad as tg
        >>> a, b = tg.zeros(1, requires_grad=True), tg.zeros(1, requires_grad=True)
        >>> opt = tg.optim.SGD([a], lr=0.1)
        >>> opt.add_param_group({"params": [b], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors "
                "in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(set(ids)) != len(ids):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; ",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's gradient: sets it to None (the default) or, with
        ``set_to_none=False``, zeroes it in place.

        >>> import tapegrad as tg
        >>> w = tg.ones(2, requires_grad=True)
        >>> (w * 3).sum().backward()
        >>> opt = tg.optim.SGD([w], lr=0.1)
        >>> opt.zero_grad()
        >>> w.grad is None
        True
        """
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; with ``closure``, first re-evaluates the
        loss (with grad mode on) and returns it.

        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0], requires_grad=True)
        >>> opt = tg.optim.SGD([w], lr=0.5)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = (w * w).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure).item(), w.tolist()
        (1.0, [0.0])
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._step_group(group)
        return loss

    # --- what a subclass provides ---------------------------------------------------------------
    _kind = ""

    def _init_state(self, p: Tensor, group: Dict[str, Any], state: Dict[str, Any]) -> None:
        """Fills a parameter's state on its first step."""

    def _state_tensors(self, group: Dict[str, Any], state: Dict[str, Any]) -> List[Any]:
        """The parameter's state tensors in the order the native update takes them."""
        return []

    def _hyper(self, group: Dict[str, Any]) -> Dict[str, Any]:
        """The group's hyperparameters as the native update takes them."""
        raise NotImplementedError

    def _store(self, group: Dict[str, Any], state: Dict[str, Any], tensors: List[Tensor]) -> None:
        """Keeps state tensors the native update created (SGD's momentum buffers)."""

    def _step_group(self, group: Dict[str, Any]) -> None:
        params, grads, states, steps, dicts = [], [], [], [], []
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            state = self.state.get(p)
            if not state:
                # Filled completely before it is published, so another thread stepping the same
                # optimizer never sees a half-made state; if one published first, its state is used.
                state = {}
                self._init_state(p, group, state)
                state = self.state.setdefault(p, state)
            params.append(p)
            grads.append(g)
            states.append(self._state_tensors(group, state))
            steps.append(state.get("step"))
            dicts.append(state)
        if not params:
            return
        out = _C._optimizer_step(self._kind, params, grads, states, steps, self._hyper(group))
        for state, tensors in zip(dicts, out):
            self._store(group, state, tensors)

    # --- saving and resuming --------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """The optimizer's state: ``{"state": {index: {...}}, "param_groups": [...]}``, parameters
        named by their index in the order of the groups (as PyTorch). ``tg.save`` can write it.

        >>> import tapegrad as tg
        >>> w = tg.zeros(2, requires_grad=True)
        >>> opt = tg.optim.Adam([w], lr=0.1)
        >>> w.grad = tg.ones(2)
        >>> opt.step()
        >>> sd = opt.state_dict()
        >>> sorted(sd["state"][0]), sd["param_groups"][0]["params"]
        (['exp_avg', 'exp_avg_sq', 'step'], [0])
        """
        index: Dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a ``state_dict()``: the hyperparameters of every group and each parameter's state
        (copied, and cast to the parameter's dtype except the step counter), so training resumes
        exactly where it was saved.

        >>> import tapegrad as tg
        >>> w = tg.zeros(2, requires_grad=True)
        >>> opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = tg.ones(2)
        >>> opt.step()
        >>> opt2 = tg.optim.SGD([w], lr=0.5, momentum=0.9)
        >>> opt2.load_state_dict(opt.state_dict())
        >>> opt2.param_groups[0]["lr"], opt2.state[w]["momentum_buffer"].tolist()
        (0.1, [1.0, 1.0])
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("load_state_dict expects a dict with 'state' and 'param_groups', as state_dict() gives")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
                )
        id_map = {}
        for mine, saved in zip(self.param_groups, saved_groups):
            for index, p in zip(saved["params"], mine["params"]):
                id_map[index] = p
        saved_state = state_dict["state"]
        self.state = defaultdict(dict)
        for key, value in saved_state.items():
            # tg.load gives the keys back as saved (ints); a JSON round trip elsewhere may make them strings.
            index = int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else key
            if index not in id_map:
                continue
            p = id_map[index]
            self.state[p] = {k: self._cast_state(p, k, v) for k, v in value.items()}
        new_groups = []
        for mine, saved in zip(self.param_groups, saved_groups):
            group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            group["params"] = mine["params"]
            new_groups.append(group)
        self.param_groups = new_groups

    @staticmethod
    def _cast_state(p: Tensor, key: str, value: Any) -> Any:
        if not isinstance(value, Tensor):
            return copy.deepcopy(value)
        if key == "step":
            return value.detach().clone()
        return value.detach().to(p.dtype).clone()
