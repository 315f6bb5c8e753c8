"""Messages that fit the command that failed: `a2c probe` and `a2c score` take flags, not a dataset config,
so their hints name their flags; JSON errors point at the right column."""

from __future__ import annotations

import csv

import pytest

from a2c.cli import main
from a2c.common.wording import plural
from a2c.qa.data import DatasetError, load_records
from a2c.qa.data.truthfulqa import CSV_COLUMNS

PROBE = ["probe", "--backend", "scripted", "--judge", "exact", "--no-cache", "--no-progress"]


def _error(capsys, argv: list[str]) -> tuple[str, str]:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    error = next(line for line in lines if line.startswith("a2c: error: "))
    hint = next((line for line in lines if line.startswith("hint: ")), "")
    return error, hint


def test_probe_questions_with_other_column_names_suggests_column_flag(tmp_path, capsys):
    path = tmp_path / "mine.csv"
    path.write_text("prompt,qid\nWhy is the sky blue?,a\n", encoding="utf-8")
    error, hint = _error(capsys, [*PROBE, "--questions", str(path)])
    assert error == f"a2c: error: {path}: no column 'question'; the file has 'prompt', 'qid'"
    assert hint == "hint: name the file's column with --column question=NAME (e.g. --column question=prompt)"
    # a column named on the command line that the file lacks is named by its flag too
    error, hint = _error(capsys, [*PROBE, "--questions", str(path), "--column", "question=prompt",
                                  "--column", "id=key"])
    assert error.endswith("no column 'key'; the file has 'prompt', 'qid'") and "--column id=NAME" in hint
    # and the config's way of saying it is for configs: the dataset loader keeps it
    with pytest.raises(DatasetError) as caught:
        load_records("file", path)
    assert "(dataset.columns.question)" in str(caught.value) and "`columns:`" in str(caught.value.hint)


def test_probe_questions_not_utf8_says_save_as_utf8(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("question\nQu'est-ce qu'un café?\n".encode("latin-1"))
    error, hint = _error(capsys, [*PROBE, "--questions", str(path)])
    assert f"{path}:2: not UTF-8 text" in error
    assert hint == "hint: save the file as UTF-8 (probe reads UTF-8 text)"  # probe has no encoding setting


def test_score_offline_without_path_suggests_the_path_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "truthfulqa-0", "answer": "Nothing happens."}\n', encoding="utf-8")
    error, hint = _error(capsys, ["score", str(answers)])
    assert "cannot load the hub dataset 'truthfulqa/truthful_qa'" in error and "HF_HUB_OFFLINE" in error
    assert hint == "hint: pass a local copy of the benchmark's CSV: --path TruthfulQA.csv"
    assert "dataset:" not in error + hint and "columns" not in hint


def _truthfulqa_csv(path, encoding: str = "utf-8") -> None:
    with path.open("w", newline="", encoding=encoding) as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerow(["Adversarial", "Misconceptions", "Is café au lait French?", "Yes", "Yes; Oui", "No"])


def test_score_path_not_utf8_says_save_as_utf8(tmp_path, capsys):
    questions, answers = tmp_path / "TruthfulQA.csv", tmp_path / "answers.jsonl"
    _truthfulqa_csv(questions, encoding="latin-1")
    answers.write_text('{"id": "truthfulqa-0", "answer": "Yes."}\n', encoding="utf-8")
    error, hint = _error(capsys, ["score", str(answers), "--path", str(questions)])
    assert f"{questions}:2: not UTF-8 text" in error
    assert hint == f"hint: save {questions} as UTF-8 (score reads UTF-8 text)"


def test_score_of_one_answer_says_one_answer(tmp_path, capsys):
    questions, answers = tmp_path / "TruthfulQA.csv", tmp_path / "answers.jsonl"
    _truthfulqa_csv(questions)
    answers.write_text('{"id": "truthfulqa-0", "answer": "Yes."}\n', encoding="utf-8")
    assert main(["score", str(answers), "--path", str(questions), "-s", "rouge1"]) == 0
    assert "scored 1 answer against 1 truthfulqa question\n" in capsys.readouterr().out


# an object cut off at the end of its line: the error is just past its last character
CUT = '{"id": "truthfulqa-0", "answer": "x"'


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_score_json_error_at_the_end_of_a_line_names_its_column(tmp_path, capsys, ending):
    answers = tmp_path / "answers.jsonl"
    answers.write_bytes(f'{{"id": "truthfulqa-1", "answer": "y"}}\n{CUT}{ending}'.encode())
    error, _ = _error(capsys, ["score", str(answers), "--path", str(tmp_path / "unread.csv")])
    assert len(CUT) == 36  # counted by hand: the error is at column 37
    assert error == f"a2c: error: {answers}:2: not valid JSON: Expecting ',' delimiter (column 37)"


def test_dataset_json_error_at_the_end_of_a_line_names_its_column(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text('{"question": "Why?"}\n{"question": "How?"\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"questions.jsonl:2: not valid JSON: Expecting ',' delimiter "
                                           r"\(column 20\)"):
        load_records("file", path)


@pytest.mark.parametrize(("count", "text"), [(0, "0 answers"), (1, "1 answer"), (2, "2 answers")])
def test_plural(count, text):
    assert plural(count, "answer") == text
    assert plural(count, "query", "queries") == text.replace("answers", "queries").replace("answer", "query")
