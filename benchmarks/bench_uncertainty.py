"""Every uncertainty measure of `a2c.metrics.uncertainty` over a TruthfulQA-sized run.

Run: `.venv/bin/python benchmarks/bench_uncertainty.py` from the repository root (`--help` for sizes).

Workload: 817 questions × 2 sources × 4 judges, like a full run: the paraphrase source has 5 answers per
question, the temperature source 10–14. Matrices are random, seeded, judge-like: clusters of answers that
agree strongly plus noise, entries in [0, 1], 1 on the diagonal, slightly directional; the equivalence
matrix is the ≥ 0.5 decision both ways, and an entailment/contradiction pair per matrix feeds KLE.
Every measure of `UNCERTAINTY_MEASURES` is computed for every matrix, first one set at a time (the
per-set functions), then as the metrics stage computes them: the same-size matrices of a statistic stacked
(`MatrixStack`), each measure over the stacks, decompositions shared (KLE still goes matrix by matrix);
the ratio of the two is printed. The times exclude building the matrices. Target: the per-set pass in
< 5 s. The load average is printed with the timing: the machine may be shared. Exits 1 if the target is
missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from a2c.metrics import UNCERTAINTY_MEASURES, nli_weights
from a2c.metrics.uncertainty import MatrixStack

TARGET = 5.0


def judge_like(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(similarity, contradiction) for n answers in 1–3 clusters: high inside a cluster, low across."""
    cluster = rng.integers(0, rng.integers(1, 4), n)
    same = cluster[:, None] == cluster[None, :]
    sim = np.clip(np.where(same, 0.85, 0.15) + rng.normal(0, 0.1, (n, n)), 0, 1)
    np.fill_diagonal(sim, 1.0)
    contra = np.clip((1 - sim) * rng.uniform(0.3, 0.9, (n, n)), 0, 1 - sim)
    np.fill_diagonal(contra, 0.0)
    return sim, contra


def workload(questions: int, judges: int, seed: int) -> list[dict[str, np.ndarray]]:
    """The statistics each measure declares, per (question, source, judge)."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(questions * judges):
        for n in (5, int(rng.integers(10, 15))):  # paraphrases, temperatures
            sim, contra = judge_like(n, rng)
            sets.append({"similarity": sim, "equivalence": (sim >= 0.5) & (sim >= 0.5).T,
                         "nli": nli_weights(sim, contra)})
    return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=817)
    parser.add_argument("--judges", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    sets = workload(args.questions, args.judges, args.seed)
    print(f"{len(sets):,} answer sets ({args.questions} questions × 2 sources × {args.judges} judges), "
          f"{sum(len(s['similarity']) for s in sets):,} answers; load average {os.getloadavg()[0]:.2f}")
    total = 0.0
    for name, measure in UNCERTAINTY_MEASURES.items():
        start = time.perf_counter()
        for stats in sets:
            measure.function(stats[measure.statistic])
        took = time.perf_counter() - start
        total += took
        print(f"  {name:<24} {took:6.3f} s  ({took / len(sets) * 1e6:5.0f} µs per set)")
    met = total < TARGET
    print(f"total {total:.3f} s; target < {TARGET:g} s: {'met' if met else 'missed'}")
    start = time.perf_counter()
    for statistic in ("similarity", "equivalence", "nli"):
        by_shape: dict[tuple[int, ...], list[np.ndarray]] = {}
        for stats in sets:
            by_shape.setdefault(stats[statistic].shape, []).append(stats[statistic])
        stacks = [MatrixStack(np.stack(group), f"{statistic} matrix") for group in by_shape.values()]
        for _, measure in UNCERTAINTY_MEASURES.items():
            if measure.statistic == statistic:
                for stack in stacks:
                    measure.over(stack)
    stacked = time.perf_counter() - start
    print(f"stacked by size, as the metrics stage computes them: {stacked:.3f} s "
          f"({total / stacked:.1f}x less than one set at a time)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
