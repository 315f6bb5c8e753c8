"""Scripted runs for the viewer's tests and benchmark: a QA run and a classification run in milliseconds
per stage on the deterministic `scripted` backend (no model, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2c.classification import ClassificationConfig
from a2c.common.text import normalize
from a2c.qa.config import ExperimentConfig
from a2c.qa.rank import majority_vote
from a2c.qa.rows import CHOICES, GENERATIONS
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder

# option numbers and answer texts; a long reply fails the paraphrase checks ("rambling")
QA_SCRIPT = ("scripted:1|2|Paris|Rome|" + "Which one?|" * 6 + "Is it so?|Is it so?|"
             + " ".join(["on and on"] * 30))
CLS_SCRIPT = "scripted:entailment|neutral|contradiction|no idea"


def qa_config(root: Path, *, limit: int = 12, seed: int = 0, **more: Any) -> ExperimentConfig:
    return ExperimentConfig.model_validate({
        "name": "view-qa", "limit": limit, "seed": seed, "output": str(root / "run"),
        "generator": {"backend": "scripted", "model": QA_SCRIPT, "cache": str(root / "cache.sqlite")},
        "judges": ["exact", "rouge1"], "accuracy": {"similarities": ["rouge1"]}, **more})


def qa_run(root: Path, **changes: Any) -> Path:
    """A finished scripted QA run (the quickstart questions); returns its folder."""
    config = qa_config(root, **changes)
    run_experiment(config, progress=False)
    return config.run_dir


def classification_run(root: Path) -> Path:
    """A finished scripted classification run over the 30 built-in NLI items; returns its folder."""
    config = ClassificationConfig.model_validate({
        "name": "view-cls", "dataset": {"name": "nli-quickstart", "labels": ["entailment", "neutral",
                                                                             "contradiction"]},
        "generator": {"backend": "scripted", "model": CLS_SCRIPT, "cache": str(root / "cache.sqlite")},
        "output": str(root / "run")})
    run_experiment(config, progress=False)
    return config.run_dir


def expected_changed(folder: RunFolder) -> set[str]:
    """Questions whose A2C answer (majority over parsed choices) differs from the majority before A2C,
    straight from choices.jsonl and generations.jsonl."""
    chosen: dict[str, list[str]] = {}
    for c in folder.read_rows(CHOICES):
        if c.text is not None:
            chosen.setdefault(c.id, []).append(c.text)
    answers: dict[str, list[str]] = {}
    for g in folder.read_rows(GENERATIONS):
        answers.setdefault(g.id, []).append(g.short)
    return {q for q, texts in chosen.items()
            if normalize(majority_vote(texts)[0] or "") != normalize(majority_vote(answers[q])[0] or "")}
