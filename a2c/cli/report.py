"""`a2c report RUN_DIR`: rescore a finished run and regenerate its tables, plots, report.md and report.html.

Accuracy and consistency metrics are recomputed from the run's stored answers, choices and agreement
matrices with the current scoring code (no generation), so a run scored by an older a2c is brought up to
date without regenerating anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="rescore a run folder and regenerate its tables, plots, report.md and report.html",
        description="Recompute the metrics of a finished run from its stored answers, choices and "
        "agreement matrices (no generation; the embedding similarity loads its model), then write "
        "the tables, plots, report.md and report.html (`a2c view`).")
    parser.add_argument("run_dir", type=Path, help="a run folder written by `a2c run`")
    parser.add_argument("--human-labels", type=Path,
                        help="CSV: id, source, phase, one column per annotator → Spearman ρ and Fleiss' κ")
    parser.add_argument("--no-rescore", action="store_true",
                        help="keep the stored metrics.jsonl/summary.json; only redraw tables and plots")
    parser.add_argument("--no-html", action="store_true",
                        help="skip report.html (the run as one self-contained page: `a2c view`)")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from a2c.pipeline import report_run

    print(report_run(args.run_dir, rescore=not args.no_rescore, human_labels=args.human_labels,
                     progress=True))
    print(f"written: {args.run_dir / 'report.md'}")
    if not args.no_html:
        from a2c.view import HTML_FILE, write_view

        print(f"written: {write_view([args.run_dir], args.run_dir / HTML_FILE)}")
    return 0
