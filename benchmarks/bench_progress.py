"""How long the quickstart's feedback sits still: the longest gap between two updates of its progress output.

Run: `.venv/bin/python benchmarks/bench_progress.py [--config CONFIG] [--limit N]` from the repository root
(CONFIG: experiments/quickstart.yaml by default). It runs `a2c run CONFIG` (the README's quickstart: the
embedded model in-process) into a temporary run folder with `--no-cache`, so every model call runs as on a
first run, with its output on a 120-column pseudo-terminal, as a user sees it. Every bar redraw (`\\r`) and
every line (`\\n`) is an update, stamped when it arrives; the longest gap between two updates is compared
with the target (10 s) and printed with the update before it (the bar or stage that sat still) and the one
after. Exits 1 when a gap misses the target.
"""

from __future__ import annotations

import argparse
import fcntl
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


def updates(argv: list[str], env: dict[str, str]) -> tuple[list[tuple[float, str]], int]:
    """(seconds since start, text) of every redraw or line the command writes to its terminal, and its exit
    status."""
    main, child = pty.openpty()
    # a terminal of 40 rows by 120 columns: a new pseudo-terminal has no size, and tqdm draws nothing in 0
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=child, stderr=child, env=env)
    os.close(child)
    found: list[tuple[float, str]] = []
    pending = ""
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        now = time.monotonic() - start
        pending += data.decode("utf-8", errors="replace")
        *done, pending = re.split(r"[\r\n]", pending)
        found += [(now, ANSI.sub("", text).strip()) for text in done if ANSI.sub("", text).strip()]
    os.close(main)
    return found, proc.wait()


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
    times = [0.0] + [t for t, _ in found]
    gaps = [(times[k + 1] - times[k], k) for k in range(len(times) - 1)]
    longest, at = max(gaps)
    before = found[at - 1][1] if at > 0 else "(start)"
    print(f"{len(found)} updates in {times[-1]:.1f} s (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores, this process on {len(os.sched_getaffinity(0))})")
    print(f"longest gap {longest:.1f} s (target {TARGET_SECONDS:.0f} s, {longest / TARGET_SECONDS:.2f}x) "
          f"at {times[at]:.1f} s")
    print(f"  before: {before[:150]}")
    print(f"  after:  {found[at][1][:150]}")
    for gap, k in sorted(gaps, reverse=True)[1:5]:
        print(f"  next: {gap:.1f} s after {(found[k - 1][1] if k > 0 else '(start)')[:120]}")
    return 1 if longest > TARGET_SECONDS else 0


if __name__ == "__main__":
    sys.exit(main())
