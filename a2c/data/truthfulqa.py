"""TruthfulQA (generation split) from a local CSV or the Hugging Face dataset; both give the same records."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path

from a2c.data.errors import DatasetError
from a2c.data.records import QARecord

HF_DATASET = "truthfulqa/truthful_qa"
HF_CONFIG = "generation"
CSV_COLUMNS = ("Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers")


def split_references(cell: str) -> tuple[str, ...]:
    """The CSV stores reference lists as one `; `-separated cell."""
    return tuple(part.strip() for part in cell.split(";") if part.strip())


def _with_best(best: str, refs: Iterable[str]) -> tuple[str, ...]:
    refs = tuple(r.strip() for r in refs if r.strip())
    return refs if best in refs else (best, *refs)


def record_from_fields(index: int, question: str, best: str, correct: Iterable[str],
                       incorrect: Iterable[str], category: str) -> QARecord:
    best = best.strip()
    wrong = tuple(r.strip() for r in incorrect if r.strip())
    return QARecord(id=f"truthfulqa-{index}", question=question.strip(), best_answer=best,
                    correct=_with_best(best, correct), incorrect=wrong, category=category.strip())


def load_truthfulqa_csv(path: str | Path) -> list[QARecord]:
    """Read the benchmark's original CSV layout; errors name the file and the row."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"TruthfulQA CSV not found: {path}")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DatasetError(f"{path}: not a TruthfulQA CSV, missing column(s) {missing}")
        records = []
        for row_number, row in enumerate(reader):
            try:
                records.append(record_from_fields(
                    row_number, row["Question"], row["Best Answer"], split_references(row["Correct Answers"]),
                    split_references(row["Incorrect Answers"]), row["Category"]))
            except ValueError as exc:
                raise DatasetError(f"{path}: row {row_number + 2}: {exc}") from None
    return records


def records_from_hf_rows(rows: Iterable[Mapping[str, object]]) -> list[QARecord]:
    """Rows of `truthfulqa/truthful_qa` (config `generation`): lists instead of `;`-joined cells."""
    return [record_from_fields(i, str(r["question"]), str(r["best_answer"]), list(r["correct_answers"]),
                               list(r["incorrect_answers"]), str(r["category"]))
            for i, r in enumerate(rows)]


def load_truthfulqa_hub(split: str = "validation") -> list[QARecord]:
    """The same records from the Hugging Face hub, where one is reachable (needs the `datasets` package)."""
    try:
        import datasets  # optional dependency, only needed for the hub source
    except ImportError:
        raise DatasetError("loading TruthfulQA from the hub needs the `datasets` package "
                           "(pip install datasets); or set dataset.path to a local TruthfulQA.csv") from None
    try:
        rows = datasets.load_dataset(HF_DATASET, HF_CONFIG, split=split)
    except Exception as exc:  # the hub is unreachable in many setups; say how to avoid it
        raise DatasetError(f"could not load {HF_DATASET} ({HF_CONFIG}) from the hub: {exc}. "
                           "Set dataset.path to a local TruthfulQA.csv instead.") from None
    return records_from_hf_rows(rows)
