"""tg.nn against torch.nn: for every layer and loss, the tapegrad module's weights are copied into
the torch module of the same construction, and outputs, input gradients and parameter gradients are
compared (float64). Skipped when torch is not installed (run it with the venv that has torch:
``PYTHONPATH=python /work/venv/bin/python -m pytest tests/python/nn/test_nn_torch_differential.py``)."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch", reason="the differential test compares against PyTorch, which is not installed")

RNG = np.random.default_rng(1)
TOL = dict(rtol=1e-9, atol=1e-11)


def as_np(t):
    if isinstance(t, tg.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def copy_weights(tg_mod, torch_mod):
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in tg_mod.state_dict().items()}
    torch_mod.load_state_dict(sd, strict=True)
    assert list(sd) == list(torch_mod.state_dict()), "state_dict names and order differ"


def run_both(make_tg, make_torch, inputs, grad_inputs=True, out_index=None, train=True):
    """Calls both modules on the same float64 inputs; compares outputs and gradients."""
    m_tg = make_tg().double()
    m_t = make_torch().double()
    copy_weights(m_tg, m_t)
    m_tg.train(train)
    m_t.train(train)
    xs_tg = []
    xs_t = []
    for a in inputs:
        if isinstance(a, np.ndarray) and a.dtype == np.float64 and grad_inputs:
            xs_tg.append(tg.tensor(a, requires_grad=True))
            xs_t.append(torch.tensor(a, requires_grad=True))
        else:
            xs_tg.append(tg.tensor(a) if isinstance(a, np.ndarray) else a)
            xs_t.append(torch.tensor(a) if isinstance(a, np.ndarray) else a)
    out_tg = m_tg(*xs_tg)
    out_t = m_t(*xs_t)
    if out_index is not None:
        out_tg, out_t = out_tg[out_index], out_t[out_index]
    np.testing.assert_allclose(as_np(out_tg), as_np(out_t), **TOL)
    g = RNG.normal(size=tuple(out_t.shape))
    out_tg.backward(tg.tensor(g))
    out_t.backward(torch.tensor(g))
    for a, b in zip(xs_tg, xs_t):
        if isinstance(a, tg.Tensor) and a.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL)
    params_t = dict(m_t.named_parameters())
    for name, p in m_tg.named_parameters():
        assert name in params_t
        if params_t[name].grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            np.testing.assert_allclose(p.grad.numpy(), params_t[name].grad.numpy(), err_msg=name, **TOL)
    return m_tg, m_t


def x(*shape):
    return RNG.normal(size=shape)


LAYERS = {
    "Linear": (lambda: tg.nn.Linear(4, 3), lambda: torch.nn.Linear(4, 3), [x(5, 4)]),
    "Linear3d-nobias": (lambda: tg.nn.Linear(4, 3, bias=False), lambda: torch.nn.Linear(4, 3, bias=False), [x(2, 5, 4)]),
    "Bilinear": (lambda: tg.nn.Bilinear(3, 2, 4), lambda: torch.nn.Bilinear(3, 2, 4), [x(5, 3), x(5, 2)]),
    "LayerNorm": (lambda: tg.nn.LayerNorm(4), lambda: torch.nn.LayerNorm(4), [x(3, 4)]),
    "LayerNorm2": (lambda: tg.nn.LayerNorm((2, 3)), lambda: torch.nn.LayerNorm((2, 3)), [x(4, 2, 3)]),
    "RMSNorm": (lambda: tg.nn.RMSNorm(4), lambda: torch.nn.RMSNorm(4), [x(3, 4)]),
    "RMSNorm-eps": (lambda: tg.nn.RMSNorm(4, eps=1e-3), lambda: torch.nn.RMSNorm(4, eps=1e-3), [x(2, 3, 4)]),
    "BatchNorm1d": (lambda: tg.nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), [x(5, 3)]),
    "BatchNorm1d-3d": (lambda: tg.nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), [x(4, 3, 2)]),
    "Identity": (lambda: tg.nn.Identity(), lambda: torch.nn.Identity(), [x(2, 3)]),
    "Flatten": (lambda: tg.nn.Flatten(), lambda: torch.nn.Flatten(), [x(2, 3, 4)]),
    "Unflatten": (lambda: tg.nn.Unflatten(1, (2, 3)), lambda: torch.nn.Unflatten(1, (2, 3)), [x(4, 6)]),
    "ReLU": (lambda: tg.nn.ReLU(), lambda: torch.nn.ReLU(), [x(3, 4)]),
    "GELU": (lambda: tg.nn.GELU(), lambda: torch.nn.GELU(), [x(3, 4)]),
    "GELU-tanh": (lambda: tg.nn.GELU("tanh"), lambda: torch.nn.GELU("tanh"), [x(3, 4)]),
    "SiLU": (lambda: tg.nn.SiLU(), lambda: torch.nn.SiLU(), [x(3, 4)]),
    "Tanh": (lambda: tg.nn.Tanh(), lambda: torch.nn.Tanh(), [x(3, 4)]),
    "Sigmoid": (lambda: tg.nn.Sigmoid(), lambda: torch.nn.Sigmoid(), [x(3, 4)]),
    "Softmax": (lambda: tg.nn.Softmax(dim=1), lambda: torch.nn.Softmax(dim=1), [x(3, 4)]),
    "LogSoftmax": (lambda: tg.nn.LogSoftmax(dim=0), lambda: torch.nn.LogSoftmax(dim=0), [x(3, 4)]),
    "LeakyReLU": (lambda: tg.nn.LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2), [x(3, 4)]),
    "ELU": (lambda: tg.nn.ELU(0.7), lambda: torch.nn.ELU(0.7), [x(3, 4)]),
    "Softplus": (lambda: tg.nn.Softplus(2.0, 3.0), lambda: torch.nn.Softplus(2.0, 3.0), [x(3, 4) * 3]),
    "Sequential": (
        lambda: tg.nn.Sequential(tg.nn.Linear(4, 5), tg.nn.Tanh(), tg.nn.Linear(5, 2)),
        lambda: torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)),
        [x(3, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name):
    make_tg, make_t, inputs = LAYERS[name]
    run_both(make_tg, make_t, inputs)


def test_batchnorm_running_stats_and_eval_match_torch():
    m_tg, m_t = run_both(lambda: tg.nn.BatchNorm1d(3, momentum=0.3), lambda: torch.nn.BatchNorm1d(3, momentum=0.3), [x(6, 3)])
    for name, b in m_tg.named_buffers():
        np.testing.assert_allclose(b.numpy(), m_t.get_buffer(name).numpy(), **TOL)
    a = x(4, 3)
    m_tg.eval()
    m_t.eval()
    np.testing.assert_allclose(m_tg(tg.tensor(a)).detach().numpy(), m_t(torch.tensor(a)).detach().numpy(), **TOL)
    # momentum=None: a cumulative average over the batches seen
    m_tg = tg.nn.BatchNorm1d(2, momentum=None).double()
    m_t = torch.nn.BatchNorm1d(2, momentum=None).double()
    for _ in range(3):
        a = x(5, 2)
        m_tg(tg.tensor(a))
        m_t(torch.tensor(a))
    np.testing.assert_allclose(m_tg.running_var.numpy(), m_t.running_var.numpy(), **TOL)
    assert m_tg.num_batches_tracked.item() == 3


def test_embedding_matches_torch():
    idx = np.array([[1, 0, 3], [3, 3, 2]])
    for pad in (None, 3):
        m_tg = tg.nn.Embedding(5, 4, padding_idx=pad).double()
        m_t = torch.nn.Embedding(5, 4, padding_idx=pad).double()
        copy_weights(m_tg, m_t)
        o_tg, o_t = m_tg(tg.tensor(idx)), m_t(torch.tensor(idx))
        np.testing.assert_allclose(o_tg.detach().numpy(), o_t.detach().numpy(), **TOL)
        g = RNG.normal(size=o_t.shape)
        o_tg.backward(tg.tensor(g))
        o_t.backward(torch.tensor(g))
        np.testing.assert_allclose(m_tg.weight.grad.numpy(), m_t.weight.grad.numpy(), **TOL)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool_attn", "float_attn", "padding", "both", "3d_attn"])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_matches_torch(batch_first, masks, average):
    E, H, L, S, N = 6, 2, 4, 5, 3
    m_tg = tg.nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    m_t = torch.nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    copy_weights(m_tg, m_t)
    # give the zero-initialised biases values, so that their gradients are tested through a
    # non-trivial forward
    with tg.no_grad():
        m_tg.in_proj_bias.copy_(tg.tensor(x(3 * E)))
    with torch.no_grad():
        m_t.in_proj_bias.copy_(torch.tensor(m_tg.in_proj_bias.detach().numpy()))
    shape_q = (N, L, E) if batch_first else (L, N, E)
    shape_k = (N, S, E) if batch_first else (S, N, E)
    q, k, v = x(*shape_q), x(*shape_k), x(*shape_k)
    kw_tg, kw_t = {}, {}
    if masks in ("bool_attn", "both"):
        am = RNG.random((L, S)) < 0.3
        am[:, 0] = False
        kw_tg["attn_mask"], kw_t["attn_mask"] = tg.tensor(am), torch.tensor(am)
    if masks == "float_attn":
        am = x(L, S)
        kw_tg["attn_mask"], kw_t["attn_mask"] = tg.tensor(am), torch.tensor(am)
    if masks == "3d_attn":
        am = x(N * H, L, S)
        kw_tg["attn_mask"], kw_t["attn_mask"] = tg.tensor(am), torch.tensor(am)
    if masks in ("padding", "both"):
        kp = RNG.random((N, S)) < 0.4
        kp[:, 1] = False
        kw_tg["key_padding_mask"], kw_t["key_padding_mask"] = tg.tensor(kp), torch.tensor(kp)
    tq, tk, tv = (tg.tensor(a, requires_grad=True) for a in (q, k, v))
    pq, pk, pv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    o_tg, w_tg = m_tg(tq, tk, tv, average_attn_weights=average, **kw_tg)
    o_t, w_t = m_t(pq, pk, pv, average_attn_weights=average, **kw_t)
    np.testing.assert_allclose(o_tg.detach().numpy(), o_t.detach().numpy(), **TOL)
    np.testing.assert_allclose(w_tg.detach().numpy(), w_t.detach().numpy(), **TOL)
    g = x(*o_t.shape)
    gw = x(*w_t.shape)
    ((o_tg * tg.tensor(g)).sum() + (w_tg * tg.tensor(gw)).sum()).backward()
    ((o_t * torch.tensor(g)).sum() + (w_t * torch.tensor(gw)).sum()).backward()
    for a, b in ((tq, pq), (tk, pk), (tv, pv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL)
    params_t = dict(m_t.named_parameters())
    assert [n for n, _ in m_tg.named_parameters()] == list(params_t)
    for name, p in m_tg.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), params_t[name].grad.numpy(), err_msg=name, **TOL)


def test_multihead_attention_unbatched_and_no_weights():
    m_tg = tg.nn.MultiheadAttention(4, 1).double()
    m_t = torch.nn.MultiheadAttention(4, 1).double()
    copy_weights(m_tg, m_t)
    q = x(3, 4)
    o_tg, w_tg = m_tg(tg.tensor(q), tg.tensor(q), tg.tensor(q))
    o_t, w_t = m_t(torch.tensor(q), torch.tensor(q), torch.tensor(q))
    np.testing.assert_allclose(o_tg.detach().numpy(), o_t.detach().numpy(), **TOL)
    np.testing.assert_allclose(w_tg.detach().numpy(), w_t.detach().numpy(), **TOL)
    assert m_tg(tg.tensor(q), tg.tensor(q), tg.tensor(q), need_weights=False)[1] is None


# ---- losses ---------------------------------------------------------------------------------------


def probs(*shape):
    return 1 / (1 + np.exp(-x(*shape)))


def loss_cases():
    yield "MSELoss", {}, [x(3, 4), x(3, 4)]
    yield "L1Loss", {"reduction": "sum"}, [x(3, 4), x(3, 4)]
    yield "SmoothL1Loss", {"beta": 0.5}, [x(3, 4), x(3, 4)]
    yield "SmoothL1Loss", {"reduction": "none"}, [x(5), x(5)]
    yield "HuberLoss", {"delta": 0.7}, [x(3, 4), x(3, 4)]
    yield "HuberLoss", {"reduction": "none"}, [x(6), x(6)]
    yield "BCELoss", {}, [probs(3, 4), probs(3, 4)]
    yield "BCELoss", {"weight": "w4", "reduction": "sum"}, [probs(3, 4), probs(3, 4)]
    yield "BCEWithLogitsLoss", {}, [x(3, 4), probs(3, 4)]
    yield "BCEWithLogitsLoss", {"pos_weight": "w4", "weight": "w4"}, [x(3, 4), probs(3, 4)]
    yield "KLDivLoss", {"reduction": "batchmean"}, [np.log(probs(3, 4)), probs(3, 4)]
    yield "KLDivLoss", {"reduction": "sum", "log_target": True}, [x(3, 4), x(3, 4)]
    yield "KLDivLoss", {"reduction": "none"}, [x(3, 4), np.where(RNG.random((3, 4)) < 0.3, 0.0, probs(3, 4))]
    yield "NLLLoss", {}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "NLLLoss", {"weight": "w4", "ignore_index": 1}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "NLLLoss", {"reduction": "none"}, [x(2, 4, 3), np.array([[0, 3, 1], [1, 2, 2]])]
    yield "CrossEntropyLoss", {}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "CrossEntropyLoss", {"reduction": "sum"}, [x(4), np.array(2)]
    yield "CrossEntropyLoss", {"weight": "w4", "ignore_index": 3}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "CrossEntropyLoss", {"label_smoothing": 0.2}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "CrossEntropyLoss", {"label_smoothing": 0.3, "weight": "w4", "ignore_index": 1}, [x(5, 4), np.array([0, 3, 1, 1, 2])]
    yield "CrossEntropyLoss", {"label_smoothing": 0.1, "reduction": "none"}, [x(2, 4, 3), np.array([[0, 3, 1], [1, 2, 2]])]
    yield "CrossEntropyLoss", {"label_smoothing": 0.1, "reduction": "sum", "weight": "w4"}, [x(2, 4, 3), np.array([[0, 3, 1], [1, 2, 2]])]
    yield "CrossEntropyLoss", {}, [x(5, 4), np.exp(x(5, 4)) / np.exp(x(5, 4)).sum(1, keepdims=True)]
    yield "CrossEntropyLoss", {"label_smoothing": 0.2, "weight": "w4"}, [x(2, 4, 3), probs(2, 4, 3)]
    yield "CrossEntropyLoss", {"reduction": "none"}, [x(5, 4), probs(5, 4)]


W4 = RNG.random(4) + 0.5


@pytest.mark.parametrize("case", list(loss_cases()), ids=lambda c: c[0] + str(sorted(c[1].items())))
def test_loss_matches_torch(case):
    name, kwargs, (inp, target) = case
    kw_tg = {k: (tg.tensor(W4) if v == "w4" else v) for k, v in kwargs.items()}
    kw_t = {k: (torch.tensor(W4) if v == "w4" else v) for k, v in kwargs.items()}
    a_tg = tg.tensor(inp, requires_grad=True)
    a_t = torch.tensor(inp, requires_grad=True)
    t_tg, t_t = tg.tensor(target), torch.tensor(target)
    l_tg = getattr(tg.nn, name)(**kw_tg)(a_tg, t_tg)
    l_t = getattr(torch.nn, name)(**kw_t)(a_t, t_t)
    np.testing.assert_allclose(l_tg.detach().numpy(), l_t.detach().numpy(), **TOL)
    g = RNG.normal(size=tuple(l_t.shape))
    l_tg.backward(tg.tensor(g))
    l_t.backward(torch.tensor(g))
    np.testing.assert_allclose(a_tg.grad.numpy(), a_t.grad.numpy(), **TOL)


def test_functional_activations_match_torch():
    a = x(4, 5) * 3
    TF = torch.nn.functional
    F = tg.nn.functional
    pairs = [
        (F.selu, TF.selu), (F.logsigmoid, TF.logsigmoid), (lambda t: F.hardtanh(t, -0.5, 2.0), lambda t: TF.hardtanh(t, -0.5, 2.0)),
        (F.softplus, TF.softplus), (lambda t: F.elu(t, 2.0), lambda t: TF.elu(t, 2.0)), (F.gelu, TF.gelu),
    ]
    for f_tg, f_t in pairs:
        xt, xp = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        o_tg, o_t = f_tg(xt), f_t(xp)
        np.testing.assert_allclose(o_tg.detach().numpy(), o_t.detach().numpy(), **TOL)
        o_tg.sum().backward()
        o_t.sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), xp.grad.numpy(), **TOL)


def test_default_initialisation_distributions_match_torch():
    """PyTorch's defaults: Linear's weight and bias within 1/sqrt(fan_in) and spread over it."""
    m = tg.nn.Linear(400, 300)
    w = m.weight.detach().numpy()
    bound = 1 / np.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.01 * bound
    tw = torch.nn.Linear(400, 300).weight.detach().numpy()
    assert abs(w.std() - tw.std()) < 0.01 * bound
    mha = tg.nn.MultiheadAttention(8, 2)
    xb = np.sqrt(6 / (8 + 24))
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= xb
    assert not mha.in_proj_bias.detach().numpy().any() and not mha.out_proj.bias.detach().numpy().any()


def test_state_dict_keys_match_torch():
    pairs = [
        (tg.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)),
        (tg.nn.MultiheadAttention(4, 2), torch.nn.MultiheadAttention(4, 2)),
        (
            tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.LayerNorm(2), tg.nn.Embedding(3, 2)),
            torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2), torch.nn.Embedding(3, 2)),
        ),
    ]
    for a, b in pairs:
        assert list(a.state_dict()) == list(b.state_dict())
        assert [n for n, _ in a.named_modules()] == [n for n, _ in b.named_modules()]
        assert repr(a) == repr(b)


@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention_matches_torch(mask):
    q, k, v = x(2, 3, 4, 5), x(2, 3, 6, 5), x(2, 3, 6, 5)
    kw_tg, kw_t = {}, {}
    if mask == "bool":
        m = RNG.random((4, 6)) < 0.6
        m[:, 0] = True
        kw_tg["attn_mask"], kw_t["attn_mask"] = tg.tensor(m), torch.tensor(m)
    elif mask == "float":
        m = x(4, 6)
        kw_tg["attn_mask"], kw_t["attn_mask"] = tg.tensor(m), torch.tensor(m)
    elif mask == "causal":
        kw_tg["is_causal"] = kw_t["is_causal"] = True
    a_tg = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
    a_t = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    o_tg = tg.nn.functional.scaled_dot_product_attention(*a_tg, scale=0.3, **kw_tg)
    o_t = torch.nn.functional.scaled_dot_product_attention(*a_t, scale=0.3, **kw_t)
    np.testing.assert_allclose(o_tg.detach().numpy(), o_t.detach().numpy(), **TOL)
    g = x(*o_t.shape)
    o_tg.backward(tg.tensor(g))
    o_t.backward(torch.tensor(g))
    for a, b in zip(a_tg, a_t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL)


def test_index_operations_match_torch():
    a = x(3, 4, 5)
    keys = [
        lambda L: ([2, 0],),
        lambda L: (slice(None), L.tensor([[1, 3], [0, 0]]), slice(1, 4)),
        lambda L: (L.tensor([0, 2]), slice(None), L.tensor([4, -1])),
        lambda L: (1, L.tensor([3, 2, 1])),
        lambda L: (Ellipsis, L.tensor([[0], [4]]), None),
    ]
    for key in keys:
        at, ap = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ot, op = at[key(tg)], ap[key(torch)]
        np.testing.assert_array_equal(ot.detach().numpy(), op.detach().numpy())
        g = x(*op.shape)
        ot.backward(tg.tensor(g))
        op.backward(torch.tensor(g))
        np.testing.assert_allclose(at.grad.numpy(), ap.grad.numpy(), **TOL)
    gidx = np.array([[[0, 2, 1, 3, 0], [3, 3, 1, 0, 2]]] * 3)
    ops = [
        ("gather", lambda t, L: t.gather(1, L.tensor(gidx))),
        ("index_select", lambda t, L: t.index_select(2, L.tensor([4, 0, 4]))),
        ("amax", lambda t, L: t.amax((0, 2))),
        ("logsumexp", lambda t, L: t.logsumexp(1, keepdim=True)),
        ("var", lambda t, L: t.var((0, 1), correction=0)),
        ("prod", lambda t, L: t.prod(1)),
        ("min", lambda t, L: t.min(2).values),
        ("index_add", lambda t, L: t.index_add(1, L.tensor([0, 0]), t[:, 1:3] * 2)),
        ("scatter_add", lambda t, L: t.scatter_add(1, L.tensor(gidx), t[:, :2] * 3)),
    ]
    for name, f in ops:
        at, ap = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ot, op = f(at, tg), f(ap, torch)
        np.testing.assert_allclose(ot.detach().numpy(), op.detach().numpy(), err_msg=name, **TOL)
        g = x(*op.shape)
        ot.backward(tg.tensor(g))
        op.backward(torch.tensor(g))
        np.testing.assert_allclose(at.grad.numpy(), ap.grad.numpy(), err_msg=name, **TOL)
