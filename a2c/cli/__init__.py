"""The `a2c` command line.

Each subcommand group lives in its own module under `a2c.cli` exposing `register(subparsers)`; handlers
import heavy libraries (torch, transformers) lazily so `a2c --help` stays instant.

Failures end in one line on stderr, never a traceback (unless `--debug` or `A2C_DEBUG=1`): an `A2CError`
is the user's to fix (`a2c: error: ...`, an optional `hint:` line, exit 2, as for argparse's usage
errors), and so is a fault of the machine (a full disk, a read-only folder, no memory: `a2c.system.faults`);
a GPU out of memory names the batch size to lower; any other exception is a2c's (exit 1), its line naming
where in a2c it was raised (the last a2c frame, `a2c/llm/sampling.py:120`); Ctrl-C exits 130, SIGTERM
(handled as a Ctrl-C) 143. Other libraries' progress bars (weight loading, GGUF conversion) are silenced
unless `--debug`; `--no-progress` silences a2c's own too.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from pathlib import Path
from types import TracebackType

from a2c import __version__
from a2c.common.errors import A2CError, OneLineWarning
from a2c.common.redact import redact
from a2c.common.registry import resolve
from a2c.common.untrusted import printable
from a2c.system.faults import environment_fault, gpu_memory_fault
from a2c.system.interrupts import Terminated, sigterm_raises

__all__ = ["build_parser", "main"]

_python_warning_text = warnings.formatwarning

# modules under a2c.cli that add subcommands, in the order `a2c --help` lists them
COMMAND_MODULES: tuple[str, ...] = ("metrics", "run", "probe", "report", "view", "compare", "export", "score",
                                    "judge", "calibrate", "models", "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2c",
        description="Measure and improve how consistently LLMs answer: paraphrases, temperatures, "
        "pairwise judges, consistency metrics and Ask-to-Choose.",
    )
    parser.add_argument("--version", action="version", version=f"a2c {__version__}")
    debug_help = "show the traceback of an error (also: environment variable A2C_DEBUG=1)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        resolve(f"a2c.cli.{name}:register")(sub)
    _debug_everywhere(parser, debug_help)
    return parser


def _debug_everywhere(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`a2c run x.yaml --debug` works as `a2c --debug run x.yaml` does (users append it to the command
    that failed), at every level of subcommands; SUPPRESS keeps an absent flag from resetting a given one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in {id(p): p for p in action.choices.values()}.values():
                command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                     help=help_text)
                _debug_everywhere(command, help_text)


def _one_line(text: str) -> str:
    """A message on one line, so each failure is exactly one line however its text was built, with any
    credential it quotes masked (a server's error body, a URL) and any control character it quotes (a
    question, a file name) escaped, so it cannot clear the terminal or forge a line."""
    return printable(redact(" ".join(part.strip() for part in text.splitlines() if part.strip())))


def _user_error(exc: A2CError, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"a2c: error: {_one_line(str(exc))}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {_one_line(exc.hint)}", file=sys.stderr)
    return 2


_PACKAGE = Path(__file__).resolve().parent.parent  # the a2c folder


def raised_at(tb: TracebackType | None) -> str | None:
    """`a2c/<module>.py:<line>` of the last traceback frame inside the a2c package (the frames after it are
    in the libraries a2c called), None when no frame is a2c's but this dispatcher's."""
    where = None
    for frame, line in traceback.walk_tb(tb):
        path = Path(frame.f_code.co_filename).resolve()
        if path.is_relative_to(_PACKAGE) and path != Path(__file__).resolve():
            where = f"{_PACKAGE.name}/{path.relative_to(_PACKAGE).as_posix()}:{line}"
    return where


def _warning_text(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  line: str | None = None) -> str:
    """A warning for the user (a renamed config key, an unused plug-in) as one line, like the CLI's errors;
    other warnings as Python shows them."""
    if issubclass(category, OneLineWarning):
        return f"a2c: warning: {message}\n"
    return _python_warning_text(message, category, filename, lineno, line)


def main(argv: list[str] | None = None) -> int:
    warnings.formatwarning = _warning_text
    debug = os.environ.get("A2C_DEBUG", "").lower() not in {"", "0", "false", "no", "off"}
    command = None
    try:
        args = build_parser().parse_args(argv)
        debug, command = debug or args.debug, args.command
        if not debug or getattr(args, "no_progress", False):
            from a2c.system.progress import quiet_library_progress

            quiet_library_progress()
        with sigterm_raises():  # SIGTERM stops a2c as a Ctrl-C does: grace for requests in flight, clean-up
            return int(args.handler(args) or 0)
    except A2CError as exc:
        return _user_error(exc, debug)
    except KeyboardInterrupt as exc:
        if debug:
            traceback.print_exc()
        resume = "; finished stages and model calls are kept, a rerun resumes from them"
        said, status = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        print(f"a2c: {said}{resume if command == 'run' else ''}", file=sys.stderr)
        return status
    except Exception as exc:  # a full disk, no memory: the user's to fix; anything else is a2c's mistake
        fault = environment_fault(exc) or gpu_memory_fault(exc)
        if fault is not None:
            return _user_error(fault, debug)
        if debug:
            traceback.print_exc()
        detail = f"{type(exc).__name__}: {_one_line(str(exc))}" if str(exc).strip() else type(exc).__name__
        where = raised_at(exc.__traceback__)
        at = f"raised at {where}; " if where else ""
        print(f"a2c: unexpected error: {detail} ({at}rerun with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
