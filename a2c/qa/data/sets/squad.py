"""SQuAD v1.1 (`rajpurkar/squad`, split validation): a question about a Wikipedia passage.

A row is `id`, `title`, `context` (the passage), `question` and `answers` (`text`, `answer_start`: the
annotators' spans, often the same span more than once). The question is asked with its passage (the
record's `context`, shown before the question; only the question is paraphrased), as Farquhar et al. 2024
ask it; the distinct answer texts are the gold aliases. The original `dev-v1.1.json` is read too
(`data[].paragraphs[].qas[]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from a2c.data.tables import Row
from a2c.qa.data.records import QARecord
from a2c.qa.data.sets.base import (
    FieldSet,
    distinct,
    id_field,
    nested_list,
    nested_object,
    text_field,
    texts_field,
)

PASSAGE_LABEL = "Passage: "


def squad_records(row: Row, index: int) -> list[QARecord]:
    """One question with its passage as context; the id is SQuAD's."""
    return [QARecord(id=id_field(row, "id"), question=text_field(row, "question"),
                     correct=distinct(texts_field(row, "answers", "text")),
                     context=PASSAGE_LABEL + text_field(row, "context"))]


def squad_original(path: Path, document: Mapping[str, Any]) -> list[Row]:
    """SQuAD's own JSON: one row per `qas[]` entry, in the hub's layout, named by where it sits."""
    rows = []
    for i, article in enumerate(nested_list(document["data"], str(path), "data")):
        at = f"{path}: data[{i}]"
        article = nested_object(article, at)
        for j, paragraph in enumerate(nested_list(article.get("paragraphs"), at, "paragraphs")):
            pat = f"{at}.paragraphs[{j}]"
            paragraph = nested_object(paragraph, pat)
            for k, qa in enumerate(nested_list(paragraph.get("qas"), pat, "qas")):
                where = f"{pat}.qas[{k}]"
                qa = nested_object(qa, where)
                answers = [nested_object(a, f"{where}.answers[{n}]")
                           for n, a in enumerate(nested_list(qa.get("answers"), where, "answers"))]
                rows.append(Row(where, {"id": qa.get("id"), "title": article.get("title", ""),
                                        "context": paragraph.get("context"), "question": qa.get("question"),
                                        "answers": {
                                            "text": [a.get("text") for a in answers],
                                            "answer_start": [a.get("answer_start") for a in answers]}}))
    return rows


SQUAD = FieldSet("squad", "SQuAD v1.1", "rajpurkar/squad", "plain_text", "validation", squad_records,
                 squad_original)
