"""User-facing errors: the CLI prints these as one line (no traceback) and exits with status 2."""

from __future__ import annotations


class A2CError(Exception):
    """Base of every error whose message is meant for the user: it names the bad field, file or name.

    `hint` says what to do about it; the CLI prints it on its own `hint:` line under the error."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class OneLineWarning(FutureWarning):
    """A warning meant for the user: the CLI shows it as one `a2c: warning:` line (a FutureWarning, so
    Python shows it to users by default)."""


class RenamedKeyWarning(OneLineWarning):
    """A config key read under its new name."""
