"""Task-neutral reading of data files: `a2c.data.tables` (JSONL, CSV and parquet rows, each with the line
it came from) and `a2c.data.errors` (`DatasetError`). A task's own loaders live in its wing
(`a2c.qa.data`: questions with references; `a2c.classification.data`: labelled items).

The QA names this package held in 0.1 (`load_records`, `QARecord`, `DATASETS`, ...) still resolve here,
with a `DeprecationWarning` naming their new home: `a2c.scoring` for `load_records`, `QARecord`,
`DatasetError` and `DATASETS`, `a2c.qa.data` for the rest. They will be removed in a later release.
"""

from __future__ import annotations

import warnings
from typing import Any

_PUBLIC = frozenset({"DATASETS", "DatasetError", "QARecord", "load_records"})  # a2c.scoring's
_MOVED = _PUBLIC | frozenset({"TRUTHFULQA_HUB_COLUMNS", "ColumnMap", "DatasetLoader", "DatasetSource",
                              "given_settings", "load_quickstart", "load_truthfulqa_csv",
                              "load_truthfulqa_hub", "records_from_hf_rows"})


def __getattr__(name: str) -> Any:
    """A deprecated alias of a name that moved into the QA wing (PEP 562: looked up only when missing)."""
    if name not in _MOVED:
        raise AttributeError(f"module 'a2c.data' has no attribute {name!r}")
    from a2c.qa import data  # the aliases' only way into the wing (tests/test_architecture.py lists it)

    home = "a2c.scoring" if name in _PUBLIC else "a2c.qa.data"
    warnings.warn(f"a2c.data.{name} is deprecated: import it from {home}", DeprecationWarning, stacklevel=2)
    return getattr(data, name)
