"""tg.nn.Module semantics by value: registration, names and orders, shared parameters, state_dict
round trips and errors, modes, hooks, conversions, repr, containers, Parameter, and a Module whose
forward uses a Python tg.Function. Expected values are written out (PyTorch's behaviour)."""

import gc

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.register_buffer("steps", tg.zeros(1))
        self.register_buffer("scratch", tg.zeros(2), persistent=False)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(tg.ones(1))
        self.block = Block()
        self.head = nn.Linear(3, 1, bias=False)
        self.tied = self.head  # the same module under two names

    def forward(self, x):
        return self.head(self.block(x)) * self.scale


def test_named_parameters_order_names_and_sharing():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "block.fc.weight", "block.fc.bias", "head.weight"]
    assert len(list(net.parameters())) == 4
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)][-1] == "tied.weight"
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.named_parameters(prefix="m")][0] == "m.scale"
    assert [n for n, _ in net.named_buffers()] == ["block.steps", "block.scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "block.act", "head"]
    assert [n for n, _ in net.named_children()] == ["block", "head"]
    assert len(list(net.modules())) == 5
    # parameters() is a generator of tensors, as optimizers expect
    gen = net.parameters()
    assert iter(gen) is gen and all(isinstance(p, tg.Tensor) for p in gen)


def test_shared_parameter_listed_once():
    a = nn.Linear(2, 2)
    b = nn.Linear(2, 2)
    b.weight = a.weight
    seq = nn.Sequential(a, b)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "1.bias"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_registration_rules_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(tg.zeros(2))
    assert "w" in m._parameters and "w" not in m.__dict__
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = tg.zeros(2)  # a plain tensor cannot replace a parameter
    m.w = None
    assert m.w is None and list(m.parameters()) == []
    m.register_buffer("b", tg.ones(1))
    m.b = tg.zeros(3)  # a tensor replaces a buffer
    assert m.b.shape == (3,) and "b" in m._buffers
    with pytest.raises(TypeError):
        m.b = 3.0
    m.sub = nn.ReLU()
    with pytest.raises(TypeError):
        m.sub = 1
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        _ = m.nope
    with pytest.raises(KeyError):
        m.register_buffer("a.b", tg.zeros(1))
    with pytest.raises(KeyError):
        m.register_parameter("", None)
    with pytest.raises(TypeError):
        m.register_parameter("p", tg.zeros(1))
    with pytest.raises(ValueError, match="non-leaf"):
        m.register_parameter("q", _nonleaf_param())
    with pytest.raises(TypeError):
        m.add_module("x", 3)

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(tg.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _nonleaf_param():
    # A tensor with a grad_fn that is marked as a parameter: registration refuses it.
    from tapegrad.nn.parameter import _mark

    return _mark(tg.ones(1, requires_grad=True) * 2)


def test_parameter_marking():
    t = tg.ones(2)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and not isinstance(t, nn.Parameter)
    assert p.requires_grad and p.is_leaf and type(p) is tg.Tensor
    assert not nn.Parameter(tg.ones(1), requires_grad=False).requires_grad
    with tg.no_grad():
        p.add_(1.0)
    assert t.tolist() == [2.0, 2.0]  # shares data's storage, as in PyTorch
    assert isinstance(nn.Parameter(), nn.Parameter) and nn.Parameter().shape == (0,)
    with pytest.raises(TypeError):
        nn.Parameter([1.0])
    with pytest.raises(RuntimeError):
        nn.Parameter(tg.tensor([1, 2]))
    assert nn.parameter.parameter_repr(nn.Parameter(tg.zeros(1))).startswith("Parameter containing:\ntensor(")
    # the mark lives as long as the tensor object
    from tapegrad.nn import parameter as P

    gc.collect()  # tensors held by earlier tracebacks' cycles
    n = len(P._MARKED)
    q = nn.Parameter(tg.zeros(1))
    assert len(P._MARKED) == n + 1
    del q
    gc.collect()
    assert len(P._MARKED) == n


def test_state_dict_round_trip_and_sharing_storage():
    a, b = Net(), Net()
    sd = a.state_dict()
    # each module's own parameters and buffers, then its children's (PyTorch's order)
    assert list(sd) == ["scale", "block.steps", "block.fc.weight", "block.fc.bias", "head.weight", "tied.weight"]
    assert not any(v.requires_grad for v in sd.values())
    assert all(v.requires_grad for k, v in a.state_dict(keep_vars=True).items() if k != "block.steps")
    r = b.load_state_dict(sd)
    assert r.missing_keys == [] and r.unexpected_keys == [] and repr(r) == "<All keys matched successfully>"
    x = tg.randn(4, 2)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    # state_dict values share storage with the parameters
    with tg.no_grad():
        sd["scale"].fill_(5.0)
    assert a.scale.item() == 5.0
    # load copies, it does not alias
    assert b.scale.item() == 1.0


def test_load_state_dict_errors_and_strict_false():
    m = nn.Linear(2, 2)
    sd = dict(m.state_dict())
    del sd["bias"]
    sd["extra"] = tg.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Linear:\n\t")
    assert 'Missing key(s) in state_dict: "bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "extra". ' in msg
    assert msg.index("Missing") < msg.index("Unexpected")
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["bias"] and r.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape \(3, 2\)"):
        m.load_state_dict({"weight": tg.zeros(3, 2), "bias": tg.zeros(2)})
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict({"weight": tg.zeros(3, 2)}, strict=False)
    with pytest.raises(TypeError):
        m.load_state_dict([1, 2])


def test_non_persistent_buffer_not_in_state_dict():
    blk = Block()
    assert "scratch" not in blk.state_dict() and "steps" in blk.state_dict()
    assert [n for n, _ in blk.named_buffers()] == ["steps", "scratch"]


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    assert net.training and net.block.fc.training
    assert net.eval() is net and not net.block.act.training
    net.train()
    assert net.block.fc.training
    with pytest.raises(ValueError):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    net(tg.randn(3, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Block", "Linear", "Net"]


def test_dtype_conversions():
    net = Net().double()
    assert all(p.dtype == tg.float64 for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert net.block.steps.dtype == tg.float64
    assert net(tg.randn(2, 2, dtype=tg.float64)).dtype == tg.float64
    net.float()
    assert all(p.dtype == tg.float32 for p in net.parameters())
    assert net.to(tg.float64) is net and net.scale.dtype == tg.float64
    assert net.to("cpu") is net
    assert net.to(tg.zeros(1)).scale.dtype == tg.float32
    with pytest.raises(TypeError):
        net.to(tg.int64)
    with pytest.raises(RuntimeError):
        net.to("cuda")
    # the tied module is converted once and stays tied
    assert net.head is net.tied
    bn = nn.BatchNorm1d(2).double()
    assert bn.num_batches_tracked.dtype == tg.int64 and bn.running_mean.dtype == tg.float64


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", args[0].shape)))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(("post", out.shape)))
    x = tg.randn(3, 2)
    m(x)
    assert calls == [("pre", (3, 2)), ("post", (3, 2))]
    h1.remove()
    h2.remove()
    h2.remove()  # a second remove does nothing
    m(x)
    assert len(calls) == 2
    # a pre-hook's result replaces the arguments (a single value is wrapped); a hook's the output
    m2 = nn.Identity()
    m2.register_forward_pre_hook(lambda mod, args: args[0] + 1)
    m2.register_forward_hook(lambda mod, args, out: out * 10)
    assert m2(tg.zeros(1)).tolist() == [10.0]
    order = []
    m3 = nn.Identity()
    m3.register_forward_hook(lambda *a: order.append("a"))
    m3.register_forward_hook(lambda *a: order.append("b"), prepend=True)
    m3(tg.zeros(1))
    assert order == ["b", "a"]
    with m3.register_forward_pre_hook(lambda *a: order.append("ctx")):
        m3(tg.zeros(1))
    m3(tg.zeros(1))
    assert order.count("ctx") == 1


def test_repr_like_pytorch():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.2)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.2, inplace=False)\n"
        "  )\n"
        ")"
    )
    assert repr(nn.Embedding(10, 3, padding_idx=1)) == "Embedding(10, 3, padding_idx=1)"
    assert repr(nn.Module()) == "Module()"

    class Odd(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Odd()) == "Odd(\n  a=1\n  b=2\n)"


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[1], nn.ReLU)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2 and sub[0] is seq[1]
    with pytest.raises(IndexError):
        seq[3]
    seq.append(nn.Tanh())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"] and isinstance(seq[1], nn.Linear)
    seq[2] = nn.Sigmoid()
    assert isinstance(seq[2], nn.Sigmoid)
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["enc.weight", "enc.bias"]
    assert named.get_submodule("act") is named.act
    with pytest.raises(AttributeError):
        named.get_submodule("nope")

    ml = nn.ModuleList([nn.Linear(1, 1), nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "Linear", "ReLU"]
    assert [n for n, _ in ml.named_parameters()] == ["1.weight", "1.bias", "2.weight", "2.bias"]
    assert len(ml[1:3]) == 2
    ml += [nn.Sigmoid()]
    assert len(ml) == 5
    del ml[0]
    assert type(ml[0]).__name__ == "Linear"

    md = nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.ReLU()})
    assert list(md) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Tanh()
    assert [n for n, _ in md.named_modules()] == ["", "b", "a", "c"]
    assert isinstance(md.pop("a"), nn.ReLU) and list(md.keys()) == ["b", "c"]


class Cube(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class CubeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return Cube.apply(self.fc(x)).sum()


def test_module_with_custom_function():
    net = CubeNet().double()
    a = np.random.default_rng(3).normal(size=(4, 3))
    net(tg.tensor(a)).backward()
    w = net.fc.weight.detach().numpy()
    b = net.fc.bias.detach().numpy()
    z = a @ w.T + b
    g = 3 * z * z  # d/dz sum(z**3)
    np.testing.assert_allclose(net.fc.weight.grad.numpy(), g.T @ a, rtol=1e-12)
    np.testing.assert_allclose(net.fc.bias.grad.numpy(), g.sum(0), rtol=1e-12)


def test_deepcopy_and_pickle_keep_parameters_marked():
    import copy
    import pickle

    net = Net()
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert [n for n, _ in clone.named_parameters()] == [n for n, _ in net.named_parameters()]
        assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in clone.parameters())
        assert clone.head is clone.tied and clone.head.weight is not net.head.weight
        x = tg.randn(2, 2)
        np.testing.assert_array_equal(clone(x).detach().numpy(), net(x).detach().numpy())


def test_with_optim_and_save_load(tmp_path):
    """Module.parameters() plugs into tg.optim; a state_dict goes through tg.save/tg.load."""
    tg.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = tg.optim.Adam(net.parameters(), lr=0.02)
    X = tg.randn(32, 3)
    Y = X.sum(1, keepdim=True)
    first = None
    for _ in range(150):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(X), Y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.05 * first
    path = tmp_path / "ck.tg"
    tg.save(net.state_dict(), str(path))
    other = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    assert repr(other.load_state_dict(tg.load(str(path)))) == "<All keys matched successfully>"
    np.testing.assert_array_equal(other(X).detach().numpy(), net(X).detach().numpy())
