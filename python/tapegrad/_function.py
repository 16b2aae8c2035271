"""Custom operations in Python: three spellings over one mechanism (API.md §3).

``Function`` (PyTorch), ``autograd_function`` (R torch) and ``custom_gradient`` (TensorFlow/Keras)
all end in ``Function.apply``, which binds the arguments to ``forward``'s signature (cached per
class) and hands over to the native ``_function_apply``: that runs ``forward`` on detached inputs
with grad mode off, records one node, and checks what ``backward`` returns.
"""

import functools
import inspect

from . import _tapegrad as _C
from ._grad_mode import no_grad

Tensor = _C.Tensor


class _NeedsInputGrad(tuple):
    """A tuple of bools, one per parameter of ``forward``, also readable by parameter name."""

    def __new__(cls, values, names):
        obj = super().__new__(cls, values)
        obj._names = names
        return obj

    def __getattr__(self, name):
        try:
            return self[self._names.index(name)]
        except ValueError:
            raise AttributeError(f"forward has no parameter named {name!r} (parameters: {self._names})") from None

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.__getattr__(key)
        return super().__getitem__(key)


class _SavedMapping(dict):
    """The named saved values: a mapping that also allows attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"nothing was saved under the name {name!r} (saved: {list(self)})") from None


FunctionCtx = _C.FunctionCtx


class _Spec:
    """What ``apply`` learns once about a class: forward's parameters, the node name, whether
    backward is once-differentiable."""

    def __init__(self, cls):
        sig = inspect.signature(cls.forward)
        params = list(sig.parameters.values())
        if not params:
            raise TypeError(f"{cls.__name__}.forward must take ctx as its first parameter")
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
        self.once = bool(getattr(cls.backward, "_tg_once_differentiable", False))

    def bind(self, args, kwargs):
        kwargs = kwargs or {}
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}.apply: {e}") from None
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
    static methods; call them with ``YourFunction.apply(...)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a tapegrad.Function must implement forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a tapegrad.Function must implement backward(ctx, *grad_outputs) to be differentiated")

    #: Binds the arguments to forward's signature and runs the function (native; see
    #: src/python/function.rs).
    apply = classmethod(_C._function_apply)


def once_differentiable(fn):
    """Declares a backward that cannot itself be differentiated: it runs without recording, and a
    second differentiation through its results raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    wrapper._tg_once_differentiable = True
    return wrapper


def _function_name(fn, default):
    name = getattr(fn, "__name__", "")
    return name if name.isidentifier() and name not in ("forward", "backward") else default


class _AutogradCallable:
    """What ``autograd_function`` returns: calling it is ``Function.apply``."""

    def __init__(self, cls):
        self.cls = cls
        self.apply = cls.apply
        self.__name__ = cls.__name__
        self.__doc__ = cls.forward.__doc__

    def __call__(self, *args, **kwargs):
        return self.cls.apply(*args, **kwargs)

    def __repr__(self):
        return f"<tapegrad.autograd_function {self.cls.__name__}>"


def autograd_function(forward, backward, name=None):
    """R torch's spelling: ``f = autograd_function(forward=..., backward=...)``; ``f(x, ...)``."""
    if not callable(forward) or not callable(backward):
        raise TypeError("autograd_function needs callable forward and backward")
    cls_name = name or _function_name(forward, "AutogradFunction")
    cls = type(cls_name, (Function,), {
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "__module__": getattr(forward, "__module__", __name__),
    })
    return _AutogradCallable(cls)


def custom_gradient(f):
    """TensorFlow/Keras' spelling: ``f(*args)`` returns ``(output, grad_fn)``, where ``grad_fn``
    takes one upstream gradient per output and returns one gradient per tensor argument."""
    sig = inspect.signature(f)

    def forward(ctx, *args):
        ctx._tg_tensor_mask = [isinstance(a, Tensor) for a in args]
        output, grad_fn = f(*args)
        if not callable(grad_fn):
            raise TypeError(f"{f.__name__} must return (output, grad_fn) for custom_gradient")
        ctx._tg_grad_fn = grad_fn
        return output

    def backward(ctx, *upstream):
        grads = ctx._tg_grad_fn(*upstream)
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        grads = iter(grads)
        return tuple(next(grads, None) if is_tensor else None for is_tensor in ctx._tg_tensor_mask)

    cls = type(_function_name(f, "CustomGradient"), (Function,), {
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "__module__": getattr(f, "__module__", __name__),
    })
    names = list(sig.parameters)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = tuple(bound.arguments[n] for n in names)
        return _C._function_apply_named(cls, values, names)

    wrapper.function_class = cls
    return wrapper
