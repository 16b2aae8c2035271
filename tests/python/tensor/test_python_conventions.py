"""Python's conventions on tensors, as PyTorch follows them: pickling, copy and deepcopy,
``format()``, the print settings and layout, and the small module-level helpers.

Expected printouts are PyTorch 2.x's own (checked against it by the optional test at the end).
"""

import copy
import importlib
import pickle

import numpy as np
import pytest

import tapegrad as tg


@pytest.fixture(autouse=True)
def _default_print_options():
    tg.set_printoptions(profile="default")
    yield
    tg.set_printoptions(profile="default")


# --- pickle, copy, deepcopy ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64, tg.bool])
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_round_trip_keeps_values_and_dtype(dtype, protocol):
    x = tg.tensor(np.arange(-3, 9).reshape(3, 4)).to(dtype)
    y = pickle.loads(pickle.dumps(x, protocol=protocol))
    assert y.dtype == dtype and y.shape == (3, 4)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_pickle_of_a_view_holds_only_the_view():
    base = tg.arange(100.0)
    view = base[10:13]
    data = pickle.dumps(view)
    y = pickle.loads(data)
    np.testing.assert_array_equal(y.numpy(), [10.0, 11.0, 12.0])
    assert len(data) < 400  # three floats and a small header, not the 100-element base
    y.add_(1)
    np.testing.assert_array_equal(base[10:13].numpy(), [10.0, 11.0, 12.0])


def test_pickle_keeps_requires_grad_and_gives_a_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    nonleaf = x * 2
    for t, expected in [(x, [1.0, 2.0]), (nonleaf, [2.0, 4.0])]:
        y = pickle.loads(pickle.dumps(t))
        assert y.requires_grad and y.is_leaf and y.grad_fn is None
        np.testing.assert_array_equal(y.detach().numpy(), expected)
        y.sum().backward()
        np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])
    assert x.grad is None


def test_copy_copy_is_a_new_tensor_with_the_same_values():
    x = tg.tensor([[1, 2], [3, 4]])
    y = copy.copy(x)
    assert y is not x and y.dtype == tg.int64
    y.add_(10)
    np.testing.assert_array_equal(x.numpy(), [[1, 2], [3, 4]])


def test_deepcopy_of_a_leaf_copies_values_flag_and_grad():
    x = tg.tensor([1.0, -2.0], requires_grad=True)
    x.grad = tg.tensor([0.5, 0.25])
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.is_leaf
    assert y.grad is not x.grad
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.25])
    with tg.no_grad():
        y.mul_(3)
        y.grad.zero_()
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, -2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.25])


def test_deepcopy_keeps_identity_inside_a_container():
    x = tg.ones(2)
    a, b = copy.deepcopy([x, x])
    assert a is b and a is not x


def test_deepcopy_of_a_non_leaf_is_refused():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


# --- format() ------------------------------------------------------------------------------

def test_format_of_a_zero_dim_tensor_is_that_of_its_number():
    assert f"{tg.tensor(3.14159):.3f}" == "3.142"
    assert f"{tg.tensor(2.0, dtype=tg.float64):e}" == f"{2.0:e}"
    assert format(tg.tensor(7), "04d") == "0007"
    assert f"{tg.tensor(True)}" == "True"
    assert f"loss {tg.tensor([1.0, 2.0]).sum():>8.2f}" == "loss     3.00"


def test_format_of_a_vector_needs_an_empty_spec():
    v = tg.tensor([1.0, 2.0])
    assert f"{v}" == str(v) == "tensor([1., 2.])"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{v:.3f}"


# --- printing ------------------------------------------------------------------------------

def test_scientific_notation_follows_pytorchs_rule():
    assert repr(tg.tensor([1.0, 999.0])) == "tensor([  1., 999.])"
    assert repr(tg.tensor([1.0, 2000.0])) == "tensor([1.0000e+00, 2.0000e+03])"
    assert repr(tg.tensor([0.5, 400.0])) == "tensor([  0.5000, 400.0000])"
    assert repr(tg.tensor([0.5, 600.0])) == "tensor([5.0000e-01, 6.0000e+02])"
    assert repr(tg.tensor([0.0, 1e-5])) == "tensor([0.0000e+00, 1.0000e-05])"
    assert repr(tg.tensor([1.5, float("nan")])) == "tensor([1.5000,    nan])"


def test_long_rows_wrap_at_the_line_width():
    assert repr(tg.arange(30.0)).splitlines() == [
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,",
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,",
        "        28., 29.])",
    ]
    tg.set_printoptions(linewidth=30)
    assert repr(tg.arange(8)).splitlines() == ["tensor([0, 1, 2, 3, 4, 5, 6,", "        7])"]
    assert repr(tg.arange(12)).splitlines() == [
        "tensor([ 0,  1,  2,  3,  4,", "         5,  6,  7,  8,  9,", "        10, 11])"]


def test_set_printoptions_precision_threshold_edgeitems_sci_mode():
    tg.set_printoptions(precision=2)
    assert repr(tg.tensor([1.23456, 2.5])) == "tensor([1.23, 2.50])"
    assert repr(tg.tensor([1e-7, 1.0])) == "tensor([1.00e-07, 1.00e+00])"
    tg.set_printoptions(sci_mode=False, precision=6)
    assert repr(tg.tensor([1e-7, 1.0])) == "tensor([0.000000, 1.000000])"
    tg.set_printoptions(threshold=5, edgeitems=1)
    assert repr(tg.arange(10.0)) == "tensor([0.,  ..., 9.])"
    assert repr(tg.arange(12.0).reshape(3, 4)).splitlines() == [
        "tensor([[ 0.,  ...,  3.],", "        ...,", "        [ 8.,  ..., 11.]])"]
    tg.set_printoptions(profile="default", sci_mode=True)
    assert repr(tg.tensor([1.5, 2.0])) == "tensor([1.5000e+00, 2.0000e+00])"


def test_profiles_and_bad_settings():
    tg.set_printoptions(profile="full")
    assert "..." not in repr(tg.arange(1500))
    tg.set_printoptions(profile="short")
    assert repr(tg.arange(2000.0) / 3).startswith("tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])")
    tg.set_printoptions(threshold=float("inf"))
    assert "..." not in repr(tg.arange(5000))
    # PyTorch ignores an unknown profile and a NaN threshold; tapegrad says what was wrong.
    with pytest.raises(RuntimeError, match="unknown profile 'tiny'"):
        tg.set_printoptions(profile="tiny")
    with pytest.raises(RuntimeError, match="threshold"):
        tg.set_printoptions(threshold=float("nan"))


# --- small helpers -------------------------------------------------------------------------

def test_module_level_helpers():
    x = tg.zeros(2, 3)
    assert tg.is_tensor(x) and not tg.is_tensor(np.zeros(2)) and not tg.is_tensor(1.0)
    assert tg.numel(x) == 6 == x.numel()
    assert tg.cuda.is_available() is False and tg.cuda.device_count() == 0


# --- against PyTorch (optional) ------------------------------------------------------------

PRINT_CASES = [
    lambda m: m.arange(2000.0) / 3,
    lambda m: m.arange(3000).reshape(3, 1000),
    lambda m: m.arange(30.0).reshape(2, 15) / 7,
    lambda m: m.arange(48.0).reshape(2, 2, 3, 4),
    lambda m: m.arange(5000.0).reshape(10, 10, 50),
    lambda m: m.tensor([1.0, 1e8]),
    lambda m: m.tensor([1e-4, 0.05]),
    lambda m: m.tensor([[1, -2], [300, 4]]),
    lambda m: m.tensor([True, False]),
    lambda m: m.arange(100).reshape(1, 100) * 1000,
]


@pytest.mark.parametrize("case", range(len(PRINT_CASES)))
@pytest.mark.parametrize("options", [{}, {"precision": 2}, {"linewidth": 50, "edgeitems": 2},
                                     {"sci_mode": False}, {"threshold": 20}])
def test_printouts_match_pytorch(case, options):
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        pytest.skip("torch is not installed (optional differential test)")
    torch.set_printoptions(profile="default")
    try:
        torch.set_printoptions(**options)
        tg.set_printoptions(**options)
        assert repr(PRINT_CASES[case](tg)) == repr(PRINT_CASES[case](torch))
    finally:
        torch.set_printoptions(profile="default")
