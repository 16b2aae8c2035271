"""Issue 15's audit (ops15c): every operation, method and convention that issue 15 names exists with
PyTorch's spelling on ``tg``, ``tg.Tensor``, ``tg.nn.functional`` and ``tg.linalg`` (where PyTorch
has it there), and each operation appears in at least one differential test against PyTorch.

The name lists were taken from the issue's text; which namespaces each name belongs to is what
PyTorch 2.x has (``torch.X``, ``torch.Tensor.X``, ``torch.nn.functional.X``, ``torch.linalg.X``).
A differential test is a ``tests/python/*/test_*torch_differential*.py`` file, or a test function of
``tests/python/ops/test_linalg.py`` or ``tests/python/interop/test_zerocopy.py`` that runs PyTorch.
"""

import ast
import copy
import glob
import os
import pickle
import re

import numpy as np
import pytest

import tapegrad as tg

# Names on tg only (PyTorch has no method of that name).
TG_ONLY = [
    "linspace", "logspace", "arange", "full_like", "randint", "randperm", "normal", "randint_like",
    "as_tensor", "from_dlpack", "std_mean", "var_mean", "searchsorted", "bucketize", "broadcast_tensors",
    "hstack", "vstack", "dstack", "column_stack", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d",
    "einsum", "tensordot", "cdist",
]
# Names that PyTorch has both as torch.X and as Tensor.X.
TG_AND_TENSOR = [
    "log1p", "expm1", "log2", "log10", "exp2", "rsqrt", "square", "reciprocal", "sign", "floor", "ceil",
    "round", "trunc", "frac", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh",
    "atanh", "erf", "erfc", "erfinv", "maximum", "minimum", "fmax", "fmin", "fmod", "remainder", "lerp",
    "addcmul", "addcdiv", "where", "clamp", "clip", "nan_to_num", "isnan", "isinf", "isfinite", "logical_and",
    "logical_or", "logical_not", "logical_xor", "min", "amax", "amin", "aminmax", "prod", "std", "var",
    "logsumexp", "norm", "all", "any", "count_nonzero", "cumsum", "cumprod", "cummax", "argmin", "median",
    "mode", "sort", "argsort", "topk", "kthvalue", "unique", "allclose", "isclose", "equal", "index_put_",
    "gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_fill",
    "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "nonzero", "select",
    "diagonal", "diag", "diag_embed", "trace", "tril", "triu", "flip", "roll", "split", "chunk", "unbind",
    "tensor_split", "repeat_interleave", "tile", "movedim", "swapaxes", "unflatten", "squeeze", "unsqueeze",
    "broadcast_to", "dot", "vdot", "inner", "outer", "mv", "addmm", "addmv", "baddbmm", "kron", "cross",
    "exp_", "sqrt_", "sigmoid_", "tanh_", "neg_", "detach_", "numel",
]
# Tensor methods only (torch.int, torch.bool, ... are dtypes).
TENSOR_ONLY = [
    "int", "long", "bool", "half",
    "repeat", "view_as", "reshape_as", "pow_", "masked_fill_", "index_fill_", "scatter_", "uniform_",
    "normal_", "bernoulli_", "exponential_", "fill_diagonal_", "add_", "addcmul_", "addcdiv_", "lerp_", "t_",
    "transpose_", "squeeze_", "unsqueeze_", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
    "type_as", "to", "dim", "size", "stride", "is_contiguous", "element_size", "nbytes", "data_ptr",
    "storage_offset", "T", "mT", "H",
]
# torch.nn.functional only.
F_ONLY = [
    "silu", "gelu", "elu", "leaky_relu", "hardtanh", "softplus", "logsigmoid", "normalize", "one_hot", "pad",
    "cross_entropy",
]
# On torch and torch.nn.functional; and on all three.
TG_AND_F = ["selu"]
TG_TENSOR_AND_F = ["softmax", "log_softmax", "relu_"]
# torch.linalg.
LINALG = [
    "norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd",
    "svdvals", "lstsq", "pinv", "matrix_power",
]

NAMESPACES = {
    "tg": TG_ONLY + TG_AND_TENSOR + TG_AND_F + TG_TENSOR_AND_F,
    "Tensor": TG_AND_TENSOR + TENSOR_ONLY + TG_TENSOR_AND_F,
    "F": F_ONLY + TG_AND_F + TG_TENSOR_AND_F,
    "linalg": LINALG,
}
OBJECTS = {"tg": tg, "Tensor": tg.Tensor, "F": tg.nn.functional, "linalg": tg.linalg}
ALL_NAMES = sorted({n for names in NAMESPACES.values() for n in names})
PYTHON_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("ns", sorted(NAMESPACES))
def test_every_issue15_name_exists_with_pytorchs_spelling(ns):
    missing = [n for n in NAMESPACES[ns] if not callable(getattr(OBJECTS[ns], n, None))
               and not (ns == "Tensor" and hasattr(OBJECTS[ns], n))]
    assert not missing, f"missing on {ns}: {missing}"


def test_public_functions_are_listed_in_all():
    for ns in ("tg", "F", "linalg"):
        listed = set(OBJECTS[ns].__all__)
        absent = [n for n in NAMESPACES[ns] if n not in listed]
        assert not absent, f"not in {ns}.__all__: {absent}"
    assert len(tg.__all__) == len(set(tg.__all__))
    assert all(hasattr(tg, n) for n in tg.__all__)


def _differential_text():
    parts = [open(p).read() for p in glob.glob(os.path.join(PYTHON_TESTS, "*", "test_*torch_differential*.py"))]
    for friend in ("ops/test_linalg.py", "interop/test_zerocopy.py"):
        src = open(os.path.join(PYTHON_TESTS, friend)).read()
        for node in ast.parse(src).body:
            # A test function that runs PyTorch, or a table of cases written for one.
            if (isinstance(node, ast.FunctionDef) and node.name.startswith("test")) or isinstance(node, ast.Assign):
                seg = ast.get_source_segment(src, node) or ""
                if "torch" in seg:
                    parts.append(seg)
    return "\n".join(parts)


def test_every_issue15_operation_has_a_differential_test():
    text = _differential_text()
    uncovered = [n for n in ALL_NAMES if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", text)]
    assert not uncovered, f"no differential test mentions {uncovered}"


# --- dtypes and Python's conventions ------------------------------------------------------------


def test_dtypes_exist_and_refuse_what_tapegrad_lacks():
    for name in ("int32", "int16", "int8", "uint8", "float16", "bfloat16", "float32", "float64", "int64", "bool"):
        assert isinstance(getattr(tg, name), tg.dtype)
        assert tg.zeros(2, dtype=getattr(tg, name)).dtype is getattr(tg, name)
    for bad in (np.array([1 + 2j]), np.array([1.0], dtype=">f8"), np.array([object()], dtype=object)):
        with pytest.raises(TypeError):
            tg.tensor(bad)


def test_python_conventions():
    loss = tg.tensor(0.123456)
    assert f"{loss:.3f}" == "0.123" and format(loss, ".2f") == "0.12"
    big = tg.tensor(2**62 + 1)
    assert int(big) == 2**62 + 1 and float(tg.tensor(1.5)) == 1.5
    import operator
    assert operator.index(tg.tensor(7)) == 7
    with pytest.raises(ValueError):
        int(tg.tensor(float("nan")))
    assert repr(tg.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert callable(tg.set_printoptions)
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    for c in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert c.tolist() == [1.0, 2.0] and c.requires_grad and c.dtype == tg.float32
    assert copy.copy(t).tolist() == [1.0, 2.0]
    a = np.zeros(3, dtype=np.float32)
    s = tg.from_numpy(a)
    a[1] = 5.0
    assert s.tolist() == [0.0, 5.0, 0.0]
    assert np.shares_memory(tg.zeros(3).numpy(), tg.zeros(3).numpy()) is False
    x = tg.zeros(3)
    assert np.shares_memory(x.numpy(), x.numpy())
    assert np.asarray(x).shape == (3,) and hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")
    assert tg.from_dlpack(x).data_ptr() == x.data_ptr()
    assert tg.cuda.is_available() is False
    assert tg.get_default_dtype() == tg.float32 and callable(tg.set_default_dtype)
    assert tg.is_tensor(x) and not tg.is_tensor(a) and tg.numel(tg.zeros(2, 3)) == 6
    assert tg.where.__name__ == "where"
    assert x[np.int64(1)].shape == ()


def test_counts_stay_at_least_what_issue15_closed_with():
    # The public surface at the close of issue 15 (ops15c); a drop means something was removed.
    assert len(tg.__all__) >= 284
    assert len([n for n in dir(tg.Tensor) if not n.startswith("_")]) >= 312


def test_as_tensor_shares_a_numpy_arrays_memory():
    a = np.arange(6.0).reshape(2, 3).T
    t = tg.as_tensor(a)
    assert t.dtype == tg.float64 and t.stride() == (1, 3)
    a[0, 1] = 42.0
    assert t[0, 1].item() == 42.0
    c = tg.as_tensor(a, dtype=tg.float32)  # another dtype: a copy
    a[0, 0] = -1.0
    assert c[0, 0].item() == 0.0
    with pytest.raises(TypeError, match="uint16"):
        tg.as_tensor(np.arange(3, dtype=np.uint16))
