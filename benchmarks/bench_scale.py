"""How a2c's own cost grows with the number of questions: per-stage CPU, peak RSS, system time, page faults.

Run: `.venv/bin/python benchmarks/bench_scale.py [--sizes 1000 10000 100000]` from the repository root.
Each size runs in a fresh subprocess on the deterministic `scripted` stand-in model (it answers instantly, so
what is measured is a2c's bookkeeping, not a model): the paper's protocol settings of
experiments/truthfulqa-a2c.yaml (four paraphrasing techniques, ten temperatures, A2C, the selection methods
a2c/usc/medoid/majority_cluster), with the lexical judges rouge1 and exact instead of model judges and the
lexical similarities rouge1 and bleu for accuracy. The questions are synthetic TruthfulQA rows with correct
and incorrect references, so accuracy, the request cache and every stage run. After the run the child also
runs `a2c score` (on the run's short answers) and `a2c view` in the same process, each timed apart.

Printed per size: process CPU time (user + system) of each stage, its system time and minor page faults,
the child's peak RSS (`ru_maxrss` from wait4) and its totals; then, between consecutive sizes, the ratio of
a2c's stage CPU (linear growth is the size ratio) and of peak RSS. `--max-rss-gb` (default 2) makes the
exit status 1 when a size's peak RSS exceeds it. Process CPU, not wall time, so a loaded machine does not
inflate the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the synthetic runs live with the tests


def _usage() -> dict[str, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu": u.ru_utime + u.ru_stime, "sys": u.ru_stime, "minflt": u.ru_minflt,
            "peak_mb": u.ru_maxrss / 1024}


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after}


def child(n: int, root: Path, result: Path) -> None:
    """One size, in this (fresh) process: the run, then `a2c score` and `a2c view` on it."""
    import a2c.run.stage
    from a2c.cli import main as cli_main
    from a2c.qa.rows import GENERATIONS
    from a2c.run.pipeline import run_experiment
    from a2c.run.store import RunFolder
    from tests.scale_runs import result_digests, scale_config

    stages: dict[str, dict[str, float]] = {}
    run_stage = a2c.run.stage.run_stage

    def timed(ctx: Any, stage: Any, decision: Any) -> Any:
        before = _usage()
        stats = run_stage(ctx, stage, decision)
        stages[stage.name] = _delta(_usage(), before)
        return stats

    a2c.run.stage.run_stage = timed  # run_stages calls it by its module name
    started = _usage()
    config = scale_config(root, n)
    run_experiment(config, progress=False)
    stages["(outside stages)"] = _delta(_usage(), started)
    for name in list(stages)[:-1]:
        for key in stages[name]:
            stages["(outside stages)"][key] -= stages[name][key]
    run_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    answers = root / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as handle:  # one short answer per question, as another tool's
        seen = set()
        for row in RunFolder(config.run_dir).iter_rows(GENERATIONS):
            if row.id not in seen:
                seen.add(row.id)
                handle.write(json.dumps({"id": row.id, "answer": row.short}) + "\n")
    commands = {"a2c score": ["score", str(answers), "--path", str(root / "TruthfulQA.csv"),
                              "--out", str(root / "scores")],
                "a2c view": ["view", str(config.run_dir), "--output", str(root / "view.html")]}
    for name, argv in commands.items():
        before = _usage()
        code = cli_main(argv)
        if code:
            raise SystemExit(f"{name} exited {code}")
        stages[name] = _delta(_usage(), before)
    result.write_text(json.dumps({"stages": stages, "run_rss_kb": run_rss,
                                  "digests": result_digests(config.run_dir)}), encoding="utf-8")


def measure(n: int, keep: Path | None) -> dict[str, Any]:
    """Run one size in a fresh subprocess; its own per-stage figures plus wait4's view of the child."""
    with tempfile.TemporaryDirectory(dir=keep) as tmp:
        root = Path(tmp)
        result = root / "result.json"
        started = time.perf_counter()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen([sys.executable, __file__, "--child", str(n), "--root", str(root),
                                 "--result", str(result)], env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"the {n}-question child failed (status {status})")
        found = json.loads(result.read_text(encoding="utf-8"))
    return {"n": n, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "sys": usage.ru_stime,
            "minflt": usage.ru_minflt, "peak_rss_mb": usage.ru_maxrss / 1024,
            "run_rss_mb": found["run_rss_kb"] / 1024, "stages": found["stages"],
            "digests": found["digests"]}


def _stage_cpu(m: dict[str, Any]) -> float:
    """a2c's own CPU in the run: the stages and what run_experiment does around them."""
    return sum(v["cpu"] for k, v in m["stages"].items() if not k.startswith("a2c "))


def _row(label: str, values: list[str]) -> str:
    return f"{label:<18}" + "".join(f"{v:>14}" for v in values)


def report(results: list[dict[str, Any]]) -> str:
    names = list(results[0]["stages"])
    head = _row("", [f"{m['n']:,}" for m in results])

    def per_stage(name: str, key: str) -> list[float]:
        return [m["stages"][name][key] for m in results]

    lines = ["CPU seconds (user+system) per stage", head]
    lines += [_row(name, [f"{v:.1f}" for v in per_stage(name, "cpu")]) for name in names]
    lines += [_row("run total", [f"{_stage_cpu(m):.1f}" for m in results]), "",
              "system seconds / minor page faults (thousands) per stage", head]
    lines += [_row(name, [f"{s:.1f}/{f / 1e3:.0f}k" for s, f in zip(per_stage(name, "sys"),
                                                                    per_stage(name, "minflt"), strict=True)])
              for name in names]
    lines += ["", "peak RSS growth (MB) per stage", head]
    lines += [_row(name, [f"{v:.0f}" for v in per_stage(name, "peak_mb")]) for name in names]
    lines += ["", "whole child", head,
              _row("CPU s", [f"{m['cpu']:.1f}" for m in results]),
              _row("system s", [f"{m['sys']:.1f}" for m in results]),
              _row("minor faults", [f"{m['minflt']:,}" for m in results]),
              _row("peak RSS MB", [f"{m['peak_rss_mb']:.0f}" for m in results]),
              _row("  after run MB", [f"{m['run_rss_mb']:.0f}" for m in results]),
              _row("wall s", [f"{m['wall']:.1f}" for m in results]),
              _row("metrics ms/q", [f"{1e3 * m['stages']['metrics']['cpu'] / m['n']:.2f}" for m in results])]
    for a, b in itertools.pairwise(results):
        ratio = {name: b["stages"][name]["cpu"] / max(a["stages"][name]["cpu"], 1e-9) for name in names}
        lines += [f"\n{a['n']:,} → {b['n']:,} ({b['n'] / a['n']:.0f}x questions): run CPU "
                  f"{_stage_cpu(b) / _stage_cpu(a):.2f}x, system time {b['sys'] / max(a['sys'], 1e-9):.2f}x, "
                  f"peak RSS {b['peak_rss_mb'] / a['peak_rss_mb']:.2f}x",
                  "  per stage: " + ", ".join(f"{name} {r:.1f}x" for name, r in ratio.items())]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000],
                        help="numbers of questions, each run in a fresh process (default 1000 10000 100000)")
    parser.add_argument("--max-rss-gb", type=float, default=2.0, help="peak RSS allowed per size (default 2)")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--tmp", type=Path, help="where the run folders go (default: the system's temp)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.root, args.result)
        return 0
    results = []
    for n in args.sizes:
        print(f"{n:,} questions ...", file=sys.stderr, flush=True)
        results.append(measure(n, args.tmp))
        print(report(results), file=sys.stderr, flush=True)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    too_big = [m["n"] for m in results if m["peak_rss_mb"] > args.max_rss_gb * 1024]
    if too_big:
        print(f"peak RSS above {args.max_rss_gb} GB at {too_big} questions")
    return 1 if too_big else 0


if __name__ == "__main__":
    sys.exit(main())
