"""tg.autograd.graph: Node hooks and metadata, GradientEdge, register_multi_grad_hook,
increment_version, allow_mutation_on_saved_tensors; Tensor.register_post_accumulate_grad_hook;
queue_callback."""

import threading

import numpy as np
import pytest
from oracles import run_in_threads

import tapegrad as tg
from tapegrad.autograd import graph


def test_node_is_the_grad_fn_type_with_name_and_next_functions():
    x = tg.ones(2, requires_grad=True)
    y = x.exp() * 2
    assert isinstance(y.grad_fn, graph.Node)
    assert y.grad_fn.name() == "MulBackward"
    (exp_node, nr), (none, _) = y.grad_fn.next_functions
    assert exp_node.name() == "ExpBackward" and nr == 0 and none is None


def test_node_prehook_and_posthook_see_and_replace_gradients():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y.exp()
    seen = {}

    def pre(grad_outputs):
        seen["pre"] = [g.tolist() for g in grad_outputs]
        return (grad_outputs[0] * 10,)

    def post(grad_inputs, grad_outputs):
        seen["post_in"] = [g.tolist() for g in grad_inputs if g is not None]
        seen["post_out"] = [g.tolist() for g in grad_outputs]

    y.grad_fn.register_prehook(pre)
    y.grad_fn.register_hook(post)
    z.sum().backward()
    e = np.exp([3.0, 6.0])
    np.testing.assert_allclose(seen["pre"][0], e, rtol=1e-6)
    # The prehook's replacement is what the node received and what it passed on (x3).
    np.testing.assert_allclose(seen["post_out"][0], 10 * e, rtol=1e-6)
    np.testing.assert_allclose(seen["post_in"][0], 30 * e, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 30 * e, rtol=1e-6)


def test_posthook_replacement_and_removal():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    h = y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [3.0]
    h.remove()
    x.grad = None
    y.backward()
    assert x.grad.tolist() == [2.0]


def test_hook_returning_wrong_count_is_an_error():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="returned 2 gradients"):
        y.backward()


def test_node_metadata_persists_per_node():
    x = tg.ones(1, requires_grad=True)
    y = x * 2
    y.grad_fn.metadata["k"] = 5
    assert y.grad_fn.metadata == {"k": 5}
    assert (x * 3).grad_fn.metadata == {}


def test_accumulate_grad_node_hooks():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    seen = []
    acc.register_prehook(lambda go: seen.append(("pre", go[0].tolist(), x.grad)))
    acc.register_hook(lambda gi, go: seen.append(("post", go[0].tolist(), x.grad.tolist())))
    y.sum().backward()
    # The prehook runs before accumulation (no .grad yet), the posthook after.
    assert seen == [("pre", [2.0, 2.0], None), ("post", [2.0, 2.0], [2.0, 2.0])]


def test_post_accumulate_grad_hook():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(p):
        seen.append(p.grad.tolist())
        with tg.no_grad():
            p.sub_(p.grad * 0.5)  # an optimizer step in the hook
        p.grad = None

    h = w.register_post_accumulate_grad_hook(hook)
    (w * w).sum().backward()
    assert seen == [[2.0, 4.0]] and w.grad is None
    assert w.tolist() == [0.0, 0.0]
    h.remove()
    (w + 1).sum().backward()
    assert len(seen) == 1 and w.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(hook)
    w2 = tg.ones(1, requires_grad=True)
    w2.register_post_accumulate_grad_hook(lambda p: 1)
    with pytest.raises(RuntimeError, match="should return None"):
        (w2 * 1).sum().backward()


def test_gradient_edge_as_grad_input():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    edge = graph.get_gradient_edge(h)
    out = (h * h).sum()
    (g,) = tg.autograd.grad(out, edge, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), 2 * np.array([3.0, 6.0]))
    gx, gh = tg.autograd.grad(out, (x, edge))
    np.testing.assert_allclose(gx.numpy(), 18 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])
    leaf_edge = graph.get_gradient_edge(x)
    assert leaf_edge.node.name() == "AccumulateGrad"
    with pytest.raises(RuntimeError, match="does not require gradients"):
        graph.get_gradient_edge(tg.ones(1))


def test_gradient_edge_of_the_old_value_after_inplace():
    x = tg.tensor([2.0], requires_grad=True)
    h = x * 1
    edge = graph.get_gradient_edge(h)
    h.mul_(3)  # h's history moves on; the edge still names the MulBackward of x * 1
    (g,) = tg.autograd.grad(h.sum(), edge)
    assert g.tolist() == [3.0]


def test_multi_grad_hook_all():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([2.0], requires_grad=True)
    c = tg.tensor([3.0], requires_grad=True)
    calls = []
    handle = graph.register_multi_grad_hook((a, b, c), lambda gs: calls.append(
        [None if g is None else g.tolist() for g in gs]))
    (a * 2 + b * 5).sum().backward()
    assert calls == [[[2.0], [5.0], None]]
    (c * 7).sum().backward()
    assert calls[1] == [None, None, [7.0]]
    (tg.ones(1, requires_grad=True) * 2).sum().backward()  # none of them: no call
    assert len(calls) == 2
    handle.remove()
    (a * 2).sum().backward()
    assert len(calls) == 2


def test_multi_grad_hook_any_runs_once_per_backward():
    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([2.0], requires_grad=True)
    calls = []
    graph.register_multi_grad_hook((a, b), lambda g: calls.append(g.tolist()), mode="any")
    (a * 2 + b * 5).sum().backward()
    assert len(calls) == 1 and calls[0] in ([2.0], [5.0])
    (b * 4).sum().backward()
    assert calls[1] == [4.0]
    with pytest.raises(ValueError, match="Expects mode"):
        graph.register_multi_grad_hook((a,), print, mode="some")


def test_multi_grad_hook_per_thread():
    a = tg.tensor([1.0], requires_grad=True)
    calls = []
    lock = threading.Lock()

    def fn(gs):
        with lock:
            calls.append(gs[0].tolist())

    graph.register_multi_grad_hook((a,), fn)

    def work(k):
        (a * k).sum().backward()

    run_in_threads(lambda i: work(float(i + 1)), num_threads=4, pass_index=True)
    assert sorted(calls) == [[1.0], [2.0], [3.0], [4.0]]


def test_queue_callback():
    order = []
    x = tg.ones(1, requires_grad=True)

    def hook(g):
        order.append("hook")
        tg.autograd.Variable._execution_engine.queue_callback(lambda: order.append("first"))
        tg.autograd.queue_callback(lambda: (order.append("second"), tg.autograd.queue_callback(
            lambda: order.append("queued by a callback"))))

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == ["hook", "first", "second", "queued by a callback"]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        tg.autograd.queue_callback(lambda: None)


def test_queue_callback_error_reaches_backward_caller():
    x = tg.ones(1, requires_grad=True)
    y = x * 2

    def bad():
        raise ValueError("callback failed")

    y.register_hook(lambda g: tg.autograd.queue_callback(bad))
    with pytest.raises(ValueError, match="callback failed"):
        y.sum().backward()


def test_increment_version():
    x = tg.ones(2, requires_grad=True)
    h = x * 1
    y = h.exp() * h
    graph.increment_version(h)
    assert h._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    graph.increment_version([tg.ones(1), tg.ones(1)])


def test_allow_mutation_on_saved_tensors():
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        b = a.clone()
        out = (b * b).sum()
        b.mul_(5)  # mutates a saved tensor (recorded)
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0, 6.0])
    with graph.allow_mutation_on_saved_tensors():
        b = a.clone()
        out = (b * b).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors' context"):
        out.backward()
    with graph.allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with graph.allow_mutation_on_saved_tensors():
                pass
