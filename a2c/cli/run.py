"""`a2c run CONFIG.yaml`: run, resume or update an experiment; says per stage whether it runs and why, and
prints the per-stage summary at the end."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2c.config import TaskConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run (or resume) an experiment config into its run folder",
        description="Run an experiment config (YAML) through its stages: for QA, paraphrases and "
        "temperature samples of every question, their answers, the judges' agreement matrices, "
        "Ask-to-Choose and the judges again, the metrics and report.md, all in the run folder. A rerun "
        "reuses every stage whose settings and inputs are unchanged, so an interrupted run resumes and a "
        "changed config re-runs only what it affects; each line says whether a stage runs and why. "
        "Relative paths in the config are read from its folder.")
    parser.add_argument("config", type=Path, help="experiment config (YAML)")
    parser.add_argument("--output", type=Path,
                        help="run folder (default: the config's `output`, else runs/NAME)")
    parser.add_argument("--limit", type=int, help="only the first N questions (overrides the config)")
    parser.add_argument("--force", action="store_true",
                        help="start over when the run folder holds a run of another experiment (name), "
                        "or use a non-empty folder that holds no a2c run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the request/judge cache (every model call runs; an "
                        "interrupted stage then restarts from its beginning)")
    parser.set_defaults(handler=_run)


def apply_overrides(config: TaskConfig, *, limit: int | None, no_cache: bool) -> TaskConfig:
    """The config a run uses once the command-line flags are applied on top of the file."""
    from a2c.config import ConfigError

    update: dict[str, object] = {}
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {limit}")
        update["limit"] = limit
    if no_cache:
        update["generator"] = config.generator.model_copy(update={"cache": None})
        if config.aux_generator is not None:
            update["aux_generator"] = config.aux_generator.model_copy(update={"cache": None})
    return config.model_copy(update=update)


def _run(args: argparse.Namespace) -> int:
    from a2c.config import load_config
    from a2c.llm.progress import generation_progress
    from a2c.pipeline import run_experiment

    config = apply_overrides(load_config(args.config), limit=args.limit, no_cache=args.no_cache)
    with generation_progress("generate", enabled=not args.no_progress):  # a bar per generate call
        result = run_experiment(config, run_dir=args.output, force=args.force, progress=not args.no_progress,
                                log=print)
    print(result.summary_table())
    print(f"run folder: {result.folder}  (report: {result.folder / 'report.md'})")
    return 0
