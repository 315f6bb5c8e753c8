"""Seeded percentile bootstrap: the one resampling helper of a2c.metrics, and the paired-difference interval.

Resamples are drawn as *counts*: row r of a replicates × n matrix says how often each of the n units
(questions, sets, pairs) is drawn in resample r, each row summing to n (a multinomial draw, which is what
n draws with replacement are). A resample's total of any per-unit quantity is then one matrix product,
so every replicate is computed in one numpy pass; chunks of rows bound the memory on large datasets.
`a2c.metrics.signal` resamples its sets through the same helper.

A summary bootstraps dozens of metrics over the same questions with the same seed, and numpy's
multinomial draw costs far more than the product that uses it: the draws of the last few (n, seed) are
kept, compactly typed, and a later call with more replicates extends them from the same generator (a
seeded stream gives the same rows whether drawn at once or in parts), so every caller sees exactly the
resamples a fresh draw would give.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

CHUNK = 256  # resamples per numpy pass, at most
# numbers per array a pass makes (chunk rows × units): a run of 100,000 questions has 200,000 sets and
# millions of answers, so a fixed 256 rows would make arrays of gigabytes; passes shrink with the width
PASS_ELEMENTS = 2**21


CACHE_BYTES = 256 * 2**20  # draws kept for reuse, over all (n, seed)


@dataclass
class _Draws:
    """The resamples of one (n, seed) drawn so far, and the generator that continues them."""

    rng: np.random.Generator
    rows: np.ndarray  # replicates × n draw counts, in the smallest unsigned type that holds them


_DRAWN: OrderedDict[tuple[int, int], _Draws] = OrderedDict()  # least recently used first


def _rows_per_pass(width: int) -> int:
    return max(1, min(CHUNK, PASS_ELEMENTS // max(width, 1)))


def _drawn(n: int, replicates: int, seed: int) -> np.ndarray:
    """The first `replicates` resamples of n units with this seed, drawn once and kept (`CACHE_BYTES`).
    Drawn into one array a few rows at a time, so drawing holds little more than what is kept."""
    draws = _DRAWN.pop((n, seed), None) or _Draws(np.random.default_rng(seed), np.zeros((0, n), np.uint8))
    drawn = len(draws.rows)
    if drawn < replicates:
        uniform = np.full(n, 1.0 / n)
        rows = np.empty((replicates, n), draws.rows.dtype)
        rows[:drawn] = draws.rows
        step = _rows_per_pass(n)
        for start in range(drawn, replicates, step):
            part = draws.rng.multinomial(n, uniform, size=min(step, replicates - start))
            widest = np.min_scalar_type(part.max())
            if np.promote_types(rows.dtype, widest) != rows.dtype:  # a count above the type: widen all
                rows = rows.astype(np.promote_types(rows.dtype, widest))
            rows[start:start + len(part)] = part
        draws.rows = rows
    _DRAWN[(n, seed)] = draws
    while sum(d.rows.nbytes for d in _DRAWN.values()) > CACHE_BYTES:
        _DRAWN.popitem(last=False)  # the newest alone may exceed the budget: it goes too, after this call
    return draws.rows[:replicates]


def resample_counts(n: int, replicates: int, seed: int, *, chunk: int | None = None, width: int | None = None
                    ) -> Iterator[np.ndarray]:
    """Chunks (≤ chunk rows × n, float) of bootstrap resamples of n units as draw counts; seeded, so the
    same arguments give the same resamples. Without `chunk`, a chunk has as many rows as keep an array of
    `width` columns (default n: the widest array the caller makes from a chunk) to `PASS_ELEMENTS`."""
    rows = _drawn(n, replicates, seed)
    chunk = chunk if chunk is not None else _rows_per_pass(width if width is not None else n)
    for start in range(0, replicates, chunk):
        yield rows[start:start + chunk].astype(np.float64)


def resample_columns(n: int, replicates: int, seed: int, dtype: np.typing.DTypeLike, *,
                     width: int | None = None) -> Iterator[np.ndarray]:
    """The resamples of `resample_counts`, transposed: chunks of n × (≤ chunk) draw counts in C order, of
    `dtype`. A sparse matrix with a row per output and a column per unit multiplies them without first
    copying each chunk into this layout itself, as it would a chunk of rows."""
    rows = _drawn(n, replicates, seed)
    chunk = _rows_per_pass(width if width is not None else n)
    for start in range(0, replicates, chunk):
        yield np.ascontiguousarray(rows[start:start + chunk].T, dtype=dtype)


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    """The central `level` percentile interval of the finite replicate values; None below two."""
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return None
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedDifference:
    """Mean of after − before over the pairs, with its percentile bootstrap interval.

    Undefined below two pairs: `mean_difference`, `low` and `high` are then all None (never NaN) and the
    interval excludes nothing."""

    n: int
    dropped: int  # pairs left out because a side was None or NaN
    mean_difference: float | None
    low: float | None
    high: float | None
    level: float
    resamples: int
    seed: int

    @property
    def defined(self) -> bool:
        return self.mean_difference is not None

    @property
    def excludes_zero(self) -> bool:
        """The interval lies entirely above or below 0: a difference at this level."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def _defined(value: float | None) -> TypeGuard[float]:
    return value is not None and not math.isnan(value)


def defined_pairs(before: Sequence[float | None] | np.ndarray, after: Sequence[float | None] | np.ndarray
                  ) -> int:
    """How many pairs `paired_difference_ci` keeps (both sides neither None nor NaN): the number of units
    its bootstrap resamples, known before it runs."""
    if isinstance(before, np.ndarray) and isinstance(after, np.ndarray):
        return int(np.count_nonzero(~np.isnan(before) & ~np.isnan(after)))
    return sum(_defined(b) and _defined(a) for b, a in zip(before, after, strict=True))


def paired_difference_ci(before: Sequence[float | None], after: Sequence[float | None], *,
                         resamples: int = 2000, seed: int = 0, level: float = 0.95) -> PairedDifference:
    """Paired bootstrap of the mean difference after − before (e.g. a metric per question, without and with
    A2C): pairs are resampled together, so what the two sides share cancels out.

    Pairs with a None or NaN on either side are dropped and counted (`dropped`), as `mean_defined` skips
    undefined items; infinite values are refused.

    Args:
        before: one value per unit (question) without the change; None where undefined.
        after: the value per unit with it, in the same order.
        resamples: the bootstrap resamples (≥ 2).
        seed: the seed of the resampling, so an interval is reproducible.
        level: the interval's coverage, in (0, 1).

    Returns:
        The mean difference, its interval (all None below two kept pairs) and the pairs dropped.
    """
    if len(before) != len(after):
        raise ValueError(f"paired values differ in length: {len(before)} vs {len(after)}")
    if resamples < 2:
        raise ValueError(f"resamples must be at least 2 (an interval needs two), got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    kept = [(float(b), float(a)) for b, a in zip(before, after, strict=True)
            if _defined(b) and _defined(a)]
    dropped = len(before) - len(kept)
    n = len(kept)
    if n < 2:
        return PairedDifference(n, dropped, None, None, None, level, resamples, seed)
    pairs = np.array(kept)
    if not np.isfinite(pairs).all():
        raise ValueError("paired values must be finite (undefined items are None or NaN)")
    diff = pairs[:, 1] - pairs[:, 0]
    means = np.concatenate([counts @ diff / n for counts in resample_counts(n, resamples, seed)])
    interval = percentile_interval(means, level)
    assert interval is not None  # at least two resample means, all finite
    return PairedDifference(n, dropped, math.fsum(diff) / n, *interval, level, resamples, seed)
