"""Anomaly mode: NaN gradients from custom backwards (first and second order), ``check_nan=False``, and
what anomaly mode tells about an in-place error; part 2 of PyTorch's ``test_autograd.py``.

Oracle: PyTorch 2.x's behaviour as its own tests assert it (which backward fails, the error words,
the warnings it emits).
"""

import warnings

import pytest

import tapegrad as tg
from tapegrad import Function
from tapegrad.autograd import detect_anomaly

SIZE = 10


class _NanFunc(Function):
    @staticmethod
    def forward(ctx, inp1, inp2, fail_0th):
        ctx.fail_0th = fail_0th
        return inp1.sum(0, keepdim=True)

    @staticmethod
    def backward(ctx, gO):
        # PyTorch writes into gO.clone().expand(size); tapegrad refuses writes to an expanded view
        # (docs/differences.md), so the expanded gradient is copied first.
        gI = gO.clone().expand(SIZE).clone()
        gI[0] = 0
        gI[0] /= 0  # a NaN
        if ctx.fail_0th:
            return gI, None, None
        return None, gI, None


# covers: test_autograd.py::TestAutograd::test_anomaly_detect_nan
def test_anomaly_detect_nan():
    inp = tg.rand(SIZE, requires_grad=True)
    out = _NanFunc.apply(inp, inp, True)
    out.backward()  # no anomaly mode: no check

    inp = tg.rand(SIZE, requires_grad=True)
    out = _NanFunc.apply(inp, inp, True)
    with pytest.raises(RuntimeError, match=r"Function '_NanFuncBackward' returned nan values in its 0th output\."):
        with detect_anomaly():
            out.backward()

    inp = tg.rand(SIZE, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function '_NanFuncBackward' returned nan values in its 1th output\."):
        with detect_anomaly():
            out = _NanFunc.apply(inp, inp, False)
            out.backward()


def _nested_functions():
    class MyFunc(Function):
        @staticmethod
        def forward(ctx, inp1, fail_0th):
            ctx.fail_0th = fail_0th
            ctx.save_for_backward(inp1)
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, gO):
            (inp,) = ctx.saved_tensors
            g = gO.clone().expand(SIZE)
            return MyFunc2.apply(g * inp, g + inp, ctx.fail_0th), None

    class MyFunc2(Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1 * 2.0 + inp2

        @staticmethod
        def backward(ctx, gO):
            g1 = gO.clone()
            g2 = gO.clone()
            g1[0] = 0
            g2[0] = 0
            if ctx.fail_0th:
                g1[0] /= 0
            else:
                g2[0] /= 0
            return g1, g2, None

    return MyFunc


# covers: test_autograd.py::TestAutograd::test_nested_anomaly_detect_nan
# The warnings PyTorch checks here are the test below.
def test_nested_anomaly_detect_nan():
    MyFunc = _nested_functions()
    inp = tg.rand(SIZE, requires_grad=True)
    out = MyFunc.apply(inp, True)
    (ginp,) = tg.autograd.grad(out, (inp,), create_graph=True)
    ginp.sum().backward()  # no anomaly mode: no check

    inp = tg.rand(SIZE, requires_grad=True)
    out = MyFunc.apply(inp, True)
    (ginp,) = tg.autograd.grad(out, (inp,), create_graph=True)
    gsum = ginp.sum()
    with pytest.raises(RuntimeError, match=r"Function 'MyFunc2Backward' returned nan values in its 0th output\."):
        with detect_anomaly():
            gsum.backward()

    inp = tg.rand(SIZE, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function 'MyFunc2Backward' returned nan values in its 1th output\."):
        with detect_anomaly():
            out = MyFunc.apply(inp, False)
            (ginp,) = tg.autograd.grad(out, (inp,), create_graph=True)
            ginp.sum().backward()


# covers: test_autograd.py::TestAutograd::test_nested_anomaly_detect_nan
def test_nested_anomaly_detect_nan_warnings():
    MyFunc = _nested_functions()
    inp = tg.rand(SIZE, requires_grad=True)
    out = MyFunc.apply(inp, True)
    (ginp,) = tg.autograd.grad(out, (inp,), create_graph=True)
    gsum = ginp.sum()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            with detect_anomaly():
                gsum.backward()
    assert len(w) >= 2 and "No forward pass information" in str(w[1].message)

    inp = tg.rand(SIZE, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="returned nan values in its 1th output"):
            with detect_anomaly():
                out = MyFunc.apply(inp, False)
                (ginp,) = tg.autograd.grad(out, (inp,), create_graph=True)
                ginp.sum().backward()
    assert len(w) >= 3
    assert "MyFunc2.apply" in str(w[1].message)
    assert "MyFunc.apply" in str(w[2].message)


def _inplace_error_under_anomaly():
    with detect_anomaly():
        a = tg.randn(5, requires_grad=True)
        d1 = a + 1
        d2 = d1**2
        d1 += 1
        tg.autograd.grad(d2.sum(), a)


_MODIFIED = r"one of the variables needed for gradient computation has been modified by an inplace operation"


# covers: test_autograd.py::TestAutograd::test_anomaly_grad_warnings
def test_anomaly_grad_warnings_error():
    with pytest.raises(RuntimeError, match=_MODIFIED):
        _inplace_error_under_anomaly()


# covers: test_autograd.py::TestAutograd::test_anomaly_grad_warnings
def test_anomaly_grad_warnings():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match=_MODIFIED):
            _inplace_error_under_anomaly()
    assert len(w) == 2
    assert "Anomaly Detection has been enabled" in str(w[0].message)
    assert "Error detected in PowBackward" in str(w[1].message)


# covers: test_autograd.py::TestAutograd::test_anomaly_mode_no_check_nan
def test_anomaly_mode_no_check_nan():
    class MyFunc(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, gO):
            return tg.tensor(float("nan")).expand(10, 10)

    with detect_anomaly(check_nan=False):
        inp = tg.rand(10, 10, requires_grad=True)
        out = MyFunc.apply(inp).sum()
        out.backward(retain_graph=True)
        with detect_anomaly(check_nan=True):
            with pytest.raises(RuntimeError, match=r"Function 'MyFuncBackward' returned nan values in its 0th output\."):
                out.backward(retain_graph=True)
        out.backward()
