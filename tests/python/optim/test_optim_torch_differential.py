"""tg.optim and tg.optim.lr_scheduler against PyTorch itself, when it is installed: same initial
weights, same gradients (or the same model and data), N steps, parameters equal to float32
rounding; learning-rate schedules equal to the last bit."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch", reason="PyTorch is the optional oracle of this file (pip install torch)")

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=1e-2)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.4, 0.95), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=1e-2, maximize=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.2, amsgrad=True)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, alpha=0.9, momentum=0.8, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2, maximize=True)),
]


def _close(a, b, dtype):
    """Equal to float32 rounding: PyTorch's float32 sqrt on AVX-512 CPUs is 1 ulp off for some
    inputs (ours is correctly rounded), and each step carries that into the parameters (README)."""
    if dtype == np.float64:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_same_gradients_same_parameters(name, kw, dtype):
    rng = np.random.default_rng(5)
    shapes = [(40, 30), (30,), (1,)]
    p0 = [rng.standard_normal(s).astype(dtype) for s in shapes]
    tp = [torch.tensor(p, requires_grad=True) for p in p0]
    gp = [tg.tensor(p, requires_grad=True) for p in p0]
    topt = getattr(torch.optim, name)(tp, **kw)
    gopt = getattr(tg.optim, name)(gp, **kw)
    for _ in range(25):
        for t, g in zip(tp, gp):
            grad = rng.standard_normal(t.shape).astype(dtype)
            t.grad = torch.tensor(grad)
            g.grad = tg.tensor(grad)
        topt.step()
        gopt.step()
    for t, g in zip(tp, gp):
        _close(g.detach().numpy(), t.detach().numpy(), dtype)
    # the state has PyTorch's names and values
    for t, g in zip(tp, gp):
        tstate, gstate = topt.state[t], gopt.state[g]
        assert set(gstate) == set(tstate)
        for k in tstate:
            _close(gstate[k].numpy(), tstate[k].numpy(), dtype if k != "step" else np.float32)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=1e-3)),
                                     ("AdamW", dict(lr=1e-3)), ("RMSprop", dict(lr=1e-3)),
                                     ("Adagrad", dict(lr=1e-2))])
def test_training_an_mlp_matches(name, kw):
    """The same two-layer network, data and initial weights trained for 20 steps in each library."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = rng.standard_normal((32, 2)).astype(np.float32)
    w1 = (rng.standard_normal((8, 16)) / 3).astype(np.float32)
    w2 = (rng.standard_normal((16, 2)) / 4).astype(np.float32)

    def train(lib, opt_mod):
        ws = [lib.tensor(w1.copy(), requires_grad=True), lib.tensor(w2.copy(), requires_grad=True)]
        xs, ys = lib.tensor(x), lib.tensor(y)
        opt = getattr(opt_mod, name)(ws, **kw)
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = ((xs.mm(ws[0]).tanh().mm(ws[1]) - ys) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return [w.detach().numpy() for w in ws], losses

    tw, tl = train(torch, torch.optim)
    gw, gl = train(tg, tg.optim)
    np.testing.assert_allclose(gl, tl, rtol=1e-4)
    for a, b in zip(gw, tw):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _lr_sequence(lib, make, steps, cls="SGD", metrics=None, **opt_kw):
    a = lib.zeros(1, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    opt = getattr(lib.optim, cls)([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.1, **opt_kw)
    sched = make(lib.optim.lr_scheduler, opt)
    out = [[g["lr"] for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[i])
        out.append([g["lr"] for g in opt.param_groups])
        if "momentum" in opt.param_groups[0]:
            out.append([g["momentum"] for g in opt.param_groups])
        if "betas" in opt.param_groups[0]:
            out.append([g["betas"] for g in opt.param_groups])
    return out


SCHEDULES = {
    "StepLR": lambda S, o: S.StepLR(o, step_size=3, gamma=0.3),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[2, 4, 4, 9], gamma=0.5),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
    "LambdaLR": lambda S, o: S.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1 / (1 + e)]),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=25),
    "OneCycleLR-3phase-linear": lambda S, o: S.OneCycleLR(o, max_lr=1.0, epochs=5, steps_per_epoch=5,
                                                          three_phase=True, anneal_strategy="linear"),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_equal_pytorchs(name):
    make = SCHEDULES[name]
    assert _lr_sequence(tg, make, 24, momentum=0.9) == _lr_sequence(torch, make, 24, momentum=0.9)


def test_one_cycle_with_adam_betas_equals_pytorchs():
    make = SCHEDULES["OneCycleLR"]
    assert _lr_sequence(tg, make, 24, cls="Adam") == _lr_sequence(torch, make, 24, cls="Adam")


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.05, patience=1,
                                             cooldown=2, min_lr=[0.01, 0.2], factor=0.5)])
def test_reduce_on_plateau_equals_pytorchs(kw):
    metrics = list(np.random.default_rng(3).standard_normal(40).cumsum() * 0.1)

    def make(S, o):
        return S.ReduceLROnPlateau(o, **kw)

    assert _lr_sequence(tg, make, 40, metrics=metrics) == _lr_sequence(torch, make, 40, metrics=metrics)
