"""The A2C authors' released generations through a samples run and through `a2c score`: the same R1-A.

Their repository (github.com/harshraj172/Controlling-LLM-s-Consistency, folder `generate-results/`) holds
one CSV per model and source of variation, one row per answer: `question`, `question-paraphrase` (the
in-context paraphrase answered; empty in the cross-temperature files), `sampled_outputs` (the answer before
A2C), `consistent_outputs` (after A2C) and `correct_outputs` (the best answer). Extract some with git, e.g.

    git show 605518f:generate-results/generated_facebookopt-125m_sampling-truthfulQA-final_labelled.csv \
        > s.csv

Run: `.venv/bin/python benchmarks/authors_generations.py TruthfulQA.csv FILE.csv [FILE.csv ...]`.

For each file it scores `sampled_outputs` with `a2c score` (ROUGE-1, TruthfulQA's protocol) and runs the file
as `dataset: {name: samples}` with the references of TruthfulQA, skipping the questions TruthfulQA lacks as
`a2c score` skips them (a few of the files' questions carry stray quotes). The run has no generator, so
nothing is asked of a model (the `exact` judge only). It prints the R1-A cell of the file's source from
both, their difference, and beside them `a2c score`'s R1-A of `consistent_outputs` (the authors' answers
after A2C). Both paths score with `a2c.qa.correctness.accuracy.accuracy_columns`; a score averages over
answers and a run over questions' means, which agree when every question has the same number of answers,
as in these files. Exits 1 if a difference exceeds 1e-9.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from a2c.cli import main
from a2c.run.pipeline import run_experiment

TOLERANCE = 1e-9


def score_cell(answers: Path, truthfulqa: Path, column: str, out: Path) -> float:
    """`a2c score`'s mean acc under rouge1 of one column of the file."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["score", str(answers), "--path", str(truthfulqa), "-s", "rouge1", "--answer-column",
                     column, "--out", str(out)])
    if code != 0:
        raise SystemExit(f"a2c score failed on {answers} ({column})")
    return float(json.loads((out / "summary.json").read_text())["similarities"]["rouge1"]["acc"])


def run_cell(answers: Path, truthfulqa: Path, work: Path) -> tuple[str, float]:
    """The source and its R1-A before A2C of a samples run over the file."""
    config = {"name": answers.stem[:60], "output": str(work / "run"),
              "dataset": {"name": "samples", "path": str(answers),
                          "sample_columns": {"sample": "sampled_outputs",
                                             "paraphrase": "question-paraphrase"},
                          "references": {"name": "truthfulqa", "path": str(truthfulqa), "unknown": "skip"}},
              "judges": ["exact"], "accuracy": {"similarities": ["rouge1"]}}
    path = work / "samples.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = run_experiment(path, progress=False)
    calls = sum(s.generated + s.cached for s in result.stages.values())
    if calls:
        raise SystemExit(f"{answers}: the samples run made {calls} model calls")
    summary = json.loads((result.folder / "summary.json").read_text())
    cells = [(g["method"], g["accuracy"]["rouge1"]["acc"]["mean"]) for g in summary["groups"]
             if g["phase"] == "before" and g["outputs"]]
    if len(cells) != 1:
        raise SystemExit(f"{answers}: expected one source with answers, got {cells}")
    return cells[0]


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("truthfulqa", type=lambda p: Path(p).resolve(), help="TruthfulQA.csv")
    parser.add_argument("files", type=Path, nargs="+", help="the authors' generate-results CSVs")
    args = parser.parse_args(argv)
    worst = 0.0
    print(f"{'file':<70} {'source':<12} {'score':>8} {'run':>8} {'diff':>9} {'after':>8} {'s':>5}")
    for answers in (f.resolve() for f in args.files):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            started = time.perf_counter()
            scored = score_cell(answers, args.truthfulqa, "sampled_outputs", work / "before")
            after = score_cell(answers, args.truthfulqa, "consistent_outputs", work / "after")
            source, ran = run_cell(answers, args.truthfulqa, work)
            seconds = time.perf_counter() - started
        worst = max(worst, abs(scored - ran))
        print(f"{answers.name[:70]:<70} {source:<12} {scored:>8.4f} {ran:>8.4f} {ran - scored:>+9.1e} "
              f"{after:>8.4f} {seconds:>5.0f}")
    print(f"largest difference {worst:.1e} (tolerance {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main_())
