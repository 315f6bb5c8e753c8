"""Pairwise agreement judges → n×n matrices per question (SPEC §2), batched over the whole dataset.

Registry names: exact, rouge1, ner, pp, entail, contra, llm, embedding (each loaded on first use).
`build_judge(name, **options)` builds one; `load_preset("offline" | "paper" | path)` a list of them from
YAML. What a judge accepts is its class's `Options` model (a `JudgeOptions`), checked the same way for
configs, presets and Python.
"""

from a2c.hub import ModelNotFoundError
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
