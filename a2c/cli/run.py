"""`a2c run CONFIG.yaml`: run or resume an experiment; prints the per-stage summary at the end."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run (or resume) an experiment config into its run folder")
    parser.add_argument("config", type=Path, help="experiment config (YAML)")
    parser.add_argument("--output", type=Path,
                        help="run folder (default: the config's `output`, else runs/NAME)")
    parser.add_argument("--limit", type=int, help="only the first N questions (overrides the config)")
    parser.add_argument("--force", action="store_true",
                        help="start over when the run folder holds a run of a different config")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from a2c.config import ConfigError, load_config
    from a2c.pipeline import run_experiment

    config = load_config(args.config)
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {args.limit}")
        config = config.model_copy(update={"limit": args.limit})
    result = run_experiment(config, run_dir=args.output, force=args.force, progress=not args.no_progress)
    print(result.summary_table())
    print(f"run folder: {result.folder}  (report: {result.folder / 'report.md'})")
    return 0
