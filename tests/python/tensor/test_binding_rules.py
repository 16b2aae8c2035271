"""Rules that live in the core and reach Python through the bindings unchanged: exact integer
conversion (``int``/``operator.index`` never pass through float64), argmax of bool, and clamp's
bound dtype rule. Expected values are closed forms and Python's own conversions."""

import math
import operator

import numpy as np
import pytest

import tapegrad as tg

BIG = 2**53 + 1  # the first int64 a float64 cannot hold
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


@pytest.mark.parametrize("v", [BIG, -BIG - 2, 2**62 + 3, I64_MAX, I64_MIN])
def test_int_and_index_of_an_int64_tensor_are_exact(v):
    t = tg.tensor(v)
    assert t.dtype is tg.int64
    assert int(t) == v
    assert operator.index(t) == v
    assert int(tg.tensor([v])) == v
    # As an index: list slicing through __index__ sees the exact value.
    assert list(range(10))[tg.tensor(3):] == [3, 4, 5, 6, 7, 8, 9]
    # The oracle is meaningful: a path through float64 would have changed every value but -2**63.
    assert int(float(v)) != v or v == I64_MIN


def test_int_of_a_float_tensor_follows_pythons_int():
    assert int(tg.tensor(2.75, dtype=tg.float64)) == 2
    assert int(tg.tensor(-2.75, dtype=tg.float64)) == -2
    # A large float converts to its exact integer, as int(float) does.
    big = float(2**60 + 2**40)
    assert int(tg.tensor(big, dtype=tg.float64)) == int(big) == 2**60 + 2**40
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        int(tg.tensor(math.nan))
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        int(tg.tensor(-math.inf))
    assert int(tg.tensor(True)) == 1 and int(tg.tensor([False])) == 0


def test_index_takes_a_single_int64_or_bool_and_refuses_the_rest():
    # bool is an integer dtype for operator.index, as in PyTorch.
    assert operator.index(tg.tensor(True)) == 1 and operator.index(tg.tensor([False])) == 0
    assert operator.index(tg.tensor([[7]])) == 7
    for t in (tg.tensor(1.0), tg.tensor([1.0], dtype=tg.float64), tg.tensor([1, 2]), tg.tensor([True, False])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            operator.index(t)


def test_argmax_of_bool_is_refused_and_other_dtypes_answer():
    for dim in (None, 0):
        with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
            tg.tensor([False, True]).argmax(dim=dim)
    x = np.array([[3.0, 9.0, 9.0], [5.0, -1.0, 2.0]], np.float32)
    assert tg.tensor(x).argmax().item() == int(np.argmax(x))
    assert tg.tensor(x).argmax(dim=1).tolist() == np.argmax(x, axis=1).tolist()


def test_clamp_with_a_float_bound_makes_an_int_tensor_float32_and_clamp_inplace_refuses():
    t = tg.tensor([0, 1, 2])
    c = t.clamp(min=0.5)
    assert c.dtype is tg.float32
    assert c.tolist() == np.clip(np.array([0, 1, 2], np.float32), 0.5, None).tolist() == [0.5, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="clamp_: result type float32 can't be cast to the desired output type int64"):
        t.clamp_(min=0.5)
    assert t.tolist() == [0, 1, 2]
    # An int bound keeps int64 and stays exact past 2**53.
    u = tg.tensor([0, BIG + 5])
    u.clamp_(min=BIG, max=BIG + 2)
    assert u.tolist() == [BIG, BIG + 2]
    # An int bound makes a bool tensor int64; in place that is refused.
    b = tg.tensor([False, True])
    assert b.clamp(min=1).dtype is tg.int64 and b.clamp(min=1).tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="clamp_: result type int64 can't be cast to the desired output type bool"):
        b.clamp_(min=1)
