"""`accuracy.rule` in a run: a gold-answer set (no incorrect references) scored by token F1 through every
stage (scripted backend, milliseconds), the rule recorded in the run, and TruthfulQA's protocol refusing
such a set when the config loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import a2c
from a2c.common.errors import A2CError
from a2c.qa.config import AccuracyConfig
from a2c.qa.correctness.accuracy import accuracy_columns, check_references
from a2c.qa.data import QARecord
from a2c.qa.scoring import score_columns
from a2c.run.config_file import load_config

SCRIPT = "scripted:1|2|the Eiffel tower is in Paris|Rome\nMadrid|Which one?"
GOLD = [
    {"id": "eiffel", "text": "Where is the Eiffel Tower?", "right": "Paris; in Paris, France"},
    {"id": "spider", "text": "How many legs does a spider have?", "right": "eight; 8"},
    {"id": "sky", "text": "Why is the sky blue?"},
]


def _experiment(tmp: Path, accuracy: dict) -> Path:
    data = tmp / "gold.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in GOLD), encoding="utf-8")
    config = {"name": "gold", "output": str(tmp / "run"),
              "dataset": {"name": "file", "path": str(data),
                          "columns": {"question": "text", "correct": "right"}},
              "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
              "judges": ["exact", "rouge1"], "accuracy": accuracy}
    path = tmp / "gold.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_gold_answer_set_runs_under_token_f1_and_the_run_records_the_rule(tmp_path):
    result = a2c.run_experiment(_experiment(tmp_path, {"rule": {"name": "token_f1", "threshold": 0.3}}),
                                progress=False)
    by_id = {(r.id, r.source, r.phase): r for r in result.metrics}
    eiffel, sky = by_id[("eiffel", "paraphrase", "before")], by_id[("sky", "paraphrase", "before")]
    assert set(eiffel.accuracy) == {"token_f1"} and eiffel.n_accurate is not None
    assert sky.accuracy == {} and not sky.referenced
    summary = json.loads((result.folder / "summary.json").read_text())
    assert summary["similarities"] == ["token_f1"]
    assert summary["counts"]["questions_with_references"] == 2
    resolved = yaml.safe_load((result.folder / "config.yaml").read_text())
    assert resolved["accuracy"] == {"rule": {"name": "token_f1", "threshold": 0.3}, "similarities": []}
    # the per-set mean of acc is the share of the set's answers whose F1 reaches 0.3
    accuracy = load_config(result.folder / "config.yaml").accuracy  # type: ignore[attr-defined]
    record = QARecord("eiffel", "Where is the Eiffel Tower?", None, ("Paris", "in Paris, France"))
    assert accuracy_columns(accuracy.rule.name, accuracy.rule.options, [], ["Rome", "in Paris"],
                            [record, record])["token_f1"].acc.tolist() == [0.0, 1.0]
    assert "## Consistency as a signal of correctness" in (result.folder / "report.md").read_text()
    # another threshold: the metrics stage runs again (its key holds the rule); the answers' stage record
    # is the first run's (a rerun stage would write its own), so no answer was asked again
    first = json.loads((result.folder / "timings.json").read_text())["stages"]
    stricter = {"rule": {"name": "token_f1", "threshold": 0.9}}
    a2c.run_experiment(_experiment(tmp_path, stricter), progress=False)
    stages = json.loads((result.folder / "timings.json").read_text())["stages"]
    assert stages["metrics"]["why"] == "config changed: correctness_rule"
    assert stages["answers"] == first["answers"]


def test_truthfulqas_protocol_refuses_a_gold_answer_set_when_the_config_loads(tmp_path):
    with pytest.raises(A2CError, match="'eiffel' has gold answers but no incorrect references") as info:
        a2c.run_experiment(_experiment(tmp_path, {"similarities": ["rouge1"]}), progress=False)
    assert "accuracy.rule: token_f1" in (info.value.hint or "")


def test_the_default_rule_scores_as_the_protocol_did():
    record = QARecord("q", "Where?", "Paris", ("Paris",), ("London", "Rome"))
    answers, records = ["Paris.", "London", "I have no comment.", "Berlin"], [record] * 4
    expected = score_columns([("rouge1", {})], answers, records)["rouge1"]
    got = accuracy_columns("truthfulqa", {}, [("rouge1", {})], answers, records)["rouge1"]
    assert got.acc.tolist() == expected.acc.tolist() and got.diff.tolist() == expected.diff.tolist()
    # a threshold on diff moves the label only
    strict = accuracy_columns("truthfulqa", {"threshold": 0.5}, [("rouge1", {})], answers, records)["rouge1"]
    assert strict.diff.tolist() == expected.diff.tolist()
    assert strict.acc.tolist() == (expected.diff > 0.5).astype(float).tolist()


def test_check_references_only_binds_rules_that_compare_with_incorrect_ones():
    gold_only = [QARecord("g", "Q?", None, ("yes",))]
    check_references("token_f1", gold_only)
    check_references("truthfulqa", [QARecord("n", "Q?")])  # no references at all: left out of accuracy
    with pytest.raises(A2CError, match="question 'g'"):
        check_references("truthfulqa", gold_only)


@pytest.mark.parametrize(("accuracy", "message"), [
    ({"rule": "token_f1", "similarities": ["rouge1"]}, "scores against the gold answers alone"),
    ({"rule": {"name": "truthfulqa", "similarity": "bleu"}}, "set by accuracy.similarities"),
    ({"similarities": []}, "at least 1 item"),
    ({"rule": "token_f"}, "Did you mean 'token_f1'"),
    ({"rule": {"name": "rouge_l", "treshold": 0.4}}, "did you mean 'threshold'"),
])
def test_bad_accuracy_configs_fail_with_a_message(accuracy, message):
    with pytest.raises(ValueError, match=message):
        AccuracyConfig.model_validate(accuracy)


def test_the_rule_and_its_columns_round_trip_through_the_resolved_config():
    default = AccuracyConfig()
    assert default.columns == ["rouge1", "embedding"]
    assert default.model_dump(mode="json") == {"rule": "truthfulqa", "similarities": ["rouge1", "embedding"]}
    gold = AccuracyConfig.model_validate({"rule": "exact_match"})
    assert gold.columns == ["exact_match"] and gold.similarities == []
    assert AccuracyConfig.model_validate(gold.model_dump(mode="json")) == gold


def test_a_row_with_only_incorrect_references_is_still_refused():
    with pytest.raises(ValueError, match="incorrect references but no correct ones"):
        QARecord("x", "Q?", None, (), ("no",))
