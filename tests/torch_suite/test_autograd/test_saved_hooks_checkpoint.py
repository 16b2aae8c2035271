"""PyTorch's `test_autograd.py` tests of saved-tensor hooks and checkpointing (TestAutograd, part 2
of the file), carried over.

Oracle: closed forms (the gradient of `a * a` with each saved tensor doubled is 4a, and so on),
counts of hook calls, and the same numbers PyTorch's tests assert. Tests that read a node's saved
tensors through PyTorch's private `grad_fn._saved_self` / `_raw_saved_self` keep only the gradient
part (see the scope list).
"""

import os
import tempfile
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from tapegrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def arr(t):
    return np.asarray(t.detach().numpy())


A = np.array([1.0, 2.0, 3.0])


# covers: test_autograd.py::TestAutograd::test_saved_variable_packing_unpacking_saved_original_with_default_hooks
def test_saved_original_with_default_hooks():
    for make in (lambda: tg.tensor(A, requires_grad=True), lambda: tg.tensor(A, requires_grad=True) * 1):
        a = make()
        leaf = a if a.is_leaf else None
        with saved_tensors_hooks(lambda x: x, lambda x: x):
            y = a * a
        y.sum().backward()
        if leaf is not None:
            np.testing.assert_allclose(arr(leaf.grad), 2 * A)
        # Packing doubles each saved operand: the gradient of a * a becomes 4a.
        a = tg.tensor(A, requires_grad=True)
        with saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
            y = a * a
        y.sum().backward()
        np.testing.assert_allclose(arr(a.grad), 4 * A)


# covers: test_autograd.py::TestAutograd::test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks
def test_did_not_save_original_with_default_hooks():
    # exp saves its output: doubled by the pack hook, the gradient is 2 exp(a).
    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        y = a.exp()
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 2 * np.exp(A), rtol=1e-12)


# covers: test_autograd.py::TestAutograd::test_saved_variable_packing_unpacking_saved_original_with_hooks
def test_saved_original_with_hooks():
    # PyTorch registers the hooks on one saved variable (`_raw_saved_self`); here they apply to
    # every tensor the operation saves, which for `a * a` is the same tensor twice.
    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        y = a * a
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 4 * A)


# covers: test_autograd.py::TestAutograd::test_saved_variable_packing_unpacking_did_not_save_original_with_hooks
def test_did_not_save_original_with_hooks():
    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(lambda x: x * 3, lambda x: x):
        y = a.exp()
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 3 * np.exp(A), rtol=1e-12)


# covers: test_autograd.py::TestAutograd::test_setting_default_saved_variable_hooks_twice_should_not_fail
def test_setting_hooks_twice_should_not_fail():
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        with saved_tensors_hooks(lambda x: x, lambda x: x):
            a = tg.tensor(A, requires_grad=True)
            (a * a).sum().backward()
    np.testing.assert_allclose(arr(a.grad), 2 * A)


# covers: test_autograd.py::TestAutograd::test_setting_default_saved_variable_hooks_twice_should_use_inner
def test_setting_hooks_twice_should_use_inner():
    with saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = tg.tensor([1.0, 2.0], requires_grad=True)
        with saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            c = tg.tensor([1.0, 2.0], requires_grad=True)
            y = c * c
        z = b * b
    y.sum().backward()
    z.sum().backward()
    np.testing.assert_allclose(arr(c.grad), [50.0, 100.0])  # 2 * 5 * 5 * c
    np.testing.assert_allclose(arr(b.grad), [18.0, 36.0])  # 2 * 3 * 3 * b


# covers: test_autograd.py::TestAutograd::test_disabling_saved_tensor_hooks
def test_disabling_saved_tensor_hooks():
    with disable_saved_tensors_hooks("error message"):
        with pytest.raises(RuntimeError, match="error message"):
            with saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        with pytest.raises(RuntimeError, match="error message"):
            with disable_saved_tensors_hooks("error message"):
                pass


# covers: test_autograd.py::TestAutograd::test_disabling_saved_tensor_hooks_nested
def test_disabling_saved_tensor_hooks_nested():
    with disable_saved_tensors_hooks("outer"):
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                with saved_tensors_hooks(lambda x: x, lambda x: x):
                    pass
        with pytest.raises(RuntimeError, match="outer"):
            with saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


class CustomError(Exception):
    pass


# covers: test_autograd.py::TestAutograd::test_saved_tensor_hooks_custom_error_propagation
def test_saved_tensor_hooks_custom_error_propagation():
    class ErrorOnPack(saved_tensors_hooks):
        def __init__(self):
            def pack(x):
                raise CustomError("pack")

            super().__init__(pack, lambda x: x)

    class ErrorOnUnpack(saved_tensors_hooks):
        def __init__(self):
            def unpack(x):
                raise CustomError("unpack")

            super().__init__(lambda x: x, unpack)

    a = tg.tensor(A, requires_grad=True)
    with ErrorOnPack():
        with pytest.raises(CustomError, match="pack"):
            a.exp()
    with ErrorOnUnpack():
        out = a.exp()
        with pytest.raises(CustomError, match="unpack"):
            out.sum().backward()


# covers: test_autograd.py::TestAutograd::test_saved_tensor_hooks_custom_function_intermediates
def test_saved_tensor_hooks_custom_function_intermediates():
    class Func(tg.Function):
        @staticmethod
        def forward(ctx, x):
            intermediate = x.exp()
            ctx.save_for_backward(intermediate.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            (intermediate,) = ctx.saved_tensors
            return g * intermediate

    a = tg.tensor([0.5], requires_grad=True)
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Func.apply(a)
    out.backward()
    np.testing.assert_allclose(arr(a.grad), np.exp([0.5]), rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_unpack_hooks_exec_count
def test_unpack_hooks_exec_count():
    packs, unpacks = [0], [0]

    def pack(x):
        packs[0] += 1
        return x

    def unpack(x):
        unpacks[0] += 1
        return x

    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        out = a * a
        out.sum().backward(retain_graph=True)
        assert (packs[0], unpacks[0]) == (2, 2)
        out.sum().backward(retain_graph=True)
        assert (packs[0], unpacks[0]) == (2, 4)


# covers: test_autograd.py::TestAutograd::test_pack_hook_with_inplace_modification_should_fail
def test_pack_hook_with_inplace_modification_should_fail():
    def inplace_double(x):
        x.mul_(2)
        return x

    a = tg.tensor(A, requires_grad=True)
    msg = "A saved tensor pack hook is modifying its input in place"
    with saved_tensors_hooks(inplace_double, lambda x: x):
        with pytest.raises(RuntimeError, match=msg):
            a * a
        with pytest.raises(RuntimeError, match=msg):
            a.exp()


# covers: test_autograd.py::TestAutograd::test_saving_variable_to_disk
def test_saving_variable_to_disk():
    with tempfile.TemporaryDirectory() as tmp:
        def pack(x):
            name = os.path.join(tmp, f"{len(os.listdir(tmp))}.npy")
            np.save(name, arr(x))
            return name

        def unpack(name):
            return tg.tensor(np.load(name))

        a = tg.tensor(A, requires_grad=True)
        with saved_tensors_hooks(pack, unpack):
            y = a * a
        assert len(os.listdir(tmp)) == 2
        y.sum().backward()
        np.testing.assert_allclose(arr(a.grad), 2 * A)


# covers: test_autograd.py::TestAutograd::test_default_saved_tensors_hooks_double_backward
def test_default_saved_tensors_hooks_double_backward():
    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        (g,) = tg.autograd.grad((a ** 3).sum(), (a,), create_graph=True)
        g.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 6 * A)
    a.grad = None
    # Every saved tensor of both passes doubled: the same numbers as PyTorch's formulas give.
    with saved_tensors_hooks(lambda x: x * 2, lambda x: x):
        (g,) = tg.autograd.grad((a ** 3).sum(), (a,), create_graph=True)
        g.sum().backward()
    np.testing.assert_allclose(arr(g), 12 * A ** 2)
    np.testing.assert_allclose(arr(a.grad), 48 * A)


# covers: test_autograd.py::TestAutograd::test_wrapped_number_saved_tensors_hooks
def test_wrapped_number_saved_tensors_hooks():
    packs = [0]

    def pack(x):
        packs[0] += 1
        return x

    a = tg.tensor(A, requires_grad=True)
    with saved_tensors_hooks(pack, lambda x: x):
        y = a * 3  # the Python number is not a saved tensor
    assert packs[0] == 0
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [3.0, 3.0, 3.0])


# covers: test_autograd.py::TestAutograd::test_save_on_cpu_and_checkpoint
def test_save_on_cpu_and_checkpoint():
    a = tg.tensor(A, requires_grad=True)

    def f(t):
        return (t.exp() * t).sin()

    expected = np.cos(np.exp(A) * A) * (np.exp(A) * A + np.exp(A))
    with save_on_cpu():
        y = checkpoint(f, a, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), expected, rtol=1e-12)
    a.grad = None
    y = checkpoint(f, a, use_reentrant=False)
    with save_on_cpu():
        y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), expected, rtol=1e-12)


# covers: test_autograd.py::TestAutograd::test_checkpoint_warns_if_use_reentrant_not_passed_explcitly
def test_checkpoint_warns_if_use_reentrant_not_passed_explicitly():
    a = tg.tensor(A, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda t: t * 2, a, use_reentrant=False)


# covers: test_autograd.py::TestAutograd::test_checkpoint_sequential_warns_if_use_reentrant_not_passed_explcitly
def test_checkpoint_sequential_warns_if_use_reentrant_not_passed_explicitly():
    # A list of callables stands for PyTorch's nn.Sequential (tg.nn is issue 16's).
    a = tg.tensor(A, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential([lambda t: t * 2, lambda t: t * 3], 2, a)


# covers: test_autograd.py::TestAutograd::test_checkpoint_detects_non_determinism
def test_checkpoint_detects_non_determinism():
    calls = [0]

    def save_3_then_2(t):
        calls[0] += 1
        if calls[0] == 1:
            return t.sin().sin().sin()
        return t.sin().sin()

    a = tg.tensor(A, requires_grad=True)
    out = checkpoint(save_3_then_2, a, use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        out.sum().backward()

    calls[0] = 0

    def other_shape(t):
        calls[0] += 1
        if calls[0] == 1:
            return t * t
        return (t * t.expand(2, 3)).sum(0)

    out = checkpoint(other_shape, a, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata than during the forward pass"):
        out.sum().backward()


# covers: test_autograd.py::TestAutograd::test_checkpointing_without_reentrant_correct_grad
def test_checkpointing_without_reentrant_correct_grad():
    a = tg.tensor(np.array([2.0]), requires_grad=True)
    b = tg.tensor(np.exp(A), requires_grad=True)

    def run(x, y):
        return (x * y).exp().sum()

    out = checkpoint(run, a, b, use_reentrant=False)
    out.backward()
    e = np.exp(2.0 * np.exp(A))
    np.testing.assert_allclose(arr(a.grad), [(e * np.exp(A)).sum()], rtol=1e-12)
    np.testing.assert_allclose(arr(b.grad), 2.0 * e, rtol=1e-12)


# covers: test_autograd.py::TestAutograd::test_checkpointing_without_reentrant_custom_function_works
def test_checkpointing_without_reentrant_custom_function_works():
    counts = {"forward": 0}

    class MyFunc(tg.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            counts["forward"] += 1
            w = x * y * z
            out = w + w
            ctx.save_for_backward(x, y, z, w, out)
            return out

        @staticmethod
        def backward(ctx, g):
            x, y, z, w, out = ctx.saved_tensors
            return 2 * g * y * z, 2 * g * x * z, 2 * g * x * y

    x = tg.tensor(1.0, requires_grad=True)
    y = tg.tensor(2.0, requires_grad=True)
    z = tg.tensor(3.0, requires_grad=True)
    out = checkpoint(lambda a, b, c: MyFunc.apply(a, b, c), x, y, z, use_reentrant=False)
    out.backward()
    assert counts["forward"] == 2  # the original run and one recomputation
    assert (x.grad.item(), y.grad.item(), z.grad.item()) == (12.0, 6.0, 4.0)
