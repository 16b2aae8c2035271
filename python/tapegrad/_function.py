"""Custom operations in Python: three spellings over one mechanism (API.md §3).

``Function`` (PyTorch), ``autograd_function`` (R torch) and ``custom_gradient`` (TensorFlow/Keras)
all end in ``Function.apply``, which binds the arguments to ``forward``'s signature (cached per
class) and hands over to the native ``_function_apply``: that runs ``forward`` on detached inputs
with grad mode off, records one node, and checks what ``backward`` returns.
"""

import functools
import inspect

from . import _tapegrad as _C
from ._errors import GRAPH_FREED
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


class _Slot:
    """Marks where the i-th saved tensor goes back in the saved values."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward`` (API.md §3.2). Any other attribute is free
    for the user."""

    def __init__(self, names):
        self._tg_names = names
        self._tg_in_forward = False
        self._tg_to_save = None
        self._tg_template = None
        self._tg_raw = None
        self._tg_handle = None
        self._tg_released = False
        self._tg_dirty = ()
        self._tg_non_differentiable = ()
        self._tg_materialize_grads = True
        self._tg_needs = _NeedsInputGrad((False,) * len(names), names)

    # -- called by the native layer --
    def _tg_store_output_ref(self, name, ref):
        # An output kept on ctx is stored without its node (no reference cycle); reading the
        # attribute rebuilds the tensor with its grad_fn.
        self.__dict__.pop(name, None)
        self.__dict__.setdefault("_tg_output_refs", {})[name] = ref

    def __getattr__(self, name):
        refs = self.__dict__.get("_tg_output_refs")
        if refs is not None and name in refs:
            return refs[name].get()
        raise AttributeError(f"'FunctionCtx' object has no attribute {name!r}")

    def __setattr__(self, name, value):
        refs = self.__dict__.get("_tg_output_refs")
        if refs is not None:
            refs.pop(name, None)
        object.__setattr__(self, name, value)

    def _tg_begin_forward(self, needs):
        self._tg_needs = _NeedsInputGrad(tuple(needs), self._tg_names)
        self._tg_in_forward = True

    def _tg_end_forward(self):
        self._tg_in_forward = False

    def _tg_pack_saved(self):
        """Splits the saved values into the tensors (kept and version-checked natively) and a
        template holding everything else."""
        if self._tg_to_save is None:
            return []
        values, named = self._tg_to_save
        tensors = []

        def slot(v):
            if isinstance(v, Tensor):
                tensors.append(v)
                return _Slot(len(tensors) - 1)
            return v

        self._tg_template = (tuple(slot(v) for v in values), {k: slot(v) for k, v in named.items()})
        self._tg_to_save = None
        self._tg_raw = tensors
        return tensors

    @property
    def _tg_saved_handle(self):
        return self._tg_handle

    @_tg_saved_handle.setter
    def _tg_saved_handle(self, handle):
        self._tg_handle = handle
        self._tg_raw = None  # the node owns the saved tensors now

    def _tg_release(self):
        if self._tg_template is not None:
            self._tg_released = True
        self._tg_template = None
        self._tg_raw = None

    def _tg_unpack(self):
        if self._tg_released:
            raise RuntimeError(GRAPH_FREED)
        if self._tg_template is None:
            if self._tg_to_save is not None:
                return self._tg_to_save
            return (), {}
        tensors = self._tg_handle.unpack() if self._tg_handle is not None else self._tg_raw
        positional, named = self._tg_template

        def fill(v):
            return tensors[v.i] if isinstance(v, _Slot) else v

        return tuple(fill(v) for v in positional), {k: fill(v) for k, v in named.items()}

    # -- the user's API --
    def save_for_backward(self, *values, **named):
        """Keeps values for backward. Tensors among them are version-checked when read back."""
        if not self._tg_in_forward:
            raise RuntimeError("save_for_backward can only be called inside forward")
        if self._tg_to_save is not None:
            raise RuntimeError("save_for_backward can be called at most once in forward")
        self._tg_to_save = (values, named)

    @property
    def saved_tensors(self):
        return self._tg_unpack()[0]

    @property
    def saved_variables(self):
        return _SavedMapping(self._tg_unpack()[1])

    @property
    def needs_input_grad(self):
        return self._tg_needs

    def mark_dirty(self, *tensors):
        if not self._tg_in_forward:
            raise RuntimeError("mark_dirty can only be called inside forward")
        self._tg_dirty = self._tg_dirty + tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        if not self._tg_in_forward:
            raise RuntimeError("mark_non_differentiable can only be called inside forward")
        self._tg_non_differentiable = self._tg_non_differentiable + tuple(tensors)

    def set_materialize_grads(self, value):
        self._tg_materialize_grads = bool(value)


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
        if not kwargs and self.simple and len(args) == len(self.names):
            return args, self.names
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

    @classmethod
    def apply(cls, *args, **kwargs):
        spec = cls.__dict__.get("_tg_spec")
        if spec is None:
            spec = _Spec(cls)
            cls._tg_spec = spec
        values, names = spec.bind(args, kwargs)
        ctx = FunctionCtx(names)
        return _C._function_apply(cls, ctx, values, spec.name, names, spec.once)

    @classmethod
    def _tg_backward(cls, ctx, grads):
        """Calls the user's backward and puts its result in forward's parameter order."""
        result = cls.backward(ctx, *grads)
        names = ctx._tg_names
        if isinstance(result, dict):
            unknown = [k for k in result if k not in names]
            if unknown:
                raise RuntimeError(
                    f"function {cls.__name__}.backward returned gradients for unknown argument(s) "
                    f"{unknown}; forward's arguments are {names}"
                )
            return tuple(result.get(n) for n in names)
        if isinstance(result, (tuple, list)):
            return tuple(result)
        return (result,)


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
        spec = cls.__dict__.get("_tg_spec")
        if spec is None:
            spec = _Spec(cls)
            cls._tg_spec = spec
        ctx = FunctionCtx(names)
        return _C._function_apply(cls, ctx, values, spec.name, names, spec.once)

    wrapper.function_class = cls
    return wrapper
