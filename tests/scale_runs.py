"""Synthetic TruthfulQA runs of any size on the `scripted` stand-in model, with the paper's protocol settings
(experiments/truthfulqa-a2c.yaml) and lexical judges: what the scaling benchmark measures and what the test
of a run's results against stored digests runs (no model, no network)."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from a2c.qa.config import ExperimentConfig

# replies of the stand-in model: option numbers (rank prompts), short questions (paraphrases that pass
# their checks), answer texts that overlap the synthetic references (accuracy varies), one rambling reply
SCRIPT = ("scripted:1|2|3|Nothing happens|You grow a tree|It depends on the season|The river keeps flowing|"
          "Which one is it?|Is it so?|What happens then?|I have no comment|" + " ".join(["on and on"] * 30))
TOPICS = ("watermelon seeds", "fortune cookies", "the moon", "cold weather", "red cars", "old books",
          "mountain rivers", "glass bottles", "paper money", "wild horses", "green tea", "iron nails")
ACTIONS = ("eat", "swallow", "paint", "bury", "lose", "find", "break", "read", "sell", "plant")


def synthetic_truthfulqa(path: Path, n: int) -> Path:
    """`n` rows in TruthfulQA.csv's layout, every question distinct, with correct and incorrect references."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers",
                      "Source"])
        for i in range(n):
            topic, action = TOPICS[i % len(TOPICS)], ACTIONS[(i // len(TOPICS)) % len(ACTIONS)]
            best = "Nothing happens" if i % 3 else f"The {topic} stay the same"
            question = f"What happens if you {action} {topic} on day {i}?"
            out.writerow(["Adversarial", "Synthetic", question, best,
                          f"{best}; It depends on the season; Nothing in particular happens to {topic}",
                          f"You grow a tree; The {topic} explode; You die on day {i}", ""])
    return path


def scale_config(root: Path, n: int, **more: Any) -> ExperimentConfig:
    """The paper's protocol on `n` synthetic questions in `root` (dataset, run folder and request cache):
    four techniques, ten temperatures, A2C and every selection method, rouge1/exact judges."""
    dataset = synthetic_truthfulqa(root / "TruthfulQA.csv", n)
    return ExperimentConfig.model_validate({
        "name": "scale", "seed": 0, "output": str(root / "run"), "chunk_size": 128,
        "dataset": {"name": "truthfulqa", "path": str(dataset)},
        "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(root / "cache.sqlite")},
        "variation": {"techniques": ["synonyms", "word forms", "sentence structure", "conjunctions"],
                      "temperatures": [round(0.01 + 0.1 * k, 2) for k in range(10)], "top_p": 0.7,
                      "paraphrase_temperature": 0.6, "samples": 1, "answer_field": "short",
                      "long_max_tokens": 64},
        "judges": ["rouge1", "exact"],
        "accuracy": {"similarities": ["rouge1", "bleu"]},
        "ask_to_choose": {"enabled": True},
        "selection": ["a2c", "usc", "medoid", "majority_cluster"], **more})


# the files holding a run's results: the stages' rows, the agreement matrices, the summary and the report's
# tables (not its plots, whose bytes depend on matplotlib's version, nor timings or stage markers)
RESULT_FILES = ("paraphrases.jsonl", "generations.jsonl", "choices.jsonl", "selections.jsonl",
                "metrics.jsonl", "uncertainty.jsonl", "selection_scores.jsonl", "summary.json",
                "matrices_before.npz", "matrices_after.npz", "report.md", "table_before_after.csv",
                "table_accurate_answers.csv",
                "counts.csv", "table_signal.csv", "table_selection.csv",
                "table_answer_or_decline.csv")


def result_digests(run_dir: Path) -> dict[str, str]:
    """sha256 of each result file's content: the bytes of a text file; for an npz, its matrices (names,
    dtypes, shapes and values in name order), so how the archive is packed does not count."""
    digests = {}
    for name in RESULT_FILES:
        path = run_dir / name
        if name.endswith(".npz"):
            digest = hashlib.sha256()
            with np.load(path, allow_pickle=False) as data:
                for key in sorted(data.files):
                    array = data[key]
                    digest.update(f"{key}|{array.dtype.str}|{array.shape}|".encode())
                    digest.update(np.ascontiguousarray(array).tobytes())
            digests[name] = digest.hexdigest()
        else:
            digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests
