"""What tapegrad learns about a Function class lives on the class and dies with it (issue 14
point 7), and the native helpers are installed by the package, not looked up by name."""

import gc
import weakref

import pytest

import tapegrad as tg
from tapegrad import _tapegrad as _C


def _make_class(k):
    class Scale(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * k

    return Scale


def test_function_classes_defined_in_a_loop_are_freed():
    refs = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for k in range(50):
        cls = _make_class(float(k))
        y = cls.apply(x)
        y.sum().backward()
        # The gradient is the scale: the class really ran.
        assert x.grad.tolist() == [float(k), float(k)]
        x.grad = None
        refs.append(weakref.ref(cls))
        del cls, y
    gc.collect()
    alive = [r for r in refs if r() is not None]
    assert alive == []


def test_a_class_is_freed_while_its_graph_is_alive_only_after_the_graph():
    x = tg.tensor([3.0], requires_grad=True)
    cls = _make_class(2.0)
    y = cls.apply(x)
    ref = weakref.ref(cls)
    del cls
    gc.collect()
    # The node keeps its class (backward needs it).
    assert ref() is not None
    y.backward()
    assert x.grad.tolist() == [2.0]
    del y
    gc.collect()
    assert ref() is None


def test_a_subclass_learns_its_own_signature():
    class Base(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Two(Base):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = tg.tensor([1.0])
    assert Base.apply(x).tolist() == [2.0]
    # The parent's cached spec (one argument) must not be used for the child (two).
    assert Two.apply(x, tg.tensor([5.0])).tolist() == [5.0]
    with pytest.raises(TypeError):
        Base.apply(x, x)


def test_helpers_are_installed_once_and_checked():
    # A reload of the package installs again: accepted, the first set is kept.
    _C._install_helpers(
        function_spec=tg._function._Spec,
        saved_mapping=tg._function._SavedMapping,
        needs_input_grad=tg._function._NeedsInputGrad,
        user_location=tg._anomaly.user_location,
        saved_tensor_modified_error=tg.SavedTensorModifiedError,
        max_result=tuple,
    )
    with pytest.raises(TypeError, match="function_spec must be callable"):
        _C._install_helpers(
            function_spec=1, saved_mapping=dict, needs_input_grad=tuple, user_location=str,
            saved_tensor_modified_error=RuntimeError, max_result=tuple,
        )
