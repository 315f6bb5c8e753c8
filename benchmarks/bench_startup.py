"""CPU seconds a command spends before it prints: `a2c --help`, a typo'd command and `a2c run bad.yaml`.

Run: `.venv/bin/python benchmarks/bench_startup.py [--repeat 5]` from the repository root. Each command runs
in a fresh interpreter; its user + system CPU time (not wall time, which a busy machine inflates) is read
from the child's resource usage. The best of the repeats (the run least disturbed by other processes on a
busy machine) is compared with the target (0.5 s: every command's parser is built before anything runs, so
the heavy libraries must load only when a model or a metric is needed); the median is printed beside it.
Bytecode is compiled once, untimed, into a temporary cache (PYTHONPYCACHEPREFIX), as an installed package
has it: where PYTHONDONTWRITEBYTECODE is set, every run would otherwise compile a2c's sources again.
Exits 1 when a command misses the target.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_SECONDS = 0.5


def cpu_seconds(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """The user + system CPU time of one run of `argv` (a child process, waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bad.yaml").write_text("name: bad\ngenerater: {backend: openai}\n", encoding="utf-8")
        a2c = [sys.executable, "-m", "a2c"]
        commands = {"python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
                    "a2c --help": [*a2c, "--help"], "a2c rnu (a typo)": [*a2c, "rnu"],
                    "a2c run bad.yaml": [*a2c, "run", "bad.yaml"]}
        env_path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "A2C_DEBUG": "", "PYTHONPYCACHEPREFIX": str(folder / "bytecode"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(Path.cwd()), env_path) if p)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        missed = []
        print(f"CPU seconds, best and median of {args.repeat} runs (target {TARGET_SECONDS} s for the best; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        for label, argv in commands.items():
            cpu_seconds(argv, folder, env)  # compiles the bytecode
            times = [cpu_seconds(argv, folder, env) for _ in range(args.repeat)]
            best, median = min(times), statistics.median(times)
            print(f"  {label:<40} best {best:6.3f} s  median {median:6.3f} s  "
                  f"({best / TARGET_SECONDS:.2f}x the target)")
            if label.startswith("a2c") and best > TARGET_SECONDS:
                missed.append(label)
    if missed:
        print(f"over the target: {', '.join(missed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
