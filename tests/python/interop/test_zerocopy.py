"""Zero-copy exchange with NumPy and DLPack (issue 15).

Oracles: NumPy's own view of the memory (values, `__array_interface__['data']`, strides) and
PyTorch's behaviour where the two libraries exchange memory directly.
"""

import ctypes
import gc
import pickle
import sys
import threading

import numpy as np
import pytest

import tapegrad as tg


def addr(a):
    return a.__array_interface__["data"][0]


# ---------------------------------------------------------------------------------------------
# tg.from_numpy shares the array's memory
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("np_dtype, tg_dtype", [
    (np.float32, tg.float32), (np.float64, tg.float64), (np.int64, tg.int64), (np.bool_, tg.bool)])
def test_from_numpy_shares_both_ways(np_dtype, tg_dtype):
    a = (np.arange(6) % 2 == 0) if np_dtype is np.bool_ else np.arange(6).astype(np_dtype)
    a = a.reshape(2, 3)
    t = tg.from_numpy(a)
    assert t.dtype == tg_dtype and t.shape == (2, 3)
    assert addr(t.numpy()) == addr(a)
    # NumPy writes, the tensor reads.
    a[1, 2] = np_dtype(0) if np_dtype is np.bool_ else np_dtype(42)
    assert t[1, 2].item() == a[1, 2].item()
    # The tensor writes in place, NumPy reads.
    t.fill_(True if np_dtype is np.bool_ else 7)
    assert (a == (True if np_dtype is np.bool_ else 7)).all()


def test_in_place_ops_and_views_write_into_the_array():
    a = np.arange(12.0).reshape(3, 4)
    t = tg.from_numpy(a)
    t[1].mul_(10.0)
    t.t()[0].add_(0.5)  # a strided view of the shared memory
    expected = np.arange(12.0).reshape(3, 4)
    expected[1] *= 10
    expected[:, 0] += 0.5
    np.testing.assert_array_equal(a, expected)
    # Reshape-like operations view the same memory; nothing reallocates it.
    v = t.view(12)
    v[0] = -1.0
    assert a[0, 0] == -1.0
    assert addr(v.numpy()) == addr(a)


def test_non_contiguous_arrays_keep_their_strides_and_offset():
    base = np.arange(24.0).reshape(4, 6)
    for a in (base[:, ::2], base.T, base[1:, 2:], base[::2, 1::3]):
        t = tg.from_numpy(a)
        np.testing.assert_array_equal(t.numpy(), a)
        assert t.stride() == tuple(s // 8 for s in a.strides)
        assert addr(t.numpy()) == addr(a)
        t.add_(1000.0)
        np.testing.assert_array_equal(a, t.numpy())
    assert (base >= 1000).sum() > 0


def test_zero_strides_broadcast_arrays_share_without_allocating():
    a = np.broadcast_to(np.arange(3.0), (1000, 3))
    with pytest.warns(UserWarning, match="not writable"):
        t = tg.from_numpy(a)
    assert t.stride() == (0, 1)
    assert t.sum().item() == 3000.0


def test_refusals_match_pytorch():
    a = np.arange(6.0)
    with pytest.raises(ValueError, match="negative"):
        tg.from_numpy(a[::-1])
    rec = np.zeros(3, dtype=[("x", "f8"), ("y", "i4")])
    with pytest.raises(ValueError, match="not a multiple of the element byte size"):
        tg.from_numpy(rec["x"])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tg.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError, match="byte order"):
        tg.from_numpy(np.arange(3.0).astype(">f8"))


def test_unaligned_arrays_are_refused_not_read():
    raw = np.zeros(17, dtype=np.uint8)
    a = raw[1:].view(np.float64)
    assert not a.flags.aligned
    with pytest.raises(ValueError, match="unaligned"):
        tg.from_numpy(a)


@pytest.mark.parametrize("dt", ["int32", "int16", "int8", "uint8", "float16"])
def test_new_dtypes_share_or_are_refused_with_a_hint(dt):
    # The dtypes branch adds these dtypes (a row each in the exchange table); until then,
    # from_numpy refuses them instead of copying silently.
    a = np.arange(4).astype(dt)
    if hasattr(tg, dt):
        t = tg.from_numpy(a)
        a[0] = 3
        assert t[0].item() == 3
    else:
        with pytest.raises(TypeError, match=r"tg.tensor\(arr\) copies"):
            tg.from_numpy(a)
        assert tg.tensor(a).tolist() == [0, 1, 2, 3]  # the copy the message suggests


@pytest.mark.parametrize("dt", ["complex128", "U3", "O", "datetime64[s]", "uint64"])
def test_dtypes_tapegrad_lacks_are_refused(dt):
    with pytest.raises(TypeError, match="can't share"):
        tg.from_numpy(np.zeros(2, dtype=dt))


def test_bool_bytes_other_than_0_and_1_are_refused():
    a = np.frombuffer(bytearray(b"\x02\x01"), dtype=np.bool_)
    with pytest.raises(ValueError, match="0 or 1"):
        tg.from_numpy(a)


def test_read_only_arrays_are_shared_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = tg.from_numpy(a)
    assert addr(t.numpy()) == addr(a)
    assert not t.numpy().flags.writeable
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1.0)
    with pytest.raises(RuntimeError, match="read-only"):
        t[0] = 5.0
    np.testing.assert_array_equal(a, [0.0, 1.0, 2.0])
    # Out-of-place results are ordinary tensors.
    assert (t + 1).add_(1).tolist() == [2.0, 3.0, 4.0]


def test_read_only_parameter_is_refused_by_the_optimizer():
    a = np.ones(3, dtype=np.float32)
    a.flags.writeable = False
    with pytest.warns(UserWarning):
        p = tg.from_numpy(a)
    p.requires_grad_(True)
    p.sum().backward()
    opt = tg.optim.SGD([p], lr=0.1)
    with pytest.raises(RuntimeError, match="read-only"):
        opt.step()
    np.testing.assert_array_equal(a, [1.0, 1.0, 1.0])


def test_numpy_side_writes_do_not_bump_the_version_counter():
    a = np.zeros(2)
    t = tg.from_numpy(a)
    v0 = t._version
    a[0] = 1.0
    assert t._version == v0  # as in PyTorch: NumPy's writes are invisible to the counter
    t.add_(1.0)
    assert t._version == v0 + 1


# ---------------------------------------------------------------------------------------------
# t.numpy(), np.asarray(t), __array_interface__
# ---------------------------------------------------------------------------------------------


def test_numpy_shares_views_with_their_strides_and_offset():
    t = tg.arange(12.0).reshape(3, 4)
    base_addr = addr(t.numpy())
    for v, (r, c) in ((t.t(), (0, 0)), (t[1:, 2:], (1, 2)), (t[:, ::2], (0, 0)), (t[2], (2, 0))):
        n = v.numpy()
        np.testing.assert_array_equal(n, np.arange(12.0, dtype=np.float32).reshape(3, 4)[1:, 2:]
                                      if (r, c) == (1, 2) else n)
        assert addr(n) == base_addr + (r * 4 + c) * 4
        assert n.strides == tuple(s * 4 for s in v.stride())
    n = t[1:, 2:].numpy()
    n[0, 0] = -7.0
    assert t[1, 2].item() == -7.0


def test_numpy_refuses_a_tensor_that_requires_grad_with_pytorchs_message():
    x = tg.ones(2, requires_grad=True)
    msg = r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) instead."
    with pytest.raises(RuntimeError, match=msg):
        x.numpy()
    with pytest.raises(RuntimeError, match=msg):
        np.asarray(x)
    d = x.detach().numpy()
    d[0] = 3.0
    assert x[0].item() == 3.0  # detach().numpy() shares
    with tg.no_grad():
        assert addr(x.numpy()) == addr(d)
    assert addr(x.numpy(force=True)) == addr(d)  # force skips the check and still shares (PyTorch)


def test_array_protocol_copy_and_dtype():
    t = tg.tensor([1.0, 2.0])
    assert addr(np.asarray(t)) == addr(t.numpy())
    assert addr(np.asarray(t, copy=False)) == addr(t.numpy())
    c = np.array(t, copy=True)
    assert addr(c) != addr(t.numpy())
    c[0] = 9.0
    assert t[0].item() == 1.0
    f64 = np.asarray(t, dtype=np.float64)
    assert f64.dtype == np.float64 and f64.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    # The direct call follows the same protocol.
    assert t.__array__(dtype=np.float32, copy=False).dtype == np.float32


def test_array_interface():
    t = tg.arange(6, dtype=tg.int64).reshape(2, 3).t()
    ai = t.__array_interface__
    assert ai["shape"] == (3, 2) and ai["strides"] == (8, 24) and ai["typestr"].endswith("i8")
    assert ai["version"] == 3 and ai["data"][1] is False


def test_numpy_of_a_tensor_whose_memory_is_an_array_outlives_both_names():
    a = np.arange(4.0)
    n = tg.from_numpy(a)[1:].numpy()
    del a
    gc.collect()
    np.testing.assert_array_equal(n, [1.0, 2.0, 3.0])


# ---------------------------------------------------------------------------------------------
# Lifetimes
# ---------------------------------------------------------------------------------------------


def test_the_tensor_keeps_the_array_alive_and_releases_it():
    a = np.arange(5.0)
    before = sys.getrefcount(a)
    t = tg.from_numpy(a)
    v = t[2:]
    assert sys.getrefcount(a) == before + 1
    del t
    gc.collect()
    assert sys.getrefcount(a) == before + 1  # the view still holds the storage
    del v
    gc.collect()
    assert sys.getrefcount(a) == before


def test_array_deleted_before_the_tensor():
    t = tg.from_numpy(np.arange(1000.0))
    gc.collect()
    assert t.sum().item() == sum(range(1000))


def test_tensor_deleted_before_the_array():
    a = np.arange(3.0)
    t = tg.from_numpy(a)
    n = t.numpy()
    del t
    gc.collect()
    n[0] = 5.0
    assert a[0] == 5.0


def test_a_dlpack_consumer_releases_a_shared_array_at_once():
    a = np.zeros(3)
    before = sys.getrefcount(a)
    t = tg.from_numpy(a)
    n = np.from_dlpack(t)
    del t
    assert sys.getrefcount(a) == before + 1
    del n  # NumPy runs our deleter holding the GIL: the array is released now, not at a later call
    assert sys.getrefcount(a) == before


def test_last_tensor_dropped_on_another_thread():
    a = np.zeros(1000)
    before = sys.getrefcount(a)
    box = [tg.from_numpy(a)]

    def work():
        t = box.pop()
        t.add_(1.0)
        del t  # the last reference dies on this thread

    th = threading.Thread(target=work)
    th.start()
    th.join()
    tg.zeros(1)  # any call into tapegrad lets a deferred release run
    gc.collect()
    assert sys.getrefcount(a) == before
    assert (a == 1.0).all()


def test_tensors_over_one_array_written_from_threads():
    a = np.zeros((4, 1000))
    t = tg.from_numpy(a)

    def work(i):
        for _ in range(50):
            t[i].add_(1.0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert (a == 50.0).all()


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_no_leak_over_many_round_trips():
    def cycle():
        a = np.ones(250_000)  # 2 MB
        t = tg.from_numpy(a)
        n = t[1:].numpy()
        d = tg.from_dlpack(n)
        e = np.from_dlpack(d)
        c = t.__dlpack__()
        tg.from_dlpack(c)
        t.__dlpack__()  # a capsule never consumed
        return float(e[0])

    for _ in range(20):
        cycle()
    gc.collect()
    base = _rss_mb()
    for _ in range(300):  # 600 MB in total if anything were kept
        cycle()
    gc.collect()
    assert _rss_mb() - base < 60


def test_pickling_a_shared_tensor_copies_its_values():
    a = np.arange(4.0)
    t = tg.from_numpy(a)
    u = pickle.loads(pickle.dumps(t[1:]))
    assert u.tolist() == [1.0, 2.0, 3.0]
    u.add_(1.0)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    import copy
    c = copy.deepcopy(t)
    c.add_(1.0)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


# ---------------------------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------------------------


def test_dlpack_device():
    assert tg.zeros(1).__dlpack_device__() == (1, 0)


def test_dlpack_round_trip_with_numpy():
    t = tg.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert addr(a) == addr(t.numpy())
    a[0, 1] = 50.0
    assert t[0, 1].item() == 50.0
    b = np.arange(6, dtype=np.int64)[::2]
    u = tg.from_dlpack(b)
    assert u.stride() == (2,)
    u.add_(100)
    assert b.tolist() == [100, 102, 104]
    assert addr(u.numpy()) == addr(b)


def test_dlpack_export_of_views():
    t = tg.arange(12.0).reshape(3, 4)
    v = t[1:, 1::2]
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, np.arange(12.0, dtype=np.float32).reshape(3, 4)[1:, 1::2])
    assert addr(a) == addr(t.numpy()) + (4 + 1) * 4


def test_dlpack_capsule_names_and_consumption():
    t = tg.ones(2)
    legacy = t.__dlpack__()
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" not in repr(legacy)
    assert "dltensor_versioned" in repr(versioned)
    for cap in (legacy, versioned):
        u = tg.from_dlpack(cap)
        u.add_(1.0)
        with pytest.raises(RuntimeError, match="already consumed"):
            tg.from_dlpack(cap)
    assert t.tolist() == [3.0, 3.0]


def test_dlpack_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = tg.from_dlpack(a)
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1.0)
    with pytest.warns(UserWarning):
        r = tg.from_numpy(a)
    with pytest.raises(BufferError, match="read-only"):
        r.__dlpack__()  # a 0.x capsule can't say read-only
    b = np.from_dlpack(r)  # NumPy asks for 1.x
    assert not b.flags.writeable and addr(b) == addr(a)


def test_dlpack_copy_flag():
    t = tg.ones(2)
    c = tg.from_dlpack(t, copy=True)
    c.add_(1.0)
    assert t.tolist() == [1.0, 1.0]
    a = np.from_dlpack(t, copy=True)
    a[0] = 5.0
    assert t.tolist() == [1.0, 1.0]


def test_dlpack_refusals():
    with pytest.raises(BufferError, match="require gradient"):
        tg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="stream"):
        tg.ones(2).__dlpack__(stream=1)
    with pytest.raises(BufferError, match="device"):
        tg.ones(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="__dlpack__"):
        tg.from_dlpack([1.0])
    with pytest.raises(BufferError, match="negative strides"):
        tg.from_dlpack(np.arange(3.0)[::-1])

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked")

    with pytest.raises(BufferError, match="device"):
        tg.from_dlpack(OnGpu())

    class NotACapsule:
        def __dlpack__(self, **kw):
            return 42

    with pytest.raises(TypeError, match="not a capsule"):
        tg.from_dlpack(NotACapsule())


# ctypes mirrors of the DLPack 0.x structs, to hand tg.from_dlpack capsules it must refuse.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def _capsule(managed, name=b"dltensor"):
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), name, None)


@pytest.mark.parametrize("case", ["device", "dtype", "lanes", "negative size", "negative stride",
                                  "misaligned", "null data", "wrong name"])
def test_hostile_capsules_are_refused_not_read(case):
    buf = (ctypes.c_double * 4)(1.0, 2.0, 3.0, 4.0)
    shape = (ctypes.c_int64 * 1)(4)
    strides = (ctypes.c_int64 * 1)(1)
    m = _DLManagedTensor()
    m.dl_tensor.data = ctypes.addressof(buf)
    m.dl_tensor.device = _DLDevice(1, 0)
    m.dl_tensor.ndim = 1
    m.dl_tensor.dtype = _DLDataType(2, 64, 1)
    m.dl_tensor.shape = shape
    m.dl_tensor.strides = strides
    name = b"dltensor"
    if case == "device":
        m.dl_tensor.device = _DLDevice(2, 0)
    elif case == "dtype":
        m.dl_tensor.dtype = _DLDataType(5, 64, 1)  # complex
    elif case == "lanes":
        m.dl_tensor.dtype = _DLDataType(2, 64, 4)
    elif case == "negative size":
        shape[0] = -4
    elif case == "negative stride":
        strides[0] = -1
    elif case == "misaligned":
        m.dl_tensor.byte_offset = 3
    elif case == "null data":
        m.dl_tensor.data = None
    else:
        name = b"not_a_dltensor"
    cap = _capsule(m, name)
    with pytest.raises((BufferError, TypeError)):
        tg.from_dlpack(cap)
    # A refused capsule is not consumed: the valid parts can still be read by hand.
    assert list(buf) == [1.0, 2.0, 3.0, 4.0]


def test_hand_made_capsule_is_shared_and_its_deleter_runs():
    buf = (ctypes.c_float * 3)(1.0, 2.0, 3.0)
    shape = (ctypes.c_int64 * 1)(3)
    deleted = []
    DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    deleter = DELETER(lambda p: deleted.append(p))
    m = _DLManagedTensor()
    m.dl_tensor.data = ctypes.addressof(buf)
    m.dl_tensor.device = _DLDevice(1, 0)
    m.dl_tensor.ndim = 1
    m.dl_tensor.dtype = _DLDataType(2, 32, 1)
    m.dl_tensor.shape = shape
    m.deleter = ctypes.cast(deleter, ctypes.c_void_p)
    t = tg.from_dlpack(_capsule(m))
    t.mul_(2.0)
    assert list(buf) == [2.0, 4.0, 6.0]
    assert deleted == []
    del t
    gc.collect()
    assert deleted == [ctypes.addressof(m)]


# ---------------------------------------------------------------------------------------------
# PyTorch (when installed)
# ---------------------------------------------------------------------------------------------


def test_dlpack_round_trip_with_pytorch():
    torch = pytest.importorskip("torch")
    t = tg.arange(6.0).reshape(2, 3)
    pt = torch.from_dlpack(t)
    assert pt.data_ptr() == addr(t.numpy())
    pt[1, 1] = 99.0
    assert t[1, 1].item() == 99.0
    src = torch.arange(8, dtype=torch.float64).reshape(2, 4)[:, 1:]
    u = tg.from_dlpack(src)
    assert addr(u.numpy()) == src.data_ptr()
    u.add_(1.0)
    assert src[0].tolist() == [2.0, 3.0, 4.0]
    legacy = tg.from_dlpack(src.__dlpack__())  # a 0.x capsule handed over directly
    assert addr(legacy.numpy()) == src.data_ptr()
    for dt, tdt in ((torch.float32, tg.float32), (torch.int64, tg.int64), (torch.bool, tg.bool)):
        x = torch.zeros(3, dtype=dt)
        assert tg.from_dlpack(x).dtype == tdt
        assert torch.from_dlpack(tg.zeros(3, dtype=tdt)).dtype == dt


def test_two_tensors_over_one_array_in_place():
    # Two from_numpy calls over one array make two storages; an in-place op between them reads the
    # operand before writing (never through aliasing slices).
    a = np.arange(4.0)
    x, y = tg.from_numpy(a), tg.from_numpy(a)
    x.add_(y)
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0, 6.0])
    x2, y2 = tg.from_numpy(a[1:]), tg.from_numpy(a[:-1])
    x2.add_(y2)  # each element gets its left neighbour's value from before the write
    np.testing.assert_array_equal(a, [0.0, 2.0, 6.0, 10.0])


def test_numpy_cannot_resize_an_array_a_tensor_shares():
    a = np.zeros(3)
    t = tg.from_numpy(a)
    with pytest.raises(ValueError):
        a.resize(1000)  # NumPy sees the extra reference and refuses to reallocate
    t.add_(1.0)
    assert a.tolist() == [1.0, 1.0, 1.0]


def test_editing_the_holders_interface_cannot_redirect_an_array():
    n = tg.arange(3.0).numpy()
    holder = n.base
    ai = holder.__array_interface__
    ai["data"] = (16, False)
    ai["shape"] = (10**6,)
    m = np.asarray(holder)  # rebuilt from the holder's own fields
    assert addr(m) == addr(n) and m.shape == (3,)


def test_a_tensor_that_requires_grad_has_no_array_interface():
    x = tg.ones(2, requires_grad=True)
    assert not hasattr(x, "__array_interface__")
    with tg.no_grad():
        assert x.__array_interface__["shape"] == (2,)
    assert x.detach().__array_interface__["data"][0] == addr(x.detach().numpy())
