"""Custom operations through the class spelling, ``tg.Function`` (API.md §3.1 and §3.2).

Gradients are compared with the float64 finite-difference oracle of ``conftest.check_grads`` or with
the same math written in NumPy.
"""

import numpy as np
import pytest
from oracles import check_grads, numeric_grad

import tapegrad as tg


def f64(data, requires_grad=False):
    return tg.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


# --- apply: argument binding, the caller's inputs, grad mode ------------------------------------------


class Affine(tg.Function):
    """y = x * scale + shift, with defaults for both constants."""

    @staticmethod
    def forward(ctx, x, scale=2.0, shift=0.0):
        ctx.scale = scale
        return x * scale + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None, None


@pytest.mark.parametrize(
    "args, kwargs, scale, shift",
    [
        ((), {}, 2.0, 0.0),
        ((3.0,), {}, 3.0, 0.0),
        ((), {"shift": 1.5}, 2.0, 1.5),
        ((), {"shift": -1.0, "scale": 0.5}, 0.5, -1.0),
        ((4.0, 2.0), {}, 4.0, 2.0),
    ],
)
def test_apply_binds_defaults_and_keywords(args, kwargs, scale, shift):
    X = np.array([1.0, -2.0, 0.5])
    x = f64(X, requires_grad=True)
    y = Affine.apply(x, *args, **kwargs)
    np.testing.assert_allclose(y.detach().numpy(), X * scale + shift)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda t: t * scale + shift, [X], 0))


def test_apply_accepts_every_argument_by_keyword():
    x = f64([1.0, 2.0], requires_grad=True)
    y = Affine.apply(shift=1.0, x=x, scale=-3.0)
    np.testing.assert_allclose(y.detach().numpy(), [-2.0, -5.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-3.0, -3.0])


def test_apply_reports_bad_arguments_with_the_function_name():
    x = f64([1.0])
    with pytest.raises(TypeError, match="Affine") as e:
        Affine.apply(x, 1.0, 2.0, 3.0)
    assert "too many" in str(e.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        Affine.apply(x, bogus=1)
    with pytest.raises(TypeError, match="Affine"):
        Affine.apply()
    # the library is still usable after the refusals
    assert Affine.apply(x).tolist() == [2.0]


class Probe(tg.Function):
    """Records what forward sees of its input."""

    seen = {}

    @staticmethod
    def forward(ctx, x):
        Probe.seen.update(
            obj=x,
            requires_grad=x.requires_grad,
            grad_fn=x.grad_fn,
            is_leaf=x.is_leaf,
            grad_enabled=tg.is_grad_enabled(),
            version=x._version,
            inner_requires_grad=(x * 2).requires_grad,
        )
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        Probe.seen["backward_grad_enabled"] = tg.is_grad_enabled()
        return grad * 2


def test_forward_gets_the_callers_tensor_with_grad_mode_off():
    # As PyTorch 2.x: forward receives the caller's own object, with its history, under no_grad
    # (what it computes from it has none).
    a = f64([1.0, 2.0], requires_grad=True)
    b = a * 1
    b.add_(1)  # version 1
    y = Probe.apply(b)
    seen = Probe.seen
    assert seen["obj"] is b
    assert seen["requires_grad"] is True
    assert seen["grad_fn"] is not None and seen["grad_fn"].name() == b.grad_fn.name()
    assert seen["is_leaf"] is False
    assert seen["grad_enabled"] is False
    assert seen["inner_requires_grad"] is False
    assert seen["version"] == b._version == 1
    # outside, grad mode is back on and the op recorded exactly one node over b's history
    assert tg.is_grad_enabled()
    assert y.grad_fn.name() == "ProbeBackward"
    assert [fn.name() for fn, _ in y.grad_fn.next_functions] == [b.grad_fn.name()]
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    Probe.seen = {}


def test_input_returned_unchanged_is_a_new_object_with_the_node():
    # As PyTorch: the caller's tensor returned as it is comes back as a new object, a view of the
    # input carrying this function's node; the input keeps its own history.
    class Same(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    a = f64([1.0, 2.0], requires_grad=True)
    b = a * 1
    b_node = b.grad_fn.name()
    y = Same.apply(b)
    assert y is not b
    assert y.grad_fn.name() == "SameBackward"
    assert b.grad_fn.name() == b_node
    y.sum().backward(retain_graph=True)
    assert a.grad.tolist() == [3.0, 3.0]
    # the same memory, and a view of b: a write through y is seen in b, and (as PyTorch) the
    # view's custom backward may then no longer run
    with tg.no_grad():
        y[0] = 7.0
    assert b.tolist() == [7.0, 2.0]
    with pytest.raises(RuntimeError, match="created inside a custom Function"):
        y.sum().backward()


@pytest.mark.parametrize("what", ["hook", "nested_backward", "detach_"])
def test_what_forward_does_to_the_callers_tensor_reaches_it(what):
    # As PyTorch (same values): forward holds the caller's object, so a hook it registers, a
    # backward it runs under enable_grad, or a detach_ it does act on the caller's tensor.
    class Touch(tg.Function):
        @staticmethod
        def forward(ctx, x):
            if what == "hook":
                x.register_hook(lambda g: g * 10)
            elif what == "nested_backward":
                with tg.enable_grad():
                    (x * 2).sum().backward(retain_graph=True)
            else:
                x.detach_()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = f64([1.0, 2.0], requires_grad=True)
    b = a * 3
    y = Touch.apply(b)
    (y.sum() + b.sum()).backward()
    # d/da of 2*b + b with b = 3a is 9; the hook makes b's gradient 10x; the nested backward adds
    # d(2b)/da = 6 first; after detach_, b has no history, and only y's path (its edge was taken
    # before forward ran) reaches a: 2 * 3 = 6
    expected = {"hook": 90.0, "nested_backward": 15.0, "detach_": 6.0}[what]
    assert a.grad.tolist() == [expected, expected]
    assert b.is_leaf is (what == "detach_")


def test_forward_shares_memory_with_the_caller_tensor():
    class WriteThrough(tg.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(10)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 10

    t = f64([1.0, 2.0])
    WriteThrough.apply(t)
    assert t.tolist() == [10.0, 20.0]


def test_tensors_inside_containers_do_not_take_part():
    class SumList(tg.Function):
        @staticmethod
        def forward(ctx, xs, w):
            return xs[0] * w + xs[1]

        @staticmethod
        def backward(ctx, grad):
            return None, grad * 7

    x0 = f64([7.0], requires_grad=True)
    x1 = f64([1.0], requires_grad=True)
    w = f64([3.0], requires_grad=True)
    y = SumList.apply([x0, x1], w)
    assert y.requires_grad
    assert len(y.grad_fn.next_functions) == 1  # only w is an input of the node
    y.backward()
    assert w.grad.tolist() == [7.0]
    assert x0.grad is None and x1.grad is None
    # with no direct tensor argument requiring grad, nothing is recorded
    z = SumList.apply([x0, x1], f64([3.0]))
    assert not z.requires_grad and z.grad_fn is None


def test_nothing_recorded_under_no_grad():
    x = f64([1.0], requires_grad=True)
    with tg.no_grad():
        y = Affine.apply(x)
    assert y.grad_fn is None and not y.requires_grad
    assert y.tolist() == [2.0]


# --- ctx.save_for_backward, saved_tensors, saved_variables -------------------------------------------


class Marker:
    """An arbitrary Python object to save."""


def test_save_for_backward_keeps_any_python_object():
    marker = Marker()
    got = {}

    class SaveMany(tg.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x, k, None, "text", marker, scale=k, tag=marker, inp=x)
            return x * k

        @staticmethod
        def backward(ctx, grad):
            got["tensors"] = ctx.saved_tensors
            got["variables"] = ctx.saved_variables
            return grad * ctx.saved_variables.scale, None

    X = np.array([1.0, 2.0, 3.0])
    x = f64(X, requires_grad=True)
    SaveMany.apply(x, 4.0).sum().backward()
    t = got["tensors"]
    assert isinstance(t, tuple) and len(t) == 5
    np.testing.assert_array_equal(t[0].detach().numpy(), X)
    assert t[1] == 4.0 and t[2] is None and t[3] == "text" and t[4] is marker
    v = got["variables"]
    assert set(v) == {"scale", "tag", "inp"}
    assert v["scale"] == v.scale == 4.0
    assert v["tag"] is marker and v.tag is marker
    np.testing.assert_array_equal(v.inp.detach().numpy(), X)
    with pytest.raises(AttributeError, match="nope"):
        _ = v.nope
    with pytest.raises(KeyError):
        v["nope"]
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_saved_tensor_reads_back_the_same_values_and_gradient():
    # y = x * w with both saved; dy/dx = w, dy/dw = x (checked against finite differences)
    class Mul(tg.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w=w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.saved_variables.w, grad * x

    rng = np.random.default_rng(1)
    check_grads(Mul.apply, [rng.standard_normal(4), rng.standard_normal(4)])


def test_save_for_backward_at_most_once():
    class Twice(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(RuntimeError, match="at most once"):
        Twice.apply(f64([1.0], requires_grad=True))


@pytest.mark.parametrize("method", ["save_for_backward", "mark_dirty", "mark_non_differentiable"])
def test_forward_only_methods_are_refused_in_backward(method):
    class Late(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            getattr(ctx, method)(grad)
            return grad

    x = f64([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{method} can only be called inside forward"):
        Late.apply(x).backward()


def test_nothing_saved_reads_back_empty():
    got = {}

    class NoSave(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            got["t"], got["v"] = ctx.saved_tensors, dict(ctx.saved_variables)
            return grad * 3

    NoSave.apply(f64([1.0], requires_grad=True)).backward()
    assert got == {"t": (), "v": {}}


def test_saved_values_after_the_graph_is_freed():
    holder = {}

    class Keep(tg.Function):
        @staticmethod
        def forward(ctx, x):
            holder["ctx"] = ctx
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2

    y = Keep.apply(f64([1.0], requires_grad=True))
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = holder["ctx"].saved_tensors
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# --- ctx.needs_input_grad, free attributes ----------------------------------------------------------


class Weighted(tg.Function):
    seen = []

    @staticmethod
    def forward(ctx, x, weight, label, bias=None):
        Weighted.seen.append(("forward", tuple(ctx.needs_input_grad), ctx.needs_input_grad.weight))
        ctx.save_for_backward(x, weight)
        out = x * weight
        return out if bias is None else out + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        n = ctx.needs_input_grad
        Weighted.seen.append(("backward", tuple(n), n.x, n["weight"], n.label, n.bias))
        return (
            grad * weight if n.x else None,
            grad * x if n.weight else None,
            None,
            grad if n.bias else None,
        )


def test_needs_input_grad_by_position_and_by_name():
    Weighted.seen.clear()
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0])
    b = f64([0.5, 0.5], requires_grad=True)
    Weighted.apply(x, w, "label", bias=b).sum().backward()
    assert Weighted.seen == [
        ("forward", (True, False, False, True), False),
        ("backward", (True, False, False, True), True, False, False, True),
    ]
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad is None
    assert b.grad.tolist() == [1.0, 1.0]

    Weighted.seen.clear()
    w.requires_grad = True
    Weighted.apply(f64([1.0, 2.0]), w, "label").sum().backward()
    assert Weighted.seen[1] == ("backward", (False, True, False, False), False, True, False, False)
    assert w.grad.tolist() == [1.0, 2.0]


def test_needs_input_grad_unknown_name():
    got = {}

    class Ask(tg.Function):
        @staticmethod
        def forward(ctx, x):
            try:
                _ = ctx.needs_input_grad.weight
            except AttributeError as e:
                got["error"] = str(e)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    Ask.apply(f64([1.0], requires_grad=True))
    assert "weight" in got["error"]


def test_free_attributes_on_ctx():
    class Pow(tg.Function):
        @staticmethod
        def forward(ctx, x, p):
            ctx.p = p
            ctx.note = {"calls": 0}
            ctx.x = x
            return x**p

        @staticmethod
        def backward(ctx, grad):
            ctx.note["calls"] += 1
            return grad * ctx.p * ctx.x ** (ctx.p - 1), None

    X = np.array([0.5, 1.5, 2.0])
    check_grads(lambda t: Pow.apply(t, 3), [X])
    x = f64(X, requires_grad=True)
    Pow.apply(x, 2.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.5 * X**1.5)


# --- what backward returns ---------------------------------------------------------------------------


def make_scale(result):
    """y = 2 x + 3 w, with backward returning its gradients in the form ``result(gx, gw)``."""

    class Scale(tg.Function):
        @staticmethod
        def forward(ctx, x, w, note="n"):
            return x * 2 + w * 3

        @staticmethod
        def backward(ctx, grad):
            return result(grad * 2, grad * 3)

    return Scale


@pytest.mark.parametrize(
    "result",
    [
        lambda gx, gw: (gx, gw, None),
        lambda gx, gw: [gx, gw, None],
        lambda gx, gw: (gx, gw, None, None),  # extra trailing None are allowed, as in PyTorch
        lambda gx, gw: {"x": gx, "w": gw},
        lambda gx, gw: {"w": gw, "x": gx, "note": None},
    ],
    ids=["tuple", "list", "extra-none", "dict", "dict-with-none"],
)
def test_backward_result_forms(result):
    Scale = make_scale(result)
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0], requires_grad=True)
    Scale.apply(x, w).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert w.grad.tolist() == [3.0, 3.0]


def test_backward_dict_missing_name_means_none():
    Scale = make_scale(lambda gx, gw: {"w": gw})
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0], requires_grad=True)
    Scale.apply(x, w).sum().backward()
    assert x.grad is None
    assert w.grad.tolist() == [3.0, 3.0]


def test_backward_single_tensor_for_single_argument():
    class Sin(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

    check_grads(Sin.apply, [np.linspace(-2, 2, 7)])


def test_broadcastable_gradient_is_summed_down():
    # backward hands back the gradient in the output's (3, 4) shape for a (4,) and a (3, 1) input
    class AddB(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, grad * 3

    a = f64(np.arange(4.0), requires_grad=True)
    b = f64(np.arange(3.0).reshape(3, 1), requires_grad=True)
    G = np.arange(12.0).reshape(3, 4)
    AddB.apply(a, b).backward(f64(G))
    np.testing.assert_allclose(a.grad.numpy(), (2 * G).sum(axis=0))
    np.testing.assert_allclose(b.grad.numpy(), (3 * G).sum(axis=1, keepdims=True))


@pytest.mark.parametrize(
    "result, words",
    [
        (lambda gx, gw: (gx, gw, None, gx), ["incorrect number of gradients", "expected 3", "got 4"]),
        (lambda gx, gw: gx, ["incorrect number of gradients", "expected 3", "got 1"]),
        (lambda gx, gw: (gx, gw), ["incorrect number of gradients", "expected 3", "got 2"]),
        (lambda gx, gw: (gx, tg.ones(5, dtype=tg.float64), None), ["argument 'w'", "[5]", "[2]"]),
        (lambda gx, gw: (gx, tg.ones(2, 3, dtype=tg.float64), None), ["argument 'w'", "[2, 3]"]),
        (lambda gx, gw: (gx, gw.numpy(), None), ["argument 'w'", "ndarray"]),
        (lambda gx, gw: (1.0, gw, None), ["argument 'x'", "float"]),
        (lambda gx, gw: (gx, gw, gx), ["argument 'note'", "not a Tensor"]),
        (lambda gx, gw: {"x": gx, "weight": gw}, ["unknown argument 'weight'", "x, w, note"]),
    ],
    ids=["too-many", "one", "too-few", "wrong-shape", "not-reducible", "ndarray", "float", "non-tensor-arg", "unknown"],
)
def test_malformed_backward_result_names_function_and_parameter(result, words):
    Scale = make_scale(result)
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0], requires_grad=True)
    y = Scale.apply(x, w)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward(retain_graph=True)
    msg = str(e.value)
    assert "Scale" in msg
    for word in words:
        assert word in msg, msg
    assert x.grad is None and w.grad is None


class Boom(Exception):
    pass


def test_exception_in_forward_reaches_caller_unchanged():
    err = Boom("from forward")

    class Fails(tg.Function):
        @staticmethod
        def forward(ctx, x):
            raise err

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(Boom) as e:
        Fails.apply(f64([1.0], requires_grad=True))
    assert e.value is err
    assert any(entry.name == "forward" for entry in e.traceback)
    # a correct call right after works
    assert Affine.apply(f64([1.0])).tolist() == [2.0]


def test_exception_in_backward_reaches_caller_and_graph_stays_usable():
    err = KeyError("from backward")
    calls = []

    class FailsOnce(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            calls.append(1)
            if len(calls) == 1:
                raise err
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = f64([1.5, -2.0], requires_grad=True)
    y = FailsOnce.apply(x).sum()
    with pytest.raises(KeyError) as e:
        y.backward(retain_graph=True)
    assert e.value is err
    assert any(entry.name == "backward" for entry in e.traceback)
    assert x.grad is None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])


# --- several outputs, non-tensor outputs -------------------------------------------------------------


def test_several_outputs_each_get_their_gradient():
    got = []

    class SinCos(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), "a label", x.cos(), 7

        @staticmethod
        def backward(ctx, g_sin, g_label, g_cos, g_int):
            got.append((g_label, g_int))
            (x,) = ctx.saved_tensors
            return g_sin * x.cos() - g_cos * x.sin()

    x0 = np.array([0.3, -1.2, 2.0])
    s, label, c, k = SinCos.apply(f64(x0))
    assert (label, k) == ("a label", 7)
    np.testing.assert_allclose(s.numpy(), np.sin(x0))
    np.testing.assert_allclose(c.numpy(), np.cos(x0))

    def f(t):
        s, _, c, _ = SinCos.apply(t)
        return s * 3 + c * c

    check_grads(f, [x0])
    assert got and all(g == (None, None) for g in got)


def test_unused_output_gets_zero_gradient_by_default():
    got = []

    class Two(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, (x * 3).sum()

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1.tolist(), g2.shape, g2.tolist()))
            return g1 * 2 + g2 * 3

    x = f64([1.0, 2.0], requires_grad=True)
    a, _ = Two.apply(x)
    a.sum().backward()
    assert got == [([1.0, 1.0], (), 0.0)]
    assert x.grad.tolist() == [2.0, 2.0]


def test_set_materialize_grads_false_gives_none():
    got = []

    class Two(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1 is None, g2 is None))
            out = None
            if g1 is not None:
                out = g1 * 2
            if g2 is not None:
                out = g2 * 3 if out is None else out + g2 * 3
            return out

    x = f64([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    b.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    a.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert got == [(True, False), (False, True)]


def test_forward_returning_only_non_tensors():
    class Describe(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x.shape, "done"

        @staticmethod
        def backward(ctx, *grads):
            return None

    assert Describe.apply(f64([[1.0, 2.0]], requires_grad=True)) == ((1, 2), "done")


def test_forward_returning_bad_type_is_a_type_error():
    class Bad(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return {"y": x}

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(TypeError, match="Bad.forward must return a Tensor or a tuple"):
        Bad.apply(f64([1.0], requires_grad=True))


# --- mark_dirty -------------------------------------------------------------------------------------


class SquareInPlace(tg.Function):
    """x <- x * x in place; dx = 2 x_old * grad."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.clone())
        x.mul_(x)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (old,) = ctx.saved_tensors
        return 2 * old * grad


def test_mark_dirty_returns_input_bumps_version_and_rebases_history():
    X = np.array([1.0, -2.0, 3.0])
    a = f64(X, requires_grad=True)
    b = a * 1
    v0 = b._version
    out = SquareInPlace.apply(b)
    assert out is b
    assert b._version == v0 + 1
    np.testing.assert_allclose(b.detach().numpy(), X * X)
    assert b.grad_fn.name() == "SquareInPlaceBackward"
    assert b.grad_fn.next_functions[0][0].name() == "MulBackward"
    (b * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 6 * X)
    check_grads(lambda t: SquareInPlace.apply(t * 1) * t, [X])


class ReluInPlace(tg.Function):
    """x <- max(x, 0) in place, saving the modified input itself."""

    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y > 0).double()


def test_mark_dirty_and_save_the_modified_input():
    X = np.array([1.5, -2.0, 0.25, -0.5])
    check_grads(lambda t: ReluInPlace.apply(t * 1) * t, [X])
    b = f64(X, requires_grad=True) * 1
    ReluInPlace.apply(b)
    b.add_(1)  # the saved (modified) input changes again: the node must notice
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        b.sum().backward()
    assert (e.value.saved_by, e.value.modified_by) == ("ReluInPlaceBackward", "add_")


def test_mark_dirty_without_a_write_still_bumps_the_version():
    class Declares(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    b = f64([1.0], requires_grad=True) * 1
    v0 = b._version
    Declares.apply(b)
    assert b._version == v0 + 1


def test_mark_dirty_invalidates_earlier_saves_of_the_input():
    a = f64([0.5, 1.0], requires_grad=True)
    b = a * 1
    s = b.sin()  # saves b at its current version
    SquareInPlace.apply(b)
    with pytest.raises(tg.SavedTensorModifiedError) as e:
        s.sum().backward()
    assert e.value.saved_by == "SinBackward"
    assert e.value.current_version == e.value.saved_version + 1


def test_mark_dirty_refused_for_a_leaf_that_requires_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad") as e:
        SquareInPlace.apply(x)
    assert "SquareInPlace" in str(e.value)
    assert x.grad_fn is None and x.is_leaf


def test_mark_dirty_on_leaf_allowed_without_grad_mode():
    x = f64([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        out = SquareInPlace.apply(x)
    assert out is x
    assert x.tolist() == [1.0, 4.0]
    assert x.is_leaf and x.grad_fn is None


def test_mark_dirty_input_must_be_returned():
    class Forgets(tg.Function):
        @staticmethod
        def forward(ctx, x, y):
            x.add_(1)
            ctx.mark_dirty(x)
            return y * 2

        @staticmethod
        def backward(ctx, grad):
            return None, grad * 2

    x = f64([1.0], requires_grad=True) * 1
    y = f64([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="mark_dirty must be returned") as e:
        Forgets.apply(x, y)
    assert "Forgets" in str(e.value) and "argument 'x'" in str(e.value)


def test_mark_dirty_of_a_non_input_is_ignored():
    """As PyTorch: a warning, and y is an ordinary output (d/dx 2x = 2)."""

    class NotAnInput(tg.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = f64([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="mark_dirty\\(\\) received a tensor that was not an input"):
        y = NotAnInput.apply(x)
    y.backward()
    assert x.grad.item() == 2.0


# --- mark_non_differentiable ------------------------------------------------------------------------


def test_mark_non_differentiable_outputs_and_their_zero_gradients():
    got = []

    class MaxWithIndex(tg.Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = x.max(dim=1)
            mask = x > 0
            count = mask.double().sum()  # a float output declared non-differentiable
            ctx.mark_non_differentiable(idx, mask, count)
            ctx.save_for_backward(x, idx)
            return values, idx, mask, count

        @staticmethod
        def backward(ctx, g_values, g_idx, g_mask, g_count):
            got.append(
                (
                    (g_idx.shape, g_idx.tolist()),
                    (g_mask.shape, g_mask.tolist()),
                    (g_count.shape, g_count.tolist()),
                )
            )
            x, idx = ctx.saved_tensors
            onehot = np.zeros(x.shape)
            assert not idx.requires_grad and idx.grad_fn is None
            onehot[np.arange(x.shape[0]), idx.numpy()] = 1
            return tg.tensor(onehot) * g_values.unsqueeze(1)

    X = np.array([[1.0, 5.0, -2.0], [4.0, -3.0, 0.5]])
    x = f64(X, requires_grad=True)
    values, idx, mask, count = MaxWithIndex.apply(x)
    assert values.requires_grad and values.grad_fn.name() == "MaxWithIndexBackward"
    for t in (idx, mask, count):
        assert not t.requires_grad
        assert t.grad_fn is None
    assert idx.tolist() == [1, 0]
    assert count.item() == 4.0
    (values * tg.tensor([2.0, 3.0], dtype=tg.float64)).sum().backward()
    assert got == [(((2,), [0, 0]), ((2, 3), [[False] * 3] * 2), ((), 0.0))]
    np.testing.assert_allclose(x.grad.numpy(), [[0, 2, 0], [3, 0, 0]])


def test_saved_non_differentiable_output_reads_back_without_history():
    got = {}

    class ArgMax(tg.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            ctx.idx = idx
            return x * 1, idx

        @staticmethod
        def backward(ctx, grad, g_idx):
            for key, t in (("saved", ctx.saved_tensors[0]), ("attribute", ctx.idx)):
                got[key] = (t.requires_grad, t.grad_fn, t.item())
            return grad

    x = f64([1.0, 5.0, 2.0], requires_grad=True)
    y, idx = ArgMax.apply(x)
    y.sum().backward()
    assert got == {"saved": (False, None, 1), "attribute": (False, None, 1)}
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# --- once_differentiable, double backward -----------------------------------------------------------


class CubeOnce(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @tg.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        CubeOnce.grad_mode_in_backward = tg.is_grad_enabled()
        return 3 * x * x * grad


class Cube(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


def test_once_differentiable_first_order():
    check_grads(CubeOnce.apply, [np.array([0.5, -1.0, 2.0])])
    assert tg.autograd.once_differentiable is tg.once_differentiable


def test_once_differentiable_refuses_second_differentiation():
    x = f64([1.0, 2.0], requires_grad=True)
    y = CubeOnce.apply(x)
    (gx,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)
    assert CubeOnce.grad_mode_in_backward is False
    # first derivative of x^6 is 6 x^5
    np.testing.assert_allclose(gx.detach().numpy(), [6.0, 192.0])
    assert gx.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable") as e:
        gx.sum().backward()
    assert "CubeOnce" in str(e.value)


def test_double_backward_through_a_custom_function():
    # d/dx of (d/dx sum(x^3)) = 6x; checked by finite differences of the first derivative
    X = np.array([0.5, -1.5, 2.0])

    def first_derivative(t):
        t = t.detach()
        t.requires_grad = True
        (g,) = tg.autograd.grad(Cube.apply(t).sum(), t, create_graph=True)
        return g

    x = f64(X, requires_grad=True)
    (g,) = tg.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * X**2)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(first_derivative, [X], 0), rtol=1e-5)


class ExpSavesOutput(tg.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


def test_double_backward_through_a_saved_output():
    # the saved output comes back with its history, so d/dx (d/dx sum(exp x)) = exp x
    X = np.array([-0.5, 0.0, 1.25])

    def first_derivative(t):
        t = t.detach()
        t.requires_grad = True
        (g,) = tg.autograd.grad(ExpSavesOutput.apply(t).sum(), t, create_graph=True)
        return g

    x = f64(X, requires_grad=True)
    (g,) = tg.autograd.grad(ExpSavesOutput.apply(x).sum(), x, create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(first_derivative, [X], 0), rtol=1e-5)


def test_function_alias_and_node_name():
    assert tg.autograd.Function is tg.Function
    y = Cube.apply(f64([1.0], requires_grad=True))
    assert y.grad_fn.name() == "CubeBackward"
    assert "grad_fn=<CubeBackward>" in repr(y)


# --- the class surface: vjp, misuse of the class, mark_dirty of a non-input, single access -----------


class TripleVjp(tg.Function):
    """y = 3 x, its backward spelled ``vjp``."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def vjp(ctx, g):
        return g * 3


def test_vjp_is_the_backward():
    x = f64([1.0, -2.0], requires_grad=True)
    TripleVjp.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_once_differentiable_vjp_is_honoured():
    class Once(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        @tg.once_differentiable
        def vjp(ctx, g):
            return g * 3

    x = f64([1.0], requires_grad=True)
    y = Once.apply(x)
    (g,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)  # the upstream 2 y needs a gradient
    assert g.item() == 18.0
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_backward_added_to_a_vjp_class_is_refused_when_backward_runs():
    """As PyTorch: a subclass that adds backward to an inherited vjp defines both."""

    class Both(TripleVjp):
        @staticmethod
        def backward(ctx, g):
            return g * 5

    y = Both.apply(f64([1.0], requires_grad=True))  # applying is allowed
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        y.sum().backward()


def test_missing_backward_is_not_implemented():
    class NoBackward(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    y = NoBackward.apply(f64([1.0], requires_grad=True))
    with pytest.raises(NotImplementedError, match="must implement either the backward or vjp"):
        y.sum().backward()


def test_calling_an_instance_is_the_legacy_error():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = TripleVjp()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward"):
        f(f64([1.0], requires_grad=True))


def test_mark_dirty_of_a_non_input_is_ignored_with_a_warning():
    """PyTorch: c = 3 a + b made inside forward and marked dirty is an ordinary output (warning);
    d/da sum(c) = 3 (backward returns 3 g for both), d/db = 3."""

    class Bad(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, g):
            return 3 * g, 3 * g

    a = f64([1.0, 2.0], requires_grad=True)
    b = f64([1.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        c = Bad.apply(a * 1, b)
    np.testing.assert_array_equal(c.detach().numpy(), [4.0, 7.0])
    assert c.grad_fn.name() == "BadBackward"
    c.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 3.0])


def test_mark_dirty_of_a_view_that_is_no_input_is_refused():
    class ViewDirty(tg.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.clone().view_as(x)
            ctx.mark_dirty(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="ViewDirty: ctx.mark_dirty\\(\\) received a tensor that was not an input"):
        ViewDirty.apply(f64([1.0], requires_grad=True) * 1)


@pytest.mark.parametrize("attr", ["saved_tensors", "saved_variables"])
def test_clear_saved_tensors_on_access_allows_one_read(attr):
    reads = []

    class Once(tg.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, x=x)
            getattr(ctx, attr)  # reads inside forward do not count
            return x * 2

        @staticmethod
        def backward(ctx, g):
            reads.append(getattr(ctx, attr))
            # the other of the two may still be read once
            other = "saved_variables" if attr == "saved_tensors" else "saved_tensors"
            getattr(ctx, other)
            getattr(ctx, attr)
            return g * 2

    y = Once.apply(f64([1.0], requires_grad=True))
    with pytest.raises(RuntimeError, match=f"{attr} can only be accessed once"):
        y.sum().backward()
    assert len(reads) == 1


def test_saved_tensors_are_read_freely_by_default():
    class Twice(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            (b,) = ctx.saved_tensors
            return g * a + g * b

    x = f64([3.0], requires_grad=True)
    Twice.apply(x).backward()
    assert x.grad.item() == 6.0


class _Tagged(tg.Function):
    """Returns (x * 3, "inner"); its jvp is 3 * t."""

    @staticmethod
    def forward(ctx, x):
        return x * 3, "inner"

    @staticmethod
    def jvp(ctx, t):
        return t * 3, None

    @staticmethod
    def backward(ctx, g, _none):
        return g * 3


class _Outer(tg.Function):
    """Calls _Tagged.apply in its forward and in its jvp; returns (x * 2, "outer")."""

    @staticmethod
    def forward(ctx, x):
        inner, tag = _Tagged.apply(x)
        assert tag == "inner"
        return inner - x, "outer"

    @staticmethod
    def jvp(ctx, t):
        inner, tag = _Tagged.apply(t)
        assert tag == "inner"
        return inner - t, None

    @staticmethod
    def backward(ctx, g, _none):
        return g * 2


def test_apply_inside_forward_and_jvp_returns_each_calls_own_values():
    # Each apply hands its forward's own return value back to its caller, also when another apply
    # runs inside its forward or its jvp (closed form: y = 2x, tangent 2t).
    import tapegrad.autograd.forward_ad as fwAD

    x = f64([1.0, 2.0], requires_grad=True)
    y, tag = _Outer.apply(x)
    assert tag == "outer" and y.tolist() == [2.0, 4.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, -1.0]))
        y, tag = _Outer.apply(d)
        assert tag == "outer"
        primal, tangent = fwAD.unpack_dual(y)
        assert primal.tolist() == [2.0, 4.0]
        assert tangent.tolist() == [2.0, -2.0]
