"""``tapegrad.autograd.graph``: hooks on what the graph saves for backward.

``saved_tensors_hooks(pack_hook, unpack_hook)`` replaces each tensor a node saves (built-in and
custom nodes alike) by what ``pack_hook`` returns, and gives it back through ``unpack_hook`` each
time backward reads it; ``disable_saved_tensors_hooks(msg)`` forbids them; ``save_on_cpu`` is
accepted for PyTorch code (tapegrad has only the CPU, so it keeps the tensor).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from .. import _tapegrad as _C

if TYPE_CHECKING:
    from types import TracebackType

    from .._tapegrad import Tensor

__all__ = ["saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu"]

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

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        msg = _disabled_message()
        if msg is not None:
            raise RuntimeError(msg)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        _state.depth = getattr(_state, "depth", 0) + 1
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _state.depth -= 1
        _C._pop_saved_tensors_hooks()


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
        import functools

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
