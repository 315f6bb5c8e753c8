"""Counts in messages take the noun's number: "1 question", "2 questions", never "1 questions"."""

from __future__ import annotations

import pytest

from a2c.common.wording import plural
from a2c.data.errors import DatasetError
from a2c.data.tables import read_table


@pytest.mark.parametrize(("count", "said"), [(0, "0 questions"), (1, "1 question"), (2, "2 questions")])
def test_a_count_takes_the_nouns_number(count, said):
    assert plural(count, "question") == said


def test_an_irregular_plural_and_a_verb_follow_the_count():
    assert plural(1, "query", "queries") == "1 query" and plural(3, "query", "queries") == "3 queries"
    assert plural(1, "question is", "questions are") == "1 question is"
    assert plural(4, "question is", "questions are") == "4 questions are"


@pytest.mark.parametrize(("row", "said"),
                         [("only", "the row has 1 cell,"), ("a,b,c", "the row has 3 cells,")])
def test_a_short_or_long_csv_row_is_counted_in_the_right_number(tmp_path, row, said):
    path = tmp_path / "questions.csv"
    path.write_text(f"question,answer\n{row}\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=said):
        read_table(path)
