"""Element-wise functions: ``tg.exp(t)`` is ``t.exp()``. Most are native (``src/python/tensor_math.rs``
and ``tensor_unary.rs``) and re-exported here; the Python ones are one-line calls of the ``Tensor``
method of the same name, and the function forms of a few in-place methods (``tg.exp_(t)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _tapegrad as _C
from ._tapegrad import (
    Tensor,
    abs,
    acos,
    acosh,
    addcdiv,
    addcmul,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    cos,
    cosh,
    elu,
    erf,
    erfc,
    erfinv,
    exp,
    exp2,
    expm1,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    frac,
    gelu,
    hardtanh,
    isfinite,
    isinf,
    isnan,
    leaky_relu,
    lerp,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsigmoid,
    maximum,
    minimum,
    nan_to_num,
    neg,
    reciprocal,
    relu,
    remainder,
    round,
    rsqrt,
    selu,
    sigmoid,
    sign,
    silu,
    sin,
    sinh,
    softplus,
    sqrt,
    square,
    tan,
    tanh,
    trunc,
    where,
)

if TYPE_CHECKING:
    from ._tapegrad import _Number, _TensorLike

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "neg",
    "abs",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "clamp",
    "clip",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "isclose",
    "log1p",
    "expm1",
    "log2",
    "log10",
    "exp2",
    "rsqrt",
    "square",
    "reciprocal",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "frac",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "erfinv",
    "round",
    "silu",
    "gelu",
    "elu",
    "selu",
    "leaky_relu",
    "hardtanh",
    "softplus",
    "logsigmoid",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "fmod",
    "remainder",
    "floor_divide",
    "atan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_not",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "lerp",
    "addcmul",
    "addcdiv",
    "where",
    "exp_",
    "sqrt_",
    "relu_",
    "sigmoid_",
    "tanh_",
    "neg_",
]


def add(input: Tensor, other: _TensorLike) -> Tensor:
    """``input + other``, elementwise with broadcasting.

    >>> import tapegrad as tg
    >>> tg.add(tg.tensor([1., 2.]), 10)
    tensor([11., 12.])
    """
    return input.add(other)


def sub(input: Tensor, other: _TensorLike) -> Tensor:
    """``input - other``.

    >>> import tapegrad as tg
    >>> tg.sub(tg.tensor([5, 7]), tg.tensor([1, 2]))
    tensor([4, 5])
    """
    return input.sub(other)


def mul(input: Tensor, other: _TensorLike) -> Tensor:
    """``input * other``.

    >>> import tapegrad as tg
    >>> tg.mul(tg.tensor([1., 2.]), tg.tensor([3., 4.]))
    tensor([3., 8.])
    """
    return input.mul(other)


def div(input: Tensor, other: _TensorLike) -> Tensor:
    """``input / other`` (true division: integers give floats).

    >>> import tapegrad as tg
    >>> tg.div(tg.tensor([1, 3]), 2)
    tensor([0.5000, 1.5000])
    """
    return input.div(other)


def pow(input: Tensor, exponent: _TensorLike) -> Tensor:
    """``input ** exponent``.

    >>> import tapegrad as tg
    >>> tg.pow(tg.tensor([2., 3.]), 2)
    tensor([4., 9.])
    """
    return input.pow(exponent)


def clamp(input: Tensor, min: _Number | Tensor | None = None, max: _Number | Tensor | None = None) -> Tensor:
    """Each element limited to ``[min, max]`` (either bound may be None, a number or a tensor).

    >>> import tapegrad as tg
    >>> tg.clamp(tg.tensor([-2., 0.5, 3.]), min=0, max=1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    return input.clamp(min, max)


def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """An alias of ``clamp``.

    >>> import tapegrad as tg
    >>> tg.clip(tg.tensor([-2.0, 0.5, 2.0]), -1.0, 1.0).tolist()
    [-1.0, 0.5, 1.0]
    """
    return clamp(input, min, max)


def _clip_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """In-place ``clip`` (an alias of ``clamp_``).

    >>> import tapegrad as tg
    >>> tg.tensor([-2.0, 2.0]).clip_(-1.0, 1.0).tolist()
    [-1.0, 1.0]
    """
    return self.clamp_(min, max)


def eq(input: Tensor, other: _TensorLike) -> Tensor:
    """``input == other``, elementwise, as a bool tensor.

    >>> import tapegrad as tg
    >>> tg.eq(tg.tensor([1, 2]), 2)
    tensor([False,  True])
    """
    return input.eq(other)


def ne(input: Tensor, other: _TensorLike) -> Tensor:
    """``input != other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.ne(tg.tensor([1, 2]), 2)
    tensor([ True, False])
    """
    return input.ne(other)


def lt(input: Tensor, other: _TensorLike) -> Tensor:
    """``input < other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.lt(tg.tensor([1, 2]), 2)
    tensor([ True, False])
    """
    return input.lt(other)


def le(input: Tensor, other: _TensorLike) -> Tensor:
    """``input <= other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.le(tg.tensor([1, 2]), 2)
    tensor([True, True])
    """
    return input.le(other)


def gt(input: Tensor, other: _TensorLike) -> Tensor:
    """``input > other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.gt(tg.tensor([1, 3]), 2)
    tensor([False,  True])
    """
    return input.gt(other)


def ge(input: Tensor, other: _TensorLike) -> Tensor:
    """``input >= other``, elementwise.

    >>> import tapegrad as tg
    >>> tg.ge(tg.tensor([1, 2]), 2)
    tensor([False,  True])
    """
    return input.ge(other)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|``, elementwise; equal infinities are close.

    >>> import tapegrad as tg
    >>> tg.isclose(tg.tensor([1., 2.]), tg.tensor([1. + 1e-9, 2.1]))
    tensor([ True, False])
    """
    return input.isclose(other, rtol, atol, equal_nan)


def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``tg.where(condition, self, other)``: ``self`` where ``condition`` holds, else ``other``.

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).where(tg.tensor([True, False]), 0.0)
    tensor([1., 0.])
    """
    return _C.where(condition, self, other)


_INPLACE_EXAMPLES = {
    "exp_": ("tg.tensor([0.0])", "tensor([1.])"),
    "sqrt_": ("tg.tensor([4.0])", "tensor([2.])"),
    "relu_": ("tg.tensor([-1.0, 2.0])", "tensor([0., 2.])"),
    "sigmoid_": ("tg.tensor([0.0])", "tensor([0.5000])"),
    "tanh_": ("tg.tensor([0.0])", "tensor([0.])"),
    "neg_": ("tg.tensor([1.0])", "tensor([-1.])"),
}


def _function_form(name: str) -> Any:
    def fn(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return getattr(input, name)()

    arg, shown = _INPLACE_EXAMPLES[name]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``input.{name}()`` as a function: changes ``input`` in place and returns it.\n\n"
        f"    >>> import tapegrad as tg\n    >>> tg.{name}({arg})\n    {shown}\n"
    )
    return fn


exp_ = _function_form("exp_")


sqrt_ = _function_form("sqrt_")


relu_ = _function_form("relu_")


sigmoid_ = _function_form("sigmoid_")


tanh_ = _function_form("tanh_")


neg_ = _function_form("neg_")
