"""PyTorch's TestAutogradInferenceMode (`test/autograd/test_inference_mode.py`, run as part of
`test_autograd.py`), carried over.

Oracle: the flags PyTorch's tests assert (is_inference, requires_grad, errors) and values computed
by hand. `torch.is_inference(t)` is `t.is_inference()` here. PyTorch's own helper that tells an
inference tensor by `t._version` raising is not carried over: tapegrad keeps a version counter on
every tensor.
"""

import pytest

import tapegrad as tg

SAVED = "Inference tensors cannot be saved for backward"
INPLACE = "Inplace update to inference tensor outside InferenceMode"
# docs/differences.md: a view made under inference mode is a view made with grad mode
# off, and its error says so.
VIEW_IN_INFERENCE = "A view was created in (inference|no_grad) mode and is being modified inplace"


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_context_manager
def test_inference_mode_context_manager():
    assert not tg.is_inference_mode_enabled()
    with tg.inference_mode():
        assert tg.is_inference_mode_enabled()
        with tg.inference_mode(False):
            assert not tg.is_inference_mode_enabled()
        assert tg.is_inference_mode_enabled()
    assert not tg.is_inference_mode_enabled()


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_decorator
def test_inference_mode_decorator():
    for mode in (True, False):

        @tg.inference_mode(mode)
        def square(x, mode=mode):
            assert tg.is_inference_mode_enabled() == mode
            return x * x

        for requires_grad in (True, False):
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
            d = square(c)
            assert d.is_inference() == mode
            assert d.requires_grad == (requires_grad and not mode)
            assert d.tolist() == [[[1.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_tensor_creation
def test_inference_mode_tensor_creation():
    with tg.inference_mode():
        c = tg.ones(1, 2, 3)
        assert not c.requires_grad and c.is_inference()
        tmp = tg.ones(1, 2, 3, requires_grad=True)
        assert tmp.requires_grad and tmp.is_inference()
        tmp = tg.ones(1, 2, 3).requires_grad_(False)
        assert not tmp.requires_grad and tmp.is_inference()


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_existing_autograd_session
def test_inference_mode_existing_autograd_session():
    s = tg.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    out = a * a  # saves a outside inference mode
    with tg.inference_mode():
        a.add_(2)
    assert not a.is_inference()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(tg.ones_like(out))


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_inf_mode_functional_op
def test_inference_mode_inf_tensor_in_inf_mode_functional_op():
    with tg.inference_mode():
        for requires_grad in (True, False):
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
            out = c * c
            assert out.is_inference() and not out.requires_grad


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_inf_mode_inplace_op
def test_inference_mode_inf_tensor_in_inf_mode_inplace_op():
    # transpose_, resize_ and resize_as_ are not operations of tapegrad's yet (issue 15).
    @tg.inference_mode()
    def run(fn, expected):
        for requires_grad in (True, False):
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
            fn(c)
            assert c.is_inference() and c.requires_grad == requires_grad
            assert c.tolist() == expected

    run(lambda x: x.add_(2), [[[3.0] * 3] * 2])
    run(lambda x: x.copy_(tg.full((1, 2, 3), 5.0)), [[[5.0] * 3] * 2])


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_inf_mode_view_op
def test_inference_mode_inf_tensor_in_inf_mode_view_op():
    with tg.inference_mode():
        for requires_grad in (True, False):
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
            v = c.view(-1)
            assert v.is_inference() and not v.requires_grad


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_normal_mode_functional_op
def test_inference_mode_inf_tensor_in_normal_mode_functional_op():
    for requires_grad in (True, False):
        with tg.inference_mode():
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
    out = c * c  # the last c: requires_grad=False
    assert not out.is_inference() and not out.requires_grad and out.is_leaf


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_normal_mode_inplace_op
def test_inference_mode_inf_tensor_in_normal_mode_inplace_op():
    with tg.inference_mode():
        c = tg.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match=INPLACE):
        c.add_(2)
    assert c.tolist() == [[[1.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_inf_tensor_in_normal_mode_view_op
def test_inference_mode_inf_tensor_in_normal_mode_view_op():
    for requires_grad in (True, False):
        with tg.inference_mode():
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.view(-1)
        assert out.is_inference() and out.is_leaf
        assert not out.requires_grad


# covers: test_autograd.py::TestAutogradInferenceMode::test_normal_tensor_inplace_output_in_inference_mode
def test_normal_tensor_inplace_output_in_inference_mode():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            a.add_(2)
            assert not a.is_inference() and a.requires_grad == requires_grad
            a.add_(2)
            assert not a.is_inference() and a.requires_grad == requires_grad
            v = a.view(-1)
            assert not v.is_inference() and v.requires_grad == requires_grad
        assert a.tolist() == [[[5.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_normal_tensor_inplace_output_in_normal_mode
def test_normal_tensor_inplace_output_in_normal_mode():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            a.add_(2)
            assert not a.is_inference() and a.requires_grad == requires_grad
        a.add_(2)
        assert not a.is_inference() and a.requires_grad == requires_grad
        a.add_(2)
        v = a.view(-1)
        assert not v.is_inference() and v.requires_grad == requires_grad
        assert a.tolist() == [[[7.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_normal_tensor_view_output_in_inference_mode
def test_normal_tensor_view_output_in_inference_mode():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            out = a.view(-1)
            assert not out.is_inference() and out.requires_grad == requires_grad
            tmp = out.view(-1)
            assert not tmp.is_inference() and tmp.requires_grad == requires_grad
            tmp.add_(2)
            assert not tmp.is_inference() and tmp.requires_grad == requires_grad
            assert a._version == tmp._version == 1
        assert a.tolist() == [[[3.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_normal_tensor_view_output_in_normal_mode
def test_normal_tensor_view_output_in_normal_mode():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            out = a.view(-1)
            assert not out.is_inference() and out.requires_grad == requires_grad
        tmp = out * out
        assert not tmp.is_inference() and tmp.requires_grad == requires_grad
        if requires_grad:
            with pytest.raises(RuntimeError, match=VIEW_IN_INFERENCE):
                out.add_(2)
        else:
            out.add_(2)
        tmp = out.view(2, 3)
        assert not tmp.is_inference() and tmp.requires_grad == requires_grad


# covers: test_autograd.py::TestAutogradInferenceMode::test_mix_inference_and_normal_tensor_functional_op
def test_mix_inference_and_normal_tensor_functional_op():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        with tg.inference_mode():
            c = tg.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.add(s)  # add saves nothing: allowed
        assert not out.is_inference() and out.requires_grad == requires_grad
        assert out.tolist() == [[[2.0] * 3] * 2]
        if requires_grad:
            # A leaf inference tensor that requires grad still gets its gradient.
            out.backward(tg.ones_like(out))
            assert c.grad.tolist() == [[[1.0] * 3] * 2]
            with pytest.raises(RuntimeError, match=SAVED):
                c * s


# covers: test_autograd.py::TestAutogradInferenceMode::test_mix_inference_and_normal_tensor_inplace_op
def test_mix_inference_and_normal_tensor_inplace_op():
    # The `out=` half is not carried over: tapegrad's operations take no `out=` (issue 15).
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            c = tg.ones(1, 2, 3) * 3
        assert c.is_inference()
        if requires_grad:
            with pytest.raises(RuntimeError, match=SAVED):
                a.mul_(c)
        else:
            a.mul_(c)
            assert a.tolist() == [[[3.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_mix_inference_and_normal_tensor_view_op
def test_mix_inference_and_normal_tensor_view_op():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        with tg.inference_mode():
            c = tg.ones(1, 2, 3)
        tmp1 = c.view_as(s)
        assert tmp1.is_inference() and not tmp1.requires_grad
        tmp2 = s.view_as(c)
        assert not tmp2.is_inference() and tmp2.requires_grad == requires_grad


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_handle_direct_view_on_rebase
def test_inference_mode_handle_direct_view_on_rebase():
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            view_out = a.view_as(a)
        if requires_grad:
            with pytest.raises(RuntimeError, match=VIEW_IN_INFERENCE):
                view_out.add_(2)
        else:
            view_out.add_(2)
            assert a.tolist() == [[[3.0] * 3] * 2]


# covers: test_autograd.py::TestAutogradInferenceMode::test_inference_mode_handle_indirect_view_on_rebase
def test_inference_mode_handle_indirect_view_on_rebase():
    # docs/differences.md: the error comes when backward reaches the view, not when
    # its grad_fn is read.
    for requires_grad in (True, False):
        s = tg.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with tg.inference_mode():
            view_out = a.view(-1)
        a.add_(2)
        if requires_grad:
            with pytest.raises(RuntimeError, match="created in (inference|no_grad) mode and its base or another view"):
                view_out.sum().backward()
        else:
            assert view_out.grad_fn is None
            assert view_out.tolist() == [3.0] * 6
