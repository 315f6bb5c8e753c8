"""a2c inside inspect_ai: `inspect eval a2c/truthfulqa_a2c` on the embedded SmolLM2 behind the tests'
llama.cpp server, found through the `inspect_ai` entry point; the log is read back with inspect's API."""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import yaml
from markdown_it import MarkdownIt

from a2c.qa.config import VariationConfig
from a2c.qa.data.truthfulqa import load_truthfulqa_csv
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.scoring import score_answers
from tests.conftest import free_port

pytest.importorskip("inspect_ai", reason="inspect-ai not installed (make setup)")

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from a2c.data.errors import DatasetError
from a2c.inspect import ask_to_choose, consistency, truthfulqa_a2c
from a2c.inspect.scorers import explanation, markdown_text
from a2c.inspect.solver import READABLE, readable

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "how-to" / "inspect.md"


def recipe() -> tuple[int, dict[str, str]]:
    """The `inspect eval` of docs/how-to/inspect.md's recipe: its `--limit` and its `-T` settings."""
    block = re.search(r"```bash\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    words = shlex.split(block.group(1).replace("\\\n", " "), comments=True)
    start = words.index("eval")
    command = words[start:words.index("--log-dir", start)]
    settings = dict(command[i + 1].split("=", 1) for i, w in enumerate(command) if w == "-T")
    return int(command[command.index("--limit") + 1]), settings


def shown_at_a_glance(metadata: dict) -> dict:
    """What inspect's viewer shows of a metadata record without a click: a string, number, boolean or null
    as it is; a nested object or list only as `Object(n)` / `Array(n)` (its RecordTree)."""
    return {k: v for k, v in metadata.items() if v is None or isinstance(v, str | int | float | bool)}


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
def test_the_recipe_logs_two_candidates_per_source_and_shows_them_with_finite_consistency(llama_server,
                                                                                        tmp_path):
    limit, settings = recipe()
    csv = ROOT / settings.pop("csv")  # the recipe runs from a clone: the committed slice
    assert csv.is_file()
    logs = tmp_path / "logs"
    # not run from the checkout, and the checkout not put on the path: inspect names an extension's objects
    # `a2c/...` only when importlib.metadata finds a2c's installed (editable) distribution, and the
    # `a2c.egg-info` that `pip install -e .` leaves in a checkout, seen first, would hide it
    paths = [os.environ.get("PYTHONPATH", ""), entry_point_path(tmp_path / "ep")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p),
           "LLAMACPP_BASE_URL": llama_server.base_url, "LLAMACPP_API_KEY": "none"}
    command = [sys.executable, "-m", "inspect_ai", "eval", "a2c/truthfulqa_a2c",
               "--model", "openai-api/llamacpp/SmolLM2-135M-Instruct", "--limit", str(limit),
               "--log-dir", str(logs), "--display", "plain", "-T", f"csv={csv}",
               *(arg for key, value in settings.items() for arg in ("-T", f"{key}={value}"))]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "undefined (NaN)" not in done.stdout + done.stderr  # the one-candidate warning

    log = read_eval_log(list_eval_logs(str(logs))[0])
    assert log.status == "success" and log.eval.task == "a2c/truthfulqa_a2c"
    assert log.samples is not None and len(log.samples) == limit == 2
    records = {r.id: r for r in load_truthfulqa_csv(str(csv))}
    for sample in log.samples:
        proof = sample.metadata["a2c"]
        candidates = proof["candidates"]
        by_source = {s: [c for c in candidates if c["source"] == s] for s in ("paraphrase", "temperature")}
        assert len(candidates) == sum(map(len, by_source.values())) >= 4
        assert all(len(found) >= 2 for found in by_source.values())
        assert all(c["answer"] for c in by_source["temperature"])
        assert proof["choices"] and all(c["reply"] is not None for c in proof["choices"])
        # the output is the chosen answer: one of the candidates, or the rank prompt's "don't know" option
        assert sample.output.completion == proof["answer"]
        assert proof["answer"] in {text for c in candidates for text in (c["answer"], c["answer"].strip())} \
            | {DEFAULT_IDK_TEXT}
        assert proof["dont_know"] == (proof["answer"] == DEFAULT_IDK_TEXT)
        agreement = proof["agreement"]["rouge1"]
        assert set(agreement) == {"paraphrase", "temperature"}
        assert all(math.isfinite(agreement[s]["cons_sem"]) for s in agreement)
        assert sample.scores is not None
        scored = sample.scores["consistency"]
        value = scored.value
        assert isinstance(value, dict) and set(value) == {"cons_sem", "entropy", "eigv", "deg"}
        assert all(math.isfinite(v) for v in value.values()), value
        assert 0.0 <= value["cons_sem"] <= 1.0
        # the viewer's Explanation: the numbers and every candidate, escaped
        text = scored.explanation or ""
        assert f"{len(candidates)} candidates" in text and "Cons_sem per source" in text
        assert "n/a" not in text
        assert all(markdown_text(c["answer"]) in text for c in candidates)
        assert scored.metadata is not None
        assert scored.metadata["paraphrase_candidates"] == len(by_source["paraphrase"])
        assert all(math.isfinite(scored.metadata[f"{s}_cons_sem"]) for s in by_source)
        # the sample's metadata: the headline values flat, readable without opening `a2c`
        glance = shown_at_a_glance(sample.metadata)
        assert glance[f"{READABLE}answer"] == proof["answer"]
        assert all(" ".join(c["answer"].split()) in glance[f"{READABLE}candidates"] for c in candidates)
        assert all(glance[f"{READABLE}cons_sem_rouge1_{s}"] == agreement[s]["cons_sem"] for s in agreement)
        # accuracy is a2c's own scoring of the chosen answer
        record = records[str(sample.id)]
        accuracy = sample.scores["truthfulqa_accuracy"].value
        expected = score_answers("rouge1", [proof["answer"]], [record])[0]
        assert isinstance(accuracy, dict)
        assert (accuracy["rouge1_max"], accuracy["rouge1_acc"]) == (expected.max_true, expected.acc)
        assert scored.metadata["correct"] == (expected.acc == 1.0)
    assert log.results is not None
    metrics = {(s.name, m) for s in log.results.scores for m in s.metrics}
    assert {("cons_sem", "mean"), ("cons_sem", "a2c/auroc"), ("cons_sem", "a2c/prr"), ("eigv", "a2c/auroc"),
            ("rouge1_acc", "mean"), ("bleu_max", "mean")} <= metrics
    assert log.stats.model_usage["openai-api/llamacpp/SmolLM2-135M-Instruct"].input_tokens > 0
    served = viewer_log(logs, env)["samples"][0]
    assert served["metadata"]["a2c"]["candidates"]
    assert shown_at_a_glance(served["metadata"])[f"{READABLE}candidates"]
    assert set(served["scores"]) == {"truthfulqa_accuracy", "consistency"}
    assert "candidates" in served["scores"]["consistency"]["explanation"]


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


PROOF = {
    "answer": "*Yes* <b>bold</b>", "selected_by": "vote", "dont_know": False, "vote_share": 0.5,
    "candidates": [
        {"source": "paraphrase", "slot": 0, "technique": "synonyms", "temperature": 0.6, "asked": "q",
         "answer": "*Yes* <b>bold</b>"},
        {"source": "paraphrase", "slot": 1, "technique": "word forms", "temperature": 0.6, "asked": "q",
         "answer": "Don't say.\n# heading\n- item [link](http://x) `code` $x$ &amp;"},
        {"source": "temperature", "slot": 0, "technique": None, "temperature": 0.5, "asked": "q",
         "answer": "Maybe"},
        {"source": "temperature", "slot": 1, "technique": None, "temperature": 1.0, "asked": "q",
         "answer": "*Yes* <b>bold</b>"}],
    "choices": [], "unparsed": 0, "lexical": {"candidates": None, "choices": None},
    "agreement": {"rouge1": {"paraphrase": {"matrix": [[1.0, 0.0], [0.0, 1.0]], "cons_sem": 0.0,
                                            "entropy": 1.0, "clusters": [0, 1]},
                             "temperature": {"matrix": [[1.0, 0.0], [0.0, 1.0]], "cons_sem": None,
                                             "entropy": None, "clusters": [0, 1]}}},
}
VALUE = {"cons_sem": 0.25, "entropy": 1.5, "eigv": 2.0, "deg": 0.5}


def viewer_html(markdown: str) -> str:
    """Markdown as inspect's viewer renders it: `<>&'"` made entities first, then markdown-it (line
    breaks on, raw HTML on)."""
    entities = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;"}
    escaped = re.sub(r"[<>&'\"]", lambda m: entities[m.group(0)], markdown)
    return MarkdownIt("commonmark", {"breaks": True, "html": True}).render(escaped)


def test_the_explanation_keeps_a_models_markdown_and_html_as_text():
    text = explanation(PROOF, "rouge1", VALUE, {"paraphrase": (2, 0.0), "temperature": (2, None)})
    html = viewer_html(text)
    assert "<em>Yes</em>" in viewer_html(PROOF["answer"])  # unescaped, the viewer would render it
    assert not {"<em>", "<b>", "<h1>", "<a ", "<code>"} & {tag for tag in re.findall(r"<[a-z0-9]+ ?", html)}
    assert "<ul>" not in html and html.count("<li>") == 4  # one line per candidate, no list of its own
    assert html.count("*Yes* &lt;b&gt;bold&lt;/b&gt;") == 3  # the chosen answer and both candidates
    assert "Don't say. # heading - item [link](http://x) `code` $x$ &amp;amp;" in html
    assert html.count("✓") == 2  # both candidates equal to the chosen answer
    assert "temperature n/a (2)" in text and "paraphrase 0.00 (2)" in text and "vote share 0.50" in text
    assert "Cons_sem 0.25" in text and "entropy 1.50 bits" in text
    assert "<strong>Chosen answer</strong>" in html


def test_the_explanation_says_dont_know_and_how_an_unparsed_choice_was_made():
    proof = {**PROOF, "answer": DEFAULT_IDK_TEXT, "dont_know": True, "selected_by": "majority_candidate",
             "vote_share": None}
    text = explanation(proof, "rouge1", {k: math.nan for k in VALUE}, {"paraphrase": (2, None)})
    assert text.startswith("**Chosen \"don't know\"** (no rank reply parsed: the most common candidate)")
    assert "Cons_sem n/a" in text and "EigV n/a" in text and "✓" not in text


def test_the_flat_metadata_are_scalars_the_viewer_shows_without_a_click():
    flat = readable(PROOF)
    assert set(flat) == {f"{READABLE}{k}" for k in ("answer", "selected_by", "dont_know", "vote_share",
                                                    "candidates", "cons_sem_rouge1_paraphrase",
                                                    "cons_sem_rouge1_temperature")}
    assert shown_at_a_glance(flat) == flat
    listed = flat[f"{READABLE}candidates"]
    assert isinstance(listed, str)
    assert listed.splitlines()[1].startswith("2. paraphrase (word forms): Don't say. # heading - item")
    assert listed.splitlines()[3] == "4. temperature 1: *Yes* <b>bold</b>"  # the viewer shows it as text
    assert flat[f"{READABLE}cons_sem_rouge1_paraphrase"] == 0.0
    # the evidence alone, nested, shows none of it at a glance
    assert shown_at_a_glance({"a2c": PROOF}) == {}


def test_a_source_with_one_candidate_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="a2c.inspect.solver"):
        ask_to_choose(techniques=["synonyms"], temperatures=[0.5])
    assert "source paraphrase and temperature" in caplog.text and "undefined (NaN)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="a2c.inspect.solver"):
        ask_to_choose(techniques=["synonyms", "word forms"], temperatures=[0.5], samples=2)
    assert caplog.text == ""


def test_the_recipe_asks_for_two_candidates_per_source() -> None:
    _, settings = recipe()
    read = ("techniques", "temperatures", "samples")
    given = {k: yaml.safe_load(v) for k, v in settings.items() if k in read}
    variation = VariationConfig.model_validate(given)  # as the task's solver reads them (inspect: YAML)
    assert len(variation.techniques) >= 2 and len(variation.temperatures) * variation.samples >= 2
