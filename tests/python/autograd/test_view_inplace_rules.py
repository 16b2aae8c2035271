"""Views, in-place writes and custom functions: the rules PyTorch follows, each a regression test for
a silent wrong gradient or a silently modified leaf (issue 13, root causes 1-10).

Oracles are closed forms worked out by hand (the derivative of each small program), checked against
PyTorch 2.x when the tests were written.
"""

import numpy as np
import pytest

import tapegrad as tg


def close(t, expected):
    np.testing.assert_allclose(t.numpy(), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-7)


class AddInPlace(tg.Function):
    """x += y, written through the input, returned as the output."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.mark_dirty(x)
        x.add_(y)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, g


class AddInPlaceTwice(tg.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.mark_dirty(x)
        x.add_(y)
        return x, x

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + g2, g1 + g2


class SliceAlias(tg.Function):
    """Returns a view of its input (no mark_dirty)."""

    @staticmethod
    def forward(ctx, x):
        return x[:2]

    @staticmethod
    def backward(ctx, g):
        return tg.cat([g, tg.zeros(1)])


class TwoViews(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x[:], x[:]

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + g2


class Identity(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return 3 * g


# 1. mark_dirty on a view: the base takes the function's history in the view's region.
def test_mark_dirty_on_view_reaches_base_and_operand():
    root, b = tg.zeros(4, requires_grad=True), tg.ones(2, requires_grad=True)
    x = root.clone()
    AddInPlace.apply(x[1:3], b)
    close(x.detach(), [0, 1, 1, 0])
    (x * tg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    close(b.grad, [2, 3])
    close(root.grad, [1, 2, 3, 4])


def test_mark_dirty_on_view_with_two_outputs_is_refused():
    root, b = tg.zeros(2, 2, requires_grad=True), tg.ones(2, requires_grad=True)
    x = root.clone()
    with pytest.raises(RuntimeError, match="cannot return more than one Tensor"):
        AddInPlaceTwice.apply(x[1], b)


def test_mark_dirty_twice_returned_non_view_is_fine():
    root, b = tg.zeros(2, requires_grad=True), tg.ones(2, requires_grad=True)
    x = root.clone()
    AddInPlaceTwice.apply(x, b)
    x.sum().backward()
    close(b.grad, [1, 1])
    close(root.grad, [1, 1])


# 2. A custom function's output that aliases an input is a view made in a custom function.
def test_custom_view_output_written_in_place_is_refused_and_leaf_untouched():
    x = tg.ones(3, requires_grad=True)
    out = SliceAlias.apply(x)
    with pytest.raises(RuntimeError, match="Output 0 of SliceAlias is a view and is being modified inplace"):
        out.zero_()
    with pytest.raises(RuntimeError, match="created inside a custom Function"):
        out.add_(100)
    close(x.detach(), [1, 1, 1])


def test_input_returned_as_is_is_a_view_too():
    x = tg.ones(2, requires_grad=True)
    out = Identity.apply(x)
    with pytest.raises(RuntimeError, match="returned as-is"):
        out.mul_(2)
    close(x.detach(), [1, 1])
    Identity.apply(x).sum().backward()
    close(x.grad, [3, 3])


def test_multiple_view_outputs_written_in_place_are_refused():
    x = tg.ones(3, requires_grad=True)
    o1, o2 = TwoViews.apply(x)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        o1.zero_()


def test_custom_view_output_whose_base_changed_cannot_be_differentiated():
    x = tg.ones(3, requires_grad=True).clone()
    out = SliceAlias.apply(x)
    x.mul_(2)
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified inplace"):
        out.sum().backward()


# 3. The leaf rule covers views: of a leaf (through mark_dirty too), and views made under no_grad.
def test_mark_dirty_on_view_of_leaf_is_refused():
    class Double(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            x.mul_(2)
            return x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    a = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf"):
        Double.apply(a.view_as(a))


def test_view_of_no_grad_view_written_with_grad_mode_is_refused():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        y = x.view(2)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        z /= 2
    close(x.detach(), [1, 1])


def test_no_grad_view_written_with_a_grad_operand_is_refused():
    y = tg.ones(4)
    with tg.no_grad():
        v = y[0:2]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        v.mul_(tg.ones(2, requires_grad=True))


def test_detach_is_not_a_view_for_autograd():
    r = tg.ones(4, requires_grad=True)
    y = r.clone()
    d = y[1:3].detach()
    d.zero_()
    assert y.grad_fn.name() == "CloneBackward"
    y.sum().backward()
    close(r.grad, [1, 1, 1, 1])


# 4. In place with an operand that requires grad on a tensor that does not.
def test_inplace_mul_by_grad_operand_on_plain_tensor():
    a = tg.tensor([2.0, 5.0])
    b = tg.tensor([3.0, 3.0], requires_grad=True)
    a.mul_(b)
    assert a.requires_grad
    a.sum().backward()
    close(b.grad, [2, 5])


def test_inplace_mul_by_grad_operand_through_view_of_plain_tensor():
    a = tg.tensor([2.0, 5.0, 7.0])
    b = tg.tensor([3.0, 3.0], requires_grad=True)
    a[1:].mul_(b)
    (a * tg.tensor([1.0, 10.0, 100.0])).sum().backward()
    close(b.grad, [50, 700])


# 5. A view taken before its base gets history picks it up.
def test_view_taken_before_base_history():
    x = tg.ones(5)
    r = tg.ones(1, requires_grad=True)
    v = x[1]
    x.add_(r)
    assert v.requires_grad
    (3 * v).backward()
    close(r.grad, [3])


# 6. retain_grad follows the tensor's current value; hooks on a view's older value are not on the path.
def test_retain_grad_after_inplace_is_gradient_of_new_value():
    a = tg.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    (a * 5).sum().backward()
    close(a.grad, [5])


def test_hook_on_view_before_inplace_write_does_not_fire():
    r = tg.ones(4, requires_grad=True)
    y = r.clone()
    v = y[1:3]
    fired = []
    v.register_hook(lambda g: fired.append(g))
    v.mul_(2)
    y.sum().backward()
    assert fired == []
    close(r.grad, [1, 2, 2, 1])


def test_hook_on_non_view_before_inplace_sees_old_value_gradient():
    r = tg.ones(2, requires_grad=True)
    y = r.clone()
    fired = []
    y.register_hook(lambda g: fired.append(g.numpy().copy()))
    y.mul_(2)
    (y * 3).sum().backward()
    assert len(fired) == 1
    np.testing.assert_allclose(fired[0], [6, 6])


# 7. Save only what the gradients that are needed use.
def test_product_with_constant_does_not_save_the_variable():
    mu = tg.ones(1, requires_grad=True)
    x = mu + 0
    m = x * tg.tensor([2.0])
    x.add_(1)
    m.backward()
    close(mu.grad, [2])


def test_matmul_with_constant_does_not_save_the_variable():
    w = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x = w * 1
    c = tg.tensor([[1.0], [1.0]])
    out = x.mm(c)
    x.mul_(0)
    out.sum().backward()
    close(w.grad, [[1, 1], [1, 1]])


def test_product_still_detects_a_write_to_what_it_saved():
    x = tg.ones(2, requires_grad=True)
    c = tg.ones(2)
    m = x * c
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        m.sum().backward()


# 8. A second backward through a freed graph raises, also when the freed node saved only a scalar.
def test_second_backward_through_scalar_product_raises():
    x = tg.ones(1, requires_grad=True)
    y = 2 * x
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    close(x.grad, [2])


def test_second_backward_without_saved_values_is_allowed():
    x = tg.ones(3, requires_grad=True)
    c = x + 1
    c.sum().backward()
    c.sum().backward()
    close(x.grad, [2, 2, 2])


# 9. pow at base 0.
def test_pow_gradients_at_zero_base():
    b = tg.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    (tg.zeros(3) ** b).sum().backward()
    close(b.grad, [-np.inf, 0, 0])
    b2 = tg.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    (0 ** b2).sum().backward()
    close(b2.grad, [-np.inf, 0, 0])
    x = tg.zeros(3, requires_grad=True)
    x.pow(tg.zeros(3)).sum().backward()
    close(x.grad, [0, 0, 0])
    x0 = tg.zeros(2, requires_grad=True)
    (x0**0).sum().backward()
    close(x0.grad, [0, 0])


# 10. max() with NaN.
def test_max_backward_with_nan():
    x = tg.tensor([1.0, float("nan"), 2.0], requires_grad=True)
    x.max().backward()
    close(x.grad, [0, 1, 0])
    y = tg.tensor([float("nan")] * 3, requires_grad=True)
    y.max().backward()
    close(y.grad, [1 / 3] * 3)


# Issue 20, item 19: an input named twice gets its gradient once.
def test_backward_inputs_named_twice():
    x = tg.ones(1, requires_grad=True)
    (x * 2).sum().backward(inputs=[x, x])
    close(x.grad, [2])


# Found by the differential test against PyTorch (custom functions, views and in-place writes).
class ScaleAddInPlace(tg.Function):
    """c += v in place (mark_dirty on c)."""

    @staticmethod
    def forward(ctx, c, v):
        ctx.mark_dirty(c)
        c.add_(v)
        return c

    @staticmethod
    def backward(ctx, g):
        return g, g


def test_view_passed_to_function_that_dirties_its_base_reads_the_new_value():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    v = c[:]
    ScaleAddInPlace.apply(c, v)
    close(v.detach(), [2, 4])
    v.sum().backward()  # v is now 2x: d/dx = 2
    close(x.grad, [2, 2])


def test_mark_dirty_view_with_two_outputs_is_fine_when_nothing_is_recorded():
    base = tg.zeros(4)
    AddInPlaceTwice.apply(base[1:3], tg.ones(2))
    close(base, [0, 1, 1, 0])


def test_item_assignment_drops_leading_unit_dims_of_the_value():
    t = tg.zeros(3, 4)
    t[0] = tg.ones(1, 4)
    t[1:] = tg.ones(1, 1, 4) * 2
    close(t, [[1] * 4, [2] * 4, [2] * 4])


def test_shape_operations_that_change_nothing_return_new_views():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        v = x.t()
    assert v is not x and v.grad_fn is None
    (x + 10 * v).sum().backward()
    close(x.grad, [1, 1])  # v, made under no_grad, passes no gradient on (and keeps none)
    assert v.grad is None
    y = x * 1
    for w in (y.reshape(2), y.view(2), y.expand(2), y.squeeze(), y.t(), y.reshape(-1)):
        assert w is not y and w.grad_fn is not None
    w = y.reshape(2)
    w.retain_grad()
    (y + 10 * w).sum().backward()
    close(w.grad, [10, 10])


def test_no_grad_view_of_tensor_that_requires_grad_is_a_leaf_that_requires_grad():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tg.no_grad():
        v = x[1:]
    assert v.requires_grad and v.is_leaf and (v * 2).requires_grad
    v.retain_grad()  # a no-op on a leaf
    (x * 1 + (v * 2).sum()).sum().backward()
    assert v.grad is None
    close(x.grad, [1, 1, 1])


@pytest.mark.parametrize(
    "write",
    [lambda m: m[1:].add_(m[:3]), lambda m: m.view(2, 2).add_(m.view(2, 2).t()),
     lambda m: m.unsqueeze(0).add_(m), lambda m: m[1:].copy_(m[:3])],
)
def test_in_place_write_with_partly_overlapping_operand_is_refused(write):
    m = tg.tensor([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(RuntimeError, match="single memory location"):
        write(m)
    close(m, [1, 2, 3, 4])


def test_in_place_write_with_the_same_memory_is_fine():
    m = tg.tensor([1.0, 2.0])
    m.add_(m)
    m[:].mul_(m[:])
    close(m, [4, 16])


def test_no_grad_view_whose_base_changed_cannot_be_differentiated():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tg.no_grad():
        v = x[1:]
        x.mul_(2)
    with pytest.raises(RuntimeError, match="created in no_grad mode and its base"):
        (v * 1).sum().backward()


# Issue 13, root cause 18: clamp with tensor bounds (values and gradients as PyTorch's).
def test_clamp_with_tensor_bounds():
    x = tg.tensor([-2.0, 0.5, 3.0, 0.0], requires_grad=True)
    lo = tg.tensor([-1.0, -1.0, -1.0, 1.0], requires_grad=True)
    hi = tg.tensor([1.0, 1.0, 2.0, 0.5], requires_grad=True)
    y = x.clamp(min=lo, max=hi)
    close(y.detach(), [-1, 0.5, 2, 0.5])  # lo > hi gives hi
    y.sum().backward()
    close(x.grad, [0, 1, 0, 0])
    close(lo.grad, [1, 0, 0, 0])
    close(hi.grad, [0, 0, 1, 1])
    close(tg.clamp(x.detach(), min=tg.tensor(0.0)).detach(), [0, 0.5, 3, 0])
    close(x.detach().clamp(max=tg.tensor([0.0, 0.0, 0.0, 0.0]), min=-1.5), [-1.5, 0, 0, 0])
    z = x.detach().clone()
    z.clamp_(min=tg.tensor([0.0, 1.0, 0.0, 0.0]))
    close(z, [0, 1, 3, 0])
