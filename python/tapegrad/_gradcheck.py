"""``gradcheck`` and ``gradgradcheck``: analytic gradients against central finite differences.

The function runs as the caller runs it (grad mode untouched), so it may record, register hooks
or call ``backward`` itself. Finite differences never write into the caller's inputs: each
perturbed evaluation receives a fresh contiguous copy of the perturbed input in its place.
Outputs that are not floating point are never differentiable and are left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from . import _tapegrad as _C
from ._function import Function


class GradcheckError(RuntimeError):
    """A check of ``gradcheck`` or ``gradgradcheck`` failed.

    >>> import tapegrad as tg
    >>> class WrongSquare(tg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         return g  # should be 2 * x * g
    >>> x = tg.tensor([3.], dtype=tg.float64, requires_grad=True)
    >>> try:
    ...     tg.autograd.gradcheck(WrongSquare.apply, (x,))
    ... except tg.autograd.GradcheckError as e:
    ...     print(str(e).split(":")[0])
    Jacobian mismatch for output 0 with respect to input 0
    """


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _tensor_outputs(out):
    return [o for o in _as_tuple(out) if isinstance(o, _C.Tensor)]


def _values(t):
    return t.detach().numpy().astype(np.float64).reshape(-1)


def _zeros_like(t):
    return _C.tensor(np.zeros(tuple(t.shape)), dtype=t.dtype)


def _check_inputs(inputs):
    """Indices of the inputs that require grad; warns on a non-float64 one and refuses an input
    whose memory overlaps itself (finite differences perturb its elements one at a time)."""
    diff = []
    for idx, t in enumerate(inputs):
        if not (isinstance(t, _C.Tensor) and t.requires_grad):
            continue
        if t.dtype != _C.float64:
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point tensor "
                f"({t.dtype}); finite differences in lower precision are coarse, so the check will likely "
                "fail unless every input is float64.",
                UserWarning,
                stacklevel=3,
            )
        if any(st == 0 and sz > 1 for st, sz in zip(t.stride(), t.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck perturbs one element at a time, "
                "which an input whose elements share memory (an expanded tensor) cannot have; pass "
                ".contiguous() of it instead."
            )
        diff.append(idx)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True, "
                         "but none of the inputs requires grad.")
    return diff


def _perturbed(t, flat):
    """A fresh tensor with ``t``'s shape, dtype, requires_grad and leaf-ness and the values
    ``flat``."""
    c = _C.tensor(flat.reshape(t.shape), dtype=t.dtype, requires_grad=True)
    return c if t.is_leaf else c.clone()


class _Evaluator:
    """Runs ``fn`` with one input replaced and checks that its outputs keep their shapes and dtypes."""

    def __init__(self, fn, inputs, reference):
        self.fn = fn
        self.inputs = inputs
        self.reference = reference  # the tensor outputs at the unperturbed inputs

    def __call__(self, i, flat, where):
        args = list(self.inputs)
        args[i] = _perturbed(self.inputs[i], flat)
        outs = _tensor_outputs(self.fn(*args))
        if len(outs) != len(self.reference):
            raise AssertionError(
                f"Expected `fn` to return the same number of tensors when inputs are perturbed {where}, but got "
                f"{len(self.reference)} and {len(outs)}."
            )
        for ref, o in zip(self.reference, outs):
            if tuple(o.shape) != tuple(ref.shape):
                raise AssertionError(
                    f"Expected `fn` to return outputs with the same shape when inputs are perturbed {where}, "
                    f"but got: shapes {list(ref.shape)} and {list(o.shape)}."
                )
            if o.dtype != ref.dtype:
                raise AssertionError(
                    f"Expected `fn` to return outputs with the same dtype when inputs are perturbed {where}, "
                    f"but got: dtypes {ref.dtype} and {o.dtype}."
                )
        return outs


def _numerical_jacobians(evaluate, inputs, diff, out_idx, eps):
    """{(output k, input i): d out_k / d input_i as an (n_out, n_in) array}, by central differences,
    for the outputs listed in ``out_idx``."""
    ref = evaluate.reference
    jac = {(k, i): np.zeros((ref[k].numel(), inputs[i].numel())) for k in out_idx for i in diff}
    for i in diff:
        flat = inputs[i].detach().numpy().astype(np.float64).reshape(-1)
        for j in range(flat.size):
            where = f"on index {j} of input {i} by {eps}"
            plus, minus = flat.copy(), flat.copy()
            plus[j] += eps
            minus[j] -= eps
            hi = evaluate(i, plus, where)
            lo = evaluate(i, minus, where)
            for k in out_idx:
                jac[(k, i)][:, j] = (_values(hi[k]) - _values(lo[k])) / (2 * eps)
    return jac


def _vjp(output, diff_tensors, seed):
    """The gradients of ``output`` (weighted by ``seed``) with respect to ``diff_tensors``;
    zeros where a tensor is unused."""
    grads = _C._run_grad([output], diff_tensors, [seed], True, False, True)
    return [np.zeros(t.numel()) if g is None else _values(g) for g, t in zip(grads, diff_tensors)]


def _check_reentrant(first, second, nondet_tol):
    for a, b in zip(first, second):
        if a.size and np.max(np.abs(a - b)) > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times "
                f"gives different values (by up to {float(np.max(np.abs(a - b)))!r}), although analytical gradient "
                f"matches numerical gradient. The tolerance for nondeterminism was {nondet_tol}."
            )


def _analytical_jacobians(output, diff_tensors, nondet_tol):
    """[d output / d input_i as an (n_out, n_in) array], each row from one backward with a one-hot
    grad_output; computed twice, which must agree within ``nondet_tol``."""
    n_out = output.numel()
    runs = []
    for _ in range(2):
        rows = [np.zeros((n_out, t.numel())) for t in diff_tensors]
        for r in range(n_out):
            seed = np.zeros(n_out)
            seed[r] = 1.0
            g_out = _C.tensor(seed.reshape(output.shape), dtype=output.dtype)
            for jac, g in zip(rows, _vjp(output, diff_tensors, g_out)):
                jac[r] = g
        runs.append(rows)
    _check_reentrant(runs[0], runs[1], nondet_tol)
    return runs[0]


def _violation(analytic, numeric, atol, rtol):
    """How far each entry is outside |a - n| <= atol + rtol * |n|; a NaN on either side is an
    infinite violation (NaN compares unequal to everything)."""
    v = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    return np.where(np.isnan(v), np.inf, v)


def _mismatch_message(oi, ii, k, j, a, n, atol, rtol):
    return (f"Jacobian mismatch for output {oi} with respect to input {ii}: at element {j} of the input "
            f"and element {k} of the output, analytic {a!r} vs numerical {n!r} (atol={atol}, rtol={rtol})")


def _slow_check(evaluate, inputs, diff, diff_outs, eps, atol, rtol, nondet_tol):
    """Every Jacobian entry; raises naming the worst mismatch of all."""
    ref = evaluate.reference
    out_idx = [k for k, o in enumerate(ref) if o.requires_grad]
    numeric = _numerical_jacobians(evaluate, inputs, diff, out_idx, eps)
    diff_tensors = [inputs[i] for i in diff]
    worst = None
    for oi, (k, out) in enumerate(zip(out_idx, diff_outs)):
        analytic = _analytical_jacobians(out, diff_tensors, nondet_tol)
        for ii, (i, a) in enumerate(zip(diff, analytic)):
            n = numeric[(k, i)]
            v = _violation(a, n, atol, rtol)
            if v.size and v.max() > 0:
                r, c = np.unravel_index(np.argmax(v), v.shape)
                # plain floats: NumPy 2 scalars print as np.float64(...) in the message
                cand = (v[r, c], oi, ii, int(r), int(c), float(a[r, c]), float(n[r, c]))
                if worst is None or cand[0] > worst[0]:
                    worst = cand
    if worst is not None:
        raise GradcheckError(_mismatch_message(*worst[1:], atol, rtol))


def _fast_check(evaluate, inputs, diff, diff_outs, eps, atol, rtol, nondet_tol):
    """Random projections: for random u (per input) and v (per output), v . J u by a directional
    central difference against v . (J u) from one backward. A failure is then located by the slow
    check, which names the worst entry."""
    rng = np.random.default_rng(0)
    ref = evaluate.reference
    out_idx = [k for k, o in enumerate(ref) if o.requires_grad]
    us = {i: rng.uniform(-1.0, 1.0, inputs[i].numel()) for i in diff}
    vs = [rng.uniform(-1.0, 1.0, o.numel()) for o in diff_outs]
    diff_tensors = [inputs[i] for i in diff]
    failures = []
    for ii, i in enumerate(diff):
        flat = inputs[i].detach().numpy().astype(np.float64).reshape(-1)
        where = f"along a random direction of input {i} by {eps}"
        hi = evaluate(i, flat + eps * us[i], where)
        lo = evaluate(i, flat - eps * us[i], where)
        for oi, (k, v) in enumerate(zip(out_idx, vs)):
            numeric = float(v @ ((_values(hi[k]) - _values(lo[k])) / (2 * eps)))
            failures.append((oi, ii, i, numeric))
    analytic = {}
    for oi, (out, v) in enumerate(zip(diff_outs, vs)):
        seed = _C.tensor(v.reshape(out.shape), dtype=out.dtype)
        first = _vjp(out, diff_tensors, seed)
        _check_reentrant(first, _vjp(out, diff_tensors, seed), nondet_tol)
        for ii, g in enumerate(first):
            analytic[(oi, ii)] = float(g @ us[diff[ii]])
    for oi, ii, i, numeric in failures:
        a = analytic[(oi, ii)]
        # each entry may be off by atol + rtol |J|: the projection by up to that, weighted by |u| and |v|
        tol = atol * np.abs(us[i]).sum() * np.abs(vs[oi]).sum() + rtol * abs(numeric)
        if not abs(a - numeric) <= tol:
            _slow_check(evaluate, inputs, diff, diff_outs, eps, atol, rtol, nondet_tol)
            raise GradcheckError(
                f"Jacobian mismatch for output {oi} with respect to input {ii} (fast mode): the random projection "
                f"v . J u is {a!r} analytically and {numeric!r} numerically (allowed difference {tol!r}); the "
                "entry-by-entry check passes, so the error is spread over many entries."
            )


def _check_backward_mul_by_grad_output(diff_outs, diff_tensors):
    zeros = [_zeros_like(o) for o in diff_outs]
    grads = _C._run_grad(diff_outs, diff_tensors, zeros, False, False, True)
    for g, t in zip(grads, diff_tensors):
        if g is None:
            continue
        v = _values(g)
        if not np.all(v == 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != t.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(g.shape) != tuple(t.shape):
            raise GradcheckError("grad is incorrect size")


class _UndefinedGrad(Function):
    """The identity, whose backward passes no gradient (an undefined one) to its input."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


def _check_undefined_grad(fn, inputs, diff_tensors):
    """Backward must accept undefined output gradients (all of them, then one at a time) and give
    undefined or zero input gradients when all of them are undefined."""

    def run(outs, all_undefined):
        try:
            grads = _C._run_grad(outs, diff_tensors, [_zeros_like(o) for o in outs], False, False, True)
        except RuntimeError as e:
            raise GradcheckError("Expected backward function to handle undefined output grads. A backward (or a "
                                 "hook) failed when a gradient it receives was undefined (None).") from e
        if all_undefined and any(g is not None and not np.all(_values(g) == 0) for g in grads):
            raise GradcheckError("Expected all input grads to be undefined or zero when all output grads are "
                                 "undefined or zero.")

    def diff_outputs():
        return [o for o in _tensor_outputs(fn(*inputs)) if o.requires_grad]

    run([_UndefinedGrad.apply(o) for o in diff_outputs()], True)
    n = len(diff_outputs())
    if n > 1:
        for u in range(n):
            run([_UndefinedGrad.apply(o) if k == u else o for k, o in enumerate(diff_outputs())], False)


def _forward_columns(fn, inputs, i, direction, n_outs):
    """``J_k direction`` for every tensor output k of ``fn``, by forward mode: input ``i`` made dual
    with tangent ``direction`` (flat); every tensor input is passed detached (as PyTorch: ``fn`` sees
    no input requiring grad during the forward-mode check); zeros for an output without a tangent."""
    from .autograd import forward_ad as fwAD

    t = inputs[i]
    tangent = _C.tensor(direction.reshape(tuple(t.shape)), dtype=t.dtype)
    with fwAD.dual_level():
        args = [a.detach() if isinstance(a, _C.Tensor) else a for a in inputs]
        args[i] = fwAD.make_dual(t.detach(), tangent)
        outs = _tensor_outputs(fn(*args))
        cols = []
        for o in outs[:n_outs]:
            tan = fwAD.unpack_dual(o).tangent
            cols.append(np.zeros(o.numel()) if tan is None else _values(tan))
    return cols


def _check_forward_ad(evaluate, inputs, diff, eps, atol, rtol, fast_mode):
    """Forward mode against central differences: column by column (or, in fast mode, along one
    random direction per input)."""
    ref = evaluate.reference
    out_idx = [k for k, o in enumerate(ref) if o.dtype.is_floating_point]
    if fast_mode:
        rng = np.random.default_rng(0)
        for ii, i in enumerate(diff):
            u = rng.uniform(-1.0, 1.0, inputs[i].numel())
            flat = inputs[i].detach().numpy().astype(np.float64).reshape(-1)
            where = f"along a random direction of input {i} by {eps}"
            hi = evaluate(i, flat + eps * u, where)
            lo = evaluate(i, flat - eps * u, where)
            cols = _forward_columns(evaluate.fn, inputs, i, u, len(ref))
            for oi, k in enumerate(out_idx):
                numeric = (_values(hi[k]) - _values(lo[k])) / (2 * eps)
                v = _violation(cols[k], numeric, atol * np.abs(u).sum(), rtol)
                if v.size and v.max() > 0:
                    raise GradcheckError(
                        f"Jacobian computed with forward mode mismatch for output {oi} with respect to input {ii} "
                        f"(fast mode): J u is {cols[k].tolist()!r} by forward mode and {numeric.tolist()!r} "
                        "numerically."
                    )
        return
    numeric = _numerical_jacobians(evaluate, inputs, diff, out_idx, eps)
    for ii, i in enumerate(diff):
        n_in = inputs[i].numel()
        forward = {k: np.zeros((ref[k].numel(), n_in)) for k in out_idx}
        for j in range(n_in):
            e = np.zeros(n_in)
            e[j] = 1.0
            cols = _forward_columns(evaluate.fn, inputs, i, e, len(ref))
            for k in out_idx:
                forward[k][:, j] = cols[k]
        for oi, k in enumerate(out_idx):
            v = _violation(forward[k], numeric[(k, i)], atol, rtol)
            if v.size and v.max() > 0:
                r, c = np.unravel_index(np.argmax(v), v.shape)
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {oi} with respect to input {ii}: at "
                    f"element {int(c)} of the input and element {int(r)} of the output, forward mode "
                    f"{float(forward[k][r, c])!r} vs numerical {float(numeric[(k, i)][r, c])!r} (atol={atol}, "
                    f"rtol={rtol})"
                )


def _gradcheck(fn, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, fast_mode,
               check_forward_ad=False, check_backward_ad=True):
    diff = _check_inputs(inputs)
    reference = _tensor_outputs(fn(*inputs))
    evaluate = _Evaluator(fn, inputs, reference)
    diff_outs = [o for o in reference if o.requires_grad]
    if not diff_outs:
        # nothing to differentiate: then the function must not change with its inputs
        float_idx = [k for k, o in enumerate(reference) if o.dtype.is_floating_point]
        numeric = _numerical_jacobians(evaluate, inputs, diff, float_idx, eps)
        if any(np.any(j != 0) for j in numeric.values()):
            raise GradcheckError("Numerical gradient for function expected to be zero: no output requires grad, "
                                 "yet an output changes when a differentiable input is perturbed.")
        return
    if check_forward_ad:
        _check_forward_ad(evaluate, inputs, diff, eps, atol, rtol, fast_mode)
    if not check_backward_ad:
        return
    check = _fast_check if fast_mode else _slow_check
    check(evaluate, inputs, diff, diff_outs, eps, atol, rtol, nondet_tol)
    diff_tensors = [inputs[i] for i in diff]
    _check_backward_mul_by_grad_output(diff_outs, diff_tensors)
    if check_undefined_grad:
        _check_undefined_grad(fn, inputs, diff_tensors)


def gradcheck(fn: Callable[..., Any], inputs: _C.Tensor | Sequence[object], eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, *, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, fast_mode: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True) -> bool:
    """Checks ``fn``'s backward against central finite differences of step ``eps``: every entry of
    each Jacobian (d differentiable output / d input requiring grad) must satisfy
    ``|analytic - numerical| <= atol + rtol * |numerical|`` (NaN never does); backward must give the
    same result twice (within ``nondet_tol``), be multiplied by grad_output, and accept undefined
    output gradients (``check_undefined_grad``). Without differentiable outputs the numerical
    gradient must be zero. ``fast_mode`` compares random projections of the Jacobians instead of
    every entry. ``check_forward_ad`` also checks forward mode (``tg.autograd.forward_ad``): each
    Jacobian column from the tangent of a one-hot direction (in fast mode, one random direction per
    input) against the same differences; ``check_backward_ad=False`` leaves backward unchecked.

    Returns True, or raises ``GradcheckError`` naming the failed check (for a Jacobian mismatch,
    the output, the input and the worst entry); with ``raise_exception=False`` a failed check
    returns False instead. Other errors (invalid inputs, an output whose shape or dtype changes
    under perturbation, an exception of ``fn``) are raised either way. Inputs that are not float64
    are checked with a warning.

    >>> import tapegrad as tg
    >>> x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    >>> tg.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,), check_forward_ad=True)
    True
    """
    inputs = _as_tuple(inputs)
    try:
        _gradcheck(fn, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad and check_backward_ad, fast_mode,
                   check_forward_ad, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(fn: Callable[..., Any], inputs: _C.Tensor | Sequence[object], grad_outputs: _C.Tensor | Sequence[_C.Tensor] | None = None,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True, *,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, fast_mode: bool = False) -> bool:
    """``gradcheck`` of the first derivatives: the gradients of ``fn``'s differentiable outputs
    (weighted by ``grad_outputs``, random in [-1, 1) when not given) with respect to the inputs
    that require grad, as a function of the inputs and of the grad_outputs.

    >>> import tapegrad as tg
    >>> x = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    >>> tg.autograd.gradgradcheck(lambda t: t.exp() * t, (x,))
    True
    """
    inputs = _as_tuple(inputs)
    n = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, _C.Tensor) and t.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = [o for o in _tensor_outputs(fn(*inputs)) if o.requires_grad]
        grad_outputs = [
            _C.tensor(rng.uniform(-1.0, 1.0, tuple(o.shape)), dtype=o.dtype if o.dtype.is_floating_point
                      else _C.float64, requires_grad=True)
            for o in outs
        ]
    grad_outputs = _as_tuple(grad_outputs)

    def first_derivatives(*args):
        ins, gos = args[:n], args[n:]
        outs = [o for o in _tensor_outputs(fn(*ins)) if o.requires_grad]
        grads = _C._run_grad(outs, [ins[i] for i in diff], list(gos), True, True, True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, (*inputs, *grad_outputs), eps, atol, rtol, raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad, fast_mode=fast_mode)
