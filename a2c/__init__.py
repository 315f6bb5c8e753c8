"""a2c: measure and improve how consistently large language models answer."""

__version__ = "0.1.0"
