"""`a2c view RUN_DIR...`: a run (or several) as one self-contained HTML file, opened from disk."""

from __future__ import annotations

import argparse
from pathlib import Path

from a2c.cli.compare import add_comparison_options

DEFAULT_MANY = Path("a2c-view.html")  # where the view of several runs goes unless -o names a file


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "view", help="one self-contained HTML file to browse runs: report, question list, question pages",
        description="Write one HTML file (no server, no network: style, script and data inlined) with the "
        "run's report, a filterable and sortable list of its questions (items) and a page per question "
        "with every paraphrase, answer, agreement matrix, cluster and rank prompt. Several QA runs are "
        "compared first, as `a2c compare` does.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders of `a2c run`")
    parser.add_argument("-o", "--output", type=Path,
                        help=f"the HTML file (default: RUN_DIR/report.html for one run, {DEFAULT_MANY} for "
                        "several)")
    parser.add_argument("--open", action="store_true", help="open it in the default browser")
    add_comparison_options(parser)
    parser.set_defaults(handler=_view)


def _view(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_file
    from a2c.view import HTML_FILE, view_file, write_view

    default = args.run_dirs[0] / HTML_FILE if len(args.run_dirs) == 1 else DEFAULT_MANY
    check_output_file(view_file(args.output or default), "-o")
    out = write_view(args.run_dirs, args.output or default, labels=args.label, intersect=args.intersect)
    print(f"written: {out}")
    if args.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0
