"""SGD, Adam, AdamW, RMSprop and Adagrad: PyTorch's arguments, defaults, checks, state names and
update formulas (the formulas run natively, one call per parameter group: ``src/ops/optim.rs``)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .. import _tapegrad as _C
from .._tapegrad import Tensor
from .optimizer import Optimizer, ParamsT, _check_unsupported


def _number(x: Any) -> float:
    """A hyperparameter as a float (a one-element tensor is read, as PyTorch's tensor ``lr``)."""
    return float(x.item()) if isinstance(x, Tensor) else float(x)


def _step_counter() -> Tensor:
    """A parameter's step count: a float32 scalar tensor, as PyTorch keeps it."""
    return _C.zeros((), dtype=_C.float32)


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum, dampening, Nesterov momentum, weight
    decay and ``maximize`` (PyTorch's ``torch.optim.SGD``).

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w.tolist()
    [0.800000011920929, 1.600000023841858]
    """

    _kind = "sgd"

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_unsupported(fused=fused, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _state_tensors(self, group: Dict[str, Any], state: Dict[str, Any]) -> List[Any]:
        return [state.get("momentum_buffer")] if group["momentum"] != 0 else []

    def _init_state(self, p: Tensor, group: Dict[str, Any], state: Dict[str, Any]) -> None:
        pass  # the momentum buffer is made by the first step, from the gradient

    def _store(self, group: Dict[str, Any], state: Dict[str, Any], tensors: List[Tensor]) -> None:
        if group["momentum"] != 0:
            state["momentum_buffer"] = tensors[0]

    def _hyper(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return dict(lr=_number(group["lr"]), momentum=float(group["momentum"]), dampening=float(group["dampening"]),
                    nesterov=bool(group["nesterov"]), weight_decay=float(group["weight_decay"]),
                    maximize=bool(group["maximize"]))


class Adam(Optimizer):
    """Adam (and, with ``amsgrad=True``, AMSGrad), PyTorch's ``torch.optim.Adam``: ``weight_decay``
    adds an L2 term to the gradient. State per parameter: ``step``, ``exp_avg``, ``exp_avg_sq``
    (and ``max_exp_avg_sq``).

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = tg.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, -0.9]
    """

    _kind = "adam"

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_unsupported(fused=fused, capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: Dict[str, Any], state: Dict[str, Any]) -> None:
        state["step"] = _step_counter()
        state["exp_avg"] = _C.zeros(p.shape, dtype=p.dtype)
        state["exp_avg_sq"] = _C.zeros(p.shape, dtype=p.dtype)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _C.zeros(p.shape, dtype=p.dtype)

    def _state_tensors(self, group: Dict[str, Any], state: Dict[str, Any]) -> List[Any]:
        tensors = [state["exp_avg"], state["exp_avg_sq"]]
        if group["amsgrad"]:
            if "max_exp_avg_sq" not in state:  # amsgrad switched on after the first step
                state["max_exp_avg_sq"] = _C.zeros(state["exp_avg"].shape, dtype=state["exp_avg"].dtype)
            tensors.append(state["max_exp_avg_sq"])
        return tensors

    def _hyper(self, group: Dict[str, Any]) -> Dict[str, Any]:
        beta1, beta2 = group["betas"]
        return dict(lr=_number(group["lr"]), beta1=_number(beta1), beta2=_number(beta2), eps=float(group["eps"]),
                    weight_decay=float(group["weight_decay"]), amsgrad=bool(group["amsgrad"]),
                    maximize=bool(group["maximize"]))


class AdamW(Adam):
    """AdamW, PyTorch's ``torch.optim.AdamW``: Adam with decoupled weight decay (the parameter is
    multiplied by ``1 - lr * weight_decay`` before the update; default ``weight_decay=1e-2``).

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = tg.tensor([0.0])
    >>> opt.step()
    >>> round(w.item(), 6)
    0.95
    """

    _kind = "adamw"

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused)


class RMSprop(Optimizer):
    """RMSprop, PyTorch's ``torch.optim.RMSprop`` (``alpha``, ``eps``, ``weight_decay``,
    ``momentum``, ``centered``, ``maximize``). State per parameter: ``step``, ``square_avg`` (and
    ``momentum_buffer``, ``grad_avg``).

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.RMSprop([w], lr=0.01)
    >>> w.grad = tg.tensor([2.0])
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
    """

    _kind = "rmsprop"

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_unsupported(capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: Dict[str, Any], state: Dict[str, Any]) -> None:
        state["step"] = _step_counter()
        state["square_avg"] = _C.zeros(p.shape, dtype=p.dtype)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _C.zeros(p.shape, dtype=p.dtype)
        if group["centered"]:
            state["grad_avg"] = _C.zeros(p.shape, dtype=p.dtype)

    def _state_tensors(self, group: Dict[str, Any], state: Dict[str, Any]) -> List[Any]:
        sq = state["square_avg"]
        tensors = [sq]
        if group["momentum"] > 0:
            tensors.append(state.setdefault("momentum_buffer", _C.zeros(sq.shape, dtype=sq.dtype)))
        if group["centered"]:
            tensors.append(state.setdefault("grad_avg", _C.zeros(sq.shape, dtype=sq.dtype)))
        return tensors

    def _hyper(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return dict(lr=_number(group["lr"]), alpha=float(group["alpha"]), eps=float(group["eps"]),
                    weight_decay=float(group["weight_decay"]), momentum=float(group["momentum"]),
                    centered=bool(group["centered"]), maximize=bool(group["maximize"]))


class Adagrad(Optimizer):
    """Adagrad, PyTorch's ``torch.optim.Adagrad`` (``lr_decay``, ``weight_decay``,
    ``initial_accumulator_value``, ``eps``, ``maximize``). Its state (``step``, ``sum``) exists
    from construction, as in PyTorch.

    >>> import tapegrad as tg
    >>> w = tg.tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.Adagrad([w], lr=0.1)
    >>> w.grad = tg.tensor([3.0])
    >>> opt.step()
    >>> round(w.item(), 4)
    0.9
    """

    _kind = "adagrad"

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_unsupported(fused=fused, differentiable=differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    def _init_state(self, p: Tensor, group: Dict[str, Any], state: Dict[str, Any]) -> None:
        state["step"] = _step_counter()
        state["sum"] = _C.full(p.shape, float(group["initial_accumulator_value"]), dtype=p.dtype)

    def _state_tensors(self, group: Dict[str, Any], state: Dict[str, Any]) -> List[Any]:
        return [state["sum"]]

    def _hyper(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return dict(lr=_number(group["lr"]), lr_decay=float(group["lr_decay"]), weight_decay=float(group["weight_decay"]),
                    eps=float(group["eps"]), maximize=bool(group["maximize"]))
