"""CoQA (`stanfordnlp/coqa`, split validation): conversations about a story, one record per turn.

A row is a `story`, its `questions` (one per turn) and `answers` (`input_text`, `answer_start`,
`answer_end`, one per turn). Turn i is asked as the field asks it (Kuhn et al. 2023, LM-Polygraph): the
story, then the conversation so far (the earlier turns' questions with their gold answers), then the
question, which often only makes sense with them ("What did he do next?"). The record's `context` holds
the story and the earlier turns; only the question itself is paraphrased. The gold answer is the turn's
`input_text`; the original dev file's `additional_answers` (three more annotators) join it as aliases.

Ids are `<story id>-<turn>` (turns from 1); the hub rows have no story id, so theirs is `coqa-<row index>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from a2c.data.errors import DatasetError
from a2c.data.tables import Row
from a2c.qa.data.records import QARecord
from a2c.qa.data.sets.base import (
    FieldSet,
    distinct,
    field_value,
    id_field,
    nested_list,
    nested_object,
    text_field,
    texts_field,
)

STORY_LABEL = "Story: "


def coqa_context(story: str, turns: list[tuple[str, str]]) -> str:
    """What is shown before a turn's question: the story, then the earlier turns as `Q:`/`A:` lines."""
    history = "\n".join(f"Q: {q}\nA: {a}" for q, a in turns)
    return STORY_LABEL + story + (f"\n\n{history}" if history else "")


def coqa_records(row: Row, index: int) -> list[QARecord]:
    """One record per turn, each with the story and the turns before it as context."""
    story = text_field(row, "story")
    questions = texts_field(row, "questions", allow_empty=True)
    answers = texts_field(row, "answers", "input_text", allow_empty=True)
    asked, answered = len(field_value(row, "questions")), len(field_value(row, "answers", "input_text"))
    if not asked or asked != answered:
        raise DatasetError(f"{row.where}: {asked} `questions` but {answered} `answers.input_text` (one "
                           "answer per turn, at least one turn)")
    if len(questions) != asked or len(answers) != asked:
        field, n = ("questions", len(questions)) if len(questions) != asked else ("answers.input_text",
                                                                                    len(answers))
        raise DatasetError(f"{row.where}: field {field!r} has {asked - n} empty turn(s)")
    story_id = id_field(row, "id") if "id" in row.values else f"coqa-{index}"
    more = row.values.get("additional_answers")
    aliases = _aliases(row, more, len(questions)) if more is not None else [()] * len(questions)
    return [QARecord(id=f"{story_id}-{turn + 1}", question=question,
                     correct=distinct([answer, *aliases[turn]]),
                     context=coqa_context(story, list(zip(questions[:turn], answers[:turn], strict=True))))
            for turn, (question, answer) in enumerate(zip(questions, answers, strict=True))]


def _aliases(row: Row, more: Any, turns: int) -> list[tuple[str, ...]]:
    """Per turn, the other annotators' answers (`additional_answers`: annotator → one text per turn)."""
    if not isinstance(more, Mapping):
        raise DatasetError(f"{row.where}: field 'additional_answers' holds {type(more).__name__}, not an "
                           "object of answer lists")
    per_turn: list[list[str]] = [[] for _ in range(turns)]
    for annotator in more:
        texts = field_value(row, "additional_answers", annotator)
        if not isinstance(texts, list) or len(texts) != turns \
                or not all(isinstance(t, str) for t in texts):
            raise DatasetError(f"{row.where}: field 'additional_answers.{annotator}' must list one text per "
                               f"turn ({turns})")
        for turn, text in enumerate(texts):
            if text.strip():
                per_turn[turn].append(text.strip())
    return [tuple(t) for t in per_turn]


def coqa_original(path: Path, document: Mapping[str, Any]) -> list[Row]:
    """CoQA's own JSON (`coqa-dev-v1.0.json`): `data[]` of stories with `questions[]` and `answers[]`
    objects (`input_text`, `turn_id`) as rows in the hub's layout."""
    rows = []
    for k, item in enumerate(nested_list(document["data"], str(path), "data")):
        where = f"{path}: data[{k}]"
        story = nested_object(item, where)
        turns: dict[str, list[Any]] = {}
        for part in ("questions", "answers"):
            entries = nested_list(story.get(part), where, part)
            for j, entry in enumerate(entries):
                entry = nested_object(entry, f"{where}.{part}[{j}]")
                if entry.get("turn_id", j + 1) != j + 1:
                    raise DatasetError(f"{where}.{part}[{j}]: turn_id {entry.get('turn_id')!r}, expected "
                                       f"{j + 1} (turns in order)")
                turns.setdefault(part, []).append(entry.get("input_text"))  # checked as a row
        values: dict[str, Any] = {"id": story.get("id", f"coqa-{k}"), "source": story.get("source", ""),
                                  "story": story.get("story"), "questions": turns.get("questions", []),
                                  "answers": {"input_text": turns.get("answers", [])}}
        if "additional_answers" in story:
            extra = nested_object(story["additional_answers"], f"{where}.additional_answers")
            values["additional_answers"] = {
                annotator: [nested_object(a, f"{where}.additional_answers.{annotator}").get("input_text")
                            for a in nested_list(answers, where, f"additional_answers.{annotator}")]
                for annotator, answers in extra.items()}
        rows.append(Row(where, values))
    return rows


COQA = FieldSet("coqa", "CoQA", "stanfordnlp/coqa", None, "validation", coqa_records, coqa_original)
