"""The binding errors of src/python/{autograd,helpers,optim}.rs go through the crate's Error type and
keep their Python exception types and messages."""

import pytest

import tapegrad as tg
from tapegrad import _tapegrad as _C


def test_optimizer_step_protocol_errors_are_value_errors():
    p = tg.zeros(2)
    g = tg.ones(2)
    with pytest.raises(ValueError, match='unknown optimizer kind "nope"'):
        _C._optimizer_step("nope", [p], [g], [[]], [None], {})
    with pytest.raises(ValueError, match="optimizer hyperparameter lr is missing"):
        _C._optimizer_step("sgd", [p], [g], [[None]], [None], {})
    with pytest.raises(ValueError, match="1 params but 2 grads"):
        _C._optimizer_step("sgd", [p], [g, g], [[None]], [None], {"lr": 0.1, "momentum": 0.0, "dampening": 0.0,
                                                                   "weight_decay": 0.0, "nesterov": False,
                                                                   "maximize": False})


def test_gradient_edge_of_a_tensor_without_grad_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        _C._gradient_edge(tg.zeros(1))


def test_saved_tensors_hooks_must_be_callable():
    with pytest.raises(TypeError, match="pack_hook and unpack_hook must be callable"):
        _C._push_saved_tensors_hooks(1, lambda x: x)


def test_pop_without_hooks_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no saved-tensor hooks to remove"):
        _C._pop_saved_tensors_hooks()


def test_post_accumulate_grad_hook_returning_a_value():
    t = tg.ones(2, requires_grad=True)
    t.register_post_accumulate_grad_hook(lambda leaf: leaf)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks should return None"):
        t.sum().backward()


def test_node_hook_returning_a_non_tuple():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    y.grad_fn.register_prehook(lambda gs: 5)
    with pytest.raises(TypeError, match="a node hook must return a tuple of gradients or None, got int"):
        y.sum().backward()
