"""Forward mode's printing and tg.func's refusals, against PyTorch's (the expected strings are PyTorch
2.x's output with ``torch`` spelled ``tapegrad``; error types are PyTorch's, messages checked for their
meaning)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.autograd.forward_ad as fwAD


def test_repr_of_dual_tensors():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
        assert repr(d) == "tensor([1., 2.], tangent=tensor([3., 4.]))"
        assert repr(d * 2) == "tensor([2., 4.], tangent=tensor([6., 8.]))"
        assert repr(d.sum()) == "tensor(3., tangent=7.0)"
        assert str(d) == repr(d)
        m = fwAD.make_dual(tg.ones(2, 2, dtype=tg.float64), tg.ones(2, 2, dtype=tg.float64))
        assert repr(m) == (
            "tensor([[1., 1.],\n        [1., 1.]], dtype=tapegrad.float64,\n"
            "       tangent=tensor([[1., 1.],\n        [1., 1.]], dtype=tapegrad.float64))"
        )
        with tg.inference_mode():
            assert repr(d) == "tensor([1., 2.])"  # the tangent is hidden there
    assert repr(d) == "tensor([1., 2.])"  # its level has exited


X = tg.tensor([1.0, 2.0])

REFUSALS = [
    ("grad of a non-scalar", lambda: tg.func.grad(lambda x: x * 2)(X), RuntimeError,
     "Expected f(*args) to return a scalar Tensor, got tensor with 1 dims"),
    ("argnums out of range", lambda: tg.func.grad(lambda x: x.sum(), argnums=1)(X), RuntimeError,
     "Got argnum=1, but only 1 positional inputs"),
    ("negative argnums out of range", lambda: tg.func.grad(lambda x: x.sum(), argnums=-2)(X), RuntimeError,
     "Got argnum=-2, but only 1 positional inputs"),
    ("argnums not an int", lambda: tg.func.grad(lambda x: x.sum(), argnums=0.0)(X), RuntimeError,
     "argnums must be int or Tuple[int, ...], got: <class 'float'>"),
    ("empty argnums", lambda: tg.func.grad(lambda x: x.sum(), argnums=())(X), RuntimeError,
     "argnums must be non-empty"),
    ("repeated argnums", lambda: tg.func.grad(lambda x, y: x.sum(), argnums=(0, 0))(X, X), RuntimeError,
     "argnums elements must be unique"),
    ("has_aux without a pair", lambda: tg.func.grad(lambda x: x.sum(), has_aux=True)(X), RuntimeError,
     "output of function f should be a tuple: (output, aux) if has_aux is True"),
    ("has_aux with a triple", lambda: tg.func.grad(lambda x: (x.sum(), x, x), has_aux=True)(X), RuntimeError,
     "output of function f should be a tuple: (output, aux) if has_aux is True"),
    ("aux not tensors", lambda: tg.func.grad(lambda x: (x.sum(), 3), has_aux=True)(X), RuntimeError,
     "Expected tensors, got unsupported type"),
    ("has_aux output not scalar", lambda: tg.func.grad(lambda x: (x, x), has_aux=True)(X), RuntimeError,
     "to return a scalar Tensor"),
    ("output not a tensor", lambda: tg.func.grad(lambda x: 3.0)(X), RuntimeError,
     "Expected f(*args) to return a Tensor"),
    ("input not a tensor", lambda: tg.func.grad(lambda x: x)(3.0), ValueError,
     "Thing passed to transform API must be Tensor"),
    ("jacrev has_aux without a pair", lambda: tg.func.jacrev(lambda x: x, has_aux=True)(X), RuntimeError,
     "vjp(f, *primals): output of function f should be a tuple"),
    ("jacfwd has_aux without a pair", lambda: tg.func.jacfwd(lambda x: x, has_aux=True)(X), RuntimeError,
     "jvp(f, primals, tangents): output of function f should be a tuple"),
    ("jacfwd of an integer input", lambda: tg.func.jacfwd(lambda x: x * 2)(tg.tensor([1, 2])), ValueError,
     "Expected primal to be floating point or complex, but got: tapegrad.int64"),
    ("jacrev of an integer output", lambda: tg.func.jacrev(lambda x: (x > 0).long())(X), RuntimeError,
     "All outputs of f must be floating-point or complex Tensors"),
    ("jvp primals not a tuple", lambda: tg.func.jvp(lambda x: x, X, X), RuntimeError,
     "Expected primals to be a tuple"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_transform_refusals(case):
    _, call, error, message = case
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_hessian_of_a_non_scalar_is_the_jacobian_of_the_jacobian():
    # PyTorch's hessian does not refuse a non-scalar output: jacfwd(jacrev(f)); here f = x² elementwise
    h = tg.func.hessian(lambda x: x * x)(X)
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0] = expected[1, 1, 1] = 2.0
    np.testing.assert_allclose(h.numpy(), expected)
