"""The experiment runner end to end on the embedded model: a real `a2c run` subprocess is killed in the
middle of a stage, rerun to the end, then run again from the cache into a fresh folder.

One small run (the quickstart config, 1 question, small backend batches so the kill lands between
batches) serves every test in this module.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from a2c.run.config_file import load_config

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def _generation_entries(cache: Path) -> int:
    if not cache.is_file():
        return 0
    with sqlite3.connect(cache, timeout=30) as conn:
        return conn.execute("SELECT count(*) FROM entries WHERE namespace = 'generation'").fetchone()[0]


def _a2c(*args: str) -> list[str]:
    return [sys.executable, "-m", "a2c", *args]


def _stage_stats(run: Path) -> dict[str, dict]:
    return json.loads((run / "timings.json").read_text())["stages"]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("pipeline")
    data = yaml.safe_load((ROOT / "experiments" / "quickstart.yaml").read_text())
    data.update(limit=1, output=str(root / "run"))
    data["generator"].update(cache=str(root / "cache.sqlite"), batch_size=4)
    config_path = root / "quickstart.yaml"
    config_path.write_text(yaml.safe_dump(data))
    cache, run = root / "cache.sqlite", root / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = _a2c("run", str(config_path), "--no-progress")

    # 1. start, and kill -9 once the answers stage has stored some (not all) of its generations
    first = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base, deadline = None, time.monotonic() + 900
    while time.monotonic() < deadline:
        if first.poll() is not None:
            pytest.fail(f"the run ended before it could be killed: {first.stderr.read().decode()[-2000:]}")
        if (run / "stages" / "variation.json").is_file():
            base = _generation_entries(cache) if base is None else base
            if _generation_entries(cache) > base:
                break
        time.sleep(0.2)
    first.kill()
    first.wait()
    killed_entries = _generation_entries(cache)
    assert not (run / "stages" / "answers.json").exists(), "killed too late: the answers stage had finished"

    # 2. rerun the same command to the end
    second = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    assert second.returncode == 0, second.stderr[-3000:]
    resumed_stats = _stage_stats(run)

    # 3. the same config into a fresh folder: every generation must come from the cache
    fresh = root / "fresh"
    third = subprocess.run(_a2c("run", str(config_path), "--no-progress", "--output", str(fresh)),
                           cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    assert third.returncode == 0, third.stderr[-3000:]
    return {"root": root, "run": run, "fresh": fresh, "config": config_path, "base": base,
            "killed_entries": killed_entries, "second": second, "resumed_stats": resumed_stats}


def test_resume_skips_finished_stages_and_repeats_no_model_call(resumed):
    stats = resumed["resumed_stats"]
    assert stats["variation"]["skipped"] is True
    answers = stats["answers"]
    assert answers["skipped"] is False
    # every generation stored before the kill was served from the cache, not generated again
    stored_in_answers = resumed["killed_entries"] - resumed["base"]
    assert stored_in_answers > 0
    assert answers["cached"] >= stored_in_answers
    assert answers["generated"] > 0  # the rest of the stage did run
    assert "total" in resumed["second"].stdout and "done earlier" in resumed["second"].stdout
    assert "variation: reused (same config slice and inputs)" in resumed["second"].stdout
    assert ("answers: runs (interrupted or failed before it finished last time; resumed: the request "
            "cache serves the model calls it made)") in resumed["second"].stdout


def test_rerun_from_cache_makes_no_model_calls_and_gives_the_same_outputs(resumed):
    run, fresh = resumed["run"], resumed["fresh"]
    stats = _stage_stats(fresh)
    assert sum(s["generated"] for s in stats.values()) == 0
    assert sum(s["cached"] for s in stats.values()) > 0
    for name in ("paraphrases.jsonl", "generations.jsonl", "choices.jsonl", "metrics.jsonl", "summary.json"):
        assert (run / name).read_text() == (fresh / name).read_text(), name


def test_run_folder_contents(resumed):
    run = resumed["run"]
    for name in ("config.yaml", "generations.jsonl", "matrices_before.npz", "matrices_after.npz",
                 "metrics.jsonl", "table_before_after.csv", "table_accurate_answers.csv", "report.md",
                 "accuracy_vs_consistency.png", "metric_correlations.png"):
        assert (run / name).is_file(), name
    assert load_config(run / "config.yaml") == load_config(resumed["config"])
    generations = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    temperature = [g for g in generations if g["source"] == "temperature"]
    assert sorted(g["temperature"] for g in temperature) == [0.25, 0.5, 0.75, 1.0]
    assert all(g["long"] and g["short"] is not None for g in generations)
    choices = [json.loads(line) for line in (run / "choices.jsonl").read_text().splitlines()]
    # one rank prompt per paraphrase context and per temperature (Algorithm 1); the contexts have nothing to
    # choose from when no paraphrase passed its checks (Y_c empty)
    answered = any(g["source"] == "paraphrase" for g in generations)
    assert sum(c["source"] == "paraphrase" for c in choices) == (4 if answered else 0)
    assert sum(c["source"] == "temperature" for c in choices) == 4
    for c in choices:
        assert (c["option"] is None) == (c["text"] is None) == (c["method"] == "unparsed")
    summary = json.loads((run / "summary.json").read_text())
    unparsed = sum(c["unparsed"] for c in summary["counts"]["choices"].values())
    assert unparsed == sum(c["option"] is None for c in choices)
    report = (run / "report.md").read_text()
    assert "Before → after Ask-to-Choose" in report and "in-context paraphrases" in report


def test_matrices_match_the_answer_sets(resumed):
    import numpy as np

    run = resumed["run"]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    before = np.load(run / "matrices_before.npz")
    for row in metrics:
        if row["phase"] != "before":
            continue
        m = before[f"embedding|{row['source']}|{row['id']}"]
        assert m.shape == (row["n"], row["n"])
        assert np.allclose(m, m.T) and np.all((m >= 0) & (m <= 1))
        if row["n"] >= 2:
            off = (m.sum() - np.trace(m)) / (row["n"] * (row["n"] - 1))
            assert row["judges"]["embedding"]["cons_sem"] == pytest.approx(off)


def test_cli_refuses_another_experiment_in_one_line(resumed):
    data = yaml.safe_load(resumed["config"].read_text())
    data["name"] = "renamed"
    changed = resumed["root"] / "changed.yaml"
    changed.write_text(yaml.safe_dump(data))
    result = subprocess.run(_a2c("run", str(changed)), cwd=resumed["root"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "holds a run of experiment 'quickstart', not 'renamed'" in result.stderr
    assert "--force" in result.stderr
    assert "Traceback" not in result.stderr


def test_report_rescores_a_run_from_its_stored_outputs(resumed, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(resumed["run"], copy)
    for name in ("metrics.jsonl", "summary.json", "report.md"):
        (copy / name).unlink()
    result = subprocess.run(_a2c("report", str(copy)), cwd=resumed["root"], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # recomputed from generations, choices and matrices alone: the same numbers the run wrote
    for name in ("metrics.jsonl", "summary.json"):
        assert (copy / name).read_text() == (resumed["run"] / name).read_text(), name
    assert "Before → after Ask-to-Choose" in (copy / "report.md").read_text()

    shutil.rmtree(copy / "stages")
    unjudged = subprocess.run(_a2c("report", str(copy)), cwd=resumed["root"], capture_output=True, text=True,
                              timeout=300)
    assert unjudged.returncode == 2
    assert "the run has not finished (stages not done: variation, answers" in unjudged.stderr
    assert "Traceback" not in unjudged.stderr
