"""Activation checkpointing: run a function without keeping what its operations save for
backward, and recompute it when backward needs those values.

Two forms, as in PyTorch: ``use_reentrant=False`` (recommended) packs every saved tensor of the
function into a small placeholder through saved-tensor hooks and recomputes the function the first
time backward unpacks one; ``use_reentrant=True`` runs the function under ``no_grad`` inside a
custom Function whose backward recomputes it with grad mode on and runs a nested backward.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any, Callable

from .. import _tapegrad as _C
from .._function import Function
from .._grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd import backward as _backward
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "set_checkpoint_early_stop"]

_early_stop = threading.local()


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once it has every value backward needs."""


class set_checkpoint_early_stop:
    """Context manager: whether non-reentrant checkpoints made inside it stop their recomputation
    as soon as every saved value is recomputed (the default, ``True``) or run the whole function.
    As in PyTorch, the context takes precedence over ``checkpoint``'s own ``early_stop=``.

    >>> import tapegrad as tg
    >>> from tapegrad.utils.checkpoint import checkpoint, set_checkpoint_early_stop
    >>> calls = []
    >>> def f(t):
    ...     out = t.sin().cos()
    ...     calls.append(1)  # after the last saving operation
    ...     return out * 1
    >>> x = tg.tensor([1.], requires_grad=True)
    >>> with set_checkpoint_early_stop(False):
    ...     y = checkpoint(f, x, use_reentrant=False)
    >>> y.backward()
    >>> len(calls)
    2
    """

    def __init__(self, enable: bool) -> None:
        self.enable = enable

    def __enter__(self) -> set_checkpoint_early_stop:
        self._prev = getattr(_early_stop, "value", None)
        _early_stop.value = self.enable
        return self

    def __exit__(self, *exc: object) -> None:
        _early_stop.value = self._prev


class CheckpointError(RuntimeError):
    """A recomputation that does not match the original forward (another number of saved tensors,
    or saved tensors of another shape or dtype).

    >>> from tapegrad.utils.checkpoint import CheckpointError
    >>> issubclass(CheckpointError, RuntimeError)
    True
    """

Tensor = _C.Tensor


def _detach_like(args: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d.requires_grad_(a.requires_grad)
            out.append(d)
        else:
            out.append(a)
    return tuple(out)


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = _C._get_rng_state() if preserve_rng_state else None
        ctx.tensor_mask = [isinstance(a, Tensor) for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if _C._current_backward_captures():
            raise RuntimeError(
                "tapegrad.utils.checkpoint is incompatible with .grad() or passing an `inputs` parameter to "
                ".backward() when use_reentrant=True (its recomputation runs a backward of its own, which "
                "accumulates into .grad). Use use_reentrant=False, or call .backward() without `inputs`."
            )
        tensors = iter(ctx.saved_tensors)
        args = [next(tensors) if is_tensor else other for is_tensor, other in zip(ctx.tensor_mask, ctx.others)]
        inputs = _detach_like(tuple(args))
        with _rng_restored(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(i.grad if isinstance(i, Tensor) else None for i in inputs))


class _rng_restored:
    """Runs its body with the random generator in ``state`` (when given), then puts back the
    generator's own state, so that the caller's random stream is not disturbed."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __enter__(self) -> None:
        if self.state is not None:
            self.saved = _C._get_rng_state()
            _C._set_rng_state(self.state)

    def __exit__(self, *exc: object) -> None:
        if self.state is not None:
            _C._set_rng_state(self.saved)


class _Frame:
    """One non-reentrant checkpoint call: how to recompute it, and what the recomputation saved."""

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], early_stop: bool
    ) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.early_stop = early_stop
        self.rng_state: Any = None
        self.count = 0
        self.meta: list[tuple[tuple[int, ...], Any]] = []
        self.recomputed: list[Tensor | None] | None = None
        # While the original forward runs, what it saves is kept as it is: a backward inside the
        # function (autograd.grad in it) reads it back without recomputing a half-run function.
        self.live: list[Tensor] | None = []

    def pack(self, t: Tensor) -> tuple[_Frame, int]:
        i = self.count
        self.count += 1
        self.meta.append((tuple(t.shape), t.dtype))
        if self.live is not None:
            self.live.append(t.detach())
        return (self, i)

    def recompute(self) -> list[Tensor | None]:
        saved: list[Tensor | None] = []

        def keep(t: Tensor) -> int:
            # Only the data: the history of the value it replaces is put back on it when unpacked,
            # and the recomputation's own graph is freed as soon as the recomputation returns.
            saved.append(t.detach())
            if self.early_stop and len(saved) == self.count:
                raise _StopRecomputation
            return len(saved) - 1

        def read(i: int) -> Tensor:
            t = saved[i]
            assert t is not None
            return t

        try:
            with saved_tensors_hooks(keep, read), _rng_restored(self.rng_state), enable_grad():
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        # As PyTorch's recomputation, which stops once it has what backward needs: extra tensors
        # saved after those are not an error, missing ones or other shapes and dtypes are.
        if len(saved) < self.count:
            raise CheckpointError(
                "tapegrad.utils.checkpoint: A different number of tensors was saved during the original "
                f"forward and recomputation.\nNumber of tensors saved during forward: {self.count}\n"
                f"Number of tensors saved during recomputation: {len(saved)}."
            )
        saved = saved[: self.count]
        wrong = [
            f"tensor at position {i}:\nsaved metadata: shape {list(shape)}, dtype {dtype}\n"
            f"recomputed metadata: shape {list(t.shape)}, dtype {t.dtype}"
            for i, ((shape, dtype), t) in enumerate(zip(self.meta, saved))
            if t is not None and (tuple(t.shape) != shape or t.dtype != dtype)
        ]
        if wrong:
            raise CheckpointError(
                "tapegrad.utils.checkpoint: Recomputed values for the following tensors have different "
                "metadata than during the forward pass.\n" + "\n".join(wrong)
            )
        return saved


def _unpack(packed: tuple[_Frame, int]) -> Tensor:
    frame, i = packed
    if frame.live is not None:
        return frame.live[i]
    if frame.recomputed is None or frame.recomputed[i] is None:
        frame.recomputed = frame.recompute()
    # Each recomputed value is handed out once and then let go, so that a block's recomputed
    # activations are freed as backward consumes them; a second access (retain_graph, a second
    # backward) recomputes again.
    t = frame.recomputed[i]
    frame.recomputed[i] = None
    assert t is not None
    return t


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    early_stop: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Runs ``function(*args, **kwargs)`` keeping none of the tensors its operations save for
    backward; backward recomputes them by running ``function`` again on the same inputs. The
    gradients are those of the plain call. ``use_reentrant`` should be given (PyTorch warns
    without it and uses ``True``); ``use_reentrant=True`` takes no keyword arguments for
    ``function``. With ``preserve_rng_state`` (the default) the random generator's state at the
    call is restored for the recomputation (and the caller's own state put back after), so random
    operations give the same values. The non-reentrant recomputation stops once every saved value
    is back (``early_stop``, default True; ``set_checkpoint_early_stop`` overrides it).
    ``function`` must do the same operations each time (a recomputation that saves fewer tensors,
    or tensors of other shapes or dtypes, raises ``CheckpointError``).

    >>> import tapegrad as tg
    >>> from tapegrad.utils.checkpoint import checkpoint
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> y = checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False)
    >>> y.backward()
    >>> x.grad.tolist() == (x.sin() + x * x.cos()).tolist()
    True
    """
    if use_reentrant is None:
        warnings.warn(
            "tapegrad.utils.checkpoint: the use_reentrant parameter should be passed explicitly "
            "(use_reentrant=False is recommended); using use_reentrant=True",
            stacklevel=2,
        )
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return _CheckpointFunction.apply(function, preserve_rng_state, *args)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    context = getattr(_early_stop, "value", None)
    early_stop = context if context is not None else (True if early_stop is None else early_stop)
    frame = _Frame(function, args, kwargs, early_stop)
    if preserve_rng_state:
        frame.rng_state = _C._get_rng_state()
    try:
        with saved_tensors_hooks(frame.pack, _unpack):
            return function(*args, **kwargs)
    finally:
        frame.live = None


def checkpoint_sequential(
    functions: Iterable[Callable[[Any], Any]] | Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Runs the callables in ``functions`` one after the other on ``input``, split into
    ``segments`` runs of consecutive callables, each checkpointed except the last (whose saved
    tensors are needed at once). ``functions`` may be a list or anything with ``children()``
    (a sequential module).

    >>> import tapegrad as tg
    >>> from tapegrad.utils.checkpoint import checkpoint_sequential
    >>> fs = [lambda t: t * 2, lambda t: t.exp(), lambda t: t.sum()]
    >>> x = tg.tensor([0., 1.], requires_grad=True)
    >>> checkpoint_sequential(fs, 2, x, use_reentrant=False).backward()
    >>> x.grad.tolist() == (2 * (2 * x).exp()).tolist()
    True
    """
    if use_reentrant is None:
        warnings.warn(
            "tapegrad.utils.checkpoint: the use_reentrant parameter should be passed explicitly "
            "(use_reentrant=False is recommended); using use_reentrant=True",
            stacklevel=2,
        )
        use_reentrant = True
    if hasattr(functions, "children"):
        functions = list(functions.children())
    functions = list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = max(len(functions) // segments, 1)
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)
