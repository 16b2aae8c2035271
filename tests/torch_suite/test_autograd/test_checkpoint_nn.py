"""PyTorch's `test_autograd.py` checkpoint tests that use `nn` modules (TestAutograd), carried over
with `tg.nn`. Oracle: the same module (a deep copy) run without checkpointing: outputs and the
gradients of every parameter and input must be equal; closed forms where the module is a
plain product."""

import copy

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.checkpoint import checkpoint


def _np(t):
    return t.detach().numpy()


# covers: test_autograd.py::TestAutograd::test_checkpointing_without_reentrant
@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_checkpointing_without_reentrant(input_requires_grad):
    # PyTorch's runs 2000 inputs through a 10-1000-10 network (a slow test); 40 through 10-100-10
    # check the same thing
    tg.manual_seed(0)

    class Holder(tg.nn.Module):  # forward takes a keyword argument
        def __init__(self, mod):
            super().__init__()
            self.module = mod

        def forward(self, data):
            return self.module(data)

    module = Holder(tg.nn.Sequential(tg.nn.Linear(10, 100), tg.nn.ReLU(), tg.nn.Linear(100, 10)))
    module_copy = copy.deepcopy(module)
    with_ckpt, without = [], []
    inputs = []
    for _ in range(40):
        data = tg.rand(1, 10)
        data.requires_grad = input_requires_grad
        inputs.append(data)
        with_ckpt.append(checkpoint(module, data=data, use_reentrant=False))
        without.append(module_copy(data))
    mean = tg.stack(with_ckpt).mean()
    mean_ref = tg.stack(without).mean()
    np.testing.assert_allclose(mean.item(), mean_ref.item(), rtol=1e-6)
    mean.backward()
    grads_in = [_np(d.grad).copy() for d in inputs] if input_requires_grad else None
    if input_requires_grad:
        for d in inputs:
            d.grad = None
    mean_ref.backward()
    for p, q in zip(module.parameters(), module_copy.parameters()):
        assert p.grad is not None
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-5, atol=1e-7)
    if input_requires_grad:
        for g, d in zip(grads_in, inputs):
            np.testing.assert_allclose(g, _np(d.grad), rtol=1e-5, atol=1e-7)


# covers: test_autograd.py::TestAutograd::test_checkpoint_valid_reset_on_error
def test_checkpoint_valid_reset_on_error():
    a = tg.randn(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="checkpoint is incompatible"):
        b = checkpoint(tg.exp, a, use_reentrant=True).sum()
        tg.autograd.grad(b, (a,))
    # the refused backward leaves nothing behind: the next one works
    c = checkpoint(tg.exp, a, use_reentrant=True).sum()
    c.backward()
    np.testing.assert_allclose(_np(a.grad), np.exp(_np(a)), rtol=1e-6)


# covers: test_autograd.py::TestAutograd::test_checkpointing_without_reentrant_detached_tensor
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpointing_without_reentrant_detached_tensor(use_reentrant):
    class NoGrad(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = tg.nn.Linear(2, 2, bias=False)
            self.lin2 = tg.nn.Linear(2, 2, bias=False)

        def forward(self, x):
            with tg.no_grad():
                return self.lin2(self.linear(x))

    module = NoGrad()
    a = tg.randn(2, 2, requires_grad=True)
    for _ in range(3):
        a.grad = None
        if use_reentrant:
            with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
                out = checkpoint(module, a, use_reentrant=True)
                out += a
                out.sum().backward()
        else:
            out = checkpoint(module, a, use_reentrant=False)
            assert not out.requires_grad
            out += a
            out.sum().backward()
            # only the added a carries a gradient
            np.testing.assert_allclose(_np(a.grad), np.ones((2, 2)))


# covers: test_autograd.py::TestAutograd::test_checkpointing_without_reentrant_arbitrary_input_output
def test_checkpointing_without_reentrant_arbitrary_input_output():
    class DictModel(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = tg.nn.Linear(5, 5, bias=False)

        def forward(self, d):
            return {"result": self.layer(d["tensor"])}

    plain = DictModel()
    ckpt = copy.deepcopy(plain)
    inp = {"tensor": tg.randn(5, 5)}
    out_plain = plain(inp)["result"].sum()
    out_ckpt = checkpoint(ckpt, inp, use_reentrant=False)["result"].sum()
    np.testing.assert_allclose(out_ckpt.item(), out_plain.item(), rtol=1e-6)
    out_plain.backward()
    out_ckpt.backward()
    # d sum(x W^T) / dW = column sums of x, for each row of W
    want = np.tile(_np(inp["tensor"]).sum(0), (5, 1))
    for p, q in zip(plain.parameters(), ckpt.parameters()):
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-6)
        np.testing.assert_allclose(_np(q.grad), want, rtol=1e-5)


# covers: test_autograd.py::TestAutograd::test_checkpointing
def test_checkpointing():
    # reentrant checkpoint of one module over many inputs (PyTorch's slow test: 2000 inputs through
    # 10-1000-10; here 40 through 10-100-10), checked against the same module without it
    tg.manual_seed(1)
    module = tg.nn.Sequential(tg.nn.Linear(10, 100), tg.nn.ReLU(), tg.nn.Linear(100, 10))
    reference = copy.deepcopy(module)
    feats, feats_ref, inputs = [], [], []
    for _ in range(40):
        data = tg.rand(1, 10)
        data.requires_grad = True
        inputs.append(data)
        feats.append(checkpoint(module, data, use_reentrant=True))
        feats_ref.append(reference(data))
    tg.stack(feats).mean().backward()
    got = [_np(d.grad).copy() for d in inputs]
    for d in inputs:
        d.grad = None
    tg.stack(feats_ref).mean().backward()
    for g, d in zip(got, inputs):
        np.testing.assert_allclose(g, _np(d.grad), rtol=1e-5, atol=1e-8)
    for p, q in zip(module.parameters(), reference.parameters()):
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-5, atol=1e-8)
