"""Consistency as a signal of correctness: how well a consistency score ranks answers by their accuracy.

A consistency metric scores an output set (one question, one source of variation); every answer of the set
carries that score as its confidence, and its accuracy (0/1) is the target. So the inputs are grouped: per
set, its `score`, its number of `answers` and of `accurate` ones. Two measures:

- **AUROC**: scikit-learn's `roc_auc_score` of the score for predicting an accurate answer (ties count ½).
- **PRR**, the prediction-rejection ratio as LM-Polygraph defines it: reject answers from the least
  confident up; the rejection curve is the mean accuracy of the answers kept. PRR = (area under the
  score's curve − random's) / (the oracle's − random's), with area = the mean of the curve over the N
  kept-answer counts, random = the overall accuracy at every count, oracle = accurate answers kept first.
  1 = ranks like the oracle, 0 = no better than chance, < 0 = worse. Answers of one set share a score, so
  the order inside a tie is undefined; we take the curve's expectation over tie orders (the cumulative
  accuracy grows linearly across a tie), which keeps PRR deterministic. Without ties it is LM-Polygraph's.

Both are undefined when every answer is accurate or none is (nothing to separate): reported as such,
never NaN. Intervals: a seeded percentile bootstrap over sets (answers of one question are not
independent), every replicate in one numpy pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from a2c.metrics.bootstrap import percentile_interval, resample_columns

BOOTSTRAP = 1000  # replicates for the intervals
LEVEL = 0.95
FLOAT32_EXACT = 2**24  # whole numbers below this are exact in float32


def undefined_reason(answers: int, accurate: int) -> str | None:
    """Why AUROC and PRR cannot be computed for these counts, or None when they can."""
    if answers == 0:
        return "no answers with a defined score"
    if accurate == 0:
        return "no answer is accurate"
    if accurate == answers:
        return "every answer is accurate"
    return None


@dataclass(frozen=True)
class Groups:
    """Sets as (score, answers, accurate answers), validated; `ordered` merges equal scores, best first."""

    scores: np.ndarray
    answers: np.ndarray
    accurate: np.ndarray

    @classmethod
    def of(cls, scores: Sequence[float] | np.ndarray, answers: Sequence[int] | np.ndarray,
           accurate: Sequence[int] | np.ndarray) -> Groups:
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        n = np.asarray(answers, dtype=np.int64).reshape(-1)
        a = np.asarray(accurate, dtype=np.int64).reshape(-1)
        if not len(s) == len(n) == len(a):
            raise ValueError(f"scores, answers and accurate differ in length: {len(s)}, {len(n)}, {len(a)}")
        if not np.all(np.isfinite(s)):
            raise ValueError("scores must be finite (leave out sets whose metric is undefined)")
        if np.any(n < 0) or np.any(a < 0) or np.any(a > n):
            raise ValueError("need 0 <= accurate <= answers for every set")
        return cls(s, n, a)

    @classmethod
    def per_answer(cls, scores: Sequence[float] | np.ndarray, labels: Sequence[bool | int] | np.ndarray
                   ) -> Groups:
        """One set per answer: plain (score, label) pairs."""
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
        if np.any((labels != 0) & (labels != 1)):
            raise ValueError("labels must be 0/1 (or booleans)")
        return cls.of(scores, np.ones_like(labels), labels)

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """(index of each set's tie group, tie groups' scores), tie groups sorted by score, highest first."""
        unique, inverse = np.unique(-self.scores, return_inverse=True)
        return inverse.reshape(-1), -unique

    @property
    def undefined(self) -> str | None:
        why = undefined_reason(int(self.answers.sum()), int(self.accurate.sum()))
        if why is None and len(np.unique(self.scores[self.answers > 0])) < 2:
            # one score for every answer ranks nothing: AUROC 0.5 and PRR 0 would look like measured chance
            return "constant"
        return why


def _group_order(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sets sorted by tie group, and where each group starts in that order."""
    order = np.argsort(group, kind="stable")
    return order, np.r_[0, np.flatnonzero(np.diff(group[order])) + 1]  # every group 0..n-1 has a set


def _group_sums(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Column sums of `values` (replicates × sets) per tie group → replicates × groups."""
    sets, starts = _group_order(group)
    return np.add.reduceat(values[:, sets], starts, axis=1)


def _auroc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """AUROC per replicate from accurate (`pos`) and inaccurate (`neg`) answers per tie group, groups from
    the highest score down: P(a random accurate answer outscores a random inaccurate one), ties ½."""
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    below = n_neg[:, None] - np.cumsum(neg, axis=1)  # inaccurate answers with a lower score than the group
    with np.errstate(invalid="ignore", divide="ignore"):
        area: np.ndarray = (pos * (below + 0.5 * neg)).sum(axis=1) / (n_pos * n_neg)
        return area


_HARMONIC = np.zeros(1)  # H[0..]: the longest table asked for so far


def _harmonic(n: int) -> np.ndarray:
    """H[k] = 1 + 1/2 + ... + 1/k for k = 0..n (H[0] = 0). Kept and extended, not remade: every chunk of
    every interval asks for it, and at 100,000 questions n is a resample's answers (hundreds of
    thousands). A cumulative sum adds in order, so a longer table starts with the same floats."""
    global _HARMONIC
    if len(_HARMONIC) <= n:
        _HARMONIC = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, max(n, 2 * len(_HARMONIC)) + 1))])
    return _HARMONIC[:n + 1]


def _prr(pos: np.ndarray, total: np.ndarray) -> np.ndarray:
    """PRR per replicate from accurate and all answers per tie group, groups from the highest score down.

    Keeping the k most confident answers, the expected number accurate is C(k); the area is
    (1/N) Σ_k C(k)/k. Inside a group of w answers of which p are accurate, starting after K answers of
    which S are accurate, C(K + j) = S + j·p/w, so the group adds p + (S − K·p/w)·(H(K + w) − H(K)).
    """
    n = total.sum(axis=1)
    n_pos = pos.sum(axis=1)
    harmonic = _harmonic(int(n.max()) if n.size else 0)
    end = np.cumsum(total, axis=1).astype(np.int64)
    start = end - total.astype(np.int64)
    before = np.cumsum(pos, axis=1) - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(total > 0, pos / np.where(total > 0, total, 1), 0.0)
        area = (pos + (before - start * rate) * (harmonic[end] - harmonic[start])).sum(axis=1) / n
        random = n_pos / n
        oracle = (n_pos + n_pos * (harmonic[n.astype(np.int64)] - harmonic[n_pos.astype(np.int64)])) / n
        ratio: np.ndarray = (area - random) / (oracle - random)
        return ratio


def auroc(groups: Groups) -> float | None:
    """scikit-learn's AUROC of the score for predicting an accurate answer; None when undefined."""
    from sklearn.metrics import roc_auc_score  # seconds of CPU to import: only when a report is drawn

    if groups.undefined:
        return None
    labels = np.concatenate([np.ones(len(groups.scores)), np.zeros(len(groups.scores))])
    weights = np.concatenate([groups.accurate, groups.answers - groups.accurate]).astype(np.float64)
    keep = weights > 0
    return float(roc_auc_score(labels[keep], np.tile(groups.scores, 2)[keep], sample_weight=weights[keep]))


def prediction_rejection_ratio(groups: Groups) -> float | None:
    """PRR (module docstring); None when undefined."""
    if groups.undefined:
        return None
    group, _ = groups.ordered()
    pos = _group_sums(groups.accurate[None, :].astype(np.float64), group)
    total = _group_sums(groups.answers[None, :].astype(np.float64), group)
    return float(_prr(pos, total)[0])


def rejection_curve(groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """(share of answers rejected, accuracy of the answers kept), rejecting the least confident first; the
    expectation over tie orders, from 0 rejected to all but one."""
    group, _ = groups.ordered()
    pos = _group_sums(groups.accurate[None, :].astype(np.float64), group)[0]
    total = _group_sums(groups.answers[None, :].astype(np.float64), group)[0].astype(np.int64)
    keep = total > 0
    rate = np.repeat(pos[keep] / total[keep], total[keep])  # each answer's expected accuracy
    n = len(rate)
    kept = np.arange(1, n + 1)
    return (1.0 - kept / n)[::-1], (np.cumsum(rate) / kept)[::-1]


def oracle_curve(groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """The rejection curve of a score that ranks every accurate answer first."""
    n, n_pos = int(groups.answers.sum()), int(groups.accurate.sum())
    return rejection_curve(Groups.per_answer(np.r_[np.ones(n_pos), np.zeros(n - n_pos)],
                                             np.r_[np.ones(n_pos), np.zeros(n - n_pos)]))


class Signal(BaseModel):
    """AUROC and PRR of one score with bootstrap intervals, or why they are undefined (`undefined`). A
    pydantic model, so a summary's signal row can be this plus its key (a subclass): the
    fields are declared once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sets: int
    answers: int
    accurate: int
    auroc: float | None
    auroc_ci: tuple[float, float] | None
    prr: float | None
    prr_ci: tuple[float, float] | None
    undefined: str | None
    bootstrap: int
    seed: int


def _cluster_ids(clusters: Sequence[int] | np.ndarray | None, sets: int) -> np.ndarray | None:
    if clusters is None:
        return None
    ids = np.asarray(clusters).reshape(-1)
    if len(ids) != sets:
        raise ValueError(f"{len(ids)} cluster ids for {sets} sets")
    return np.unique(ids, return_inverse=True)[1].reshape(-1)


def bootstrap(groups: Groups, *, replicates: int = BOOTSTRAP, seed: int = 0,
              clusters: Sequence[int] | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and PRR of `replicates` resamples of the sets (with replacement); NaN where a resample is
    undefined (only internally: callers get intervals over the defined ones). With `clusters` (an id per
    set), whole clusters are resampled: answers scored one by one stay with their question."""
    from scipy import sparse  # loaded with the first interval, not with the CLI

    group, _ = groups.ordered()
    ids = _cluster_ids(clusters, len(groups.scores))
    units = len(groups.scores) if ids is None else int(ids.max(initial=-1)) + 1
    tied = int(group.max(initial=-1)) + 1
    # a resample's accurate and all answers per tie group are one sparse matrix times its draw counts:
    # (group, accurate answers) and (group + tied, answers) of each unit, summed over the unit's sets. The
    # sums are of whole numbers, so exact in any order: the same values the per-set gather gave, in one pass
    unit = np.arange(len(group)) if ids is None else ids
    weights = sparse.csr_array((np.concatenate([groups.accurate, groups.answers]),
                                (np.concatenate([group, group + tied]), np.concatenate([unit, unit]))),
                               shape=(2 * tied, units))
    # no sum exceeds a resample's answers (units × the most one unit holds): float32 while that stays below
    # 2**24, where float32 is exact for whole numbers, so the same values with half the bytes to move
    most = units * int(np.bincount(unit, weights=groups.answers, minlength=units).max(initial=0))
    dtype = np.float32 if most < FLOAT32_EXACT else np.float64
    weights = weights.astype(dtype)
    aurocs, prrs = [], []
    for drawn in resample_columns(units, replicates, seed, dtype, width=max(units, 2 * tied)):
        both = weights @ drawn  # (2 × tied) × resamples
        pos = np.ascontiguousarray(both[:tied].T, dtype=np.float64)
        total = np.ascontiguousarray(both[tied:].T, dtype=np.float64)
        defined = (pos.sum(axis=1) > 0) & (pos.sum(axis=1) < total.sum(axis=1))
        aurocs.append(np.where(defined, _auroc(pos, total - pos), np.nan))
        prrs.append(np.where(defined, _prr(pos, total), np.nan))
    return np.concatenate(aurocs), np.concatenate(prrs)


def signal(groups: Groups, *, replicates: int = BOOTSTRAP, seed: int = 0, level: float = LEVEL,
           clusters: Sequence[int] | np.ndarray | None = None) -> Signal:
    """AUROC and PRR of a score with seeded bootstrap intervals; all None (with the reason) when undefined.
    With `clusters`, the intervals resample clusters (`bootstrap`) and `sets` counts clusters."""
    ids = _cluster_ids(clusters, len(groups.scores))
    sets = len(groups.scores) if ids is None else len(np.unique(ids))
    answers, accurate = int(groups.answers.sum()), int(groups.accurate.sum())
    why = groups.undefined
    if why:
        return Signal(sets=sets, answers=answers, accurate=accurate, auroc=None, auroc_ci=None, prr=None,
                      prr_ci=None, undefined=why, bootstrap=replicates, seed=seed)
    aurocs, prrs = bootstrap(groups, replicates=replicates, seed=seed, clusters=ids)
    return Signal(sets=sets, answers=answers, accurate=accurate, auroc=auroc(groups),
                  auroc_ci=percentile_interval(aurocs, level), prr=prediction_rejection_ratio(groups),
                  prr_ci=percentile_interval(prrs, level), undefined=None, bootstrap=replicates, seed=seed)
