"""lm-evaluation-harness's truthfulqa_gen (the repo's local-CSV task) run by lm-eval itself with
`local-completions` against `a2c serve` in front of the tests' llama.cpp server."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from a2c.common.errors import A2CError
from a2c.lmeval import TASKS
from a2c.qa.data.truthfulqa import load_truthfulqa_csv
from a2c.scoring import score_answers
from tests.serve_process import SMALL, ServeProcess
from tests.truthfulqa import TRUTHFULQA as CSV

pytest.importorskip("lm_eval", reason="lm-eval not installed (make setup)")

ROOT = Path(__file__).resolve().parents[1]


def lm_eval_run(base_url: str, output: Path, limit: int) -> dict:
    """`python -m lm_eval` on truthfulqa_gen_local; its results JSON."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, "-m", "lm_eval", "--model", "local-completions", "--model_args",
               f"model=SmolLM2-135M-Instruct,base_url={base_url}/completions,tokenizer_backend=none,"
               "num_concurrent=1,max_retries=1,timeout=900",
               "--include_path", str(TASKS), "--tasks", "truthfulqa_gen_local",
               "--metadata", json.dumps({"csv": str(CSV)}), "--limit", str(limit),
               "--output_path", str(output), "--log_samples"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return json.loads(next(output.rglob("results_*.json")).read_text())


@pytest.mark.slow
def test_lm_eval_truthfulqa_gen_through_a2c_serve(llama_server, tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text(yaml.safe_dump(SMALL))
    server = ServeProcess(tmp_path, "serve", "--upstream", llama_server.base_url,
                          "--model", "SmolLM2-135M-Instruct", "--config", str(config))
    try:
        server.wait_healthy()
        results = lm_eval_run(f"{server.url}/v1", tmp_path / "out", limit=1)
    finally:
        server.stop()
    scores = results["results"]["truthfulqa_gen_local"]
    assert {"rouge1_acc,none", "rouge1_max,none", "bleu_acc,none", "bleu_max,none"} <= set(scores)
    # the request went through A2C: a2c serve answered lm-eval's completions request
    assert "POST /v1/completions 200" in server.log.read_text()
    sample = json.loads(next((tmp_path / "out").rglob("samples_*.jsonl")).read_text().splitlines()[0])
    answer = sample["resps"][0][0]
    # lm-eval's score of the served answer is a2c's (ROUGE × 100: lm-eval's scale)
    record = load_truthfulqa_csv(CSV)[0]
    assert sample["doc"]["question"] == record.question
    ours = score_answers("rouge1", [answer], [record])[0]
    assert scores["rouge1_max,none"] == pytest.approx(100 * ours.max_true, abs=1e-9)
    assert scores["rouge1_acc,none"] == ours.acc


def _task_module():
    spec = importlib.util.spec_from_file_location("truthfulqa_local", TASKS / "truthfulqa_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_task_without_a_csv_says_how_to_give_one():
    with pytest.raises(A2CError, match="--metadata"):
        _task_module().load_csv(version=3.0)


def test_the_task_reads_the_csv_and_asks_lm_evals_own_prompt():
    module = _task_module()
    docs = module.process_docs_gen(module.load_csv(csv=str(CSV))["validation"])
    assert len(docs) == len(load_truthfulqa_csv(CSV))
    first = docs[0]
    assert "I have no comment." in first["correct_answers"]
    prompt = module.doc_to_text(first)
    assert prompt.endswith("\n\nQ: " + first["question"]) and prompt.startswith("Q: ")
    task = yaml.safe_load((TASKS / "truthfulqa_gen_local.yaml").read_text().replace("!function ", ""))
    assert task["task"] == "truthfulqa_gen_local" and task["process_results"].endswith("process_results_gen")
