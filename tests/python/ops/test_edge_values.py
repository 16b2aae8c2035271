"""Edge values PyTorch users rely on: selects that ignore non-finite gradients, bounds of clamp,
0-dim reductions and promotion, empty tensors. Each case was once wrong here."""

import math

import numpy as np
import pytest

import tapegrad as tg


def test_relu_gradient_is_a_select_so_an_infinite_upstream_gives_zero():
    x = tg.tensor([-1.0, 0.0, 2.0], dtype=tg.float64, requires_grad=True)
    # log(-relu(x)) is -inf where relu is 0, so its gradient there is infinite; relu masks it.
    y = (-x.relu()).log()
    y.backward(tg.ones(3, dtype=tg.float64))
    g = x.grad.numpy()
    assert g[0] == 0.0 and g[1] == 0.0, g
    assert math.isnan(y[2].item())  # log of a negative number


def test_relu_keeps_nan():
    assert math.isnan(tg.tensor([float("nan")]).relu().item())


def test_relu_and_clamp_keep_negative_zero_as_pytorch():
    # PyTorch's relu is clamp_min(x, 0), which returns x itself when x is not below 0: relu(-0.0)
    # is -0.0, and rsqrt of it -inf (found by the differential test against PyTorch).
    for dtype in (tg.float32, tg.float64):
        z = tg.tensor([-0.0, 0.0], dtype=dtype)
        for out in (z.relu(), z.clamp(min=0.0)):
            assert [math.copysign(1.0, v) for v in out.tolist()] == [-1.0, 1.0]
        assert z.relu().rsqrt().tolist() == [-math.inf, math.inf]


@pytest.mark.parametrize(
    "kwargs, x, want",
    [
        ({"min": -0.5, "max": 0.75}, [-0.5, 0.0, 0.75, 1.0], [0.0, 1.0, 0.0, 0.0]),
        ({"max": 0.75}, [-1e300, 0.75], [1.0, 0.0]),
        ({"min": 0.0}, [0.0, 1e-300], [0.0, 1.0]),
    ],
)
def test_clamp_gives_no_gradient_on_a_bound(kwargs, x, want):
    t = tg.tensor(x, dtype=tg.float64, requires_grad=True)
    t.clamp(**kwargs).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), want)


def test_clamp_gradient_outside_the_range_is_zero_even_when_upstream_is_infinite():
    x = tg.tensor([-2.0, 0.5], dtype=tg.float64, requires_grad=True)
    x.clamp(min=0.0, max=1.0).backward(tg.tensor([float("inf"), 1.0], dtype=tg.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0])


def test_reductions_over_dim_0_of_a_0_dim_tensor():
    x = tg.tensor(3.0, requires_grad=True)
    for y in (x.sum(0), x.sum(-1), x.mean(0), x.sum(0, keepdim=True)):
        assert y.shape == () and y.item() == 3.0
    values, indices = x.max(0)
    assert values.item() == 3.0 and indices.item() == 0
    x.sum(0).backward()
    assert x.grad.item() == 1.0


@pytest.mark.parametrize(
    "a_dtype, b_dtype, want",
    [
        (tg.float32, tg.float64, tg.float32),  # same category: the 0-dim operand does not count
        (tg.int64, tg.float64, tg.float64),  # higher category: it does
        (tg.bool, tg.int64, tg.int64),
        (tg.float64, tg.float32, tg.float64),
    ],
)
def test_a_0_dim_tensor_promotes_like_in_pytorch(a_dtype, b_dtype, want):
    a = tg.ones(4, dtype=a_dtype)
    b = tg.tensor(2, dtype=b_dtype)
    assert (a + b).dtype == want
    assert (b * a).dtype == want


def test_0_dim_operands_promote_among_themselves():
    assert (tg.tensor(1.0, dtype=tg.float64) + tg.tensor(1.0)).dtype == tg.float64


@pytest.mark.parametrize("shape", [(2, 0, 4), (0,), (3, 0), (0, 5, 1)])
def test_empty_tensors_reshape_slice_and_concatenate(shape):
    x = tg.zeros(*shape, requires_grad=True)
    assert x.reshape(-1).shape == (0,)
    assert x.reshape(0, 1, 1).shape == (0, 1, 1) if x.numel() == 0 else True
    if len(shape) >= 2:
        t = x.transpose(0, 1)
        assert t.reshape(-1).shape == (0,)
    part = tg.zeros(3, 1)[..., 1:]  # empty slice whose offset is past the data it reads
    both = tg.cat([-part, part * 2], 0)
    assert both.shape == (6, 0)
    y = (x * 2).sum()
    y.backward()
    assert x.grad.shape == shape


@pytest.mark.parametrize("data", [1e-300, [1e-300, 1 / 3], [[0.1], [1e300]]])
def test_python_floats_asked_for_as_float64_keep_their_value(data):
    t = tg.tensor(data, dtype=tg.float64)
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, dtype=np.float64))
    # Without a dtype they are float32, as in PyTorch.
    assert tg.tensor(data).dtype == tg.float32
