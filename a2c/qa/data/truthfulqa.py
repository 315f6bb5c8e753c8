"""TruthfulQA (generation split) from a local CSV or the Hugging Face dataset; both give the same records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from a2c.common.files import DEFAULT_ENCODING, read_text
from a2c.common.untrusted import is_blank
from a2c.common.wording import plural
from a2c.data.errors import DatasetError
from a2c.data.tables import ENCODING_HINT, Row, Table, csv_rows
from a2c.qa.data.columns import TRUTHFULQA_HUB_COLUMNS, records_from_table
from a2c.qa.data.own import hub_table
from a2c.qa.data.records import QARecord, split_references, with_best

HF_DATASET = "truthfulqa/truthful_qa"
HF_CONFIG = "generation"
CSV_COLUMNS = ("Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers")
# cells every row must fill: a record needs a question, a best (correct) answer and an incorrect answer
FILLED_COLUMNS = ("Question", "Best Answer", "Incorrect Answers")
LOCAL_HINT = "set `dataset.path` to a local copy of the benchmark's TruthfulQA.csv"


def record_from_fields(index: int, question: str, best: str, correct: Iterable[str],
                       incorrect: Iterable[str], category: str) -> QARecord:
    best = best.strip()
    wrong = tuple(r.strip() for r in incorrect if r.strip())
    return QARecord(id=f"truthfulqa-{index}", question=question.strip(), best_answer=best,
                    correct=with_best(best, correct), incorrect=wrong, category=category.strip())


def _csv_record(where: str, index: int, header: Sequence[str], cells: Sequence[str]) -> QARecord:
    """One row as a record, or a DatasetError (prefixed `where`, i.e. `file:line`) saying what is wrong."""
    if len(cells) < len(header):
        raise DatasetError(f"{where}: the row has {plural(len(cells), 'cell')}, the header {len(header)} "
                           "(a missing field, or a line break inside an unquoted cell?)")
    if any(cell.strip() for cell in cells[len(header):]):
        raise DatasetError(f"{where}: the row has {plural(len(cells), 'cell')}, the header {len(header)} "
                           "(a comma inside an unquoted cell?)")
    row = dict(zip(header, cells, strict=False))
    # a cell of zero-width spaces, NBSP or tabs alone is as empty as a blank one
    empty = [name for name in FILLED_COLUMNS if all(is_blank(r) for r in split_references(row[name]))]
    if empty:
        raise DatasetError(f"{where}: empty {' and '.join(map(repr, empty))} cell (each question needs a "
                           "question, a best answer and at least one incorrect answer; invisible "
                           "characters alone count as empty)")
    correct, incorrect = split_references(row["Correct Answers"]), split_references(row["Incorrect Answers"])
    return record_from_fields(index, row["Question"], row["Best Answer"], correct, incorrect, row["Category"])


def load_truthfulqa_csv(path: str | Path, encoding: str = DEFAULT_ENCODING) -> list[QARecord]:
    """Read the benchmark's original CSV layout, checking every row; errors name the file and the line
    (`TruthfulQA.csv:12: ...`: a row's first line, which is its row number when no cell holds a line
    break)."""
    path = Path(path)
    text = read_text(path, DatasetError, what="TruthfulQA CSV", encoding=encoding, hint=ENCODING_HINT)
    lines = csv_rows(path, text)
    first, header = next(lines, (1, []))
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise DatasetError(f"{path}:{first}: not a TruthfulQA CSV, missing column(s) {missing}",
                           hint=f"the first row must name the columns {', '.join(CSV_COLUMNS)}")
    records = [_csv_record(f"{path}:{start}", index, header, cells)
               for index, (start, cells) in enumerate(lines)]
    if not records:
        raise DatasetError(f"{path}: no questions, only a header row")
    return records


def records_from_hf_rows(rows: Iterable[Mapping[str, object]]) -> list[QARecord]:
    """Rows of `truthfulqa/truthful_qa` (config `generation`): lists instead of `;`-joined cells, read through
    the generic column mapping (`TRUTHFULQA_HUB_COLUMNS`), so they give the CSV's records."""
    rows = list(rows)
    table = Table(Path(HF_DATASET), tuple(rows[0]) if rows else (),
                  [Row(f"{HF_DATASET}:row {i + 1}", dict(r)) for i, r in enumerate(rows)])
    return records_from_table(table, TRUTHFULQA_HUB_COLUMNS, id_prefix="truthfulqa")


def load_truthfulqa_hub(split: str = "validation") -> list[QARecord]:
    """The same records from the Hugging Face hub, where one is reachable (needs the `datasets` package)."""
    try:
        table = hub_table(HF_DATASET, HF_CONFIG, split, None)
    except DatasetError as exc:  # the hub's own hint is for a dataset of one's own; this one has a CSV
        raise DatasetError(str(exc), hint=LOCAL_HINT) from None
    return records_from_table(table, TRUTHFULQA_HUB_COLUMNS, id_prefix="truthfulqa")
