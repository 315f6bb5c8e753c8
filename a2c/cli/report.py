"""`a2c report RUN_DIR`: rescore a finished run and regenerate its tables, plots, report.md and report.html.

Accuracy and consistency metrics are recomputed from the run's stored answers, choices and agreement
matrices with the current scoring code (no generation), so a run scored by an older a2c is brought up to
date without regenerating anything.
"""

from __future__ import annotations

import argparse
import contextlib
import math
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


def check_human_labels(path: Path) -> None:
    """A labels file the report can use: UTF-8 text (the error names the line) whose numeric labels are
    finite. NaN or inf parse as numbers and used to crash the rank correlation (exit 1, no file named);
    everything else about the file the report checks itself."""
    from a2c.common.files import read_text
    from a2c.qa.report import ReportError, read_human_labels

    if not path.is_file():
        return  # the report says so (or that this task takes no labels)
    read_text(path, ReportError, what="human labels file", hint="save the labels file as UTF-8")
    for key, values in read_human_labels(path).items():
        for value in values:
            with contextlib.suppress(ValueError):  # a word: the report says labels must be numbers
                if not math.isfinite(float(value)):
                    raise ReportError(f"{path}: the label {value!r} of set {', '.join(key)} is not a finite "
                                      "number", hint="labels are numbers (0/1 or a 1-5 scale); leave out a "
                                      "set nobody labelled rather than marking it NaN")


def _report(args: argparse.Namespace) -> int:
    from a2c.run.open_run import stored_run
    from a2c.run.pipeline import report_run
    from a2c.system.progress import generation_progress

    if args.human_labels is not None:
        check_human_labels(args.human_labels)  # before rescoring, which loads models
    with generation_progress("report"):  # status lines while a similarity model loads and scores
        report_run(args.run_dir, rescore=not args.no_rescore, human_labels=args.human_labels, progress=True)
    # the result in a few lines, as `a2c run` ends; the whole report is in the file (and `a2c view`)
    run = stored_run(args.run_dir)
    if run.task.headline is not None:
        print(run.task.headline(run.task.read_summary(run.folder)) + "\n")
    print(f"written: {args.run_dir / 'report.md'}")
    if not args.no_html:
        from a2c.view import HTML_FILE, write_view

        print(f"written: {write_view([args.run_dir], args.run_dir / HTML_FILE)}")
    return 0
