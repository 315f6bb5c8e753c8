"""`a2c serve --calibration`: the app in process on the scripted backend (as tests/test_serve.py runs it),
a low-consistency question declined and a high one answered, and every way a calibration is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from a2c.cli import main
from a2c.qa.calibration import Calibration, write_calibration
from a2c.serve.app import build_state, create_app
from a2c.serve.config import ServeConfigError, answer_settings, build_serve_config, with_calibration
from tests.test_serve import QUESTIONS, SCRIPTED, SETTINGS, against, chat, scripted

DECLINE = "I am not sure enough to answer that."


def calibration(settings: dict[str, Any] = SETTINGS, model: str = "scripted", **changes: Any) -> Calibration:
    """A calibration of `Exact Cons_sem` of the temperature answers: confidence = the signal (a map through
    (0, 0) and (1, 1)), declined below 0.5; made for answers with `settings` from `model`."""
    run_settings = answer_settings(settings, "").model_dump(
        mode="json", include={"seed", "variation", "judges", "entropy_judge", "ask_to_choose"})
    interval = {"value": 0.3, "low": None, "high": None}
    return Calibration.model_validate({
        "signal": "Exact Cons_sem", "judges": [{"name": "exact"}], "entropy_judge": None,
        "source": "temperature", "similarity": "rouge1", "method": "isotonic",
        "map": {"kind": "isotonic", "x": [0, 1], "y": [0, 1]}, "decline_below": 0.5, "rule": "min-confidence",
        "risk_control": None, "units": 40, "dropped": 0, "signals_cv_aurc": {"Exact Cons_sem": 0.3},
        "out_of_sample": {"units": 40, "accuracy": 0.5, "aurc": interval, "excess_aurc": interval,
                          "aurc_raw": interval, "ece": interval, "ece_raw": None, "ece_change": None,
                          "coverage_at_risk": {}, "folds": 5, "bins": 10, "bootstrap": 2, "seed": 0},
        "run": {"name": "t", "digest": "0" * 64, "model": model, "backend": "scripted", "questions": 40,
                "settings": run_settings}, **changes})


def calibrated_app(decline_text: str | None = DECLINE, made: Calibration | None = None):
    config = build_serve_config(SETTINGS, SCRIPTED, {"batch_window": 0.01})
    config = with_calibration(config, made or calibration(), decline_text, "test")
    return create_app(build_state(config, scripted(), api_key=None))


def test_a_calibration_written_before_the_rename_is_read_under_its_old_key():
    """A calibration.json of the previous release keeps its run's Ask-to-Choose settings under `a2c`: it is
    compared under that name (accepted when equal), and a changed setting there is still named."""
    made = calibration()
    old = dict(made.run.settings)
    old["a2c"] = old.pop("ask_to_choose")
    former = made.model_copy(update={"run": made.run.model_copy(update={"settings": old})})
    config = build_serve_config(SETTINGS, SCRIPTED, {"batch_window": 0.01})
    assert with_calibration(config, former, DECLINE, "test").calibration is former
    old["a2c"] = {**old["a2c"], "max_tokens": old["a2c"]["max_tokens"] + 1}
    with pytest.raises(ServeConfigError, match=r"ask_to_choose\.max_tokens"):
        with_calibration(config, former, DECLINE, "test")


def _ask(app, bodies: list[dict[str, Any]]) -> Any:
    async def scenario(client):
        return await asyncio.gather(*(client.post("/v1/chat/completions", json=b) for b in bodies))

    return against(app, scenario)


def test_a_low_consistency_question_is_declined_and_a_high_one_answered():
    responses = _ask(calibrated_app(), [chat(q) for q in QUESTIONS[:8]])
    seen = set()
    for response in responses:
        assert response.status_code == 200
        body = response.json()
        proof, choice = body["a2c"], body["choices"][0]
        cons_sem = proof["consistency"]["temperature"]["cons_sem"]["exact"]  # 0 or 1: two temperatures
        assert proof["calibrated"]["score"] == cons_sem and proof["confidence"] == pytest.approx(cons_sem)
        assert proof["declined"] == (cons_sem < 0.5 or proof["calibrated"]["answer"] is None)
        if proof["declined"]:
            assert choice["message"]["content"] == DECLINE and proof["selected_by"] == "decline_text"
        else:  # the answer the confidence is about: the temperature source's A2C answer
            assert choice["message"]["content"] == proof["calibrated"]["answer"]
            assert proof["selected_by"] == "calibrated_source"
        assert choice["finish_reason"] == "stop" and body["object"] == "chat.completion"
        seen.add((cons_sem, proof["declined"]))
    assert (0.0, True) in seen and (1.0, False) in seen  # both kinds among the eight questions


def test_without_a_decline_text_a_declined_answer_is_still_given_and_marked():
    body = _ask(calibrated_app(decline_text=None), [chat(q) for q in QUESTIONS[:8]])
    declined = [b.json() for b in body if b.json()["a2c"]["declined"]]
    assert declined and all(b["choices"][0]["message"]["content"] != DECLINE for b in declined)


def test_a_streamed_declined_answer_keeps_the_stream_shape():
    bodies = [chat(q, stream=True) for q in QUESTIONS[:8]]
    for response in _ask(calibrated_app(), bodies):
        events = [json.loads(line[6:]) for line in response.text.splitlines()
                  if line.startswith("data: {")]
        content = events[0]["choices"][0]["delta"]["content"]
        final = events[1]
        assert final["choices"][0]["finish_reason"] == "stop"
        assert (content == DECLINE) == final["a2c"]["declined"]


def test_a_request_may_not_change_what_the_calibration_was_fitted_on():
    changed = chat(QUESTIONS[0], a2c={"variation": {"temperatures": [0.2, 1.0]}})
    seeded = chat(QUESTIONS[0], seed=5)  # another seed draws other samples of the same distribution
    refused, answered = _ask(calibrated_app(), [changed, seeded])
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "a2c.variation.temperatures"
    assert "calibration" in error["message"] and "[0.2, 1.0]" in error["message"]
    assert answered.status_code == 200 and answered.json()["a2c"]["declined"] is not None


@pytest.mark.parametrize(("made", "named"), [
    (calibration(model="another-model"), "model: the calibration was fitted on answers of 'another-model'"),
    (calibration({**SETTINGS, "variation": {"techniques": ["synonyms", "word forms"],
                                            "temperatures": [0.7]}}),
     "variation.temperatures: the calibration's run used [0.7], these settings use [0.5, 1.0]"),
    (calibration(judges=[{"name": "rouge1"}], signal="R1-C Cons_sem"),
     "judges: the calibration's signal 'R1-C Cons_sem' reads judge 'rouge1', which these settings do not "
     "load (exact)"),
    (calibration(judges=[{"name": "exact", "threshold": 0.3}]), "judges.exact: the calibration's run used"),
    (calibration(source="paraphrase", entropy_judge="rouge1"),
     "entropy_judge: the calibration's signal clusters by 'rouge1', these settings by 'exact'"),
])
def test_a_calibration_made_from_other_answers_is_refused_naming_the_mismatch(made, named):
    config = build_serve_config(SETTINGS, SCRIPTED, {})
    with pytest.raises(ServeConfigError, match="the calibration was made from other answers") as caught:
        with_calibration(config, made, None, "--calibration x.json")
    assert named in str(caught.value)


def test_serve_refuses_a_mismatched_calibration_at_start_up_in_one_line(tmp_path, capsys):
    serve_yaml = tmp_path / "serve.yaml"
    serve_yaml.write_text(json.dumps(SETTINGS))
    made = tmp_path / "calibration.json"
    write_calibration(calibration(model="another-model"), made)
    flags = ["serve", "--backend", "scripted", "--model", "scripted", "--config", str(serve_yaml),
             "--port", "0"]
    assert main([*flags, "--calibration", str(made)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"a2c: error: --calibration {made}: the calibration was made "
                                               "from other answers than this server gives: model:")
    assert main([*flags, "--decline-text", "No."]) == 2
    assert "--decline-text needs --calibration" in capsys.readouterr().err
    write_calibration(calibration(), made)
    assert main([*flags, "--calibration", str(made), "--decline-text", " \u200b"]) == 2
    assert "--decline-text is empty" in capsys.readouterr().err


def test_the_calibration_flags_are_explained(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--calibration FILE calibration.json of `a2c calibrate`" in text
    assert "--decline-text TEXT with --calibration: answer this text instead of a declined answer" in text


def test_a_calibration_is_never_a_request_setting():
    # the `a2c` object's keys are the answer settings only: no calibration, threshold or decline text
    for key in ("calibration", "decline_text", "decline_below"):
        (response,) = _ask(calibrated_app(), [chat(QUESTIONS[0], a2c={key: 0.0})])
        assert response.status_code == 400 and response.json()["error"]["param"] == f"a2c.{key}"


def test_the_file_written_is_what_serve_reads(tmp_path: Path):
    from a2c.qa.calibration import read_calibration

    path = tmp_path / "c.json"
    write_calibration(calibration(), path)
    assert read_calibration(path) == calibration()
