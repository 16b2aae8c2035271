"""Learning-rate schedules: ``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``,
``LambdaLR``, ``OneCycleLR`` and ``ReduceLROnPlateau``, with PyTorch's arguments and its recursive
update rules (so the learning rates agree with PyTorch's to the last bit, and a schedule resumed from
``state_dict()`` continues where it stopped).

>>> import tapegrad as tg
>>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
>>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(4):
...     opt.step()
...     sched.step()
...     lrs.append(sched.get_last_lr()[0])
>>> lrs
[1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "OneCycleLR",
           "ReduceLROnPlateau"]


def _per_group(name: str, optimizer: Optimizer, value: Any) -> List[Any]:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: ``step()`` advances ``last_epoch`` and sets each group's ``lr`` to ``get_lr()``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1)
    >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> sched.last_epoch, sched.base_lrs
    (0, [0.1])
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        "last_epoch >= 0 (load the optimizer's state_dict first)"
                    )
        self.base_lrs: List[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> List[float]:
        """The learning rates for the current ``last_epoch`` (each subclass's rule).

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1)
        >>> tg.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5).get_lr()
        [0.05]
        """
        raise NotImplementedError

    def get_last_lr(self) -> List[float]:
        """The learning rates the last ``step()`` set, one per parameter group.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1)
        >>> tg.optim.lr_scheduler.StepLR(opt, step_size=3).get_last_lr()
        [0.1]
        """
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advances the schedule by one epoch (call it after ``optimizer.step()``). Passing
        ``epoch`` is deprecated, as in PyTorch: it jumps there using the closed form where there is one.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sched.step()
        >>> opt.param_groups[0]["lr"]
        0.5
        """
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch); call step() "
                          "without it", UserWarning, stacklevel=2)
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> Dict[str, Any]:
        """Everything but the optimizer (functions, which cannot be saved, are left out by ``LambdaLR``).

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1)
        >>> tg.optim.lr_scheduler.StepLR(opt, step_size=3).state_dict()["last_epoch"]
        0
        """
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores ``state_dict()``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1)
        >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=3)
        >>> sched.load_state_dict({"last_epoch": 7})
        >>> sched.last_epoch
        7
        """
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` every ``step_size`` epochs.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    >>> sched.step()
    >>> sched.get_last_lr()
    [0.1]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> tg.optim.lr_scheduler.StepLR(opt, step_size=2).get_lr()
        [1.0]
        """
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` at each epoch in ``milestones``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
    >>> for _ in range(3):
    ...     sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[2]).get_lr()
        [1.0]
        """
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> List[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` every epoch.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> sched.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5).get_lr()
        [0.5]
        """
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneals the learning rate from its initial value to ``eta_min`` along a half cosine over
    ``T_max`` epochs (then back up, periodically, as PyTorch's recursive form does).

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    >>> sched.step()
    >>> round(sched.get_last_lr()[0], 6)
    0.5
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
        >>> sched.step()
        >>> [round(lr, 4) for lr in sched.get_last_lr()]
        [0.8536]
        """
        groups = self.optimizer.param_groups
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and e > 0:
            return [lo + (base_lr - lo) * (1 + math.cos(e * math.pi / t)) / 2 for base_lr in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [group["lr"] + (base_lr - lo) * (1 - math.cos(math.pi / t)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t)) * (group["lr"] - lo) + lo
                for group in groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class LambdaLR(LRScheduler):
    """Sets each group's learning rate to its initial one times ``lr_lambda(epoch)`` (one function,
    or one per group).

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.9 ** epoch)
    >>> sched.step()
    >>> sched.get_last_lr()
    [0.9]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | List[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=2.0)
        >>> tg.optim.lr_scheduler.LambdaLR(opt, lambda e: e + 1).get_lr()
        [2.0]
        """
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> Dict[str, Any]:
        """As ``LRScheduler.state_dict``; the lambdas are kept only when they are callable objects
        (their ``__dict__``), never functions, as in PyTorch.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> tg.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0).state_dict()["lr_lambdas"]
        [None]
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for i, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state["lr_lambdas"][i] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """As ``LRScheduler.load_state_dict``, restoring callable objects' attributes.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0)
        >>> sched.load_state_dict(sched.state_dict())
        >>> sched.last_epoch
        0
        """
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas", None) or []
        self.__dict__.update(state_dict)
        for i, fn in enumerate(lambdas):
            if fn is not None:
                self.lr_lambdas[i].__dict__.update(fn)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the learning rate rises from ``max_lr / div_factor`` to ``max_lr``, then
    falls to ``initial_lr / final_div_factor`` (momentum, or Adam's beta1, moves the other way),
    over ``total_steps`` (or ``epochs * steps_per_epoch``) steps. Call ``step()`` once per batch.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = tg.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> [round(lr, 6) for lr in sched.get_last_lr()]
    [0.04]
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | List[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | List[float] = 0.85, max_momentum: float | List[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        if three_phase:
            self._phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = _per_group("max_momentum", optimizer, max_momentum)
            base_ms = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_mom, b_mom, group in zip(max_ms, base_ms, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_mom, *group["betas"][1:])
                    else:
                        group["momentum"] = m_mom
                    group["max_momentum"] = m_mom
                    group["base_momentum"] = b_mom
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> List[float]:
        """See ``LRScheduler.get_lr`` (also sets the cycled momentum).

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
        >>> sched = tg.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        >>> [round(lr, 6) for lr in sched.get_lr()]
        [0.04]
        """
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            lr, mom = 0.0, 0.0
            for i, (end_step, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step_num <= end_step or i == len(self._phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(group[lr0], group[lr1], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[m0], group[m1], pct)
                    break
                start_step = end_step
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the learning rate by ``factor`` when a metric has not improved for ``patience``
    epochs (``mode`` "min" or "max", ``threshold`` relative or absolute, then ``cooldown`` epochs of
    rest; never below ``min_lr``, and not at all when the change would be below ``eps``).

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
    >>> for loss in [1.0, 1.0, 1.0]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()
    [0.1]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | List[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr: float | None = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Records this epoch's metric and reduces the learning rate after ``patience`` epochs
        without improvement.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        >>> sched.step(1.0); sched.step(2.0)
        >>> opt.param_groups[0]["lr"]
        0.1
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch)", UserWarning,
                          stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(self.optimizer.param_groups)}) differs from "
                    f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}); set `min_lrs` to match"
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores ``state_dict()``.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.lr_scheduler.ReduceLROnPlateau(opt)
        >>> sched.load_state_dict({"best": 0.5})
        >>> sched.best
        0.5
        """
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
