"""a2c: measure and improve how consistently large language models answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2c.common.registry import lazy_attributes

__version__ = "0.2.0"

if TYPE_CHECKING:
    from a2c.run.pipeline import RunResult, run_experiment


# imported on first use: `import a2c` (and `a2c --help`) stays instant instead of loading the whole pipeline
__getattr__ = lazy_attributes(__name__, {"a2c.run.pipeline": ("run_experiment", "RunResult")})


__all__ = ["RunResult", "__version__", "run_experiment"]
