"""tg.nn layers, losses, init and utils against NumPy formulas (values) and float64 central
differences (gradients, via tg.autograd.gradcheck / gradgradcheck), plus their errors."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.autograd import gradcheck, gradgradcheck

F = nn.functional
RNG = np.random.default_rng(7)


def leaf(a):
    return tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def val(t):
    return t.detach().numpy()


def sig(a):
    return 1 / (1 + np.exp(-a))


def np_log_softmax(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


# ---- layers -------------------------------------------------------------------------------------


def test_linear_and_bilinear_values_and_gradients():
    a, w, b = RNG.normal(size=(4, 3)), RNG.normal(size=(2, 3)), RNG.normal(size=2)
    np.testing.assert_allclose(val(F.linear(tg.tensor(a), tg.tensor(w), tg.tensor(b))), a @ w.T + b, rtol=1e-12)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (leaf(a), leaf(w), leaf(b)))
    x1, x2, W, c = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2)), RNG.normal(size=(4, 3, 2)), RNG.normal(size=4)
    want = np.einsum("ni,kij,nj->nk", x1, W, x2) + c
    np.testing.assert_allclose(val(F.bilinear(tg.tensor(x1), tg.tensor(x2), tg.tensor(W), tg.tensor(c))), want, rtol=1e-12)
    assert gradcheck(F.bilinear, (leaf(x1), leaf(x2), leaf(W), leaf(c)))
    with pytest.raises(RuntimeError):
        F.bilinear(tg.tensor(x1), tg.tensor(x1), tg.tensor(W))


def test_embedding_padding_gets_no_gradient():
    w = RNG.normal(size=(5, 3))
    idx = np.array([[0, 2, 2], [4, 0, 1]])
    e = tg.tensor(w, requires_grad=True)
    out = F.embedding(tg.tensor(idx), e, padding_idx=2)
    np.testing.assert_array_equal(val(out), w[idx])
    out.sum().backward()
    g = np.zeros_like(w)
    np.add.at(g, idx, 1.0)
    g[2] = 0.0
    np.testing.assert_array_equal(e.grad.numpy(), g)
    m = nn.Embedding(4, 2, padding_idx=-1)
    assert m.padding_idx == 3 and val(m.weight)[3].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError):
        F.embedding(tg.tensor([0.0]), e)
    with pytest.raises(IndexError):
        F.embedding(tg.tensor([5]), e)


def test_layer_norm_rms_norm_values_and_second_order():
    a = RNG.normal(size=(3, 4))
    w, b = RNG.normal(size=4), RNG.normal(size=4)
    mu, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    np.testing.assert_allclose(val(F.layer_norm(tg.tensor(a), 4, tg.tensor(w), tg.tensor(b))), (a - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-10)
    rms = a / np.sqrt((a * a).mean(-1, keepdims=True) + np.finfo(np.float64).eps) * w
    np.testing.assert_allclose(val(F.rms_norm(tg.tensor(a), [4], tg.tensor(w))), rms, rtol=1e-10)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, 4, w, b), (leaf(a), leaf(w), leaf(b)))
    assert gradgradcheck(lambda x: F.layer_norm(x, 4), (leaf(a),))
    assert gradcheck(lambda x, w: F.rms_norm(x, 4, w, eps=1e-6), (leaf(a), leaf(w)))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(tg.tensor(a), 3)


def test_batch_norm_training_eval_and_running_stats():
    a = RNG.normal(size=(6, 3, 2))
    bn = nn.BatchNorm1d(3, momentum=0.25).double()
    out = bn(tg.tensor(a))
    mu = a.mean((0, 2), keepdims=True)
    var = a.var((0, 2), keepdims=True)
    np.testing.assert_allclose(val(out), (a - mu) / np.sqrt(var + 1e-5), rtol=1e-10)
    n = 12
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.25 * mu.ravel(), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.75 + 0.25 * var.ravel() * n / (n - 1), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    b = RNG.normal(size=(2, 3, 2))
    want = (b - bn.running_mean.numpy().reshape(1, 3, 1)) / np.sqrt(bn.running_var.numpy().reshape(1, 3, 1) + 1e-5)
    np.testing.assert_allclose(val(bn(tg.tensor(b))), want, rtol=1e-10)
    assert bn.num_batches_tracked.item() == 1
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (leaf(a), leaf(RNG.normal(size=3)), leaf(RNG.normal(size=3))))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(tg.zeros(1, 3))
    with pytest.raises(ValueError):
        nn.BatchNorm1d(3)(tg.zeros(3))


def test_dropout():
    tg.manual_seed(0)
    x = tg.ones(2000, dtype=tg.float64)
    y = val(F.dropout(x, 0.3))
    kept = y != 0
    assert set(np.unique(y)) <= {0.0, 1 / 0.7}
    assert abs(kept.mean() - 0.7) < 0.05
    assert val(F.dropout(x, 1.0)).sum() == 0.0
    d = nn.Dropout(0.5).eval()
    assert d(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)
    # the gradient is the same mask, scaled
    xl = tg.ones(50, dtype=tg.float64, requires_grad=True)
    out = F.dropout(xl, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(xl.grad.numpy(), val(out))


def test_shape_layers():
    a = RNG.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(val(nn.Flatten()(tg.tensor(a))), a.reshape(2, 12))
    np.testing.assert_array_equal(val(nn.Flatten(0, 1)(tg.tensor(a))), a.reshape(6, 4))
    np.testing.assert_array_equal(val(nn.Unflatten(-1, (2, 2))(tg.tensor(a))), a.reshape(2, 3, 2, 2))


ACTS = {
    "relu": (F.relu, lambda a: np.maximum(a, 0)),
    "gelu": (F.gelu, lambda a: a * 0.5 * (1 + np.vectorize(math.erf)(a / np.sqrt(2)))),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3)))),
    "silu": (F.silu, lambda a: a * sig(a)),
    "elu": (lambda t: F.elu(t, 0.5), lambda a: np.where(a > 0, a, 0.5 * (np.exp(a) - 1))),
    "selu": (F.selu, lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * (np.exp(a) - 1))),
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    "hardtanh": (F.hardtanh, lambda a: np.clip(a, -1, 1)),
    "softplus": (lambda t: F.softplus(t, 2.0, 5.0), lambda a: np.where(2 * a > 5, a, np.log1p(np.exp(2 * a)) / 2)),
    "logsigmoid": (F.logsigmoid, lambda a: -np.log1p(np.exp(-a))),
    "sigmoid": (F.sigmoid, sig),
    "tanh": (F.tanh, np.tanh),
    "softmax": (lambda t: F.softmax(t, dim=-1), lambda a: np.exp(np_log_softmax(a, -1))),
    "log_softmax": (lambda t: F.log_softmax(t, dim=0), lambda a: np_log_softmax(a, 0)),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_values_and_gradients(name):
    f, ref = ACTS[name]
    # away from the kinks at 0, ±1 and the softplus threshold 2.5
    a = RNG.uniform(0.1, 0.9, size=(3, 4)) * RNG.choice([-3, 3], size=(3, 4))
    a = np.where(np.abs(np.abs(a) - 1) < 0.05, a * 0.8, a)
    a = np.where(np.abs(a - 2.5) < 0.05, 2.0, a)
    np.testing.assert_allclose(val(f(tg.tensor(a))), ref(a), rtol=1e-10, atol=1e-12)
    assert gradcheck(f, (leaf(a),))
    if name not in ("relu", "hardtanh", "leaky_relu"):
        assert gradgradcheck(f, (leaf(a),))


def test_softplus_and_logsigmoid_are_finite_at_extremes():
    x = tg.tensor([-1000.0, 1000.0], dtype=tg.float64, requires_grad=True)
    y = F.softplus(x) + F.logsigmoid(x)
    y.sum().backward()
    assert np.isfinite(val(y)).all() and np.isfinite(x.grad.numpy()).all()


# ---- losses -------------------------------------------------------------------------------------


def test_regression_losses():
    a, t = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    d = a - t
    np.testing.assert_allclose(val(F.mse_loss(tg.tensor(a), tg.tensor(t))), (d * d).mean(), rtol=1e-12)
    np.testing.assert_allclose(val(F.l1_loss(tg.tensor(a), tg.tensor(t), reduction="sum")), np.abs(d).sum(), rtol=1e-12)
    ad = np.abs(d)
    np.testing.assert_allclose(val(F.smooth_l1_loss(tg.tensor(a), tg.tensor(t), reduction="none", beta=0.5)), np.where(ad < 0.5, 0.5 * d * d / 0.5, ad - 0.25), rtol=1e-12)
    np.testing.assert_allclose(val(F.huber_loss(tg.tensor(a), tg.tensor(t), delta=0.5)), np.where(ad <= 0.5, 0.5 * d * d, 0.5 * (ad - 0.25)).mean(), rtol=1e-12)
    np.testing.assert_allclose(val(F.smooth_l1_loss(tg.tensor(a), tg.tensor(t), beta=0.0)), ad.mean(), rtol=1e-12)
    for f in (F.mse_loss, F.l1_loss, lambda x, y: F.smooth_l1_loss(x, y, beta=0.3), lambda x, y: F.huber_loss(x, y, delta=0.3)):
        assert gradcheck(lambda x, f=f: f(x, tg.tensor(t)), (leaf(a),))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(tg.tensor(a), tg.tensor(t), reduction="avg")
    with pytest.raises(ValueError):
        nn.L1Loss(reduction="bad")


def test_cross_entropy_and_nll_against_numpy():
    logits = RNG.normal(size=(5, 4))
    target = np.array([0, 3, 1, 1, 2])
    w = RNG.random(4) + 0.5
    lp = np_log_softmax(logits, 1)
    picked = -lp[np.arange(5), target]
    np.testing.assert_allclose(val(F.cross_entropy(tg.tensor(logits), tg.tensor(target))), picked.mean(), rtol=1e-12)
    # weights and ignore_index: the mean divides by the weights of the kept targets
    keep = target != 1
    wt = w[target] * keep
    want = (picked * wt).sum() / wt.sum()
    got = F.cross_entropy(tg.tensor(logits), tg.tensor(target), weight=tg.tensor(w), ignore_index=1)
    np.testing.assert_allclose(val(got), want, rtol=1e-12)
    np.testing.assert_allclose(val(F.nll_loss(tg.tensor(lp), tg.tensor(target), reduction="none")), picked, rtol=1e-12)
    # label smoothing: (1 - eps) * nll + eps / C * (-sum_c log p_c)
    eps = 0.2
    smooth = -lp.sum(1)
    want = (1 - eps) * picked.mean() + eps / 4 * smooth.mean()
    np.testing.assert_allclose(val(F.cross_entropy(tg.tensor(logits), tg.tensor(target), label_smoothing=eps)), want, rtol=1e-12)
    # class probabilities
    p = np.exp(np_log_softmax(RNG.normal(size=(5, 4)), 1))
    np.testing.assert_allclose(val(F.cross_entropy(tg.tensor(logits), tg.tensor(p))), -(p * lp).sum(1).mean(), rtol=1e-12)
    # (N, C, d) input
    l3 = RNG.normal(size=(2, 4, 3))
    t3 = np.array([[0, 3, 1], [2, 2, 0]])
    lp3 = np_log_softmax(l3, 1)
    want3 = -np.take_along_axis(lp3, t3[:, None, :], 1)[:, 0, :]
    np.testing.assert_allclose(val(F.cross_entropy(tg.tensor(l3), tg.tensor(t3), reduction="none")), want3, rtol=1e-12)
    assert gradcheck(lambda x: F.cross_entropy(x, tg.tensor(target), weight=tg.tensor(w), label_smoothing=0.1), (leaf(logits),))
    assert gradgradcheck(lambda x: F.cross_entropy(x, tg.tensor(target)), (leaf(logits),))
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(tg.tensor(logits), tg.tensor([0, 4, 1, 1, 2]))
    with pytest.raises(ValueError):
        F.cross_entropy(tg.tensor(logits), tg.tensor([0, 1]))
    with pytest.raises(RuntimeError):
        F.cross_entropy(tg.tensor(logits), tg.tensor(target), label_smoothing=1.5)
    with pytest.raises(RuntimeError):
        F.nll_loss(tg.tensor(lp), tg.tensor(target.astype(np.float64)))


def test_cross_entropy_stable_for_large_logits():
    logits = tg.tensor([[1e4, 0.0, -1e4]], requires_grad=True)
    loss = F.cross_entropy(logits, tg.tensor([1]))
    loss.backward()
    assert math.isclose(loss.item(), 1e4, rel_tol=1e-6)
    assert np.isfinite(logits.grad.numpy()).all()


def test_binary_losses_and_kl():
    p, t = sig(RNG.normal(size=(3, 4))), sig(RNG.normal(size=(3, 4)))
    z = RNG.normal(size=(3, 4)) * 3
    pw = RNG.random(4) + 0.5
    np.testing.assert_allclose(val(F.binary_cross_entropy(tg.tensor(p), tg.tensor(t))), -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(), rtol=1e-12)
    want = -(pw * t * np.log(sig(z)) + (1 - t) * np.log(1 - sig(z)))
    np.testing.assert_allclose(val(F.binary_cross_entropy_with_logits(tg.tensor(z), tg.tensor(t), pos_weight=tg.tensor(pw), reduction="none")), want, rtol=1e-10)
    # log clamped at -100, as in PyTorch
    assert F.binary_cross_entropy(tg.tensor([0.0]), tg.tensor([1.0])).item() == 100.0
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(tg.tensor([1.5]), tg.tensor([1.0]))
    with pytest.raises(ValueError):
        F.binary_cross_entropy_with_logits(tg.tensor([1.5]), tg.tensor([1.0, 0.0]))
    lq = np_log_softmax(RNG.normal(size=(3, 4)), 1)
    tt = np.exp(np_log_softmax(RNG.normal(size=(3, 4)), 1))
    tt[0, 0] = 0.0
    terms = np.where(tt > 0, tt * np.log(np.where(tt > 0, tt, 1)), 0) - tt * lq
    np.testing.assert_allclose(val(F.kl_div(tg.tensor(lq), tg.tensor(tt), reduction="batchmean")), terms.sum() / 3, rtol=1e-12)
    np.testing.assert_allclose(val(F.kl_div(tg.tensor(lq), tg.tensor(np.log(tt + 0.1)), reduction="sum", log_target=True)), ((tt + 0.1) * (np.log(tt + 0.1) - lq)).sum(), rtol=1e-12)
    assert gradcheck(lambda x: F.binary_cross_entropy(x, tg.tensor(t)), (leaf(p),))
    assert gradcheck(lambda x: F.binary_cross_entropy_with_logits(x, tg.tensor(t), pos_weight=tg.tensor(pw)), (leaf(z),))
    assert gradcheck(lambda x: F.kl_div(x, tg.tensor(tt)), (leaf(lq),))


def test_multihead_attention_against_numpy():
    E, H, L, N = 4, 2, 3, 2
    m = nn.MultiheadAttention(E, H, batch_first=True).double()
    x = RNG.normal(size=(N, L, E))
    out, w = m(tg.tensor(x), tg.tensor(x), tg.tensor(x), average_attn_weights=False)
    Wi, bi = val(m.in_proj_weight), val(m.in_proj_bias)
    Wo, bo = val(m.out_proj.weight), val(m.out_proj.bias)
    q, k, v = (x @ Wi[i * E:(i + 1) * E].T + bi[i * E:(i + 1) * E] for i in range(3))
    D = E // H
    split = lambda t: t.reshape(N, L, H, D).transpose(0, 2, 1, 3)  # noqa: E731
    s = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(D)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ split(v)).transpose(0, 2, 1, 3).reshape(N, L, E) @ Wo.T + bo
    np.testing.assert_allclose(val(w), a, rtol=1e-10)
    np.testing.assert_allclose(val(out), o, rtol=1e-10)
    assert gradcheck(lambda q: m(q, q, q)[0], (leaf(x),))
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(tg.tensor(x), tg.tensor(x), tg.tensor(x), is_causal=True)
    with pytest.raises(AssertionError):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(NotImplementedError):
        nn.MultiheadAttention(4, 2, kdim=3)


# ---- init ---------------------------------------------------------------------------------------


def test_init_bounds_and_statistics():
    tg.manual_seed(1)
    w = tg.empty(300, 200, dtype=tg.float64)
    nn.init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    assert np.abs(val(w)).max() <= bound and abs(val(w).std() - bound / math.sqrt(3)) < 0.02 * bound
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(val(w).std() - math.sqrt(2 / 300)) < 0.02 * math.sqrt(2 / 300)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(val(w)).max() <= 1 / math.sqrt(200)
    nn.init.normal_(w, 3.0, 0.5)
    assert abs(val(w).mean() - 3.0) < 0.01 and abs(val(w).std() - 0.5) < 0.01
    nn.init.trunc_normal_(w, std=2.0, a=-1.0, b=1.5)
    assert val(w).min() >= -1.0 and val(w).max() <= 1.5
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(val(w).T @ val(w), np.eye(200), atol=1e-10)
    assert nn.init.constant_(w, 0.25) is w and set(np.unique(val(w))) == {0.25}
    p = nn.Parameter(tg.zeros(3))
    nn.init.ones_(p)  # under no_grad: a leaf that requires grad may be initialised
    assert p.tolist() == [1.0, 1.0, 1.0] and p.grad_fn is None
    assert nn.init.calculate_gain("tanh") == 5 / 3 and nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    with pytest.raises(ValueError):
        nn.init.calculate_gain("bogus")
    with pytest.raises(ValueError):
        nn.init.xavier_uniform_(tg.empty(3))


# ---- utils --------------------------------------------------------------------------------------


def test_clip_grad_norm_and_value():
    a, b = tg.zeros(3, requires_grad=True), tg.zeros(2, requires_grad=True)
    ga, gb = np.array([1.0, -2.0, 2.0]), np.array([4.0, 0.0])
    ((a * tg.tensor(ga)).sum() + (b * tg.tensor(gb)).sum()).backward()
    total = nn.utils.clip_grad_norm_([a, b], 2.5)
    norm = math.sqrt(1 + 4 + 4 + 16)
    assert math.isclose(total.item(), norm, rel_tol=1e-6)
    scale = 2.5 / (norm + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), ga * scale, rtol=1e-6)
    # below the limit nothing changes; the inf norm is the largest magnitude
    before = a.grad.numpy().copy()
    assert math.isclose(nn.utils.clip_grad_norm_(a, 100.0).item(), np.linalg.norm(before), rel_tol=1e-6)
    np.testing.assert_array_equal(a.grad.numpy(), before)
    assert math.isclose(nn.utils.clip_grad_norm_([a, b], 1e9, norm_type=math.inf).item(), np.abs(np.r_[before, b.grad.numpy()]).max(), rel_tol=1e-6)
    b.grad = tg.tensor([math.inf, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([b], 1.0, error_if_nonfinite=True)
    nn.utils.clip_grad_value_([a], 0.1)
    assert np.abs(a.grad.numpy()).max() <= 0.1 + 1e-7


def test_parameters_to_vector_round_trip():
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    np.testing.assert_array_equal(val(v), np.r_[val(m.weight).ravel(), val(m.bias)])
    nn.utils.vector_to_parameters(tg.arange(8.0), m.parameters())
    assert val(m.weight).ravel().tolist() == [0, 1, 2, 3, 4, 5] and val(m.bias).tolist() == [6, 7]
    with pytest.raises(RuntimeError):
        nn.utils.vector_to_parameters(tg.arange(7.0), m.parameters())
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters([1.0], m.parameters())


def test_training_loop_decreases_loss():
    """A small end-to-end check: an MLP fits a linear map with plain gradient descent."""
    tg.manual_seed(0)
    X = RNG.normal(size=(64, 3))
    Y = X @ np.array([[1.0], [-2.0], [0.5]])
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(60):
        net.zero_grad()
        loss = loss_fn(net(tg.tensor(X)), tg.tensor(Y))
        loss.backward()
        with tg.no_grad():
            for p in net.parameters():
                p.sub_(p.grad * 0.1)
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
