"""How long the quickstart's feedback sits still: the longest gap between two updates of its progress output.

Run: `.venv/bin/python benchmarks/bench_progress.py [--config CONFIG] [--limit N]` from the repository root
(CONFIG: experiments/quickstart.yaml by default). It runs `a2c run CONFIG` (the README's quickstart: the
embedded model in-process) into a temporary run folder with `--no-cache`, so every model call runs as on a
first run, with its output on a 120-column pseudo-terminal, as a user sees it. Every read from the terminal
that draws text is an update, stamped when it arrives, with the last line it draws. Two gaps are printed:
the longest between any two updates (a redrawn clock counts: the display moved), compared with the target
(10 s), and the longest between updates that change what the display says once its clocks (elapsed time,
ETA, rates) are left out: how long the counts and labels themselves sit still. Each is printed with the
update before it (the bar or stage that sat still) and the one after. Exits 1 when the first misses the
target.
"""

from __future__ import annotations

import argparse
import codecs
import fcntl
import itertools
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

TARGET_SECONDS = 10.0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# elapsed and remaining times (00:12, 1:02:03, ?), rates (3.2prompt/s, 1.5s/q)
CLOCKS = re.compile(r"\d+(:\d\d)+|<\?|[\d.]+ ?\w*/s|\?\w*/s")


def updates(argv: list[str], env: dict[str, str]) -> tuple[list[tuple[float, str]], int]:
    """(seconds since start, last line drawn) of every read of the command's terminal that draws text, and
    the command's exit status."""
    main, child = pty.openpty()
    # a terminal of 40 rows by 120 columns: a new pseudo-terminal has no size, and tqdm draws nothing in 0
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=child, stderr=child, env=env)
    os.close(child)
    found: list[tuple[float, str]] = []
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        drawn = [line.strip() for line in re.split(r"[\r\n]", ANSI.sub("", decoder.decode(data)))]
        if any(drawn):
            found.append((time.monotonic() - start, [line for line in drawn if line][-1]))
    os.close(main)
    return found, proc.wait()


def said(text: str) -> str:
    """What an update says once its clocks are left out: elapsed and remaining times, rates."""
    return CLOCKS.sub("", text)


def longest_gap(found: list[tuple[float, str]], keep: list[bool]) -> list[tuple[float, int]]:
    """Gaps between the kept updates (and from the start to the first), longest first, each with the index
    of the update that ended it."""
    times = [(0.0, -1)] + [(t, k) for k, (t, _) in enumerate(found) if keep[k]]
    return sorted(((b[0] - a[0], b[1]) for a, b in itertools.pairwise(times)), reverse=True)


def show(title: str, found: list[tuple[float, str]], keep: list[bool]) -> float:
    gaps = longest_gap(found, keep)
    longest, at = gaps[0]
    before = next((found[k][1] for k in range(at - 1, -1, -1) if keep[k]), "(start)")
    print(f"{title}: {longest:.1f} s (target {TARGET_SECONDS:.0f} s, {longest / TARGET_SECONDS:.2f}x) ending "
          f"at {found[at][0]:.1f} s")
    print(f"  before: {before[:150]}")
    print(f"  after:  {found[at][1][:150]}")
    for gap, k in gaps[1:4]:
        print(f"  next: {gap:.1f} s, ending at {found[k][0]:.1f} s: {found[k][1][:110]}")
    return longest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/quickstart.yaml"))
    parser.add_argument("--limit", type=int, help="only the first N questions (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "a2c", "run", str(args.config), "--output", str(Path(tmp) / "run"),
                "--no-cache", *(["--limit", str(args.limit)] if args.limit else [])]
        env_path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path.cwd()), env_path) if p)}
        found, status = updates(argv, env)
    if status != 0 or not found:
        print(f"a2c run exited {status}; its last output: {found[-5:]}")
        return 1
    print(f"{len(found)} updates in {found[-1][0]:.1f} s (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores, this process on {len(os.sched_getaffinity(0))})")
    longest = show("longest gap between updates", found, [True] * len(found))
    changed = [k == 0 or said(text) != said(found[k - 1][1]) for k, (_, text) in enumerate(found)]
    show("longest gap between changes of what it says (clocks left out)", found, changed)
    return 1 if longest > TARGET_SECONDS else 0


if __name__ == "__main__":
    sys.exit(main())
