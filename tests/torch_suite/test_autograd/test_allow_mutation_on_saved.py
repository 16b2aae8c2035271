"""PyTorch's TestAllowMutationOnSaved (`test_autograd.py`), carried over.

PyTorch's context clones a saved tensor when it is first written and its tests also count those
clones (`ctx.cloned`, `ctx.tid_to_weakhandle`); tapegrad copies each saved tensor when it is saved
(docs/differences.md), so those internal counts are not carried over. Oracle: the
gradient of sum(b ** 2) with b = a.clone() is 2a whatever happens to b afterwards.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.graph import allow_mutation_on_saved_tensors

A = np.random.default_rng(0).random((2, 3))
MODIFIED = "variables needed for gradient computation has been modified by an inplace"


def arr(t):
    return np.asarray(t.detach().numpy())


# covers: test_autograd.py::TestAllowMutationOnSaved::test_basic
def test_basic():
    a = tg.tensor(A, requires_grad=True)

    def fn(a):
        b = a.clone()
        out = (b ** 2).sum()
        b.mul_(3)  # sin_ is issue 15's; any in-place write will do
        out.sum().backward()
        return a.grad

    with pytest.raises(RuntimeError, match=MODIFIED):
        fn(a)
    a.grad = None
    with allow_mutation_on_saved_tensors():
        da = fn(a)
    np.testing.assert_allclose(arr(da), 2 * A)


# covers: test_autograd.py::TestAllowMutationOnSaved::test_views
def test_views():
    a = tg.tensor(A, requires_grad=True)

    def fn(a):
        b = a.clone()
        c = b.view_as(b)
        out = (b ** 2).sum()
        c.mul_(3)
        out.sum().backward()
        return a.grad

    with pytest.raises(RuntimeError, match=MODIFIED):
        fn(a)
    a.grad = None
    with allow_mutation_on_saved_tensors():
        da = fn(a)
    np.testing.assert_allclose(arr(da), 2 * A)


# covers: test_autograd.py::TestAllowMutationOnSaved::test_save_base_and_modify_view
def test_save_base_and_modify_view():
    with allow_mutation_on_saved_tensors():
        a = tg.tensor(A, requires_grad=True)
        b = a.clone()
        c = b[:1]
        out = b ** 2
        c.mul_(10)  # modifies the view
        out.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 2 * A)


# covers: test_autograd.py::TestAllowMutationOnSaved::test_save_view_modify_base
def test_save_view_modify_base():
    with allow_mutation_on_saved_tensors():
        a = tg.tensor(A, requires_grad=True)
        b = a.clone()
        c = b[:]
        out = (c ** 2).sum()
        b.mul_(2)
        out.backward()
        np.testing.assert_allclose(arr(a.grad), 2 * A)


# covers: test_autograd.py::TestAllowMutationOnSaved::test_double_backward
def test_double_backward():
    with allow_mutation_on_saved_tensors():
        a = tg.tensor(A, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.mul_(3)
        tg.autograd.grad(out, a, create_graph=True)
        (da,) = tg.autograd.grad(out, a, create_graph=True)
        (d2a,) = tg.autograd.grad(da.sum(), a)
    np.testing.assert_allclose(arr(da), 2 * A)
    np.testing.assert_allclose(arr(d2a), 2 * np.ones_like(A))


# covers: test_autograd.py::TestAllowMutationOnSaved::test_backward_out_of_context
def test_backward_out_of_context():
    msg = "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    with allow_mutation_on_saved_tensors():
        a = tg.tensor(A, requires_grad=True)
        out = (a ** 2).sum()
    with pytest.raises(AssertionError, match=msg):
        out.backward()
    # A different context is not the one the graph was recorded in.
    with allow_mutation_on_saved_tensors():
        a = tg.tensor(A, requires_grad=True)
        out = (a ** 2).sum()
    with allow_mutation_on_saved_tensors():
        with pytest.raises(AssertionError, match=msg):
            out.backward()


# covers: test_autograd.py::TestAllowMutationOnSaved::test_disallow_nesting
def test_disallow_nesting():
    with allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
