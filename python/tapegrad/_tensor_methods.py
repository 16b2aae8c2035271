"""The ``Tensor`` methods written in Python, installed on the native class once, from one table.

``Tensor`` is a native class (``src/python/tensor.rs``) that Python cannot subclass; the methods
PyTorch has that tapegrad composes in Python (products, random fills, the ``new_*`` conveniences, a few
``tg.linalg`` functions, ...) are set on it here, when the package is imported. A name the native class
already defines is never replaced, except ``unique``, whose Python form adds ``dim=``.
"""

from __future__ import annotations

from typing import Any

from . import _creation, _indexing, _pointwise, _products, _random, _reduction, _shape, _sorting, linalg
from ._tapegrad import Tensor

# name -> the function (its first parameter is the tensor) or property installed as Tensor.<name>
_METHODS: dict[str, Any] = {
    # products and linear algebra
    "dot": _products.dot, "vdot": _products.vdot, "inner": _products.inner, "outer": _products.outer,
    "ger": _products.outer, "mv": _products.mv, "addmm": _products.addmm, "addmv": _products.addmv,
    "baddbmm": _products.baddbmm, "kron": _products.kron, "cross": _products.cross, "norm": _reduction._tensor_norm,
    "det": linalg.det, "inverse": linalg.inv, "matrix_power": linalg.matrix_power,
    "pinverse": lambda self, rcond=1e-15: linalg.pinv(self, rtol=rcond),
    # creation
    "new_zeros": _creation.new_zeros, "new_ones": _creation.new_ones, "new_empty": _creation.new_empty,
    "new_full": _creation.new_full, "new_tensor": _creation.new_tensor, "type_as": _creation.type_as,
    # random sampling and fills
    "uniform_": _random.uniform_, "normal_": _random.normal_, "log_normal_": _random.log_normal_,
    "exponential_": _random.exponential_, "cauchy_": _random.cauchy_, "geometric_": _random.geometric_,
    "bernoulli_": _random.bernoulli_, "random_": _random.random_, "bernoulli": _random.bernoulli,
    "multinomial": _random.multinomial,
    # indexing, element-wise, shapes
    "masked_fill": _indexing.masked_fill, "masked_select": _indexing.masked_select,
    "clip_": _pointwise._clip_, "where": _pointwise._where_method, "diag_embed": _shape.diag_embed,
    "mT": property(_shape._mT, doc=_shape._mT.__doc__), "mH": property(_shape._mH, doc=_shape._mH.__doc__),
    "H": property(_shape._H, doc=_shape._H.__doc__),
}

# Python forms that replace the native method of the same name (they add arguments to it).
_REPLACING: dict[str, Any] = {"unique": _sorting._tensor_unique}


def install() -> None:
    """Sets every method of the tables on ``Tensor``; called once, by ``tapegrad/__init__.py``."""
    for name, fn in _METHODS.items():
        if hasattr(Tensor, name):
            raise RuntimeError(f"Tensor.{name} is native; remove it from _tensor_methods._METHODS")
        setattr(Tensor, name, fn)
    for name, fn in _REPLACING.items():
        setattr(Tensor, name, fn)
