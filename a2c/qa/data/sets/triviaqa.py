"""TriviaQA without evidence (`mandarjoshi/trivia_qa`, configuration `rc.nocontext`, split validation).

Closed-book trivia questions, as the uncertainty literature asks them (Kuhn et al. 2023, Farquhar et al.
2024, LM-Polygraph). The gold answers are the answer's `value` and its `aliases` (other spellings and
names of the same answer); `normalized_aliases` are lower-cased, punctuation-free copies of those, which
the gold-answer rules' own normalisation already makes, so they add nothing.
"""

from __future__ import annotations

from a2c.data.tables import Row
from a2c.qa.data.records import QARecord
from a2c.qa.data.sets.base import FieldSet, distinct, id_field, text_field, texts_field


def triviaqa_records(row: Row, index: int) -> list[QARecord]:
    """One question; its id is TriviaQA's `question_id`."""
    value = text_field(row, "answer", "value")
    aliases = texts_field(row, "answer", "aliases", allow_empty=True)
    return [QARecord(id=id_field(row, "question_id"), question=text_field(row, "question"),
                     best_answer=value, correct=distinct([value, *aliases]))]


TRIVIAQA = FieldSet("triviaqa", "TriviaQA", "mandarjoshi/trivia_qa", "rc.nocontext", "validation",
                    triviaqa_records)
