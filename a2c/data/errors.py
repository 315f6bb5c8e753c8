"""Dataset errors are user-facing: they name the file, row or source that failed."""

from a2c.common.errors import A2CError


class DatasetError(A2CError, ValueError):
    """A dataset that cannot be found, read or parsed."""
