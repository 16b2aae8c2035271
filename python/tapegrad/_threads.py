"""The number of threads of tapegrad's parallel work (PyTorch's ``set_num_threads``)."""

from . import _tapegrad as _C

__all__ = ["set_num_threads", "get_num_threads"]


def set_num_threads(n: int) -> None:
    """Sets how many threads the parallel kernels, the parallel backward of independent branches
    and the float32 matrix products use, for the whole process, from the next operation on.

    The default is ``RAYON_NUM_THREADS`` when set, else the number of cores the process may run
    on. ``n`` must be an integer of at least 1: anything else raises ``RuntimeError``, as PyTorch.
    A process forked from one that already ran parallel work starts a pool of its own on its first
    parallel operation (the parent's threads do not exist there), of the size set in the parent.

    >>> import tapegrad as tg
    >>> before = tg.get_num_threads()
    >>> tg.set_num_threads(1)
    >>> tg.get_num_threads()
    1
    >>> tg.set_num_threads(before)
    """
    _C._set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads parallel work uses (see :func:`set_num_threads`).

    >>> import tapegrad as tg
    >>> tg.get_num_threads() >= 1
    True
    """
    return _C._get_num_threads()
