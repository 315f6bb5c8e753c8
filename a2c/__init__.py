"""a2c: measure and improve how consistently large language models answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from a2c.run.pipeline import RunResult, run_experiment


def __getattr__(name: str) -> Any:
    """`a2c.run_experiment` and `a2c.RunResult`, imported on first use: `import a2c` (and `a2c --help`)
    stays instant instead of loading the whole pipeline."""
    if name in ("run_experiment", "RunResult"):
        from a2c.run import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'a2c' has no attribute {name!r}")


__all__ = ["RunResult", "__version__", "run_experiment"]
