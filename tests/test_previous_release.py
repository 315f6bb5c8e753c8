"""A run folder written by the previous release (a2c 0.1 before the wings: untyped summary.json, no
schema_version) is reused or refused, never a KeyError. The fixture folder was written by that release's
own code on the scripted backend (`tests/fixtures/previous_release/previous.yaml`); its PNGs were left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2c.qa.summary import OldSummaryError, QASummary
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment

FIXTURE = Path(__file__).parent / "fixtures" / "previous_release"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "old")
    return tmp_path / "old"


def _a2c(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a2c", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_the_fixture_is_an_old_summary():
    data = json.loads((FIXTURE / "run" / "summary.json").read_text())
    assert "schema_version" not in data and "unparsed_paraphrase" in data["counts"]


def test_report_without_rescoring_refuses_an_old_summary_in_one_line(old_run):
    done = _a2c("report", "run", "--no-rescore", cwd=old_run)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    # the previous release had no selection stage: its metrics must be recomputed before they are shown
    assert "the run has not finished (stages not done: selection)" in lines[0]
    assert "Traceback" not in done.stderr and "a2c report run" in done.stderr  # how to recompute it


def test_report_refuses_what_the_current_checks_would_make_differently(old_run):
    """The previous release kept paraphrases the current rule rejects, so its metrics are not recomputed
    from them: one line names the stage and why, and the hint is the command that remakes it."""
    done = _a2c("report", "run", cwd=old_run)
    assert done.returncode == 2, done.stderr
    assert "variation: config changed: paraphrase_checks" in done.stderr and "Traceback" not in done.stderr
    assert "a2c run" in done.stderr


def test_run_updates_an_old_folder_stage_by_stage(old_run):
    """The stages whose keys changed since that release re-run (the paraphrase rule, the summary schema,
    the new selection stage), from the run's own config; nothing is misread on the way."""
    config = load_config(old_run / "previous.yaml").model_copy(update={"output": str(old_run / "run")})
    result = run_experiment(config, progress=False)
    assert result.stages["variation"].why == "config changed: paraphrase_checks"
    assert result.stages["selection"].why == "not run before"
    assert "summary_schema" in result.stages["metrics"].why
    assert isinstance(result.summary, QASummary) and result.summary.counts.questions == 3


def test_reading_an_old_summary_directly_is_a_clear_error(old_run):
    from a2c.qa.task import TASK
    from a2c.run.store import RunFolder

    with pytest.raises(OldSummaryError, match="older a2c"):
        TASK.read_summary(RunFolder(old_run / "run"))


def test_a_summary_of_an_older_schema_is_refused_with_how_to_recompute_it(old_run):
    from a2c.qa.task import TASK
    from a2c.run.store import RunFolder

    config = load_config(old_run / "previous.yaml").model_copy(update={"output": str(old_run / "run")})
    run_experiment(config, progress=False)  # brings the folder up to date
    path = old_run / "run" / "summary.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema_version": 2}))  # as the typed summary of a2c before #21
    with pytest.raises(OldSummaryError, match=r"older a2c \(summary schema 2, this a2c reads 3\)") as caught:
        TASK.read_summary(RunFolder(old_run / "run"))
    assert "a2c report" in (caught.value.hint or "")


def test_the_old_a2c_stage_and_section_are_read_under_their_new_names(old_run):
    """0.1 named the Ask-to-Choose section and stage `a2c` (the package's name): its `stages/a2c.json`
    counts as the `ask_to_choose` stage's marker, its stored `a2c:` section is read without a warning, and
    the next run writes both under the new names."""
    import warnings

    from a2c.common.errors import RenamedKeyWarning
    from a2c.qa.stages import A2C
    from a2c.run.store import RunFolder

    assert A2C.marker_in(RunFolder(old_run / "run")) == "stages/a2c.json"
    done = _a2c("report", "run", "--no-rescore", cwd=old_run)
    assert "warning" not in done.stderr and "ask_to_choose" not in done.stderr  # the stage counts as done
    config = load_config(old_run / "previous.yaml").model_copy(update={"output": str(old_run / "run")})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedKeyWarning)  # the stored config is read silently
        result = run_experiment(config, progress=False)
    assert "ask_to_choose" in result.stages and "a2c" not in result.stages
    assert (old_run / "run" / "stages" / "ask_to_choose.json").exists()
    assert not (old_run / "run" / "stages" / "a2c.json").exists()
    stored = (old_run / "run" / "config.yaml").read_text(encoding="utf-8")
    assert "\nask_to_choose:" in stored and "\na2c:" not in stored


def test_a_config_with_the_old_section_runs_with_one_warning_line(old_run):
    (old_run / "old.yaml").write_text((old_run / "previous.yaml").read_text(encoding="utf-8")
                                      + "a2c: {max_tokens: 4}\n", encoding="utf-8")
    done = _a2c("run", "old.yaml", cwd=old_run)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warned == ["a2c: warning: config key `a2c:` is deprecated, write `ask_to_choose:` (read as it)"]
    assert load_config(old_run / "run" / "config.yaml", paths_from_file=False).ask_to_choose.max_tokens == 4


def test_a_folder_naming_both_sections_is_refused_in_one_line(old_run):
    stored = old_run / "run" / "config.yaml"
    both = stored.read_text(encoding="utf-8") + "ask_to_choose: {enabled: true}\n"
    stored.write_text(both, encoding="utf-8")
    done = _a2c("report", "run", cwd=old_run)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("a2c: error: ") and "a2c and ask_to_choose are both given" in first
