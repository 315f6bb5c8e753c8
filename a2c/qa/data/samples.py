"""Bring your own samples: questions that come with their answers already made (`dataset: {name: samples}`).

A run over such a file generates nothing before the judges: the `samples` stage writes the answers as the
variation and answer stages would have, and judges, metrics, uncertainty, selection and calibration read
them as they read generated ones. Two layouts are read, by the columns the file has:

- **one row per question** (`samples`): a list whose items are texts or objects
  `{text, temperature?, paraphrase?, logprobs?}`;
- **one row per sample** (`sample`): the sample's text, with optional `temperature`, `paraphrase` and
  `logprobs` columns; a question's rows are consecutive and share its id (or, without an id column, its
  text), as in the A2C authors' released generations.

Either may give a main answer (`answer`: a text, or `{text, logprobs?}`) and the references of
`a2c.qa.data.columns`. A sample that names the paraphrase it answered joins the paraphrase set (Y_c); any
other joins the cross-temperature set (Y_t), with its temperature when given. Every problem is a
`DatasetError` naming `file:line` and the field.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from a2c.common.files import DEFAULT_ENCODING
from a2c.common.untrusted import is_blank, parse_json
from a2c.data.errors import DatasetError
from a2c.data.tables import Row, Table, read_table
from a2c.qa.data.columns import ColumnMap, checked_records, record_from_row
from a2c.qa.data.records import QARecord

Layout = Literal["per_question", "per_sample"]
SAMPLE_KEYS = ("text", "temperature", "paraphrase", "logprobs")
MAIN_KEYS = ("text", "logprobs")
PER_SAMPLE_FIELDS = ("temperature", "paraphrase", "logprobs")  # columns of the one-row-per-sample layout


class ReferenceDataset(BaseModel):
    """Where a samples file's questions find their references (`dataset.references`): a registered dataset
    (e.g. `{name: truthfulqa, path: TruthfulQA.csv}`), matched by id, else by question text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    path: str | None = None  # the dataset's file (None: its built-in or hub copy)
    encoding: str = DEFAULT_ENCODING
    # a question the dataset lacks: refused (file:line), or skipped with a warning that counts and lists
    # them, as `a2c score` skips its rows
    unknown: Literal["refuse", "skip"] = "refuse"


class SampleColumns(BaseModel):
    """Answer field → column name (`dataset.sample_columns`), beside `dataset.columns` for the question's
    fields. As there, an unset field is read from a column of its own name when the file has one; a set one
    must exist. `samples` (a list per question) and `sample` (one per row) pick the layout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str | None = Field(None, min_length=1)  # the main answer (text or {text, logprobs})
    samples: str | None = Field(None, min_length=1)  # one row per question: the list of samples
    sample: str | None = Field(None, min_length=1)  # one row per sample: its text
    temperature: str | None = Field(None, min_length=1)  # one row per sample: its temperature
    paraphrase: str | None = Field(None, min_length=1)  # one row per sample: the paraphrase it answered
    logprobs: str | None = Field(None, min_length=1)  # one row per sample: its per-token log-probabilities

    def resolve(self, table: Table) -> tuple[Layout, dict[str, str]]:
        """The layout and field → column of `table`; a named column the file lacks, both layouts or
        neither, or a per-sample column in the per-question layout is a DatasetError."""
        named = {f: c for f, c in self.model_dump().items() if c is not None}
        table.require(*named.values(), labels={c: f"dataset.sample_columns.{f}" for f, c in named.items()})
        implicit = {f: f for f in type(self).model_fields if f not in named and f in table.columns}
        columns = {**implicit, **named}
        if "samples" in columns and "sample" in columns:
            raise DatasetError(f"{table.path}: both a {columns['samples']!r} column (a list of samples per "
                               f"question) and a {columns['sample']!r} column (one sample per row); keep "
                               "one layout, or map the one meant under dataset.sample_columns")
        if "samples" not in columns and "sample" not in columns:
            raise DatasetError(f"{table.path}: no samples: give a 'samples' column (a list per question) or "
                               "a 'sample' column (one per row), or name yours under "
                               f"dataset.sample_columns; the file has {', '.join(map(repr, table.columns))}")
        if "samples" in columns:
            misplaced = [f for f in PER_SAMPLE_FIELDS if f in named]
            if misplaced:
                raise DatasetError(f"{table.path}: dataset.sample_columns.{misplaced[0]} is a column of the "
                                   "one-row-per-sample layout; in a 'samples' list each item carries its own "
                                   f"{misplaced[0]}")
            return "per_question", {f: c for f, c in columns.items() if f not in PER_SAMPLE_FIELDS}
        return "per_sample", columns


@dataclass(frozen=True)
class Sample:
    """One given answer: its text, and what the file says of it (None: not given)."""

    text: str
    temperature: float | None = None
    paraphrase: str | None = None  # the paraphrased question it answers; None: the question itself
    logprobs: tuple[float, ...] | None = None  # log p of each generated token

    @property
    def source(self) -> Literal["paraphrase", "temperature"]:
        """The set it joins: Y_c when it answers a paraphrase, else Y_t."""
        return "paraphrase" if self.paraphrase is not None else "temperature"


@dataclass(frozen=True)
class SampledRecord(QARecord):
    """A question with its references and the answers the file gives for it: the main answer (None: not
    given) and the samples, in file order. A `QARecord`, so everything that reads questions reads it, and
    the run's dataset digest covers the answers too."""

    answer: Sample | None = None
    samples: tuple[Sample, ...] = field(default=())

    def of_source(self, source: str) -> list[Sample]:
        """The samples of one set, in file order."""
        return [s for s in self.samples if s.source == source]


# -- one sample -------------------------------------------------------------------------------------------

def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _temperature(where: str, what: str, value: Any) -> float | None:
    """A temperature: a finite number >= 0 (a CSV cell: its text), None when absent or empty."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DatasetError(f"{where}: {what} {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DatasetError(f"{where}: {what} must be a number, got {_kind(value)} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise DatasetError(f"{where}: {what} must be a finite number >= 0, got {value!r}")
    return float(value)


def _paraphrase(where: str, what: str, value: Any) -> str | None:
    """The paraphrase a sample answers: text, None when absent or empty (a CSV's blank cell)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, str):
        raise DatasetError(f"{where}: {what} must be text (the paraphrased question), got {_kind(value)}")
    return None if is_blank(value) else value.strip()


def _json_cell(where: str, what: str, text: str, expected: str) -> Any:
    """A CSV cell's JSON list, parsed; `expected` says what it should hold, for the error."""
    try:
        return parse_json(text)
    except (json.JSONDecodeError, ValueError):
        raise DatasetError(f"{where}: {what} is not a valid JSON list of {expected}: {text[:60]!r}") from None


def _logprobs(where: str, what: str, value: Any) -> tuple[float, ...] | None:
    """Per-token log-probabilities: a list of finite numbers <= 0 (in a CSV cell, a JSON list)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = _json_cell(where, what, value, "numbers")
    if not isinstance(value, list | tuple):
        raise DatasetError(f"{where}: {what} must be a list of numbers (one log-probability per token), "
                           f"got {_kind(value)}")
    for i, lp in enumerate(value):
        if isinstance(lp, bool) or not isinstance(lp, int | float) or not math.isfinite(lp):
            raise DatasetError(f"{where}: {what}[{i}] must be a finite number, got {_kind(lp)} {lp!r}")
        if lp > 0:
            raise DatasetError(f"{where}: {what}[{i}] is {lp!r}: a log-probability is <= 0")
    return tuple(float(lp) for lp in value)


def _text(where: str, what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise DatasetError(f"{where}: {what} must be text, got {_kind(value)} {str(value)[:40]!r}")
    return value.strip()


def _object(where: str, what: str, value: Mapping[str, Any], keys: Sequence[str]) -> None:
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise DatasetError(f"{where}: {what} has unknown key {unknown[0]!r}; it takes {', '.join(keys)}")
    if "text" not in value:
        raise DatasetError(f"{where}: {what} has no 'text'")


def sample_of(where: str, what: str, value: Any) -> Sample:
    """One item of a `samples` list: a text, or `{text, temperature?, paraphrase?, logprobs?}`."""
    if isinstance(value, dict):
        _object(where, what, value, SAMPLE_KEYS)
        return Sample(_text(where, f"{what}.text", value["text"]),
                      _temperature(where, f"{what}.temperature", value.get("temperature")),
                      _paraphrase(where, f"{what}.paraphrase", value.get("paraphrase")),
                      _logprobs(where, f"{what}.logprobs", value.get("logprobs")))
    return Sample(_text(where, what, value))


def main_answer_of(where: str, what: str, value: Any) -> Sample | None:
    """The main answer: a text or `{text, logprobs?}`; None when the cell is absent, null or blank (a CSV
    cannot leave a cell out, so an empty one is how it says a question has no main answer)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) \
            or (isinstance(value, str) and is_blank(value)):
        return None
    if isinstance(value, dict):
        _object(where, what, value, MAIN_KEYS)
        return Sample(_text(where, f"{what}.text", value["text"]),
                      logprobs=_logprobs(where, f"{what}.logprobs", value.get("logprobs")))
    return Sample(_text(where, what, value))


# -- the two layouts --------------------------------------------------------------------------------------

def _question_columns(columns: ColumnMap, table: Table) -> dict[str, str]:
    return columns.resolve(table)


def _per_question(table: Table, fields: dict[str, str], answers: dict[str, str], id_prefix: str,
                  separator: str) -> list[SampledRecord]:
    records: list[SampledRecord] = []
    listed = answers["samples"]
    for row, record in checked_records(table, fields, id_prefix=id_prefix, separator=separator):
        value = row.values.get(listed)
        if isinstance(value, str) and value.strip().startswith("["):  # a CSV cell holding a JSON list
            value = _json_cell(row.where, f"column {listed!r}", value, "samples")
        if not isinstance(value, list | tuple):
            raise DatasetError(f"{row.where}: column {listed!r} must be a list of samples, got "
                               f"{_kind(value)}")
        if not value:
            raise DatasetError(f"{row.where}: no samples (column {listed!r} is an empty list)")
        samples = tuple(sample_of(row.where, f"{listed}[{i}]", item) for i, item in enumerate(value))
        answer = main_answer_of(row.where, answers["answer"], row.values.get(answers["answer"])) \
            if "answer" in answers else None
        records.append(SampledRecord(**_fields(record), answer=answer, samples=samples))
    return records


def _fields(record: QARecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in QARecord.__dataclass_fields__}


def _group_key(row: Row, fields: dict[str, str]) -> str:
    """What ties a question's rows together: its id, or without an id column its text (spaces collapsed)."""
    column = fields.get("id", fields["question"])
    value = row.values.get(column)
    return " ".join(value.split()) if isinstance(value, str) else repr(value)


def _per_sample_item(row: Row, answers: dict[str, str]) -> Sample:
    where, column = row.where, answers["sample"]
    value = row.values.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise DatasetError(f"{where}: column {column!r} is empty: each row holds one sample's text")
    def cell(name: str) -> tuple[str, str, Any]:
        return where, f"column {answers[name]!r}", row.values.get(answers[name])

    return Sample(_text(where, f"column {column!r}", value),
                  _temperature(*cell("temperature")) if "temperature" in answers else None,
                  _paraphrase(*cell("paraphrase")) if "paraphrase" in answers else None,
                  _logprobs(*cell("logprobs")) if "logprobs" in answers else None)


def _per_sample(table: Table, fields: dict[str, str], answers: dict[str, str], id_prefix: str,
                separator: str) -> list[SampledRecord]:
    groups: list[tuple[str, list[Row]]] = []
    started: dict[str, str] = {}
    for row in table.rows:
        key = _group_key(row, fields)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(row)
            continue
        if key in started:
            what = "id" if "id" in fields else "question"
            raise DatasetError(f"{row.where}: {what} {key[:60]!r} is used again after other questions (its "
                               f"rows start at {started[key]}); keep each question's rows together")
        started[key] = row.where
        groups.append((key, [row]))
    records: list[SampledRecord] = []
    for index, (_, rows) in enumerate(groups):
        first = rows[0]
        record = record_from_row(first, fields, index=index, id_prefix=id_prefix, separator=separator)
        answer = main_answer_of(first.where, answers["answer"], first.values.get(answers["answer"])) \
            if "answer" in answers else None
        for row in rows[1:]:  # the question's own fields are the same on each of its rows
            again = record_from_row(row, fields, index=index, id_prefix=id_prefix, separator=separator)
            changed = next((f for f in ("question", "correct", "incorrect", "category")
                            if getattr(again, f) != getattr(record, f)), None)
            if changed is None and "answer" in answers:
                other = main_answer_of(row.where, answers["answer"], row.values.get(answers["answer"]))
                changed = "answer" if other != answer else None
            if changed is not None:
                raise DatasetError(f"{row.where}: the {changed} differs from that of the question's first "
                                   f"row ({first.where}); one question's rows share it")
        samples = tuple(_per_sample_item(row, answers) for row in rows)
        records.append(SampledRecord(**_fields(record), answer=answer, samples=samples))
    return records


class QuestionIndex:
    """Records found by id or by question text (whitespace collapsed): how `a2c score` and a samples file's
    `dataset.references` find a question of a dataset."""

    def __init__(self, records: Sequence[QARecord]) -> None:
        self.by_id = {r.id: r for r in records}
        self.by_question = {" ".join(r.question.split()): r for r in records}

    def find(self, ident: Any, question: str | None) -> QARecord | None:
        """The record of this id, else of this question text; None when neither is known."""
        record = self.by_id.get(ident) if isinstance(ident, str) else None
        if record is None and question is not None:
            record = self.by_question.get(" ".join(question.split()))
        return record


class UnknownQuestionsWarning(UserWarning):
    """Questions of a samples file that its references' dataset lacks, skipped (`unknown: skip`)."""


SHOWN_UNKNOWN = 5  # skipped questions a warning lists; all are counted


def with_references(records: Sequence[SampledRecord], dataset: str, known: Sequence[QARecord],
                    where: Mapping[str, str], id_given: bool, *, skip_unknown: bool = False
                    ) -> list[SampledRecord]:
    """Each record with the id and references of its question in `known` (found by id, else by text), so a
    file of answers alone is scored against a benchmark's references, as `a2c score` scores it.

    Args:
        records: the file's questions with their answers.
        dataset: the references' dataset name, for messages.
        known: that dataset's records.
        where: each record's first row (`file:line`), by id.
        id_given: whether the file has an id column (else its ids are made up and only the text matches).
        skip_unknown: leave out a question the dataset lacks, with one warning for all (else refuse it).

    Returns:
        The records with the dataset's id, references and category (the file's question text and answers).

    Raises:
        DatasetError: a question the dataset lacks (unless skipped), or a row that gives references of its
            own too.
    """
    index, found, skipped = QuestionIndex(known), [], []
    matched_at: dict[str, str] = {}
    for record in records:
        at = where[record.id]
        if record.correct or record.incorrect:
            raise DatasetError(f"{at}: the row gives references and dataset.references names {dataset!r} "
                               "too; keep one of them")
        match = index.find(record.id if id_given else None, record.question)
        if match is None and skip_unknown:
            skipped.append(f"{at}: {record.question[:60]!r}")
            continue
        if match is None:
            raise DatasetError(f"{at}: question {record.question[:60]!r} is not a {dataset} question (by id "
                               "or text), so it has no references there")
        if match.id in matched_at:
            raise DatasetError(f"{at}: question {record.question[:60]!r} is {dataset} question {match.id!r}, "
                               f"as is the one at {matched_at[match.id]}; give each question once")
        matched_at[match.id] = at
        found.append(SampledRecord(id=match.id, question=record.question, best_answer=match.best_answer,
                                   correct=match.correct, incorrect=match.incorrect, category=match.category,
                                   answer=record.answer, samples=record.samples))
    if skipped:
        more = f" and {len(skipped) - SHOWN_UNKNOWN} more" if len(skipped) > SHOWN_UNKNOWN else ""
        warnings.warn(f"{len(skipped)} of {len(records)} questions are no {dataset} question and were "
                      f"skipped: {'; '.join(skipped[:SHOWN_UNKNOWN])}{more}", UnknownQuestionsWarning,
                      stacklevel=2)
    if not found:
        raise DatasetError(f"no question of the file is a {dataset} question (by id or text)")
    return found


def records_from_samples(table: Table, columns: ColumnMap, sample_columns: SampleColumns, *, id_prefix: str,
                         separator: str = ";") -> list[SampledRecord]:
    """Every question of `table` with its answers, checked row by row (see the module's layouts).

    Args:
        table: the file's rows.
        columns: the question's fields (`dataset.columns`).
        sample_columns: the answers' fields (`dataset.sample_columns`).
        id_prefix: ids without an id column are `<prefix>-<question index>`.
        separator: splits a reference list cell that is not a JSON list.

    Returns:
        One record per question, in file order.

    Raises:
        DatasetError: a missing column, a question without samples, an id used twice, a sample that is
            not text, a bad temperature or log-probabilities, at `file:line`.
    """
    layout, answers = sample_columns.resolve(table)
    fields = {f: c for f, c in _question_columns(columns, table).items() if c not in answers.values()}
    read = _per_question if layout == "per_question" else _per_sample
    return read(table, fields, answers, id_prefix, separator)


class SamplesSource(Protocol):
    """What `load_samples` reads of a `a2c.qa.data.own.DatasetSource` (named by its fields, not imported:
    that module names this one's settings types)."""

    @property
    def path(self) -> Path | None: ...
    @property
    def encoding(self) -> str: ...
    @property
    def columns(self) -> ColumnMap: ...
    @property
    def separator(self) -> str: ...
    @property
    def sample_columns(self) -> SampleColumns | None: ...
    @property
    def references(self) -> ReferenceDataset | None: ...


def load_samples(source: SamplesSource, load: Callable[[ReferenceDataset], Sequence[QARecord]]
                 ) -> list[QARecord]:
    """A local JSONL/CSV/parquet file of questions with their answers (`dataset: {name: samples}`); with
    `references`, each question's references come from that dataset, read by `load` (the registry's
    `load_records`)."""
    if source.path is None:
        raise DatasetError("dataset 'samples' needs `path`: a .jsonl, .csv or .parquet file of answers")
    table = read_table(source.path, source.encoding)
    records = records_from_samples(table, source.columns, source.sample_columns or SampleColumns(),
                                   id_prefix=source.path.stem, separator=source.separator)
    if source.references is None:
        return list(records)
    refs = source.references
    known = load(refs)
    layout, _ = (source.sample_columns or SampleColumns()).resolve(table)
    fields = _question_columns(source.columns, table)
    firsts = _first_rows(table, fields, layout)
    where = {r.id: at for r, at in zip(records, firsts, strict=True)}
    found = with_references(records, refs.name, known, where, "id" in fields,
                            skip_unknown=refs.unknown == "skip")
    return list(found)


def _first_rows(table: Table, fields: dict[str, str], layout: Layout) -> list[str]:
    """Where each question starts (`file:line`), in file order."""
    if layout == "per_question":
        return [row.where for row in table.rows]
    firsts, last = [], None
    for row in table.rows:
        key = _group_key(row, fields)
        if key != last:
            firsts.append(row.where)
            last = key
    return firsts


def main_answers(records: Mapping[str, QARecord], ids: Sequence[str]) -> dict[str, str]:
    """The main answer of each of `ids` whose record gives one (only a samples file's records do)."""
    found = {}
    for qid in ids:
        record = records.get(qid)
        if isinstance(record, SampledRecord) and record.answer is not None:
            found[qid] = record.answer.text
    return found


def sampled(records: Sequence[QARecord]) -> list[SampledRecord]:
    """The records of a samples dataset as such; a record without its answers is a programming error."""
    found = [r for r in records if isinstance(r, SampledRecord)]
    if len(found) != len(records):
        raise DatasetError("the samples stage needs the records of a `samples` dataset")
    return found


__all__ = ["QuestionIndex", "ReferenceDataset", "Sample", "SampleColumns", "SampledRecord", "load_samples",
           "main_answer_of", "main_answers", "records_from_samples", "sample_of", "sampled",
           "with_references"]
