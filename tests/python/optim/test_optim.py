"""tg.optim against NumPy oracles of PyTorch's documented update rules (float64: to 1e-12; float32:
to float32 rounding), plus the Optimizer API: groups, zero_grad, state_dict resume, closure, errors."""

import math

import numpy as np
import pytest
from oracles import run_in_threads

import tapegrad as tg

RNG = np.random.default_rng(1234)


# ------------------------------------------------------------------ NumPy oracles (float64)
def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p = p.copy()
    buf = None
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
             decoupled=False):
    p = p.copy()
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if weight_decay and decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vhat = v
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vhat = vmax
        denom = np.sqrt(vhat) / math.sqrt(1 - b2**t) + eps
        p = p - lr / (1 - b1**t) * m / denom
    return p


def ref_rmsprop(p, grads, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False):
    p = p.copy()
    sq, gavg, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            gavg = alpha * gavg + (1 - alpha) * g
            avg = np.sqrt(sq - gavg * gavg) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


def ref_adagrad(p, grads, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                maximize=False):
    p = p.copy()
    s = np.full_like(p, initial_accumulator_value)
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
    return p


CASES = [
    (tg.optim.SGD, ref_sgd, dict(lr=0.1)),
    (tg.optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (tg.optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (tg.optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True)),
    (tg.optim.Adam, ref_adam, dict(lr=1e-2)),
    (tg.optim.Adam, ref_adam, dict(lr=1e-2, amsgrad=True, weight_decay=0.1)),
    (tg.optim.Adam, ref_adam, dict(lr=1e-2, betas=(0.3, 0.8), maximize=True)),
    (tg.optim.AdamW, lambda p, g, **k: ref_adam(p, g, decoupled=True, **{"weight_decay": 1e-2, **k}), dict(lr=1e-2)),
    (tg.optim.AdamW, lambda p, g, **k: ref_adam(p, g, decoupled=True, **k),
     dict(lr=1e-2, weight_decay=0.3, amsgrad=True)),
    (tg.optim.RMSprop, ref_rmsprop, dict(lr=1e-2)),
    (tg.optim.RMSprop, ref_rmsprop, dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=0.1)),
    (tg.optim.RMSprop, ref_rmsprop, dict(lr=1e-2, centered=True, alpha=0.3, maximize=True)),
    (tg.optim.Adagrad, ref_adagrad, dict(lr=0.1)),
    (tg.optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
]


def _run(cls, kw, p0, grads, dtype):
    p = tg.tensor(p0, dtype=dtype, requires_grad=True)
    opt = cls([p], **kw)
    for g in grads:
        p.grad = tg.tensor(g, dtype=dtype)
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_float64_matches_the_formula(cls, ref, kw):
    p0 = RNG.standard_normal((7, 5))
    grads = [RNG.standard_normal((7, 5)) for _ in range(12)]
    got = _run(cls, kw, p0, grads, tg.float64)
    np.testing.assert_allclose(got, ref(p0, grads, **kw), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_float32_matches_the_formula_to_float32_rounding(cls, ref, kw):
    p0 = RNG.standard_normal((300,)).astype(np.float32)
    grads = [RNG.standard_normal((300,)).astype(np.float32) for _ in range(12)]
    got = _run(cls, kw, p0, grads, tg.float32)
    assert got.dtype == np.float32
    want = ref(p0.astype(np.float64), [g.astype(np.float64) for g in grads], **kw)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_large_group_runs_in_parallel_and_matches_small_pieces():
    """A group above the parallel threshold gives the same numbers as the same parameters updated
    in small groups (the chunking over threads does not change any element's arithmetic)."""
    shapes = [(600, 500), (1000,), (3, 7)]
    ps = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    big = [tg.tensor(p, requires_grad=True) for p in ps]
    small = [tg.tensor(p, requires_grad=True) for p in ps]
    opt_big = tg.optim.Adam(big, lr=1e-3, amsgrad=True)
    opt_small = [tg.optim.Adam([s], lr=1e-3, amsgrad=True) for s in small]
    for _ in range(3):
        for t, g in zip(big + small, gs + gs):
            t.grad = tg.tensor(g)
        opt_big.step()
        for o in opt_small:
            o.step()
    for a, b in zip(big, small):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_non_contiguous_and_shared_parameters():
    """A transposed parameter and two leaves that are views of one buffer are updated as if
    contiguous (through copies)."""
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    w = tg.tensor(base).t().detach().requires_grad_()  # a non-contiguous leaf
    assert not w.is_contiguous()
    g = RNG.standard_normal((4, 3))
    opt = tg.optim.SGD([w], lr=0.5, momentum=0.9)
    for _ in range(2):
        w.grad = tg.tensor(g)
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), ref_sgd(base.T, [g, g], lr=0.5, momentum=0.9), rtol=1e-14)


def test_params_without_grad_are_skipped_and_get_no_state():
    a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    opt = tg.optim.Adam([a, b], lr=0.1)
    a.grad = tg.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state
    assert opt.state[a]["step"].item() == 1.0


def test_param_groups_have_their_own_hyperparameters():
    a, b = tg.ones(1, requires_grad=True), tg.ones(1, requires_grad=True)
    opt = tg.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.0)
    a.grad, b.grad = tg.ones(1), tg.ones(1)
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)
    c = tg.ones(1, requires_grad=True)
    opt.add_param_group({"params": [c], "lr": 2.0})
    c.grad = tg.ones(1)
    opt.step()
    assert c.item() == pytest.approx(-1.0)
    assert opt.param_groups[2]["momentum"] == 0.0  # filled from defaults
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_zero_grad():
    w = tg.ones(3, requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and w.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_step_updates_in_place_and_bumps_the_version():
    w = tg.ones(3, requires_grad=True)
    before = w._version
    opt = tg.optim.Adam([w], lr=0.1)
    w.grad = tg.ones(3)
    opt.step()
    assert w._version > before and w.is_leaf and w.requires_grad and w.grad_fn is None


def test_a_saved_tensor_overwritten_by_step_names_the_optimizer():
    w = tg.ones(3, requires_grad=True)
    x = tg.ones(3, requires_grad=True)
    y = (w * x).sum()  # saves w for x's gradient
    opt = tg.optim.Adam([w], lr=0.1)
    w.grad = tg.ones(3)
    opt.step()
    with pytest.raises(tg.SavedTensorModifiedError, match="Adam.step"):
        y.backward()


def test_closure_is_called_with_grad_enabled_and_its_loss_returned():
    w = tg.tensor([3.0], requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.25)

    def closure():
        assert tg.is_grad_enabled()
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    assert w.item() == pytest.approx(3.0 - 0.25 * 6.0)


@pytest.mark.parametrize("cls,kw", [
    (tg.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (tg.optim.Adam, dict(lr=1e-2, amsgrad=True)),
    (tg.optim.AdamW, dict(lr=1e-2)),
    (tg.optim.RMSprop, dict(lr=1e-2, momentum=0.5, centered=True)),
    (tg.optim.Adagrad, dict(lr=0.1, lr_decay=0.1)),
])
def test_state_dict_resume_is_identical(cls, kw):
    """N steps, save, M more steps == N steps, load into a fresh optimizer (through tg.save and
    tg.load), M more steps: bit for bit."""
    p0 = RNG.standard_normal((4, 3)).astype(np.float32)
    grads = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(8)]

    a = tg.tensor(p0, requires_grad=True)
    opt_a = cls([a], **kw)
    for g in grads:
        a.grad = tg.tensor(g)
        opt_a.step()

    b = tg.tensor(p0, requires_grad=True)
    opt_b = cls([b], **kw)
    for g in grads[:5]:
        b.grad = tg.tensor(g)
        opt_b.step()
    import io

    buf = io.BytesIO()
    tg.save({"param": b, "optim": opt_b.state_dict()}, buf)
    buf.seek(0)
    saved = tg.load(buf)
    c = saved["param"]
    assert c.requires_grad and c.is_leaf
    opt_c = cls([c], lr=123.0)  # hyperparameters come back from the state dict
    opt_c.load_state_dict(saved["optim"])
    assert opt_c.param_groups[0]["lr"] == kw["lr"]
    for g in grads[5:]:
        c.grad = tg.tensor(g)
        opt_c.step()
    np.testing.assert_array_equal(c.detach().numpy(), a.detach().numpy())


def test_load_state_dict_copies_and_checks_shapes():
    w = tg.zeros(2, requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = tg.ones(2)
    opt.step()
    sd = opt.state_dict()
    opt2 = tg.optim.SGD([w], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.state[w]["momentum_buffer"] is not opt.state[w]["momentum_buffer"]
    opt3 = tg.optim.SGD([w, tg.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt3.load_state_dict(sd)
    with pytest.raises(ValueError, match="number of parameter groups"):
        opt3.load_state_dict({"state": {}, "param_groups": []})


def test_bad_arguments_are_clear_errors():
    w = tg.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        tg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        tg.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        tg.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        tg.optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tg.optim.Adam([w], lr=-1.0)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        tg.optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov"):
        tg.optim.SGD([w], lr=0.1, nesterov=True)
    for kw in (dict(fused=True), dict(capturable=True), dict(differentiable=True)):
        with pytest.raises(ValueError, match="not supported"):
            tg.optim.Adam([w], **kw)
    tg.optim.Adam([w], foreach=None, fused=False, capturable=False, differentiable=False)  # accepted


def test_integer_parameter_or_mismatched_state_is_refused_without_writing():
    w = tg.ones(2, dtype=tg.float64, requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1)
    w.grad = tg.ones(2, dtype=tg.float64)
    opt.step()
    opt.state[w]["exp_avg"] = tg.zeros(3, dtype=tg.float64)
    before = w.tolist()
    step_before = opt.state[w]["step"].item()
    with pytest.raises(RuntimeError, match="state tensor"):
        opt.step()
    assert w.tolist() == before and opt.state[w]["step"].item() == step_before


def test_native_update_refuses_bad_input_with_clear_errors():
    """The private native entry point checks everything itself (it must never crash or write
    half an update, whoever calls it)."""
    native = tg._C._optimizer_step
    p, g = tg.ones(3, requires_grad=True), tg.ones(3)
    hyper = dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False)
    sgd = dict(lr=0.1, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False)
    two = [[tg.zeros(3), tg.zeros(3)]]
    cases = [
        (("adam", [p], [g], two, [None], hyper), RuntimeError, "step counter is required"),
        (("adam", [p], [g], two, [tg.zeros(2)], hyper), RuntimeError, "one-element float tensor"),
        (("adam", [p], [g], [[tg.zeros(3)]], [tg.zeros(())], hyper), RuntimeError, "expected 2"),
        (("adam", [p], [g], [[tg.zeros(3), tg.zeros(3, dtype=tg.float64)]], [tg.zeros(())], hyper),
         RuntimeError, "state tensor"),
        (("adam", [p], [g, g], two, [tg.zeros(())], hyper), ValueError, "2 grads"),
        (("adam", [p], [g], two, [tg.zeros(())], {"lr": 0.1}), ValueError, "beta1 is missing"),
        (("adam", [p], [g], two, [tg.zeros(())], dict(hyper, lr="x")), TypeError, "must be a number"),
        (("sgd", [tg.arange(3)], [tg.arange(3)], [[]], [None], sgd), RuntimeError, "only float parameters"),
        (("sgd", [tg.ones(1).expand(3)], [g], [[]], [None], sgd), RuntimeError, "single memory location"),
        (("sgd", [p], ["x"], [[]], [None], sgd), TypeError, "must be a Tensor"),
        (("nope", [p], [g], [[]], [None], sgd), ValueError, "unknown optimizer"),
    ]
    for args, exc, match in cases:
        with pytest.raises(exc, match=match):
            native(*args)
    assert p.tolist() == [1.0, 1.0, 1.0] and p._version == 0


def test_concurrent_steps_on_one_optimizer_neither_crash_nor_lose_steps():
    ws = [tg.randn(100_000, requires_grad=True) for _ in range(4)]
    for w in ws:
        w.grad = tg.randn(100_000)
    opt = tg.optim.Adam(ws)

    def run():
        for _ in range(5):
            opt.step()

    run_in_threads(run, num_threads=3)
    assert [opt.state[w]["step"].item() for w in ws] == [15.0] * 4


def test_a_user_optimizer_subclass_works_like_pytorchs_pattern():
    """PyTorch's recipe for a custom optimizer: subclass Optimizer, pass defaults, write step()
    with in-place tensor operations under no_grad, keep state in self.state."""

    class SignSGD(tg.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            with tg.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        state = self.state[p]
                        state["n"] = state.get("n", 0) + 1
                        p.sub_((p.grad > 0).float() * group["lr"] - (p.grad < 0).float() * group["lr"])

    w = tg.tensor([1.0, -1.0, 0.5], requires_grad=True)
    opt = SignSGD([w], lr=0.25)
    w.grad = tg.tensor([3.0, -2.0, 0.0])
    opt.step()
    assert w.tolist() == [0.75, -0.75, 0.5]
    assert opt.state_dict()["state"] == {0: {"n": 1}}
