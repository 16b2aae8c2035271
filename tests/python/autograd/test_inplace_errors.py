"""In-place operations under autograd, the version counter, ``SavedTensorModifiedError``, anomaly
mode, and the error messages of API.md §4.
"""

import inspect
import re

import numpy as np
import pytest
from oracles import check_grads

import tapegrad as tg


def f64(data, requires_grad=False):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


def line_of(marker):
    """The line number of the line in this file that contains ``marker`` (after the marker call)."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if marker in text and "line_of(" not in text]
    assert len(hits) == 1, hits
    return hits[0]


def innermost_line(stack_text):
    """The line number of the last frame of this file in a formatted stack."""
    lines = re.findall(rf'File "{re.escape(__file__)}", line (\d+)', stack_text)
    assert lines, stack_text
    return int(lines[-1])


# Each in-place operation, its recorded name, and the same math out of place in NumPy.
INPLACE = [
    ("add_", lambda t: t.add_(2.5), lambda a: a + 2.5),
    ("sub_", lambda t: t.sub_(0.5), lambda a: a - 0.5),
    ("mul_", lambda t: t.mul_(-3.0), lambda a: a * -3.0),
    ("div_", lambda t: t.div_(4.0), lambda a: a / 4.0),
    ("clamp_", lambda t: t.clamp_(min=-0.5, max=0.7), lambda a: np.clip(a, -0.5, 0.7)),
    ("copy_", lambda t: t.copy_(f64([9.0, 8.0, 7.0])), lambda a: np.array([9.0, 8.0, 7.0])),
    ("fill_", lambda t: t.fill_(1.25), lambda a: np.full_like(a, 1.25)),
    ("zero_", lambda t: t.zero_(), np.zeros_like),
]
INPLACE_IDS = [name for name, _, _ in INPLACE]


def iadd(t):
    t += 2.0
    return t


def imul(t):
    t *= 3.0
    return t


def isub(t):
    t -= 1.0
    return t


def idiv(t):
    t /= 2.0
    return t


def setitem(t):
    t[1] = 5.0
    return t


def setmask(t):
    t[t > 0] = 0.0
    return t


AUGMENTED = [
    ("add_", iadd, lambda a: a + 2.0),
    ("mul_", imul, lambda a: a * 3.0),
    ("sub_", isub, lambda a: a - 1.0),
    ("div_", idiv, lambda a: a / 2.0),
    ("index_put_", setitem, lambda a: np.where(np.arange(a.size) == 1, 5.0, a)),
    ("index_put_", setmask, lambda a: np.where(a > 0, 0.0, a)),
]
AUGMENTED_IDS = ["+=", "*=", "-=", "/=", "t[i]=", "t[mask]="]

X0 = np.array([0.3, -1.2, 2.0])


# --- in-place ops record themselves ------------------------------------------------------------------


@pytest.mark.parametrize("name, op, ref", INPLACE + AUGMENTED, ids=INPLACE_IDS + AUGMENTED_IDS)
def test_inplace_on_non_leaf_values_and_gradient(name, op, ref):
    # f(a) = (a * a) modified in place, then multiplied by a: the gradient needs the in-place node
    def f(a):
        b = a * a
        op(b)
        return b * a

    x = f64(X0)
    np.testing.assert_allclose(f(x).numpy(), ref(X0 * X0) * X0)
    check_grads(f, [X0])


def names_below(node):
    """Names of every node reachable from ``node``."""
    names, todo = [], [node]
    while todo:
        n = todo.pop()
        names.append(n.name())
        todo.extend(fn for fn, _ in n.next_functions if fn is not None)
    return names


@pytest.mark.parametrize("name, op, ref", INPLACE, ids=INPLACE_IDS)
def test_inplace_gives_the_tensor_a_new_node(name, op, ref):
    a = f64(X0, requires_grad=True)
    b = a.exp()
    out = op(b)
    assert out is b
    assert b.requires_grad and not b.is_leaf
    expected = "".join(w.capitalize() for w in name.split("_")) + "Backward"
    assert b.grad_fn.name() == expected
    # the history before the write is still below the new node
    assert "ExpBackward" in names_below(b.grad_fn)[1:]


def test_inplace_that_reads_itself_invalidates_its_own_save():
    # b *= b saves b (the other operand) and then changes it, as in PyTorch
    a = f64(X0, requires_grad=True)
    b = a * 1
    b *= b
    np.testing.assert_allclose(b.detach().numpy(), X0 * X0)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        b.sum().backward()
    assert (e.value.saved_by, e.value.modified_by) == ("MulBackward", "mul_")


def test_overwriting_a_non_leaf_with_a_constant_cuts_its_history():
    # b = 3a, then b is overwritten: b no longer depends on a, so a's gradient is zero
    for op in (lambda t: t.copy_(f64([1.0, 1.0])), lambda t: t.fill_(3.0), lambda t: t.zero_()):
        a = f64([1.0, 2.0], requires_grad=True)
        b = a * 3
        op(b)
        (b * b).sum().backward()
        assert a.grad.tolist() == [0.0, 0.0]


def test_copy_from_a_tensor_that_requires_grad():
    # b = 3a; b.copy_(w * w): the gradient goes to w only
    a = f64([1.0, 2.0], requires_grad=True)
    w = f64([5.0, -6.0], requires_grad=True)
    b = a * 3
    b.copy_(w * w)
    (b * f64([1.0, 10.0])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [10.0, -120.0])
    assert a.grad is None or a.grad.tolist() == [0.0, 0.0]


def test_inplace_through_a_slice_view():
    # c = 2a; c[1:3] *= w; out = c * a  (checked by finite differences for a and w)
    rng = np.random.default_rng(5)

    def f(a, w):
        c = a * 2
        c[1:3].mul_(w)
        return c * a

    check_grads(f, [rng.standard_normal(5), rng.standard_normal(2)])


def test_inplace_through_a_view_of_a_matrix_row_and_column():
    rng = np.random.default_rng(6)

    def f(a, v):
        c = a * 2.0
        c[1].add_(v * v)
        c.t()[0].clamp_(min=0.5)
        return c.sin()

    check_grads(f, [rng.standard_normal((3, 4)), rng.standard_normal(4)])


def test_view_sees_the_base_write_and_its_gradient():
    # v = b[0:2] is taken first; then b is written in place: v reads the new memory
    a = f64([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    v = b[0:2]
    b.mul_(a)  # b = a * a
    assert v.tolist() == [1.0, 4.0]
    assert v._version == b._version == 1


# --- the version counter ----------------------------------------------------------------------------


@pytest.mark.parametrize("grad_mode", ["enabled", "no_grad"])
@pytest.mark.parametrize("name, op, ref", INPLACE + AUGMENTED, ids=INPLACE_IDS + AUGMENTED_IDS)
def test_every_inplace_write_bumps_the_shared_version(name, op, ref, grad_mode):
    base = f64([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]])
    row = base[1]
    col = base.t()[0]
    other = base[0]
    assert (base._version, row._version, col._version) == (0, 0, 0)
    with tg.set_grad_enabled(grad_mode == "enabled"):
        op(other)
    np.testing.assert_allclose(other.numpy(), ref(np.array([0.5, -1.0, 2.0])))
    assert base._version == row._version == col._version == other._version == 1
    with tg.set_grad_enabled(grad_mode == "enabled"):
        op(base[1])
    assert base._version == row._version == col._version == 2


def test_version_counter_is_shared_with_detach_and_views_but_not_clones():
    a = f64([1.0, 2.0])
    d = a.detach()
    r = a.reshape(2, 1)
    c = a.clone()
    d.add_(1)
    assert a._version == r._version == d._version == 1
    assert c._version == 0
    assert a.tolist() == [2.0, 3.0]
    c.mul_(2)
    assert a._version == 1 and c._version == 1


def test_leaf_that_requires_grad_can_be_written_under_no_grad():
    w = f64([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        w.sub_(0.5)
        w[0] = 7.0
    assert w._version == 2
    assert w.tolist() == [7.0, 1.5]
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_version_bump_names_the_operation():
    for name, op, _ in INPLACE + AUGMENTED:
        a = f64(X0, requires_grad=True)
        b = a * 1
        y = b.sin()
        op(b)
        with pytest.raises(tg.SavedTensorModifiedError) as e:
            y.sum().backward()
        assert e.value.modified_by == name
        assert f"It was modified by {name}." in str(e.value)


# --- in-place on a leaf that requires grad ----------------------------------------------------------


@pytest.mark.parametrize("name, op, ref", INPLACE + AUGMENTED, ids=INPLACE_IDS + AUGMENTED_IDS)
def test_inplace_on_leaf_requiring_grad_is_refused(name, op, ref):
    w = f64(X0, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad") as e:
        op(w)
    assert name in str(e.value)
    # nothing changed, and the next correct call works
    assert w._version == 0
    np.testing.assert_array_equal(w.detach().numpy(), X0)
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


# --- SavedTensorModifiedError -----------------------------------------------------------------------


def test_saved_tensor_error_for_a_builtin_saving_its_output():
    a = tg.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    out = (a * 1).exp()  # ExpBackward saves its output
    out.add_(1)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        out.sum().backward()
    err = e.value
    assert isinstance(err, RuntimeError)
    assert (err.saved_by, err.modified_by, err.saved_version, err.current_version) == ("ExpBackward", "add_", 0, 1)
    msg = str(err)
    for words in (
        "modified by an inplace operation",
        "[3, 4]",
        "float32",
        "ExpBackward",
        "is at version 1; expected version 0",
        "add_",
    ):
        assert words in msg, msg
    assert err.shape == (3, 4) and err.dtype == "float32"


def test_saved_tensor_error_for_a_builtin_saving_its_input():
    a = f64(np.ones((2, 5)), requires_grad=True)
    b = a * 2
    y = b.sin()  # SinBackward saves b
    b.mul_(3)
    b.add_(1)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        y.sum().backward()
    err = e.value
    assert (err.saved_by, err.modified_by, err.saved_version, err.current_version) == ("SinBackward", "add_", 0, 2)
    assert "float64" in str(err) and "[2, 5]" in str(err)
    assert "is at version 2; expected version 0" in str(err)
    assert "detect_anomaly" in str(err)  # the hint when anomaly mode is off


def test_saved_tensor_error_through_a_view_write():
    a = f64([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    y = b.pow(2)
    b[0:1].fill_(0.0)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        y.sum().backward()
    assert e.value.saved_by == "PowBackward"
    assert e.value.modified_by == "fill_"


class SquareSaving(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, also=x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class SquareNamed(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(input=x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * ctx.saved_variables.input * grad


class ExpSavingOutput(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return out * grad


@pytest.mark.parametrize("fn, node", [(SquareSaving, "SquareSavingBackward"), (SquareNamed, "SquareNamedBackward")])
def test_saved_tensor_error_for_a_custom_function(fn, node):
    a = tg.tensor(np.ones((3, 4), dtype=np.float32), requires_grad=True)
    b = a * 1
    y = fn.apply(b)
    b.sub_(2)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        y.sum().backward()
    err = e.value
    assert (err.saved_by, err.modified_by, err.saved_version, err.current_version) == (node, "sub_", 0, 1)
    for words in ("modified by an inplace operation", "[3, 4]", "float32", node, "is at version 1; expected version 0"):
        assert words in str(err)
    # the graph was not consumed by the failure: restoring nothing, a fresh graph works
    b2 = a * 1
    fn.apply(b2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 4), 2.0))


def test_saved_tensor_error_for_a_custom_function_saving_its_output():
    x = f64([0.5, 1.0], requires_grad=True)
    out = ExpSavingOutput.apply(x)
    out.mul_(2)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        out.sum().backward()
    assert (e.value.saved_by, e.value.modified_by) == ("ExpSavingOutputBackward", "mul_")


def test_unmodified_saved_output_gives_the_right_gradient():
    check_grads(ExpSavingOutput.apply, [np.array([-1.0, 0.0, 2.0])])


# --- other messages of API.md §4 --------------------------------------------------------------------


def test_backward_through_the_graph_a_second_time():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        tg.autograd.grad(y, x)
    # retain_graph keeps it
    z = (x.exp()).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0] + 2 * np.exp([1.0, 2.0]))


def test_second_backward_through_a_custom_function():
    x = f64([1.0, 2.0], requires_grad=True)
    y = SquareSaving.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_backward_needs_a_gradient_for_non_scalars():
    x = f64([[1.0, 2.0]], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        tg.autograd.grad(y, x)
    y.backward(f64([[1.0, 3.0]]))
    assert x.grad.tolist() == [[2.0, 6.0]]


# --- detect_anomaly ---------------------------------------------------------------------------------


def test_anomaly_mode_shows_where_the_tensor_was_saved_and_modified():
    a = f64([1.0, 2.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        b = a * 1
        y = b.sin()  # marker: saved here
        b.add_(1)  # marker: modified here
        with pytest.raises(tg.SavedTensorModifiedError) as e:
            y.sum().backward()
    msg = str(e.value)
    saved_part, modified_part = msg.split("Saved at:")[1].split("Modified at:")
    # the innermost frame of each stack is the user's line in this file
    assert innermost_line(saved_part) == line_of("# marker: saved here"), msg
    assert innermost_line(modified_part) == line_of("# marker: modified here"), msg
    assert "b.add_(1)" in msg and "y = b.sin()" in msg
    assert e.value.modified_by == "add_" and e.value.saved_by == "SinBackward"
    assert not tg.autograd.is_anomaly_enabled()


def test_anomaly_mode_for_a_custom_function():
    a = f64([1.0, 2.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        b = a * 1
        y = SquareSaving.apply(b)  # marker: custom saved here
        b.div_(2)  # marker: custom modified here
        with pytest.raises(tg.SavedTensorModifiedError) as e:
            y.sum().backward()
    msg = str(e.value)
    saved_part, modified_part = msg.split("Saved at:")[1].split("Modified at:")
    assert innermost_line(saved_part) == line_of("# marker: custom saved here"), msg
    assert innermost_line(modified_part) == line_of("# marker: custom modified here"), msg
    assert "SquareSavingBackward" in msg and "div_" in msg


def test_anomaly_mode_raises_on_nan_naming_the_node():
    x = f64([0.0, 1.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()  # marker: nan node created here
        with pytest.raises(RuntimeError) as e:
            y.backward()
    msg = str(e.value)
    assert "SqrtBackward" in msg and "nan" in msg
    assert innermost_line(msg) == line_of("# marker: nan node created here"), msg
    # without anomaly mode the NaN goes through silently (d sqrt(x)/dx at 0 is inf, times 0)
    y = (x.sqrt() * 0).sum()
    y.backward()
    assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == 0.0


def test_anomaly_mode_nan_from_a_custom_backward():
    class NanGrad(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    x = f64([1.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="NanGradBackward") as e:
            NanGrad.apply(x).sum().backward()
    assert "nan" in str(e.value)
    assert x.grad is None


def test_detect_anomaly_as_a_decorator_and_restores_the_flag():
    @tg.autograd.detect_anomaly()
    def inside():
        return tg.autograd.is_anomaly_enabled()

    assert tg.detect_anomaly is tg.autograd.detect_anomaly
    assert not tg.autograd.is_anomaly_enabled()
    assert inside() is True
    assert not tg.autograd.is_anomaly_enabled()
    with pytest.raises(KeyError):
        with tg.autograd.detect_anomaly():
            raise KeyError("x")
    assert not tg.autograd.is_anomaly_enabled()
