"""Gradients of plain operations and ``backward`` options used by part 2 of PyTorch's
``test_autograd.py``: the gradient of ``0 ** b`` with respect to the exponent, and the gradients a
user passes to ``autograd.backward`` are left unmodified when they are summed into an input.

Oracle: PyTorch 2.x's expected values (closed forms: d(a ** b)/db = a ** b * log(a), taken as 0
where a == 0 and b >= 0), and NumPy for the sums.
"""

import math

import numpy as np
import pytest

import tapegrad as tg


# covers: test_autograd.py::TestAutograd::test_power_function
@pytest.mark.parametrize("base", ["tensor", "scalar"])
def test_power_function(base):
    b = tg.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    a = tg.tensor([0.0, 0.0, 0.0]) if base == "tensor" else 0
    c = tg.sum(a**b)
    c.backward()
    np.testing.assert_array_equal(b.grad.numpy(), np.array([-math.inf, 0.0, 0.0], dtype=np.float32))


# covers: test_autograd.py::TestAutograd::test_input_buffer_accum
# PyTorch's second output is a gather with a sparse gradient (sparse is out of scope); an indexing
# view of the same leaf stands in for it, so two gradients are still summed for one input.
def test_input_buffer_accum():
    rng = np.random.default_rng(0)
    leaf = tg.tensor(rng.random((2, 2)), requires_grad=True)
    out2 = leaf[0]
    out1 = leaf.clone()

    g1_original = rng.random((2, 2))
    grad_out1 = tg.tensor(g1_original)
    g2 = rng.random(2)
    grad_out2 = tg.tensor(g2)

    tg.autograd.backward((out1, out2), (grad_out1, grad_out2))
    # the given gradients are not modified in place
    np.testing.assert_array_equal(grad_out1.numpy(), g1_original)
    np.testing.assert_array_equal(grad_out2.numpy(), g2)
    expected = g1_original.copy()
    expected[0] += g2
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-12)
