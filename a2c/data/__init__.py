"""Task-neutral reading of data files: `a2c.data.tables` (JSONL, CSV and parquet rows, each with the line
it came from) and `a2c.data.errors` (`DatasetError`). A task's own loaders live in its wing
(`a2c.qa.data`: questions with references; `a2c.classification.data`: labelled items).

The QA names this package held in 0.1 (`load_records`, `QARecord`, `DATASETS`, ...) still resolve here,
with a `DeprecationWarning` naming their new home: `a2c.scoring` for `load_records`, `QARecord`,
`DatasetError` and `DATASETS`, `a2c.qa.data` for the rest. They go in 0.3.0.
"""

from __future__ import annotations

from a2c.common.registry import lazy_attributes

_PUBLIC = frozenset({"DATASETS", "DatasetError", "QARecord", "load_records"})  # a2c.scoring's
_MOVED = _PUBLIC | frozenset({"TRUTHFULQA_HUB_COLUMNS", "ColumnMap", "DatasetLoader", "DatasetSource",
                              "given_settings", "load_quickstart", "load_truthfulqa_csv",
                              "load_truthfulqa_hub", "records_from_hf_rows"})

# the deprecated aliases: what the lazy `__getattr__` below resolves, each with its warning
__all__ = sorted(_MOVED)

# the aliases' only way into the wing (tests/test_architecture.py lists it)
__getattr__ = lazy_attributes(__name__, {"a2c.qa.data": _MOVED}, deprecated=lambda name: (
    f"a2c.data.{name} is deprecated: import it from {'a2c.scoring' if name in _PUBLIC else 'a2c.qa.data'}"))
