"""tg.save / tg.load: round trips of tensors and nested containers, identity of repeated tensors,
and refusal of anything that is not a tapegrad file (nothing is ever unpickled)."""

import io
import json
import pickle
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import tapegrad as tg


def _round_trip(obj, tmp_path=None):
    if tmp_path is not None:
        path = tmp_path / "obj.tg"
        tg.save(obj, path)
        return tg.load(str(path))
    buf = io.BytesIO()
    tg.save(obj, buf)
    buf.seek(0)
    return tg.load(buf)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64, tg.bool])
def test_tensor_round_trip_keeps_values_dtype_and_shape(dtype, tmp_path):
    a = np.random.default_rng(0).standard_normal((3, 4, 2)) * 10
    t = tg.tensor(a, dtype=dtype)
    back = _round_trip(t, tmp_path)
    assert back.dtype is dtype and back.shape == (3, 4, 2)
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_special_values_and_empty_and_scalar_tensors():
    t = tg.tensor([np.nan, np.inf, -np.inf, -0.0, 1e-45])
    back = _round_trip({"t": t, "e": tg.zeros(0, 3), "s": tg.tensor(2.5)})
    np.testing.assert_array_equal(back["t"].numpy(), t.numpy())
    assert np.signbit(back["t"].numpy()[3])
    assert back["e"].shape == (0, 3) and back["s"].shape == () and back["s"].item() == 2.5


def test_nested_containers_and_scalars():
    obj = {
        "a": [1, 2.5, "x", None, True, (tg.ones(2), [tg.zeros(1)])],
        3: {"nested": {(1, "k"): float("inf")}},
        None: OrderedDict(b=1, a=2),
        "c": Counter({5: 2, 7: 1}),
        "np": np.arange(4, dtype=np.int32),
    }
    back = _round_trip(obj)
    assert back["a"][:5] == [1, 2.5, "x", None, True]
    assert isinstance(back["a"][5], tuple) and back["a"][5][0].tolist() == [1.0, 1.0]
    assert back[3] == {"nested": {(1, "k"): float("inf")}}
    assert isinstance(back[None], OrderedDict) and list(back[None]) == ["b", "a"]
    assert isinstance(back["c"], Counter) and back["c"][5] == 2
    assert back["np"].dtype == np.int32 and back["np"].tolist() == [0, 1, 2, 3]


def test_requires_grad_is_kept_and_repeated_tensors_stay_one_tensor():
    w = tg.ones(3, requires_grad=True)
    back = _round_trip({"w": w, "again": [w], "plain": tg.ones(1)})
    assert back["w"].requires_grad and back["w"].is_leaf
    assert back["again"][0] is back["w"]
    assert not back["plain"].requires_grad


def test_views_are_saved_as_their_values():
    base = tg.arange(12).reshape(3, 4)
    view = base.t()[1:]
    back = _round_trip(view)
    np.testing.assert_array_equal(back.numpy(), view.numpy())


def test_optimizer_state_dict_round_trip(tmp_path):
    w = tg.ones(2, requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1, amsgrad=True)
    w.grad = tg.tensor([0.5, -0.5])
    opt.step()
    sd = opt.state_dict()
    back = _round_trip(sd, tmp_path)
    assert list(back["state"]) == [0]
    assert back["param_groups"][0]["betas"] == (0.9, 0.999)
    for k, v in sd["state"][0].items():
        np.testing.assert_array_equal(back["state"][0][k].numpy(), v.numpy())


def test_unsupported_objects_are_refused_when_saving():
    with pytest.raises(TypeError, match="cannot store an object of type"):
        tg.save({"f": lambda: 0}, io.BytesIO())
    with pytest.raises(TypeError, match="dict key"):
        tg.save({frozenset(): 1}, io.BytesIO())
    with pytest.raises(TypeError, match="Python objects"):
        tg.save(np.array([object()]), io.BytesIO())


def test_a_pickle_is_refused_without_being_unpickled(tmp_path):
    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled!')",))

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(RuntimeError, match="not a tapegrad file"):
        tg.load(path)


def test_other_files_are_refused_clearly(tmp_path):
    cases = {
        "text.txt": b"hello",
        "empty.bin": b"",
        "plain.npz": None,
        "badzip.zip": b"PK\x03\x04garbage",
    }
    for name, data in cases.items():
        path = tmp_path / name
        if data is None:
            with open(path, "wb") as f:
                np.savez(f, x=np.ones(2))
        else:
            path.write_bytes(data)
        with pytest.raises(RuntimeError, match="not a (valid )?tapegrad file"):
            tg.load(path)


def _tampered(manifest=None, arrays=None):
    buf = io.BytesIO()
    arrays = dict(arrays or {})
    if manifest is not None:
        arrays["__tapegrad__"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    np.savez(buf, **arrays)
    buf.seek(0)
    return buf


def test_a_tampered_manifest_is_refused():
    bad = [
        _tampered({"format": "other", "version": 1, "root": {"value": 1}}),
        _tampered({"format": "tapegrad", "version": 99, "root": {"value": 1}}),
        _tampered({"format": "tapegrad", "version": 1, "root": {"tensor": "a9", "dtype": "float32"}}),
        _tampered({"format": "tapegrad", "version": 1, "root": {"tensor": "a0", "dtype": "float64",
                                                               "requires_grad": False}},
                  {"a0": np.ones(2, dtype=np.float32)}),
        _tampered({"format": "tapegrad", "version": 1, "root": {"eval": "os.system('x')"}}),
        _tampered({"format": "tapegrad", "version": 1, "root": {"dict": [[{"list": []}, {"value": 1}]]}}),
    ]
    for buf in bad:
        with pytest.raises(RuntimeError, match="not a valid tapegrad file"):
            tg.load(buf)


def test_the_file_is_an_npz_with_a_json_manifest(tmp_path):
    """The documented layout (docs/design.md): readable with NumPy alone, without pickle."""
    path = tmp_path / "m.tg"
    tg.save({"w": tg.tensor([1.0, 2.0])}, path)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["__tapegrad__.npy", "a0.npy"]
    with np.load(path, allow_pickle=False) as npz:
        manifest = json.loads(npz["__tapegrad__"].tobytes())
        assert manifest["format"] == "tapegrad"
        assert npz["a0"].tolist() == [1.0, 2.0]


def test_deep_and_self_containing_structures():
    deep = []
    cur = deep
    for _ in range(150):
        cur.append([])
        cur = cur[0]
    back = _round_trip(deep)
    for _ in range(150):
        back = back[0]
    assert back == []
    cycle = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="nested too deeply"):
        tg.save(cycle, io.BytesIO())
    for depth in (300, 100_000):  # a hostile manifest: refused, never a RecursionError or a crash
        manifest = '{"format":"tapegrad","version":1,"root":' + '{"list":[' * depth + "]}" * depth + "}"
        buf = io.BytesIO()
        np.savez(buf, __tapegrad__=np.frombuffer(manifest.encode(), dtype=np.uint8))
        buf.seek(0)
        with pytest.raises(RuntimeError, match="not a valid tapegrad file"):
            tg.load(buf)
