"""``tg.cuda``: tapegrad runs on the CPU only, so it answers as PyTorch does on a machine without a GPU.

>>> import tapegrad as tg
>>> tg.cuda.is_available(), tg.cuda.device_count()
(False, 0)
"""


def is_available() -> bool:
    """No CUDA device is ever available.

    >>> import tapegrad as tg
    >>> tg.cuda.is_available()
    False
    """
    return False


def device_count() -> int:
    """The number of CUDA devices: none.

    >>> import tapegrad as tg
    >>> tg.cuda.device_count()
    0
    """
    return 0
