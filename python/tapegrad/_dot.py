"""``to_dot``: the graph behind a tensor as Graphviz DOT text."""

from __future__ import annotations

from . import _tapegrad as _C


def _fmt_shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def to_dot(tensor: _C.Tensor) -> str:
    """Nodes (by name), edges (gradient flow), and each node's saved tensors with shape, dtype
    and saved version; a saved tensor changed in place since is drawn red and marked stale.

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> dot = tg.autograd.to_dot(x.exp().sum())
    >>> dot.splitlines()[0], "ExpBackward" in dot, "AccumulateGrad" in dot
    ('digraph tapegrad {', True, True)
    """
    if not isinstance(tensor, _C.Tensor):
        raise TypeError("to_dot expects a Tensor")
    lines = ["digraph tapegrad {", '  node [shape=box, fontname="monospace"];']
    root = tensor.grad_fn
    shape = _fmt_shape(tensor.shape)
    lines.append(f'  output [label="output {shape} {tensor.dtype.name}", shape=ellipse];')
    if root is None:
        lines.append("}")
        return "\n".join(lines)
    seen = {}
    stack = [root]
    lines.append(f"  output -> n{root._id} [dir=back];")
    while stack:
        node = stack.pop()
        if node._id in seen:
            continue
        seen[node._id] = node
        label = node.name()
        var = node.variable
        if var is not None:
            label += f"\\nleaf {_fmt_shape(var.shape)} {var.dtype.name}"
        lines.append(f'  n{node._id} [label="{label}"];')
        info = node._saved_tensors_info
        if info is not None:
            for k, (s, dt, saved_v, cur_v) in enumerate(info):
                stale = saved_v != cur_v
                mark = f"\\nSTALE: now version {cur_v}" if stale else ""
                color = ', color=red, fontcolor=red' if stale else ""
                lines.append(
                    f'  s{node._id}_{k} [label="saved {_fmt_shape(s)} {dt}\\nversion {saved_v}{mark}", '
                    f'shape=note{color}];'
                )
                lines.append(f"  s{node._id}_{k} -> n{node._id} [style=dashed, arrowhead=none];")
        elif node.name() != "AccumulateGrad":
            lines.append(f'  n{node._id}_freed [label="saved tensors freed", shape=plaintext];')
            lines.append(f"  n{node._id}_freed -> n{node._id} [style=dotted, arrowhead=none];")
        for nxt, _nr in node.next_functions:
            if nxt is not None:
                lines.append(f"  n{node._id} -> n{nxt._id};")
                stack.append(nxt)
    lines.append("}")
    return "\n".join(lines)
