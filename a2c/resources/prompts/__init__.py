"""The shipped prompt templates, read by `a2c.prompting.prompts`.

A folder of data files: it exports no Python names.
"""

from __future__ import annotations

__all__: list[str] = []
