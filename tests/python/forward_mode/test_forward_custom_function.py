"""Custom Functions under nested dual levels: ``jvp`` runs once per level at which an input carries a
tangent, each time with ``ctx.saved_tensors`` (what ``save_for_forward`` got), so that the output
carries a tangent at every level. The values are PyTorch's (``torch.func.jvp`` nested, the only nesting
PyTorch allows) and the closed forms."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD


class Square(tg.Function):
    """``forward(ctx, x)`` spelling, ``save_for_forward`` in forward."""

    calls = []

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("forward mode only")

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        Square.calls.append(float(t.item()))
        return 2 * x * t


class Cube(tg.Function):
    """``setup_context`` spelling."""

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_forward(x)
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * t


def test_every_level_gets_its_tangent():
    Square.calls.clear()
    x = tg.tensor([3.0], dtype=tg.float64)
    with fwAD.dual_level() as outer:
        x1 = fwAD.make_dual(x, tg.tensor([1.0], dtype=tg.float64), level=outer)
        with fwAD.dual_level() as inner:
            x2 = fwAD.make_dual(x1, tg.tensor([10.0], dtype=tg.float64), level=inner)
            y = Square.apply(x2)  # once failed: the second level's jvp found saved_tensors empty
            t_inner = fwAD.unpack_dual(y, level=inner).tangent
            t_outer = fwAD.unpack_dual(y, level=outer).tangent
    assert sorted(Square.calls) == [1.0, 10.0]
    np.testing.assert_allclose(t_inner.numpy(), [60.0])  # 2 x · 10
    np.testing.assert_allclose(t_outer.numpy(), [6.0])  # 2 x · 1


@pytest.mark.parametrize("fn", [Cube.apply, lambda y: Square.apply(y) * y], ids=["setup_context", "forward_ctx"])
def test_nested_jvp_transforms(fn):
    # PyTorch (torch.func.jvp nested, Cube): (8, 12) for the output's outer tangent, 120 for the inner
    # tangent's value; closed forms for x³ at x = 2: x³ = 8, 3x² = 12, 3x² · 10 = 120
    x = tg.tensor([2.0], dtype=tg.float64)
    one = tg.ones_like(x)
    out, t = tg.func.jvp(lambda x: tg.func.jvp(fn, (x,), (one * 10,))[0], (x,), (one,))
    np.testing.assert_allclose(out.numpy(), [8.0])
    np.testing.assert_allclose(t.numpy(), [12.0])
    inner_t, _ = tg.func.jvp(lambda x: tg.func.jvp(fn, (x,), (one * 10,))[1], (x,), (one,))
    np.testing.assert_allclose(inner_t.numpy(), [120.0])


def test_the_inner_tangent_is_differentiated_at_the_outer_level():
    # d/dx of the inner jvp 3x² · 1 is 6x = 12 at x = 2 (the jvp formula's own operations carry the
    # outer level's tangent of the saved x). PyTorch gives 0 here (docs/differences.md).
    x = tg.tensor([2.0], dtype=tg.float64)
    one = tg.ones_like(x)
    out, t = tg.func.jvp(lambda x: tg.func.jvp(Cube.apply, (x,), (one,))[1], (x,), (one,))
    np.testing.assert_allclose(out.numpy(), [12.0])
    np.testing.assert_allclose(t.numpy(), [12.0])
    h = tg.func.jacfwd(tg.func.jacfwd(Cube.apply))(x)
    np.testing.assert_allclose(h.numpy(), [[[12.0]]])
