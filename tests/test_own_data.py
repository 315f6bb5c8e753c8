"""Your own questions end to end: a dataset without references, and one where only some questions have
them, through every stage (scripted backend, milliseconds), the report, `a2c.run_experiment` and its
typed rows; then one small real run on the embedded model."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml

import a2c
from a2c.qa.rows import MetricRow
from a2c.run.pipeline import PandasMissingError

SCRIPT = "scripted:1|2|Paris|Rome\nMadrid|Which one?"
QUESTIONS = [
    {"id": "eiffel", "text": "Where is the Eiffel Tower?", "right": "Paris", "wrong": "Rome; Madrid"},
    {"id": "spider", "text": "How many legs does a spider have?"},
    {"id": "sky", "text": "Why is the sky blue?"},
]


COLUMNS = {"question": "text", "correct": "right", "incorrect": "wrong"}


def _experiment(tmp: Path, rows: list[dict], columns: dict | None = None, **changes: object) -> Path:
    data = tmp / "questions.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = {"name": "own", "output": str(tmp / "run"),
              "dataset": {"name": "file", "path": str(data),
                          "columns": columns or COLUMNS},
              "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
              "judges": ["exact", "rouge1"], "accuracy": {"similarities": ["rouge1"]}, **changes}
    path = tmp / "own.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _no_nan(path: Path) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{path.name} holds {constant}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_a_dataset_without_references_runs_every_stage_and_leaves_accuracy_out(tmp_path):
    rows = [{k: v for k, v in q.items() if k in ("id", "text")} for q in QUESTIONS]
    result = a2c.run_experiment(_experiment(tmp_path, rows, {"question": "text"}), progress=False)
    run = result.folder
    assert all(isinstance(r, MetricRow) for r in result.metrics) and len(result.metrics) == 3 * 2 * 2
    assert {r.id for r in result.metrics} == {"eiffel", "spider", "sky"}
    for row in result.metrics:
        assert row.n_accurate is None and row.accuracy == {} and not row.referenced
        assert row.judges["exact"].cons_sem_accurate is None
    assert any(r.judges["exact"].cons_sem is not None for r in result.metrics)  # consistency still scored
    assert (run / "choices.jsonl").read_text().strip()  # and A2C ran
    summary = _no_nan(run / "summary.json")
    assert summary["counts"]["questions_with_references"] == 0 and summary["signal"] == []
    header = (run / "table_before_after.csv").read_text().splitlines()[0]
    assert "R1-A" not in header and "Exact" in header
    assert (run / "table_accurate_answers.csv").read_text().count("\n") == 1  # header only
    report = (run / "report.md").read_text()
    assert "No question has reference answers, so there is no accuracy" in report
    assert "Undefined: no question has reference answers." in report and "0.000" not in report.split(
        "## Counts")[0].split("|---|")[0]
    for plot in ("accuracy_vs_consistency.png", "accuracy_vs_rejection.png", "metric_correlations.png"):
        assert (run / plot).read_bytes()[:4] == b"\x89PNG"
    frame = result.to_pandas()
    assert len(frame) == 12 and "rouge1_cons_sem" in frame.columns
    assert not {"rouge1_acc", "rouge1_max_true", "rouge1_diff"} & set(frame.columns)
    assert set(frame["question"]) == {q["text"] for q in QUESTIONS}


def test_partial_references_score_accuracy_on_those_and_say_how_many(tmp_path):
    result = a2c.run_experiment(_experiment(tmp_path, QUESTIONS), progress=False)
    by_id = {(r.id, r.source, r.phase): r for r in result.metrics}
    eiffel, spider = by_id[("eiffel", "paraphrase", "before")], by_id[("spider", "paraphrase", "before")]
    assert eiffel.referenced and eiffel.n_accurate is not None and set(eiffel.accuracy) == {"rouge1"}
    assert not spider.referenced and spider.accuracy == {}
    summary = _no_nan(result.folder / "summary.json")
    assert summary["counts"]["questions_with_references"] == 1
    # the means run over the one question with references only
    group = next(g for g in summary["groups"] if (g["method"], g["phase"]) == ("paraphrase", "before"))
    assert group["accuracy"]["rouge1"]["acc"]["mean"] == pytest.approx(eiffel.accuracy["rouge1"].acc)
    assert group["accuracy"]["rouge1"]["acc"]["skipped"] == 0
    # signal: one entry per metric, source and phase; each defined or saying why not
    metrics = {s["metric"] for s in summary["signal"]}
    # the paper's four, and the uncertainty measures of both judges (similarities, both lexical): four per
    # set and two per answer each
    judges = ("Exact", "R1-C")
    measures = {f"{m} ({j})" for m in ("-U_NumSet", "-U_EigV", "-U_Deg", "-U_Ecc") for j in judges}
    per_answer = {f"{m} ({j}, per answer)" for m in ("C_Deg", "C_Ecc") for j in judges}
    paper = {"Exact Cons_sem", "R1-C Cons_sem", "-Entropy (Exact)", "Cons_lex"}
    assert metrics == paper | measures | per_answer
    assert len(summary["signal"]) == (4 + 8 + 4) * 2 * 2
    assert {s["level"] for s in summary["signal"] if s["metric"] in per_answer} == {"answer"}
    for item in summary["signal"]:
        assert (item["auroc"] is None) == (item["undefined"] is not None)
    report = (result.folder / "report.md").read_text()
    assert "Accuracy is scored on the 1 of 3 questions that have reference answers" in report
    assert "## Consistency as a signal of correctness" in report
    signal_csv = (result.folder / "table_signal.csv").read_text()
    assert signal_csv.startswith("metric,method,phase,accurate / answers,sets,AUROC [95% CI],PRR [95% CI]")
    frame = result.to_pandas()
    referenced = frame[frame["id"] == "eiffel"]
    assert referenced["rouge1_acc"].notna().all()
    assert frame[frame["id"] != "eiffel"]["rouge1_acc"].isna().all()


def test_to_pandas_without_pandas_is_a_clear_error(tmp_path, monkeypatch):
    result = a2c.RunResult(tmp_path, {}, 0.0)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(PandasMissingError, match=r"pip install 'a2c\[data\]'"):
        result.to_pandas()
    assert result.records() == []


@pytest.mark.slow
def test_a_real_tiny_run_on_the_embedded_model_without_references(tmp_path):
    """Two questions, one with references, on SmolLM2-135M: two paraphrase techniques, two temperatures."""
    rows = [QUESTIONS[0], QUESTIONS[1]]
    path = _experiment(tmp_path, rows, limit=2, generator={"backend": "transformers", "cache": None},
                       variation={"techniques": ["synonyms", "conjunctions"], "temperatures": [0.5, 1.0],
                                  "paraphrase_max_tokens": 32, "long_max_tokens": 32, "short_max_tokens": 8})
    started = time.perf_counter()
    result = a2c.run_experiment(path, progress=False)
    seconds = time.perf_counter() - started
    print(f"real tiny run: {seconds:.1f} s, {result.totals().generated} model calls")
    spider = [r for r in result.metrics if r.id == "spider"]
    assert spider and all(r.accuracy == {} and r.n_accurate is None for r in spider)
    assert any(r.n >= 2 and r.judges["exact"].cons_sem is not None for r in spider)
    summary = _no_nan(result.folder / "summary.json")
    assert summary["counts"]["questions_with_references"] == 1
    assert (result.folder / "accuracy_vs_rejection.png").read_bytes()[:4] == b"\x89PNG"
