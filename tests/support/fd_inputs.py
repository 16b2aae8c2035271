"""Inputs for the finite-difference tests (``test_gradients.py``, ``test_second_order.py``): value domains,
shape strategies, drawing float64 arrays, the layouts a leaf is built in, and the operation-table entry.

Every input is built in one of four layouts (``LAYOUTS``):

- ``contig``: a contiguous leaf;
- ``t``: a leaf that is a transposed view of other memory (non-contiguous leaf, gradient has its shape);
- ``step``: a leaf that is ``base[..., ::2]`` (last dimension has stride 2);
- ``view``: a contiguous leaf used through ``.transpose(-1, -2)``, so the gradient also flows back through
  a view node.

Also ``augmented_assign``, the in-place operators ``+=``, ``-=``, ``*=``, ``/=`` as functions (shared with
``test_ops_values.py``).
"""

import os
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg

# Hypothesis examples per finite-difference test; raise it for a long local sweep
# (TAPEGRAD_FD_EXAMPLES=500 python -m pytest tests/python/ops/test_gradients.py tests/python/autograd/test_second_order.py).
EXAMPLES = int(os.environ.get("TAPEGRAD_FD_EXAMPLES", "25"))

# ---------------------------------------------------------------------------------------------------------
# value domains
# ---------------------------------------------------------------------------------------------------------

REAL = st.floats(-2.0, 2.0, allow_subnormal=False)
POS = st.floats(0.3, 2.0)  # log, sqrt, bases of pow
AWAY0 = st.one_of(st.floats(-2.0, -0.3), st.floats(0.3, 2.0))  # abs, relu, denominators
# a grid of half-steps: never closer than 0.05 to a bound drawn from GRID_BOUND (clamp)
GRID_HALF = st.integers(-20, 19).map(lambda k: (k + 0.5) / 10)
GRID_BOUND = st.integers(-10, 10).map(lambda k: k / 10)
# distinct values at least 0.1 apart (max, drawn with unique=True): finite differences never flip the argmax
DISTINCT = st.integers(-60, 60).map(lambda k: k / 10)
SCALAR = st.one_of(st.floats(-2.0, -0.3), st.floats(0.3, 2.0))

# ---------------------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------------------


def shapes(max_side, min_dims=0):
    """Shapes of ``min_dims`` to 3 dimensions, every side from 1 to ``max_side`` (the files differ in it)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=max_side)


PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)


def arr(data, shape, elements=REAL, unique=False, label=None):
    return np.asarray(data.draw(hnp.arrays(np.float64, shape, elements=elements, unique=unique), label=label))


# ---------------------------------------------------------------------------------------------------------
# layouts: how an input array becomes a (possibly non-contiguous) leaf
# ---------------------------------------------------------------------------------------------------------

LAYOUTS = ("contig", "t", "step", "view")


@dataclass
class Input:
    """One operand. ``value`` is the operand as the operation sees it; ``fd_array`` has the leaf's shape (what
    finite differences perturb); ``leaf()`` builds the leaf whose .grad is checked, in its layout; ``use(t)``
    turns a leaf (or a contiguous tensor of ``fd_array``) into the operation's input."""

    value: np.ndarray
    layout: str

    @property
    def fd_array(self):
        return np.swapaxes(self.value, -1, -2).copy() if self.layout == "view" else self.value

    def leaf(self):
        a = self.value
        if self.layout == "contig":
            return tg.tensor(a, requires_grad=True)
        if self.layout == "t":
            leaf = tg.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
            assert not leaf.is_contiguous() or 1 in a.shape[-2:] or a.size == 0  # as PyTorch: empty is contiguous
            return leaf.requires_grad_()
        if self.layout == "step":
            big = np.full(a.shape[:-1] + (2 * a.shape[-1],), np.nan)
            big[..., ::2] = a
            leaf = tg.tensor(big)[..., ::2]
            assert leaf.stride()[-1] == 2
            return leaf.requires_grad_()
        assert self.layout == "view"
        return tg.tensor(self.fd_array, requires_grad=True)

    def use(self, t):
        return t.transpose(-1, -2) if self.layout == "view" else t


def draw_layout(data, a, allowed):
    choices = [lay for lay in allowed if lay == "contig" or (lay == "step" and a.ndim >= 1) or a.ndim >= 2]
    return Input(a, data.draw(st.sampled_from(choices), label="layout"))


def draw_operands(op, data):
    """``op.draw(data)`` and a layout for each array: ``(arrays, params, inputs, leaves)``."""
    arrays, params = op.draw(data)
    inputs = [draw_layout(data, a, op.layouts) for a in arrays]
    return arrays, params, inputs, [inp.leaf() for inp in inputs]


def normal(data, shape, label):
    """A standard normal array seeded by hypothesis (so that failures replay): upstream gradients, directions."""
    seed = data.draw(st.integers(0, 2**32 - 1), label=label)
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------------------------------------------------
# operation-table entries and their draw functions
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Op:
    """``draw(data) -> (arrays, params)``; ``f(*tensors, **params)`` the tapegrad call (differentiated once in
    test_gradients.py, twice in test_second_order.py); ``ref`` its NumPy value (test_gradients.py only)."""

    name: str
    draw: Callable
    f: Callable
    ref: Optional[Callable] = None
    layouts: tuple = LAYOUTS

    def __repr__(self):
        return self.name


def one_operand_draws(default_shapes):
    """``draw_unary`` and ``draw_with_scalar`` for a file whose one-operand shapes come from ``default_shapes``."""

    def draw_unary(elements=REAL, shapes=default_shapes, unique=False):
        def draw(data):
            return [arr(data, data.draw(shapes, label="shape"), elements, unique)], {}

        return draw

    def draw_with_scalar(elements=REAL, scalar=SCALAR):
        def draw(data):
            return [arr(data, data.draw(default_shapes, label="shape"), elements)], {"s": data.draw(scalar, label="s")}

        return draw

    return draw_unary, draw_with_scalar


def draw_binary(ea=REAL, eb=REAL):
    def draw(data):
        sa, sb = data.draw(PAIRS, label="shapes").input_shapes
        return [arr(data, sa, ea), arr(data, sb, eb)], {}

    return draw


def mm_operands(max_side):
    """Draws an (m, n) and an (n, p) matrix, sides 1..max_side."""

    def draw(data):
        m, n, p = data.draw(st.tuples(*[st.integers(1, max_side)] * 3), label="m,n,p")
        return [arr(data, (m, n)), arr(data, (n, p))], {}

    return draw


def matmul_operands(kinds, max_side, batch_dims, batch_side):
    """Draws the operands of ``a @ b`` for one of ``kinds`` ("1d@2d", "batched@batched", ...): matrix sides
    1..max_side, batch shapes of 1..batch_dims dimensions (sides up to batch_side) that broadcast together."""

    def draw(data):
        m, n, p = data.draw(st.tuples(*[st.integers(1, max_side)] * 3), label="m,n,p")
        kind = data.draw(st.sampled_from(kinds), label="kind")
        batches = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=batch_dims, max_side=batch_side)
        ba, bb = data.draw(batches, label="batch").input_shapes
        left, right = kind.split("@")
        sa = {"1d": (n,), "2d": (m, n), "batched": ba + (m, n)}[left]
        sb = {"1d": (n,), "2d": (n, p), "batched": bb + (n, p)}[right]
        return [arr(data, sa), arr(data, sb)], {}

    return draw


# ---------------------------------------------------------------------------------------------------------
# augmented assignment
# ---------------------------------------------------------------------------------------------------------


def augmented_assign(opname):
    """``f(t, b)`` runs ``t <opname> b`` (one of "+=", "-=", "*=", "/=") and checks it keeps the same tensor."""

    def f(t, b):
        t0 = t
        if opname == "+=":
            t += b
        elif opname == "-=":
            t -= b
        elif opname == "*=":
            t *= b
        else:
            t /= b
        assert t is t0
        return t

    return f
