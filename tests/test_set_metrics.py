"""The set-metric registry (`a2c.metrics.set_metrics`): a metric registered here, in the test, shows up in the
summary, the report, the signal table, the viewer's columns and `a2c compare` without editing any of them;
declarations are checked; the built-ins declare their direction; a run without new metrics writes what it
wrote before (tests/test_scale_results.py holds the bytes)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2c.metrics.set_metrics import SET_METRICS, AnswerSet, SetMetric, computed_metrics
from a2c.qa.rows import METRICS
from a2c.run.store import RunFolder
from a2c.view import compare_runs
from tests.view_runs import qa_run


def mean_words(answers: AnswerSet) -> float | None:
    """Mean words per answer: longer answers, lower is better (a test metric)."""
    return sum(len(t.split()) for t in answers.texts) / len(answers.texts) if answers.texts else None


def median(values) -> tuple[float | None, int]:
    defined = sorted(v for v in values if v is not None)
    skipped = sum(v is None for v in values)
    return (defined[len(defined) // 2] if defined else None), skipped


WORDS = SetMetric("Words", higher_is_better=False, compute=mean_words, aggregate=median)


def agreed_pairs(answers: AnswerSet) -> float | None:
    """Share of answer pairs the judge finds equivalent both ways (a per-judge test metric)."""
    eq = answers.equivalent
    n = 0 if eq is None else len(eq)
    if eq is None or n < 2:
        return None
    pairs = sum(bool(eq[i, j] and eq[j, i]) for i in range(n) for j in range(n) if i != j)
    return float(pairs / (n * (n - 1)))


AGREED = SetMetric("Agreed pairs", higher_is_better=True, per="judge", compute=agreed_pairs)


@pytest.fixture(scope="module")
def registered() -> Iterator[None]:
    """The two test metrics, registered the way a new metric is (one lazy line each), then removed."""
    SET_METRICS.register_lazy("words", f"{__name__}:WORDS")
    SET_METRICS.register_lazy("agreed_pairs", f"{__name__}:AGREED")
    yield
    for name in ("words", "agreed_pairs"):  # a registry has no public removal: nothing else should remove
        del SET_METRICS._entries[name]


@pytest.fixture(scope="module")
def runs(registered: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return (qa_run(tmp_path_factory.mktemp("m0"), limit=4, seed=0),
            qa_run(tmp_path_factory.mktemp("m1"), limit=4, seed=1))


def test_a_registered_metric_is_computed_and_summarised(runs):
    rows = RunFolder(runs[0]).read_rows(METRICS)
    row = rows[0]
    assert set(row.extra) == {"words", *(f"agreed_pairs.{j}" for j in row.judges)}
    assert row.extra["words"] is not None
    summary = json.loads((runs[0] / "summary.json").read_text(encoding="utf-8"))
    group = summary["groups"][0]
    part = [r for r in rows if (r.source, r.phase) == (group["method"], group["phase"])]
    values = sorted(r.extra["words"] for r in part)
    assert group["extra"]["words"] == {"mean": values[len(values) // 2], "skipped": 0}  # its own aggregate
    assert set(summary["before_after"][0]["extra"]) == set(row.extra)
    from a2c.qa.task import flatten

    assert flatten(row, {})["words"] == row.extra["words"]  # to_pandas() columns too


def test_it_shows_up_in_the_report_and_the_signal_table(runs):
    report = (runs[0] / "report.md").read_text(encoding="utf-8")
    header = next(line for line in report.splitlines() if line.startswith("| method | model |"))
    assert "Words (lower = more consistent)" in header and "Exact Agreed pairs" in header
    with (runs[0] / "table_signal.csv").open(encoding="utf-8") as handle:
        metrics = {r["metric"] for r in csv.DictReader(handle)}
    assert {"'-Words", "Exact Agreed pairs"} <= metrics  # oriented by its direction (CSV guards a '-')


def test_it_shows_up_in_the_comparison(runs):
    comparison = compare_runs(list(runs), labels=["a", "b"])
    assert {"Words", "Exact Agreed pairs"} <= set(comparison.table().header)
    assert comparison.cells[("paraphrase", "a", "extra.words")].before is not None


def test_it_is_a_signal_a_calibration_can_rank_by_and_a_server_computes(runs):
    """`a2c calibrate` offers it (with the judges it reads), and `a2c serve` computes it for a calibration
    made on it: on two temperature answers, Exact Agreed pairs is 1 when they match, else 0."""
    from a2c.qa.calibration import run_units
    from a2c.qa.config import ExperimentConfig
    from a2c.run.open_run import stored_run
    from tests.test_serve import QUESTIONS, chat
    from tests.test_serve_calibration import _ask, calibrated_app, calibration

    run = stored_run(runs[0])
    config = run.config
    assert isinstance(config, ExperimentConfig)
    units = run_units(run.folder, "paraphrase", "rouge1", judges=[j.name for j in config.judges],
                      entropy_judge=config.entropy_judge_name, similarities=["rouge1"])
    assert units.reads["-Words"] == () and units.reads["Exact Agreed pairs"] == ("exact",)
    assert (units.signals["-Words"] < 0).all()  # lower is better: offered as its negation
    made = calibration(signal="Exact Agreed pairs", signals_cv_aurc={"Exact Agreed pairs": 0.3})
    seen = set()
    for response in _ask(calibrated_app(made=made), [chat(q) for q in QUESTIONS[:8]]):
        proof = response.json()["a2c"]
        cons_sem = proof["consistency"]["temperature"]["cons_sem"]["exact"]
        assert proof["calibrated"]["score"] == cons_sem
        seen.add(cons_sem)
    assert seen == {0.0, 1.0}


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="exactly one of `compute`"):
        SetMetric("Both", higher_is_better=True, compute=mean_words, stored="cons_lex")
    with pytest.raises(ValueError, match="exactly one of `compute`"):
        SetMetric("Neither", higher_is_better=True)
    with pytest.raises(ValueError, match="per set or per judge"):
        SetMetric("Sim", higher_is_better=True, per="similarity", compute=mean_words)
    with pytest.raises(ValueError, match="registered twice"):
        SET_METRICS.register_lazy("cons_lex", f"{__name__}:WORDS")


def test_the_built_ins_declare_direction_and_are_not_recomputed():
    entropy = SET_METRICS.get("entropy")
    assert not entropy.higher_is_better and entropy.as_confidence(1.5) == -1.5
    assert entropy.signed_label == "-Entropy"
    assert SET_METRICS.get("cons_sem").higher_is_better and SET_METRICS.get("accuracy").per == "similarity"
    assert all(metric.stored for _, metric in SET_METRICS.items() if metric.compute is None)
    # the built-ins are computed where they always were: only a registered new metric is computed anew
    assert {name for name, _, _ in computed_metrics()} <= {"words", "agreed_pairs"}
