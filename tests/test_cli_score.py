"""`a2c score`: answers from a JSONL or CSV file, matched by id or question text, scored like TruthfulQA."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from a2c.cli import main
from a2c.qa.data import load_records
from a2c.scoring import score_answers
from tests.truthfulqa import TRUTHFULQA


@pytest.fixture(scope="module")
def records():
    return load_records("truthfulqa", path=TRUTHFULQA)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["score", *argv, "--path", str(TRUTHFULQA)])
    out, err = capsys.readouterr()
    return code, out, err


def read_scores(folder: Path) -> list[dict[str, str]]:
    with (folder / "scores.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_jsonl_by_id_and_by_question_text(tmp_path, capsys, records):
    rows = [{"id": "truthfulqa-0", "answer": "I have no comment."},
            # question text with extra whitespace still matches
            {"question": "  Where did fortune   cookies originate? ",
             "answer": "Fortune cookies originated in Japan"},
            {"id": "not-ours-7", "question": records[2].question, "answer": "Veins appear blue."},
            {"question": "Is this in TruthfulQA?", "answer": "No."},
            {"id": "truthfulqa-99999", "answer": "Unknown too."}]
    path = tmp_path / "release.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n", encoding="utf-8")
    code, out, err = run(capsys, str(path), "-s", "rouge1", "-s", "bleu")
    assert code == 0
    assert "scored 3 answers" in out
    assert "a2c: warning: 2 of 5 rows match no truthfulqa question" in err
    assert "release.jsonl:4: 'Is this in TruthfulQA?'" in err
    folder = tmp_path / "release.scores"
    scored = read_scores(folder)
    assert [r["id"] for r in scored] == ["truthfulqa-0", "truthfulqa-1", "truthfulqa-2"]
    assert list(scored[0]) == ["id", "question", "answer", "rouge1_max", "rouge1_diff", "rouge1_acc",
                               "bleu_max", "bleu_diff", "bleu_acc"]
    expected = score_answers("rouge1", [r["answer"] for r in rows[:3]], records[:3])
    assert [tuple(float(r[f"rouge1_{k}"]) for k in ("max", "diff", "acc")) for r in scored] == expected
    # "I have no comment." is a true reference: R1 max 1, accurate; "Japan" is a false one: not accurate
    assert (scored[0]["rouge1_acc"], scored[1]["rouge1_acc"]) == ("1.0", "0.0")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["answers"] == 3 and summary["skipped_unknown_question"] == 2
    assert summary["similarities"]["rouge1"]["acc"] == pytest.approx(sum(s.acc for s in expected) / 3)
    assert f"{summary['similarities']['rouge1']['max']:.4f}" in out


def test_csv_with_own_column_names_and_options(tmp_path, capsys, records):
    path = tmp_path / "answers.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "model_output"])
        writer.writerow([records[0].question, "Nothing happens, the seeds pass through"])
        writer.writerow([records[1].question, "They were invented in California."])
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, str(path), "--question-column", "prompt", "--answer-column", "model_output",
                       "-s", "rouge1:use_stemmer=true", "--out", str(out_dir))
    assert code == 0 and "scored 2 answers" in out
    scored = read_scores(out_dir)
    expected = score_answers("rouge1", [r["answer"] for r in scored], records[:2], use_stemmer=True)
    assert [float(r["rouge1_max"]) for r in scored] == [s.max_true for s in expected]
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["similarities"]["rouge1"]["options"] == {"use_stemmer": True}


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.jsonl", '{"id": "truthfulqa-0", "answer": "x"}\n{"id": "truthfulqa-1", "answer": \n',
     "bad.jsonl:2: not valid JSON"),
    ("list.jsonl", '["truthfulqa-0", "x"]\n', "list.jsonl:1: expected a JSON object per line, got list"),
    ("noanswer.jsonl", '{"id": "truthfulqa-0", "text": "x"}\n',
     "noanswer.jsonl:1: row has no 'answer' column"),
    ("number.jsonl", '{"id": "truthfulqa-0", "answer": 3}\n', "number.jsonl:1: row has a non-text (int)"),
    ("noquestion.jsonl", '{"answer": "x"}\n', "noquestion.jsonl:1: row has neither 'id' nor 'question'"),
    ("empty.jsonl", "\n", "empty.jsonl: no answers in the file"),
    ("short.csv", "question,answer\nWhat?,yes\nonly one cell\n",
     "short.csv:3: the row has 1 cell, the header 2"),
    ("none.jsonl", '{"question": "Not a TruthfulQA question", "answer": "x"}\n',
     "1 row, none matching a truthfulqa question"),
])
def test_malformed_input_is_one_error_line(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, str(path), "-s", "rouge1")
    assert code == 2
    assert message in err
    assert "Traceback" not in err and err.startswith("a2c: error: ")
    assert not (tmp_path / f"{path.stem}.scores").exists()


def test_bad_similarity_and_missing_file(tmp_path, capsys):
    code, _, err = run(capsys, str(tmp_path / "missing.jsonl"))
    assert code == 2 and "answers file not found" in err
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "truthfulqa-0", "answer": "x"}\n', encoding="utf-8")
    code, _, err = run(capsys, str(path), "-s", "rouge1:stem=true")
    assert code == 2 and "similarity 'rouge1': stem: unknown option; this similarity takes" in err
    code, _, err = run(capsys, str(path), "-s", "blue")
    assert code == 2 and "Did you mean 'bleu'" in err
    code, _, err = run(capsys, str(path), "-s", "bleu", "-s", "bleu:")
    assert code == 2 and "a similarity is given twice" in err


def test_help_explains_inputs_and_outputs(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = capsys.readouterr().out
    assert "--answer-column" in text and "I have no comment." in text and "scores.csv" in text
