"""``tapegrad.autograd.functional``: derivatives of whole functions -- ``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``vhp`` and ``hvp`` -- with PyTorch's ``create_graph`` and ``strict``.

Each function takes ``func`` and ``inputs`` (a tensor or a tuple of tensors). ``func`` is run on
fresh tensors standing for ``inputs`` (views of them when ``create_graph=True`` and they require
grad, detached copies otherwise), so gradients never reach ``.grad`` fields.

``jvp`` and ``hvp`` use the double-vjp construction, as PyTorch's do: for ``u`` a dummy cotangent,
``g(u) = J^T u`` is linear in ``u``, so the vjp of ``g`` with ``v`` is ``J v``. The forward-mode
Jacobian (``jacobian(strategy="forward-mode")``, and the outer Jacobian of
``hessian(outer_jacobian_strategy="forward-mode")``) goes through ``tapegrad.autograd.forward_ad`` when
that module is present, else through the same construction (built once, one reverse pass per
column); so do ``tg.func.jvp``, ``jacfwd`` and ``hessian``. The private switch ``_FORWARD_IMPL``
(``"auto"``, ``"forward_ad"``, ``"double_vjp"``) picks the path; tests run both.

There is no ``vmap``: ``vectorize=True`` is accepted (and keeps PyTorch's checks, such as its
refusal with ``strict=True``) but the Jacobian is still built one basis vector at a time.
"""

from __future__ import annotations

import importlib
import weakref
from typing import Any, Callable

from .. import _tapegrad as _C
from .._creation import ones_like, zeros_like
from .._grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

Tensor = _C.Tensor

# Which forward-mode engine the Jacobian-vector products use: "auto" takes
# tapegrad.autograd.forward_ad when it can be imported, else the double-vjp construction.
_FORWARD_IMPL = "auto"


# The fresh leaves the transforms make (the tensors standing for their inputs, the dummy cotangents
# of the double-vjp construction), by id: a graph walk that meets one of them has not met anything
# of the caller's (tg.func's _reaches_outside). Entries go away with their tensors.
_INTERNAL_LEAVES: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def _internal(t: Any) -> Any:
    _INTERNAL_LEAVES[id(t)] = t
    return t


def _is_internal(t: Any) -> bool:
    return _INTERNAL_LEAVES.get(id(t)) is t


_FWD_MODULE: list[Any] = []  # the import's outcome, once tried: [module] or [None]


def _forward_ad() -> Any:
    """The ``forward_ad`` module when forward-mode products should go through it, else None."""
    if _FORWARD_IMPL == "double_vjp":
        return None
    if not _FWD_MODULE:
        try:
            _FWD_MODULE.append(importlib.import_module("tapegrad.autograd.forward_ad"))
        except ImportError:
            _FWD_MODULE.append(None)
    mod = _FWD_MODULE[0]
    if mod is None and _FORWARD_IMPL == "forward_ad":
        raise RuntimeError("tapegrad.autograd.forward_ad is not available in this build")
    return mod


# ---------------------------------------------------------------------------------------------
# argument plumbing


def _refuse_inside_transform(name: str, create_graph: bool) -> None:
    """Inside a ``tg.func`` transform a result without history would silently hide the function's
    dependence on the transform's inputs (a zero derivative); PyTorch refuses these calls there too."""
    if create_graph or not _C.is_grad_enabled():
        return
    from ..func import _transforms

    if _transforms._depth() > 0:
        raise RuntimeError(
            f"tg.autograd.functional.{name} was called inside a function being transformed by tg.func "
            "without create_graph=True: its result would have no history, so the transform would see a "
            "zero derivative. Use the tg.func transforms (grad, vjp, jvp, jacrev, jacfwd, hessian) inside "
            "transformed functions, or pass create_graph=True."
        )


def _as_tuple(obj: Any, what: str, fn_name: str) -> tuple[bool, tuple[Any, ...]]:
    """(was it a tuple, the tensors as a tuple); anything else than tensors is a TypeError."""
    was_tuple = isinstance(obj, tuple)
    items = obj if was_tuple else (obj,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has type {type(el)}" if was_tuple else f"the given {what} has type {type(el)}"
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but {where}.")
    return was_tuple, items


def _unpack(res: Any, flags: Any) -> Any:
    """Undoes ``_as_tuple``: ``flags`` is one bool, or (outer, inner) for a nested result."""
    if isinstance(flags, tuple):
        outer, inner = flags
        if not inner:
            res = tuple(el[0] for el in res)
        if not outer:
            res = res[0]
        return res
    return res if flags else res[0]


def _prepare(tensors: tuple[Any, ...], create_graph: bool, need_graph: bool) -> tuple[Any, ...]:
    # Always a new tensor object, so that the function's own use of a captured input is not
    # mistaken for a use of the argument: a view keeps the caller's graph when asked for.
    out = []
    for t in tensors:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(_internal(t.detach().requires_grad_(need_graph)))
    return tuple(out)


def _finish(res: Any, create_graph: bool) -> Any:
    if isinstance(res, Tensor):
        return res if create_graph else res.detach()
    return tuple(_finish(r, create_graph) for r in res)


def _check_v(v: tuple[Any, ...], ref: tuple[Any, ...], ref_is_tuple: bool) -> None:
    if len(v) != len(ref):
        if ref_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(ref)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, ref)):
        if tuple(a.shape) != tuple(b.shape):
            head = f"Entry {i} in " if ref_is_tuple else ""
            raise RuntimeError(f"{head}v has invalid size: should be {b.size()} but got {a.size()}.")


def _strict_requires_grad(tensors: tuple[Any, ...], kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if t.requires_grad:
            continue
        if kind == "outputs":
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. In strict mode "
                "every output must be computed from the inputs in a differentiable way."
            )
        if kind == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        if kind == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided function "
                f"with respect to input {i} is independent of the input. This is not allowed in strict "
                "mode: the function must be twice differentiable with a jacobian that depends on the "
                "inputs (a linear function breaks this)."
            )
        raise RuntimeError(
            f"The hessian of the user-provided function with respect to input {i} is independent of "
            "the input. This is not allowed in strict mode: the function must be thrice "
            "differentiable with a hessian that depends on the inputs."
        )


def _grad(outputs: tuple[Any, ...], inputs: tuple[Any, ...], grad_outputs: Any = None,
          create_graph: bool = False, retain_graph: bool | None = None) -> tuple[Any, ...]:
    """``autograd.grad`` that skips outputs which are None or do not require grad (all None
    when none is left) and reports unreached inputs as None."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    from . import grad as _autograd_grad

    return _autograd_grad(outs, list(inputs), gos, retain_graph=retain_graph, create_graph=create_graph,
                          allow_unused=True)


_ZERO_STAGE_MSG = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": (
        "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
        "using the double backward trick to compute forward mode gradients. This is not allowed in strict mode."
    ),
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "double_back_trick": (
        "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. This "
        "is not allowed in strict mode as it prevents from using the double backward trick to replace "
        "forward mode AD."
    ),
}


def _zeros_for_none(grads: tuple[Any, ...], refs: tuple[Any, ...], strict: bool, create_graph: bool,
                    stage: str) -> tuple[Any, ...]:
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_STAGE_MSG[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


# ---------------------------------------------------------------------------------------------
# public functions


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``: returns
    ``(func(*inputs), vjp)``, the second shaped as ``inputs``. ``v`` may be left out when ``func``
    returns one tensor of one element. With ``strict=True`` an output or input that the other does
    not depend on is an error instead of a zero product.

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import vjp
    >>> out, g = vjp(lambda x: x ** 2, tg.tensor([1., 2.]), tg.tensor([1., 1.]))
    >>> g
    tensor([2., 4.])
    """
    _refuse_inside_transform("vjp", create_graph)
    with enable_grad():
        inputs_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _prepare(ins, create_graph, True)
        outputs = func(*ins)
        outputs_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _strict_requires_grad(outs, "outputs", strict)
        if v is not None:
            _, vs = _as_tuple(v, "v", "vjp")
            vs = _prepare(vs, create_graph, False)
            _check_v(vs, outs, outputs_tuple)
        else:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a single Tensor "
                    "with a single element."
                )
            vs = None
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(outs, ins, vs, create_graph=create_graph)
        res = _zeros_for_none(res, ins, strict, create_graph, "back")
    return _unpack(_finish(outs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)


def _double_vjp_jvp(outs: tuple[Any, ...], ins: tuple[Any, ...], vs: tuple[Any, ...], strict: bool,
                    create_graph: bool) -> tuple[Any, ...]:
    # g(u) = J^T u is linear in u; d/du <g(u), v> = J v. The dummy u's value never shows up.
    with enable_grad():
        us = tuple(_internal(zeros_like(o, requires_grad=True)) for o in outs)
        g = _grad(outs, ins, us, create_graph=True)
        _strict_requires_grad(g, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(g, us, vs, create_graph=create_graph)
        return _zeros_for_none(res, outs, strict, create_graph, "back_trick")


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``: returns
    ``(func(*inputs), jvp)``, the second shaped as the outputs. ``v`` may be left out when the input
    is one tensor of one element. Like PyTorch's, it is computed with the double-vjp construction
    (two reverse passes).

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import jvp
    >>> out, t = jvp(lambda x: x ** 2, tg.tensor([1., 2.]), tg.tensor([1., 0.]))
    >>> t
    tensor([2., 0.])
    """
    _refuse_inside_transform("jvp", create_graph)
    with enable_grad():
        inputs_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _prepare(ins, create_graph, True)
        if v is not None:
            _, vs = _as_tuple(v, "v", "jvp")
            vs = _prepare(vs, create_graph, False)
            _check_v(vs, ins, inputs_tuple)
        else:
            if len(ins) != 1 or ins[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the input to the user-provided function is a single "
                    "Tensor with a single element."
                )
            vs = (ones_like(ins[0]),)
        outputs = func(*ins)
        outputs_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _strict_requires_grad(outs, "outputs", strict)
    res = _double_vjp_jvp(outs, ins, vs, strict, create_graph)
    return _unpack(_finish(outs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), outputs_tuple)


def _construct_standard_basis_for(tensors: Any, tensor_numels: Any) -> tuple[Any, ...]:
    """The standard basis of the concatenated inputs, split per input: for N = sum of the numels,
    chunk i is an (N, numel_i) tensor of input i's dtype, and the chunks side by side are the N x N
    identity (the tangents that give a Jacobian column by column)."""
    if len(tensors) != len(tensor_numels) or not tensors:
        raise AssertionError("expected one numel per tensor, and at least one tensor")
    total = sum(tensor_numels)
    chunks, start = [], 0
    for t, n in zip(tensors, tensor_numels):
        chunk = _C.zeros(total, n, dtype=t.dtype)
        for k in range(n):
            chunk[start + k, k] = 1
        start += n
        chunks.append(chunk)
    return tuple(chunks)


def _one_hot(like: Any, k: int) -> Any:
    flat = zeros_like(like).reshape(-1)
    flat[k] = 1
    return flat.reshape(*like.shape)


def _basis_jvps(func: Callable[..., Any], ins: tuple[Any, ...]) -> tuple[Any, list[list[Any]], list[Any]]:
    """Forward-mode Jacobian columns: for each input element, the tangent of every output.
    Returns (the outputs as given, cols[out][k] for k over all input elements, the outputs). With
    ``forward_ad`` the function runs once per column; with the double-vjp construction it runs
    once and each column is one reverse pass over the same graph."""
    fwd = _forward_ad()

    def outs_of(obj: Any) -> tuple[Any, ...]:
        return _as_tuple(obj, "outputs of the user-provided function", "jacobian")[1]

    cols: list[list[Any]] | None = None
    outputs_obj: Any = None
    outs: tuple[Any, ...] = ()
    lin = _Linearization(func, ins, outs_of, False) if fwd is None else None
    if lin is not None:
        outputs_obj, outs = lin.obj, lin.outs
        cols = [[] for _ in outs]
    for j, x in enumerate(ins):
        for k in range(x.numel()):
            if lin is not None:
                tangents: tuple[Any, ...] = tuple(_one_hot(x, k) if i == j else None for i in range(len(ins)))
                touts = lin.jvp(tangents, retain_graph=True)
                touts = tuple(zeros_like(o) if t is None else t for o, t in zip(outs, touts))
            else:
                tangents = tuple(_one_hot(x, k) if i == j else zeros_like(t) for i, t in enumerate(ins))
                outputs_obj, outs, touts = _push_forward(func, ins, tangents, fwd, "jacobian")
            if cols is None:
                cols = [[] for _ in outs]
            for i, t in enumerate(touts):
                cols[i].append(t)
    if cols is None:  # every input is empty: run once for the outputs' shapes
        with enable_grad():
            outputs_obj = func(*ins)
        outs = outs_of(outputs_obj)
        cols = [[] for _ in outs]
    return outputs_obj, cols, list(outs)


def _push_forward(func: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...], fwd: Any,
                  fn_name: str) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """Runs ``func`` at ``primals`` pushing ``tangents`` forward: (its result, its tensors as a
    tuple, their tangents -- zeros where an output does not depend on the inputs)."""

    def outs_of(obj: Any) -> tuple[Any, ...]:
        return _as_tuple(obj, "outputs of the user-provided function", fn_name)[1]

    obj, outs, touts = _push(func, primals, tangents, outs_of, False, fwd)
    touts = tuple(zeros_like(o) if t is None else t for o, t in zip(outs, touts))
    return obj, outs, touts


def _push(func: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...],
          outs_of: Callable[[Any], tuple[Any, ...]], create_graph: Any,
          fwd: Any) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """The forward-mode core shared with ``tg.func``: calls ``func(*inputs)`` where each input
    stands for a primal carrying its tangent, and returns (the result, the output tensors that
    ``outs_of`` picks from it, their tangents -- None where an output does not depend on the
    inputs). ``fwd`` is the ``forward_ad`` module, or None for the double-vjp construction; with
    ``create_graph`` the tangents keep their graph. ``create_graph`` may be a function of (the
    tensors standing for the primals, the result), decided once the function has run."""
    if fwd is not None:
        # a transform computes tangents even where the caller switched forward grad mode off (as
        # functorch's jvp does); the function may switch it off for parts of its own computation
        with fwd.dual_level() as level, fwd._set_fwd_grad_enabled(True):
            duals = tuple(fwd.make_dual(p, t, level=level) for p, t in zip(primals, tangents))
            obj = func(*duals)
            outs = outs_of(obj)
            pairs = [fwd.unpack_dual(o, level=level) for o in outs]
        return obj, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    lin = _Linearization(func, primals, outs_of, create_graph)
    return lin.obj, lin.outs, lin.jvp(tangents)


def _fresh_leaf(p: Any) -> Any:
    # a view keeps a forward-mode tangent of p, which detach() would drop
    q = p.clone() if p.is_inference() else p
    return q.view_as(q).requires_grad_(True)


class _Linearization:
    """``func`` run once at ``primals`` with the double-vjp graph built: for dummy cotangents ``u``
    (zeros that require grad) ``g(u) = J^T u`` is linear in ``u``, so the vjp of ``g`` with tangents
    ``t`` is ``J t``. Each ``jvp(tangents)`` is then one reverse pass over ``g``'s graph; the
    function is not run again. ``create_graph`` may be a function of (the tensors standing for the
    primals, the result), decided once the function has run."""

    def __init__(self, func: Callable[..., Any], primals: Any, outs_of: Callable[[Any], tuple[Any, ...]],
                 create_graph: Any) -> None:
        with enable_grad():
            self.ins = tuple(
                p.view_as(p) if p.requires_grad
                else _internal(_fresh_leaf(p))
                for p in primals
            )
            self.obj = func(*self.ins)
            self.outs = outs_of(self.obj)
            if callable(create_graph):
                create_graph = create_graph(self.ins, self.obj)
            self.create_graph = bool(create_graph)
            self.diff = [i for i, o in enumerate(self.outs) if o.requires_grad]
            self.us = tuple(_internal(zeros_like(self.outs[i], requires_grad=True)) for i in self.diff)
            if self.diff:
                self.g = _grad(tuple(self.outs[i] for i in self.diff), self.ins, self.us, create_graph=True)
            else:
                self.g = (None,) * len(self.ins)

    def jvp(self, tangents: Any, retain_graph: bool | None = None,
            create_graph: bool | None = None) -> tuple[Any, ...]:
        """The tangents of the outputs (None where an output does not depend on the inputs) for
        ``tangents``, one per primal (None for a zero tangent); ``create_graph`` defaults to the
        one decided at construction."""
        cg = self.create_graph if create_graph is None else create_graph
        pairs = [(g, t) for g, t in zip(self.g, tangents) if t is not None and g is not None and g.requires_grad]
        touts: list[Any] = [None] * len(self.outs)
        if pairs:
            from . import grad as _autograd_grad

            with set_grad_enabled(True if cg else _C.is_grad_enabled()):
                res = _autograd_grad([g for g, _ in pairs], list(self.us), [t for _, t in pairs],
                                     retain_graph=retain_graph, create_graph=cg, allow_unused=True)
            for i, r in zip(self.diff, res):
                touts[i] = r
        return tuple(touts)


def _jacobian_forward(func: Callable[..., Any], inputs: Any, strict: bool, vectorize: bool) -> Any:
    if strict:
        raise RuntimeError(
            'tg.autograd.functional.jacobian: strict=True and strategy="forward-mode" are not supported '
            'together (yet). Set strict=False or strategy="reverse-mode".'
        )
    inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only implemented for "
            "`vectorize=True` (as in PyTorch; here vectorize=True still loops over basis vectors)."
        )
    batched = _batched_forward_blocks(func, ins) if any(x.numel() for x in ins) else None
    if batched is not None:
        outputs_obj, blocks = batched
        return _unpack(blocks, (isinstance(outputs_obj, tuple), inputs_tuple))
    outputs_obj, cols, outs = _basis_jvps(func, ins)
    outputs_tuple = isinstance(outputs_obj, tuple)
    res = []
    for i, o in enumerate(outs):
        row = []
        start = 0
        for x in ins:
            n = x.numel()
            chunk = cols[i][start:start + n]
            start += n
            if chunk:
                # columns are stacked on the last dimension: out.shape + (n,)
                mat = _C.stack([c.detach() for c in chunk], dim=-1)
            else:
                mat = _C.zeros(*o.shape, 0, dtype=o.dtype)
            row.append(mat.reshape(*o.shape, *x.shape))
        res.append(tuple(row))
    return _unpack(tuple(res), (outputs_tuple, inputs_tuple))


class _HasCustom(Exception):
    """Raised out of the linearization when the function contains a custom ``Function``."""


def _batched_forward_blocks(func: Callable[..., Any], ins: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]] | None:
    """The forward-mode Jacobian (a tuple of blocks per output) from one run of ``func`` and one
    batched reverse pass over its double-vjp graph (rows of ``Jᵀ``, NOTE [Batched rows] in
    ``autograd/jacobian.rs``); None when ``func`` contains a custom ``Function`` (its own ``jvp``
    then pushes the columns) or the batched pass declines."""

    def outs_of(obj: Any) -> tuple[Any, ...]:
        outs = _as_tuple(obj, "outputs of the user-provided function", "jacobian")[1]
        if _C._reaches_custom(list(outs)):
            raise _HasCustom
        return outs

    try:
        lin = _Linearization(func, ins, outs_of, False)
    except _HasCustom:
        return None
    roots = [x.detach() if g is None else g for g, x in zip(lin.g, ins)]
    rows = _C._jacobian_rows(roots, list(lin.us), False, None) if lin.us else []
    if rows is None:
        return None
    by_out: list[Any] = [None] * len(lin.outs)
    for i, r in zip(lin.diff, rows):
        by_out[i] = r
    blocks = []
    for o, r in zip(lin.outs, by_out):
        row, start = [], 0
        for x in ins:
            n = x.numel()
            if r is None:
                mat = _C.zeros(*o.shape, *x.shape, dtype=o.dtype)
            else:
                mat = r[start:start + n].detach().reshape(n, o.numel()).t().reshape(*o.shape, *x.shape)
            start += n
            row.append(mat)
        blocks.append(tuple(row))
    return lin.obj, tuple(blocks)


def _batched_jacobian(outs: tuple[Any, ...], ins: tuple[Any, ...], create_graph: bool) -> list[Any] | None:
    """The reverse-mode Jacobian's blocks (a tuple per output) from one batched reverse run over
    the recorded graph (NOTE [Batched rows] in ``autograd/jacobian.rs``); None when that run
    declines or there is no row (the caller loops over rows)."""
    diff = [o for o in outs if o.requires_grad]
    if not diff or not any(o.numel() for o in outs):
        return None
    rows = _C._jacobian_rows(list(outs), list(ins), create_graph, None)
    if rows is None:
        return None
    blocks, start = [], 0
    for o in outs:
        n = o.numel()
        blocks.append(tuple(
            _C.zeros(*o.shape, *x.shape, dtype=x.dtype) if r is None else r[start:start + n].reshape(*o.shape, *x.shape)
            for x, r in zip(ins, rows)
        ))
        start += n
    return blocks


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``. For one input and one output it is one tensor of
    shape ``output.shape + input.shape``; for tuples, ``result[i][j]`` is output ``i`` against input
    ``j``. ``strategy="forward-mode"`` builds it column by column from Jacobian-vector products.
    ``vectorize`` is accepted for PyTorch's signature; without vmap the rows (or columns) are still
    computed one by one.

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import jacobian
    >>> jacobian(lambda x: x ** 2, tg.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    _refuse_inside_transform("jacobian", create_graph)
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: "forward-mode" tends '
            'to be faster when the function has more outputs than inputs, "reverse-mode" otherwise.'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'tg.autograd.functional.jacobian: create_graph=True and strategy="forward-mode" are not '
                'supported together (yet). Set create_graph=False or strategy="reverse-mode".'
            )
        return _jacobian_forward(func, inputs, strict, vectorize)
    with enable_grad():
        inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _prepare(ins, create_graph, True)
        outputs = func(*ins)
        outputs_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _strict_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError(
                "tg.autograd.functional.jacobian: strict=True and vectorized=True are not supported "
                "together. Set strict=False or vectorize=False."
            )
        batched = None if strict else _batched_jacobian(outs, ins, create_graph)
        rows = [] if batched is None else batched
        for i, out in enumerate(outs if batched is None else ()):
            per_input: list[list[Any]] = [[] for _ in ins]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                gs = _grad((flat[k],), ins, retain_graph=True, create_graph=create_graph)
                for j, (g, x) in enumerate(zip(gs, ins)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of input {j}. "
                                "This is not allowed in strict mode."
                            )
                        g = zeros_like(x)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            f"The jacobian of the user-provided function is independent of input {i}. "
                            "This is not allowed in strict mode when create_graph=True."
                        )
                    per_input[j].append(g)
            row = []
            for j, x in enumerate(ins):
                if per_input[j]:
                    mat = _C.stack(per_input[j], dim=0)
                else:
                    mat = _C.zeros(0, *x.shape, dtype=x.dtype)
                row.append(mat.reshape(*out.shape, *x.shape))
            rows.append(tuple(row))
        res = _finish(tuple(rows), create_graph)
    return _unpack(res, (outputs_tuple, inputs_tuple))


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient.
    For one input it has shape ``input.shape + input.shape``; for tuples ``result[i][j]`` is the
    block of inputs ``i`` and ``j``. ``outer_jacobian_strategy="forward-mode"`` takes the outer
    Jacobian by Jacobian-vector products (forward over reverse).

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import hessian
    >>> hessian(lambda x: (x ** 3).sum(), tg.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    inputs_tuple, ins = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*inp: Any) -> Any:
        out = func(*inp)
        out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _strict_requires_grad(t_out, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single element"
            )
        return out.squeeze()

    def jac_func(*inp: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            # the inner jacobian must keep its graph to the (dual) inputs
            inp = tuple(t.requires_grad_(True) if not t.requires_grad else t for t in inp)
        jac = jacobian(scalar_func, inp, create_graph=True)
        _strict_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (inputs_tuple, inputs_tuple))


def _hessian_product_setup(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool,
                           name: str) -> tuple[bool, tuple[Any, ...], Any, Any, bool, tuple[Any, ...]]:
    inputs_tuple, ins = _as_tuple(inputs, "inputs", name)
    ins = _prepare(ins, create_graph, True)
    if v is not None:
        _, vs = _as_tuple(v, "v", name)
        vs = _prepare(vs, create_graph, False)
        _check_v(vs, ins, inputs_tuple)
    else:
        if len(ins) != 1 or ins[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single "
                "Tensor with a single element."
            )
        vs = None
    outputs = func(*ins)
    outputs_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _strict_requires_grad(outs, "outputs", strict)
    if outputs_tuple or not isinstance(outs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    jac = _grad(outs, ins, create_graph=True)
    _strict_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, ins, vs, outs, outputs_tuple, jac


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """The vector-Hessian product ``v^T H`` of the scalar function ``func`` at ``inputs``: returns
    ``(func(*inputs), vhp)``, the second shaped as ``inputs``.

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import vhp
    >>> out, r = vhp(lambda x: (x ** 3).sum(), tg.tensor([1., 2.]), tg.tensor([1., 1.]))
    >>> r
    tensor([ 6., 12.])
    """
    _refuse_inside_transform("vhp", create_graph)
    with enable_grad():
        inputs_tuple, ins, vs, outs, outputs_tuple, jac = _hessian_product_setup(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(jac, ins, vs, create_graph=create_graph)
        res = _zeros_for_none(res, ins, strict, create_graph, "double_back")
    return _unpack(_finish(outs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """The Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``: returns
    ``(func(*inputs), hvp)``, the second shaped as ``inputs``. It goes through the double-vjp
    construction, so it costs about twice ``vhp`` (for a symmetric Hessian the two agree).

    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import hvp
    >>> out, r = hvp(lambda x: (x ** 3).sum(), tg.tensor([1., 2.]), tg.tensor([1., 0.]))
    >>> r
    tensor([6., 0.])
    """
    _refuse_inside_transform("hvp", create_graph)
    with enable_grad():
        inputs_tuple, ins, vs, outs, outputs_tuple, jac = _hessian_product_setup(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(_internal(zeros_like(x, requires_grad=True)) for x in ins)
        double_back = _grad(jac, ins, grad_jac, create_graph=True)
        _strict_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(double_back, grad_jac, vs, create_graph=create_graph)
        res = _zeros_for_none(res, ins, strict, create_graph, "double_back_trick")
    return _unpack(_finish(outs, create_graph), outputs_tuple), _unpack(_finish(res, create_graph), inputs_tuple)
