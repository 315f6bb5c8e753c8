"""Contextual calibration of label probabilities (Zhao et al. 2021): the arithmetic by hand, the config
option, and a run on the scripted backend whose labels move away from the prompt's own bias."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from a2c.classification import ClassificationConfig
from a2c.classification.labeling import CalibrationError, calibrate, content_free_probabilities, read_label
from a2c.classification.perturbations import content_free_input
from a2c.classification.rows import LABELS
from a2c.llm import GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.base import Completion
from a2c.llm.scripted import spread_logprobs
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder
from a2c.settings.config import ConfigError

E, N, C = "entailment", "neutral", "contradiction"
WORDS = {E: E, N: N, C: C}
LABELS_3 = [E, N, C]


def test_calibrate_divides_by_the_content_free_probabilities_and_renormalises():
    # p = (0.5, 0.3, 0.2), p_cf = (0.6, 0.3, 0.1): p/p_cf = (5/6, 1, 2), total 23/6 → (5, 6, 12)/23
    q = calibrate({E: 0.5, N: 0.3, C: 0.2}, {E: 0.6, N: 0.3, C: 0.1})
    assert q == pytest.approx({E: 5 / 23, N: 6 / 23, C: 12 / 23})
    # a uniform p_cf changes nothing
    assert calibrate({E: 0.5, N: 0.3, C: 0.2}, dict.fromkeys(LABELS_3, 1 / 3)) == pytest.approx(
        {E: 0.5, N: 0.3, C: 0.2})
    with pytest.raises(ValueError, match="not positive"):
        calibrate({E: 0.5, N: 0.5}, {E: 1.0, N: 0.0})
    with pytest.raises(ValueError, match="labels differ"):
        calibrate({E: 0.5, N: 0.5}, {E: 0.5, C: 0.5})


def test_read_label_picks_the_calibrated_label_and_keeps_the_models_probabilities():
    top = {"ent": math.log(0.5), "neutral": math.log(0.3), "contra": math.log(0.2)}
    plain = read_label(Completion("entailment", logprobs=[top]), WORDS)
    calibrated = read_label(Completion("entailment", logprobs=[top]), WORDS, {E: 0.6, N: 0.3, C: 0.1})
    assert plain.label == E and calibrated.label == C  # 12/23 beats 5/23 (above)
    assert calibrated.probabilities == pytest.approx(plain.probabilities)
    assert calibrated.probabilities == pytest.approx({E: 0.5, N: 0.3, C: 0.2})
    # a label read from the text has no probabilities to weigh: left as it is
    assert read_label(Completion("entailment"), WORDS, {E: 0.6, N: 0.3, C: 0.1}).label == E


def _config(tmp: Path, model: str, **labeling) -> ClassificationConfig:
    return ClassificationConfig.model_validate({
        "name": "calibration", "dataset": {"name": "nli-quickstart", "labels": LABELS_3},
        "generator": {"backend": "scripted", "model": model, "cache": str(tmp / "cache.sqlite")},
        "labeling": labeling, "output": str(tmp / "run")})


def test_the_content_free_input_is_rendered_like_the_items(tmp_path):
    config = _config(tmp_path, "scripted")
    assert content_free_input("N/A", config) == "Premise: N/A\nHypothesis: N/A"
    single = config.model_copy(update={"dataset": config.dataset.model_copy(update={"input": "single"})})
    assert content_free_input("", single) == "Text: "


def _yaml(tmp: Path, text: str) -> Path:
    path = tmp / "exp.yaml"
    path.write_text("name: x\ntask: classification\n"
                    "dataset: {name: nli-quickstart, labels: [entailment, neutral, contradiction]}\n" + text)
    return path


@pytest.mark.parametrize(("text", "message"), [
    ("labeling:\n  calibration: contextual\n",
     "exp.yaml:5: labeling.calibration: Input should be 'none' or 'content_free'"),
    ("labeling: {calibration: content_free, logprobs: 0}\n", "set logprobs >= 1"),
    ("labeling: {calibration: content_free, content_free_inputs: []}\n", "at least 1 item"),
])
def test_bad_calibration_settings_fail_at_load(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_config(_yaml(tmp_path, text))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_calibration_is_off_by_default(tmp_path):
    assert load_config(_yaml(tmp_path, "")).labeling.calibration == "none"


def test_spread_logprobs_give_the_reply_the_most_mass_and_every_reply_some():
    request = GenerationRequest(messages=(Message("user", "Q?"),))
    top = spread_logprobs(request, "b", ["a", "b", "c"])
    assert set(top) == {"a", "b", "c"}
    assert sum(math.exp(v) for v in top.values()) == pytest.approx(1.0)
    assert max(top, key=top.__getitem__) == "b" and min(top.values()) > -math.inf


def test_content_free_needs_a_label_among_the_logprobs(tmp_path):
    generator = build_generator(GeneratorConfig(backend="scripted", model="scripted:no idea", cache=None))
    with pytest.raises(CalibrationError, match="no label word"):
        content_free_probabilities(generator, ["Premise: N/A\nHypothesis: N/A"], WORDS, template="nli_label",
                                   max_tokens=4, logprobs=10)
    # the plain scripted model gives its reply all the mass: the other labels get none
    one_hot = build_generator(GeneratorConfig(backend="scripted", model="scripted:entailment", cache=None))
    with pytest.raises(CalibrationError, match="no probability"):
        content_free_probabilities(one_hot, ["N/A"], WORDS, template="nli_label", max_tokens=4, logprobs=10)


def test_a_calibrated_run_moves_labels_away_from_the_prompts_bias(tmp_path):
    model = "scripted-spread:entailment|neutral|contradiction"
    plain = run_experiment(_config(tmp_path, model), progress=False)
    plain_rows = RunFolder(tmp_path / "run").read_rows(LABELS)
    result = run_experiment(_config(tmp_path, model, calibration="content_free"), progress=False)
    rows = RunFolder(tmp_path / "run").read_rows(LABELS)
    # one extra request (the one content-free input); every item's reply comes from the request cache
    assert plain.stages["label"].generated > 1 and result.stages["label"].generated == 1
    cf = rows[0].content_free
    assert cf is not None and sum(cf.values()) == pytest.approx(1.0)
    favourite = max(cf, key=cf.__getitem__)
    changed = 0
    for before, after in zip(plain_rows, rows, strict=True):
        assert before.key == after.key and before.content_free is None and after.content_free == cf
        assert after.probabilities == before.probabilities  # the model's own, unchanged
        weighed = calibrate(after.probabilities, cf)
        assert after.label == max(weighed, key=weighed.__getitem__)
        if after.label != before.label:
            changed += 1
            # dividing by p_cf hurts the prompt's favourite most: no label moves to it
            assert after.label != favourite
    assert changed > 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    before_counts = {label: sum(r.label == label for r in plain_rows) for label in LABELS_3}
    assert summary["label_counts"][favourite] < before_counts[favourite]
    assert summary["content_free"] == pytest.approx(cf)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Calibration: contextual" in report and "Labels given" in report
    # switching it off again reuses the uncalibrated labels' cache and gives them back
    run_experiment(_config(tmp_path, model), progress=False)
    assert [r.label for r in RunFolder(tmp_path / "run").read_rows(LABELS)] == [r.label for r in plain_rows]
