"""SciQ (`allenai/sciq`, split test), asked as free-form questions.

Crowd-sourced science exam questions (physics, chemistry, biology), asked closed-book. A row is `question`,
`correct_answer`, three distractors and a `support` paragraph. The gold answer is `correct_answer`.

The distractors are not used as incorrect references: SciQ wrote them as plausible wrong options of a
multiple-choice question, and a free-form answer can be wrong in countless ways none of them names, so a
rule that asks whether an answer is closer to a correct than to an incorrect reference (TruthfulQA's) would
count most wrong answers as right. The gold-answer rules need the correct answer alone. The support
paragraph, which states the answer, is left out too: the question is asked closed-book.
"""

from __future__ import annotations

from a2c.data.tables import Row
from a2c.qa.data.records import QARecord
from a2c.qa.data.sets.base import FieldSet, text_field


def sciq_records(row: Row, index: int) -> list[QARecord]:
    """One question with its one gold answer; ids are `sciq-<row index>`."""
    answer = text_field(row, "correct_answer")
    return [QARecord(id=f"sciq-{index}", question=text_field(row, "question"), best_answer=answer,
                     correct=(answer,))]


SCIQ = FieldSet("sciq", "SciQ", "allenai/sciq", None, "test", sciq_records)
