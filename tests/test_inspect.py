"""a2c inside inspect_ai: `inspect eval a2c/truthfulqa_a2c` on the embedded SmolLM2 behind the tests'
llama.cpp server, found through the `inspect_ai` entry point; the log is read back with inspect's API."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from a2c.qa.data.truthfulqa import load_truthfulqa_csv
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.scoring import score_answers
from tests.conftest import free_port
from tests.truthfulqa import TRUTHFULQA as CSV

pytest.importorskip("inspect_ai", reason="inspect-ai not installed (make setup)")

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from a2c.data.errors import DatasetError
from a2c.inspect import consistency, truthfulqa_a2c

ROOT = Path(__file__).resolve().parents[1]


def entry_point_path(folder: Path) -> str:
    """Where the package's `inspect_ai` entry point is installed (`pip install -e .`), nothing; in a
    checkout whose environment holds another a2c, a dist-info declaring it as pyproject.toml does, for
    PYTHONPATH: `inspect eval` resolves `a2c/...` through that entry point either way."""
    if any(ep.name == "a2c" for ep in entry_points(group="inspect_ai")):
        return ""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    info = folder / "a2c_inspect_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: a2c-inspect-entry\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return str(folder)


@pytest.mark.slow
def test_inspect_eval_of_truthfulqa_a2c_logs_candidates_choice_and_consistency(llama_server, tmp_path):
    logs = tmp_path / "logs"
    # not run from the checkout, and the checkout not put on the path: inspect names an extension's objects
    # `a2c/...` only when importlib.metadata finds a2c's installed (editable) distribution, and the
    # `a2c.egg-info` that `pip install -e .` leaves in a checkout, seen first, would hide it
    paths = [os.environ.get("PYTHONPATH", ""), entry_point_path(tmp_path / "ep")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p),
           "LLAMACPP_BASE_URL": llama_server.base_url, "LLAMACPP_API_KEY": "none"}
    command = [sys.executable, "-m", "inspect_ai", "eval", "a2c/truthfulqa_a2c",
               "--model", "openai-api/llamacpp/SmolLM2-135M-Instruct", "--limit", "2", "--log-dir", str(logs),
               "--display", "plain", "-T", f"csv={CSV}", "-T", "techniques=[synonyms]",
               "-T", "temperatures=[0.5]", "-T", "short_max_tokens=8", "-T", "long_max_tokens=16",
               "-T", "paraphrase_max_tokens=24"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]

    log = read_eval_log(list_eval_logs(str(logs))[0])
    assert log.status == "success" and log.eval.task == "a2c/truthfulqa_a2c"
    assert log.samples is not None and len(log.samples) == 2
    records = {r.id: r for r in load_truthfulqa_csv(CSV)}
    for sample in log.samples:
        proof = sample.metadata["a2c"]
        candidates = proof["candidates"]
        assert candidates and {c["source"] for c in candidates} <= {"paraphrase", "temperature"}
        assert all(c["answer"] for c in candidates if c["source"] == "temperature")
        assert proof["choices"] and all(c["reply"] is not None for c in proof["choices"])
        # the output is the chosen answer: one of the candidates, or the rank prompt's "don't know" option
        assert sample.output.completion == proof["answer"]
        assert proof["answer"] in {text for c in candidates for text in (c["answer"], c["answer"].strip())} \
            | {DEFAULT_IDK_TEXT}
        assert set(proof["agreement"]["rouge1"]) == {"paraphrase", "temperature"}
        assert sample.scores is not None
        value = sample.scores["consistency"].value
        assert isinstance(value, dict) and set(value) == {"cons_sem", "entropy", "eigv", "deg"}
        assert 0.0 <= value["cons_sem"] <= 1.0 and math.isfinite(value["eigv"])
        # accuracy is a2c's own scoring of the chosen answer
        record = records[str(sample.id)]
        accuracy = sample.scores["truthfulqa_accuracy"].value
        expected = score_answers("rouge1", [proof["answer"]], [record])[0]
        assert isinstance(accuracy, dict)
        assert (accuracy["rouge1_max"], accuracy["rouge1_acc"]) == (expected.max_true, expected.acc)
        assert sample.scores["consistency"].metadata["correct"] == (expected.acc == 1.0)
    assert log.results is not None
    metrics = {(s.name, m) for s in log.results.scores for m in s.metrics}
    assert {("cons_sem", "mean"), ("cons_sem", "a2c/auroc"), ("cons_sem", "a2c/prr"), ("eigv", "a2c/auroc"),
            ("rouge1_acc", "mean"), ("bleu_max", "mean")} <= metrics
    assert log.stats.model_usage["openai-api/llamacpp/SmolLM2-135M-Instruct"].input_tokens > 0
    served = viewer_log(logs, env)
    assert served["samples"][0]["metadata"]["a2c"]["candidates"]
    assert set(served["samples"][0]["scores"]) == {"truthfulqa_accuracy", "consistency"}


def viewer_log(logs: Path, env: dict[str, str]) -> dict:
    """The log as `inspect view`'s own server hands it to its viewer."""
    port = free_port()
    view = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(logs),
                             "--host", "127.0.0.1", "--port", str(port)], env=env, cwd=logs,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/api"
        deadline = time.monotonic() + 180
        while True:
            try:
                files = httpx.get(f"{base}/log-files", timeout=5).json()["files"]
                break
            except httpx.TransportError:
                if view.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        name = quote(files[0]["name"], safe="")
        served: dict = httpx.get(f"{base}/logs/{name}", timeout=120).json()
        return served
    finally:
        view.kill()
        view.wait(30)


def test_a_missing_csv_is_refused_naming_the_file(tmp_path):
    with pytest.raises(DatasetError, match=r"nowhere\.csv"):
        truthfulqa_a2c(csv=str(tmp_path / "nowhere.csv"))


@solver
def answer_plainly() -> Solver:
    """Some other solver: an answer and no A2C evidence (no model call)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content(model="mockllm/model", content="yes")
        return state

    return solve


def test_consistency_without_the_a2c_solver_fails_the_sample_saying_why(tmp_path):
    task = Task(dataset=[Sample(input="Is water wet?", target="yes")], solver=answer_plainly(),
                scorer=consistency())
    log = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")[0]
    assert log.status == "error" and log.error is not None
    assert "ask_to_choose" in log.error.message
