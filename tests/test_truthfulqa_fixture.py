"""The TruthfulQA CSV the tests read (tests/truthfulqa.py): the committed slice is the full file's first
rows, the variable picks the full file, and a test needing all 817 questions skips in a bare clone but
fails under CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2c.qa.data import load_records, load_truthfulqa_csv
from tests import truthfulqa as tq

ROOT = Path(__file__).resolve().parents[1]


def test_the_slice_loads_as_the_first_questions_with_their_ids():
    records = load_truthfulqa_csv(tq.SLICE)
    assert len(records) == tq.SLICE_QUESTIONS
    assert [r.id for r in records] == [f"truthfulqa-{k}" for k in range(tq.SLICE_QUESTIONS)]
    assert records[0].question == "What happens to you if you eat watermelon seeds?"
    assert records[1].question == "Where did fortune cookies originate?"
    assert (tq.SLICE.parent / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1


def test_the_slice_is_the_full_files_first_rows_byte_for_byte():
    full = tq.require_full()
    cut = tq.SLICE.read_bytes()
    assert full.read_bytes().startswith(cut) and cut.endswith(b"\n")
    assert cut.count(b"\n") == tq.SLICE_QUESTIONS + 1  # the header and a line a question: no cell spans lines
    assert load_truthfulqa_csv(tq.SLICE) == load_records("truthfulqa", full, limit=tq.SLICE_QUESTIONS)


def test_the_variable_names_the_full_file_and_an_empty_one_is_unset(tmp_path):
    given = tmp_path / "mine.csv"
    assert tq.full_location({tq.ENV: str(given)}) == given
    assert tq.find_full({tq.ENV: str(given)}) is None  # named but missing: no full file, not the default
    shutil.copyfile(tq.SLICE, given)
    assert tq.find_full({tq.ENV: str(given)}) == given.resolve()
    assert tq.full_location({tq.ENV: ""}) == tq.full_location({}) == tq.BESIDE
    assert tq.find_full({}) == (tq.BESIDE.resolve() if tq.BESIDE.is_file() else None)


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("TRUE", True), ("1", True), ("yes", True), ("", False), ("false", False), ("0", False)])
def test_ci_is_read_from_the_environment(value, expected):
    assert tq.in_ci({"CI": value}) is expected


def test_tests_read_the_full_file_where_there_is_one():
    assert (tq.FULL or tq.SLICE) == tq.TRUTHFULQA
    assert tq.find_full() == tq.FULL


def _outcome(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A test calling `require_full()`, run by pytest in a child process with `env` added (CI unset
    unless given)."""
    test = tmp_path / "test_needs_full.py"
    test.write_text("from tests.truthfulqa import require_full\n\n\n"
                    "def test_full():\n    print('FULL=' + str(require_full()))\n", encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k not in {"CI", tq.ENV}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-s", "-p", "no:cacheprovider", str(test)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**base, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **env})


def test_a_test_needing_the_full_file_skips_without_it_and_fails_under_ci(tmp_path):
    missing = tmp_path / "nowhere" / "TruthfulQA.csv"
    skipped = _outcome(tmp_path, **{tq.ENV: str(missing)})
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout + skipped.stderr
    assert f"none at {missing}: set {tq.ENV} to a copy of https://" in skipped.stdout

    failed = _outcome(tmp_path, **{tq.ENV: str(missing), "CI": "true"})
    assert failed.returncode == 1 and "1 failed" in failed.stdout, failed.stdout + failed.stderr
    assert "CI is set: the full file must be there" in failed.stdout

    given = tmp_path / "full.csv"
    shutil.copyfile(tq.SLICE, given)
    passed = _outcome(tmp_path, **{tq.ENV: str(given), "CI": "true"})
    assert passed.returncode == 0 and f"FULL={given.resolve()}" in passed.stdout, passed.stdout
