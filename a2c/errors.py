"""User-facing errors: the CLI prints these as one line (no traceback) and exits with status 2."""


class A2CError(Exception):
    """Base of every error whose message is meant for the user: it names the bad field, file or name."""
