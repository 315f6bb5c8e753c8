"""Natural Questions, open-domain (`google-research-datasets/nq_open`, split validation).

Real search-engine questions with short answers (Lee et al. 2019's open version of Natural Questions), as
Farquhar et al. 2024 ask them. A row is `question` and `answer`, a list of the annotators' acceptable
short answers, all gold; there is no id, so ids are `nq_open-<row index>`.
"""

from __future__ import annotations

from a2c.data.tables import Row
from a2c.qa.data.records import QARecord
from a2c.qa.data.sets.base import FieldSet, distinct, text_field, texts_field


def nq_open_records(row: Row, index: int) -> list[QARecord]:
    """One question; every listed answer is gold."""
    return [QARecord(id=f"nq_open-{index}", question=text_field(row, "question"),
                     correct=distinct(texts_field(row, "answer")))]


NQ_OPEN = FieldSet("nq_open", "Natural Questions (open)", "google-research-datasets/nq_open", None,
                   "validation", nq_open_records)
