"""The process-wide precision of float32 matrix products (PyTorch's ``set_float32_matmul_precision``)."""

from . import _tapegrad as _C

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Sets how float32 matrix products are computed, for the whole process.

    ``precision`` is one of:

    - ``"highest"`` (the default): exact float32 products and float32 sums.
    - ``"high"``: the same as ``"highest"`` on a CPU (there is no TensorFloat-32 unit).
    - ``"medium"``: products of operands rounded to bfloat16 (8 significant bits, round to
      nearest even), summed in float32: on AMX tiles where the CPU has AMX-BF16 (about five
      times the float32 throughput), else with ``vdpbf16ps`` on an AMD CPU with AVX512_BF16
      (about twice), with a relative error near ``2**-8`` instead of ``2**-24`` (docs/api.md gives
      the measured errors). On other CPUs ``"medium"`` multiplies exactly.

    It applies to every float32 matrix product: ``@``, ``mm``, ``bmm``, ``matmul``, ``mv``,
    ``linear``, ``addmm``, ``einsum``/``tensordot`` and the products of their backward passes
    (``dot`` of two vectors stays exact). float64, float16 and bfloat16 products are unaffected. Any other string raises ``ValueError``; a non-string
    ``TypeError``.

    >>> import tapegrad as tg
    >>> tg.set_float32_matmul_precision("medium")
    >>> tg.get_float32_matmul_precision()
    'medium'
    >>> a = tg.tensor([[1.0, 2.0]]); b = tg.tensor([[3.0], [4.0]])
    >>> (a @ b).tolist()  # small integers are exact in bfloat16
    [[11.0]]
    >>> tg.set_float32_matmul_precision("highest")
    """
    _C._set_float32_matmul_precision(precision)


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision: ``"highest"``, ``"high"`` or ``"medium"``.

    >>> import tapegrad as tg
    >>> tg.get_float32_matmul_precision()
    'highest'
    """
    return str(_C._get_float32_matmul_precision())
