"""`a2c compare RUN_DIR...`: the paper's Table 5 across QA runs, with paired bootstrap intervals."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="put QA runs side by side: before → after A2C with 95%% paired bootstrap intervals",
        description="The paper's Table 5 across runs: rows = variation method × run, columns = accuracy "
        "per similarity and Cons_sem per judge before → after Ask-to-Choose, each change with its 95% "
        "paired bootstrap interval over questions. Runs that share their candidates and differ only in "
        "ask_to_choose.option_order or vote also get the share of questions whose A2C pick differs between "
        "two of them (order sensitivity). Writes compare.md, compare.csv, compare.png and "
        "compare_order.csv.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                        help="QA run folders of `a2c run`")
    parser.add_argument("-o", "--output", type=Path, default=Path("compare"),
                        help="folder for compare.md, compare.csv, compare.png, compare_order.csv "
                        "(default: compare/)")
    add_comparison_options(parser)
    parser.set_defaults(handler=_compare)


def add_comparison_options(parser: argparse.ArgumentParser) -> None:
    """How runs are compared (`a2c compare`, and `a2c view` of several runs): their labels and whether
    runs of different question sets are compared on the questions they share."""
    parser.add_argument("--label", action="append", metavar="L",
                        help="name of a run in the comparison (once per run, in order; default: its model)")
    parser.add_argument("--intersect", action="store_true",
                        help="compare runs of different question sets on the questions they share")


def _compare(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_folder
    from a2c.view import open_comparable

    runs, comparer = open_comparable(args.run_dirs)  # a task that cannot compare its runs is refused here
    check_output_folder(args.output, "-o", list(comparer.files))
    comparison = comparer.compare(runs, args.label, args.intersect)
    print(comparison.markdown())
    for path in comparison.write(args.output):
        print(f"written: {path}")
    return 0
