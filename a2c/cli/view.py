"""`a2c view RUN_DIR...`: a run (or several) as one self-contained HTML file, opened from disk."""

from __future__ import annotations

import argparse
import os
import sys
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
    parser.add_argument("--open", action="store_true",
                        help="open it in the default browser (where none can be opened: says so, with the "
                        "address to open by hand)")
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
        said = open_in_browser(out)
        if said is not None:
            print(f"a2c: warning: --open: {said}", file=sys.stderr)
    return 0


def open_in_browser(path: Path) -> str | None:
    """Open `path` in the default browser; where none can be opened, what to say instead (one line, with
    the address to open by hand), so `--open` on a server over SSH does not end in silence.

    Args:
        path: the HTML file.

    Returns:
        None when a browser took the address; otherwise why none did and the address.
    """
    import webbrowser

    uri = path.resolve().as_uri()
    displayed = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if sys.platform.startswith("linux") and not displayed:
        # without a display, webbrowser falls back to a text browser in this terminal, or to nothing
        return f"no display to open a browser on (DISPLAY and WAYLAND_DISPLAY are unset); open {uri} by hand"
    try:
        opened = webbrowser.open(uri)
    except webbrowser.Error as exc:
        opened, why = False, f" ({exc})"
    else:
        why = ""
    return None if opened else f"no browser could be opened{why}; open {uri} by hand"
