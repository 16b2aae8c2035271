"""PyTorch's `test_autograd.py` tests of gradient edges, node prehooks and the order of hooks
(TestAutograd), carried over. Oracle: closed forms (the derivative of each small graph by hand)
and a second run without edges or hooks."""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import GradientEdge, get_gradient_edge


def _np(t):
    return t.detach().numpy()


class _Twice(tg.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _mul2(custom):
    return _Twice.apply if custom else (lambda x: x * 2)


# covers: test_autograd.py::TestAutograd::test_grad_to_node
def test_grad_to_node():
    def same_as_tensor(out, inp):
        want = tg.autograd.grad(out.sum(), inp)
        got = tg.autograd.grad(out.sum(), get_gradient_edge(inp))
        assert len(got) == 1
        np.testing.assert_allclose(_np(got[0]), _np(want[0]))
        np.testing.assert_allclose(_np(got[0]), np.ones(inp.shape))

    # an accumulator, a built-in node, a custom function's node, one output of two
    x = tg.rand(2, requires_grad=True)
    same_as_tensor(x.clone(), x)
    x = x.clone()
    same_as_tensor(x.clone(), x)
    x = _Twice.apply(x)
    same_as_tensor(x.clone(), x)
    x = tg.var_mean(x)[1]
    same_as_tensor(x.clone(), x)


# covers: test_autograd.py::TestAutograd::test_grad_to_node_inplace
def test_grad_to_node_inplace():
    x = tg.rand(2, requires_grad=True).clone()
    old = get_gradient_edge(x)
    x *= 2
    g_old, g_new = tg.autograd.grad(x.sum(), (old, x))
    np.testing.assert_allclose(_np(g_old), [2.0, 2.0])
    np.testing.assert_allclose(_np(g_new), [1.0, 1.0])


# covers: test_autograd.py::TestAutograd::test_grad_to_node_multi
def test_grad_to_node_multi():
    x = tg.rand(2, requires_grad=True).clone()
    y = tg.rand(2, requires_grad=True).clone()
    out = x * 3 + y
    want = tg.autograd.grad(out.sum(), (x, y), retain_graph=True)
    got = tg.autograd.grad(out.sum(), (GradientEdge(x.grad_fn, x.output_nr), GradientEdge(y.grad_fn, y.output_nr)))
    for w, g, closed in zip(want, got, (3.0, 1.0)):
        np.testing.assert_allclose(_np(g), _np(w))
        np.testing.assert_allclose(_np(g), [closed, closed])


# covers: test_autograd.py::TestAutograd::test_grad_to_node_materialize
def test_grad_to_node_materialize():
    x = tg.rand(2, requires_grad=True).clone()
    edge_x = GradientEdge(x.grad_fn, x.output_nr)
    y = tg.rand(2, requires_grad=True).clone()
    edge_y = GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone()
    # an edge that receives a gradient, beside an unused tensor that gets zeros
    gx, gy = tg.autograd.grad(out.sum(), (edge_x, y), allow_unused=True, materialize_grads=True)
    np.testing.assert_allclose(_np(gx), [1.0, 1.0])
    np.testing.assert_allclose(_np(gy), [0.0, 0.0])
    gx, gy = tg.autograd.grad(out.sum(), (x, y), allow_unused=True, materialize_grads=True)
    np.testing.assert_allclose(_np(gy), [0.0, 0.0])
    gx, gy = tg.autograd.grad(out.sum(), (x, edge_y), allow_unused=True)
    np.testing.assert_allclose(_np(gx), [1.0, 1.0])
    assert gy is None
    # an unused edge has no shape to make zeros of
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given input is a GradientEdge"):
        tg.autograd.grad(out.sum(), (x, edge_y), allow_unused=True, materialize_grads=True)


# covers: test_autograd.py::TestAutograd::test_backward_to_node
def test_backward_to_node():
    a = tg.rand(2, requires_grad=True)
    b = tg.rand(2, requires_grad=True)
    x = a.clone()
    y = b.clone()
    edge_x = GradientEdge(x.grad_fn, x.output_nr)
    edge_y = GradientEdge(y.grad_fn, y.output_nr)
    out = x * 5
    # every spelling runs; the gradient stops at the inputs named, so the leaves get nothing
    tg.autograd.backward(out.sum(), inputs=(edge_x, y), retain_graph=True)
    tg.autograd.backward(out.sum(), inputs=(x, y), retain_graph=True)
    tg.autograd.backward(out.sum(), inputs=(x, edge_y), retain_graph=True)
    tg.autograd.backward(out.sum(), inputs=(edge_x, edge_y), retain_graph=True)
    assert a.grad is None and b.grad is None
    # the accumulator of a leaf as an edge: the gradient lands in the leaf's .grad
    tg.autograd.backward(out.sum(), inputs=(get_gradient_edge(a),))
    np.testing.assert_allclose(_np(a.grad), [5.0, 5.0])


# covers: test_autograd.py::TestAutograd::test_grad_fn_prehooks
@pytest.mark.parametrize("custom", [True, False])
def test_grad_fn_prehooks(custom):
    mul2 = _mul2(custom)
    a = tg.tensor([1.0], requires_grad=True)
    b = mul2(a)
    post = [0]
    pre = [0]

    def posthook(grad_input, grad_output):
        # three doubling prehooks ran before: 8 reaches the node, 16 leaves it
        assert pre[0] == 3
        np.testing.assert_allclose(_np(grad_output[0]), [8.0])
        np.testing.assert_allclose(_np(grad_input[0]), [16.0])
        post[0] += 1
        return grad_input

    def prehook(grad_output):
        pre[0] += 1
        return (grad_output[0] * 2,)

    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda g: None)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda g: g)
    b.grad_fn.register_prehook(lambda g: None)
    b.sum().backward()
    assert post[0] == 2
    assert pre[0] == 3
    np.testing.assert_allclose(_np(a.grad), [16.0])

    a = tg.rand(3, 3, requires_grad=True)
    b = mul2(a)

    def prehook_none(grad_output):
        pre[0] += 1
        return None

    b.grad_fn.register_prehook(prehook_none)
    b.sum().backward()
    assert pre[0] == 4
    np.testing.assert_allclose(_np(a.grad), np.full((3, 3), 2.0))


# covers: test_autograd.py::TestAutograd::test_grad_fn_prehooks_multiple_outputs
# (the custom-function half: tapegrad has no built-in operation with one node for several outputs;
# its var_mean records two nodes, so the built-in half, a prehook seeing (gvar, gmean), is left out)
def test_grad_fn_prehooks_multiple_outputs():
    class DoubleMul2(tg.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.k = k
            return k * x * 2, k, k * y * 2

        @staticmethod
        def backward(ctx, g1, _k, g2):
            return ctx.k * g1 * 2, None, ctx.k * g2 * 2

    count = [0]

    def prehook3(grad_output):
        g1, gk, g2 = grad_output
        assert gk is None
        count[0] += 1
        return (g1 * 2, None, g2 * 2)

    a = tg.randn(3, 3, requires_grad=True)
    b = tg.randn(3, 3, requires_grad=True)
    k = 3
    c, _, d = DoubleMul2.apply(a, k, b)
    c.grad_fn.register_prehook(prehook3)
    (c + d).sum().backward()
    assert count[0] == 1
    np.testing.assert_allclose(_np(a.grad), np.full((3, 3), 4.0 * k))
    np.testing.assert_allclose(_np(b.grad), np.full((3, 3), 4.0 * k))


# covers: test_autograd.py::TestAutograd::test_grad_fn_prehooks_remove_hooks
@pytest.mark.parametrize("custom", [True, False])
def test_grad_fn_prehooks_remove_hooks(custom):
    mul2 = _mul2(custom)
    a = tg.rand(3, 3, requires_grad=True)
    b = mul2(a)
    count = [0]

    def prehook(grad_output):
        count[0] += 1
        return None

    handle = b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    handle.remove()
    b.sum().backward()
    np.testing.assert_allclose(_np(a.grad), np.full((3, 3), 2.0))
    assert count[0] == 1

    # removed while backward runs: the first prehook removes the second before it runs
    a = tg.rand(3, 3, requires_grad=True)
    b = mul2(a)
    count = [0]

    def remover(grad_output):
        handle2.remove()
        handle3.remove()  # removing twice is allowed
        return None

    def counter(grad_output):
        count[0] += 1
        return None

    b.grad_fn.register_prehook(remover)
    handle2 = b.grad_fn.register_prehook(counter)
    handle3 = b.grad_fn.register_prehook(counter)
    handle3.remove()
    b.sum().backward(retain_graph=True)
    np.testing.assert_allclose(_np(a.grad), np.full((3, 3), 2.0))
    # the node's prehooks are taken when it starts: the removed one still runs this time
    assert count[0] == 1
    b.sum().backward()  # gone for the next run through the same node
    assert count[0] == 1


# covers: test_autograd.py::TestAutograd::test_prehook_ordering
def test_prehook_ordering():
    # a tensor's hooks run before its node's prehooks, whatever the order of registration
    log = []

    def tensor_hook(g):
        log.append(1)
        return g * 3

    def node_prehook(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = tg.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(tensor_hook)
    acc.register_prehook(node_prehook)
    a.register_hook(tensor_hook)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]
    # 3 * 2 * 2 through b's node, then * 3 * 3 * 2 at the leaf
    assert a.grad.item() == 216.0

    # grad runs the accumulator's tensor hooks and prehooks are not run (the node does not run)
    log = []
    (g,) = tg.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]
    assert g.item() == 108.0



# covers: test_autograd.py::TestAutograd::test_prehook_ordering (its last part)
def test_prehook_ordering_backward_to_non_leaf():
    log = []

    def tensor_hook(g):
        log.append(1)
        return g * 3

    def node_prehook(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = tg.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    b.sum().backward(inputs=(b,))
    # a retained gradient is stored after the tensor hooks, before the node's prehooks
    assert b.grad.item() == 3.0
    assert log == [1, 2, 2]


# covers: test_autograd.py::TestAutograd::test_accumulate_grad_posthooks_can_observe_tensor_prehook
def test_accumulate_grad_posthooks_can_observe_tensor_prehook():
    a = tg.tensor(1.0, requires_grad=True)
    seen = []

    def posthook(grad_inputs, grad_outputs):
        seen.append(("post", len(grad_inputs), grad_outputs[0].item()))

    def prehook(grad_outputs):
        seen.append(("pre", len(grad_outputs), grad_outputs[0].item()))

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(lambda g: g * 2)
    b.backward()
    # both node hooks see the gradient the tensor hook doubled; an accumulator has no inputs
    assert seen == [("pre", 1, 2.0), ("post", 0, 2.0)]
    assert a.grad.item() == 2.0


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_ordering
def test_post_accumulate_grad_hook_ordering():
    t = tg.rand(3, requires_grad=True)

    def tensor_hook(grad):
        return grad.sub(2.0)

    def acc_prehook(grad_out):
        return (grad_out[0].div(5.0),)

    def post_acc_hook(tensor):
        tensor.grad.add_(0.5)

    def acc_posthook(grad_in, grad_out):
        t.grad = grad_out[0].mul(10)

    acc = t.view_as(t).grad_fn.next_functions[0][0]
    t.register_hook(tensor_hook)
    acc.register_prehook(acc_prehook)
    t.register_post_accumulate_grad_hook(post_acc_hook)
    acc.register_hook(acc_posthook)
    t.sum().backward()
    # tensor hook, node prehook, post-accumulate hook, node posthook; the gradient the node
    # received is the one stored in .grad (the post-accumulate hook's add_ shows through):
    # ((1 - 2) / 5 + 0.5) * 10 = 3
    np.testing.assert_allclose(_np(t.grad), [3.0, 3.0, 3.0], rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_gradient_edge_output
def test_gradient_edge_output():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    xv = np.array([1.0, 2.0], dtype=np.float32)

    def fn(x, reduce=True):
        tmp = x.sin().cos()
        if reduce:
            tmp = tmp.sum()
        out = tmp.exp().clone().sin().sum()
        return out, get_gradient_edge(tmp)

    # closed form of d out / d x with reduce: out = sin(exp(s)), s = sum(cos(sin x))
    s = np.cos(np.sin(xv)).sum()
    d_tmp = np.cos(np.exp(s)) * np.exp(s)
    d_x = d_tmp * -np.sin(np.sin(xv)) * np.cos(xv)

    # backward in two steps: to the edge, then from the edge with that gradient
    out, tmp_edge = fn(x)
    (tmp_grad,) = tg.autograd.grad(out, (tmp_edge,))
    np.testing.assert_allclose(tmp_grad.item(), d_tmp, rtol=1e-5)
    (x_grad,) = tg.autograd.grad(tmp_edge, (x,), grad_outputs=(tmp_grad,))
    np.testing.assert_allclose(_np(x_grad), d_x, rtol=1e-5)

    # no gradient given for an edge of many elements
    out, tmp_edge = fn(x, reduce=False)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar output"):
        tg.autograd.grad(tmp_edge, (x,))
    # a single element: ones (d s / d x)
    out, tmp_edge = fn(x)
    (g,) = tg.autograd.grad(tmp_edge, (x,))
    np.testing.assert_allclose(_np(g), -np.sin(np.sin(xv)) * np.cos(xv), rtol=1e-5)

    out, tmp_edge = fn(x)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        tg.autograd.grad(tmp_edge, (x,), grad_outputs=tg.tensor([1.0, 2.0, 3.0, 4.0]))

    # backward from an edge accumulates what grad returns
    out, tmp_edge = fn(x)
    tg.autograd.backward(tmp_edge, retain_graph=True)
    (ref,) = tg.autograd.grad(tmp_edge, (x,), retain_graph=True)
    np.testing.assert_allclose(_np(x.grad), _np(ref))
    x.grad = None
    tg.autograd.backward((tmp_edge,), retain_graph=True)
    np.testing.assert_allclose(_np(x.grad), _np(ref))

    # edges beside tensors
    out1, tmp_edge1 = fn(x)
    out2, _ = fn(x)
    (ref,) = tg.autograd.grad((tmp_edge1, out2), (x,), retain_graph=True)
    np.testing.assert_allclose(_np(ref), -np.sin(np.sin(xv)) * np.cos(xv) + d_x, rtol=1e-5)
    x.grad = None
    tg.autograd.backward((tmp_edge1, out2), retain_graph=True)
    np.testing.assert_allclose(_np(x.grad), _np(ref))

    out, tmp_edge = fn(x)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        tg.autograd.backward(tmp_edge, inputs=(x,), grad_tensors=tg.tensor([1.0, 2.0, 3.0, 4.0]))


# covers: test_autograd.py::TestAutograd::test_gradient_edge_graph_ownership
def test_gradient_edge_graph_ownership():
    leaf = tg.rand(1, requires_grad=True)
    inp = leaf.clone()
    # the edge keeps the graph alive after the tensor it came from is gone: built-in node ...
    out = inp.clone()
    edge = get_gradient_edge(out)
    tg.autograd.backward(edge)
    del out
    gc.collect()
    tg.autograd.backward(edge)
    np.testing.assert_allclose(_np(leaf.grad), [2.0])
    # ... and a custom function's node
    out = _Twice.apply(inp)
    edge = get_gradient_edge(out)
    tg.autograd.backward(edge)
    del out
    gc.collect()
    tg.autograd.backward(edge)
    np.testing.assert_allclose(_np(leaf.grad), [6.0])


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_e2e
def test_post_accumulate_grad_hook_e2e():
    # an optimizer step inside the backward pass, one Adam per parameter, against the usual loop
    import copy

    tg.manual_seed(0)
    model = tg.nn.Linear(3, 2)
    inp = tg.rand(2, 3)
    optims = {}
    handles = []

    def step_in_backward(p):
        optims[p].step()
        optims[p].zero_grad()

    for p in model.parameters():
        optims[p] = tg.optim.Adam([p])
        handles.append(p.register_post_accumulate_grad_hook(step_in_backward))

    reference = copy.deepcopy(model)
    ref_optim = tg.optim.Adam(reference.parameters())
    start = [_np(p).copy() for p in model.parameters()]
    for _ in range(5):
        model(inp).sum().backward()
        reference(inp).sum().backward()
        ref_optim.step()
        ref_optim.zero_grad()
    frozen = []
    for p_ref, p in zip(reference.parameters(), model.parameters()):
        np.testing.assert_allclose(_np(p), _np(p_ref), rtol=1e-6, atol=1e-7)
        assert p.grad is None  # zeroed inside the hook
        frozen.append(_np(p).copy())
    # Adam's first steps move each element by about lr = 1e-3 (the gradient of a sum has one sign)
    for s, f in zip(start, frozen):
        np.testing.assert_allclose(np.abs(f - s), 5e-3, rtol=1e-2)

    for h in handles:
        h.remove()
    for _ in range(5):
        model(inp).sum().backward()
        reference(inp).sum().backward()
        ref_optim.step()
        ref_optim.zero_grad()
    for f, p_ref, p in zip(frozen, reference.parameters(), model.parameters()):
        np.testing.assert_array_equal(_np(p), f)
        assert not np.allclose(_np(p_ref), _np(p))


# covers: test_autograd.py::TestAutograd::test_post_accumulate_grad_hook_gets_cleaned_up
def test_post_accumulate_grad_hook_gets_cleaned_up():
    class Box:
        pass

    def make():
        kept = Box()
        kept.value = tg.rand(3)

        def hook(t):
            t.sub_(t.grad)
            t.add_(kept.value)

        t = tg.rand(3, requires_grad=True)
        before = _np(t).copy()
        t.register_post_accumulate_grad_hook(hook)
        t.sum().backward()
        np.testing.assert_allclose(_np(t), before - 1.0 + _np(kept.value), rtol=1e-6)
        return t, weakref.ref(kept)

    gc.disable()
    try:
        t, ref = make()
        assert ref() is not None  # the hook, kept by the tensor, holds it
        del t
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


# A node post-hook of a custom function whose forward also returned a non-tensor sees one gradient per
# returned value too (None for the non-tensor), as PyTorch's (checked against PyTorch 2.x by hand:
# [[1, 1], None, [2, 2]] and a gradient of 70 per element).
def test_grad_fn_posthook_multiple_outputs_with_a_non_tensor():
    class ScaleTwice(tg.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k, k, x * 2

        @staticmethod
        def backward(ctx, g1, gk, g2):
            assert gk is None
            return g1 * 3 + g2 * 2, None

    x = tg.ones(2, requires_grad=True)
    a, k, b = ScaleTwice.apply(x, 3)
    assert k == 3
    seen = []

    def post(grad_inputs, grad_outputs):
        seen.append([None if g is None else _np(g).tolist() for g in grad_outputs])
        return (grad_inputs[0] * 10,)

    a.grad_fn.register_hook(post)
    (a + b * 2).sum().backward()
    assert seen == [[[1.0, 1.0], None, [2.0, 2.0]]]
    # (1 * 3 + 2 * 2) * 10
    np.testing.assert_allclose(_np(x.grad), [70.0, 70.0])
