"""`a2c report RUN_DIR`: regenerate the tables, plots and report.md of a finished run (no models)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="regenerate a run folder's tables, plots and report.md")
    parser.add_argument("run_dir", type=Path, help="a run folder written by `a2c run`")
    parser.add_argument("--human-labels", type=Path,
                        help="CSV: id, source, phase, one column per annotator → Spearman ρ and Fleiss' κ")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from a2c.report import write_report

    path = write_report(args.run_dir, args.human_labels)
    print(path.read_text(encoding="utf-8"))
    print(f"written: {path}")
    return 0
