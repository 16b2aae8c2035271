"""Exception types raised by tapegrad."""


class SavedTensorModifiedError(RuntimeError):
    """A tensor saved for backward was modified in place after it was saved.

    Attributes name the culprit: ``saved_by`` (the node that saved it, e.g. ``SinBackward``),
    ``modified_by`` (the in-place operation, e.g. ``add_``), ``saved_version`` and
    ``current_version``, plus the tensor's ``shape`` and ``dtype``.
    """

    def __init__(self, message, *, saved_by=None, modified_by=None, saved_version=None,
                 current_version=None, shape=None, dtype=None):
        super().__init__(message)
        self.saved_by = saved_by
        self.modified_by = modified_by
        self.saved_version = saved_version
        self.current_version = current_version
        self.shape = tuple(shape) if shape is not None else None
        self.dtype = dtype

