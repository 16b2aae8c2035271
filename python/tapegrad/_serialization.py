"""``tg.save`` / ``tg.load``: tensors, state dicts and nested containers of them, in a file that
cannot run code when loaded.

The file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays): one array per tensor, plus a
uint8 array ``__tapegrad__`` holding a JSON manifest that describes the structure (containers,
scalars, strings, which array each tensor is, its dtype and ``requires_grad``). Loading reads it with
``np.load(..., allow_pickle=False)`` and ``json.loads``, so nothing in the file is ever unpickled or
executed; anything the manifest does not describe exactly is refused. (Why this format:
docs/design.md, "Saving and loading".)
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import Counter, OrderedDict
from typing import IO, Any, Dict, List, Union

import numpy as np

from . import _tapegrad as _C
from ._tapegrad import Tensor

_MANIFEST = "__tapegrad__"
_FORMAT = "tapegrad"
_VERSION = 1
_DTYPES = {
    "float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_, "int32": np.int32,
    "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "float16": np.float16,
    # NumPy has no bfloat16: stored as float32, which holds every bfloat16 value exactly
    "bfloat16": np.float32,
}

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]


class _Writer:
    def __init__(self) -> None:
        self.arrays: Dict[str, np.ndarray] = {}
        self.seen: Dict[int, str] = {}
        self.keep: List[Any] = []  # keeps seen objects alive, so their ids stay unique

    def array(self, a: np.ndarray) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a
        return name

    def encode(self, obj: Any, depth: int = 0) -> Any:
        if depth > 200:
            raise ValueError("tg.save: the object is nested too deeply (or contains itself)")
        if isinstance(obj, Tensor):
            name = self.seen.get(id(obj))
            if name is None:
                data = obj.detach().float() if obj.dtype.name == "bfloat16" else obj.detach()
                name = self.array(np.asarray(data.numpy(), order="C"))  # a view, written out before save returns
                self.seen[id(obj)] = name
                self.keep.append(obj)
            return {"tensor": name, "dtype": obj.dtype.name, "requires_grad": bool(obj.requires_grad)}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return {"value": obj}
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise TypeError("tg.save cannot store NumPy arrays of Python objects")
            return {"ndarray": self.array(np.asarray(obj, order="C"))}
        if isinstance(obj, np.generic):
            return {"value": obj.item()}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {kind: [self.encode(v, depth + 1) for v in obj]}
        if isinstance(obj, dict):
            kind = "counter" if isinstance(obj, Counter) else "ordereddict" if isinstance(obj, OrderedDict) else "dict"
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (bool, int, float, str, tuple))):
                    raise TypeError(f"tg.save cannot store a dict key of type {type(k).__name__}")
                items.append([self.encode(k, depth + 1), self.encode(v, depth + 1)])
            return {kind: items}
        raise TypeError(
            f"tg.save cannot store an object of type {type(obj).__name__}: it stores tensors, NumPy arrays, "
            "None, bools, numbers, strings, and lists, tuples and dicts of these"
        )


def save(obj: Any, f: FileLike) -> None:
    """Writes ``obj`` (a tensor, a state dict, or nested lists/tuples/dicts of tensors, numbers,
    strings and None) to ``f``, a path or a binary file object. The format never needs to run code
    to be read back (see ``tg.load``). A tensor that appears twice is stored once and comes back as
    one tensor; views are stored as copies.

    >>> import io, tapegrad as tg
    >>> buf = io.BytesIO()
    >>> tg.save({"w": tg.ones(2), "step": 3}, buf)
    >>> _ = buf.seek(0)
    >>> tg.load(buf)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    writer = _Writer()
    root = writer.encode(obj)
    manifest = json.dumps({"format": _FORMAT, "version": _VERSION, "root": root}, allow_nan=True)
    arrays = dict(writer.arrays)
    arrays[_MANIFEST] = np.frombuffer(manifest.encode("utf-8"), dtype=np.uint8)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
    else:
        np.savez(f, **arrays)  # type: ignore[arg-type]


class _Reader:
    def __init__(self, npz: Any, where: str) -> None:
        self.npz = npz
        self.where = where
        self.tensors: Dict[str, Tensor] = {}

    def fail(self, why: str) -> RuntimeError:
        return RuntimeError(f"tg.load: {self.where} is not a valid tapegrad file: {why}")

    def array(self, name: Any) -> np.ndarray:
        if not isinstance(name, str) or name == _MANIFEST or name not in self.npz.files:
            raise self.fail(f"the manifest names a missing array {name!r}")
        return self.npz[name]

    def decode(self, node: Any, depth: int = 0) -> Any:
        if depth > 200:
            raise self.fail("the structure is nested too deeply")
        if not isinstance(node, dict) or len(node) not in (1, 3):
            raise self.fail(f"unexpected manifest entry {str(node)[:80]!r}")
        if "tensor" in node:
            name = node["tensor"]
            if name in self.tensors:
                return self.tensors[name]
            a = self.array(name)
            dtype = node.get("dtype")
            if dtype not in _DTYPES or a.dtype != _DTYPES[dtype]:
                raise self.fail(f"array {name!r} has dtype {a.dtype}, the manifest says {dtype!r}")
            t = _C.from_numpy(np.array(a, order="C", copy=True))  # a fresh array: the tensor shares it alone
            if dtype == "bfloat16":
                t = t.bfloat16()
            if node.get("requires_grad") is True:
                t.requires_grad_(True)
            self.tensors[name] = t
            return t
        if len(node) != 1:
            raise self.fail(f"unexpected manifest entry {str(node)[:80]!r}")
        ((kind, value),) = node.items()
        if kind == "value":
            if value is None or isinstance(value, (bool, int, float, str)):
                return value
        elif kind == "ndarray":
            return np.array(self.array(value))
        elif kind in ("list", "tuple") and isinstance(value, list):
            items = [self.decode(v, depth + 1) for v in value]
            return items if kind == "list" else tuple(items)
        elif kind in ("dict", "ordereddict", "counter") and isinstance(value, list):
            pairs = []
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise self.fail("a dict entry is not a key-value pair")
                key = self.decode(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise self.fail("a dict key is not hashable") from None
                pairs.append((key, self.decode(pair[1], depth + 1)))
            made = {"dict": dict, "ordereddict": OrderedDict, "counter": Counter}[kind]
            return made(dict(pairs)) if kind == "counter" else made(pairs)
        raise self.fail(f"unexpected manifest entry {str(node)[:80]!r}")


def load(f: FileLike) -> Any:
    """Reads what ``tg.save`` wrote, from a path or a binary file object. Loading never unpickles
    or runs anything from the file: a file that is not a tapegrad file (a pickle, a ``torch.save``
    file, anything else) is a ``RuntimeError`` that says so.

    >>> import io, tapegrad as tg
    >>> buf = io.BytesIO()
    >>> tg.save([tg.tensor([1, 2]), (1.5, None)], buf)
    >>> _ = buf.seek(0)
    >>> tg.load(buf)
    [tensor([1, 2]), (1.5, None)]
    """
    where = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file object"
    fh: Any = open(f, "rb") if isinstance(f, (str, os.PathLike)) else f
    try:
        head = fh.read(4)
        fh.seek(-len(head), io.SEEK_CUR)
        if head != b"PK\x03\x04":
            raise RuntimeError(f"tg.load: {where} is not a tapegrad file (tg.save writes a zip archive of .npy arrays)")
        try:
            npz = np.load(fh, allow_pickle=False)
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise RuntimeError(f"tg.load: {where} is not a tapegrad file: {e}") from None
        with npz:
            if _MANIFEST not in npz.files:
                raise RuntimeError(f"tg.load: {where} is not a tapegrad file (it has no {_MANIFEST} manifest)")
            reader = _Reader(npz, where)
            try:
                raw = npz[_MANIFEST]
                manifest = json.loads(raw.tobytes().decode("utf-8")) if raw.dtype == np.uint8 else None
            except (ValueError, UnicodeDecodeError, RecursionError) as e:
                raise reader.fail(f"its manifest is not JSON ({e})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT or "root" not in manifest:
                raise reader.fail("its manifest is not a tapegrad manifest")
            if manifest.get("version") != _VERSION:
                raise reader.fail(f"format version {manifest.get('version')!r} (this tapegrad reads {_VERSION})")
            try:
                return reader.decode(manifest["root"])
            except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError) as e:
                raise reader.fail(str(e)) from None
    finally:
        if fh is not f:
            fh.close()
