"""Your own questions: a local JSONL/CSV/parquet file or a Hugging Face dataset, through a column mapping.

Both read rows through the shared machinery (`a2c.data.tables` for files, the same `Table` for hub rows)
and turn them into records with `a2c.qa.data.columns`, so a file and a hub dataset with the same columns give
the same records. References are optional per question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from a2c.common.files import DEFAULT_ENCODING
from a2c.data.errors import DatasetError
from a2c.data.tables import Row, Table, read_table
from a2c.qa.data.columns import ColumnMap, records_from_table
from a2c.qa.data.records import QARecord

if TYPE_CHECKING:
    from a2c.qa.data.samples import ReferenceDataset, SampleColumns

LOCAL_FILE_HINT = ("export it on a connected machine "
                   "(`datasets.load_dataset(...).to_json('questions.jsonl')`) and use "
                   "`dataset: {name: file, path: questions.jsonl, columns: {...}}`")


@dataclass(frozen=True)
class DatasetSource:
    """Where a dataset's rows come from and how to read them; each loader uses the fields it declares."""

    path: Path | None = None
    encoding: str = DEFAULT_ENCODING
    columns: ColumnMap = field(default_factory=ColumnMap)
    separator: str = ";"
    config: str | None = None  # hub dataset configuration (subset) name
    split: str | None = None  # hub split; None = the only one
    revision: str | None = None  # hub git revision (branch, tag or commit)
    sample_columns: SampleColumns | None = None  # the answers' columns (`samples`)
    references: ReferenceDataset | None = None  # the dataset a samples file's references come from


def load_file(source: DatasetSource) -> list[QARecord]:
    """A local JSONL/CSV/parquet file; ids default to `<file stem>-<row index>`."""
    if source.path is None:
        raise DatasetError("dataset 'file' needs `path`: a .jsonl, .csv or .parquet file of questions")
    table = read_table(source.path, source.encoding)
    return records_from_table(table, source.columns, id_prefix=source.path.stem, separator=source.separator)


def hub_table(repo: str, config: str | None, split: str | None, revision: str | None) -> Table:
    """The rows of a hub dataset as a `Table` (`owner/name:row N` per row), or one DatasetError saying how
    to use a local file instead when the hub is off, unreachable or does not have it."""
    from a2c.system.hub import hub_offline, hub_unreachable

    what = f"hub dataset {repo!r}" + (f" (config {config!r})" if config else "")
    try:
        import datasets  # optional: the `data` extra
    except ImportError:
        raise DatasetError(f"loading the {what} needs the `datasets` package (pip install 'a2c[data]')",
                           hint=LOCAL_FILE_HINT) from None
    why = "HF_HUB_OFFLINE is set" if hub_offline() else hub_unreachable()
    if why:
        raise DatasetError(f"cannot load the {what}: {why}", hint=LOCAL_FILE_HINT)
    try:
        loaded = datasets.load_dataset(repo, config, split=split, revision=revision)
    except Exception as exc:  # the hub raises many types (missing repo, config, split, network): all one
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(f"cannot load the {what}: {first}", hint=LOCAL_FILE_HINT) from None
    if isinstance(loaded, datasets.DatasetDict):
        if len(loaded) != 1:
            raise DatasetError(f"the {what} has splits {sorted(loaded)}; set `dataset.split` to one")
        loaded = next(iter(loaded.values()))
    rows = [Row(f"{repo}:row {i + 1}", dict(values)) for i, values in enumerate(loaded)]
    if not rows:
        raise DatasetError(f"the {what} has no rows")
    return Table(Path(repo), tuple(loaded.column_names), rows)


def load_hub(source: DatasetSource) -> list[QARecord]:
    """A Hugging Face dataset (`path: owner/name`); ids default to `<name>-<row index>`."""
    if source.path is None:
        raise DatasetError("dataset 'hf' needs `path`: the hub dataset's owner/name")
    repo = source.path.as_posix()
    table = hub_table(repo, source.config, source.split, source.revision)
    return records_from_table(table, source.columns, id_prefix=repo.rsplit("/", 1)[-1],
                              separator=source.separator)
