"""Hostile numeric inputs: wrapped element counts, values that lose precision through f64, and
silent dtype conversions (issue 20, items 1-6, 12-18, 29, and their siblings).

Classes tested here:

* Element counts and byte sizes: every shape a tensor can get (factories, expand, reshape/view,
  broadcasting) has an element count that fits in int64; a larger one is a `RuntimeError` naming
  the shape, an allocation that cannot succeed a `MemoryError` naming its size. A count never
  wraps (a wrapped count of 0 made a huge view look empty and skipped the bounds checks).
* Printing reads only the elements it shows (an empty or a huge expanded tensor prints without
  allocating).
* More than 32 dimensions: NumPy's limit, a clear error at the NumPy boundary.
* Python ints and NumPy integers stay exact: scalar arithmetic, clamp bounds, powers, `item()`,
  `int()`, `operator.index`, `repr`, `arange` and tensor construction never go through f64;
  values outside int64 are an `OverflowError`/`RuntimeError`, never a wrap.
* No silent dtype conversion from NumPy: non-native byte order, complex, object and uint64 values
  beyond int64 are refused with a message naming the problem.
* NumPy integer and bool scalars index like Python ints and bools.

The oracle is PyTorch 2.x's behaviour (checked by hand with the PyTorch of the dev environment),
with exact Python ints and NumPy for the values. Crash reproducers run in a child process with a
timeout, so that an abort or a segfault fails the test instead of the run.
"""

import operator
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


def run_child(code, timeout=120):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr)."""
    prog = "import tapegrad as tg\nimport numpy as np\n" + textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def expect_child_raises(code, kinds, match=None):
    """The statement raises one of `kinds` (names of exception classes) in a child, which exits
    normally: no abort, segfault or Rust panic."""
    probe = f"""
try:
{textwrap.indent(textwrap.dedent(code), '    ')}
except BaseException as e:
    print("RAISED", type(e).__name__, str(e)[:300])
else:
    print("NO EXCEPTION")
"""
    rc, out, err = run_child(probe)
    assert rc == 0, f"child died (rc={rc}): {err[-2000:]}"
    assert "PanicException" not in out, out
    line = out.strip().splitlines()[-1]
    assert line.startswith("RAISED"), out
    kind = line.split()[1]
    assert kind in kinds, out
    if match is not None:
        assert match in line, out
    return line


# ---------------------------------------------------------------------------------------------
# Element counts (items 1-5, 18)
# ---------------------------------------------------------------------------------------------


def test_repr_of_empty_tensor_with_huge_dim_does_not_allocate():
    rc, out, err = run_child("print(repr(tg.zeros(2**40, 0)))")
    assert rc == 0, err[-2000:]
    assert out.strip() == "tensor([], size=(1099511627776, 0))"


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: tg.zeros(0), "tensor([])"),
        (lambda: tg.zeros(2, 0), "tensor([], size=(2, 0))"),
        (lambda: tg.zeros(0, 3, dtype=tg.int64), "tensor([], size=(0, 3), dtype=tapegrad.int64)"),
        (lambda: tg.zeros(0, dtype=tg.bool), "tensor([], dtype=tapegrad.bool)"),
        (lambda: tg.zeros(0, 3, requires_grad=True), "tensor([], size=(0, 3), requires_grad=True)"),
    ],
)
def test_repr_of_empty_tensors_spells_the_shape(make, expected):
    assert repr(make()) == expected


def test_repr_of_huge_expanded_view_is_summarized_without_copying():
    x = tg.tensor([1.5, 2.5]).reshape(2, 1).expand(2, 2**40)
    lines = repr(x).splitlines()
    assert lines == ["tensor([[1.5000, 1.5000, 1.5000, ..., 1.5000, 1.5000, 1.5000],",
                     "        [2.5000, 2.5000, 2.5000, ..., 2.5000, 2.5000, 2.5000]])"]


def test_repr_summarized_values_are_the_edges():
    a = np.arange(3000).reshape(3, 1000)
    r = repr(tg.tensor(a))
    rows = r.splitlines()
    assert len(rows) == 3
    for row, arr_row in zip(rows, a):
        nums = [int(tok) for tok in row.replace("tensor(", "").replace("[", "").replace("]", "").replace(")", "")
                .replace("...", "").replace(",", " ").split()]
        assert nums == list(arr_row[:3]) + list(arr_row[-3:])


def test_where_with_unallocatable_broadcast_is_memory_error():
    expect_child_raises(
        "tg.where(tg.zeros(2**20, 1, dtype=tg.bool), tg.zeros(1, 2**20), 0.)",
        {"MemoryError"},
        match="4398046511104 bytes",
    )


@pytest.mark.parametrize(
    "stmt",
    [
        "x.argmax(dim=1)",
        "x.max(dim=1)",
        "x.sum()",
        "x.mean()",
        "x.reshape(4, 2**62).mm(tg.ones(1).expand(2**62, 1))",
        "tg.where(tg.ones(1, dtype=tg.bool), x, x)",
    ],
)
def test_expand_past_int64_elements_is_refused(stmt):
    # 2**64 elements: the count wrapped to 0 and the view looked empty.
    line = expect_child_raises(f"x = tg.ones(1).expand(2**32, 2**32)\n{stmt}", {"RuntimeError"},
                               match="[4294967296, 4294967296]")
    assert "numel" in line


@pytest.mark.parametrize(
    "make",
    [
        lambda: tg.ones(1).expand(2**31, 2**32),  # 2**63: one past int64
        lambda: tg.ones(1).expand(2**62, 1).expand(2**62, 2),
        lambda: tg.ones(1, 1).expand(2**40, 1) + tg.ones(1, 1).expand(1, 2**40),  # broadcast
        lambda: tg.where(tg.ones(2**40, 1, dtype=tg.bool).expand(2**40, 1), 1.0, tg.zeros(1, 2**40)),
        lambda: tg.zeros(2, 0).reshape(0, 2**62, 4),  # empty, but the other extents overflow
        lambda: tg.zeros(2, 0).reshape(-1, 2**62, 4),
    ],
)
def test_shapes_past_int64_elements_are_refused(make):
    with pytest.raises((RuntimeError, MemoryError), match="numel|allocate"):
        make()


def test_largest_expand_is_allowed_and_counts_exactly():
    x = tg.ones(1).expand(2**31, 2**31)
    assert x.numel() == 2**62
    assert x.shape == (2**31, 2**31)
    y = x.reshape(4, 2**60)
    assert y.shape == (4, 2**60) and y.numel() == 2**62
    assert y.stride() == (0, 0)
    # Too big to reduce in memory: an error naming the size (PyTorch would grind through 2**62 adds).
    with pytest.raises(MemoryError, match="bytes"):
        x.sum()
    with pytest.raises(MemoryError, match="bytes"):
        x.mean()


def test_reductions_of_large_expanded_views_count_every_element():
    # Small enough to compute: the count enters mean() and the sum exactly.
    x = tg.full((1,), 3.0).expand(2**12, 2**8)
    assert x.sum().item() == 3.0 * 2**20
    assert x.mean().item() == 3.0
    assert x.sum(1).shape == (2**12,)
    assert x.argmax(dim=1).tolist() == [0] * 2**12
