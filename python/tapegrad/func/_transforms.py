"""The function transforms of ``tapegrad.func`` (see its module docstring)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, Union

from .. import _tapegrad as _C
from .._creation import zeros_like
from .._grad_mode import enable_grad
from ..autograd import functional as _AF
from ._pytree import TreeSpec, tree_flatten, tree_unflatten

Tensor = _C.Tensor
argnums_t = Union[int, "tuple[int, ...]"]

# How many transforms are running on this thread. Inside another transform, results keep their
# graph (the outer transform differentiates them); at the outermost one they are detached unless
# they depend on something of the caller's that requires grad (an input, or a captured tensor).
_state = threading.local()


def _depth() -> int:
    return getattr(_state, "depth", 0)


@contextmanager
def _no_inference() -> Iterator[None]:
    # A transform records a graph of its own even inside an inference-mode region (as functorch's
    # do); grad mode is left alone, so the results still follow the caller's grad mode.
    if not _C.is_inference_mode_enabled():
        yield
        return
    grad_mode = _C.is_grad_enabled()
    prev = _C._set_inference_mode(False)
    _C._set_grad_enabled(grad_mode)
    try:
        yield
    finally:
        _C._set_inference_mode(prev)
        _C._set_grad_enabled(grad_mode)


@contextmanager
def _level() -> Iterator[None]:
    _state.depth = _depth() + 1
    try:
        with _no_inference():
            yield
    finally:
        _state.depth -= 1
        if _state.depth == 0:
            _state.held = []


def _hold(t: Any) -> Any:
    """Keeps the fresh leaf ``t`` alive until the outermost transform on this thread returns, so
    that an enclosing transform's graph walk (``_reaches_outside``) still recognises it as one of
    the transforms' own leaves after the inner transform that made it has returned (the registry
    of internal leaves is weak, and a leaf's Python object may otherwise be collected first)."""
    held = getattr(_state, "held", None)
    if held is None:
        held = _state.held = []
    held.append(t)
    return t


def _connected(*tensors: Any) -> bool:
    """Whether results computed from ``tensors`` belong to a graph outside this transform: it
    runs inside another transform, or one of them (an input, tangent or cotangent) requires grad."""
    return _depth() > 1 or any(isinstance(t, Tensor) and t.requires_grad for t in tensors)


def _keep(*tensors: Any) -> bool:
    """Whether this transform's results must stay differentiable: they are connected to an outer
    graph and grad mode is on where the transform is called (under ``no_grad`` they are not)."""
    return _C.is_grad_enabled() and _connected(*tensors)


def _reaches_outside(tensors: Any, own: list[Any]) -> bool:
    """Whether the graph of ``tensors`` reaches a tensor that requires grad other than this
    transform's own leaves ``own``: a parameter the function captured, say. Then the results must
    keep their graph for the caller's backward pass through them."""
    own_ids = {id(t) for t in own}
    stack = []
    for t in tree_flatten(tensors)[0]:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        if t.grad_fn is None:
            if id(t) not in own_ids and not _AF._is_internal(t):
                return True
        else:
            stack.append(t.grad_fn)
    seen: dict[int, Any] = {}  # holds the nodes so that their ids stay unique during the walk
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        var = node.variable
        if var is not None:
            if id(var) not in own_ids and not _AF._is_internal(var):
                return True
            continue
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return False


def _track(x: Any) -> Any:
    """A new tensor object standing for ``x`` at this level: a view of ``x``. When ``x`` already
    requires grad the outer graph sees through it; otherwise the view is a new leaf that requires
    grad (a view, not ``detach()``, so that a forward-mode tangent ``x`` carries stays on it)."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if x.requires_grad:
        return x.view_as(x)
    if x.is_inference():  # made in inference mode: an ordinary copy can require grad
        x = x.clone()
    return _hold(_AF._internal(x.view_as(x).requires_grad_(True)))


def _detach(t: Any) -> Any:
    """``t.detach()`` keeping the tangents ``t`` carries at the live dual levels: a transform's
    results lose the transform's own graph, not the forward-mode derivative a caller computes
    through it (``jvp`` inside ``forward_ad.dual_level()``, or inside an outer ``jvp``)."""
    d = t.detach()
    for level in range(_C._dual_level_count()):
        tangent = _C._unpack_dual(t, level)[1]
        if tangent is not None:
            d = _C._make_dual(d, tangent, level)
    return d


def _detach_tree(tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([_detach(x) if isinstance(x, Tensor) else x for x in leaves], spec)


# --- argnums -----------------------------------------------------------------------------------


def _wrap_argnum(argnum: Any, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _normalize_argnums(argnums: Any, num_args: int) -> int | tuple[int, ...]:
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    res = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if not res:
        raise RuntimeError("argnums must be non-empty")
    if len(set(res)) != len(res):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return res


def _slice_argnums(args: tuple[Any, ...], argnums: Any, as_tuple: bool = True) -> Any:
    """The arguments ``argnums`` picks (a tuple of them, or the one argument for an int
    ``argnums`` with ``as_tuple=False``)."""
    nums = _normalize_argnums(argnums, len(args))
    if isinstance(nums, int):
        return (args[nums],) if as_tuple else args[nums]
    return tuple(args[i] for i in nums)


def _replace_argnums(args: tuple[Any, ...], nums: int | tuple[int, ...], new: Any) -> tuple[Any, ...]:
    out = list(args)
    if isinstance(nums, int):
        out[nums] = new
    else:
        for i, n in enumerate(nums):
            out[n] = new[i]
    return tuple(out)


def _split_aux(output: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for leaf in tree_flatten(output[1])[0]:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return output[0], output[1]


def _tensor_leaves(tree: Any, api: str) -> tuple[list[Any], TreeSpec]:
    leaves, spec = tree_flatten(tree)
    if not leaves:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {tree})")
    for o in leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
    return leaves, spec


def _check_floating(outputs: list[Any]) -> None:
    # reverse mode differentiates floating outputs only (jacrev's message is vjp's, as PyTorch's)
    for o in outputs:
        if not o.is_floating_point():
            raise RuntimeError(
                f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                f"with dtype {o.dtype}"
            )


def _grads(outputs: list[Any], inputs: list[Any], grad_outputs: list[Any] | None, create_graph: bool,
           retain_graph: bool | None = None) -> list[Any]:
    """Gradients of ``outputs`` (those that require grad) with respect to ``inputs``, zeros where
    an input is not reached."""
    gos = grad_outputs if grad_outputs is not None else [None] * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, gos) if o.requires_grad]
    if pairs:
        from ..autograd import grad as _autograd_grad

        res = list(_autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                                  retain_graph=retain_graph, create_graph=create_graph, allow_unused=True))
    else:
        res = [None] * len(inputs)
    return [zeros_like(x) if g is None else g for g, x in zip(res, inputs)]


# --- grad, grad_and_value, vjp --------------------------------------------------------------------


def grad_and_value(func: Callable[..., Any], argnums: argnums_t = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Like ``grad``, but the function returned gives ``(gradient, value)`` -- and
    ``(gradient, (value, aux))`` with ``has_aux=True``.

    >>> import tapegrad as tg
    >>> g, v = tg.func.grad_and_value(lambda x: (x ** 2).sum())(tg.tensor([1., 2.]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        api = "grad_and_value(f)(*args)"
        nums = _normalize_argnums(argnums, len(args))
        with _level():
            chosen = _slice_argnums(args, nums, as_tuple=False)
            in_leaves, in_spec = tree_flatten(chosen)
            grad_mode = _C.is_grad_enabled()
            keep = _keep(*in_leaves)
            with enable_grad():
                tracked = [_track(x) for x in in_leaves]
                call_args = _replace_argnums(args, nums, tree_unflatten(tracked, in_spec))
                output = func(*call_args, **kwargs)
                output, aux = _split_aux(output, has_aux, api)
                if not isinstance(output, Tensor):
                    raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
                if output.dim() != 0:
                    raise RuntimeError(
                        f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} dims. "
                        "Maybe you wanted to use the vjp or jacrev APIs instead?"
                    )
                keep = keep or (grad_mode and _reaches_outside((output, aux), tracked))
                gs = _grads([output], tracked, None, create_graph=keep)
            grads = tree_unflatten(gs, in_spec)
            if not keep:
                grads, output, aux = _detach_tree(grads), _detach(output), _detach_tree(aux)
        return (grads, (output, aux)) if has_aux else (grads, output)

    return wrapper


def grad(func: Callable[..., Any], argnums: argnums_t = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of ``func`` (which returns a scalar tensor) with respect to the argument(s)
    ``argnums``, as a function of the same arguments. An argument may be a pytree (tuples, lists,
    dicts) of tensors; the gradient has its structure. With ``has_aux=True`` ``func`` returns
    ``(output, aux)`` and the transform ``(gradient, aux)``. Transforms nest: ``grad(grad(f))``.

    >>> import tapegrad as tg
    >>> tg.func.grad(lambda x: (x ** 3).sum())(tg.tensor([1., 2.]))
    tensor([ 3., 12.])
    >>> tg.func.grad(tg.func.grad(tg.sin))(tg.tensor(0.5))
    tensor(-0.4794)
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Runs ``func(*primals)`` and returns ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with
    ``has_aux=True``); ``vjp_fn(cotangents)`` -- cotangents shaped as the output pytree -- gives
    the vector-Jacobian products for every primal, as a tuple. It can be called more than once.

    >>> import tapegrad as tg
    >>> out, vjp_fn = tg.func.vjp(lambda x: x ** 2, tg.tensor([1., 2.]))
    >>> vjp_fn(tg.tensor([1., 1.]))
    (tensor([2., 4.]),)
    """
    api = "vjp(f, *primals)"
    with _level():
        in_leaves, in_spec = tree_flatten(primals)
        grad_mode = _C.is_grad_enabled()
        keep = _keep(*in_leaves)
        connected = _connected(*in_leaves)
        with enable_grad():
            tracked = [_track(x) for x in in_leaves]
            output = func(*tree_unflatten(tracked, in_spec))
            output, aux = _split_aux(output, has_aux, api)
            out_leaves, out_spec = _tensor_leaves(output, api)
            if not connected and _reaches_outside((output, aux), tracked):
                connected = True
                keep = keep or grad_mode
            _check_floating(out_leaves)

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> tuple[Any, ...]:
        ct_leaves, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to "
                f"the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        for c, o in zip(ct_leaves, out_leaves):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"vjp_fn: Expected cotangents to only contain Tensors, got {type(c)}")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output has a shape of {c.shape} and output has a shape of {o.shape}."
                )
        cg = _C.is_grad_enabled() if create_graph is None else bool(create_graph)
        with _no_inference(), enable_grad():
            gs = _grads(out_leaves, tracked, ct_leaves, create_graph=cg, retain_graph=retain_graph or cg)
        # results that only depend on this transform's own leaves come back detached
        if not cg or not (connected or _depth() > 0 or any(c.requires_grad for c in ct_leaves)):
            gs = [_detach(g) for g in gs]
        return tuple(tree_unflatten(gs, in_spec))

    result = output if keep else _detach_tree(output)
    if has_aux:
        return result, vjp_fn, (aux if keep else _detach_tree(aux))
    return result, vjp_fn


# --- jvp --------------------------------------------------------------------------------------------


def _jvp_core(call: Callable[..., Any], primals: list[Any], tangents: list[Any], has_aux: bool,
              strict: bool, api: str, keep: bool) -> tuple[Any, TreeSpec, list[Any], list[Any], Any, bool]:
    """Pushes ``tangents`` through ``call(*primals)``: (output pytree, its spec, output leaves,
    their tangents, aux, whether the results must keep their graph -- ``keep``, or the function
    captured a tensor that requires grad)."""
    box: dict[str, Any] = {}

    def outs_of(obj: Any) -> tuple[Any, ...]:
        out, aux = _split_aux(obj, has_aux, api)
        leaves, spec = _tensor_leaves(out, api)
        box["out"], box["aux"], box["spec"] = out, aux, spec
        return tuple(leaves)

    grad_mode = _C.is_grad_enabled()

    def decide(ins: tuple[Any, ...], obj: Any) -> bool:
        box["keep"] = keep or (grad_mode and _reaches_outside(obj, list(ins)))
        return bool(box["keep"])

    box["keep"] = keep
    fwd = _AF._forward_ad()
    _, outs, touts = _AF._push(call, tuple(primals), tuple(tangents), outs_of, decide, fwd)
    if fwd is not None and not keep:
        # the primals entered as themselves: anything else requiring grad was captured
        box["keep"] = grad_mode and _reaches_outside(list(outs) + [box["aux"]], list(primals))
    res = []
    for o, t in zip(outs, touts):
        if t is None:
            if strict:
                raise RuntimeError(
                    "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                    "This is not allowed with strict=True."
                )
            t = zeros_like(o)
        res.append(t)
    return box["out"], box["spec"], list(outs), res, box["aux"], bool(box["keep"])


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Any:
    """The Jacobian-vector product of ``func`` at ``primals`` (a tuple of arguments, each a
    tensor or a pytree of tensors) along ``tangents`` (the same structure): returns
    ``(func(*primals), jvp_out)`` -- and ``aux`` third with ``has_aux=True``.

    >>> import tapegrad as tg
    >>> out, t = tg.func.jvp(lambda x: x ** 2, (tg.tensor([1., 2.]),), (tg.tensor([1., 0.]),))
    >>> t
    tensor([2., 0.])
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For example, if "
            "primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
            f"{p_spec} and tangents with structure {t_spec}"
        )
    for name, leaves in (("primals", p_leaves), ("tangents", t_leaves)):
        if not leaves:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{api}: Expected primals and tangents to have the same shapes, got {p.shape} and {t.shape}"
            )
    with _level():
        keep = _keep(*p_leaves, *t_leaves)

        def call(*flat: Any) -> Any:
            return func(*tree_unflatten(list(flat), p_spec))

        out, spec, outs, touts, aux, keep = _jvp_core(call, p_leaves, t_leaves, has_aux, strict, api, keep)
        if not keep:
            outs = [_detach(o) for o in outs]
            touts = [_detach(t) for t in touts]
            aux = _detach_tree(aux)
    result = (tree_unflatten(outs, spec), tree_unflatten(touts, spec))
    return result + (aux,) if has_aux else result


# --- Jacobians ----------------------------------------------------------------------------------------


def _one_hot(like: Any, k: int) -> Any:
    flat = zeros_like(like).reshape(-1)
    flat[k] = 1.0
    return flat.reshape(*like.shape)


def _jac_result(blocks: list[list[Any]], out_spec: TreeSpec, nums: int | tuple[int, ...],
                arg_specs: list[TreeSpec]) -> Any:
    """``blocks[i][j]``: output leaf i against input leaf j, in the structure
    output-pytree of (argument pytree, or tuple of them for a tuple ``argnums``)."""
    per_out = []
    for row in blocks:
        parts, start = [], 0
        for s in arg_specs:
            parts.append(tree_unflatten(row[start:start + s.num_leaves], s))
            start += s.num_leaves
        per_out.append(parts[0] if isinstance(nums, int) else tuple(parts))
    return tree_unflatten(per_out, out_spec)


def _chosen(args: tuple[Any, ...], nums: int | tuple[int, ...]) -> tuple[list[Any], list[TreeSpec]]:
    picked = (args[nums],) if isinstance(nums, int) else tuple(args[n] for n in nums)
    leaves: list[Any] = []
    specs = []
    for a in picked:
        lv, sp = tree_flatten(a)
        leaves += lv
        specs.append(sp)
    return leaves, specs


def _rebuild_args(args: tuple[Any, ...], nums: int | tuple[int, ...], leaves: list[Any],
                  specs: list[TreeSpec]) -> tuple[Any, ...]:
    new, start = [], 0
    for s in specs:
        new.append(tree_unflatten(leaves[start:start + s.num_leaves], s))
        start += s.num_leaves
    return _replace_argnums(args, nums, new[0] if isinstance(nums, int) else tuple(new))


def jacrev(func: Callable[..., Any], argnums: argnums_t = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``func`` with respect to the argument(s) ``argnums``, by reverse mode: one
    vector-Jacobian product per output element (there is no vmap; ``chunk_size`` is accepted and
    checked but changes nothing). For one tensor in and out the result has shape
    ``output.shape + input.shape``; for pytrees it is the output's structure holding, per output
    leaf, the argument's structure (a tuple of them for a tuple ``argnums``).

    >>> import tapegrad as tg
    >>> tg.func.jacrev(lambda x: x.sin())(tg.tensor([0., 1.]))
    tensor([[1.0000, 0.0000],
            [0.0000, 0.5403]])
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        api = "jacrev(f, ...)(*args)"
        nums = _normalize_argnums(argnums, len(args))
        with _level():
            in_leaves, specs = _chosen(args, nums)
            grad_mode = _C.is_grad_enabled()
            keep = _keep(*in_leaves)
            with enable_grad():
                tracked = [_track(x) for x in in_leaves]
                output = func(*_rebuild_args(args, nums, tracked, specs), **kwargs)
                output, aux = _split_aux(output, has_aux, "vjp(f, *primals)")
                out_leaves, out_spec = _tensor_leaves(output, api)
                _check_floating(out_leaves)
                keep = keep or (grad_mode and _reaches_outside((output, aux), tracked))
                blocks = _batched_rows(out_leaves, tracked, keep, chunk_size)
                for o in out_leaves if blocks is None else []:
                    rows: list[list[Any]] = [[] for _ in tracked]
                    for k in range(o.numel()):
                        gs = _grads([o], tracked, [_one_hot(o, k)], create_graph=keep, retain_graph=True)
                        for j, g in enumerate(gs):
                            rows[j].append(g)
                    row = []
                    for j, x in enumerate(tracked):
                        mat = _C.stack(rows[j], dim=0) if rows[j] else _C.zeros(0, *x.shape, dtype=x.dtype)
                        row.append(mat.reshape(*o.shape, *x.shape))
                    blocks = blocks or []
                    blocks.append(row if keep else [_detach(b) for b in row])
            jac = _jac_result(blocks or [], out_spec, nums, specs)
            if has_aux:
                return jac, (aux if keep else _detach_tree(aux))
            return jac

    return wrapper


def _batched_rows(out_leaves: list[Any], tracked: list[Any], keep: bool,
                  chunk_size: int | None) -> list[list[Any]] | None:
    """jacrev's blocks (``blocks[i][j]``: output leaf i against input j) from one batched reverse
    run over the recorded graph (NOTE [Batched rows] in ``autograd/jacobian.rs``), or None when
    that run declines (hooks, anomaly mode) or there is no row: the caller loops over rows."""
    if not any(o.numel() for o in out_leaves):
        return None
    rows = _C._jacobian_rows(list(out_leaves), list(tracked), keep, chunk_size)
    if rows is None:
        return None
    blocks, start = [], 0
    for o in out_leaves:
        n = o.numel()
        row = []
        for x, r in zip(tracked, rows):
            if r is None:
                mat = _C.zeros(*o.shape, *x.shape, dtype=x.dtype)
            else:
                mat = r[start:start + n].reshape(*o.shape, *x.shape)
            row.append(mat if keep else _detach(mat))
        blocks.append(row)
        start += n
    return blocks


def _batched_columns(call: Callable[..., Any], in_leaves: list[Any], has_aux: bool, api: str,
                     keep: bool) -> tuple[TreeSpec, list[Any], list[list[Any]], Any, bool] | None:
    """jacfwd's blocks from one run of the function and one batched reverse run over its
    double-vjp graph (``g(u) = J^T u``, whose vector-Jacobian product with a basis tangent is a
    column of ``J``): (output spec, output leaves, blocks[i][j], aux, whether the results keep
    their graph), or None when the function has a custom ``Function`` (whose forward rule is its
    own ``jvp``: the caller pushes tangents column by column) or the batched run declines."""
    box: dict[str, Any] = {}
    grad_mode = _C.is_grad_enabled()

    def outs_of(obj: Any) -> tuple[Any, ...]:
        out, aux = _split_aux(obj, has_aux, api)
        leaves, spec = _tensor_leaves(out, api)
        box["aux"], box["spec"] = aux, spec
        if _C._reaches_custom(list(leaves)):
            raise _UseColumns
        return tuple(leaves)

    def decide(ins: tuple[Any, ...], obj: Any) -> bool:
        return keep or (grad_mode and _reaches_outside(obj, list(ins)))

    try:
        lin = _AF._Linearization(call, in_leaves, outs_of, decide)
    except _UseColumns:
        return None
    outs = list(lin.outs)
    cg = lin.create_graph
    roots = [x.detach() if g is None else g for g, x in zip(lin.g, in_leaves)]
    rows = _C._jacobian_rows(roots, list(lin.us), cg, None) if lin.us else []
    if rows is None:
        return None
    by_out: list[Any] = [None] * len(outs)
    for i, r in zip(lin.diff, rows):
        by_out[i] = r
    blocks = []
    for o, r in zip(outs, by_out):
        row, start = [], 0
        for x in in_leaves:
            n = x.numel()
            if r is None:
                mat = _C.zeros(*o.shape, *x.shape, dtype=o.dtype)
            else:
                # rows of J^T: row k is column k of J
                mat = r[start:start + n].reshape(n, o.numel()).t().reshape(*o.shape, *x.shape)
            start += n
            row.append(mat if cg else _detach(mat))
        blocks.append(row)
    return box["spec"], outs, blocks, box["aux"], cg


class _UseColumns(Exception):
    """Raised out of the linearization when jacfwd must push tangents column by column."""


def jacfwd(func: Callable[..., Any], argnums: argnums_t = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian of ``func`` with respect to the argument(s) ``argnums``, by forward mode: one
    Jacobian-vector product per input element (there is no vmap, so ``randomness`` only accepts
    PyTorch's values). Same result structure as ``jacrev``.

    >>> import tapegrad as tg
    >>> tg.func.jacfwd(lambda x: x ** 2)(tg.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        api = "jvp(f, primals, tangents)"  # jacfwd is built on jvp: its messages, as PyTorch's
        nums = _normalize_argnums(argnums, len(args))
        with _level():
            in_leaves, specs = _chosen(args, nums)
            for x in in_leaves:
                if not isinstance(x, Tensor):
                    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
                if not x.is_floating_point():
                    # the basis tangents make dual tensors of the inputs (PyTorch's make_dual refusal)
                    raise ValueError(f"Expected primal to be floating point or complex, but got: {x.dtype}")
            keep = _keep(*in_leaves)

            def call(*flat: Any) -> Any:
                return func(*_rebuild_args(args, nums, list(flat), specs), **kwargs)

            if any(x.numel() for x in in_leaves):
                batched = _batched_columns(call, in_leaves, has_aux, api, keep)
                if batched is not None:
                    b_spec, _outs, b_blocks, b_aux, b_keep = batched
                    jac = _jac_result(b_blocks, b_spec, nums, specs)
                    if has_aux:
                        return jac, (b_aux if b_keep else _detach_tree(b_aux))
                    return jac
            cols: list[list[Any]] | None = None
            out_leaves: list[Any] = []
            out_spec: TreeSpec | None = None
            aux = None
            if _AF._forward_ad() is None and any(x.numel() for x in in_leaves):
                # double-vjp: run the function once, then one reverse pass per column
                out_spec, out_leaves, cols, aux, keep = _jacfwd_columns_double_vjp(call, in_leaves, has_aux, api,
                                                                                   keep)
            for j, x in enumerate(in_leaves if cols is None else []):
                for k in range(x.numel()):
                    tangents = [zeros_like(t) for t in in_leaves]
                    tangents[j] = _one_hot(x, k)
                    _, out_spec, out_leaves, touts, aux, keep = _jvp_core(call, in_leaves, tangents, has_aux,
                                                                          False, api, keep)
                    if cols is None:
                        cols = [[] for _ in touts]
                    for i, t in enumerate(touts):
                        cols[i].append(t)
            if cols is None or out_spec is None:  # no input element: the output's shapes still count
                with enable_grad():
                    out, aux = _split_aux(call(*in_leaves), has_aux, api)
                out_leaves, out_spec = _tensor_leaves(out, api)
                cols = [[] for _ in out_leaves]
            blocks = []
            for i, o in enumerate(out_leaves):
                row, start = [], 0
                for x in in_leaves:
                    n = x.numel()
                    chunk = cols[i][start:start + n]
                    start += n
                    mat = _C.stack(chunk, dim=-1) if chunk else _C.zeros(*o.shape, 0, dtype=o.dtype)
                    mat = mat.reshape(*o.shape, *x.shape)
                    row.append(mat if keep else _detach(mat))
                blocks.append(row)
            jac = _jac_result(blocks, out_spec, nums, specs)
            if has_aux:
                return jac, (aux if keep else _detach_tree(aux))
            return jac

    return wrapper


def _jacfwd_columns_double_vjp(call: Callable[..., Any], in_leaves: list[Any], has_aux: bool, api: str,
                               keep: bool) -> tuple[TreeSpec, list[Any], list[list[Any]], Any, bool]:
    """jacfwd's columns from one run of the function: (output spec, output leaves, cols[out][k] over
    every input element, aux, whether the results keep their graph)."""
    box: dict[str, Any] = {}
    grad_mode = _C.is_grad_enabled()

    def outs_of(obj: Any) -> tuple[Any, ...]:
        out, aux = _split_aux(obj, has_aux, api)
        leaves, spec = _tensor_leaves(out, api)
        box["aux"], box["spec"] = aux, spec
        return tuple(leaves)

    def decide(ins: tuple[Any, ...], obj: Any) -> bool:
        return keep or (grad_mode and _reaches_outside(obj, list(ins)))

    lin = _AF._Linearization(call, in_leaves, outs_of, decide)
    outs = list(lin.outs)
    cols: list[list[Any]] = [[] for _ in outs]
    n = len(in_leaves)
    for j, x in enumerate(in_leaves):
        for k in range(x.numel()):
            tangents = [_one_hot(x, k) if i == j else None for i in range(n)]
            touts = lin.jvp(tangents, retain_graph=True)
            for i, (o, t) in enumerate(zip(outs, touts)):
                cols[i].append(zeros_like(o) if t is None else t)
    return box["spec"], outs, cols, box["aux"], lin.create_graph


def hessian(func: Callable[..., Any], argnums: argnums_t = 0) -> Callable[..., Any]:
    """The Hessian of the scalar function ``func`` with respect to the argument(s) ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)`` (forward over reverse).

    >>> import tapegrad as tg
    >>> tg.func.hessian(lambda x: (x ** 3).sum())(tg.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


# --- functional_call ----------------------------------------------------------------------------------


def _resolve(module: Any, name: str) -> tuple[Any, str]:
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, leaf


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Calls ``module(*args, **kwargs)`` with some of its parameters and buffers replaced, for this
    call only, by the tensors of ``parameter_and_buffer_dicts`` (a dict from dotted names such as
    ``"0.weight"`` to tensors, or a tuple of such dicts with no name in two of them). A tensor
    shared under two names (tied weights) is replaced under both unless ``tie_weights=False``. With
    ``strict=True`` the dicts must name every parameter and buffer and nothing else. ``args`` that
    is not a tuple is the single positional argument.

    >>> import tapegrad as tg
    >>> lin = tg.nn.Linear(2, 1)
    >>> params = {"weight": tg.tensor([[1., 2.]]), "bias": tg.tensor([0.5])}
    >>> tg.func.functional_call(lin, params, (tg.tensor([[1., 1.]]),))
    tensor([[3.5000]])
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        mapping = {}
        seen: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(
                    "Expected all elements of parameter_and_buffer_dicts to be dictionaries, got "
                    f"{type(d)}"
                )
            for k in d:
                seen[k] = seen.get(k, 0) + 1
            mapping.update(d)
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}

    owned = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    if strict:
        names = {n for n, _ in owned}
        missing = sorted(names - set(mapping))
        unexpected = sorted(set(mapping) - names)
        if missing or unexpected:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError("\n".join(lines))
    if tie_weights:
        # every name of a tensor that is given under one of its names gets the same replacement
        by_tensor: dict[int, list[str]] = {}
        for n, t in owned:
            by_tensor.setdefault(id(t), []).append(n)
        for group in by_tensor.values():
            given = [n for n in group if n in mapping]
            if not given or len(group) == 1:
                continue
            first = mapping[given[0]]
            for n in given[1:]:
                if mapping[n] is not first:
                    raise ValueError(
                        f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                        "Consider using tie_weights=False"
                    )
            for n in group:
                mapping.setdefault(n, first)

    saved: list[tuple[Any, str, str, Any]] = []
    try:
        for name, value in mapping.items():
            owner, attr = _resolve(module, name)
            params = owner.__dict__.get("_parameters", {})
            buffers = owner.__dict__.get("_buffers", {})
            if attr in params:
                saved.append((owner, "_parameters", attr, params[attr]))
                params[attr] = value
            elif attr in buffers:
                saved.append((owner, "_buffers", attr, buffers[attr]))
                buffers[attr] = value
            else:
                saved.append((owner, "__dict__", attr, owner.__dict__.get(attr, _MISSING)))
                owner.__dict__[attr] = value
        return module(*args, **kwargs)
    finally:
        for owner, table, attr, old in reversed(saved):
            store = owner.__dict__ if table == "__dict__" else owner.__dict__[table]
            if old is _MISSING:
                store.pop(attr, None)
            else:
                store[attr] = old


_MISSING = object()


# --- linearize ----------------------------------------------------------------------------------------


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """Runs ``func(*primals)`` once and returns ``(output, jvp_fn)``: ``jvp_fn(*tangents)`` -- the
    tangents shaped as ``primals`` -- gives the Jacobian-vector product at ``primals``, each call
    one reverse pass over a graph built once (the double-vjp construction: the vjp graph of ``func``
    with a dummy cotangent, differentiated with respect to that cotangent). It keeps that graph
    alive as long as ``jvp_fn``.

    >>> import tapegrad as tg
    >>> out, jvp_fn = tg.func.linearize(lambda x: x.sin(), tg.zeros(3))
    >>> jvp_fn(tg.tensor([1., 2., 3.]))
    tensor([1., 2., 3.])
    """
    api = "linearize(f, *primals)"
    leaves, spec = tree_flatten(primals)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{api}: Expected primals to only contain Tensors, got {type(x)}")
    shapes = [tuple(x.shape) for x in leaves]
    dtypes = [x.dtype for x in leaves]
    box: dict[str, Any] = {}
    with _level():
        grad_mode = _C.is_grad_enabled()
        keep = _keep(*leaves)

        def outs_of(obj: Any) -> tuple[Any, ...]:
            out_leaves, box["spec"] = _tensor_leaves(obj, api)
            return tuple(out_leaves)

        def decide(ins: tuple[Any, ...], obj: Any) -> bool:
            return keep or (grad_mode and _reaches_outside(obj, list(ins)))

        lin = _AF._Linearization(lambda *flat: func(*tree_unflatten(list(flat), spec)), leaves, outs_of, decide)
    output, out_spec, keep = lin.obj, box["spec"], lin.create_graph

    def jvp_fn(*tangents: Any) -> Any:
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {spec}")
        for idx, t in enumerate(t_leaves):
            if not isinstance(t, Tensor):
                raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got {type(t)}")
            if tuple(t.shape) != shapes[idx]:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{shapes[idx]} of the corresponding primal.")
            if t.dtype != dtypes[idx]:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{dtypes[idx]} of the corresponding primal.")
        cg = _C.is_grad_enabled() and (keep or _depth() > 0 or any(t.requires_grad for t in t_leaves))
        with _no_inference():
            touts = lin.jvp(t_leaves, retain_graph=True, create_graph=cg)
        res = [zeros_like(o) if r is None else (r if cg else _detach(r)) for o, r in zip(lin.outs, touts)]
        return tree_unflatten(res, out_spec)

    return (output if keep else _detach_tree(output)), jvp_fn
