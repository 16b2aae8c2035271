"""``gradcheck`` and ``gradgradcheck`` (issue 13, item 15): the function runs with grad mode as the
caller has it (it may register hooks); outputs without gradient must have a zero numerical gradient;
an output whose shape or dtype changes under perturbation is an error; a NaN gradient is a
mismatch; and the new checks (reentrant backward, backward multiplied by grad_output, undefined
output gradients, fast mode, second derivatives).

Oracles: closed-form derivatives (x^3 -> 3x^2, sin -> cos, products), NaN's inequality with every
number, the shapes a function returns by construction, and PyTorch 2.x's pass / fail and error words
for the same functions (checked with torch).
"""

import re
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import GradcheckError, gradcheck, gradgradcheck


def f64(data, requires_grad=True):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


# --- 1. fn runs with grad mode on: hooks, recording, backward inside fn -------------------------------


def test_fn_runs_with_grad_mode_on_for_every_evaluation():
    modes = []

    def cube(x):
        modes.append(tg.is_grad_enabled())
        return x**3

    assert gradcheck(cube, (f64([0.5, -1.5]),)) is True
    # one reference call, 2 perturbed calls per element, and the undefined-gradient check's call
    assert len(modes) >= 1 + 2 * 2 and all(modes), modes


def _scaled_by_hook(factor):
    def fn(x):
        y = x.sin()
        # d/dx becomes factor * cos(x); an undefined gradient (None) stays undefined
        y.register_hook(lambda g: None if g is None else g * factor)
        return y

    return fn


def test_a_function_registering_a_hook_is_checked_with_the_hook():
    x = f64([0.3, -1.1, 2.0])
    assert gradcheck(_scaled_by_hook(1.0), (x,)) is True
    with pytest.raises(GradcheckError) as e:
        gradcheck(_scaled_by_hook(3.0), (x,))
    msg = str(e.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in msg
    analytic = float(msg.split("analytic ")[1].split(" ")[0])
    numeric = float(msg.split("numerical ")[1].split(" ")[0])
    cos = np.cos([0.3, -1.1, 2.0])
    worst = int(np.argmax(np.abs(2 * cos)))  # |3 cos - cos| is largest where |cos| is
    np.testing.assert_allclose([analytic, numeric], [3 * cos[worst], cos[worst]], rtol=1e-6)
    assert gradcheck(_scaled_by_hook(3.0), (x,), raise_exception=False) is False


def test_a_function_that_runs_backward_inside_is_checked():
    # fn(x) = x * d(sum x^2)/dx = 2 x^2, the inner gradient differentiable: d fn/dx = 4x
    def fn(x):
        (g,) = tg.autograd.grad((x * x).sum(), x, create_graph=True)
        return x * g

    assert gradcheck(fn, (f64([0.5, -2.0]),)) is True


def test_inputs_are_never_written_and_keep_their_version():
    x = f64([0.3, -1.2, 2.0])
    saved = x.sin()  # x is saved by SinBackward: a write to x would break this graph
    before = x._version
    assert gradcheck(lambda a: a.exp() * a, (x,)) is True
    assert gradcheck(lambda a: a.exp() * a, (x,), fast_mode=True) is True
    assert x._version == before and x.detach().numpy().tolist() == [0.3, -1.2, 2.0] and x.grad is None
    saved.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.3, -1.2, 2.0]), rtol=1e-12)


# --- 2. outputs that do not require grad -----------------------------------------------------------


def test_non_differentiable_outputs_must_have_zero_numerical_gradient():
    x = f64([1.0, 2.0])

    def copies(t):  # the values of t, without history: d/dt is the identity, not zero
        return tg.tensor(t.tolist(), dtype=tg.float64)

    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        gradcheck(copies, (x,))
    assert gradcheck(copies, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: t.detach() * 3, (x,), raise_exception=False) is False
    # constant in the input: zero numerical gradient, so it passes (as in PyTorch)
    assert gradcheck(lambda t: tg.ones(2, dtype=tg.float64), (x,)) is True
    # non-float outputs are never differentiable and are left out
    assert gradcheck(lambda t: t > 0, (x,)) is True


def test_a_non_differentiable_output_beside_a_differentiable_one_is_ignored():
    # PyTorch checks only the outputs that require grad when there is one
    x = f64([1.0, 2.0])
    assert gradcheck(lambda t: (t * 2, t.detach() * 3), (x,)) is True
    # and the output numbering counts differentiable outputs: the wrong one is output 1
    with pytest.raises(GradcheckError, match="output 1 with respect to input 0"):
        gradcheck(lambda t: (t.detach(), t * 2, _scaled_by_hook(2.0)(t)), (x,))


# --- 3. outputs whose shape or dtype depends on the perturbation ------------------------------------


def test_an_output_whose_shape_changes_under_perturbation_is_an_error():
    def fn(x):  # at exactly 0 the output has 2 elements, just above or below 1 or 2
        v = float(x.detach().numpy()[0])
        return tg.cat([x, x]) if v == 0.0 else (x if v > 0 else tg.cat([x, x, x]))

    x = f64([0.0])
    assert tuple(fn(x).shape) == (2,)
    with pytest.raises(AssertionError, match=r"same shape when inputs are perturbed on index 0 of input 0 by 1e-06, "
                                             r"but got: shapes \[2\] and \[1\]"):
        gradcheck(fn, (x,))
    # not a failed check but a misuse: raised even with raise_exception=False (as in PyTorch)
    with pytest.raises(AssertionError, match="same shape"):
        gradcheck(fn, (x,), raise_exception=False)


def test_an_output_whose_dtype_changes_under_perturbation_is_an_error():
    def fn(x):
        return x.to(tg.float32) if float(x.detach().numpy().sum()) > 1.0 else x * 1

    with pytest.raises(AssertionError, match="same dtype when inputs are perturbed .*float64.*float32"):
        gradcheck(fn, (f64([0.4, 0.6]),))


# --- 4. NaN gradients ------------------------------------------------------------------------------


class _NanGrad(tg.Function):
    """2x, whose backward puts NaN in element 1 of the gradient."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        mask = np.array([1.0, np.nan, 1.0])
        return g * 2 * tg.tensor(mask, dtype=tg.float64)


def test_a_nan_analytic_gradient_is_a_mismatch():
    x = f64([0.5, 1.0, 1.5])
    with pytest.raises(GradcheckError) as e:
        gradcheck(_NanGrad.apply, (x,))
    # NaN * 0 is NaN: the whole column of element 1 is NaN, against numerical 2 on the diagonal, 0 off it
    msg = str(e.value)
    assert re.search(r"at element 1 of the input and element (0 .*numerical 0\.0|1 .*numerical 2\.0)", msg), msg
    assert "analytic nan vs" in msg, msg
    assert gradcheck(_NanGrad.apply, (x,), raise_exception=False) is False
    assert gradcheck(_NanGrad.apply, (x,), fast_mode=True, raise_exception=False) is False


def test_a_nan_on_both_sides_is_a_mismatch():
    # sqrt at -1: both the derivative and the finite difference are NaN; PyTorch fails it too
    assert gradcheck(lambda t: t.sqrt(), (f64([-1.0]),), raise_exception=False) is False
    assert gradcheck(lambda t: t.sqrt(), (f64([4.0]),)) is True


# --- the other checks -----------------------------------------------------------------------------


def test_stride_0_inputs_are_refused_and_other_views_checked():
    e = f64([1.0, 2.0]).expand(3, 2)
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda t: t * 2, (e,), raise_exception=False)
    # a transposed (non-contiguous) input is fine: d(t^3)/dt = 3 t^2
    t = f64(np.arange(6.0).reshape(2, 3)).t()
    assert not t.is_contiguous() and gradcheck(lambda a: a**3, (t,)) is True
    # a size-1 dimension may have any stride
    assert gradcheck(lambda a: a * 2, (f64([[1.0, 2.0]]).expand(1, 2),)) is True


class _Jittered(tg.Function):
    """The identity whose backward multiplies by a fresh 1 + scale * u, u uniform in [0, 1)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * (1 + tg.rand_like(g) * ctx.scale), None


def test_backward_must_be_reentrant_within_nondet_tol():
    x = f64([0.5, 1.0])
    with pytest.raises(GradcheckError, match="Backward is not reentrant.*tolerance for nondeterminism was 0.0"):
        gradcheck(lambda t: _Jittered.apply(t, 1e-7), (x,))
    assert gradcheck(lambda t: _Jittered.apply(t, 1e-7), (x,), nondet_tol=1e-6) is True
    # the tolerance is on the difference of two runs: 1e-7 jitter exceeds 1e-9
    assert gradcheck(lambda t: _Jittered.apply(t, 1e-7), (x,), nondet_tol=1e-9, raise_exception=False) is False
    assert gradcheck(lambda t: _Jittered.apply(t, 0.0), (x,)) is True


def test_backward_must_be_multiplied_by_grad_output():
    def plus_constant(x):  # Jacobian right within atol=0.1, but a zero grad_output gives 0.01
        y = x * 1
        y.register_hook(lambda g: g + 1e-2)
        return y

    x = f64([1.0])
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(plus_constant, (x,), atol=1e-1)
    assert gradcheck(lambda t: t * 1, (x,), atol=1e-1) is True


def test_backward_must_accept_undefined_output_gradients():
    def refuses_none(x):
        y = x * 2

        def hook(g):
            if g is None:
                raise RuntimeError("undefined")

        y.register_hook(hook)
        return y

    x = f64([1.0, 2.0])
    with pytest.raises(GradcheckError, match="Expected backward function to handle undefined output grads") as e:
        gradcheck(refuses_none, (x,))
    assert "undefined" in str(e.value.__cause__)
    assert gradcheck(refuses_none, (x,), check_undefined_grad=False) is True

    def invents_gradient(x):  # an undefined gradient becomes ones: input gradient 2, not zero
        y = x * 2
        y.register_hook(lambda g: tg.ones(2, dtype=tg.float64) if g is None else g)
        return y

    with pytest.raises(GradcheckError, match="Expected all input grads to be undefined or zero"):
        gradcheck(invents_gradient, (x,))

    # with several outputs, each one undefined alone must also work
    seen = []

    def two_outputs(x):
        a, b = x * 2, x * 3
        a.register_hook(lambda g: seen.append(("a", g is None)))
        b.register_hook(lambda g: seen.append(("b", g is None)))
        return a, b

    seen.clear()
    assert gradcheck(two_outputs, (x,)) is True
    assert ("a", True) in seen and ("b", True) in seen and ("a", False) in seen and ("b", False) in seen


class _SkewedMul(tg.Function):
    """x * w whose gradient for x is off by 1e-3 * w in every entry (a small, spread error)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w * 1.001, g * x


def test_fast_mode_agrees_with_the_slow_check():
    rng = np.random.default_rng(3)
    x, w = f64(rng.uniform(0.5, 2.0, (3, 4))), f64(rng.uniform(0.5, 2.0, (3, 4)))
    for fast in (False, True):
        assert gradcheck(lambda a, b: (a.sin() * b).sum(1), (x, w), fast_mode=fast) is True
        # the x gradient is 0.1 % too large: beyond rtol=1e-4 in both modes, within rtol=1e-2
        with pytest.raises(GradcheckError, match="with respect to input 0"):
            gradcheck(_SkewedMul.apply, (x, w), rtol=1e-4, atol=0.0, fast_mode=fast)
        assert gradcheck(_SkewedMul.apply, (x, w), rtol=1e-2, fast_mode=fast) is True


def test_gradgradcheck_checks_second_derivatives():
    x = f64([0.3, -0.7, 1.2])
    # d^2 sin = -sin: right
    assert gradgradcheck(lambda t: t.sin(), (x,)) is True
    assert gradgradcheck(lambda t: t.sin(), (x,), fast_mode=True) is True
    assert gradgradcheck(lambda a, b: a * b * a, (x, f64([1.0, 2.0, 3.0]))) is True

    class FirstOnly(tg.Function):
        """x^2 whose backward (2 x g) is computed from a detached x: right first derivative, but
        the second derivative with respect to x is lost (0 instead of 2 g)."""

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 2 * t.detach()

    assert gradcheck(FirstOnly.apply, (x,)) is True
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradgradcheck(FirstOnly.apply, (x,))
    assert gradgradcheck(FirstOnly.apply, (x,), raise_exception=False) is False
    # given grad_outputs are used as they are
    go = f64([1.0, -1.0, 0.5])
    assert gradgradcheck(lambda t: t**3, (x,), (go,)) is True


def test_no_warning_for_float64_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda t: t * t, (f64([1.0, 2.0]),)) is True
