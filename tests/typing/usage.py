"""Typed use of tapegrad that must type-check (``python -m mypy``, see ``.ci/run``); it also runs.

Each ``assert_type`` pins what a type checker sees; each ``# type: ignore[code]`` marks a line that
must be an error: mypy runs with ``warn_unused_ignores``, so if the stubs stop flagging it (a method
typed ``Any``, say), the check fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from typing_extensions import assert_type

import tapegrad as tg
from tapegrad import autograd

# factories
x = tg.zeros(3)
assert_type(x, tg.Tensor)
assert_type(tg.ones((2, 3), dtype=tg.float64), tg.Tensor)
assert_type(tg.tensor([[1.0, 2.0]], requires_grad=True), tg.Tensor)
assert_type(tg.arange(0, 10, 2), tg.Tensor)
assert_type(tg.full((2,), 1.5), tg.Tensor)
assert_type(tg.from_numpy(np.zeros(3)), tg.Tensor)
assert_type(tg.from_dlpack(np.zeros(3)), tg.Tensor)
assert_type(x.__dlpack_device__(), tuple[int, int])
assert_type(tg.zeros_like(x), tg.Tensor)
assert_type(tg.cat([x, x]), tg.Tensor)
assert_type(tg.where(x > 0, x, 0.0), tg.Tensor)

# properties and conversions
assert_type(x.shape, tuple[int, ...])
assert_type(x.size(), tuple[int, ...])
assert_type(x.size(0), int)
assert_type(x.dtype, tg.dtype)
assert_type(x.dtype.name, str)
assert_type(x.grad, tg.Tensor | None)
assert_type(x.grad_fn, tg._tapegrad.Node | None)
assert_type(x.sum().item(), int | float)
assert_type(x.numpy(), np.ndarray)
assert_type(x.to(tg.float64), tg.Tensor)
assert_type(float(x.sum()), float)

# operators, methods and the functional API
w = tg.randn(3, 3, requires_grad=True)
y = (w @ x + 1.0) * 2 - x / 3
assert_type(y, tg.Tensor)
assert_type(-y ** 2, tg.Tensor)
assert_type(y == 0, tg.Tensor)
assert_type(y[0], tg.Tensor)
assert_type(y[..., None, 1:], tg.Tensor)
assert_type(y.reshape(3, 1), tg.Tensor)
assert_type(y.reshape((3, 1)), tg.Tensor)
assert_type(tg.exp(y), tg.Tensor)
assert_type(tg.clamp(y, min=0), tg.Tensor)
assert_type(tg.sum(y, dim=(0,)), tg.Tensor)

# max: a tensor over everything, the (values, indices) pair along a dimension
assert_type(y.max(), tg.Tensor)
assert_type(y.max(dim=0).values, tg.Tensor)
assert_type(tg.max(y, 0).indices, tg.Tensor)

# autograd
loss = (y * y).sum()
loss.backward(retain_graph=True)
assert_type(autograd.grad(loss, [w]), tuple[tg.Tensor | None, ...])
handle = w.register_hook(lambda g: g * 2)
handle.remove()
with tg.no_grad():
    w.sub_(0.1 * (w.grad if w.grad is not None else tg.zeros_like(w)))


class Square(tg.Function):
    @staticmethod
    def forward(ctx: tg.FunctionCtx, a: tg.Tensor) -> tg.Tensor:
        ctx.save_for_backward(a)
        ctx.note = "attributes are free"
        return a * a

    @staticmethod
    def backward(ctx: tg.FunctionCtx, g: tg.Tensor) -> tg.Tensor:
        a: tg.Tensor = ctx.saved_tensors[0]  # saved values may be any objects: typed Any
        assert_type(ctx.needs_input_grad[0], bool)
        return 2 * a * g


Square.apply(x)

# errors the stubs must report (type-checked, not run)
# tg.linalg and the products (issue 15)
m = tg.eye(3, dtype=tg.float64) * 2
assert_type(tg.linalg.inv(m), tg.Tensor)
assert_type(tg.linalg.slogdet(m).logabsdet, tg.Tensor)
assert_type(tg.linalg.eigh(m).eigenvectors, tg.Tensor)
assert_type(tg.linalg.svd(m, full_matrices=False).S, tg.Tensor)
assert_type(tg.linalg.norm(m, "fro"), tg.Tensor)
assert_type(tg.einsum("ij,jk->ik", m, m), tg.Tensor)
assert_type(tg.addmm(m, m, m, beta=0.5), tg.Tensor)

if TYPE_CHECKING:
    x.no_such_method()  # type: ignore[attr-defined]
    tg.no_such_function(x)  # type: ignore[attr-defined]
    tg.zeros(3).sum().backward(retain_graph="yes")  # type: ignore[arg-type]
    tg.exp("a string")  # type: ignore[arg-type]
    z: int = tg.zeros(3)  # type: ignore[assignment]
    n: int = x.size()  # type: ignore[assignment]
