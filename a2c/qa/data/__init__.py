"""The QA wing's dataset loaders: TruthfulQA (local CSV or the Hugging Face hub), the project's
quickstart set, your own questions (`file`: a JSONL/CSV/parquet file; `hf`: a Hugging Face dataset)
through a column mapping, and your own answers (`samples`: questions with the answers already made).

Every loader returns `QARecord`s; `load_records(name, path=..., limit=...)` picks one by registry name.
Each registry entry says whether it takes a `path` and which other source settings, so a config that
gives a loader a setting it ignores fails when it loads instead of being silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from a2c.common.files import DEFAULT_ENCODING
from a2c.common.registry import Registry
from a2c.data.errors import DatasetError
from a2c.qa.data.columns import TRUTHFULQA_HUB_COLUMNS, ColumnMap
from a2c.qa.data.own import DatasetSource, load_file, load_hub
from a2c.qa.data.quickstart import load_quickstart
from a2c.qa.data.records import QARecord
from a2c.qa.data.samples import ReferenceDataset, SampleColumns, SampledRecord, load_samples
from a2c.qa.data.sets import FIELD_SETS
from a2c.qa.data.truthfulqa import load_truthfulqa_csv, load_truthfulqa_hub, records_from_hf_rows


@dataclass(frozen=True)
class DatasetLoader:
    """A named dataset: how it loads, whether it takes a `path` (a local file, or a hub dataset's
    owner/name), and which other `DatasetSource` settings."""

    load: Callable[[DatasetSource], list[QARecord]]
    path: Literal["required", "optional", "none"]
    settings: frozenset[str] = frozenset()
    path_kind: Literal["file", "hub"] = "file"

    def check(self, name: str, given: Set[str]) -> None:
        """DatasetError for a missing path or a setting this dataset does not read."""
        if self.path == "required" and "path" not in given:
            raise DatasetError(f"dataset {name!r} needs `path`")
        takes = self.settings | ({"path"} if self.path != "none" else set())
        extra = sorted(given - takes)
        if extra:
            raise DatasetError(f"dataset {name!r} takes no {', '.join(extra)} (it takes "
                               f"{', '.join(sorted(takes)) or 'nothing'})")


DATASETS: Registry[DatasetLoader] = Registry("dataset", group="a2c.datasets")


def _truthfulqa(source: DatasetSource) -> list[QARecord]:
    if source.path is None:
        return load_truthfulqa_hub()
    return load_truthfulqa_csv(source.path, source.encoding)


def _quickstart(source: DatasetSource) -> list[QARecord]:
    return load_quickstart()


DATASETS.register("truthfulqa")(DatasetLoader(_truthfulqa, "optional", frozenset({"encoding"})))
DATASETS.register("quickstart")(DatasetLoader(_quickstart, "none"))
DATASETS.register("file")(DatasetLoader(load_file, "required",
                                        frozenset({"encoding", "columns", "separator"})))
def _samples(source: DatasetSource) -> list[QARecord]:
    return load_samples(source, lambda refs: load_records(refs.name, refs.path, encoding=refs.encoding))


DATASETS.register("samples")(DatasetLoader(_samples, "required",
                                           frozenset({"encoding", "columns", "separator", "sample_columns",
                                                      "references"})))
DATASETS.register("hf")(DatasetLoader(load_hub, "required",
                                      frozenset({"columns", "separator", "config", "split", "revision"}),
                                      path_kind="hub"))
# the field's question sets (`a2c.qa.data.sets`): the hub by default, or a local copy in the set's layout
for _set in FIELD_SETS:
    DATASETS.register(_set.name)(DatasetLoader(_set.load, "optional", frozenset({"encoding", "split",
                                                                                 "revision"})))

_DEFAULTS = DatasetSource()


def given_settings(settings: dict[str, Any]) -> set[str]:
    """The source settings that differ from their defaults (a resolved config lists every one)."""
    return {k for k, v in settings.items() if v is not None and v != getattr(_DEFAULTS, k)}


def load_records(name: str, path: str | Path | None = None, limit: int | None = None, *,
                 encoding: str = DEFAULT_ENCODING, **settings: Any) -> list[QARecord]:
    """The first `limit` records (all when None) of a registered dataset; `settings` are further
    `DatasetSource` fields (`columns` as a `ColumnMap` or a dict, `separator`, `config`, `split`,
    `revision`). A local file is read whole, so a bad row anywhere fails before any record is used."""
    if limit is not None and limit < 1:
        raise DatasetError(f"limit must be >= 1, got {limit}")
    unknown = sorted(set(settings) - {f.name for f in fields(DatasetSource)})
    if unknown:
        raise DatasetError(f"unknown dataset setting(s) {unknown}")
    if isinstance(settings.get("columns"), dict):
        settings["columns"] = ColumnMap(**settings["columns"])
    if isinstance(settings.get("sample_columns"), dict):
        settings["sample_columns"] = SampleColumns(**settings["sample_columns"])
    if isinstance(settings.get("references"), dict):
        settings["references"] = ReferenceDataset(**settings["references"])
    loader = DATASETS.get(name)
    loader.check(name, given_settings({"path": path, "encoding": encoding, **settings}))
    source = DatasetSource(path=Path(path) if path is not None else None, encoding=encoding,
                           **{k: v for k, v in settings.items() if v is not None})
    records = loader.load(source)
    return records[:limit] if limit is not None else records


__all__ = ["DATASETS", "TRUTHFULQA_HUB_COLUMNS", "ColumnMap", "DatasetError", "DatasetLoader",
           "DatasetSource", "QARecord", "ReferenceDataset", "SampleColumns", "SampledRecord",
           "given_settings", "load_quickstart", "load_records", "load_samples", "load_truthfulqa_csv",
           "load_truthfulqa_hub", "records_from_hf_rows"]
