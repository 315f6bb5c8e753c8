"""Dataset loaders: the real TruthfulQA CSV, the hub-row path, the built-in quickstart set, bad input."""

from __future__ import annotations

import csv

import pytest

from a2c.common.registry import UnknownNameError
from a2c.qa.data import DatasetError, load_quickstart, load_records, load_truthfulqa_csv, records_from_hf_rows
from tests.truthfulqa import TRUTHFULQA as TRUTHFULQA_CSV
from tests.truthfulqa import require_full


def test_truthfulqa_csv_has_817_records_with_best_answer_among_correct():
    records = load_truthfulqa_csv(require_full())
    assert len(records) == 817
    assert len({r.id for r in records}) == 817
    for r in records:
        assert r.best_answer in r.correct
        assert r.incorrect and r.question.strip() == r.question
    first = records[0]
    assert first.question == "What happens to you if you eat watermelon seeds?"
    assert "You grow watermelons in your stomach" in first.incorrect


def test_hub_rows_give_the_same_records_as_the_csv():
    # the hub config `generation` carries lists where the CSV has `;`-joined cells
    with TRUTHFULQA_CSV.open(newline="", encoding="utf-8") as handle:
        rows = [{"type": r["Type"], "category": r["Category"], "question": r["Question"],
                 "best_answer": r["Best Answer"],
                 "correct_answers": [a.strip() for a in r["Correct Answers"].split(";")],
                 "incorrect_answers": [a.strip() for a in r["Incorrect Answers"].split(";")],
                 "source": r["Source"]} for r in csv.DictReader(handle)]
    assert records_from_hf_rows(rows) == load_truthfulqa_csv(TRUTHFULQA_CSV)


def test_limit_takes_the_first_records():
    assert [r.id for r in load_records("truthfulqa", TRUTHFULQA_CSV, limit=3)] == [
        "truthfulqa-0", "truthfulqa-1", "truthfulqa-2"]


def test_quickstart_set_is_complete_and_distinct():
    records = load_quickstart()
    assert 10 <= len(records) <= 20
    assert len({r.question for r in records}) == len(records)
    for r in records:
        assert r.correct[0] == r.best_answer
        assert not set(r.correct) & set(r.incorrect)
    assert load_records("quickstart", limit=2) == records[:2]


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        load_truthfulqa_csv(tmp_path / "missing.csv")
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError, match="missing column"):
        load_truthfulqa_csv(wrong)
    empty_refs = tmp_path / "empty.csv"
    empty_refs.write_text("Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers\n"
                          "A,B,Why?,Because,Because,\n")
    with pytest.raises(DatasetError, match=r"empty\.csv:2: empty 'Incorrect Answers' cell"):
        load_truthfulqa_csv(empty_refs)
    with pytest.raises(UnknownNameError, match="truthfulqa"):
        load_records("truthfulq")
    with pytest.raises(DatasetError, match="limit"):
        load_records("quickstart", limit=0)
    with pytest.raises(DatasetError, match="no path"):
        load_records("quickstart", path=wrong)


def test_the_old_import_path_still_works_with_a_warning_naming_the_new_one():
    import a2c.data
    import a2c.scoring
    from a2c.qa import data as qa_data

    with pytest.warns(DeprecationWarning, match="import it from a2c.scoring"):
        assert a2c.data.load_records is a2c.scoring.load_records is load_records
    with pytest.warns(DeprecationWarning, match="import it from a2c.qa.data"):
        assert a2c.data.load_truthfulqa_csv is qa_data.load_truthfulqa_csv
    with pytest.raises(AttributeError, match="no attribute 'load_nothing'"):
        a2c.data.load_nothing  # noqa: B018 - the attribute access is the test
    from a2c.data.tables import read_table  # the core's own modules load without a warning

    assert callable(read_table)
