"""Views and in-place operations: leaf checks, views made under no_grad, version counters, ``.data``,
printing, and double backward through an in-place write on a view; part 2 of PyTorch's
``test_autograd.py``.

Oracle: PyTorch 2.x's behaviour as its own tests assert it (error words, versions, reprs), and closed
forms for the gradients (the derivatives of the sigmoid).
"""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import Function

# PyTorch says "leaf Variable"; tapegrad has no Variable and says "leaf tensor".
_VIEW_OF_LEAF = r"a view of a leaf (Variable|tensor) that requires grad is being used in an in-place operation"
_NO_GRAD_VIEW = "A view was created in no_grad mode and is being modified inplace"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# covers: test_autograd.py::TestAutograd::test_inplace_on_view_saved_output
# PyTorch detects the freeing with a hook on the clone's grad_fn (node hooks are issue 17); here a
# weak reference to the clone does it. The in-place op that saves its output is relu_, spelled
# clamp_(min=0) in tapegrad.
def test_inplace_on_view_saved_output():
    def scope():
        root = tg.randn(3, 3, requires_grad=True)
        copy = root.clone()
        view = copy.view(9)
        view.clamp_(min=0)
        return weakref.ref(copy)

    was_enabled = gc.isenabled()
    gc.disable()  # freed by reference counting alone: no reference cycle
    try:
        ref = scope()
        assert ref() is None
    finally:
        if was_enabled:
            gc.enable()


# covers: test_autograd.py::TestAutograd::test_inplace_on_view_leaf_errors
def test_inplace_on_view_leaf_errors():
    x = tg.zeros(1, requires_grad=True)
    y = x.view_as(x)
    with pytest.raises(RuntimeError, match=_VIEW_OF_LEAF):
        y.add_(1)
    assert x.tolist() == [0.0]


# covers: test_autograd.py::TestAutograd::test_inplace_on_view_backward
# Left out: the InstanceNorm2d network (nn, issue 16) and the check of the node's name
# "ThresholdBackwardBackward0" (PyTorch's internal name for the double backward of threshold).
# threshold(t, 0, 0, inplace=True) is clamp_(min=0) here; the input is smaller (1x3x4x4).
def test_inplace_on_view_backward():
    inputs = tg.ones((1, 3, 4, 4), dtype=tg.float64, requires_grad=True)
    tmp1 = (inputs + 1).view_as(inputs)
    tmp2 = tmp1.clamp_(min=0.0)
    prob = tg.sigmoid(tmp2)
    (gradients,) = tg.autograd.grad(
        outputs=prob, inputs=inputs, grad_outputs=tg.ones(prob.shape, dtype=tg.float64),
        create_graph=True, retain_graph=True,
    )
    s = _sigmoid(2.0)
    np.testing.assert_allclose(gradients.detach().numpy(), np.full((1, 3, 4, 4), s * (1 - s)), rtol=1e-12)
    gradient_penalty = gradients.sum()
    gradient_penalty.backward()
    second = s * (1 - s) * (1 - 2 * s)
    np.testing.assert_allclose(inputs.grad.numpy(), np.full((1, 3, 4, 4), second), rtol=1e-10)


# covers: test_autograd.py::TestAutograd::test_inplace_on_view_weak_grad_fn
def test_inplace_on_view_weak_grad_fn():
    a = tg.arange(10.0, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.clamp_(min=0)  # relu_
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()
    assert s.item() == 1.0
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 1.0] + [0.0] * 8)

    a = tg.rand(10, requires_grad=True).narrow(0, 0, 10)
    with pytest.raises(RuntimeError):
        a.clamp_(min=0)


# covers: test_autograd.py::TestAutograd::test_version_counter
# Left out here: ``x.data = y`` (see the test below).
def test_version_counter():
    x = tg.randn(1, 2)
    v = x._version
    x.add_(1).add_(1)
    assert x._version > v
    xz = x[:]
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    x.add_(1)
    assert x._version == xz._version


# covers: test_autograd.py::TestAutograd::test_version_counter (the .data assignment half)
# covers: test_autograd.py::TestAutograd::test_set_data_preserve_pyobj
# covers: test_autograd.py::TestAutograd::test_set_data_self_requires_grad
# Adapted to a documented difference (docs/differences.md): assigning another tensor to
# `.data` is refused with a RuntimeError (a tensor's storage, shape and dtype are fixed), so PyTorch's
# expectations after the assignment (new shape, same version counter, same Python object) cannot
# hold. What is kept: the assignment leaves the tensor, its version and its views untouched, a
# non-tensor is a TypeError, and the in-place idiom `t.data -= x` (which assigns `.data` its own
# memory) works.
def test_set_data_is_refused_and_leaves_the_tensor_as_it_was():
    x = tg.randn(1, 2)
    xz = x[:]
    x.add_(1)
    v = x._version
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match="assigning to .data is not supported"):
        x.data = tg.randn(2, 3)
    assert x.shape == (1, 2) and x._version == v
    np.testing.assert_array_equal(x.numpy(), before)
    x.add_(1)
    assert x._version == xz._version
    a = tg.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="assigning to .data is not supported"):
        a.data = tg.tensor(2.0)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        a.data = 3


def test_data_in_place_update_idiom():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    w.data -= 0.5 * w.grad
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0])
    assert w.requires_grad and w.is_leaf


# covers: test_autograd.py::TestAutograd::test_autograd_views_codegen
# Left out: ``unbind`` (tapegrad has no multi-output view operation, issue 15) and ``_is_view``
# (tapegrad does not expose it). The in-place write through the view must reach the base.
@pytest.mark.parametrize("grad_mode,requires_grad", [(True, False), (True, True), (False, False)])
def test_autograd_views_codegen_view_as_allowed(grad_mode, requires_grad):
    inp = tg.rand(2, requires_grad=requires_grad).clone()
    before = inp.detach().numpy().copy()
    with tg.set_grad_enabled(grad_mode):
        out = inp.view_as(inp)
    out.add_(1)
    np.testing.assert_allclose(inp.detach().numpy(), before + 1, rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_autograd_views_codegen
def test_autograd_views_codegen_view_as_no_grad_view():
    inp = tg.rand(2, requires_grad=True).clone()
    with tg.set_grad_enabled(False):
        out = inp.view_as(inp)
    with pytest.raises(RuntimeError, match=_NO_GRAD_VIEW):
        out.add_(1)


# covers: test_autograd.py::TestAutograd::test_autograd_print_tensor
def test_autograd_print_tensor():
    a = tg.ones(1, requires_grad=True)
    assert repr(a) == "tensor([1.], requires_grad=True)"
    # node names carry no "0" suffix (docs/differences.md)
    assert repr(a.clone()) == "tensor([1.], grad_fn=<CloneBackward>)"

    with tg.no_grad():
        b = a[:]
        b *= 2

    class Func(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            return x

    c = Func.apply(a)
    assert repr(c) == "tensor([2.], grad_fn=<FuncBackward>)"


# covers: test_autograd.py::TestAutograd::test_autograd_print_tensor
def test_autograd_print_tensor_invalid_view():
    a = tg.ones(1, requires_grad=True)
    with tg.no_grad():
        b = a[:]
        b *= 2
    assert repr(b) == "tensor([2.], grad_fn=<Invalid>)"


# covers: test_autograd.py::TestAutograd::test_autograd_inplace_view_of_view
# Left out: the inference_mode half (issue 17).
def test_autograd_inplace_view_of_view():
    x = tg.zeros(2)
    with tg.no_grad():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the no_grad block"):
        z /= 2


# covers: test_autograd.py::TestAutograd::test_integer_outputs
# Left out: argmin, argsort, searchsorted, bucketize, count_nonzero, unique, unique_consecutive
# (operations tapegrad lacks, issue 15).
def test_integer_outputs():
    inp = tg.rand(4, requires_grad=True)
    out = inp.argmax()
    assert not out.dtype.is_floating_point
    assert not out.requires_grad
    out = tg.argmax(inp)
    assert not out.dtype.is_floating_point
    assert not out.requires_grad
    # the indices of max(dim) are an integer output too
    values, indices = inp.max(0)
    assert values.requires_grad
    assert not indices.dtype.is_floating_point
    assert not indices.requires_grad
