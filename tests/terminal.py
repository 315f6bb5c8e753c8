"""A command on a real terminal (a pty of a set size), and the screen its output leaves."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path


def on_a_terminal(argv: Sequence[str], cwd: Path, env: Mapping[str, str], columns: int = 100) -> str:
    """What `argv` writes to stdout and stderr when both are one terminal `columns` wide; fails the test
    unless it exits 0."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    process = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=follower, stdout=follower,
                               stderr=follower, close_fds=True)
    os.close(follower)
    raw = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        raw += chunk
    os.close(leader)
    assert process.wait(timeout=600) == 0, raw.decode(errors="replace")[-2000:]
    return raw.decode()


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw`: `\\r` returns to the line's start, later characters overwrite
    earlier ones, ESC[A moves up a line (tqdm's nested bars); other escapes are dropped."""
    lines, row, col = [""], 0, 0
    for part in re.split(r"(\r\n|\r|\n|\x1b\[A|\x1b\[[0-9;]*[A-Za-z])", raw):
        if part in ("\n", "\r\n"):
            row, col = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif part == "\r":
            col = 0
        elif part == "\x1b[A":
            row = max(row - 1, 0)
        elif part and not part.startswith("\x1b"):
            line = lines[row].ljust(col)
            lines[row] = line[:col] + part + line[col + len(part):]
            col += len(part)
    return [line.rstrip() for line in lines]
