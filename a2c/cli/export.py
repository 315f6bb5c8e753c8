"""`a2c export RUN_DIR --format sft`: a run's decisive Ask-to-Choose picks as chat-format JSONL
(`a2c.qa.export`), to a file written atomically or to stdout."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from a2c import __version__

# `a2c.qa.export`'s (tests/test_export.py holds them equal), restated so building the parser loads no numpy
EXPORT_FORMATS = ("sft",)
SOURCE_CHOICES = ("paraphrase", "temperature", "both")
DEFAULT_MIN_VOTE_SHARE = 0.6


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a run's decisive A2C picks as chat-format JSONL for consistency fine-tuning",
        description="Write the Ask-to-Choose picks of a finished QA run whose vote share reaches "
        "--min-vote-share as chat-format JSONL: one line per question and passed paraphrase, the user turn "
        "mapped to the chosen answer, with the run's provenance under \"a2c\". The picks are not checked "
        "for truth unless --only-accurate is given.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a QA run folder written by `a2c run`")
    parser.add_argument("--format", choices=EXPORT_FORMATS, default="sft",
                        help="sft: {messages: [user, assistant], a2c: provenance} per line (default)")
    # checked by the handler, so a bad share (1.5, nan, a word) is one error line like the run's own
    parser.add_argument("--min-vote-share", default=str(DEFAULT_MIN_VOTE_SHARE), metavar="SHARE",
                        help="keep picks chosen by at least this share of A2C's parsed rank replies, "
                        f"in (0, 1] (default {DEFAULT_MIN_VOTE_SHARE})")
    parser.add_argument("--source", choices=SOURCE_CHOICES, default="paraphrase",
                        help="whose rank replies vote: in-context paraphrases (default), temperature "
                        "samples, or both (the more decisive pick; a question whose picks differ is left "
                        "out)")
    parser.add_argument("--only-accurate", metavar="SIMILARITY",
                        help="keep only picks the run scored accurate under this similarity (needs "
                        "references)")
    parser.add_argument("--keep-dont-know", action="store_true",
                        help="keep picks of the \"don't know\" option (left out by default)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="the JSONL file, replaced only once complete (default: stdout)")
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_file
    from a2c.qa.export import ExportCounts, ExportSettings, check_min_vote_share, sft_lines, write_lines

    share = check_min_vote_share(args.min_vote_share)
    if args.out is not None:
        check_output_file(args.out, "--out")
    counts = ExportCounts()
    settings = ExportSettings(share, args.source, args.keep_dont_know, args.only_accurate)
    lines = sft_lines(args.run_dir, settings, counts, version=__version__)
    if args.out is not None:
        write_lines(lines, args.out)
    else:
        try:
            write_lines(lines, sys.stdout.buffer)
            sys.stdout.flush()
        except BrokenPipeError:  # `a2c export RUN | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 0
    print(f"a2c export: {counts.line()}" + (f"; written: {args.out}" if args.out is not None else ""),
          file=sys.stderr)
    return 0
