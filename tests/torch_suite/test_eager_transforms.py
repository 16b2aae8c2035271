"""functorch's test/functorch/test_eager_transforms.py, the tests that need neither vmap nor
functorch internals, carried over to ``tg.func``: the same behaviours and expected values, in our
own code. Out-of-scope tests are listed in scope/eager_transforms.md. The forward-mode transforms
run once per forward engine present (``forward_ad`` when the build has it, and double-vjp).
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as AF
from tapegrad.func import functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from tapegrad.func._transforms import _slice_argnums


def np_(t):
    return t.detach().numpy()


def assert_close(a, b, atol=1e-6, rtol=1e-5):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        for k in a:
            assert_close(a[k], b[k], atol, rtol)
        return
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_close(x, y, atol, rtol)
        return
    a = np_(a) if isinstance(a, tg.Tensor) else np.asarray(a)
    b = np_(b) if isinstance(b, tg.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


JAC = pytest.mark.parametrize("jacapi", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])


# ================================================================================ TestSliceArgnums


# covers: test_eager_transforms.py::TestSliceArgnums::test_invalid_argnum_type
def test_slice_invalid_argnum_type():
    args = (tg.randn(3),)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        _slice_argnums(args, 0.0)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        _slice_argnums(args, [0])
    with pytest.raises(RuntimeError, match="must be int"):
        _slice_argnums(args, (0.0,))
    with pytest.raises(RuntimeError, match="must be int"):
        _slice_argnums((0.1, 1.1, 2.1, 3.1, 4.1), ((0, 1), 2))


# covers: test_eager_transforms.py::TestSliceArgnums::test_out_of_bounds_argnum_values
def test_slice_out_of_bounds_argnum_values():
    args = (tg.randn(3),)
    for nums in (1, -2, (-2,)):
        with pytest.raises(RuntimeError, match="positional inputs"):
            _slice_argnums(args, nums)


# covers: test_eager_transforms.py::TestSliceArgnums::test_not_enough_argnums
def test_slice_not_enough_argnums():
    with pytest.raises(RuntimeError, match="must be non-empty"):
        _slice_argnums((tg.randn(3),), ())


# covers: test_eager_transforms.py::TestSliceArgnums::test_duplicate_argnums
def test_slice_duplicate_argnums():
    x = tg.randn(3)
    for nums in ((0, 0), (0, -2)):
        with pytest.raises(RuntimeError, match="must be unique"):
            _slice_argnums((x, x), nums)


# covers: test_eager_transforms.py::TestSliceArgnums::test_flat_args_with_positive_int_argnum
# covers: test_eager_transforms.py::TestSliceArgnums::test_flat_args_with_negative_int_argnum
# covers: test_eager_transforms.py::TestSliceArgnums::test_flat_args_with_tuple_argnum
def test_slice_flat_args():
    args = (0.1, 1.1, 2.1, 3.1, 4.1)
    assert _slice_argnums(args, 0) == (0.1,)
    assert _slice_argnums(args, 4) == (4.1,)
    assert _slice_argnums(args, -1) == (4.1,)
    assert _slice_argnums(args, -5) == (0.1,)
    assert _slice_argnums(args, (0, 1, 2, 3, 4)) == args
    assert _slice_argnums(args, (0, -3)) == (0.1, 2.1)


# covers: test_eager_transforms.py::TestSliceArgnums::test_pytree_args
# covers: test_eager_transforms.py::TestSliceArgnums::test_argnums_reorders
def test_slice_pytree_args_and_reorder():
    args = ((0.1, 1.1), 2.0, [3.1])
    assert _slice_argnums(args, 0) == args[0:1]
    assert _slice_argnums(args, (0,)) == args[0:1]
    assert _slice_argnums(args, -1) == args[-1:]
    assert _slice_argnums(args, (0, -2)) == args[0:2]
    args = ((0.1, 1.1, 2.1), 3.1, 4.1)
    assert _slice_argnums(args, (1, 0)) == (args[1], args[0])


# ================================================================================ TestGradTransform


# covers: test_eager_transforms.py::TestGradTransform::test_primitive
def test_primitive():
    x = tg.randn([])
    assert_close(grad(tg.sin)(x), tg.cos(x))


# covers: test_eager_transforms.py::TestGradTransform::test_composite_simple
def test_composite_simple():
    x = tg.randn(2, 3, 4)
    assert_close(grad(lambda x: tg.flatten(x).sum())(x), np.ones((2, 3, 4)))


# covers: test_eager_transforms.py::TestGradTransform::test_fn_with_kwargs
def test_fn_with_kwargs():
    def foo(x, y):
        return (x * y).sum()

    x, y = tg.randn(3), tg.randn(3)
    assert_close(grad(foo)(x, y=y), grad(foo)(x, y))
    assert_close(grad(foo)(x, y=y), y)


# covers: test_eager_transforms.py::TestGradTransform::test_composite_complicated
def test_composite_complicated():
    x, y = tg.randn(3), tg.randn(3, 5)

    def foo(x, y):
        return (x @ y).sum()

    result = grad(foo)(x, y)
    x.requires_grad_()
    (expected,) = tg.autograd.grad(foo(x, y), x)
    assert_close(result, expected)
    assert_close(result, np_(y).sum(1))


# covers: test_eager_transforms.py::TestGradTransform::test_composite_two_ops
def test_composite_two_ops():
    y = tg.randn(2, 5)
    targets = tg.tensor([1, 3])

    def foo(y, targets):
        return tg.nn.functional.cross_entropy(y, targets)

    result = grad(foo)(y, targets)
    y.requires_grad_()
    (expected,) = tg.autograd.grad(foo(y, targets), y)
    assert_close(result, expected)
    p = np.exp(np_(y)) / np.exp(np_(y)).sum(1, keepdims=True)
    p[[0, 1], [1, 3]] -= 1
    assert_close(result, p / 2, atol=1e-6)


# covers: test_eager_transforms.py::TestGradTransform::test_shape
# covers: test_eager_transforms.py::TestGradTransform::test_dtype
# covers: test_eager_transforms.py::TestGradTransform::test_is_cuda
# covers: test_eager_transforms.py::TestGradTransform::test_numel
@pytest.mark.parametrize("attr", [lambda x: tuple(x.shape), lambda x: x.dtype, lambda x: x.is_cuda,
                                  lambda x: x.numel()], ids=["shape", "dtype", "is_cuda", "numel"])
def test_attributes(attr):
    x = tg.randn(2, 3, 5, dtype=tg.float64)
    expected = attr(x)
    seen = []

    def foo(t):
        seen.append(attr(t))
        return t.sum()

    assert_close(grad(foo)(x), np.ones((2, 3, 5)))
    assert seen == [expected]


# covers: test_eager_transforms.py::TestGradTransform::test_inplace
def test_inplace():
    x = tg.randn([])
    assert_close(grad(lambda x: x.clone().sin_())(x), x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_inplace_on_view
def test_inplace_on_view():
    x = tg.randn(3)

    def foo(x):
        y = x.clone()
        y0 = y[0]
        y0.sin_()
        return y.sum()

    result = grad(foo)(x)
    x.requires_grad_()
    (expected,) = tg.autograd.grad(foo(x), x)
    assert_close(result, expected)
    assert_close(result, [np.cos(np_(x)[0]), 1.0, 1.0])


# covers: test_eager_transforms.py::TestGradTransform::test_inplace_on_view_base
def test_inplace_on_view_base():
    x = tg.randn(3)

    def foo(x):
        y = x.clone()
        y0 = y[0]
        y.sin_()
        return y0

    result = grad(foo)(x)
    x.requires_grad_()
    (expected,) = tg.autograd.grad(foo(x), x)
    assert_close(result, expected)
    assert_close(result, [np.cos(np_(x)[0]), 0.0, 0.0])


# covers: test_eager_transforms.py::TestGradTransform::test_nesting_simple
def test_nesting_simple():
    x = tg.randn([])
    assert_close(grad(grad(tg.sin))(x), -tg.sin(x))


# covers: test_eager_transforms.py::TestGradTransform::test_escaped_wrappers_are_ignored
def test_escaped_wrappers_are_ignored():
    # a tensor that escapes the transform is an ordinary tensor afterwards
    x = tg.randn([])
    escaped = []

    def foo(x):
        y = x.sin()
        escaped.append(y)
        return y

    grad(foo)(x)
    assert_close(escaped[0].sum(), x.sin().sum())


# covers: test_eager_transforms.py::TestGradTransform::test_manual_seed_inside_grad
def test_manual_seed_inside_grad():
    x = tg.randn([])

    def f(x):
        tg.manual_seed(0)
        return x * tg.randn_like(x)

    result = grad(f)(x)
    x.requires_grad_()
    (expected,) = tg.autograd.grad(f(x), x)
    assert_close(result, expected)


# covers: test_eager_transforms.py::TestGradTransform::test_vjp
def test_vjp_simple():
    x = tg.randn([])
    out, vjp_fn = vjp(tg.sin, x)
    assert_close(out, x.sin())
    v = tg.randn([])
    (result,) = vjp_fn(v)
    assert_close(result, v * x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_two_outputs
def test_vjp_two_outputs():
    result, vjp_fn = vjp(lambda x: (x, x), tg.tensor(1.0))
    (g,) = vjp_fn(result)
    assert_close(g, 2.0)


# covers: test_eager_transforms.py::TestGradTransform::test_composed_with_autograd
def test_composed_with_autograd():
    x = tg.randn([], requires_grad=True)
    y = grad(tg.sin)(x)
    (result,) = tg.autograd.grad(y, x)
    assert_close(result, -x.sin())


# covers: test_eager_transforms.py::TestGradTransform::test_grad_of_vjp_composition
def test_grad_of_vjp_composition():
    x, y = tg.randn([]), tg.randn([])

    def foo(x, y):
        out, vjp_fn = vjp(tg.sin, x)
        return grad(lambda y: vjp_fn(y)[0])(y)

    assert_close(foo(x, y), x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_of_grad_composition
def test_vjp_of_grad_composition():
    x, y = tg.randn([]), tg.randn([])
    out, vjp_fn = vjp(grad(tg.sin), x)
    assert_close(vjp_fn(y)[0], -y * x.sin())


# covers: test_eager_transforms.py::TestGradTransform::test_grad_of_vjp_of_grad_composition
def test_grad_of_vjp_of_grad_composition():
    x, y = tg.randn([]), tg.randn([])

    def foo(x, y):
        df, vjp_fn = vjp(grad(lambda x: -tg.cos(x)), x)
        return grad(lambda y: vjp_fn(y)[0])(y)

    assert_close(foo(x, y), x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_views
def test_views():
    x = tg.randn([], requires_grad=True)
    y = tg.randn([], requires_grad=True)

    def silly_sin(x):
        return x.view([]).sin()

    result = grad(silly_sin)(x) + tg.cos(y)
    grads = tg.autograd.grad(result, [x, y])
    assert_close(grads[0], -x.sin())
    assert_close(grads[1], -y.sin())


# covers: test_eager_transforms.py::TestGradTransform::test_view_inplace_simple
def test_view_inplace_simple():
    def foo(x):
        x = x.clone()
        x.view([]).sin_()
        return x

    x = tg.randn([], requires_grad=True)
    assert_close(grad(foo)(x), x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_invalid_argnums
def test_invalid_argnums():
    x, y = tg.randn([]), tg.randn([])
    with pytest.raises(RuntimeError, match="but only"):
        grad(tg.mul, argnums=-3)(x, y)
    with pytest.raises(RuntimeError, match="but only"):
        grad(tg.mul, argnums=2)(x, y)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        grad(tg.mul, argnums=[0])(x, y)
    with pytest.raises(RuntimeError, match="must be int"):
        grad(tg.mul, argnums=("0",))(x, y)
    with pytest.raises(RuntimeError, match="must be unique"):
        grad(tg.mul, argnums=(0, 0))(x, y)
    with pytest.raises(RuntimeError, match="must be unique"):
        grad(tg.mul, argnums=(0, -2))(x, y)


# covers: test_eager_transforms.py::TestGradTransform::test_argnums
# covers: test_eager_transforms.py::TestGradTransform::test_out_of_order_argnums
# covers: test_eager_transforms.py::TestGradTransform::test_negative_argnums
def test_argnums():
    x, y = tg.randn([]), tg.randn([])
    assert_close(grad(tg.mul, argnums=0)(x, y), y)
    assert_close(grad(tg.mul, argnums=1)(x, y), x)
    (gx,) = grad(tg.mul, argnums=(0,))(x, y)
    assert_close(gx, y)
    gx, gy = grad(tg.mul, argnums=(0, 1))(x, y)
    assert_close((gx, gy), (y, x))
    gy, gx = grad(tg.mul, argnums=(1, 0))(x, y)
    assert_close((gx, gy), (y, x))
    assert_close(grad(tg.mul, argnums=-2)(x, y), y)
    assert_close(grad(tg.mul, argnums=-1)(x, y), x)
    (gx,) = grad(tg.mul, argnums=(-2,))(x, y)
    assert_close(gx, y)
    gx, gy = grad(tg.mul, argnums=(-2, -1))(x, y)
    assert_close((gx, gy), (y, x))


# covers: test_eager_transforms.py::TestGradTransform::test_grad_pytree_inputs
def test_grad_pytree_inputs():
    x = tg.randn([])

    def f(a, b):
        x, y = a
        return 1 * x + 2 * y + 3 * b["foo"]

    args = ((x, x), {"foo": x})
    gx, gy = grad(f)(*args)
    assert_close((gx, gy), (1.0, 2.0))
    ((gx, gy),) = grad(f, argnums=(0,))(*args)
    assert_close((gx, gy), (1.0, 2.0))
    (gx, gy), gz = grad(f, argnums=(0, 1))(*args)
    assert_close((gx, gy), (1.0, 2.0))
    assert isinstance(gz, dict)
    assert_close(gz["foo"], 3.0)


# covers: test_eager_transforms.py::TestGradTransform::test_grad_aux_tensor
def test_grad_aux_tensor():
    x = tg.randn(3)
    with pytest.raises(RuntimeError, match=r"grad_and_value\(f\)\(\*args\): output of function f should be a tuple"):
        grad(lambda t: [t, t], has_aux=True)(x)
    with pytest.raises(RuntimeError, match=r"grad_and_value\(f\)\(\*args\): output of function f should be a tuple"):
        grad(lambda t: (t, t + 2, t + 3), has_aux=True)(x)

    def f(t):
        return t.sin().sum(), t.cos()

    out, aux = grad(f, has_aux=True)(x)
    assert_close(aux, x.cos())
    assert_close(out, x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_grad_aux_pytree
def test_grad_aux_pytree():
    def f(x):
        return x.sin().sum(), {"a": x.cos(), "b": [x.tan()]}

    x = tg.randn(3)
    out, aux = grad(f, has_aux=True)(x)
    assert_close(aux, f(x)[1])
    assert aux["a"].grad_fn is None
    assert_close(out, x.cos())
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            grad(lambda x, bad=bad: (x.sum(), bad), has_aux=True)(x)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            grad(lambda x, bad=bad: (x.sum(), [x, bad]), has_aux=True)(x)


# covers: test_eager_transforms.py::TestGradTransform::test_zero_grad
def test_zero_grad():
    inps = {"a": tg.randn(10) + 3, "b": tg.randn(10)}
    grads = grad(lambda x: (x["a"] ** 2.0).sum())(inps)
    assert_close(grads["a"], 2 * np_(inps["a"]), rtol=1e-5)
    assert grads["b"].abs().sum().item() == 0.0


# covers: test_eager_transforms.py::TestGradTransform::test_unrelated_grad
def test_unrelated_grad():
    x, y = tg.tensor(1.0), tg.tensor(2.0)
    assert_close(grad(lambda x: y)(x), 0.0)


# covers: test_eager_transforms.py::TestGradTransform::test_unrelated_vjp
def test_unrelated_vjp():
    x, y, v = tg.tensor(1.0), tg.tensor(2.0), tg.tensor(1.0)
    out, vjp_fn = vjp(lambda x: y, x)
    result = vjp_fn(v)
    assert isinstance(result, tuple)
    assert_close(result, (0.0,))


# covers: test_eager_transforms.py::TestGradTransform::test_unrelated_vjp_multiple_inputs_outputs
def test_unrelated_vjp_multiple_inputs_outputs():
    w, x, y, v = tg.tensor(3.0), tg.tensor(4.0), tg.tensor(2.0), tg.tensor(1.0)
    out, vjp_fn = vjp(lambda w, x: (y, y, x), w, x)
    assert_close(vjp_fn((v, v, v)), (0.0, 1.0))


# covers: test_eager_transforms.py::TestGradTransform::test_unrelated_hessian
def test_unrelated_hessian():
    W = tg.randn(5, 3)
    x = tg.randn(3)
    result = jacrev(jacrev(lambda x: W @ x))(x)
    assert_close(result, np.zeros((5, 3, 3)))


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_pytree_input
def test_vjp_pytree_input():
    x, v = tg.randn([]), tg.randn([])
    out, vjp_fn = vjp(lambda x: x[0] * x[1][0], (x, (x, x)))
    assert_close(out, x * x)
    result = vjp_fn(v)
    assert_close(result, ((x * v, (x * v, 0.0)),))


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_pytree_output
def test_vjp_pytree_output():
    x = tg.randn([])
    v1, v2, v3 = tg.randn([]), tg.randn([]), tg.randn([])
    _, vjp_fn = vjp(lambda x: (x, (x, x)), x)
    (result,) = vjp_fn((v1, (v2, v3)))
    assert_close(result, v1 + v2 + v3)


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_outputs_can_any_pytree
def test_vjp_outputs_can_any_pytree():
    x = tg.randn(2, 3)
    t = tg.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): Expected f to be a function that has non-empty output"):
            _, vjp_fn = vjp(lambda _, output=output: output, x)
            vjp_fn(t)
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): expected f\(\*primals\) to return only tensors"):
            _, vjp_fn = vjp(lambda _, output=output: output, x)
            vjp_fn(t)
    output, vjp_fn = vjp(lambda x: [x, x.sum()], x)
    (vjp_out,) = vjp_fn([t, t.sum()])
    assert isinstance(output, list) and len(output) == 2
    assert_close(vjp_out, np_(t) + np_(t).sum(), rtol=1e-5)
    output, vjp_fn = vjp(lambda x: {"x": x, "xsum": x.sum()}, x)
    (vjp_out,) = vjp_fn({"x": t, "xsum": t.sum()})
    assert isinstance(output, dict) and set(output) == {"x", "xsum"}
    assert_close(vjp_out, np_(t) + np_(t).sum(), rtol=1e-5)

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    output, vjp_fn = vjp(composite_output, x)
    (vjp_out,) = vjp_fn([(t.sum(), {"a": t, "out": [t, t.sum()]})])
    assert isinstance(output, list) and isinstance(output[0], tuple) and isinstance(output[0][1], dict)
    assert_close(vjp_out, 2 * np_(t) + 2 * np_(t).sum(), rtol=1e-5)


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_pytree_error
def test_vjp_pytree_error():
    x = tg.randn([])
    v1, v2, v3 = tg.randn([]), tg.randn([]), tg.randn([])
    _, vjp_fn = vjp(lambda x: (x, (x, x)), x)
    with pytest.raises(RuntimeError, match="Expected pytree structure"):
        vjp_fn(((v1, (v2, v3)),))


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_aux_tensor
def test_vjp_aux_tensor():
    x = tg.randn(3)
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): output of function f should be a tuple"):
        vjp(lambda t: [t, t], x, has_aux=True)
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): output of function f should be a tuple"):
        vjp(lambda t: (t, t + 2, t + 3), x, has_aux=True)
    out, vjp_fn, aux = vjp(lambda t: (t.sin(), t.cos()), x, has_aux=True)
    assert_close(aux, x.cos())
    assert_close(out, x.sin())
    v = tg.randn(3)
    (grad_x,) = vjp_fn(v)
    assert_close(grad_x, v * x.cos())


# covers: test_eager_transforms.py::TestGradTransform::test_vjp_aux_pytree
def test_vjp_aux_pytree():
    def f(x):
        return x.sin(), {"a": x.cos(), "b": [x.tan()]}

    x = tg.randn(3)
    out, vjp_fn, aux = vjp(f, x, has_aux=True)
    expected_out, expected_aux = f(x)
    assert_close(out, expected_out)
    assert_close(aux, expected_aux)
    v = tg.randn(3)
    (grad_x,) = vjp_fn(v)
    assert_close(grad_x, v * x.cos())
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            vjp(lambda x, bad=bad: (x, bad), x, has_aux=True)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            vjp(lambda x, bad=bad: (x, [x, bad]), x, has_aux=True)


# covers: test_eager_transforms.py::TestGradTransform::test_advanced_indexing
def test_advanced_indexing():
    def f2(value):
        value = value.clone()
        value[value > 0] = 0
        return value.sum()

    x = tg.randn(100)
    assert_close(grad(f2)(x), (np_(x) <= 0).astype(np.float32))


# covers: test_eager_transforms.py::TestGradTransform::test_tensor_ctor_inside_grad
def test_tensor_ctor_inside_grad():
    x = tg.tensor(3.14)
    assert_close(grad(lambda x: x * tg.tensor(2.0))(x), 2.0)


# covers: test_eager_transforms.py::TestGradTransform::test_print_captured_tensor_inside_transform
def test_print_captured_tensor_inside_transform():
    x = tg.tensor([1.0, 2.0, 3.0])
    seen = []

    def f(y):
        seen.append(repr(x))
        return y

    vjp(f, tg.randn(4))
    assert seen == [repr(x)]


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_outside
def test_no_grad_outside():
    x = tg.randn([], requires_grad=True)
    with tg.no_grad():
        y = grad(tg.sin)(x)
    assert_close(y, x.cos())
    assert not y.requires_grad


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_inside
def test_no_grad_inside():
    def f(x):
        with tg.no_grad():
            shift = x ** 2
        return x ** 2 - shift

    x = tg.randn([])
    assert_close(grad(f)(x), 2 * x)
    assert_close(grad(grad(f))(x), 2.0)
    x = tg.randn([], requires_grad=True)
    y = grad(f)(x)
    (z,) = tg.autograd.grad(y, x)
    assert_close(z, 2.0)


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_mixed
def test_no_grad_mixed():
    def f(x):
        with tg.no_grad():
            shift = x ** 2
        return x ** 2 - shift

    x = tg.randn([], requires_grad=True)
    with tg.no_grad():
        y = grad(f)(x)
    assert_close(y, 2 * x)
    assert not y.requires_grad


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_nested_simple
def test_no_grad_nested_simple():
    def h(x):
        with tg.no_grad():
            shift = grad(lambda x: 0.25 * x ** 4)(x)
        return x ** 3 - shift

    x = tg.tensor(1.5, requires_grad=True)
    y = grad(h)(x)
    assert_close(y, 3 * x ** 2)
    (z,) = tg.autograd.grad(y, x)
    assert_close(z, 6 * x)


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_nested_complicated
def test_no_grad_nested_complicated():
    def f(x):
        with tg.no_grad():
            shift = x ** 3
        return x ** 3 - shift

    def g(x):
        r1 = grad(f)(x)
        with tg.no_grad():
            shift = grad(f)(x)
        return r1 - shift

    x = tg.randn([], requires_grad=True)
    y = grad(g)(x)
    assert_close(y, 6 * x)
    (z,) = tg.autograd.grad(y, x)
    assert_close(z, 6.0)


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_value
def test_no_grad_value():
    def h(x):
        with tg.no_grad():
            gvalue, value = grad_and_value(lambda x: x ** 3)(x)
        return x ** 3 - value

    x = tg.tensor(1.6, requires_grad=True)
    y = grad(h)(x)
    assert_close(y, 3 * x ** 2)
    (z,) = tg.autograd.grad(y, x)
    assert_close(z, 6 * x)


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_outside_vjp
def test_no_grad_outside_vjp():
    x = tg.tensor(2.0, requires_grad=True)
    with tg.no_grad():
        out, vjp_fn = vjp(lambda x: x ** 2, x)
        (y,) = vjp_fn(tg.tensor(1.0))
    assert_close(y, 2 * x)
    assert not y.requires_grad
    assert not out.requires_grad


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_outside_vjp_fn
def test_no_grad_outside_vjp_fn():
    x = tg.tensor(3.14, requires_grad=True)
    out, vjp_fn = vjp(lambda x: x ** 2, x)
    with tg.no_grad():
        (y,) = vjp_fn(tg.tensor(1.0))
    assert_close(y, 2 * x)
    assert not y.requires_grad
    assert out.requires_grad
    (z,) = tg.autograd.grad(out, x)
    assert_close(z, 2 * x)


# covers: test_eager_transforms.py::TestGradTransform::test_no_grad_outside_vjp_only
def test_no_grad_outside_vjp_only():
    x = tg.tensor(3.14, requires_grad=True)
    with tg.no_grad():
        out, vjp_fn = vjp(lambda x: x ** 2, x)
    (y,) = vjp_fn(tg.tensor(1.0))
    assert_close(y, 2 * x)
    assert not out.requires_grad
    assert y.requires_grad
    (z,) = tg.autograd.grad(y, x)
    assert_close(z, 2.0)


# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_outside_grad
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_nograd_outside_grad
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_outside_vjp
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_outside_jvp
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_outside_jacrev
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_nested_grad
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_jacrev_grad
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_inside_grad
# covers: test_eager_transforms.py::TestGradTransform::test_inference_mode_restored
def test_inference_mode_around_transforms():
    x = tg.randn(3)
    with tg.inference_mode():
        y = grad(lambda x: (x ** 2).sum())(x)
    assert_close(y, 2 * x)
    with tg.inference_mode():
        with tg.no_grad():
            y = grad(lambda x: (x ** 2).sum())(x)
    assert_close(y, 2 * x)
    with tg.inference_mode():
        out, vjp_fn = vjp(lambda x: (x ** 2).sum(), x)
        (y,) = vjp_fn(tg.tensor(1.0))
    assert_close(y, 2 * x)
    t = tg.ones(3)
    with tg.inference_mode():
        _, y = jvp(lambda x: (x ** 2).sum(), (x,), (t,))
    assert_close(y, (2 * np_(x)).sum(), rtol=1e-5)
    with tg.inference_mode():
        y = jacrev(lambda x: x ** 2)(x)
    assert_close(y, np.diag(2 * np_(x)))
    s = tg.randn([])
    with tg.inference_mode():
        y = grad(grad(lambda x: x ** 3))(s)
    assert_close(y, 6 * s)
    with tg.inference_mode():
        H = jacrev(grad(lambda x: (x ** 3).sum()))(x)
    assert_close(H, np.diag(6 * np_(x)), rtol=1e-5)

    def f(x):
        with tg.inference_mode():
            c = x ** 2
        return x - c

    with tg.inference_mode():
        y = grad(lambda x: f(x).sum())(x)
    assert_close(y, np.ones(3))
    assert not tg.is_inference_mode_enabled()
    with tg.inference_mode():
        grad(lambda x: (x ** 2).sum())(tg.randn(3))
        assert tg.is_inference_mode_enabled()
    assert not tg.is_inference_mode_enabled()


# =============================================================================== TestAutogradFunction


# covers: test_eager_transforms.py::TestAutogradFunction::test_needs_input_grads
def test_needs_input_grads():
    seen = []

    class A(tg.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad_output):
            seen.append(tuple(ctx.needs_input_grad))
            x, y = ctx.saved_tensors
            return grad_output * y, None

    x, y = tg.tensor(2.0), tg.tensor(3.0)
    assert_close(grad(A.apply)(x, y), 3.0)
    assert seen == [(True, False)]


# covers: test_eager_transforms.py::TestAutogradFunction::test_set_materialize_grads
def test_set_materialize_grads():
    seen = []

    class A(tg.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x, y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.set_materialize_grads(False)

        @staticmethod
        def backward(ctx, gx, gy):
            seen.append((gx is None, gy is None))
            return gx, gy

    def f(y, x):
        x, y = A.apply(x, y)
        return x ** 2

    x, y = tg.tensor(2.0), tg.tensor(3.0)
    # grad differentiates with respect to argument 0 (y), which the output does not use
    assert_close(grad(f)(y, x), 0.0)
    assert seen == [(False, True)]


# covers: test_eager_transforms.py::TestAutogradFunction::test_function_returns_input
@pytest.mark.parametrize("mark_dirty", [True, False])
@pytest.mark.parametrize("save_tensors", ["input", "output", "neither"])
@pytest.mark.parametrize("save_for", ["jvp", "vjp"])
@pytest.mark.parametrize("inner_requires_grad", [True, False])
def test_function_returns_input(inner_requires_grad, save_for, save_tensors, mark_dirty, fwd_impl):
    fwad = pytest.importorskip("tapegrad.autograd.forward_ad")

    class A(tg.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            save = ctx.save_for_forward if save_for == "jvp" else ctx.save_for_backward
            if mark_dirty:
                ctx.mark_dirty(inputs[0])
            if save_tensors == "input":
                save(inputs[0])
            elif save_tensors == "output":
                save(output)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

        @staticmethod
        def jvp(ctx, x_t):
            return x_t.add_(0) if mark_dirty else x_t.view_as(x_t)

    def fn(x):
        return A.apply(x.clone())

    refused = save_tensors in ("input", "output") and not mark_dirty
    msg = "An input that has been returned as-is"

    def fresh():
        return tg.tensor(2.0, requires_grad=inner_requires_grad).clone()

    a, a_t = fresh(), fresh()
    if refused:
        with pytest.raises(RuntimeError, match=msg):
            grad(fn)(a)
        with pytest.raises(RuntimeError, match=msg):
            jvp(fn, (a,), (a_t,))
        with pytest.raises(RuntimeError, match=msg):
            A.apply(fresh())
        with pytest.raises(RuntimeError, match=msg):
            with fwad.dual_level():
                A.apply(fwad.make_dual(fresh(), fresh()))
        return
    assert_close(grad(fn)(a), 1.0)  # identity
    assert_close(jvp(fn, (a,), (a_t,))[1], 2.0)
    a = fresh()
    b = A.apply(a)
    assert (a is b) == mark_dirty
    with fwad.dual_level():
        a_dual = fwad.make_dual(fresh(), fresh())
        b_dual = A.apply(a_dual)
        assert_close(fwad.unpack_dual(b_dual).tangent, 2.0)
    assert (a_dual is b_dual) == mark_dirty


# ======================================================================================== TestJac


# covers: test_eager_transforms.py::TestJac::test_simple
def test_jac_simple(jacapi=None):
    for api in (jacrev, jacfwd):
        x = tg.randn(3)
        assert_close(api(tg.sin)(x), np.diag(np.cos(np_(x))))


@JAC
# covers: test_eager_transforms.py::TestJac::test_simple_not_flat
def test_jac_simple_not_flat(jacapi, fwd_impl):
    x = tg.randn(2, 3)
    y = jacapi(tg.sin)(x)
    assert_close(y, np.diag(np.cos(np_(x).reshape(-1))).reshape(2, 3, 2, 3))


@JAC
# covers: test_eager_transforms.py::TestJac::test_take
def test_jac_take(jacapi, fwd_impl):
    x = tg.rand(5)

    def func(x):
        return tg.take(x, tg.ones(3, dtype=tg.int64))

    res = jacapi(func)(x)
    assert_close(res, AF.jacobian(func, x))
    expected = np.zeros((3, 5))
    expected[:, 1] = 1
    assert_close(res, expected)


@JAC
# covers: test_eager_transforms.py::TestJac::test_diff_numel
def test_jac_diff_numel(jacapi, fwd_impl):
    x = tg.randn(2, 4)
    y = jacapi(lambda x: x[0, 1:].unsqueeze(-1))(x)
    assert tuple(y.shape) == (3, 1, 2, 4)
    expected = np.zeros((3, 1, 2, 4))
    expected[0, 0, 0, 1] = expected[1, 0, 0, 2] = expected[2, 0, 0, 3] = 1
    assert_close(y, expected)


@JAC
# covers: test_eager_transforms.py::TestJac::test_nested_jac_simple
def test_nested_jac_simple(jacapi, fwd_impl):
    x = tg.randn(3)
    y = jacapi(jacapi(lambda x: x.sin().sum()))(x)
    assert_close(y, np.diag(-np.sin(np_(x))))


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_args
def test_jac_multiple_args(jacapi, fwd_impl):
    x, y = tg.randn(3), tg.randn(3)
    assert_close(jacapi(tg.mul, argnums=1)(x, y), np.diag(np_(x)))


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_outputs_multiple_argnums
def test_jac_multiple_outputs_multiple_argnums(jacapi, fwd_impl):
    def f(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    x, y = tg.randn(3), tg.randn(3)
    z = jacapi(f, argnums=(0, 1))(x, y)
    assert isinstance(z, tuple) and len(z) == 2 and isinstance(z[0], tuple) and len(z[0]) == 2
    e = np.eye(3)
    assert_close(z, ((2 * e, 3 * e), (4 * e, 5 * e)))


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_outputs_single_argnums
def test_jac_multiple_outputs_single_argnums(jacapi, fwd_impl):
    def f(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    x, y = tg.randn(3), tg.randn(3)
    e = np.eye(3)
    z = jacapi(f, argnums=0)(x, y)
    assert isinstance(z, tuple) and len(z) == 2
    assert_close(z, (2 * e, 4 * e))
    z = jacapi(f, argnums=(0,))(x, y)
    assert isinstance(z, tuple) and isinstance(z[0], tuple)
    assert_close(z, ((2 * e,), (4 * e,)))


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_outputs_pytree
def test_jac_multiple_outputs_pytree(jacapi, fwd_impl):
    def f(x, y):
        return {"left": 2 * x + 3 * y, "right": 4 * x + 5 * y}

    x, y = tg.randn(3), tg.randn(3)
    z = jacapi(f, argnums=(0, 1))(x, y)
    e = np.eye(3)
    assert isinstance(z, dict) and isinstance(z["left"], tuple) and isinstance(z["right"], tuple)
    assert_close(z, {"left": (2 * e, 3 * e), "right": (4 * e, 5 * e)})


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_inputs_pytree
def test_jac_multiple_inputs_pytree(jacapi, fwd_impl):
    def f(a, b, c):
        a0, a1 = a
        return a0 + a1 * 2 + b * 3 + c * 4

    x = tg.randn([])
    args = ((x, x), x, x)
    assert_close(jacapi(f, argnums=(0, 1, 2))(*args), ((1.0, 2.0), 3.0, 4.0))
    assert_close(jacapi(f, argnums=(0,))(*args), ((1.0, 2.0),))
    assert_close(jacapi(f)(*args), (1.0, 2.0))


@JAC
# covers: test_eager_transforms.py::TestJac::test_dimensionality
def test_jac_dimensionality(jacapi, fwd_impl):
    x = tg.randn([])
    result = jacapi(lambda x: x)(x)
    assert result.dim() == 0
    assert_close(result, 1.0)
    x = tg.randn([1])
    result = jacapi(lambda x: x)(x)
    assert result.dim() == 2
    assert_close(result, np.ones((1, 1)))


@JAC
# covers: test_eager_transforms.py::TestJac::test_aux_tensor
def test_jac_aux_tensor(jacapi, fwd_impl):
    def f(x):
        y = x.clone()
        return y, y.cos()

    x = tg.randn(3)
    result, aux = jacapi(f, has_aux=True)(x)
    assert_close(result, np.eye(3))
    assert_close(aux, x.cos())


@JAC
# covers: test_eager_transforms.py::TestJac::test_aux_pytree
def test_jac_aux_pytree(jacapi, fwd_impl):
    def f(x):
        y = x.clone()
        return y, {"a": y.cos(), "b": [y.tan()]}

    x = tg.randn(3)
    result, aux = jacapi(f, has_aux=True)(x)
    assert_close(result, np.eye(3))
    assert_close(aux, f(x)[1])
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jacapi(lambda x, bad=bad: (x, bad), has_aux=True)(x)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jacapi(lambda x, bad=bad: (x, [x, bad]), has_aux=True)(x)


@JAC
# covers: test_eager_transforms.py::TestJac::test_outputs_can_any_pytree
def test_jac_outputs_can_any_pytree(jacapi, fwd_impl):
    x = tg.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"Expected f to be a function that has non-empty output"):
            jacapi(lambda _, output=output: output)(x)
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"expected f\(\*primals\) to return only tensors"):
            jacapi(lambda _, output=output: output)(x)
    out = jacapi(lambda x: [x, x.sum()])(x)
    assert isinstance(out, list) and len(out) == 2
    assert_close(out[1], np.ones((2, 3)))
    out = jacapi(lambda x: {"x": x, "xsum": x.sum()})(x)
    assert isinstance(out, dict) and set(out) == {"x", "xsum"}
    assert_close(out["x"], np.eye(6).reshape(2, 3, 2, 3))

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    out = jacapi(composite_output)(x)
    assert isinstance(out, list) and isinstance(out[0], tuple) and isinstance(out[0][1], dict)


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_inputs_outputs_pytree
def test_jac_multiple_inputs_outputs_pytree(jacapi, fwd_impl):
    def f(a, b, c):
        a0, a1 = a
        return a0 + a1 * 2, {"foo": b * 3 + c * 4}

    x = tg.randn([])
    args = ((x, x), x, x)
    assert_close(jacapi(f)(*args), ((1.0, 2.0), {"foo": (0.0, 0.0)}))
    assert_close(jacapi(f, argnums=(0,))(*args), (((1.0, 2.0),), {"foo": ((0.0, 0.0),)}))
    assert_close(jacapi(f, argnums=(0, 1))(*args), (((1.0, 2.0), 0.0), {"foo": ((0.0, 0.0), 3.0)}))


@JAC
# covers: test_eager_transforms.py::TestJac::test_multiple_inputs_outputs_pytree_multidim
def test_jac_multiple_inputs_outputs_pytree_multidim(jacapi, fwd_impl):
    def f(dct):
        return {"c": dct["a"].sin(), "d": dct["b"].cos()}

    x = tg.randn(3)
    result = jacapi(f)({"a": x, "b": x})
    z = np.zeros((3, 3))
    expected = {"c": {"a": np.diag(np.cos(np_(x))), "b": z}, "d": {"a": z, "b": np.diag(-np.sin(np_(x)))}}
    assert_close(result, expected)


@JAC
# covers: test_eager_transforms.py::TestJac::test_unrelated_input
def test_jac_unrelated_input(jacapi, fwd_impl):
    x, y = tg.randn(2, 3), tg.randn(2, 3)
    result = jacapi(lambda x, y: x, argnums=(0, 1))(x, y)
    assert isinstance(result, tuple)
    assert_close(result, (np.eye(6).reshape(2, 3, 2, 3), np.zeros((2, 3, 2, 3))))


@JAC
# covers: test_eager_transforms.py::TestJac::test_unrelated_output
def test_jac_unrelated_output(jacapi, fwd_impl):
    y = tg.randn(2, 3)
    assert_close(jacapi(lambda x: y)(tg.randn(2, 3)), np.zeros((2, 3, 2, 3)))


@JAC
# covers: test_eager_transforms.py::TestJac::test_empty_output
def test_jac_empty_output(jacapi):
    with pytest.raises(RuntimeError, match="xpected"):
        jacapi(lambda x, y: ())(tg.randn(3), tg.randn(3))


@JAC
# covers: test_eager_transforms.py::TestJac::test_argnums_tuple
# covers: test_eager_transforms.py::TestJac::test_argnums_effect_on_return
# covers: test_eager_transforms.py::TestJac::test_argnums_defaults_to_zero
def test_jac_argnums(jacapi, fwd_impl):
    x, y = tg.randn(3), tg.randn(3)
    z = jacapi(tg.mul, argnums=(0, 1))(x, y)
    assert len(z) == 2
    assert_close(z, (np.diag(np_(y)), np.diag(np_(x))))
    z = jacapi(tg.mul, argnums=(0,))(x, y)
    assert isinstance(z, tuple) and len(z) == 1
    assert_close(z[0], np.diag(np_(y)))
    z = jacapi(tg.mul, argnums=0)(x, y)
    assert isinstance(z, tg.Tensor)
    assert_close(z, np.diag(np_(y)))
    assert_close(jacapi(lambda x, y: x * 2 + y * 3)(x, y), 2 * np.eye(3))


@JAC
# covers: test_eager_transforms.py::TestJac::test_empty_argnums
# covers: test_eager_transforms.py::TestJac::test_out_of_bounds_argnums
# covers: test_eager_transforms.py::TestJac::test_negative_argnums
# covers: test_eager_transforms.py::TestJac::test_repeated_argnums
# covers: test_eager_transforms.py::TestJac::test_float_argnums
def test_jac_bad_argnums(jacapi):
    x = tg.randn(3)
    with pytest.raises(RuntimeError, match="must be non-empty"):
        jacapi(tg.sin, argnums=())(x)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        jacapi(tg.sin, argnums=2)(x)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        jacapi(tg.sin, argnums=-2)(x)
    with pytest.raises(RuntimeError, match="must be unique"):
        jacapi(tg.sin, argnums=(0, 0))(x)
    with pytest.raises(RuntimeError, match="must be int or Tuple"):
        jacapi(tg.sin, argnums=0.0)(x)
    with pytest.raises(RuntimeError, match="must be int"):
        jacapi(tg.mul, argnums=(1, 0.0))(x, x)


# covers: test_eager_transforms.py::TestJac::test_hessian_simple
def test_hessian_simple(fwd_impl):
    x = tg.randn(3)
    h = hessian(lambda x: x.sin())(x)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = -np.sin(np_(x)[i])
    assert_close(h, expected)


def _against_reference(f, inputs, jacapi):
    expected = AF.jacobian(f, inputs)
    result = jacapi(lambda inputs: f(*inputs))(inputs)
    assert_close(result, expected, atol=1e-5)


@JAC
# covers: test_eager_transforms.py::TestJac::test_against_reference_simple
# covers: test_eager_transforms.py::TestJac::test_against_reference_multi_input
# covers: test_eager_transforms.py::TestJac::test_against_reference_multi_input_multi_output
# covers: test_eager_transforms.py::TestJac::test_against_reference_unrelated_outputs
# covers: test_eager_transforms.py::TestJac::test_against_reference_zero_dim
# covers: test_eager_transforms.py::TestJac::test_against_reference_default_arg
def test_jac_against_reference(jacapi, fwd_impl):
    _against_reference(lambda x: 3 * x ** 2, (tg.randn(2, 3, 5),), jacapi)
    _against_reference(lambda x, y: (x.cos() * x) @ y.sin(), (tg.randn(2, 3), tg.randn(3, 5)), jacapi)
    _against_reference(lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()), (tg.randn(5, 3), tg.randn(3, 5)),
                       jacapi)
    _against_reference(lambda x, y: (x, y, x, y), (tg.randn(2), tg.randn(3)), jacapi)
    _against_reference(lambda x, y: (x.sum(), y.sum(), x * y), (tg.randn(3), tg.randn(3)), jacapi)
    _against_reference(lambda x: tg.stack([x, x, x]), (tg.randn([]),), jacapi)
    _against_reference(lambda x, y: (y.sum(), x * y), (tg.randn([]), tg.randn(1)), jacapi)

    def f(x, y, z=3.0):
        return x * y * z

    _against_reference(f, (tg.randn(3), tg.randn(3)), jacapi)


@JAC
# covers: test_eager_transforms.py::TestJac::test_inplace
def test_jac_inplace(jacapi, fwd_impl):
    def f(x, y):
        y.copy_(x)
        return y

    x, y = tg.randn(2), tg.randn(2)
    assert_close(jacapi(f, argnums=0)(x, y), np.eye(2))

    def g(x, y, z):
        x[:2] = y
        return tg.vstack([(x ** 2).sum(), (z ** 3).sum()])

    x, y, z = tg.randn(3), tg.randn(2), tg.randn(2)
    out = jacapi(g, argnums=(1, 2))(x, y, z)
    e0 = np.zeros((2, 1, 2))
    e1 = np.zeros((2, 1, 2))
    e0[0, 0] = 2 * np_(y)
    e1[1, 0] = 3 * np_(z) ** 2
    assert_close(out, (e0, e1), rtol=1e-5)


# covers: test_eager_transforms.py::TestJac::test_chunk_jacrev
def test_chunk_jacrev():
    x, y = tg.randn(10, 2), tg.randn(1, 2)

    def f(x, y):
        return (x.sin(), x + y), (x + 2, x.sum())

    expected = jacrev(f, argnums=(0, 1))(x, y)
    for chunk_size in (1, 2, 3, 4, 7, 10, 1000):
        assert_close(jacrev(f, argnums=(0, 1), chunk_size=chunk_size)(x, y), expected)
    assert_close(expected[1][1][0], np.ones((10, 2)))
    for bad in (0, -2):
        with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
            jacrev(f, argnums=(0,), chunk_size=bad)(x, y)


@JAC
# covers: test_eager_transforms.py::TestJac::test_jac_with_non_tensor_args
def test_jac_with_non_tensor_args(jacapi, fwd_impl):
    t = tg.randn(3, 3)
    actual = jacapi(lambda t, int_x: t + int_x)(t, 3)
    expected = AF.jacobian(lambda t: t + 3, t)
    assert_close(actual, expected)
    assert_close(actual, np.eye(9).reshape(3, 3, 3, 3))


# ==================================================================================== TestHessian


def _hessian_against_reference(f, inputs):
    expected = AF.hessian(f, inputs)
    result = hessian(lambda inputs: f(*inputs))(inputs)
    assert_close(result, expected, atol=1e-5)


# covers: test_eager_transforms.py::TestHessian::test_hessian_vectorize_correctness_simple
# covers: test_eager_transforms.py::TestHessian::test_hessian_vectorize_correctness_multi_input
# covers: test_eager_transforms.py::TestHessian::test_hessian_vectorize_correctness_unrelated_outputs
def test_hessian_against_reference(fwd_impl):
    _hessian_against_reference(lambda x: (3 * x ** 2).sum(), (tg.randn(2, 3, 5),))
    _hessian_against_reference(lambda x, y, z: ((x.relu() * x) @ y.sin() @ z).sum(),
                               (tg.randn(2, 3), tg.randn(3, 5), tg.randn(5, 5)))
    _hessian_against_reference(lambda x, y: (x ** 2).sum(), (tg.randn(2), tg.randn(3)))
    _hessian_against_reference(lambda x, y: tg.ones([]), (tg.randn(2), tg.randn(3)))


# covers: test_eager_transforms.py::TestHessian::test_jacfwd_different_levels
def test_jacfwd_different_levels(fwd_impl):
    # the original maps over a batch with vmap; one batch element is enough here
    n, d = 10, 2
    x1 = tg.randn(n, d)
    x2 = x1
    A = 0.1 * tg.randn(d, d)

    def loss(A, x1, x2):
        x2_hat = (A @ (x1.T)).T
        return ((x2 - x2_hat) ** 2).sum()

    hess1 = jacrev(jacrev(loss))(A, x1, x2)
    hess2 = hessian(loss)(A, x1, x2)
    assert_close(hess2, hess1, atol=1e-4)
    # closed form: d2/dA2 of sum((x - A x)^2) = 2 * kron(I, x1^T x1) arranged as (d, d, d, d)
    G = np_(x1).T @ np_(x1)
    expected = 2 * np.einsum("ik,jl->ijkl", np.eye(d), G)
    assert_close(hess1, expected, rtol=1e-4, atol=1e-4)


# ======================================================================================== TestJvp


# covers: test_eager_transforms.py::TestJvp::test_simple
def test_jvp_simple(fwd_impl):
    x, t = tg.randn(2, 3), tg.randn(2, 3)
    result = jvp(tg.sin, (x,), (t,))
    assert isinstance(result, tuple)
    assert_close(result, (x.sin(), x.cos() * t))


# covers: test_eager_transforms.py::TestJvp::test_multiple_inputs
def test_jvp_multiple_inputs(fwd_impl):
    x, y, tx, ty = (tg.randn(2, 3) for _ in range(4))
    result = jvp(lambda x, y: x * y, (x, y), (tx, ty))
    assert_close(result, (x * y, y * tx + x * ty))


# covers: test_eager_transforms.py::TestJvp::test_pytree_inputs
def test_jvp_pytree_inputs(fwd_impl):
    def f(x, y, z):
        a, b = x
        return a + 2 * b + 3 * y + 4 * z

    one = tg.tensor(1.0)
    primal_outs, tangent_outs = jvp(f, ((one, one), one, one), ((one, one), one, one))
    assert_close(primal_outs, 10.0)
    assert_close(tangent_outs, 10.0)


# covers: test_eager_transforms.py::TestJvp::test_pytree_inputs_error_cases
def test_jvp_pytree_inputs_error_cases():
    one = tg.tensor(1.0)

    def f(x):
        return x

    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(f, one, one)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(f, ((one, one), one), (one, one))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(f, ((one, one), 1), ((one, one), one))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(f, ((one, one), 1), ((1, one), one))
    with pytest.raises(RuntimeError, match="at least one Tensor"):
        jvp(f, ((),), ((),))


# covers: test_eager_transforms.py::TestJvp::test_unrelated_input
def test_jvp_unrelated_input(fwd_impl):
    x, y, tx, ty = (tg.randn(2, 3) for _ in range(4))
    assert_close(jvp(lambda x, y: x, (x, y), (tx, ty)), (x, tx))


# covers: test_eager_transforms.py::TestJvp::test_unrelated_output
def test_jvp_unrelated_output(fwd_impl):
    y = tg.randn(2, 3)
    result = jvp(lambda x: y, (tg.randn(2, 3),), (tg.randn(2, 3),))
    assert_close(result, (y, np.zeros((2, 3))))


# covers: test_eager_transforms.py::TestJvp::test_strict_mode
def test_jvp_strict_mode(fwd_impl):
    y = tg.randn(2, 3)
    with pytest.raises(RuntimeError, match="strict"):
        jvp(lambda x: (x, y), (tg.randn(2, 3),), (tg.randn(2, 3),), strict=True)


# covers: test_eager_transforms.py::TestJvp::test_multiple_outputs
def test_jvp_multiple_outputs(fwd_impl):
    x, t = tg.randn(2, 3), tg.randn(2, 3)
    result = jvp(lambda x: (tg.sin(x), tg.cos(x)), (x,), (t,))
    assert_close(result, ((x.sin(), x.cos()), (x.cos() * t, -x.sin() * t)))


# covers: test_eager_transforms.py::TestJvp::test_multiple_inputs_outputs
def test_jvp_multiple_inputs_outputs(fwd_impl):
    x, y, tx, ty = (tg.randn(2, 3) for _ in range(4))

    def f(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    assert_close(jvp(f, (x, y), (tx, ty)), (f(x, y), f(tx, ty)), atol=1e-5)


# covers: test_eager_transforms.py::TestJvp::test_jvp_new_tensor
def test_jvp_new_tensor(fwd_impl):
    x = tg.rand(10, 10)
    actual = jvp(lambda x: x + tg.tensor(0.5), (x,), (tg.zeros_like(x),))
    assert_close(actual, (x + 0.5, np.zeros((10, 10))))


# covers: test_eager_transforms.py::TestJvp::test_primals_tangents_length_mismatch
# covers: test_eager_transforms.py::TestJvp::test_nonempty_primals_and_tangents
# covers: test_eager_transforms.py::TestJvp::test_inputs_are_tuples_of_tensors
def test_jvp_argument_errors():
    x, t = tg.randn(2, 3), tg.randn(2, 3)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(tg.sin, (x,), (t, t))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(tg.sin, (x, x), (t, t, t))
    with pytest.raises(RuntimeError, match="at least one Tensor"):
        jvp(tg.sin, (), ())
    with pytest.raises(RuntimeError, match="be a tuple"):
        jvp(tg.sin, x, (t,))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(tg.sin, (x,), t)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(tg.sin, (x,), [t])
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(tg.sin, (1.0,), (t,))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(tg.sin, (x,), (1.0,))


# covers: test_eager_transforms.py::TestJvp::test_outputs_can_any_pytree
def test_jvp_outputs_can_any_pytree(fwd_impl):
    x, t = tg.randn(2, 3), tg.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): Expected f to be a function that has non-empty output"):
            jvp(lambda _, output=output: output, (x,), (t,))
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): expected f\(\*primals\) to return only tensors"):
            jvp(lambda _, output=output: output, (x,), (t,))
    out = jvp(lambda x: [x, x.sum()], (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], list) and len(out[i]) == 2
    assert_close(out[1][1], np_(t).sum(), rtol=1e-5)
    out = jvp(lambda x: {"x": x, "xsum": x.sum()}, (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], dict) and set(out[i]) == {"x", "xsum"}

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    out = jvp(composite_output, (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], list) and isinstance(out[i][0], tuple) and isinstance(out[i][0][1], dict)
    assert_close(out[1][0][1]["a"], t)


# covers: test_eager_transforms.py::TestJvp::test_aux_tensor
def test_jvp_aux_tensor(fwd_impl):
    x, t = tg.randn(3), tg.randn(3)
    with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): output of function f should be a tuple"):
        jvp(lambda t: [t, t], (x,), (t,), has_aux=True)
    with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): output of function f should be a tuple"):
        jvp(lambda t: (t, t + 2, t + 3), (x,), (t,), has_aux=True)
    out, jvp_out, aux = jvp(lambda z: (z.sin(), z.cos()), (x,), (t,), has_aux=True)
    assert_close(aux, x.cos())
    assert_close(out, x.sin())
    assert_close(jvp_out, t * x.cos())


# covers: test_eager_transforms.py::TestJvp::test_aux_pytree
def test_jvp_aux_pytree(fwd_impl):
    def f(x):
        return x.sin(), {"a": x.cos(), "b": [x.tan()]}

    x, t = tg.randn(3), tg.randn(3)
    out, jvp_out, aux = jvp(f, (x,), (t,), has_aux=True)
    expected_out, expected_aux = f(x)
    assert_close(out, expected_out)
    assert_close(aux, expected_aux)
    assert_close(jvp_out, t * x.cos())
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jvp(lambda x, bad=bad: (x, bad), (x,), (t,), has_aux=True)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jvp(lambda x, bad=bad: (x, [x, bad]), (x,), (t,), has_aux=True)


# covers: test_eager_transforms.py::TestJvp::test_jvp_inside_autograd_function
def test_jvp_inside_autograd_function(fwd_impl):
    class MySin(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            _, neg_sin_x = jvp(tg.cos, (x,), (tg.ones_like(x),))
            ctx.save_for_backward(x)
            return -neg_sin_x

        @staticmethod
        def backward(ctx, gx):
            (x,) = ctx.saved_tensors
            _, cos_x = jvp(tg.sin, (x,), (tg.ones_like(x),))
            return gx * cos_x

    x = tg.randn([], requires_grad=True)
    y = MySin.apply(x)
    assert_close(y, x.sin())
    (gx,) = tg.autograd.grad(y, x)
    assert_close(gx, x.cos())


def _fwad():
    return pytest.importorskip("tapegrad.autograd.forward_ad")


# covers: test_eager_transforms.py::TestJvp::test_autograd_function_disables_fwd_grad
def test_autograd_function_disables_fwd_grad():
    fwad = _fwad()
    seen = []

    class MySquare(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(fwad._is_fwd_grad_enabled())
            return x * x

        @staticmethod
        def backward(ctx, gx):
            return gx

    x = tg.randn(3, requires_grad=True)
    assert_close(MySquare.apply(x), np_(x) ** 2)
    assert seen == [False] and fwad._is_fwd_grad_enabled()


# covers: test_eager_transforms.py::TestJvp::test_disable_fwd_grad_outside
def test_disable_fwd_grad_outside(fwd_impl):
    fwad = _fwad()
    x = tg.randn(())
    with fwad._set_fwd_grad_enabled(False):
        _, y = jvp(tg.sin, (x,), (tg.ones_like(x),))
        assert not fwad._is_fwd_grad_enabled()
    assert fwad._is_fwd_grad_enabled()
    assert_close(y, np.cos(np_(x)))


def _shifted_square(fwad):
    def f(x):
        with fwad._set_fwd_grad_enabled(False):
            shift = x ** 2  # no tangent: a constant to the jvp
        return x ** 2 - shift

    return f


# covers: test_eager_transforms.py::TestJvp::test_disable_fwd_grad_inside
def test_disable_fwd_grad_inside(fwd_impl):
    fwad = _fwad()
    f = _shifted_square(fwad)
    x = tg.randn((), dtype=tg.float64)
    t = tg.ones_like(x)
    _, y = jvp(f, (x,), (t,))
    # the double-vjp construction differentiates in reverse mode, where the switch changes nothing:
    # there the shift is not a constant and the jvp is 0
    assert_close(y, 2 * np_(x) if fwd_impl == "forward_ad" else 0.0)
    _, y = jvp(lambda x: jvp(f, (x,), (t,))[1], (x,), (t,))
    assert_close(y, 2.0 if fwd_impl == "forward_ad" else 0.0)


# covers: test_eager_transforms.py::TestJvp::test_disable_fwd_grad_mixed
def test_disable_fwd_grad_mixed(fwd_impl):
    fwad = _fwad()
    x = tg.randn((), dtype=tg.float64)
    with fwad._set_fwd_grad_enabled(True):
        _, y = jvp(_shifted_square(fwad), (x,), (tg.ones_like(x),))
    assert_close(y, 2 * np_(x) if fwd_impl == "forward_ad" else 0.0)


# ================================================================================ TestComposability


# covers: test_eager_transforms.py::TestComposability::test_grad_grad
def test_grad_grad():
    x = tg.randn([])
    assert_close(grad(grad(tg.sin))(x), -x.sin())


# covers: test_eager_transforms.py::TestComposability::test_grad_vjp
def test_grad_vjp():
    x = tg.randn(3)

    def foo(x):
        _, vjp_fn = vjp(tg.sin, x)
        return vjp_fn(x)[0].sum()

    y = grad(foo)(x)
    expected = grad(lambda x: (x * x.cos()).sum())(x)
    assert_close(y, expected)
    xa = np_(x)
    assert_close(y, np.cos(xa) - xa * np.sin(xa))


# covers: test_eager_transforms.py::TestComposability::test_vjp_grad
def test_vjp_grad():
    x = tg.randn([])
    y, vjp_fn = vjp(grad(tg.sin), x)
    assert_close(y, x.cos())
    v = tg.randn([])
    assert_close(vjp_fn(v)[0], -x.sin() * v)


# covers: test_eager_transforms.py::TestComposability::test_vjp_vjp
def test_vjp_vjp():
    x = tg.randn(3)
    y, vjp_fn = vjp(tg.sin, x)
    assert_close(y, x.sin())
    y, vjp_fn = vjp(lambda x: vjp_fn(x)[0], x)
    assert_close(y, x * x.cos())
    # d/dx (x cos x) applied to x: x (cos x - x sin x); x cos x does not depend on x through the
    # first vjp_fn's primal (it was captured), so only the cotangent path counts: cos(x0) * x
    (z,) = vjp_fn(x)
    assert_close(z, np.cos(np_(x)) * np_(x))


# ================================================================ TestMakeFunctional (functional_call)


class _LinBuf(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = tg.nn.Linear(3, 3)
        self.register_buffer("buffer", tg.randn(3))

    def forward(self, x):
        return self.linear(x) + self.buffer


@pytest.mark.parametrize("detach_params", [True, False])
# covers: test_eager_transforms.py::TestMakeFunctional::test_using_detach_functional_call
def test_using_detach_functional_call(detach_params):
    mod = _LinBuf()
    x = tg.randn(3, 3)
    named = dict(mod.named_parameters())
    params = {k: v.detach() for k, v in named.items()} if detach_params else named
    out = functional_call(mod, (params, dict(mod.named_buffers())), x)
    assert (out.grad_fn is None) == detach_params
    assert_close(out, np_(x) @ np_(mod.linear.weight).T + np_(mod.linear.bias) + np_(mod.buffer), rtol=1e-5)


# covers: test_eager_transforms.py::TestMakeFunctional::test_parameter_tying_grad
def test_parameter_tying_grad():
    class Foo(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = tg.nn.Linear(3, 3)
            self.weight = self.linear.weight
            self.bias = self.linear.bias

        def forward(self, x):
            x = self.linear(x)
            return tg.nn.functional.linear(x, self.weight, self.bias)

    x = tg.randn(2, 3)
    mod = Foo()
    names = [n for n, _ in mod.named_parameters()]
    # as in PyTorch, the module's own names come first and the tied ones are dropped
    assert names == ["weight", "bias"]
    expected = tg.autograd.grad(mod(x).sum(), list(mod.parameters()))
    params = {n: p.detach() for n, p in mod.named_parameters()}
    # the tied names follow the replacement given under one of their names
    result = grad(lambda p, x: functional_call(mod, p, (x,)).sum())(params, x)
    assert_close([result["weight"], result["bias"]], list(expected), atol=1e-5)


# covers: test_eager_transforms.py::TestMakeFunctional::test_make_functional_state_correctly_returned_after_forward
def test_functional_call_state_restored_after_forward():
    mod = _LinBuf()
    old_w, old_b = mod.linear.weight, mod.linear.bias
    params = {"linear.weight": tg.zeros(3, 3), "linear.bias": tg.ones(3)}
    out = functional_call(mod, params, tg.randn(4, 3))
    assert_close(out, np.ones((4, 3)) + np_(mod.buffer))
    assert mod.linear.weight is old_w and mod.linear.bias is old_b


def test_functional_call_errors_and_strict():
    mod = tg.nn.Linear(2, 2)
    x = tg.randn(1, 2)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(mod, ({"weight": tg.ones(2, 2)}, {"weight": tg.ones(2, 2)}), (x,))
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'"):
        functional_call(mod, {"foo": tg.ones(2)}, (x,), strict=True)
    # a name the module does not have is set for the call only
    functional_call(mod, {"foo": tg.ones(2)}, (x,))
    assert not hasattr(mod, "foo")
    # args given as a tensor, kwargs as a dict
    out = functional_call(mod, {"weight": tg.ones(2, 2)}, x, {})
    assert_close(out, np_(x).sum(1, keepdims=True).repeat(2, 1) + np_(mod.bias), rtol=1e-5)


def test_functional_call_grad_of_mlp_against_finite_differences():
    tg.manual_seed(0)
    mlp = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 1)).double()
    x = tg.randn(5, 3, dtype=tg.float64)
    params = {k: v.detach() for k, v in mlp.named_parameters()}

    def loss(p):
        return (functional_call(mlp, p, (x,)) ** 2).sum()

    g = grad(loss)(params)
    eps = 1e-6
    for name, p in params.items():
        base = np_(p)
        fd = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            vals = []
            for d in (eps, -eps):
                arr = base.copy()
                arr[idx] += d
                q = dict(params)
                q[name] = tg.tensor(arr)
                vals.append(loss(q).item())
            fd[idx] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(np_(g[name]), fd, atol=1e-6, rtol=1e-5)


# =========================================================== perturbation confusion and nested levels


def test_perturbation_confusion_grad():
    # d/dx [ x * d/dy (x * y) ] = d/dx [ x * x ] = 2x; a confused implementation gives 4x or 3x
    x = tg.tensor(1.5)
    res = grad(lambda x: x * grad(lambda y: x * y)(x))(x)
    assert_close(res, 3.0)
    # the classic: d/dx [ d/dy (x * y) at y = x ] = d/dx x = 1
    assert_close(grad(lambda x: grad(lambda y: x * y)(x))(x), 1.0)


def test_perturbation_confusion_jvp(fwd_impl):
    # the same with forward mode: jvp of x -> d/dy (x * y)|_{y=x} along 1 is 1
    x, one = tg.tensor(2.0), tg.tensor(1.0)
    _, t = jvp(lambda x: jvp(lambda y: x * y, (x,), (one,))[1], (x,), (one,))
    assert_close(t, 1.0)
    # jvp over grad (forward over reverse): d/dx [x^2 * d/dy (x y^2)|_{y=x}] = d/dx 2 x^4 = 8 x^3
    # (treating the inner y-derivative as also varying x would count the x path twice)
    _, t = jvp(lambda x: x * x * grad(lambda y: x * y * y)(x), (x,), (one,))
    assert_close(t, 64.0)


def test_nested_jacobians(fwd_impl):
    x = tg.randn(3, dtype=tg.float64)

    def f(x):
        return (x ** 3).sum() + x[0] * x[1] * x[2]

    xa = np_(x)
    expected = np.diag(6 * xa)
    expected[0, 1] = expected[1, 0] = xa[2]
    expected[0, 2] = expected[2, 0] = xa[1]
    expected[1, 2] = expected[2, 1] = xa[0]
    assert_close(jacrev(jacrev(f))(x), expected)
    assert_close(jacfwd(jacrev(f))(x), expected)
    assert_close(jacrev(jacfwd(f))(x), expected)
    assert_close(jacfwd(jacfwd(f))(x), expected)
    assert_close(hessian(f)(x), expected)
    assert_close(grad(grad(lambda s: s ** 4))(tg.tensor(2.0, dtype=tg.float64)), 48.0)


# ============================================================================= more carried-over tests


# covers: test_eager_transforms.py::TestGradTransform::test_linear_nd_inplace_activation
def test_linear_nd_inplace_activation():
    # the original also records which aten ops run (a dispatch mode); the values are what carry over
    x = tg.randn(2, 3, 8, dtype=tg.float64)
    w = tg.randn(16, 8, dtype=tg.float64)
    b = tg.randn(16, dtype=tg.float64)

    def f(x, w, b):
        return tg.nn.functional.linear(x, w, b).relu_().sum()

    result = grad(f, argnums=(0, 1, 2))(x, w, b)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    (xr @ wr.t() + br).relu().sum().backward()
    assert_close(result, (xr.grad, wr.grad, br.grad))
    mask = (np_(x) @ np_(w).T + np_(b)) > 0
    assert_close(result[2], mask.reshape(-1, 16).sum(0).astype(np.float64))


# covers: test_eager_transforms.py::TestGradTransform::test_advanced_indexing
def test_advanced_indexing_zero_dim_mask():
    def f(value):
        log_prob = tg.ones(())
        val = tg.zeros(()) > 0
        log_prob[val] = 0
        return value

    result = grad(f)(tg.randn(()))
    assert_close(result, 1.0)


# covers: test_eager_transforms.py::TestAutogradFunction::test_once_differentiable_autograd_vjp
def test_once_differentiable_autograd_vjp():
    class NumpyCube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x_np = x.detach().numpy()
            return tg.tensor(ctx.x_np ** 3)

        @staticmethod
        @tg.autograd.once_differentiable
        def backward(ctx, grad_output):
            return grad_output * tg.tensor(3 * ctx.x_np ** 2)

    x = tg.randn([], requires_grad=True)
    grad_y = tg.randn([], requires_grad=True)
    _, vjp_fn = vjp(NumpyCube.apply, x)
    (gx,) = vjp_fn(grad_y)
    assert_close(gx, 3 * np_(x) ** 2 * np_(grad_y), rtol=1e-5)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        gx.backward()


# covers: test_eager_transforms.py::TestComposability::test_jvp_supports_saved_tensor_hooks
def test_jvp_supports_saved_tensor_hooks(fwd_impl):
    def f(x):
        return tg.sin(x).sum()

    def g(x):
        with tg.autograd.graph.save_on_cpu():
            return f(x)

    x, t = tg.randn(3), tg.randn(3)
    with tg.autograd.graph.save_on_cpu():
        _, a = jvp(f, (x,), (t,))
    _, b = jvp(g, (x,), (t,))
    expected = (np.cos(np_(x)) * np_(t)).sum()
    assert_close(a, expected, rtol=1e-5)
    assert_close(b, expected, rtol=1e-5)


@JAC
# covers: test_eager_transforms.py::TestJac::test_against_reference_correctness_different_devices
def test_jac_against_reference_cpu_device(jacapi, fwd_impl):
    # the only device here is the CPU: `.to(device="cpu")` is the identity
    _against_reference(lambda x, y: (x * y, (x * y).to(device="cpu")), (tg.randn(3), tg.randn(3)), jacapi)


# covers: test_eager_transforms.py::TestJac::test_chunk_jacrev_chunksize_one
def test_chunk_jacrev_chunksize_one():
    # the half of the original that does not need vmap: chunk_size=1 with a custom function whose
    # backward has a data-dependent shape operation
    class Identity(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            grad_output.nonzero()
            return grad_output

    x = tg.randn(3, 3)
    actual = jacrev(Identity.apply, chunk_size=1)(x)
    assert_close(actual, AF.jacobian(Identity.apply, x, vectorize=False))
    assert_close(actual, np.eye(9).reshape(3, 3, 3, 3))


# covers: test_eager_transforms.py::TestExamplesCorrectness::test_maml_regression
def test_maml_regression():
    # MAML's inner step with tg.func.grad inside an outer reverse pass, against the same step written
    # with autograd.grad(create_graph=True); the original maps the tasks with vmap, here they loop
    tg.manual_seed(0)
    net = tg.nn.Sequential(tg.nn.Linear(1, 40), tg.nn.ReLU(), tg.nn.Linear(40, 40), tg.nn.ReLU(),
                           tg.nn.Linear(40, 1))
    params = dict(net.named_parameters())
    rng = np.random.default_rng(0)

    def fnet(p, x):
        return functional_call(net, p, (x,))

    def mse(a, b):
        return ((a - b) ** 2).mean()

    def task_loss(use_transform, x1, y1, x2, y2):
        def inner_loss(p, x1, y1):
            return mse(fnet(p, x1), y1)

        if use_transform:
            grads = grad(inner_loss)(params, x1, y1)
        else:
            names = list(params)
            gs = tg.autograd.grad(inner_loss(params, x1, y1), [params[n] for n in names], create_graph=True)
            grads = dict(zip(names, gs))
        new = {k: params[k] - 0.1 * grads[k] for k in params}
        return mse(fnet(new, x2), y2)

    tasks = []
    for _ in range(3):
        a, ph = rng.uniform(0.1, 0.5), rng.uniform(0, np.pi)
        xs = [rng.uniform(-5, 5, (10, 1)) for _ in range(2)]
        tasks.append([tg.tensor(v, dtype=tg.float32) for x in xs for v in (x, a * np.sin(x + ph))])
    plist = list(params.values())
    res = tg.autograd.grad(sum(task_loss(True, *t) for t in tasks), plist)
    exp = tg.autograd.grad(sum(task_loss(False, *t) for t in tasks), plist)
    assert_close(list(res), list(exp), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
# covers: test_eager_transforms.py::TestExamplesCorrectness::test_lennard_jones_batched_jac
def test_lennard_jones_jac(jac, fwd_impl):
    # forces from the Jacobian of an energy model, trained through the Jacobian; per sample in a loop
    # (the original maps jac over the batch with vmap) against autograd.functional.jacobian
    jacapi = jacfwd if jac == "jacfwd" else jacrev
    tg.manual_seed(0)
    sigma, epsilon = 0.5, 4.0
    r = tg.tensor(np.linspace(0.5, 2 * sigma, 12), dtype=tg.float32)
    drs = tg.outer(r, tg.tensor([1.0, 0.0, 0.0]))
    norms = drs.norm(dim=1).reshape(-1, 1)
    energies = epsilon * ((sigma / norms) ** 12 - (sigma / norms) ** 6)
    forces = -epsilon * ((-12 * sigma ** 12 / norms ** 13) + (6 * sigma ** 6 / norms ** 7)) * drs
    model = tg.nn.Sequential(tg.nn.Linear(1, 16), tg.nn.Tanh(), tg.nn.Linear(16, 16), tg.nn.Tanh(),
                             tg.nn.Linear(16, 1))

    def predict(use_transform):
        e = model(norms)
        fs = []
        for i in range(norms.shape[0]):
            n_i = norms[i]
            if use_transform:
                d = jacapi(model)(n_i).reshape(1)
            else:
                d = AF.jacobian(model, n_i, create_graph=True).reshape(1)
            fs.append(-d * drs[i] / n_i)
        return e, tg.stack(fs)

    def loss(e, f):
        return ((energies - e) ** 2).mean() + 0.01 * ((forces - f) ** 2).mean() / 3

    res = tg.autograd.grad(loss(*predict(True)), list(model.parameters()))
    exp = tg.autograd.grad(loss(*predict(False)), list(model.parameters()))
    assert_close(list(res), list(exp), atol=1e-4, rtol=1e-4)


# covers: test_eager_transforms.py::TestHigherOrderOperatorInteraction::test_grad_name_wrapping
def test_grad_name_wrapping():
    def my_fn(x):
        return x.sum()

    assert grad(my_fn).__name__ == "my_fn"
    assert jacrev(my_fn).__name__ == "my_fn" and jacfwd(my_fn).__name__ == "my_fn"


# covers: test_eager_transforms.py::TestHigherOrderOperatorInteraction::test_functional_call_multiple_dicts
def test_functional_call_multiple_dicts():
    mod = tg.nn.Linear(1, 1)
    x = tg.randn(1, 1)
    out = functional_call(mod, ({"weight": tg.zeros(1, 1)}, {"bias": tg.ones(1)}), x)
    assert_close(out, [[1.0]])


# covers: test_eager_transforms.py::TestGradTrackingTensorToList::test_tolist_with_grad
# covers: test_eager_transforms.py::TestGradTrackingTensorToList::test_tolist_multidimensional_grad
def test_tolist_inside_grad():
    seen = []

    def f(x):
        seen.append(x.tolist())
        return (x ** 2).sum()

    assert_close(grad(f)(tg.tensor([1.0, 2.0, 3.0], requires_grad=True)), [2.0, 4.0, 6.0])
    assert seen == [[1.0, 2.0, 3.0]]

    def g(x):
        seen.append(x.tolist())
        return x.sum()

    assert_close(grad(g)(tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])), np.ones((2, 3)))
    assert seen[-1] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


# covers: test_eager_transforms.py::TestGradTrackingTensorToList::test_tolist_nested_grad
def test_tolist_nested_grad():
    def f(x):
        def g(y):
            assert isinstance(y.tolist(), list)
            return (y ** 2).sum()

        assert isinstance(x.tolist(), list)
        return grad(g)(x).sum()

    assert_close(grad(f)(tg.tensor([1.0, 2.0, 3.0], requires_grad=True)), [2.0, 2.0, 2.0])


# covers: test_eager_transforms.py::TestComposability::test_autograd_functional_jacrev_inside_transform
# covers: test_eager_transforms.py::TestComposability::test_autograd_functional_vjp_inside_transform
# covers: test_eager_transforms.py::TestComposability::test_autograd_functional_jvp_inside_transform
def test_autograd_functional_inside_transform():
    # the grad half of the originals (their vmap half is out of scope): a result without history
    # inside a transform would be a silent zero derivative, so the call is refused
    x = tg.randn([])
    calls = [
        lambda x: AF.jacobian(lambda x: x.sin().sum(), x),
        lambda x: AF.vjp(lambda x: x.sin().sum(), x)[1],
        lambda x: AF.jvp(lambda x: x.sin().sum(), (x,), (tg.ones_like(x),))[1],
        lambda x: AF.hessian(lambda x: x.sin().sum(), x),
        lambda x: AF.hvp(lambda x: x.sin().sum(), x, tg.ones_like(x))[1],
        lambda x: AF.vhp(lambda x: x.sin().sum(), x, tg.ones_like(x))[1],
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="tg.autograd.functional"):
            grad(call)(x)
    # with create_graph=True the derivative goes through: d/dx cos(x) = -sin(x)
    assert_close(grad(lambda x: AF.jacobian(lambda x: x.sin().sum(), x, create_graph=True))(x), -x.sin())


# ===================================================================================== TestLinearize

from tapegrad.func import linearize  # noqa: E402


# covers: test_eager_transforms.py::TestLinearize::test_linearize_basic
# covers: test_eager_transforms.py::TestLinearize::test_linearize_return
def test_linearize_basic_and_return(fwd_impl):
    x_p, x_t = tg.randn(3, 1), tg.randn(3, 1)
    for fn in (lambda x: x.cos(), lambda x: (x.cos(), x.sum())):
        out, jvp_fn = linearize(fn, x_p)
        exp_out, exp_t = jvp(fn, (x_p,), (x_t,))
        assert_close(out, exp_out)
        assert_close(jvp_fn(x_t), exp_t)
    # the same linearization serves several tangents
    out, jvp_fn = linearize(lambda x: x.cos(), x_p)
    assert_close(jvp_fn(tg.ones(3, 1)), -np.sin(np_(x_p)))
    assert_close(jvp_fn(2 * tg.ones(3, 1)), -2 * np.sin(np_(x_p)))


# covers: test_eager_transforms.py::TestLinearize::test_linearize_composition_grad
def test_linearize_composition_grad(fwd_impl):
    x_p, x_t = tg.randn(3), tg.randn(3)
    z = tg.ones(3)

    def fn(x):
        return grad(lambda x: z @ x)(x)

    _, jvp_fn = linearize(fn, x_p)
    assert_close(jvp_fn(x_t), jvp(fn, (x_p,), (x_t,))[1])
    assert_close(jvp_fn(x_t), np.zeros(3))


# covers: test_eager_transforms.py::TestLinearize::test_linearize_nested_input_nested_output
def test_linearize_nested_input_nested_output(fwd_impl):
    x_p, x_t, y_p, y_t, z_p, z_t = (tg.randn(3, 1) for _ in range(6))

    def fn(arg):
        x, (y, z) = arg["x"], arg["yz"]
        return {"a": x.sum(), "b": {"c": y + z, "d": (x * z, y.exp())}}

    inp_p = {"x": x_p, "yz": (y_p, z_p)}
    inp_t = {"x": x_t, "yz": (y_t, z_t)}
    out, jvp_fn = linearize(fn, inp_p)
    exp_out, exp_t = jvp(fn, (inp_p,), (inp_t,))
    assert_close(out, exp_out)
    assert_close(jvp_fn(inp_t), exp_t)


# covers: test_eager_transforms.py::TestLinearize::test_linearize_errors
def test_linearize_errors():
    # the original runs on CUDA only for its device check; the argspec, shape and dtype checks carry
    x_p, x_t = tg.randn(3, 1), tg.randn(3, 1)
    _, jvp_fn = linearize(lambda x: x.sin(), x_p)
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn((x_t, x_t))
    with pytest.raises(RuntimeError, match="in flattened pytree doesn't match the shape"):
        jvp_fn(x_t.unsqueeze(0))
    with pytest.raises(RuntimeError, match="in flattened pytree doesn't match the dtype"):
        jvp_fn(x_t.to(tg.float64))
