"""Draws the backward graph of one step of the seed's two-layer network (with the custom MyReLU).

Run: python examples/graph_to_svg.py [OUTPUT_DIR]

Writes OUTPUT_DIR/graph.dot with `tg.autograd.to_dot`: one box per node (`MmBackward`,
`MyReLUBackward`, ...; `AccumulateGrad` for the weights), an arrow where gradient flows, and a note
for each saved tensor with its shape, dtype and version. It then renders OUTPUT_DIR/graph.svg when
the `graphviz` Python package (`pip install graphviz`) and Graphviz's `dot` program are installed,
and otherwise prints the command that renders it.
"""

import argparse
import pathlib
import shutil

import tapegrad as tg


class MyReLU(tg.Function):
    """ReLU as a custom function: saves its input, zeroes the gradient where the input was negative."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def build(seed=0):
    """The loss of the seed network's first step; its grad_fn is the graph to draw."""
    tg.manual_seed(seed)
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = tg.randn(N, D_in)
    y = tg.randn(N, D_out)
    w1 = tg.randn(D_in, H, requires_grad=True)
    w2 = tg.randn(H, D_out, requires_grad=True)
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    return (y_pred - y).pow(2).sum()


def render_svg(dot_text, svg_path):
    """Renders with the graphviz package; returns False when it or `dot` is missing."""
    try:
        import graphviz
    except ImportError:
        return False
    if shutil.which("dot") is None:
        return False
    svg_path.write_bytes(graphviz.Source(dot_text).pipe(format="svg"))
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default=".", help="where graph.dot and graph.svg go")
    out = pathlib.Path(parser.parse_args(argv).output_dir)
    out.mkdir(parents=True, exist_ok=True)

    dot_text = tg.autograd.to_dot(build())
    dot_path, svg_path = out / "graph.dot", out / "graph.svg"
    dot_path.write_text(dot_text + "\n")
    print(f"wrote {dot_path}")
    if render_svg(dot_text, svg_path):
        print(f"wrote {svg_path}")
    else:
        print("graphviz (the Python package and the `dot` program) is not installed; to render:")
        print(f"  dot -Tsvg {dot_path} -o {svg_path}")


if __name__ == "__main__":
    main()
