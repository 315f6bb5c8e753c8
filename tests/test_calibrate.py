"""`a2c calibrate` on a finished scripted run, the calibration file, and answer-or-decline in the wrapper
and `a2c probe`: the served signal is the run's own signal for the same question."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from a2c.choose import AskToChoose, CalibrationMismatch
from a2c.cli import main
from a2c.judges import JudgeSpec
from a2c.llm import build_generator
from a2c.qa.calibration import CalibrationError, no_usable_signal, read_calibration, run_units
from a2c.qa.config import ExperimentConfig
from a2c.qa.task import load_data
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder
from tests.truthfulqa import TRUTHFULQA

# answers that sometimes match TruthfulQA's references (so accuracy varies), option numbers for the ranks
SCRIPT = "scripted:1|2|Nothing happens|I have no comment|The sun|Which one?"


def _config(tmp: Path, **changes: Any) -> ExperimentConfig:
    return ExperimentConfig.model_validate({
        "name": "calibrate", "limit": 60, "output": str(tmp / "run"),
        "dataset": {"name": "truthfulqa", "path": str(TRUTHFULQA)},
        "generator": {"backend": "scripted", "model": SCRIPT, "cache": str(tmp / "cache.sqlite")},
        "judges": ["exact", "rouge1"], "accuracy": {"similarities": ["rouge1"]}, **changes})


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ExperimentConfig]:
    tmp = tmp_path_factory.mktemp("calibrate")
    config = _config(tmp)
    run_experiment(config, progress=False)
    return tmp / "run", config


def _listed(config: ExperimentConfig) -> dict[str, Any]:
    return {"judges": [j.name for j in config.judges], "entropy_judge": config.entropy_judge_name,
            "similarities": [s.name for s in config.accuracy.similarities]}


def _calibrate(run_dir: Path, *flags: str) -> int:
    return main(["calibrate", str(run_dir), "--source", "temperature", "--bootstrap", "50", *flags])


def test_calibrate_writes_a_versioned_file_with_out_of_sample_figures(run, tmp_path, capsys):
    run_dir, _ = run
    out = tmp_path / "cal.json"
    assert _calibrate(run_dir, "-o", str(out)) == 0
    printed = capsys.readouterr().out
    assert "out of sample (5-fold cross-fitting" in printed and f"written: {out}" in printed
    made = read_calibration(out)
    assert (made.format, made.version, made.source, made.similarity, made.method) == \
        ("a2c-calibration", 1, "temperature", "rouge1", "isotonic")
    assert made.signal == min(made.signals_cv_aurc, key=lambda s: (made.signals_cv_aurc[s], s))
    assert made.rule == "min-confidence" and made.decline_below == 0.5 and made.risk_control is None
    assert made.run.model == SCRIPT and len(made.run.digest) == 64 and made.run.questions == 60
    assert made.run.settings["variation"]["temperatures"] == [0.25, 0.5, 0.75, 1.0]
    oos = made.out_of_sample
    assert oos.units == made.units and set(oos.coverage_at_risk) == {"0.1", "0.2", "0.3"}
    assert oos.aurc.low is not None and oos.aurc.high is not None
    assert oos.aurc.low <= oos.aurc.value <= oos.aurc.high
    xs = np.linspace(-5, 5, 101)
    assert np.all(np.diff(made.map.predict(xs)) >= 0)  # monotone in the signal


def test_risk_control_and_platt_are_recorded(run, tmp_path, capsys):
    run_dir, _ = run
    out = tmp_path / "cal.json"
    assert _calibrate(run_dir, "-o", str(out), "--method", "platt", "--signal", "R1-C Cons_sem",
                      "--max-risk", "0.9", "--delta", "0.2") == 0
    made = read_calibration(out)
    control = made.risk_control
    assert made.method == "platt" and made.signal == "R1-C Cons_sem" and made.rule == "risk-controlled"
    assert control is not None and (control.max_risk, control.delta) == (0.9, 0.2)
    assert control.fit_questions + control.control_questions == made.units
    # accuracy is ~1/3, so a 0.9 risk bound passes: answers are given, within the bound on the held-out half
    assert control.threshold is not None and made.decline_below == control.threshold
    assert control.answered > 0 and control.errors / control.answered <= 0.9
    assert "risk control (max risk 0.9, delta 0.2): decline below" in capsys.readouterr().out


def test_the_default_output_is_the_run_folder_and_a_rerun_still_reuses_it(run, capsys):
    run_dir, config = run
    assert _calibrate(run_dir) == 0
    assert (run_dir / "calibration.json").is_file()
    result = run_experiment(config, progress=False)  # the file is a2c's: no "foreign files" refusal
    assert all(stats.skipped for stats in result.stages.values())


@pytest.mark.parametrize(("flags", "message"), [
    (["--signal", "nope"], "unknown signal 'nope'; this run has: Exact Cons_sem, R1-C Cons_sem"),
    (["--similarity", "bleu"], "similarity 'bleu' did not score this run (it scored rouge1)"),
    (["--max-risk", "1.5"], "must be below 1"),
    (["--min-confidence", "2"], "a confidence is at most 1"),
])
def test_bad_calibrate_flags_are_one_line(run, capsys, flags, message):
    run_dir, _ = run
    code: object
    try:
        code = _calibrate(run_dir, *flags)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code
    assert code == 2 and message in capsys.readouterr().err


def test_a_folder_without_a_run_or_labels_is_refused(tmp_path, capsys):
    assert main(["calibrate", str(tmp_path)]) == 2
    assert "holds no a2c run" in capsys.readouterr().err
    config = _config(tmp_path, dataset={"name": "quickstart"}, limit=3, selection=[])
    run_experiment(config, progress=False)
    with pytest.raises(CalibrationError, match="holds no A2C answers"):
        run_units(RunFolder(tmp_path / "run"), "temperature", "rouge1", **_listed(config))


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not JSON"),
    ('{"format": "lm-polygraph", "version": 1}', "not an a2c calibration file"),
    ('[1, 2]', "not an a2c calibration file"),
    ('{"format": "a2c-calibration", "version": 7}', "calibration version 7 is newer than this a2c reads"),
    ('{"format": "a2c-calibration", "version": 1, "signal": "x"}', "calibration.json: judges: missing"),
])
def test_a_damaged_or_foreign_calibration_is_one_line_exit_2(tmp_path, capsys, text, message):
    bad = tmp_path / "calibration.json"
    bad.write_text(text)
    assert main(["probe", "What is it?", "--backend", "scripted", "--judge", "exact", "--no-cache",
                 "--no-progress", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("a2c: error: ") and message in err[0]
    assert main(["serve", "--backend", "scripted", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    with pytest.raises(CalibrationError, match=message):
        read_calibration(bad)


def test_the_wrapper_scores_a_question_as_the_run_did_and_decides(run, tmp_path):
    run_dir, config = run
    for signal in ("R1-C Cons_sem", "-U_EigV (R1-C)", "Cons_lex", "-Entropy (Exact)"):
        out = tmp_path / "cal.json"
        assert _calibrate(run_dir, "-o", str(out), "--signal", signal, "--min-confidence", "0.33") == 0
        made = read_calibration(out)
        wrapper = AskToChoose(build_generator(config.generator), variation=config.variation,
                              a2c=config.ask_to_choose,
                              seed=config.seed, calibration=out)
        records = load_data(config)[:6]
        units = run_units(RunFolder(run_dir), "temperature", "rouge1", **_listed(config))
        row = {qid: k for k, qid in enumerate(units.ids)}
        for record, choice in zip(records, wrapper.answer_many([r.question for r in records]), strict=True):
            decision = choice.decision
            assert decision is not None and decision.signal == signal and decision.score is not None
            assert choice.confidence is not None
            if record.id in row:  # the very value the run's signal table has for this question
                assert decision.score == pytest.approx(units.signals[signal][row[record.id]])
            assert choice.confidence == pytest.approx(made.map.predict([decision.score])[0])
            assert choice.declined == (decision.answer is None or choice.confidence < 0.33)


def test_a_calibration_from_other_answers_is_refused_by_the_wrapper(run, tmp_path):
    run_dir, config = run
    out = tmp_path / "cal.json"
    assert _calibrate(run_dir, "-o", str(out), "--signal", "R1-C Cons_sem") == 0
    generator = build_generator(config.generator)
    with pytest.raises(CalibrationMismatch, match=r"variation.temperatures: the calibration's run used "
                       r"\[0.25, 0.5, 0.75, 1.0\], these settings use \[0.5\]"):
        AskToChoose(generator, variation=config.variation, temperatures=[0.5], calibration=out)
    other = build_generator(config.generator.model_copy(update={"model": "scripted:1|2"}))
    with pytest.raises(CalibrationMismatch, match="model: the calibration was fitted on answers of"):
        AskToChoose(other, variation=config.variation, calibration=out)
    wrapper = AskToChoose(generator, variation=config.variation, calibration=out)
    with pytest.raises(CalibrationMismatch, match=r"judges\.rouge1: the calibration's run used"):
        wrapper.answer_many(["Why?"], judges=[JudgeSpec.of("rouge1", threshold=0.9)])


def test_a_source_with_too_few_questions_is_said_undefined(tmp_path):
    """Eight questions: no signal of either source is defined on ten, so the section says why for each
    instead of a table."""
    config = _config(tmp_path, limit=8)
    run_experiment(config, progress=False)
    report = (tmp_path / "run" / "report.md").read_text()
    section = report[report.index("## Answer or decline"):report.index("## Counts")]
    assert "| signal | source |" not in section
    assert "- paraphrase: undefined (" in section and "- temperature: undefined (" in section


def test_probe_prints_the_verdict_and_writes_it_to_json(run, tmp_path, capsys):
    run_dir, _ = run  # the run's variation and A2C settings are the defaults, as probe's are
    out = tmp_path / "cal.json"
    assert _calibrate(run_dir, "-o", str(out), "--signal", "R1-C Cons_sem") == 0
    capsys.readouterr()
    assert main(["probe", "What happens if you crack your knuckles a lot?", "--backend", "scripted",
                 "--model", SCRIPT, "--judge", "rouge1", "--no-cache", "--no-progress", "--calibration",
                 str(out), "--json", str(tmp_path / "probe.json")]) == 0
    printed = capsys.readouterr().out
    assert "Answer or decline: R1-C Cons_sem of the temperature answers = " in printed
    decision = json.loads((tmp_path / "probe.json").read_text())["questions"][0]["decision"]
    assert decision["signal"] == "R1-C Cons_sem" and isinstance(decision["declined"], bool)
    assert ("DECLINED" in printed) == decision["declined"]


def test_the_report_and_the_viewer_show_answer_or_decline(run, tmp_path):
    from a2c.qa.risk_coverage import PLOT_RISK_COVERAGE, TABLE_DECLINE
    from a2c.view import write_view

    run_dir, _ = run
    report = (run_dir / "report.md").read_text()
    section = report[report.index("## Answer or decline"):report.index("## Counts")]
    assert "| signal | source | questions | risk answering all | AURC [95% CI] | ECE (calibrated) |" \
        in section
    assert "| R1-C Cons_sem | temperature | 60 |" in section  # questions whose rank replies named an option
    # most scripted paraphrases fail their checks: 11 of the 60 questions have a paraphrase A2C answer
    assert "| R1-C Cons_sem | paraphrase | 11 |" in section and "undefined (" not in section
    assert (run_dir / PLOT_RISK_COVERAGE.name).read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / TABLE_DECLINE.name).read_text().startswith("signal,source,questions,")
    html = write_view([run_dir], tmp_path / "view.html").read_text()
    assert "Answer or decline" in html and "risk vs coverage" in html


def test_a_file_of_a2c_calibrate_is_served_by_a2c_serve(run, tmp_path):
    """The round trip through the strict reader: what `a2c calibrate` writes (risk-controlled, so its
    threshold must be decline_below) starts the real `a2c serve`, which answers with a confidence."""
    import httpx

    from tests.serve_process import ServeProcess

    run_dir, config = run
    out = tmp_path / "cal.json"
    assert _calibrate(run_dir, "-o", str(out), "--max-risk", "0.9", "--delta", "0.2") == 0
    made = read_calibration(out)
    assert made.rule == "risk-controlled" and made.risk_control is not None
    assert made.decline_below == made.risk_control.threshold
    serve_yaml = tmp_path / "serve.yaml"  # the run's answer settings: its judges, default variation and a2c
    serve_yaml.write_text(json.dumps({"judges": [j.name for j in config.judges]}))
    server = ServeProcess(tmp_path, "serve", "--backend", "scripted", "--model", SCRIPT, "--config",
                          str(serve_yaml), "--calibration", str(out))
    try:
        server.wait_healthy(180)
        reply = httpx.post(f"{server.url}/v1/chat/completions", timeout=120, json={
            "model": SCRIPT, "messages": [{"role": "user", "content": "What happens if you crack your "
                                           "knuckles a lot?"}]})
    finally:
        server.stop()
    assert reply.status_code == 200, reply.text
    proof = reply.json()["a2c"]
    assert proof["calibrated"]["signal"] == made.signal and isinstance(proof["declined"], bool)
    assert f"answer or decline by {made.signal} of the temperature answers" in server.log.read_text()


def _help_example_signal(capsys: pytest.CaptureFixture[str]) -> str:
    """The signal name `a2c calibrate --help` gives as its example, read from the help text itself."""
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    found = re.search(r"--signal SIGNAL .*?\(e\.g\. '([^']+)'", text)
    assert found, text
    return found.group(1)


def test_the_help_example_signal_is_one_calibrate_accepts(tmp_path, capsys):
    name = _help_example_signal(capsys)
    config = _config(tmp_path, limit=20, judges=["embedding", "rouge1"])  # the default judge, and one more
    run_experiment(config, progress=False)
    out = tmp_path / "cal.json"
    assert _calibrate(tmp_path / "run", "--signal", name, "-o", str(out)) == 0, capsys.readouterr().err
    assert read_calibration(out).signal == name


def test_a_source_with_no_usable_signal_names_the_source_that_has_some(run, tmp_path, capsys):
    """The scripted model answers every paraphrase alike, so no paraphrase signal varies; its temperatures
    do: the error says so and the hint gives the flag, which then works."""
    run_dir, _ = run
    out = tmp_path / "cal.json"
    args = ["calibrate", str(run_dir), "--max-risk", "0.2", "--delta", "0.1", "--bootstrap", "50",
            "-o", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("a2c: error: no signal of source 'paraphrase'"), err
    assert "source 'temperature' has " in err[0] and "R1-C Cons_sem" in err[0], err
    assert err[1] == "hint: try --source temperature"
    assert not out.exists()
    assert main([*args, "--source", "temperature"]) == 0
    assert read_calibration(out).source == "temperature"


def test_no_usable_signal_anywhere_suggests_no_source():
    error = no_usable_signal("paraphrase", 3, {"temperature": []})
    assert "nor does any of the other sources'" in str(error) and "--source" not in (error.hint or "")
    one = no_usable_signal("temperature", 3, {"paraphrase": ["Cons_lex"]})
    assert "source 'paraphrase' has 1 that does: 'Cons_lex'" in str(one)
    assert one.hint == "try --source paraphrase"
