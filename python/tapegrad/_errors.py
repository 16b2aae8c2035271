"""Exception types raised by tapegrad."""

from __future__ import annotations

from collections.abc import Iterable


class SavedTensorModifiedError(RuntimeError):
    """A tensor saved for backward was modified in place after it was saved.

    Attributes name the culprit: ``saved_by`` (the node that saved it, e.g. ``SinBackward``),
    ``modified_by`` (the in-place operation, e.g. ``add_``), ``saved_version`` and
    ``current_version``, plus the tensor's ``shape`` and ``dtype``.

    >>> import tapegrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> y = x.exp()
    >>> with tg.no_grad():
    ...     _ = y.add_(1)
    >>> try:
    ...     y.sum().backward()
    ... except tg.SavedTensorModifiedError as e:
    ...     print(e.saved_by, e.modified_by, e.saved_version, e.current_version)
    ExpBackward add_ 0 1
    """

    def __init__(self, message: str, *, saved_by: str | None = None, modified_by: str | None = None,
                 saved_version: int | None = None, current_version: int | None = None,
                 shape: Iterable[int] | None = None, dtype: str | None = None) -> None:
        super().__init__(message)
        self.saved_by = saved_by
        self.modified_by = modified_by
        self.saved_version = saved_version
        self.current_version = current_version
        self.shape = tuple(shape) if shape is not None else None
        self.dtype = dtype



class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input: a singular matrix (``inv``, ``solve``), a
    matrix that is not positive-definite (``cholesky``), no convergence (``eigh``, ``svd``). The
    message names the batch element, as PyTorch's ``torch.linalg.LinAlgError``.

    >>> import tapegrad as tg
    >>> try:
    ...     tg.linalg.inv(tg.zeros(2, 2))
    ... except tg.linalg.LinAlgError as e:
    ...     print(isinstance(e, RuntimeError))
    True
    """
