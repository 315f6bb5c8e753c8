"""Pairwise agreement judges → n×n matrices per question (SPEC §2), batched over the whole dataset.

Registry names: exact, rouge1, ner, pp, entail, contra, llm, embedding. `build_judge(name, **options)`
builds one; `load_preset("offline" | "paper" | path)` a list of them from YAML.
"""

from a2c.judges import classifier, embedding, lexical, llm  # noqa: F401  (register the judges)
from a2c.judges.base import JUDGES, Judge, JudgeError, Pair, PairwiseJudge
from a2c.judges.hf import LabelError, ModelNotFoundError, TruncationWarning
from a2c.judges.presets import JudgePreset, JudgeSpec, PresetError, build_judge, load_preset

__all__ = [
    "JUDGES",
    "Judge",
    "JudgeError",
    "JudgePreset",
    "JudgeSpec",
    "LabelError",
    "ModelNotFoundError",
    "Pair",
    "PairwiseJudge",
    "PresetError",
    "TruncationWarning",
    "build_judge",
    "load_preset",
]
