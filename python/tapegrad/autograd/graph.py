"""``tapegrad.autograd.graph``: the backward graph's nodes and edges, and hooks on it.

``saved_tensors_hooks(pack_hook, unpack_hook)`` replaces each tensor a node saves (built-in and
custom nodes alike) by what ``pack_hook`` returns, and gives it back through ``unpack_hook`` each
time backward reads it; ``disable_saved_tensors_hooks(msg)`` forbids them; ``save_on_cpu`` is
accepted for PyTorch code (tapegrad has only the CPU, so it keeps the tensor);
``allow_mutation_on_saved_tensors`` lets saved tensors be written in place. ``Node`` is the type of
``grad_fn``; ``get_gradient_edge`` / ``GradientEdge`` name where a gradient flows (usable as
``inputs`` of ``tg.autograd.grad``); ``register_multi_grad_hook`` watches several tensors' gradients
at once; ``increment_version`` bumps a tensor's version counter.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from .. import _tapegrad as _C

if TYPE_CHECKING:
    from types import TracebackType

    from .._tapegrad import Tensor

__all__ = [
    "saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu", "allow_mutation_on_saved_tensors",
    "Node", "GradientEdge", "get_gradient_edge", "register_multi_grad_hook", "increment_version",
]

#: The type of ``t.grad_fn``: ``name()``, ``next_functions``, ``metadata``, ``register_hook``,
#: ``register_prehook``.
Node = _C.Node

_state = threading.local()


def _disabled_message() -> str | None:
    return getattr(_state, "disabled", None)


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are packed by ``pack_hook`` (which
    may return any object) and unpacked by ``unpack_hook`` (which must return a tensor with the
    original's value) at each access. The innermost context applies; hooks are per thread, and a
    hook's own operations are not packed by itself. Errors raised by a hook reach the operation
    (pack) or the backward (unpack) that ran it.

    >>> import tapegrad as tg
    >>> packed = []
    >>> def pack(t):
    ...     packed.append(t.shape)
    ...     return t.tolist()
    >>> def unpack(v):
    ...     return tg.tensor(v)
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> with tg.autograd.graph.saved_tensors_hooks(pack, unpack):
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 4.])
    >>> len(packed)
    2
    """

    _check_version = True

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        msg = _disabled_message()
        if msg is not None:
            raise RuntimeError(msg)
        self._push()
        return self

    def _push(self) -> None:
        _C._push_saved_tensors_hooks(self.pack_hook, self._unpack, self._check_version)
        _stack().append(self)
        _state.depth = len(_stack())

    def _unpack(self, packed: Any) -> Tensor:
        # The stack of hooks is put back as it was once the unpack hook returns, as PyTorch's
        # engine restores it around each node: contexts entered or exited by the hook (unsupported)
        # neither stay on the stack nor leave it short.
        before = list(_stack())
        try:
            return self.unpack_hook(packed)
        finally:
            if _stack() != before:
                while _stack():
                    _stack().pop()
                    _C._pop_saved_tensors_hooks()
                for ctx in before:
                    ctx._push()
                _state.depth = len(_stack())

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        # An exit without a matching enter (PyTorch tolerates it) removes nothing.
        if not _stack():
            return
        _stack().pop()
        _state.depth = len(_stack())
        _C._pop_saved_tensors_hooks()


def _stack() -> list[saved_tensors_hooks]:
    """The contexts of this thread whose hooks are on the stack, innermost last."""
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


class disable_saved_tensors_hooks:
    """Context manager (and decorator) under which registering saved-tensor hooks raises
    ``RuntimeError(error_message)``, as does entering it while hooks are registered.

    >>> import tapegrad as tg
    >>> with tg.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
    ...     try:
    ...         with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
    ...             pass
    ...     except RuntimeError as e:
    ...         print(e)
    no hooks here
    """

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> disable_saved_tensors_hooks:
        if getattr(_state, "depth", 0) > 0:
            raise RuntimeError(self.error_message)
        self._previous = _disabled_message()
        _state.disabled = self.error_message
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _state.disabled = self._previous

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Used as a decorator: ``fn`` runs inside the context.

        >>> import tapegrad as tg
        >>> @tg.autograd.graph.disable_saved_tensors_hooks("off")
        ... def f():
        ...     return tg.autograd.graph._disabled_message()
        >>> f()
        'off'
        """
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper


class save_on_cpu(saved_tensors_hooks):
    """PyTorch moves saved tensors to (pinned) CPU memory under this context. tapegrad has only
    the CPU, so the tensor is kept as it is; the context is accepted so that such code runs.

    >>> import tapegrad as tg
    >>> x = tg.tensor([3.], requires_grad=True)
    >>> with tg.autograd.graph.save_on_cpu(pin_memory=True):
    ...     y = x * x
    >>> y.backward()
    >>> x.grad
    tensor([6.])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


class allow_mutation_on_saved_tensors(saved_tensors_hooks):
    """Inside this context, a tensor saved for backward may be modified in place afterwards:
    backward still sees the value it had when saved. (PyTorch clones a saved tensor when it is
    first written; tapegrad clones each saved tensor when it is saved, which gives the same values
    at the cost of the copies.) Backward through such a graph must run inside the same context;
    the contexts do not nest (``RuntimeError``); backward outside the context raises
    ``AssertionError``, as PyTorch's does.

    >>> import tapegrad as tg
    >>> a = tg.tensor([1., 2.], requires_grad=True)
    >>> with tg.autograd.graph.allow_mutation_on_saved_tensors():
    ...     b = a.clone()
    ...     out = (b * b).sum()
    ...     with tg.no_grad():
    ...         _ = b.mul_(10)
    ...     out.backward()
    >>> a.grad
    tensor([2., 4.])
    """

    _check_version = False

    def __init__(self) -> None:
        self._active = True
        super().__init__(self._pack, self._unpack)

    def _pack(self, t: Tensor) -> tuple[allow_mutation_on_saved_tensors, Tensor]:
        return (self, t.detach().clone())

    @staticmethod
    def _unpack(packed: tuple[allow_mutation_on_saved_tensors, Tensor]) -> Tensor:
        ctx, t = packed
        if not ctx._active:
            raise AssertionError(
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the "
                "graph was originally recorded."
            )
        return t

    def __enter__(self) -> allow_mutation_on_saved_tensors:
        if getattr(_state, "mutation_ctx", False):
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        super().__enter__()
        _state.mutation_ctx = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        _state.mutation_ctx = False
        self._active = False
        super().__exit__(exc_type, exc, tb)


class GradientEdge(NamedTuple):
    """Where a gradient flows: input slot ``output_nr`` of ``node``. Usable in ``inputs`` of
    ``tg.autograd.grad`` to get the gradient flowing there.

    >>> import tapegrad as tg
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> h = x * 3
    >>> edge = tg.autograd.graph.get_gradient_edge(h)
    >>> edge.node.name(), edge.output_nr
    ('MulBackward', 0)
    >>> tg.autograd.grad((h * h).sum(), edge)
    (tensor([ 6., 12.]),)
    """

    node: Any
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge along which the gradient of ``tensor`` flows: its ``grad_fn`` and output number,
    or for a leaf its gradient accumulator (made if needed). Stays valid after ``tensor`` is
    written in place (it names the old value's node).

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> tg.autograd.graph.get_gradient_edge(x).node.name()
    'AccumulateGrad'
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    node, nr = _C._gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bumps the version counter of ``tensor`` (or of each tensor in an iterable), as an in-place
    write through a path autograd does not see would need: a saved tensor then fails its check.

    >>> import tapegrad as tg
    >>> t = tg.ones(2)
    >>> tg.autograd.graph.increment_version(t)
    >>> t._version
    1
    """
    tensors = [tensor] if isinstance(tensor, _C.Tensor) else list(tensor)
    for t in tensors:
        _C._increment_version(t)


class _MultiHandle:
    """Removes every hook a multi-grad hook registered."""

    def __init__(self, handles: list[Any]) -> None:
        self.handles = handles

    def remove(self) -> None:
        """Removes the hooks (idempotent).

        >>> import tapegrad as tg
        >>> x = tg.ones(1, requires_grad=True)
        >>> h = tg.autograd.graph.register_multi_grad_hook([x], lambda gs: None)
        >>> h.remove()
        """
        for h in self.handles:
            h.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(
    tensors: Sequence[Tensor], fn: Callable[..., Any], *, mode: str = "all"
) -> _MultiHandle:
    """Watches the gradients of several tensors in each backward pass. ``mode="all"``:
    ``fn(grads)`` runs once per backward that computes a gradient for at least one of them, with
    one entry per tensor (None where none was computed), when that backward has finished.
    ``mode="any"``: ``fn(grad)`` runs once per backward, with the first of their gradients to be
    computed. Returns a handle whose ``remove()`` unregisters it.

    >>> import tapegrad as tg
    >>> a = tg.tensor([1.], requires_grad=True)
    >>> b = tg.tensor([2.], requires_grad=True)
    >>> seen = []
    >>> h = tg.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append(gs))
    >>> (a * 3).sum().backward()
    >>> seen
    [(tensor([3.]), None)]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    # State per backward run (several may run at once on different threads). A run that fails
    # never calls its final callback, so its entry (a few objects) stays behind.
    states: dict[int | None, dict[str, Any]] = {}
    lock = threading.Lock()

    def finish(run: int | None) -> None:
        with lock:
            st = states.pop(run, None)
        if st is not None and mode == "all":
            fn(tuple(st["grads"]))

    def make_hook(i: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            run = _C._current_backward_id()
            with lock:
                st = states.get(run)
                new = st is None
                if new:
                    st = states[run] = {"grads": [None] * len(tensors), "fired": False}
            assert st is not None
            if new:
                _C._queue_callback(functools.partial(finish, run))
            if mode == "all":
                st["grads"][i] = grad
            elif not st["fired"]:
                st["fired"] = True
                fn(grad)

        return hook

    handles = [t.register_hook(make_hook(i)) for i, t in enumerate(tensors) if t.requires_grad]
    return _MultiHandle(handles)
