"""tg.optim.lr_scheduler against the closed forms of each schedule (computed here with math), plus
resume through state_dict. (PyTorch's own numbers: tests/python/optim/test_optim_torch_differential.py.)"""

import math

import pytest

import tapegrad as tg
from tapegrad.optim import lr_scheduler as S


def _opt(lr=1.0, cls=tg.optim.SGD, **kw):
    return cls([tg.zeros(1, requires_grad=True)], lr=lr, **kw)


def _lrs(opt, sched, n, metric=None):
    out = []
    for _ in range(n):
        opt.step()
        sched.step() if metric is None else sched.step(metric)
        out.append(opt.param_groups[0]["lr"])
    return out


def test_step_lr():
    opt = _opt(0.5)
    got = _lrs(opt, S.StepLR(opt, step_size=3, gamma=0.1), 10)
    assert got == pytest.approx([0.5 * 0.1 ** (e // 3) for e in range(1, 11)], rel=1e-12)


def test_multistep_lr_with_a_repeated_milestone():
    opt = _opt(1.0)
    got = _lrs(opt, S.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.5), 7)
    want = [1.0 * 0.5 ** (int(e >= 2) + 2 * int(e >= 5)) for e in range(1, 8)]
    assert got == pytest.approx(want, rel=1e-12)


def test_exponential_lr():
    opt = _opt(0.3)
    assert _lrs(opt, S.ExponentialLR(opt, gamma=0.9), 6) == pytest.approx([0.3 * 0.9**e for e in range(1, 7)])


def test_cosine_annealing_follows_the_half_cosine_and_comes_back():
    opt = _opt(1.0)
    t_max, eta_min = 5, 0.1
    got = _lrs(opt, S.CosineAnnealingLR(opt, T_max=t_max, eta_min=eta_min), 15)
    want = [eta_min + (1.0 - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2 for e in range(1, 16)]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_lambda_lr_per_group():
    a, b = tg.zeros(1, requires_grad=True), tg.zeros(1, requires_grad=True)
    opt = tg.optim.SGD([{"params": [a]}, {"params": [b], "lr": 2.0}], lr=1.0)
    sched = S.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 0.5**e])
    for e in range(1, 5):
        opt.step()
        sched.step()
        assert sched.get_last_lr() == pytest.approx([1 / (e + 1), 2.0 * 0.5**e])
    assert sched.state_dict()["lr_lambdas"] == [None, None]


def test_one_cycle_lr_closed_form():
    """Two phases, cosine annealing: up from max_lr/25 to max_lr over pct_start of the steps, then
    down to initial/1e4; momentum moves the opposite way (PyTorch's definition)."""
    total, max_lr, pct = 20, 0.8, 0.3
    opt = _opt(0.1, momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=pct)
    initial, final = max_lr / 25, max_lr / 25 / 1e4
    end1 = pct * total - 1

    def cos_anneal(a, b, f):
        return b + (a - b) / 2 * (math.cos(math.pi * f) + 1)

    def want(step):
        if step <= end1:
            f = step / end1
            return cos_anneal(initial, max_lr, f), cos_anneal(0.95, 0.85, f)
        f = (step - end1) / (total - 1 - end1)
        return cos_anneal(max_lr, final, f), cos_anneal(0.85, 0.95, f)

    for step in range(total):
        lr, mom = want(step)
        assert opt.param_groups[0]["lr"] == pytest.approx(lr, rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(mom, rel=1e-12)
        opt.step()
        if step < total - 1:
            sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step"):
        sched.step()


def test_one_cycle_cycles_adams_beta1():
    opt = _opt(0.1, cls=tg.optim.Adam, betas=(0.9, 0.99))
    S.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.99)


def test_reduce_lr_on_plateau():
    opt = _opt(1.0)
    sched = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, min_lr=0.2)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    # bad epochs after the best (0.9, the 2nd metric): the 3rd bad one exceeds patience=2, so the
    # 5th metric halves the lr; the next epoch is cooldown (its bad epoch is not counted); three
    # more bad epochs halve it again at the 9th metric; never below min_lr.
    assert lrs == [1.0] * 4 + [0.5] * 4 + [0.25] * 4
    for _ in range(10):
        sched.step(1.0)
    assert opt.param_groups[0]["lr"] == 0.2


def test_resume_from_state_dict_continues_the_schedule():
    opt = _opt(1.0)
    sched = S.CosineAnnealingLR(opt, T_max=7)
    full = _lrs(opt, sched, 10)

    opt2 = _opt(1.0)
    sched2 = S.CosineAnnealingLR(opt2, T_max=7)
    first = _lrs(opt2, sched2, 4)
    saved_opt, saved_sched = opt2.state_dict(), sched2.state_dict()
    opt3 = _opt(1.0)
    opt3.load_state_dict(saved_opt)
    sched3 = S.CosineAnnealingLR(opt3, T_max=7, last_epoch=saved_sched["last_epoch"])
    sched3.load_state_dict(saved_sched)
    assert first + _lrs(opt3, sched3, 6) == full


def test_scheduler_errors():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=1)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(), step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="total_steps"):
        S.OneCycleLR(_opt(), max_lr=1.0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="momentum or beta1"):
        S.OneCycleLR(_opt(cls=tg.optim.Adagrad), max_lr=1.0, total_steps=5)
