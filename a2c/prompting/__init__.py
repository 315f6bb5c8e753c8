"""Prompts and their variation: the shipped prompt templates, in-context paraphrases and the rule a paraphrase
must pass.

Nothing is exported here: import each module by its path (`a2c.prompting.prompts`).
"""

from __future__ import annotations

__all__: list[str] = []
