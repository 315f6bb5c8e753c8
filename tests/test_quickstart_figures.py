"""benchmarks/quickstart_figures.py's writer, on a small run folder made here (no model runs): the figures
land between the markers, the text around them is kept, and writing them again changes nothing."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.qa.config import ExperimentConfig
from a2c.qa.summary import summarize_metrics
from a2c.run.config_file import parse_config
from a2c.run.store import RunFolder

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "quickstart_figures.py"
CONFIG = parse_config("name: fake\njudges: [embedding, rouge1]\naccuracy:\n  similarities: [rouge1]\n")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quickstart_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


figures_script = _script()


def _jsonl(folder: RunFolder, name: str, rows: list[dict[str, Any]]) -> None:
    folder.write_text(name, "".join(json.dumps(r) + "\n" for r in rows))


def _metric_row(qid: str, source: str, phase: str, cons: float, acc: float) -> dict[str, Any]:
    judges = {j: {"cons_sem": cons, "entropy": 1 - cons, "clusters": 1, "cons_sem_accurate": None}
              for j in ("embedding", "rouge1")}
    return {"id": qid, "source": source, "phase": phase, "n": 4, "n_accurate": 0, "cons_lex": cons,
            "judges": judges, "accuracy": {"rouge1": {"max_true": acc, "diff": acc - 0.5, "acc": acc}}}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A finished run's summary.json (made by a2c's own summary code) and timings.json, and nothing else
    the writer does not read."""
    folder = RunFolder(tmp_path / "run")
    rng = random.Random(1)
    rows = [_metric_row(f"q{q}", source, phase, rng.random(), rng.random())
            for q in range(5) for source in ("paraphrase", "temperature") for phase in ("before", "after")]
    _jsonl(folder, "metrics.jsonl", rows)
    _jsonl(folder, "paraphrases.jsonl", [{"id": "q0", "question": "?", "paraphrases": [
        {"technique": "synonyms", "text": "?", "ok": False, "problem": "identical"},
        {"technique": "conjunctions", "text": "Is it?", "ok": True, "problem": None}]}])
    _jsonl(folder, "choices.jsonl", [
        {"id": "q0", "source": "temperature", "slot": 0, "shown_question": "?", "temperature": 0.0,
         "options": ["a", "b"], "reply": "3", "option": 2, "method": "number",
         "text": "I don't know the correct answer"}])
    assert isinstance(CONFIG, ExperimentConfig)
    folder.write_text("summary.json", summarize_metrics(folder, CONFIG).model_dump_json())
    folder.write_text("timings.json", json.dumps({"seconds": 75.4, "stages": {
        "variation": {"generated": 40, "seconds": 30.0}, "answers": {"generated": 17, "seconds": 45.0},
        "report": {"generated": 0, "seconds": 0.4}}}))
    return folder.path


MACHINE = figures_script.Machine(cpu="Test CPU", cores=2, avx512=False, system="Linux x86_64",
                                 python="3.11.0", torch="2.0")


def _figures(run_dir: Path):  # type: ignore[no-untyped-def]
    return figures_script.read_figures(run_dir, wall_seconds=125.0, date="2025-01-02", machine=MACHINE)


def _pages(tmp_path: Path) -> tuple[Path, Path]:
    readme, docs = tmp_path / "README.md", tmp_path / "quickstart.md"
    readme.write_text("# Title\n\n## Quickstart\n\nintro\n\n<!-- quickstart-figures:start -->\nold figures\n"
                      "<!-- quickstart-figures:end -->\n\nafter the block\n\n## Next\nkept\n",
                      encoding="utf-8")
    docs.write_text("# Quickstart\n\n<!-- quickstart-figures:start -->\n<!-- quickstart-figures:end -->\n\n"
                    "between\n\n<!-- quickstart-signal:start -->old<!-- quickstart-signal:end -->\n\n"
                    "<!-- quickstart-selection:start -->\n<!-- quickstart-selection:end -->\nend\n",
                    encoding="utf-8")
    return readme, docs


def test_figures_land_between_the_markers_and_a_rewrite_changes_nothing(run_dir: Path,
                                                                         tmp_path: Path) -> None:
    readme, docs = _pages(tmp_path)
    figures = _figures(run_dir)
    assert figures.model_calls == 57  # summed over timings.json's stages
    assert figures_script.write_figures(figures, readme, docs) == [readme, docs]
    text = readme.read_text(encoding="utf-8")
    inside = text.split("<!-- quickstart-figures:start -->")[1].split("<!-- quickstart-figures:end -->")[0]
    assert "old figures" not in text
    assert text.startswith("# Title\n\n## Quickstart\n\nintro\n\n")
    assert text.endswith("<!-- quickstart-figures:end -->\n\nafter the block\n\n## Next\nkept\n")
    assert "2 min 5 s" in inside and "57 model calls" in inside and "2025-01-02" in inside
    assert "1 of 2 paraphrases failed" in inside and "Test CPU" in inside
    assert figures_script.COMMAND in inside
    header = next(line for line in inside.splitlines() if line.startswith("| method"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "method", "R1-A", "Don't-know share of choices", "Emb Cons_sem", "Entropy (Emb)"]
    page = docs.read_text(encoding="utf-8")
    # the report's header, less `model`
    assert "| method | R1-A | Don't-know share of choices (A2C) | Emb | R1-C |" in page
    assert "1 of 1 temperature rank prompts" in page and "\nbetween\n" in page and page.endswith("end\n")
    assert "(not measured" in page  # the fake run picked with A2C alone
    signal = page.split("<!-- quickstart-signal:start -->")[1].split("<!-- quickstart-signal:end -->")[0]
    assert "old" not in signal and f"of the {figures.signal_total} signal rows" in signal.replace("\n", " ")
    assert signal.count("\n| ") == min(figures_script.SIGNAL_ROWS, len(figures.signal)) + 1  # header + rows
    before = (readme.read_text(encoding="utf-8"), page)
    assert figures_script.write_figures(figures, readme, docs) == []
    assert (readme.read_text(encoding="utf-8"), docs.read_text(encoding="utf-8")) == before


@settings(max_examples=50, deadline=None)
@given(prefix=st.text(), middle=st.text(), suffix=st.text(), block=st.text(min_size=1))
def test_replace_block_keeps_the_text_around_and_is_idempotent(prefix: str, middle: str, suffix: str,
                                                                block: str) -> None:
    start, end = figures_script.markers("b")
    if start in prefix + middle + suffix or end in prefix + middle + suffix:
        return
    text = f"{prefix}{start}{middle}{end}{suffix}"
    once = figures_script.replace_block(text, "b", block, where="page")
    assert once.startswith(prefix + start) and once.endswith(end + suffix)
    assert figures_script.replace_block(once, "b", block, where="page") == once


@pytest.mark.parametrize("text", ["no markers", "<!-- b:end --> then <!-- b:start -->",
                                  "<!-- b:start --><!-- b:end --><!-- b:start --><!-- b:end -->"])
def test_missing_or_misplaced_markers_are_refused_naming_the_file(text: str) -> None:
    with pytest.raises(figures_script.FiguresError, match=r"^page: needs exactly one <!-- b:start -->"):
        figures_script.replace_block(text, "b", "x", where="page")


def test_from_run_writes_the_pages_and_a_bad_page_exits_2(run_dir: Path, tmp_path: Path) -> None:
    readme, docs = _pages(tmp_path)
    argv = [sys.executable, str(SCRIPT), "--from-run", str(run_dir), "--readme", str(readme), "--docs",
            str(docs)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "1 min 15 s" in readme.read_text(encoding="utf-8")  # timings.json's seconds without provenance
    docs.write_text("no markers here\n", encoding="utf-8")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {docs}: needs exactly one <!-- quickstart-figures:start --> " \
        "followed by one <!-- quickstart-figures:end --> (found 0 start and 0 end markers)"
