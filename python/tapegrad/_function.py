"""Custom operations in Python: three spellings over one mechanism (API.md §3).

``Function`` (PyTorch), ``autograd_function`` (R torch) and ``custom_gradient`` (TensorFlow/Keras)
all end in ``Function.apply``, which binds the arguments to ``forward``'s signature (cached per
class) and hands over to the native ``_function_apply``: that runs ``forward`` on the caller's
tensors with grad mode off, records one node, and checks what ``backward`` returns.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, SupportsIndex, TypeVar, overload

import numpy as np

from . import _tapegrad as _C
from ._grad_mode import no_grad

Tensor = _C.Tensor
_F = TypeVar("_F", bound=Callable[..., Any])


class _NeedsInputGrad(tuple[bool, ...]):
    """A tuple of bools, one per parameter of ``forward``, also readable by parameter name."""

    _names: list[str]

    def __new__(cls, values: list[bool], names: list[str]) -> _NeedsInputGrad:
        obj = super().__new__(cls, values)
        obj._names = names
        return obj

    def __getattr__(self, name: str) -> bool:
        try:
            return self[self._names.index(name)]
        except ValueError:
            raise AttributeError(f"forward has no parameter named {name!r} (parameters: {self._names})") from None

    @overload
    def __getitem__(self, key: SupportsIndex | str) -> bool: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[bool, ...]: ...
    def __getitem__(self, key):
        if isinstance(key, str):
            return self.__getattr__(key)
        return super().__getitem__(key)


class _SavedMapping(dict[str, Any]):
    """The named saved values: a mapping that also allows attribute access."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"nothing was saved under the name {name!r} (saved: {list(self)})") from None


FunctionCtx = _C.FunctionCtx


def _backward_attr(cls):
    """The attribute that is ``cls``'s backward: ``vjp`` is another name for it; defining both is
    an error, reported when backward runs (``Function._tg_backward_and_vjp``)."""
    has_backward = cls.backward is not Function.backward
    has_vjp = cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        return "_tg_backward_and_vjp"
    return "vjp" if has_vjp else "backward"


class _Spec:
    """What ``apply`` learns once about a class: forward's parameters, the node name, whether
    backward is once-differentiable."""

    def __init__(self, cls):
        if cls.forward is Function.forward:
            raise NotImplementedError(
                f"You must implement the forward function for custom autograd.Function ({cls.__name__})."
            )
        # PyTorch 2's spelling: forward(*args) without ctx, then setup_context(ctx, inputs, output).
        self.setup_context = cls.setup_context is not Function.setup_context
        sig = inspect.signature(cls.forward)
        params = list(sig.parameters.values())
        if self.setup_context:
            if params and params[0].name == "ctx":
                raise TypeError(
                    f"{cls.__name__} defines setup_context(ctx, inputs, output), so its forward takes no "
                    f"ctx: define forward({', '.join(p.name for p in params[1:])}) and fill ctx in "
                    "setup_context (or drop setup_context and keep forward(ctx, ...))"
                )
        elif not params:
            raise TypeError(
                f"{cls.__name__}.forward must take ctx as its first parameter (or, without ctx, define a "
                "setup_context(ctx, inputs, output) static method)"
            )
        else:
            params = params[1:]
        for p in params:
            if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
                raise TypeError(
                    f"{cls.__name__}.forward: keyword-only parameters and **kwargs are not supported "
                    f"(parameter {p.name!r})"
                )
        self.sig = sig.replace(parameters=params)
        self.params = params
        self.names = [p.name for p in params]
        self.simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self.name = cls.__name__
        # When forward's first parameter is not called ctx, the user may have meant PyTorch 2's
        # spelling and forgotten setup_context: say so if the call does not bind.
        first = next(iter(sig.parameters), "ctx")
        self.hint = "" if self.setup_context or first == "ctx" else (
            f" (forward's first parameter, {first!r}, receives ctx; a forward without ctx needs a "
            "setup_context(ctx, inputs, output) static method)"
        )
        self.backward_attr = _backward_attr(cls)
        self.once = bool(getattr(getattr(cls, self.backward_attr), "_tg_once_differentiable", False))
        self.clear_on_access = bool(getattr(cls, "clear_saved_tensors_on_access", False))

    def bind(self, args, kwargs):
        kwargs = kwargs or {}
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}.apply: {e}{self.hint}") from None
        bound.apply_defaults()
        values, names = [], []
        for p in self.params:
            v = bound.arguments[p.name]
            if p.kind == p.VAR_POSITIONAL:
                values.extend(v)
                names.extend(f"{p.name}[{i}]" for i in range(len(v)))
            else:
                values.append(v)
                names.append(p.name)
        return tuple(values), names


class Function:
    """Base class for custom operations with ``forward(ctx, ...)`` and ``backward(ctx, *grads)``
    (or its other name, ``vjp``) static methods; call them with ``YourFunction.apply(...)``, never
    on an instance.

    ``clear_saved_tensors_on_access = True`` on a subclass allows ``backward`` to read
    ``ctx.saved_tensors`` (and ``ctx.saved_variables``) once only.

    >>> import tapegrad as tg
    >>> class Cube(tg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * g
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> Cube.apply(x).sum().backward()
    >>> x.grad
    tensor([ 3., 12.])
    """

    clear_saved_tensors_on_access = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated: the methods of a custom Function are "
            "static; call YourFunction.apply(...) on the class itself.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, as in PyTorch: a custom function runs through ``YourFunction.apply(...)``.

        >>> import warnings
        >>> import tapegrad as tg
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # instantiating warns too
        ...     tg.Function()(tg.ones(1))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        RuntimeError: Legacy autograd function with non-static forward method is deprecated. ...
        """
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Define forward "
            "and backward as static methods and call YourFunction.apply(...)."
        )

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        """Computes the outputs from the inputs (the caller's tensors, with grad mode off); ``ctx``
        keeps what ``backward`` needs. Subclasses define it as a static method.

        >>> import tapegrad as tg
        >>> class Double(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> Double.apply(tg.tensor([1., 2.]))
        tensor([2., 4.])
        """
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """PyTorch 2's spelling: a subclass that defines this static method writes ``forward``
        without ``ctx`` (``forward(x, ...)``); ``setup_context`` then receives the ctx, the inputs as
        the caller gave them (a tuple, defaults filled in) and what ``forward`` returned, and saves
        what ``backward`` needs. Both spellings run on the same mechanism.

        >>> import tapegrad as tg
        >>> class Mul(tg.Function):
        ...     @staticmethod
        ...     def forward(x, y):
        ...         return x * y
        ...     @staticmethod
        ...     def setup_context(ctx, inputs, output):
        ...         ctx.save_for_backward(*inputs)
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         x, y = ctx.saved_tensors
        ...         return g * y, g * x
        >>> x = tg.tensor([2.], requires_grad=True)
        >>> Mul.apply(x, tg.tensor([5.])).backward()
        >>> x.grad
        tensor([5.])
        """
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Given one gradient per output of ``forward``, returns one gradient (or None) per input.
        Subclasses define it (or its other name, ``vjp``) as a static method.

        >>> import tapegrad as tg
        >>> class Double(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> x = tg.tensor([1., 2.], requires_grad=True)
        >>> Double.apply(x).sum().backward()
        >>> x.grad
        tensor([2., 2.])
        """
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function "
            "to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Forward mode: given one tangent per argument of ``forward`` (zeros for a tensor without
        one, None for a non-tensor argument), returns one tangent per output. ``ctx.saved_tensors``
        here gives what forward passed to ``ctx.save_for_forward``. Subclasses define it as a
        static method to be usable under ``tg.autograd.forward_ad``.

        >>> import tapegrad as tg
        >>> import tapegrad.autograd.forward_ad as fwAD
        >>> class Square(tg.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_forward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def jvp(ctx, t):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * t
        >>> with fwAD.dual_level():
        ...     y = Square.apply(fwAD.make_dual(tg.tensor([3.]), tg.tensor([1.])))
        ...     fwAD.unpack_dual(y).tangent
        tensor([6.])
        """
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    @staticmethod
    def _tg_backward_and_vjp(ctx: Any, *grad_outputs: Any) -> Any:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
            "You should only implement one of them."
        )

    #: Binds the arguments to forward's signature and runs the function (native; see
    #: src/python/function.rs).
    apply = classmethod(_C._function_apply)


def once_differentiable(fn: _F) -> _F:
    """Declares a backward that cannot itself be differentiated: it runs without recording, and a
    second differentiation through its results raises.

    >>> import tapegrad as tg
    >>> class Square(tg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     @tg.once_differentiable
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = tg.tensor([3.], requires_grad=True)
    >>> Square.apply(x).backward()
    >>> x.grad
    tensor([6.])
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            return fn(ctx, *args)

    wrapper._tg_once_differentiable = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def _function_name(fn, default):
    name = getattr(fn, "__name__", "")
    return name if name.isidentifier() and name not in ("forward", "backward") else default


class _AutogradCallable:
    """What ``autograd_function`` returns: calling it is ``Function.apply``."""

    def __init__(self, cls: type[Function]) -> None:
        self.cls = cls
        self.apply = cls.apply
        self.__name__ = cls.__name__
        self.__doc__ = cls.forward.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.cls.apply(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tapegrad.autograd_function {self.cls.__name__}>"


def autograd_function(
    forward: Callable[..., Any], backward: Callable[..., Any], name: str | None = None,
    jvp: Callable[..., Any] | None = None,
) -> _AutogradCallable:
    """R torch's spelling: ``f = autograd_function(forward=..., backward=...)``; ``f(x, ...)``.
    ``jvp(ctx, *tangents)``, when given, is the forward-mode rule (``Function.jvp``).

    >>> import tapegrad as tg
    >>> def forward(ctx, x):
    ...     ctx.save_for_backward(x)
    ...     return x.exp()
    >>> def backward(ctx, g):
    ...     (x,) = ctx.saved_tensors
    ...     return x.exp() * g
    >>> my_exp = tg.autograd_function(forward, backward, name="MyExp")
    >>> x = tg.tensor([0.], requires_grad=True)
    >>> my_exp(x)
    tensor([1.], grad_fn=<MyExpBackward>)
    """
    if not callable(forward) or not callable(backward):
        raise TypeError("autograd_function needs callable forward and backward")
    cls_name = name or _function_name(forward, "AutogradFunction")
    attrs = {
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "__module__": getattr(forward, "__module__", __name__),
    }
    if jvp is not None:
        if not callable(jvp):
            raise TypeError("autograd_function needs a callable jvp")
        attrs["jvp"] = staticmethod(jvp)
    cls = type(cls_name, (Function,), attrs)
    return _AutogradCallable(cls)


class _Computed:
    """What ``custom_gradient`` computed before ``apply``: the decorated function's result and
    its ``grad_fn``. Passed to ``forward`` as one non-tensor argument."""

    __slots__ = ("result", "grad_fn")

    def __init__(self, result, grad_fn):
        self.result, self.grad_fn = result, grad_fn


def _as_tensor(value):
    """Python numbers (not bools) and NumPy arrays and scalars as tensors; other values unchanged."""
    if isinstance(value, (int, float, np.ndarray, np.number)) and not isinstance(value, (bool, np.bool_)):
        return _C.tensor(value)
    return value


def _output_of(value):
    """A value the decorated function returned, as ``forward`` returns it: tensors detached (their
    gradient comes from ``grad_fn`` only), numbers and arrays as new tensors."""
    value = _as_tensor(value)
    return value.detach() if isinstance(value, Tensor) else value


def _positional_names(f):
    """The names of ``f``'s positional parameters, and the name for the rest (its ``*args``)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return [], "args"
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    return names, rest


def custom_gradient(f: Callable[..., Any] | None = None, *,
                    jvp: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """TensorFlow/Keras' spelling: ``f(*args, **kwargs)`` returns ``(output, grad_fn)``, where
    ``grad_fn`` takes one upstream gradient per output and returns one gradient per tensor among
    the positional arguments (a single one when there is one).

    Forward mode (``tg.autograd.forward_ad``): by default the output's tangent is the one ``f``'s
    own operations computed (``f`` runs on the caller's dual tensors). ``@custom_gradient(jvp=rule)``
    replaces it: ``rule(primals, tangents)`` gets the positional arguments and one tangent per
    positional argument (zeros for a tensor without one, None for a non-tensor) and returns the
    output's tangent (one per output).

    As in TensorFlow, ``f`` runs with history kept, on the caller's tensors, so that ``grad_fn``
    may use them differentiably (second derivatives through it); its output is then cut from that
    history and gets its gradient from ``grad_fn`` only. Positional arguments that are Python
    numbers or NumPy arrays are converted to tensors (and want a gradient, ``None`` allowed); other
    positional values and keyword arguments are passed through and get none.

    >>> import tapegrad as tg
    >>> @tg.custom_gradient
    ... def clipped_identity(x):
    ...     return x.clone(), lambda g: g.clamp(-1, 1)
    >>> x = tg.tensor([1., 2.], requires_grad=True)
    >>> (clipped_identity(x) * 5).sum().backward()
    >>> x.grad
    tensor([1., 1.])
    """
    if f is None:
        return functools.partial(custom_gradient, jvp=jvp)
    name = _function_name(f, "CustomGradient")
    positional, varargs = _positional_names(f)

    def forward(ctx, *values):
        computed = values[-1]
        ctx._tg_grad_fn = computed.grad_fn
        ctx._tg_tensor_mask = [isinstance(v, Tensor) for v in values[:-1]]
        result = computed.result
        ctx._tg_primals = values[:-1]
        if jvp is None and _C._dual_level_count():
            # the tangents f's own operations gave its outputs, per dual level
            results = result if isinstance(result, (tuple, list)) else (result,)
            # forward runs with forward grad off, which hides tangents from unpack_dual (as
            # PyTorch's): they are read with it on
            prev = _C._set_fwd_grad_enabled(True)
            try:
                ctx._tg_tangents = [
                    [_C._unpack_dual(r, level)[1] if isinstance(r, Tensor) else None for r in results]
                    for level in range(_C._dual_level_count())
                ]
            finally:
                _C._set_fwd_grad_enabled(prev)
        if isinstance(result, (tuple, list)):
            return tuple(_output_of(r) for r in result)
        return _output_of(result)

    def backward(ctx, *upstream):
        grads = ctx._tg_grad_fn(*upstream)
        grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
        mask = ctx._tg_tensor_mask
        expected = sum(mask)
        if len(grads) != expected:
            raise RuntimeError(
                f"custom_gradient function {name}: grad_fn returned {len(grads)} gradient"
                f"{'' if len(grads) == 1 else 's'}, expected {expected} (one per tensor among "
                f"the positional arguments)"
            )
        grads = iter(grads)
        return (*(next(grads) if is_tensor else None for is_tensor in mask), None)

    def forward_rule(ctx, *tangents):
        if jvp is not None:
            return jvp(ctx._tg_primals, tangents[:-1])
        # the level whose tangents are being computed is the first one hidden from this rule
        found = getattr(ctx, "_tg_tangents", [])
        level = _C._dual_level_count()
        out = found[level] if level < len(found) else []
        return tuple(out) if len(out) != 1 else out[0]

    cls = type(name, (Function,), {
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "jvp": staticmethod(forward_rule),
        "__module__": getattr(f, "__module__", __name__),
    })

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        args = tuple(_as_tensor(a) for a in args)
        output = f(*args, **kwargs)
        if not (isinstance(output, (tuple, list)) and len(output) == 2 and callable(output[1])):
            raise TypeError(f"{name} must return (output, grad_fn) for custom_gradient")
        result, grad_fn = output
        names = positional[: len(args)]
        names += [f"{varargs}[{i}]" for i in range(len(args) - len(names))]
        names.append("_tg_computed")
        out = _C._function_apply_named(cls, (*args, _Computed(result, grad_fn)), names)
        return list(out) if isinstance(result, list) else out

    wrapper.function_class = cls  # type: ignore[attr-defined]
    return wrapper
