"""Pairwise agreement judges → n×n matrices per question (SPEC §2), batched over the whole dataset.

Registry names: exact, rouge1, ner, pp, entail, contra, llm, embedding (each loaded on first use).
`build_judge(name, **options)` builds one; `load_preset("offline" | "paper" | path)` a list of them from
YAML. What a judge accepts is its class's `Options` model (a `JudgeOptions`), checked the same way for
configs, presets and Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2c.common.registry import lazy_attributes

if TYPE_CHECKING:
    from a2c.judges.base import JUDGES, Judge, JudgeError, JudgeOptions, JudgeStats, Pair, PairwiseJudge
    from a2c.judges.hf import LabelError, PromptError, TruncationWarning
    from a2c.judges.presets import (
        JudgePreset,
        JudgeSpec,
        OptionError,
        PresetError,
        build_judge,
        load_preset,
        validate_options,
    )
    from a2c.system.hub import ModelNotFoundError

# module → the public names it defines, imported on first use (as `a2c.metrics` does): a config check that
# names `JudgeSpec` does not load the transformers judges' module, nor numpy with it
_MODULES: dict[str, tuple[str, ...]] = {
    "a2c.system.hub": ("ModelNotFoundError",),
    "a2c.judges.base": ("JUDGES", "Judge", "JudgeError", "JudgeOptions", "JudgeStats", "Pair",
                        "PairwiseJudge"),
    "a2c.judges.hf": ("LabelError", "PromptError", "TruncationWarning"),
    "a2c.judges.presets": ("JudgePreset", "JudgeSpec", "OptionError", "PresetError", "build_judge",
                           "load_preset", "validate_options"),
}
__getattr__ = lazy_attributes(__name__, _MODULES)


__all__ = [
    "JUDGES",
    "Judge",
    "JudgeError",
    "JudgeOptions",
    "JudgePreset",
    "JudgeSpec",
    "JudgeStats",
    "LabelError",
    "ModelNotFoundError",
    "OptionError",
    "Pair",
    "PairwiseJudge",
    "PresetError",
    "PromptError",
    "TruncationWarning",
    "build_judge",
    "load_preset",
    "validate_options",
]
