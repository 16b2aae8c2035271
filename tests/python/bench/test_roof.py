"""The private machine-limit probes behind benches/compare.py (src/roof.rs, feature `bench`): bad arguments get a clear
ValueError, never a crash or a hang. No timing is asserted (the values depend on the machine and its
load)."""

import math

import pytest

from tapegrad import _tapegrad as C

if not hasattr(C, "_roof"):
    pytest.skip("the probes come with the `bench` feature (maturin develop --release --features bench); "
                "src/roof.rs's own tests cover them in `cargo test --features bench`", allow_module_level=True)


@pytest.mark.parametrize(
    "args",
    [("sse", 1, 0.01), ("avx512", 0, 0.01), ("avx2", 2000, 0.01), ("avx2", 1, 0.0), ("avx2", 1, -1.0),
     ("avx2", 1, math.nan), ("avx2", 1, 1e9)],
)
def test_roof_refuses_bad_arguments(args):
    with pytest.raises(ValueError):
        C._roof(*args)


@pytest.mark.parametrize("args", [(0, 1, 0.01), (1, 0, 0.01), (1, 1 << 20, 0.01), (1, 1, 0.0), (1, 1, 0.01, "nt")])
def test_copy_bandwidth_refuses_bad_arguments(args):
    with pytest.raises(ValueError):
        C._copy_bandwidth(*args)


def test_roof_rejects_wrong_types():
    with pytest.raises(TypeError):
        C._roof("avx2", "one", 0.01)
    with pytest.raises(OverflowError):
        C._copy_bandwidth(-1, 1, 0.01)
