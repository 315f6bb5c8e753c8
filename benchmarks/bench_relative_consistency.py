"""Exact relative consistency: a2c's binary-splitting sum against the straightforward per-term version.

Run: `.venv/bin/python benchmarks/bench_relative_consistency.py` (add `--newcomer-at-max` to also time
the straightforward version at the largest size, which takes minutes). Targets: 100,000 bundles of 2 in
≤ 1 s, and ≥ 100× faster than the straightforward version at 20,000 bundles. Exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

from a2c.metrics import relative_consistency

ACCURACY = 0.65  # the paper's running example (M1: 65% accuracy)


def newcomer_rc(n: int, a: int, c: int) -> float:
    """What one writes straight from the paper: every m(c_i, a) from its own math.comb calls."""
    c_min = max(0, a - n)
    mu = 0
    for ci in range(c_min, c + 1):
        mu += math.comb(n, ci) * math.comb(n - ci, a - 2 * ci) * 2 ** (a - 2 * ci)
    return mu / math.comb(2 * n, a)


def typical_counts(n: int) -> tuple[int, int]:
    """a at 65% accuracy and c at its expected value a(a−1)/(2(2n−1)) under RC's null model (RC ≈ 0.5)."""
    a = round(2 * n * ACCURACY)
    return a, round(a * (a - 1) / (2 * (2 * n - 1)))


def best_time(fn: Callable[[], float], repeats: int) -> tuple[float, float]:
    best = math.inf
    value = math.nan
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratio-bundles", type=int, default=20_000)
    parser.add_argument("--max-bundles", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="a2c timings keep the best of this many runs")
    parser.add_argument("--newcomer-at-max", action="store_true", help="also time the slow version at max")
    args = parser.parse_args()

    print(f"{'bundles':>9} {'a':>7} {'c':>7} {'RC':>10} {'a2c s':>9} {'newcomer s':>11} {'speed-up':>9}")
    ok = True
    for n in (args.ratio_bundles, args.max_bundles):
        a, c = typical_counts(n)
        ours, rc = best_time(lambda n=n, a=a, c=c: relative_consistency(n, a, c), args.repeats)
        slow, slow_rc = math.nan, math.nan
        if n == args.ratio_bundles or args.newcomer_at_max:
            slow, slow_rc = best_time(lambda n=n, a=a, c=c: newcomer_rc(n, a, c), 1)
            if slow_rc != rc:
                print(f"MISMATCH at n={n}: a2c {rc!r} vs newcomer {slow_rc!r}")
                ok = False
        ratio = slow / ours
        slow_text, ratio_text = ("skipped", "-") if math.isnan(slow) else (f"{slow:.3f}", f"{ratio:.0f}x")
        print(f"{n:>9} {a:>7} {c:>7} {rc:>10.6f} {ours:>9.4f} {slow_text:>11} {ratio_text:>9}")
        if n == args.max_bundles:
            met = ours <= 1.0
            ok &= met
            print(f"  target: {n:,} bundles of 2 in <= 1 s -> {ours:.3f} s ({'met' if met else 'MISSED'})")
        if n == args.ratio_bundles:
            met = ratio >= 100
            ok &= met
            print(f"  target: >= 100x at {n:,} bundles -> {ratio:.0f}x ({'met' if met else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
