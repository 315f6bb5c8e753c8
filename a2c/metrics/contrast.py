"""Relative consistency (RC) for contrast sets (SPEC §6): exact integers, one final division.

n bundles of b instances, a correct instances, c fully-correct bundles. Under the null model every set of
a correct instances is equally likely; `m(c, a)` counts those giving consistency c, `M(a) = C(nb, a)` all
of them, and `RC(c, a) = μ(c, a) / M(a)` with `μ` the cumulative count up to c.

Speed: for b = 2 the terms form a hypergeometric series, `m(c+1, a) / m(c, a) = p(c) / q(c)` with
`p(c) = (a−2c)(a−2c−1)` and `q(c) = 4(c+1)(n−a+c+1)`. The partial sum is evaluated by binary splitting
(balanced products of small integers, so Karatsuba does the heavy lifting) as an exact fraction
`first_term · T / Q`, summing from whichever end of the achievable range is closer to c. No intermediate
division is performed: the only one is the final, correctly rounded `int / int`. Large binomials come from
their prime factorisation (`a2c.metrics.binomial`), again without big divisions.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from a2c.common.errors import A2CError
from a2c.metrics.binomial import binomial

Progress = Callable[[float], None]  # told each piece of work done, in `exact_work` units


class InvalidCountsError(A2CError, ValueError):
    """An impossible (n, a, c, b) combination; the message names the violated bound."""


@dataclass(frozen=True)
class ContrastCounts:
    """One model's result on a contrast set: bundles, correct instances, fully-correct bundles."""

    n_bundles: int
    n_correct: int
    n_consistent: int
    bundle_size: int = 2


def _count(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise InvalidCountsError(f"{name} must be an integer count, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidCountsError(f"{name} must be an integer count, got {value!r}") from None
    if number < 0:
        raise InvalidCountsError(f"{name}={number} is negative")
    return number


def consistency_bounds(n_bundles: int, n_correct: int, bundle_size: int = 2) -> tuple[int, int]:
    """`(c_min, c_max)`: the consistencies achievable with accuracy `n_correct`.

    Args:
        n_bundles: n, the number of bundles (≥ 1).
        n_correct: a, the number of correct instances.
        bundle_size: b, the instances per bundle (≥ 2).

    Returns:
        c_min and c_max.

    Raises:
        InvalidCountsError: a count is negative, b < 2, a > n·b.
    """
    n = _count(n_bundles, "n_bundles")
    a = _count(n_correct, "n_correct")
    b = _count(bundle_size, "bundle_size")
    if n < 1:
        raise InvalidCountsError("n_bundles=0: a contrast set needs at least one bundle")
    if b < 2:
        raise InvalidCountsError(f"bundle_size={b} is below 2: a bundle holds an instance and its contrast")
    if a > n * b:
        raise InvalidCountsError(f"n_correct={a} exceeds n_bundles*bundle_size={n * b}")
    return max(0, a - n * (b - 1)), a // b


def _checked(
    n_bundles: int, n_correct: int, n_consistent: int, bundle_size: int
) -> tuple[int, int, int, int]:
    c_min, c_max = consistency_bounds(n_bundles, n_correct, bundle_size)
    c = _count(n_consistent, "n_consistent")
    if c < c_min:
        raise InvalidCountsError(
            f"n_consistent={c} is below c_min={c_min}: with n_correct={n_correct} at least "
            f"n_correct - n_bundles*(bundle_size-1) bundles are fully correct"
        )
    if c > c_max:
        raise InvalidCountsError(
            f"n_consistent={c} exceeds c_max={c_max} = floor(n_correct/bundle_size) "
            f"for n_correct={n_correct}, bundle_size={bundle_size}"
        )
    return int(n_bundles), int(n_correct), c, int(bundle_size)


def _no_full_row(rows: int, b: int, k: int) -> int:
    """G(m, b, k): ways to pick k cells of an m×b grid leaving no row full (inclusion–exclusion).

    Successive terms C(m, r)·C((m−r)b, k−rb) differ by a ratio of small integers, so each is derived from
    the previous one by one exact small division instead of two fresh binomials.
    """
    term = binomial(rows * b, k)
    total = 0
    for r in range(min(rows, k // b) + 1):
        total += -term if r % 2 else term
        cells, picks = (rows - r) * b, k - r * b
        num, den = rows - r, r + 1
        for j in range(b):
            num *= picks - j
            den *= cells - j
        term = term * num // den if num else 0
    return total


def _mass(n: int, a: int, c: int, b: int) -> int:
    """m(c, a): correctness patterns with exactly c fully-correct bundles."""
    if b == 2:
        return binomial(n, c) * binomial(n - c, a - 2 * c) << (a - 2 * c)
    return binomial(n, c) * _no_full_row(n - c, b, a - c * b)


def _split(n: int, a: int, lo: int, hi: int, progress: Progress | None = None) -> tuple[int, int, int]:
    """Binary splitting over c in [lo, hi): (P, Q, T) with Σ_k Π_{l<k} p(l)/q(l) = T/Q."""
    if hi - lo == 1:
        k = a - 2 * lo
        q = 4 * (lo + 1) * (n - a + lo + 1)
        result = k * (k - 1), q, q
    else:
        mid = (lo + hi) // 2
        p1, q1, t1 = _split(n, a, lo, mid, progress)
        p2, q2, t2 = _split(n, a, mid, hi, progress)
        result = p1 * p2, q1 * q2, t1 * q2 + p1 * t2
    if progress is not None:
        progress(_merge_cost(hi - lo))
    return result


def _merge_cost(terms: int) -> float:
    """Work of one binary-splitting node over `terms` terms: its operands grow with `terms`, and Karatsuba
    multiplies them in time ~ size^1.585."""
    cost: float = float(terms) ** 1.585
    return cost


@lru_cache(maxsize=256)
def _split_cost(terms: int) -> float:
    """Σ `_merge_cost` over the nodes of a `_split` of `terms` terms (few distinct sizes: cached)."""
    if terms <= 1:
        return _merge_cost(terms)
    return _merge_cost(terms) + _split_cost(terms // 2) + _split_cost(terms - terms // 2)


def _range_mass(n: int, a: int, lo: int, hi: int, b: int,
                progress: Progress | None = None) -> tuple[int, int]:
    """Σ_{lo ≤ c ≤ hi} m(c, a) as an exact fraction (num, den); the caller does the one division."""
    if hi < lo:
        return 0, 1
    if b == 2:
        _, q, t = _split(n, a, lo, hi + 1, progress)
        return _mass(n, a, lo, 2) * t, q
    total = 0
    for ci in range(lo, hi + 1):
        total += _mass(n, a, ci, b)
        if progress is not None:
            progress(_mass_cost(n, ci, b))
    return total, 1


def _mass_cost(n: int, c: int, b: int) -> float:
    """Work of one `_mass` for b > 2: inclusion–exclusion over the n − c bundles left, b factors each."""
    return float((n - c + 1) * b)


def _side(n: int, a: int, c: int, b: int) -> tuple[int, int, bool]:
    """The shorter side of the achievable range that μ(c, a) sums: (lo, hi, whether it is the head)."""
    c_min, c_max = consistency_bounds(n, a, b)
    if c - c_min <= c_max - c:
        return c_min, c, True
    return c + 1, c_max, False


def _cumulative(n: int, a: int, c: int, b: int, progress: Progress | None = None) -> tuple[int, int, int]:
    """(num, den, M) with μ(c, a) = num/den exactly and M = M(a); sums the shorter side of the range."""
    lo, hi, head = _side(n, a, c, b)
    total = binomial(n * b, a)
    num, den = _range_mass(n, a, lo, hi, b, progress)
    return (num, den, total) if head else (total * den - num, den, total)


def exact_work(n_bundles: int, n_correct: int, n_consistent: int, bundle_size: int = 2) -> float:
    """The work `relative_consistency` will report through `progress`, in the same units (for its bar)."""
    n, a, c, b = _checked(n_bundles, n_correct, n_consistent, bundle_size)
    lo, hi, _ = _side(n, a, c, b)
    if hi < lo:
        return 0.0
    if b == 2:
        return _split_cost(hi - lo + 1)
    return sum(_mass_cost(n, ci, b) for ci in range(lo, hi + 1))


def distribution_work(n_bundles: int, n_correct: int, bundle_size: int = 2) -> float:
    """The work of `consistency_distribution` for one accuracy, in the units of `exact_work`: one step per
    achievable consistency for b = 2, one `_mass` each for larger bundles."""
    c_min, c_max = consistency_bounds(n_bundles, n_correct, bundle_size)
    if bundle_size == 2:
        return float(c_max - c_min + 1)
    return sum(_mass_cost(n_bundles, c, bundle_size) for c in range(c_min, c_max + 1))


def exact_memory(n_bundles: int, bundle_size: int = 2) -> int:
    """About the most bytes the exact computation holds at once for n·b instances: the prime sieve up to
    n·b (a byte per number, and each prime as a Python int, ~36 bytes) and a few integers of up to
    n·b·log2(n·b) bits (the binomial C(nb, a) and the binary-splitting products). An upper estimate:
    n·b = 2·10^6 measured 21 MB against 28 MB estimated."""
    nb = max(int(n_bundles) * int(bundle_size), 2)
    return int(nb + 36 * nb / math.log(nb) + 4 * nb * math.log2(nb) / 8)


def cumulative_mass(n_bundles: int, n_correct: int, n_consistent: int, bundle_size: int = 2) -> int:
    """μ(c, a) as an exact integer: patterns with accuracy a and consistency at most c.

    Args:
        n_bundles: n, the number of bundles (≥ 1).
        n_correct: a, the number of correct instances.
        n_consistent: c, the number of fully correct bundles.
        bundle_size: b, the instances per bundle (≥ 2).

    Returns:
        μ(c, a), the number of patterns.

    Raises:
        InvalidCountsError: a count is negative, b < 2, a > n·b, or c outside [c_min, c_max].
    """
    n, a, c, b = _checked(n_bundles, n_correct, n_consistent, bundle_size)
    num, den, _ = _cumulative(n, a, c, b)
    mu, rest = divmod(num, den)
    assert rest == 0, "μ(c, a) must be an integer"
    return mu


def relative_consistency(n_bundles: int, n_correct: int, n_consistent: int, bundle_size: int = 2, *,
                         progress: Progress | None = None) -> float:
    """RC(c, a) = μ(c, a) / M(a), correctly rounded from exact integers. `progress` is called with each
    piece of work done, `exact_work(...)` units in all (large sets take minutes).

    Raises `InvalidCountsError` (a `ValueError`) naming the bound when c lies outside [c_min, c_max],
    a count is negative or a > nb.

    Args:
        n_bundles: n, the number of bundles (≥ 1).
        n_correct: a, the number of correct instances.
        n_consistent: c, the number of fully correct bundles.
        bundle_size: b, the instances per bundle (≥ 2).
        progress: called with each piece of work done; None reports nothing.

    Returns:
        RC in [0, 1].

    Raises:
        InvalidCountsError: a count is negative, b < 2, a > n·b, or c outside [c_min, c_max].
    """
    n, a, c, b = _checked(n_bundles, n_correct, n_consistent, bundle_size)
    num, den, total = _cumulative(n, a, c, b, progress)
    return num / (den * total)


def relative_consistency_difference(first: ContrastCounts, second: ContrastCounts) -> float:
    """RC(first) − RC(second) as (μ1·M2 − μ2·M1) / (M1·M2): one division, so tiny gaps in the tail survive.

    Args:
        first: the counts of one model (or setting).
        second: the counts it is compared with.

    Returns:
        RC(first) − RC(second), in [-1, 1].

    Raises:
        InvalidCountsError: either side's counts are impossible.
    """
    n1, a1, c1, b1 = _checked(first.n_bundles, first.n_correct, first.n_consistent, first.bundle_size)
    n2, a2, c2, b2 = _checked(second.n_bundles, second.n_correct, second.n_consistent, second.bundle_size)
    num1, den1, total1 = _cumulative(n1, a1, c1, b1)
    num2, den2, total2 = _cumulative(n2, a2, c2, b2)
    return (num1 * den2 * total2 - num2 * den1 * total1) / (den1 * total1 * den2 * total2)


def consistency_distribution(n_bundles: int, n_correct: int, bundle_size: int = 2) -> dict[int, Fraction]:
    """Exact P(c | a) for every achievable c, in increasing c (the columns of the RC heatmap).

    Args:
        n_bundles: n, the number of bundles (≥ 1).
        n_correct: a, the number of correct instances.
        bundle_size: b, the instances per bundle (≥ 2).

    Returns:
        c → P(c | a) as an exact fraction, for c from c_min to c_max.

    Raises:
        InvalidCountsError: a count is negative, b < 2, a > n·b.
    """
    c_min, c_max = consistency_bounds(n_bundles, n_correct, bundle_size)
    n, a, b = int(n_bundles), int(n_correct), int(bundle_size)
    total = binomial(n * b, a)
    masses: dict[int, int] = {}
    if b == 2:
        term = _mass(n, a, c_min, 2)
        for c in range(c_min, c_max + 1):
            masses[c] = term
            k = a - 2 * c
            term = term * k * (k - 1) // (4 * (c + 1) * (n - a + c + 1))  # exact: the next m(c+1, a)
    else:
        masses = {c: _mass(n, a, c, b) for c in range(c_min, c_max + 1)}
    return {c: Fraction(m, total) for c, m in masses.items()}


@dataclass(frozen=True)
class ContrastSetScores:
    """Counts and scores of one contrast-set evaluation.

    `relative_consistency` and `bundle_size` are `None` when bundles differ in size (see
    `contrast_set_scores`).
    """

    n_bundles: int
    n_instances: int
    n_correct: int
    n_consistent: int
    accuracy: float
    consistency: float
    bundle_size: int | None
    relative_consistency: float | None


def contrast_set_scores(
    predictions: Sequence[Hashable], labels: Sequence[Hashable], bundle_ids: Sequence[Hashable]
) -> ContrastSetScores:
    """Derive a, c, accuracy, consistency and RC from raw predictions.

    Accuracy is over instances and consistency over bundles for any bundle sizes. RC is only computed
    when every bundle has the same size b ≥ 2: its null model counts patterns on an n×b grid, and padding,
    truncating or dropping bundles to force a common size would change a and c themselves, so for mixed
    sizes RC is reported as `None` rather than as a number with a different meaning.

    Args:
        predictions: the prediction on each instance.
        labels: the gold label of each instance, in the same order.
        bundle_ids: the bundle each instance belongs to, in the same order.

    Returns:
        The counts, accuracy, consistency and RC (None for bundles of mixed sizes).
    """
    if not (len(predictions) == len(labels) == len(bundle_ids)):
        raise ValueError(
            f"predictions ({len(predictions)}), labels ({len(labels)}) and bundle_ids ({len(bundle_ids)}) "
            "must have the same length"
        )
    if not predictions:
        raise ValueError("contrast_set_scores needs at least one instance")
    bundles: dict[Hashable, list[bool]] = defaultdict(list)
    for pred, label, bundle in zip(predictions, labels, bundle_ids, strict=True):
        bundles[bundle].append(pred == label)
    n = len(bundles)
    a = sum(sum(marks) for marks in bundles.values())
    c = sum(all(marks) for marks in bundles.values())
    sizes = {len(marks) for marks in bundles.values()}
    size = sizes.pop() if len(sizes) == 1 else None
    rc = relative_consistency(n, a, c, size) if size is not None and size >= 2 else None
    return ContrastSetScores(
        n_bundles=n,
        n_instances=len(predictions),
        n_correct=a,
        n_consistent=c,
        accuracy=a / len(predictions),
        consistency=c / n,
        bundle_size=size if rc is not None else None,
        relative_consistency=rc,
    )
