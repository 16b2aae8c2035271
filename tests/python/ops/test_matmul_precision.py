"""tg.set_float32_matmul_precision: the setting, and "medium"'s bfloat16 products checked against
NumPy oracles (a float64 reference, and the float64 product of operands rounded to bfloat16 the way
`vcvtne2ps2bf16` rounds: to nearest, ties to even)."""

import threading

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _tapegrad as _C

BF16 = _C._bf16_matmul_available()
needs_bf16 = pytest.mark.skipif(not BF16, reason="this CPU runs 'medium' exactly (no AMX, nor AVX512_BF16 on AMD)")


@pytest.fixture(autouse=True)
def _restore():
    yield
    tg.set_float32_matmul_precision("highest")


def bf16(x):
    """float32 -> float64 values rounded to bfloat16 (finite normal inputs), ties to even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def rel(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def close_to_rounded_product(got, a, b, tol=3e-5):
    """`got` is the float64 product of the bfloat16-rounded operands up to float32 summation: each
    entry within `tol` of the sum of the products' magnitudes."""
    want = bf16(a) @ bf16(b)
    mag = np.abs(bf16(a)) @ np.abs(bf16(b))
    worst = float(np.max(np.abs(np.asarray(got, np.float64) - want) / mag))
    assert worst < tol, worst


# ----------------------------------------------------------------------------- the setting
def test_default_is_highest_and_names_round_trip():
    assert tg.get_float32_matmul_precision() == "highest"
    for p in ("high", "medium", "highest"):
        tg.set_float32_matmul_precision(p)
        assert tg.get_float32_matmul_precision() == p


@pytest.mark.parametrize("bad", ["low", "HIGH", "Medium", "", "medium "])
def test_unknown_names_raise_value_error_and_keep_the_setting(bad):
    tg.set_float32_matmul_precision("high")
    with pytest.raises(ValueError, match="'highest', 'high' or 'medium'"):
        tg.set_float32_matmul_precision(bad)
    assert tg.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("bad", [3, None, b"medium", ["medium"]])
def test_non_strings_raise_type_error(bad):
    with pytest.raises(TypeError, match="expects a str"):
        tg.set_float32_matmul_precision(bad)
    assert tg.get_float32_matmul_precision() == "highest"


def test_the_setting_is_process_wide():
    seen = []
    t = threading.Thread(target=lambda: tg.set_float32_matmul_precision("medium"))
    t.start()
    t.join()
    t = threading.Thread(target=lambda: seen.append(tg.get_float32_matmul_precision()))
    t.start()
    t.join()
    assert seen == ["medium"] and tg.get_float32_matmul_precision() == "medium"


# ----------------------------------------------------------------------------- accuracy
SHAPES = [(64, 64, 64), (128, 256, 96), (96, 1024, 64), (64, 4096, 48)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_highest_and_high_keep_float32_accuracy(m, k, n):
    rng = np.random.default_rng(k)
    a, b = randn(rng, m, k), randn(rng, k, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for p in ("highest", "high"):
        tg.set_float32_matmul_precision(p)
        got = (tg.from_numpy(a) @ tg.from_numpy(b)).numpy()
        # float32 rounding of sums of k products: about 2**-24 * sqrt(k) relative.
        assert rel(got, want) < 2e-7 * np.sqrt(k) + 2e-7, (p, rel(got, want))


@needs_bf16
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_medium_error_is_bfloat16_rounding_of_the_operands(m, k, n):
    rng = np.random.default_rng(k + 1)
    a, b = randn(rng, m, k), randn(rng, k, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tg.set_float32_matmul_precision("medium")
    got = (tg.from_numpy(a) @ tg.from_numpy(b)).numpy()
    # Each operand rounded to 8 significant bits: a product's relative error has an rms of about
    # 2**-8.7 for normal inputs, independent of k (docs/api.md lists the measured values).
    err = rel(got, want)
    assert 1.5e-3 < err < 3.5e-3, err
    close_to_rounded_product(got, a, b)
    # Back at "highest", float32 accuracy again.
    tg.set_float32_matmul_precision("highest")
    assert rel((tg.from_numpy(a) @ tg.from_numpy(b)).numpy(), want) < 2e-7 * np.sqrt(k) + 2e-7


@pytest.mark.skipif(BF16, reason=f"this CPU runs 'medium' with bfloat16 products ({_C._bf16_matmul_kernel()})")
def test_medium_without_bf16_hardware_is_exact():
    rng = np.random.default_rng(5)
    a, b = randn(rng, 40, 300), randn(rng, 300, 50)
    exact = (tg.from_numpy(a) @ tg.from_numpy(b)).numpy()
    tg.set_float32_matmul_precision("medium")
    np.testing.assert_array_equal((tg.from_numpy(a) @ tg.from_numpy(b)).numpy(), exact)


def cpu_flags_and_vendor():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    fields = {}
    for line in info.splitlines():
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.split())
    return set(fields["flags"]), fields["vendor_id"][0]


@pytest.mark.skipif(not __import__("os").path.exists("/proc/cpuinfo"), reason="needs Linux's /proc/cpuinfo")
def test_the_kernel_of_medium_follows_the_cpu():
    # AMX tiles where the CPU has them; vdpbf16ps on AMD only (on Intel's cores it is no faster than
    # float32 FMAs: NOTE [Why AMX for "medium"]); else exact float32.
    flags, vendor = cpu_flags_and_vendor()
    if {"amx_tile", "amx_bf16"} <= flags:
        want = "amx"
    elif "avx512_bf16" in flags and vendor == "AuthenticAMD":
        want = "avx512_bf16"
    else:
        want = None
    assert _C._bf16_matmul_kernel() == want
    assert _C._bf16_matmul_available() == (want is not None)


# ----------------------------------------------------------------------------- every path
@needs_bf16
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_transposed_views_and_odd_edges(ta, tb):
    rng = np.random.default_rng(7)
    m, k, n = 37, 201, 45
    a = randn(rng, k, m).T if ta else randn(rng, m, k)
    b = randn(rng, n, k).T if tb else randn(rng, k, n)
    ta_ = tg.from_numpy(np.ascontiguousarray(a.T)).t() if ta else tg.from_numpy(a)
    tb_ = tg.from_numpy(np.ascontiguousarray(b.T)).t() if tb else tg.from_numpy(b)
    tg.set_float32_matmul_precision("medium")
    close_to_rounded_product(tg.mm(ta_, tb_).numpy(), a, b)


@needs_bf16
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(29, 1031, 1061), (61, 77, 1300), (300, 600, 530)])
def test_wide_products_pack_a_once(m, k, n, ta, tb, threads):
    # n > 512 (several column blocks of B): A is packed once per product and every column band reads
    # it; a row-major B is packed a pair of rows at a time; odd sizes leave partial panels, pair
    # steps and blocks of k; a strided B (every other column) takes the general packing.
    rng = np.random.default_rng(m + k + n)
    a = randn(rng, k, m).T if ta else randn(rng, m, k)
    b = randn(rng, n, k).T if tb else randn(rng, k, n)
    ta_ = tg.from_numpy(np.ascontiguousarray(a.T)).t() if ta else tg.from_numpy(a)
    tb_ = tg.from_numpy(np.ascontiguousarray(b.T)).t() if tb else tg.from_numpy(b)
    wide = randn(rng, k, 2 * n)
    old = tg.get_num_threads()
    tg.set_num_threads(threads)
    try:
        tg.set_float32_matmul_precision("medium")
        got = tg.mm(ta_, tb_).numpy()
        strided = tg.mm(ta_, tg.from_numpy(wide)[:, ::2]).numpy()
    finally:
        tg.set_num_threads(old)
    close_to_rounded_product(got, a, b)
    close_to_rounded_product(strided, a, wide[:, ::2])
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert 1.5e-3 < rel(got, want) < 3.5e-3, rel(got, want)


@needs_bf16
def test_every_product_entry_point_uses_medium():
    rng = np.random.default_rng(11)
    a, b = randn(rng, 3, 20, 70), randn(rng, 3, 70, 30)
    w, bias = randn(rng, 30, 70), randn(rng, 30)
    tg.set_float32_matmul_precision("medium")
    ta, tb = tg.from_numpy(a), tg.from_numpy(b)
    for got in (tg.bmm(ta, tb), tg.matmul(ta, tb), ta @ tb, tg.einsum("bij,bjk->bik", ta, tb)):
        for i in range(3):
            close_to_rounded_product(got.numpy()[i], a[i], b[i])
    close_to_rounded_product(tg.mm(ta[0], tb[0]).numpy(), a[0], b[0])
    lin = tg.nn.functional.linear(ta[0], tg.from_numpy(w), tg.from_numpy(bias)).numpy()
    close_to_rounded_product(lin - bias, a[0], w.T, tol=1e-4)
    # A shared 2-D operand broadcast over the batch.
    close_to_rounded_product(tg.matmul(ta, tb[1]).numpy()[2], a[2], b[1])


@needs_bf16
def test_backward_products_use_medium():
    rng = np.random.default_rng(13)
    a, b, g = randn(rng, 50, 90), randn(rng, 90, 70), randn(rng, 50, 70)
    tg.set_float32_matmul_precision("medium")
    ta, tb = tg.from_numpy(a).requires_grad_(), tg.from_numpy(b).requires_grad_()
    (ta @ tb).backward(tg.from_numpy(g))
    close_to_rounded_product(ta.grad.numpy(), g, b.T)
    close_to_rounded_product(tb.grad.numpy(), a.T, g)
    # Against float64, the gradients carry bfloat16's error, not float32's.
    assert rel(ta.grad.numpy(), g.astype(np.float64) @ b.T.astype(np.float64)) > 5e-4


@needs_bf16
def test_other_dtypes_are_unaffected():
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((30, 200)), rng.standard_normal((200, 20))
    cases = [
        (tg.from_numpy(a), tg.from_numpy(b)),
        (tg.from_numpy(a).to(tg.float16), tg.from_numpy(b).to(tg.float16)),
        (tg.from_numpy(a).to(tg.bfloat16), tg.from_numpy(b).to(tg.bfloat16)),
    ]
    exact = [(x @ y).to(tg.float64).numpy() for x, y in cases]
    tg.set_float32_matmul_precision("medium")
    for (x, y), want in zip(cases[:2], exact[:2]):
        np.testing.assert_array_equal((x @ y).to(tg.float64).numpy(), want)
    # bfloat16 operands are already bfloat16: their products are exact either way.
    np.testing.assert_allclose((cases[2][0] @ cases[2][1]).to(tg.float64).numpy(), exact[2], rtol=1e-2, atol=1e-2)


@needs_bf16
def test_switching_while_other_threads_multiply():
    rng = np.random.default_rng(19)
    a, b = randn(rng, 64, 512), randn(rng, 512, 64)
    ta, tb = tg.from_numpy(a), tg.from_numpy(b)
    exact = (ta @ tb).numpy()
    tg.set_float32_matmul_precision("medium")
    medium = (ta @ tb).numpy()
    assert not np.array_equal(exact, medium)
    bad, stop = [], threading.Event()

    def work():
        for _ in range(50):
            c = (ta @ tb).numpy()
            if not (np.array_equal(c, exact) or np.array_equal(c, medium)):
                bad.append(c)

    def toggle():
        while not stop.is_set():
            for p in ("highest", "medium"):
                tg.set_float32_matmul_precision(p)

    workers = [threading.Thread(target=work) for _ in range(2)]
    switcher = threading.Thread(target=toggle)
    switcher.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    switcher.join()
    # Each product ran wholly at one precision: bit for bit one of the two results.
    assert not bad


@needs_bf16
def test_medium_special_values():
    inf, nan = float("inf"), float("nan")
    a = np.array([[nan, 1.0], [inf, 0.0], [1.0, inf], [1e-39, 0.0], [-1e-39, 2.0**-126]], np.float32)
    b = np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)
    tg.set_float32_matmul_precision("medium")
    got = (tg.from_numpy(a) @ tg.from_numpy(b)).numpy()
    # NaN spreads along its row; inf * 0 is NaN; inf * 1 stays inf.
    assert np.isnan(got[0]).all() and np.isnan(got[1, 1]) and got[1, 0] == inf
    np.testing.assert_array_equal(got[2], [inf, inf])
    # A subnormal operand counts as zero; the smallest normal does not.
    np.testing.assert_array_equal(got[3], [0.0, 0.0])
    np.testing.assert_array_equal(got[4], [2.0**-126, 2.0**-126])


@needs_bf16
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_multiplies_at_medium_with_the_parents_bits():
    # The AMX kernel needs the tile registers that Linux granted the parent (a grant a child
    # inherits); the vdpbf16ps kernel needs nothing. Either way the child's product is the parent's.
    import os

    rng = np.random.default_rng(11)
    a, b = tg.from_numpy(randn(rng, 300, 700)), tg.from_numpy(randn(rng, 700, 260))
    tg.set_float32_matmul_precision("medium")
    parent = (a @ b).numpy()
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if np.array_equal((a @ b).numpy(), parent) else 3)
        finally:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    close_to_rounded_product(parent, a.numpy(), b.numpy())
