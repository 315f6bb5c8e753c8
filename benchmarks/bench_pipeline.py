"""Whole-pipeline cost per question, projected to the 817-question TruthfulQA run.

Run: `.venv/bin/python benchmarks/bench_pipeline.py [--config experiments/truthfulqa-a2c.yaml] [--limit 8]`
from the repository root. Runs the config's first `--limit` questions into a temporary run folder with
a fresh request cache (so every generation is real), prints wall time, model calls and tokens per stage
and per question, and the projection to `--questions` (default 817) as a ratio of the target (default
45 minutes). The model is loaded once before the run and reported apart. Per-question cost at a small
limit overstates the full run a little (smaller batches). Exits 1 when the projection misses the target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from a2c.cli.run import apply_overrides
from a2c.llm import build_generator
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/truthfulqa-a2c.yaml"))
    parser.add_argument("--dataset-path", type=Path, help="a local TruthfulQA.csv (default: the config's)")
    parser.add_argument("--limit", type=int, default=8, help="questions to run (default 8)")
    parser.add_argument("--questions", type=int, default=817, help="questions to project to")
    parser.add_argument("--target-minutes", type=float, default=45.0)
    args = parser.parse_args()

    config = apply_overrides(load_config(args.config), limit=None, no_cache=False,
                             dataset_path=args.dataset_path)
    with tempfile.TemporaryDirectory() as tmp:
        generator = config.generator.model_copy(update={"cache": Path(tmp) / "cache.sqlite"})
        config = config.model_copy(update={"limit": args.limit, "generator": generator,
                                           "output": str(Path(tmp) / "run")})
        started = time.perf_counter()
        build_generator(config.generator)  # load once, outside the per-question cost
        load = time.perf_counter() - started
        result = run_experiment(config, progress=False)
    print(result.summary_table())
    totals = result.totals()
    per_question = result.seconds / args.limit
    projected = (load + per_question * args.questions) / 60.0
    print(f"\nmodel load {load:.0f} s; {args.limit} questions in {result.seconds:.0f} s "
          f"({per_question:.1f} s per question); {totals.generated / args.limit:.1f} model calls and "
          f"{(totals.prompt_tokens + totals.completion_tokens) / args.limit:.0f} tokens per question")
    print(f"projected {args.questions} questions: {projected:.0f} min "
          f"(target {args.target_minutes:.0f} min, ratio {projected / args.target_minutes:.2f})")
    return 0 if projected <= args.target_minutes else 1


if __name__ == "__main__":
    sys.exit(main())
