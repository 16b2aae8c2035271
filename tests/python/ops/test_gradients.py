"""Gradients of every differentiable operation against central finite differences in float64.

For each operation (one test id per operation and spelling, ``test_gradient[<op>/<variant>]``) hypothesis
draws shapes (broadcasting pairs, size-1 dimensions, 0-d) and float64 values inside the operation's smooth
domain (away from 0 for abs/relu/div, positive for log/sqrt, away from clamp bounds and from ties for max).
Every input is built in one of the four layouts of ``fd_inputs.py`` (``contig``: a contiguous leaf; ``t``: a
transposed, non-contiguous leaf; ``step``: a leaf with stride 2 in its last dimension; ``view``: a contiguous
leaf used through ``.transpose(-1, -2)``, so the gradient also flows back through a view node), which also
holds the value domains and shape strategies.

The test then checks, per example:

1. the forward value against NumPy (same shape, dtype float64, values to 1e-12);
2. with a random upstream gradient ``G``: ``x.grad`` of each input == d/dx sum(G * f(inputs)), the
   right-hand side from ``oracles.numeric_grad`` (central differences, eps 1e-6, float64).

The table itself is ``tests/support/op_table.py``.
"""

import numpy as np
import pytest
from fd_inputs import draw_operands, normal
from hypothesis import given
from hypothesis import strategies as st
from op_table import OPS, SETTINGS
from oracles import numeric_grad

import tapegrad as tg

# ---------------------------------------------------------------------------------------------------------
# the test
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
@SETTINGS
@given(data=st.data())
def test_gradient(op, data):
    arrays, params, inputs, leaves = draw_operands(op, data)

    out = op.f(*[inp.use(leaf) for inp, leaf in zip(inputs, leaves)], **params)
    expected = np.asarray(op.ref(*arrays, **params), dtype=np.float64)
    assert out.dtype == tg.float64
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)

    g = normal(data, expected.shape, "upstream seed")  # a random upstream gradient
    out.backward(tg.tensor(g))

    def weighted(*ts):
        return op.f(*[inp.use(t) for inp, t in zip(inputs, ts)], **params) * tg.tensor(g)

    fd_arrays = [inp.fd_array for inp in inputs]
    for i, leaf in enumerate(leaves):
        assert leaf.grad is not None, f"no gradient reached input {i}"
        assert leaf.grad.shape == leaf.shape and leaf.grad.dtype == tg.float64
        fd = numeric_grad(weighted, fd_arrays, i) if fd_arrays[i].size else np.zeros(fd_arrays[i].shape)
        np.testing.assert_allclose(leaf.grad.numpy(), fd, rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of input {i} ({inputs[i].layout})")
