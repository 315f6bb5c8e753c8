"""`a2c serve --calibration`: the app in process on the scripted backend (as tests/test_serve.py runs it),
a low-consistency question declined and a high one answered, and every way a calibration is refused."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2c.cli import main
from a2c.qa.calibration import Calibration, CalibrationError, read_calibration, write_calibration
from a2c.serve.app import build_state, create_app
from a2c.serve.config import ServeConfigError, answer_settings, build_serve_config, with_calibration
from tests.conftest import free_port
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
    (calibration(judges=[{"name": "ner"}], signal="NER Cons_sem"),
     "judges: the calibration's signal 'NER Cons_sem' reads judge 'ner', which these settings do not "
     "load (exact, rouge1)"),
    (calibration(judges=[{"name": "exact", "threshold": 0.3}]), "judges.exact: the calibration's run used"),
    (calibration(signal="-Entropy (Exact)", entropy_judge="exact"),
     "entropy_judge: the calibration's signal clusters by 'exact', these settings by 'rouge1'"),
])
def test_a_calibration_made_from_other_answers_is_refused_naming_the_mismatch(made, named):
    # the server judges by exact and ROUGE-1 and clusters by ROUGE-1
    config = build_serve_config({**SETTINGS, "judges": ["exact", "rouge1"], "entropy_judge": "rouge1"},
                                SCRIPTED, {})
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
    path = tmp_path / "c.json"
    write_calibration(calibration(), path)
    assert read_calibration(path) == calibration()


# -- a calibration file is read strictly ------------------------------------------------------------------

RISK_CONTROL = {"max_risk": 0.2, "delta": 0.1, "threshold": 0.6, "fit_questions": 20, "control_questions": 20,
                "answered": 10, "errors": 1, "thresholds_tested": 3}


def _file_data(**changes: Any) -> dict[str, Any]:
    """The JSON `write_calibration` writes for `calibration()`, with top-level keys replaced."""
    return {**json.loads(json.dumps(calibration().model_dump(mode="json"))), **changes}


def _without(key: str) -> dict[str, Any]:
    data = _file_data()
    del data[key]
    return data


def _map(**fields: Any) -> dict[str, Any]:
    return _file_data(map={"kind": "isotonic", "x": [0, 1], "y": [0, 1], "slope": 0, "intercept": 0,
                           **fields})


BAD_FILES = {
    "NaN": (_file_data(decline_below=math.nan), "decline_below: must be a finite number in [0, 1], got NaN"),
    "Infinity": (_file_data(decline_below=math.inf),
                 "decline_below: must be a finite number in [0, 1], got Infinity"),
    "-1": (_file_data(decline_below=-1), "decline_below: must be a finite number in [0, 1], got -1"),
    "2": (_file_data(decline_below=2), "decline_below: must be a finite number in [0, 1], got 2"),
    "unknown signal": (_file_data(signal="Exact Cons_semantic"),
                       "signal: 'Exact Cons_semantic' is not a signal that the listed judges (exact) "
                       "compute"),
    "a signal the server's judges do not compute": (
        _file_data(signal="R1-C Cons_sem", judges=[{"name": "rouge1"}]),
        "the calibration's signal 'R1-C Cons_sem' reads judge 'rouge1', which these settings do not load "
        "(exact)"),
    "inconsistent rule threshold": (
        _file_data(rule="risk-controlled", risk_control=RISK_CONTROL, decline_below=0.5),
        "decline_below: 0.5, but a risk-controlled rule declines below the threshold it tested, "
        "risk_control.threshold = 0.6"),
    "version true": (_file_data(version=True), "version: must be a whole number, got true"),
    "non-monotone map": (_map(y=[0.7, 0.2]),
                         "map: the knots' y must be non-decreasing (a monotone map), but y[1] = 0.2 follows "
                         "y[0] = 0.7"),
    "knot out of range": (_map(y=[0, 1.5]), "map.y[1]: must be a finite number in [0, 1], got 1.5"),
    "missing field": (_without("decline_below"), "decline_below: missing"),
}


def _serve_flags(tmp_path: Path) -> list[str]:
    serve_yaml = tmp_path / "serve.yaml"
    serve_yaml.write_text(json.dumps(SETTINGS))
    return ["serve", "--backend", "scripted", "--model", "scripted", "--config", str(serve_yaml)]


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize(("data", "message"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_calibration_file_stops_serve_before_it_listens(tmp_path, capsys, data, message):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))  # json writes NaN and Infinity as JavaScript does
    port = free_port()
    assert main([*_serve_flags(tmp_path), "--port", str(port), "--calibration", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("a2c: error: ") and message in err[0], err
    assert str(path) in err[0] and _port_is_free(port)


@pytest.mark.parametrize("case", ["NaN", "inconsistent rule threshold"])
def test_the_serve_command_refuses_a_bad_file_in_one_line_with_exit_2(tmp_path, case):
    """The real `python -m a2c serve` process: exit 2, one line on stderr, and it never says it listens."""
    data, message = BAD_FILES[case]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "a2c", *_serve_flags(tmp_path), "--port", str(free_port()),
                           "--calibration", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"a2c: error: {path}: {message}"]
    assert "http://" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_a_risk_controlled_file_whose_threshold_is_decline_below_is_served(tmp_path, capsys):
    """The good twin of the inconsistent rule: the same record with decline_below at its threshold."""
    made = _file_data(rule="risk-controlled", risk_control=RISK_CONTROL, decline_below=0.6)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(made))
    read = read_calibration(path)
    assert read.decline_below == 0.6 and read.risk_control is not None and read.declines(0.59)
    config = with_calibration(build_serve_config(SETTINGS, SCRIPTED, {}), read, None, "test")
    assert config.calibration == read


@pytest.mark.parametrize(("change", "message"), [
    ({"risk_control": RISK_CONTROL}, "risk_control: given, but the rule is 'min-confidence' (null)"),
    ({"rule": "risk-controlled"}, "risk_control: null, but the rule is 'risk-controlled'"),
    ({"decline_below": None}, "decline_below: null (decline everything) is a risk-controlled rule's outcome"),
    ({"method": "platt"}, "method: 'platt', but the map is 'isotonic'"),
    ({"units": 39}, "out_of_sample.units: 40, but units is 39"),
    ({"dropped": 3}, "run.questions: 40, but units + dropped is 43"),
    ({"entropy_judge": "exact"}, "entropy_judge: 'exact' given, but the signal 'Exact Cons_sem' is not the "
     "clustering entropy"),
    ({"signal": "-Entropy (Exact)"},
     "entropy_judge: null, but the signal '-Entropy (Exact)' is the clustering entropy"),
    ({"judges": [{"name": "exact"}, {"name": "rouge1"}]},
     "judges: the signal 'Exact Cons_sem' reads exact, but the file lists exact, rouge1"),
    ({"judges": [{"name": "exact", "threshold": "high"}]}, "judges: [0].threshold: "),
    ({"units": True}, "units: must be a whole number ≥ 1, got true"),
    ({"units": 40.0}, "units: must be a whole number ≥ 1, got 40.0"),
    ({"similarity": 1}, "similarity: Input should be a valid string, got 1"),
    ({"map": {"kind": "platt", "slope": -0.5, "intercept": 0}},
     "map.slope: must be a finite number ≥ 0, got -0.5"),
    ({"map": {"kind": "isotonic", "x": [0, 0], "y": [0, 1]}},
     "map: the knots' x must increase strictly, but x[1] = 0 follows x[0] = 0"),
    ({"signals_cv_aurc": {"Exact Cons_sem": -0.1}},
     'signals_cv_aurc["Exact Cons_sem"]: must be a finite number in [0, 1], got -0.1'),
])
def test_fields_that_disagree_or_are_mistyped_are_refused_by_name(tmp_path, change, message):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_file_data(**change)))
    with pytest.raises(CalibrationError) as caught:
        read_calibration(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "calibration.json"
    text = json.dumps(_file_data())
    path.write_text(text[:-1] + ', "decline_below": 0.1}')
    with pytest.raises(CalibrationError, match="key 'decline_below' is given twice"):
        read_calibration(path)


def test_the_signals_a_file_may_name_are_those_answers_get(tmp_path):
    """`computable_signals` (what a file's signal is checked against) lists exactly the signals `decide`
    computes on real candidates judged by the same judges."""
    from a2c.choose import AskToChoose
    from a2c.judges import JudgeSpec
    from a2c.qa.calibration import computable_signals
    from a2c.qa.decide import source_signals

    specs = [JudgeSpec.of("exact", cache=None), JudgeSpec.of("rouge1", cache=None)]
    wrapper = AskToChoose(scripted(), variation=answer_settings(SETTINGS, "").variation)
    (choice,) = wrapper.answer_many([QUESTIONS[0]], judges=specs)
    settings = wrapper.config.model_copy(update={"judges": specs})
    computed = source_signals(choice, "temperature", {s.name: s.build() for s in specs}, settings)
    assert set(computed) == set(computable_signals(["exact", "rouge1"], settings.entropy_judge_name))


# -- property tests ----------------------------------------------------------------------------------------

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
UNIT = st.floats(min_value=0.0, max_value=1.0)
NO_TMP_CHECK = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read(tmp_path: Path, data: dict[str, Any]) -> Calibration:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data))
    return read_calibration(path)


@NO_TMP_CHECK
@given(xs=st.lists(FINITE, min_size=1, max_size=12, unique=True), ys=st.lists(UNIT, min_size=12, max_size=12),
       probes=st.lists(FINITE, min_size=2, max_size=8))
def test_any_finite_monotone_isotonic_map_in_range_is_accepted(tmp_path, xs, ys, probes):
    knots = {"x": sorted(xs), "y": sorted(ys[:len(xs)])}
    read = _read(tmp_path, _map(**knots))
    assert (read.map.x, read.map.y) == (knots["x"], knots["y"])
    out = read.map.predict(sorted(probes))
    assert np.all(np.diff(out) >= 0) and np.all((out >= 0) & (out <= 1))


@NO_TMP_CHECK
@given(ys=st.lists(UNIT, min_size=2, max_size=10).filter(
    lambda ys: any(b < a for a, b in itertools.pairwise(ys))))
def test_any_decreasing_isotonic_map_is_refused(tmp_path, ys):
    with pytest.raises(CalibrationError, match=r"map: the knots' y must be non-decreasing"):
        _read(tmp_path, _map(x=list(range(len(ys))), y=ys))


@NO_TMP_CHECK
@given(slope=st.floats(min_value=0, max_value=1e3), intercept=FINITE, probes=st.lists(FINITE, min_size=2))
def test_any_platt_map_with_a_finite_slope_of_zero_or_more_is_accepted(tmp_path, slope, intercept, probes):
    read = _read(tmp_path, _file_data(method="platt", map={"kind": "platt", "slope": slope,
                                                            "intercept": intercept}))
    out = read.map.predict(sorted(probes))
    assert np.all(np.diff(out) >= 0) and np.all((out >= 0) & (out <= 1))


@NO_TMP_CHECK
@given(threshold=st.floats(allow_nan=False, allow_infinity=False))
def test_decline_below_is_taken_exactly_when_it_is_a_confidence(tmp_path, threshold):
    data = _file_data(decline_below=threshold)
    if 0 <= threshold <= 1:
        assert _read(tmp_path, data).decline_below == threshold
    else:
        with pytest.raises(CalibrationError, match=r"decline_below: must be a finite number in \[0, 1\]"):
            _read(tmp_path, data)


def _numbers(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where every number of a JSON value is (bools are not numbers here)."""
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in _numbers(v, (*where, k))]
    if isinstance(value, list):
        return [w for i, v in enumerate(value) for w in _numbers(v, (*where, i))]
    return [where] if isinstance(value, int | float) and not isinstance(value, bool) else []


def _field(where: tuple[Any, ...]) -> str:
    """A place as the error names it: `map.y[1]`, `out_of_sample.coverage_at_risk["0.1"].low`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if p.isidentifier() else f"[{json.dumps(p)}]"
                   for p in where).lstrip(".")


GOOD = _file_data(rule="risk-controlled", risk_control=RISK_CONTROL, decline_below=0.6,
                  out_of_sample={**_file_data()["out_of_sample"],
                                 "coverage_at_risk": {"0.1": {"value": 0.2, "low": 0.1, "high": 0.3}}})
PLACES = [w for w in _numbers(GOOD) if w[0] != "version"]  # (version is read before the rest)


@NO_TMP_CHECK
@given(where=st.sampled_from(PLACES), bad=st.sampled_from([math.nan, math.inf, -math.inf]))
def test_any_non_finite_number_anywhere_is_refused_naming_its_place(tmp_path, where, bad):
    data = json.loads(json.dumps(GOOD))
    holder = data
    for part in where[:-1]:
        holder = holder[part]
    holder[where[-1]] = bad
    spelled = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(bad)]
    with pytest.raises(CalibrationError) as caught:
        _read(tmp_path, data)
    message = str(caught.value)
    field = _field(where)
    assert f": {field}: must be a " in message and message.endswith(f", got {spelled}"), message


def test_the_good_file_has_numbers_in_every_part():
    """The property above reaches the typed fields and the free-form run settings alike."""
    assert {w[0] for w in PLACES} >= {"map", "decline_below", "risk_control", "out_of_sample", "units", "run"}
    assert any(w[:2] == ("run", "settings") for w in PLACES)


def test_a_calibration_object_whose_signal_the_judges_do_not_compute_is_refused():
    """A `Calibration` changed past validation (model_copy) still cannot make a server decline everything:
    the server checks the signal against its own judges."""
    changed = calibration().model_copy(update={"signal": "Exact Cons_semantic"})
    config = build_serve_config(SETTINGS, SCRIPTED, {})
    with pytest.raises(ServeConfigError, match=r"signal: the calibration's signal 'Exact Cons_semantic' "
                       r"is not one these settings' judges \(exact\) compute"):
        with_calibration(config, changed, None, "--calibration x.json")
