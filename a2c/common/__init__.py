"""Small shared utilities every floor uses and that import nothing of a2c above them: user-facing errors, the
name → component registries and component specs, reading the user's text files, text normalisation, counted
wording, credential masking, stable seeds, checks for untrusted text.

Nothing is exported here: import each module by its path (`a2c.common.errors`, `a2c.common.registry`).
"""

from __future__ import annotations

__all__: list[str] = []
