"""PyTorch's forward-mode AD tests (`test_autograd.py`: TestAutogradForwardMode and the forward-AD tests
of TestAutograd), carried over to `tg.autograd.forward_ad`. What is not carried over is listed with
reasons in `scope/forward_ad.md`.

Oracle: closed forms (d(2x) = 2 dx, d sin = cos dx, the product rule) and NumPy; where PyTorch checks
an object identity or an error, the same identity or error.
"""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD


def arr(t):
    return np.asarray(t.detach().numpy())


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    # a failing test must not leave a level behind for the next one
    while tg._tapegrad._dual_level_count():
        fwAD.exit_dual_level()


# covers: test_autograd.py::TestAutogradForwardMode::test_forward_level_cleanup
def test_forward_level_cleanup():
    foo = tg.rand(2)
    with fwAD.dual_level():
        tangent = tg.rand(2)
        values = arr(tangent).copy()
        ref = weakref.ref(tangent)
        dual = fwAD.make_dual(foo, tangent)
        # the tangent given is kept as it is
        assert fwAD.unpack_dual(dual)[1] is tangent
        del tangent
        gc.collect()
        # the dual keeps the tangent (here its Python object may go: one object per tensor while it lives)
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual)[1]), values)
        del dual
        gc.collect()
        assert ref() is None  # the level does not keep it


# covers: test_autograd.py::TestAutogradForwardMode::test_size_check
def test_size_check():
    foo = tg.rand(2)
    tangent = tg.rand(3)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a different size"):
            fwAD.make_dual(foo, tangent)
        dual = fwAD.make_dual(foo, tangent[1:])
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual).tangent), arr(tangent)[1:])


# covers: test_autograd.py::TestAutogradForwardMode::test_default_level
def test_default_level():
    foo, bar = tg.rand(2), tg.rand(2)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
    np.testing.assert_array_equal(arr(baz_primal), arr(foo))
    assert baz_tangent is bar
    baz_primal, baz_tangent = fwAD.unpack_dual(baz)
    np.testing.assert_array_equal(arr(baz_primal), arr(foo))
    assert baz_tangent is None


# covers: test_autograd.py::TestAutogradForwardMode::test_nested_level
def test_nested_level():
    with fwAD.dual_level() as level:
        assert level == 0
    # Deliberate difference (README): levels nest here, each with its own tangents.
    with fwAD.dual_level() as outer:
        inner = fwAD.enter_dual_level()
        assert (outer, inner) == (0, 1)
        with pytest.raises(RuntimeError, match="was not the last one"):
            fwAD.exit_dual_level(level=outer)
        x = fwAD.make_dual(tg.tensor([0.5]), tg.tensor([1.0]), level=outer)
        x = fwAD.make_dual(x, tg.tensor([1.0]), level=inner)
        p, t = fwAD.unpack_dual(x.sin(), level=inner)
        fwAD.exit_dual_level(level=inner)
        # jvp of jvp: d/dx sin = cos, d/dx cos = -sin
        np.testing.assert_allclose(arr(fwAD.unpack_dual(p, level=outer).tangent), [np.cos(0.5)], rtol=1e-6)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(t, level=outer).tangent), [-np.sin(0.5)], rtol=1e-6)


# covers: test_autograd.py::TestAutogradForwardMode::test_make_dual_forbid_integral_dtype
def test_make_dual_forbid_integral_dtype():
    primal_f = tg.ones(2, 2, dtype=tg.float64)
    primal_l = tg.ones(2, 2, dtype=tg.int64)
    tangent_f = tg.ones(2, 2, dtype=tg.float64)
    tangent_l = tg.ones(2, 2, dtype=tg.int64)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_l)
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_f)
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex"):
            fwAD.make_dual(primal_f, tangent_l)


def test_make_dual_needs_a_level():
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(tg.rand(2), tg.rand(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(tg.rand(2), tg.rand(2), level=3)


# covers: test_autograd.py::TestAutogradForwardMode::test_basic_packing_unpacking
def test_basic_packing_unpacking():
    foo, bar = tg.rand(2), tg.rand(2)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
        np.testing.assert_array_equal(arr(baz_primal), arr(foo))
        assert baz_tangent is bar
        foo_primal, foo_tangent = fwAD.unpack_dual(foo)
        np.testing.assert_array_equal(arr(foo_primal), arr(foo))
        assert foo_tangent is None
        assert type(fwAD.unpack_dual(baz)).__name__ == "UnpackedDualTensor"


# covers: test_autograd.py::TestAutogradForwardMode::test_advanced_packing_unpacking
def test_advanced_packing_unpacking():
    foo = tg.rand(2)
    bar = tg.ones(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        # memory and version counter shared
        assert foo._version == dual._version
        foo.add_(1)
        assert foo._version == dual._version
        np.testing.assert_array_equal(arr(dual), arr(foo))
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        assert dual_tangent is bar
        foo.add_(1)
        assert foo._version == dual_primal._version
        np.testing.assert_array_equal(arr(dual_primal), arr(foo))
        bar.add_(1)
        assert bar._version == dual_tangent._version

    with fwAD.dual_level():
        foo.requires_grad_()
        bar.requires_grad_()
        dual = fwAD.make_dual(foo, bar)
        p, t = fwAD.unpack_dual(dual)
        gfoo, gbar = tg.autograd.grad(p.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        np.testing.assert_array_equal(arr(gfoo), [1.0, 1.0])
        assert gbar is None
        gfoo, gbar = tg.autograd.grad(t.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        assert gfoo is None
        np.testing.assert_array_equal(arr(gbar), [1.0, 1.0])

        # detach() drops the tangent
        p, t = fwAD.unpack_dual(dual.detach() * 2)
        assert not p.requires_grad
        np.testing.assert_array_equal(arr(p), arr(foo) * 2)
        assert t is None

        # no_grad does not stop forward mode
        with tg.no_grad():
            out = dual * 3
        p, t = fwAD.unpack_dual(out)
        assert not p.requires_grad and not t.requires_grad
        np.testing.assert_allclose(arr(p), arr(foo) * 3)
        np.testing.assert_allclose(arr(t), arr(bar) * 3)

        # nor does detach_() of a clone keep it
        dual = dual.clone()
        dual.detach_()
        p, t = fwAD.unpack_dual(dual * 2)
        assert not p.requires_grad
        assert t is None


# covers: test_autograd.py::TestAutogradForwardMode::test_view_inplace_non_differentiable_views
def test_view_inplace_non_differentiable_views():
    original_foo = tg.rand(2, dtype=tg.float64)
    original_bar = tg.ones(2, dtype=tg.float64)
    foo, bar = original_foo.clone(), original_bar.clone()
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        dual *= 2
        # the primal it views gets no tangent; the tangent given is updated in place
        assert fwAD.unpack_dual(foo)[1] is None
        np.testing.assert_allclose(arr(bar), arr(original_bar) * 2)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(dual)[1]), arr(original_bar) * 2)
        np.testing.assert_allclose(arr(foo), arr(original_foo) * 2)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        assert fwAD.unpack_dual(dual_primal)[1] is None
        assert fwAD.unpack_dual(dual_tangent)[1] is None
        dual_primal *= 2
        np.testing.assert_allclose(arr(fwAD.unpack_dual(dual)[0]), arr(original_foo) * 4)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(dual)[1]), arr(original_bar) * 2)
        dual_tangent *= 2
        np.testing.assert_allclose(arr(fwAD.unpack_dual(dual)[0]), arr(original_foo) * 4)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(dual)[1]), arr(original_bar) * 4)


# covers: test_autograd.py::TestAutogradForwardMode::test_view_inplace_differentiable_views
def test_view_inplace_differentiable_views():
    foo, bar = tg.rand(2), tg.ones(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        view = dual.narrow(0, 0, 1)
        view *= 2
        assert fwAD.unpack_dual(foo)[1] is None
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual)[1]), [2.0, 1.0])
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(view)[1]), [2.0])

        baz = tg.rand(2)
        baz += dual
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(baz)[1]), arr(fwAD.unpack_dual(dual)[1]))
        baz = tg.rand(2)
        baz[0] = dual[0]
        assert arr(fwAD.unpack_dual(baz)[1])[0] == arr(fwAD.unpack_dual(dual)[1])[0]
        assert arr(fwAD.unpack_dual(baz)[1])[1] == 0.0

        baz = tg.rand(2)
        view = baz.detach()
        view += dual
        assert fwAD.unpack_dual(baz)[1] is None


# covers: test_autograd.py::TestAutogradForwardMode::test_grad_cleanup
def test_grad_cleanup():
    foo, bar, baz = tg.rand(2), tg.rand(2), tg.rand(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        assert fwAD.unpack_dual(foo)[1] is None
        assert fwAD.unpack_dual(dual)[1] is bar
    assert fwAD.unpack_dual(dual)[1] is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(foo)[1] is None
        new_dual = fwAD.make_dual(foo, baz)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        new_dual_primal, new_dual_tangent = fwAD.unpack_dual(new_dual)
        np.testing.assert_array_equal(arr(dual_primal), arr(new_dual_primal))
        assert dual_tangent is None
        np.testing.assert_array_equal(arr(new_dual_tangent), arr(baz))


# covers: test_autograd.py::TestAutogradForwardMode::test_non_differentiable
def test_non_differentiable():
    with fwAD.dual_level():
        foo = fwAD.make_dual(tg.rand(2), tg.rand(2))
        # integer and bool results have no tangent
        assert fwAD.unpack_dual(foo > 0.5).tangent is None
        assert fwAD.unpack_dual(foo.argmax()).tangent is None
        assert fwAD.unpack_dual(foo.eq(foo)).tangent is None


# covers: test_autograd.py::TestAutogradForwardMode::test_backward_graph_destruction
def test_backward_graph_destruction():
    def fn():
        a = tg.rand(10, requires_grad=True)
        da = fwAD.make_dual(tg.rand_like(a), a)
        # the tangent requires grad: the primal's tangent is recorded
        db = da.exp()
        return da, db

    with fwAD.dual_level():
        da, db = fn()
        p, t = fwAD.unpack_dual(db)
        # d exp = exp da
        np.testing.assert_allclose(arr(t), arr(p) * arr(fwAD.unpack_dual(da).tangent), rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_not_implemented_fwad
def test_not_implemented_fwad():
    class NoJvp(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        x = fwAD.make_dual(tg.rand(3), tg.rand(3))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(x)


# covers: test_autograd.py::TestAutograd::test_custom_function_save_for_forward
def test_custom_function_save_for_forward():
    class Func(tg.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            return x * y * z

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x, y = ctx.saved_tensors
            return ctx.z * (x_t * y + y_t * x)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * ctx.z * y, g * ctx.z * x, None

    a = tg.tensor([1.0, 2.0], dtype=tg.float64)
    t = tg.tensor([1.0, 0.5], dtype=tg.float64)
    b = tg.tensor([3.0, -1.0], dtype=tg.float64)
    with fwAD.dual_level():
        out = Func.apply(fwAD.make_dual(a, t), b, 2.0)
        # d(2 x y) along x: 2 y t
        np.testing.assert_allclose(arr(fwAD.unpack_dual(out).tangent), 2 * arr(b) * arr(t))

    x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([2.0, -1.0], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda x, y: Func.apply(x, y, 3.0), (x, y), check_forward_ad=True)


def test_save_for_forward_refuses_non_tensors():
    class Func(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, 3)
            return x * 2

    with pytest.raises(TypeError, match="save_for_forward expects all arguments to be tensors"):
        Func.apply(tg.rand(2))


# covers: test_autograd.py::TestAutograd::test_custom_function_forward_mode_wrong_formula
def test_custom_function_forward_mode_wrong_formula():
    class UserFn(tg.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 3  # wrong: should be t * 2

    x = tg.rand(5, dtype=tg.float64, requires_grad=True)
    with pytest.raises(tg.autograd.GradcheckError, match="Jacobian computed with forward mode mismatch for output 0"):
        tg.autograd.gradcheck(UserFn.apply, (x,), check_forward_ad=True)


# covers: test_autograd.py::TestAutograd::test_custom_function_forward_mode_non_tensor_before_tensor_args
def test_custom_function_forward_mode_non_tensor_before_tensor_args():
    class MyFn(tg.Function):
        @staticmethod
        def forward(ctx, nt, x, nt2, y):
            return x * 2 + y * 3

        @staticmethod
        def jvp(ctx, nt, x_t, nt2, y_t):
            assert nt is None and nt2 is None
            return x_t * 2 + y_t * 3

        @staticmethod
        def backward(ctx, g):
            return None, g * 2, None, g * 3

    x = tg.tensor([1.0, 2.0], dtype=tg.float64)
    tx = tg.tensor([0.5, -1.0], dtype=tg.float64)
    y = tg.tensor([3.0, 4.0], dtype=tg.float64)
    with fwAD.dual_level():
        out = MyFn.apply(1, fwAD.make_dual(x, tx), 0.5, y)
        # y has no tangent: it reaches jvp as zeros
        np.testing.assert_allclose(arr(fwAD.unpack_dual(out).tangent), arr(tx) * 2)


# covers: test_autograd.py::TestAutograd::test_custom_function_forward_mode_forward_is_no_op
def test_custom_function_forward_mode_forward_is_no_op():
    class MyFn(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y, x

        @staticmethod
        def jvp(ctx, x_t, y_t):
            return x_t + y_t, x_t

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2, g1

    x = tg.rand(2, dtype=tg.float64)
    y = tg.rand(2, dtype=tg.float64)
    tx = tg.rand(2, dtype=tg.float64)
    with fwAD.dual_level():
        a, b = MyFn.apply(fwAD.make_dual(x, tx), y)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(a).tangent), arr(tx))
        np.testing.assert_allclose(arr(fwAD.unpack_dual(b).tangent), arr(tx))
        np.testing.assert_allclose(arr(b), arr(x))


# covers: test_autograd.py::TestAutograd::test_custom_function_forward_mode_non_differentiable
def test_custom_function_forward_mode_non_differentiable():
    class MyFn(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            out = y.clone()
            ctx.mark_non_differentiable(out)
            return x.clone(), out

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            return x_tangent, None

    x = tg.tensor(2.0)
    x_tangent = tg.tensor(1.0)
    y = tg.tensor(3.0)
    with fwAD.dual_level():
        x_dual = fwAD.make_dual(x, x_tangent)
        _, out2 = MyFn.apply(x_dual, y)
        assert fwAD.unpack_dual(out2).tangent is None
        y_dual = fwAD.make_dual(y, tg.tensor(1.0))
        _, out2 = MyFn.apply(x_dual, y_dual)
        assert fwAD.unpack_dual(out2).tangent is None


def test_jvp_wrong_shape_is_refused():
    class G(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t[:1]

    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a different size"):
            G.apply(fwAD.make_dual(tg.rand(2), tg.rand(2)))


# covers: test_autograd.py::TestAutograd::test_custom_function_setup_context_simple
# (its forward-mode spelling: forward without ctx, setup_context saving for forward)
def test_setup_context_with_jvp():
    class MySquare(tg.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_forward(x)

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2 * x * t

    with fwAD.dual_level():
        y = MySquare.apply(fwAD.make_dual(tg.tensor([3.0]), tg.tensor([2.0])))
        np.testing.assert_allclose(arr(fwAD.unpack_dual(y).tangent), [12.0])


# covers: test_autograd.py::TestAutograd::test_gradcheck_check_forward_or_backward_only
def test_gradcheck_check_forward_or_backward_only():
    class UserFn(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3  # wrong

        @staticmethod
        def jvp(ctx, t):
            return t * 2  # right

    x = tg.rand(4, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(UserFn.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(tg.autograd.GradcheckError, match="Jacobian mismatch"):
        tg.autograd.gradcheck(UserFn.apply, (x,), check_forward_ad=True, check_backward_ad=True)


# covers: test_autograd.py::TestAutograd::test_gradcheck_forward_ad
@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_forward_ad(fast_mode):
    def fn(x, y):
        return x + y, y

    def bad_fn(x, y):
        # wrong forward rule for y
        class Bad(tg.Function):
            @staticmethod
            def forward(ctx, a):
                return a.clone()

            @staticmethod
            def jvp(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                return g

        return x + y, Bad.apply(y)

    x = tg.rand(2, dtype=tg.float64, requires_grad=True)
    y = tg.rand(2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(tg.autograd.GradcheckError, match="Jacobian computed with forward mode mismatch for output 1"):
        tg.autograd.gradcheck(bad_fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)


def test_forward_over_reverse_and_reverse_over_forward():
    """The tangent formulas are recorded: a Hessian-vector product both ways, against reverse-over-reverse."""
    x0 = np.array([0.3, 0.7, -0.4])
    v = np.array([1.0, -0.5, 2.0])

    def f(x):
        return (x.sin() * x.prod()).sum()

    xr = tg.tensor(x0, requires_grad=True)
    (g,) = tg.autograd.grad(f(xr), xr, create_graph=True)
    (hv_ref,) = tg.autograd.grad(g, xr, grad_outputs=tg.tensor(v))

    with fwAD.dual_level():
        x = fwAD.make_dual(tg.tensor(x0, requires_grad=True), tg.tensor(v))
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        hv_fwd_rev = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(arr(hv_fwd_rev), arr(hv_ref), rtol=1e-10)

    with fwAD.dual_level():
        xr = tg.tensor(x0, requires_grad=True)
        jv = fwAD.unpack_dual(f(fwAD.make_dual(xr, tg.tensor(v)))).tangent
        (hv_rev_fwd,) = tg.autograd.grad(jv, xr)
    np.testing.assert_allclose(arr(hv_rev_fwd), arr(hv_ref), rtol=1e-10)


def test_custom_gradient_and_autograd_function_jvp():
    @tg.custom_gradient
    def square(x):
        return x * x, lambda g: 2 * x * g

    @tg.custom_gradient(jvp=lambda primals, tangents: 3 * tangents[0])
    def square_wrong_jvp(x):
        return x * x, lambda g: 2 * x * g

    times_ten = tg.autograd_function(lambda ctx, x: x * 10, lambda ctx, g: g * 10, jvp=lambda ctx, t: t * 10)
    x, t = tg.tensor([1.0, 2.0]), tg.tensor([1.0, -1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(square(d)).tangent), 2 * arr(x) * arr(t))
        np.testing.assert_allclose(arr(fwAD.unpack_dual(square_wrong_jvp(d)).tangent), 3 * arr(t))
        np.testing.assert_allclose(arr(fwAD.unpack_dual(times_ten(d)).tangent), 10 * arr(t))


# covers: test_autograd.py::TestAutogradForwardMode::test_set_fw_grad_having_own_fw_grad_at_same_level
def test_set_fw_grad_having_own_fw_grad_at_same_level():
    foo, bar = tg.rand(2), tg.rand(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        with pytest.raises(RuntimeError, match="has a forward gradient at the same level"):
            fwAD.make_dual(tg.rand(2), dual)


# covers: test_autograd.py::TestAutogradDeviceType::test_copy_forward_ad_broadcasting
def test_copy_forward_ad_broadcasting():
    with fwAD.dual_level():
        x = tg.zeros(2, 3)
        y = fwAD.make_dual(tg.rand(3), tg.tensor([1.0, 2.0, 3.0]))
        x.copy_(y)
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(x).tangent), [[1.0, 2.0, 3.0]] * 2)


# covers: test_autograd.py::TestAutogradDeviceType::test_copy_forward_ad_same_layout_copies_grad
def test_copy_forward_ad_same_layout_copies_grad():
    with fwAD.dual_level():
        t = tg.tensor([1.0, 2.0, 3.0])
        a = tg.zeros(3)
        a.copy_(fwAD.make_dual(tg.rand(3), t))
        t.mul_(10)  # the copy's tangent is its own memory
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(a).tangent), [1.0, 2.0, 3.0])


def test_inference_mode():
    """Forward mode under inference mode, as PyTorch's: tangents are hidden (``unpack_dual`` finds none,
    operations compute none, ``make_dual`` attaches none), whatever the operation's rule; outside it, the
    dual tensors made before still carry theirs."""
    x, t = tg.tensor([0.5, 1.0, 2.0]), tg.tensor([1.0, 2.0, 3.0])
    with fwAD.dual_level():
        outside = fwAD.make_dual(x, t)
        with tg.inference_mode():
            d = fwAD.make_dual(x, t)
            assert fwAD.unpack_dual(d).tangent is None
            assert fwAD.unpack_dual(outside).tangent is None
            for out in (outside.sin() * 2 + 1, outside.sum(), outside.cumsum(0), outside[0]):
                assert fwAD.unpack_dual(out).tangent is None
        assert fwAD.unpack_dual(d).tangent is None
        np.testing.assert_allclose(arr(fwAD.unpack_dual(outside.sin()).tangent), np.cos(arr(x)) * arr(t), rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_gradcheck_forward_ad_runs_with_no_requires_grad
def test_gradcheck_forward_ad_runs_with_no_requires_grad():
    seen = []

    def fn(x, y):
        if tg._tapegrad._dual_level_count():
            seen.append((x.requires_grad, y.requires_grad))
        return x.clone(), y.clone()

    x = tg.rand(2, dtype=tg.float64, requires_grad=True)
    y = tg.rand(2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(fn, (x, y), check_forward_ad=True, check_backward_ad=False)
    assert seen and all(s == (False, False) for s in seen)


def test_gradcheck_forward_ad_checks_only_inputs_requiring_grad():
    calls = []

    class UserFn(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            calls.append((float(x_t.abs().sum()), float(y_t.abs().sum())))
            return x_t, y_t

    x = tg.rand(2, dtype=tg.float64, requires_grad=True)
    y = tg.rand(2, dtype=tg.float64)
    assert tg.autograd.gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_backward_ad=False)
    # one column per element of x; y (not requiring grad) never gets a tangent
    assert len(calls) == 2 and all(ty == 0.0 for _, ty in calls)


def test_custom_function_dirty_input_jvp_in_place():
    """A Function that writes its input in place (mark_dirty) updates the input's tangent in place in jvp,
    as PyTorch asks: the input (returned as the output) then has the doubled tangent."""

    class Double_(tg.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def jvp(ctx, t):
            t.mul_(2)
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 3.0]))
        y = Double_.apply(d)
        assert y is d
        np.testing.assert_array_equal(arr(y), [2.0, 4.0])
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(d).tangent), [2.0, 6.0])


def test_linalg_forward_mode():
    """tg.linalg's functions with forward rules, checked column by column against finite differences."""
    tg.manual_seed(3)
    a = tg.randn(3, 3, dtype=tg.float64)
    spd = (a @ a.T + 3 * tg.eye(3, dtype=tg.float64)).requires_grad_()
    b = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)

    def sym(m):
        return 0.5 * (m + m.T)

    for fn, inputs in [
        (tg.linalg.inv, (spd,)),
        (tg.linalg.det, (spd,)),
        (tg.linalg.solve, (spd, b)),
        (lambda m: tg.linalg.slogdet(m)[1], (spd,)),
        (lambda m: tg.linalg.cholesky(sym(m)), (spd,)),
        (lambda m: tg.linalg.eigh(sym(m))[0], (spd,)),
        # eigenvectors up to sign: fixed by the sign of the first row
        (lambda m: (lambda w, V: V * V[0].sign())(*tg.linalg.eigh(sym(m))), (spd,)),
    ]:
        assert tg.autograd.gradcheck(fn, inputs, check_forward_ad=True)


# covers: test_autograd.py::TestAutogradForwardMode::test_print
def test_print():
    # a dual tensor's printout names its tangent; a plain one's does not (PyTorch's form, torch -> tapegrad)
    with fwAD.dual_level():
        a = tg.rand(3)
        assert "tangent=" not in str(a)
        b = fwAD.make_dual(a, tg.rand(3))
        assert "tangent=" not in str(a)
        assert "tangent=" in str(b)
        b_primal, b_tangent = fwAD.unpack_dual(b)
        assert "tangent=" not in str(b_primal)
        assert "tangent=" not in str(b_tangent)
    assert "tangent=" not in str(b)  # the level exited


# covers: test_autograd.py::TestAutogradForwardMode::test_make_dual_inference_tensor_in_inference_mode
def test_make_dual_inference_tensor_in_inference_mode():
    # under inference mode make_dual attaches no tangent (PyTorch's result: unpack_dual finds none) and the
    # result is an inference tensor; outside it, that tensor still has none
    with fwAD.dual_level():
        with tg.inference_mode():
            foo = tg.rand(2)
            bar = fwAD.make_dual(foo, tg.ones(2))
            assert bar.is_inference()
            assert fwAD.unpack_dual(bar).tangent is None
            np.testing.assert_array_equal(arr(fwAD.unpack_dual(bar).primal), arr(foo))
        assert fwAD.unpack_dual(bar).tangent is None


# covers: test_autograd.py::TestAutogradForwardMode::test_fwd_grad_enabled
def test_fwd_grad_enabled():
    assert fwAD._is_fwd_grad_enabled()
    try:
        tg._tapegrad._set_fwd_grad_enabled(False)
        assert not fwAD._is_fwd_grad_enabled()
    finally:
        tg._tapegrad._set_fwd_grad_enabled(True)
    assert fwAD._is_fwd_grad_enabled()


# covers: test_autograd.py::TestAutogradForwardMode::test_set_fwd_grad_enabled
def test_set_fwd_grad_enabled():
    # with forward grad off, as PyTorch: make_dual attaches no tangent, unpack_dual finds none (not even
    # on a dual tensor made before), operations compute none; turned back on, the earlier tangent is back
    x = tg.tensor([3.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tg.tensor([1.0, 2.0]))
        with fwAD._set_fwd_grad_enabled(False):
            assert not fwAD._is_fwd_grad_enabled()
            e = fwAD.make_dual(x, tg.ones(2))
            assert fwAD.unpack_dual(e).tangent is None
            assert fwAD.unpack_dual(d).tangent is None
            assert fwAD.unpack_dual(d * 2).tangent is None
        assert fwAD._is_fwd_grad_enabled()
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(d * 2).tangent), [2.0, 4.0])
        assert fwAD.unpack_dual(e).tangent is None
