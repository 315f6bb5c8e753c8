"""Order sensitivity across runs (`a2c compare`): how often Ask-to-Choose's pick for a question changes when
only the order of the rank prompts' options (`ask_to_choose.option_order`) or the vote that counts the
replies (`ask_to_choose.vote`) changes.

The figure means something only when everything else the pick depends on is the same: the candidates (the
answers the prompts list, compared text by text per question and source, not through the config) and the
rank prompts' other settings (model, seed, variation, the rest of `ask_to_choose`: `a2c.qa.stages.a2c_slice`
with both keys set aside). Otherwise no table is made, and one line says why.

For runs A and B and a source, over the compared questions Q (those where both runs picked something):

    share = |{q ∈ Q : pick_A(q) ≠ pick_B(q)}| / |Q|

A pick is the chosen answer's normalised text (with the same candidates, the same thing as its candidate
index), or "don't know": the "don't know" option is a pick like any other, the same in both runs when both
took it. A question where a run picked nothing (no candidates, or no rank reply named an option) has no
pick to compare: it is left out of Q and counted beside the share. The interval is the percentile bootstrap
of the share over Q's questions (`a2c.metrics.bootstrap.resample_counts`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol

import numpy as np

from a2c.common.text import normalize
from a2c.display.reporting import Table, fmt
from a2c.metrics.bootstrap import percentile_interval, resample_counts
from a2c.qa.config import ExperimentConfig
from a2c.qa.format_following import FormatFollowing
from a2c.qa.option_order import OptionOrder
from a2c.qa.rows import SOURCE_LABELS, SOURCES, AnswerField, GenerationRow, SelectionRow, Source
from a2c.qa.stages import a2c_slice
from a2c.qa.vote import DEFAULT_VOTE
from a2c.run.tasks import OpenedRun

__all__ = ["DONT_KNOW", "DifferingShare", "OrderSensitivity", "PickedRun", "candidate_digests",
           "differing_share", "order_sensitivity", "pick_key"]

DONT_KNOW = "\0don't know"  # the key of a "don't know" pick: no normalised answer text starts with NUL

ORDER_SENSITIVITY_TITLE = "Order sensitivity: does the pick follow the option order?"
ORDER_SENSITIVITY_NOTE = (
    "Runs that share their candidates and differ only in ask_to_choose.option_order or vote, per pair and "
    "method: the share of questions whose A2C pick (the chosen answer, or \"don't know\") differs between "
    "the two runs, with its {level:.0%} bootstrap interval ({resamples:,} resamples of the questions, seed "
    "{seed}), over the questions where both runs picked something (the questions where a run picked nothing "
    "are counted apart); beside it each run's position bias as the format-following table gives it: the "
    "share of answer picks at position 1 against the candidates' share there (what a pick blind to "
    "positions gets). A share near 0 says the order barely moves the picks.")


def pick_key(row: SelectionRow) -> str | None:
    """What two runs' picks are compared by: `DONT_KNOW`, the normalised answer text, or None (no pick)."""
    if row.text is None:
        return None
    return DONT_KNOW if row.dont_know else normalize(row.text)


@dataclass(frozen=True)
class DifferingShare:
    """The share of compared questions whose picks differ, with its percentile bootstrap interval (None
    below two compared questions)."""

    compared: int  # questions with a pick in both runs
    left_out: int  # questions where a run picked nothing
    differing: int
    low: float | None
    high: float | None

    @property
    def share(self) -> float | None:
        return self.differing / self.compared if self.compared else None

    def text(self) -> str:
        """As the table writes it: `share [low, high]`."""
        if self.low is None or self.high is None:
            return "n/a" if not self.compared else f"{fmt(self.share)} (n/a: fewer than 2 questions)"
        return f"{fmt(self.share)} [{self.low:.3f}, {self.high:.3f}]"


def differing_share(first: Sequence[str | None], second: Sequence[str | None], *, resamples: int = 2000,
                    seed: int = 0, level: float = 0.95) -> DifferingShare:
    """The share of questions whose picks differ (see the module's doc).

    Args:
      first: one run's pick per question (`pick_key`; None: no pick).
      second: the other run's, for the same questions in the same order.
      resamples: bootstrap resamples of the compared questions.
      seed: their seed, so the same picks always get the same interval.
      level: the interval's coverage.

    Returns:
      How many questions were compared and left out, how many differ, and the interval of the share.
    """
    if len(first) != len(second):
        raise ValueError(f"picks differ in length: {len(first)} vs {len(second)}")
    differs = np.array([a != b for a, b in zip(first, second, strict=True)
                        if a is not None and b is not None], dtype=np.float64)
    n = len(differs)
    interval = None
    if n >= 2:
        means = np.concatenate([counts @ differs / n for counts in resample_counts(n, resamples, seed)])
        interval = percentile_interval(means, level)
    low, high = interval if interval is not None else (None, None)
    return DifferingShare(n, len(first) - n, int(differs.sum()), low, high)


def candidate_digests(generations: Iterable[GenerationRow], answer_field: AnswerField
                      ) -> dict[tuple[str, Source], bytes]:
    """(question, source) → a digest of its candidates' texts in order, so runs' candidates compare text by
    text without both runs' answers held twice."""
    texts: dict[tuple[str, Source], list[str]] = {}
    for g in generations:
        texts.setdefault((g.id, g.source), []).append(g.answer(answer_field))
    return {key: hashlib.sha256(json.dumps(t, ensure_ascii=False).encode()).digest()
            for key, t in texts.items()}


class PickedRun(Protocol):
    """A compared run as the order table reads it (`a2c.qa.compare.ComparedRun`)."""

    @property
    def label(self) -> str: ...
    @property
    def run(self) -> OpenedRun: ...
    @property
    def a2c_picks(self) -> Mapping[Source, Sequence[SelectionRow]]: ...
    @property
    def candidates(self) -> Mapping[tuple[str, Source], bytes]: ...
    @property
    def following(self) -> Mapping[Source, FormatFollowing]: ...


@dataclass(frozen=True)
class PairShare:
    """One source and pair of runs: their settings, the differing share, each run's position-1 figures."""

    source: Source
    first: PickedRun
    second: PickedRun
    share: DifferingShare


def _order(run: PickedRun) -> tuple[OptionOrder, str]:
    config = run.run.config
    assert isinstance(config, ExperimentConfig)
    return config.ask_to_choose.option_order, config.ask_to_choose.vote


def _position_one(run: PickedRun, source: Source) -> tuple[float, float] | None:
    """Share of answer picks at position 1 and the candidates' share there (format-following's figures)."""
    ff = run.following.get(source)
    return (ff.picked[0], ff.expected[0]) if ff is not None and ff.positioned and ff.picked else None


def _position_text(figures: tuple[float, float] | None) -> str:
    return "n/a" if figures is None else f"{figures[0]:.2f} vs {figures[1]:.2f}"


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


@dataclass(frozen=True)
class OrderSensitivity:
    """The order table of a comparison, or why it has none (`reason`); neither for a single run."""

    pairs: list[PairShare]
    reason: str | None
    resamples: int
    seed: int
    level: float

    @property
    def shown(self) -> bool:
        """Whether the comparison says anything about order: a table, or the line saying why there is none."""
        return bool(self.pairs) or self.reason is not None

    def note(self) -> str:
        return ORDER_SENSITIVITY_NOTE.format(level=self.level, resamples=self.resamples, seed=self.seed)

    def table(self) -> Table | None:
        if not self.pairs:
            return None
        header = ["method", "run A", "run B", "A: option order, vote", "B: option order, vote", "questions",
                  "picks that differ", "no pick in A or B", "A: position 1 picked vs candidates",
                  "B: position 1 picked vs candidates"]
        return Table(header, [[SOURCE_LABELS[p.source].table, p.first.label, p.second.label,
                               ", ".join(_order(p.first)), ", ".join(_order(p.second)),
                               f"{p.share.compared:,}", p.share.text(), f"{p.share.left_out:,}",
                               _position_text(_position_one(p.first, p.source)),
                               _position_text(_position_one(p.second, p.source))] for p in self.pairs])

    def long_table(self) -> Table:
        """One line per method and pair of runs, as numbers (compare_order.csv; no line without a table)."""
        header = ["method", "run_a", "run_b", "option_order_a", "vote_a", "option_order_b", "vote_b",
                  "questions", "no_pick", "differing", "share", "ci_low", "ci_high", "position1_picked_a",
                  "position1_candidates_a", "position1_picked_b", "position1_candidates_b"]
        lines = []
        for p in self.pairs:
            first, second = _position_one(p.first, p.source), _position_one(p.second, p.source)
            lines.append([p.source, p.first.label, p.second.label, *_order(p.first), *_order(p.second),
                          str(p.share.compared), str(p.share.left_out), str(p.share.differing),
                          _number(p.share.share), _number(p.share.low), _number(p.share.high),
                          *(_number(x) for x in (first or (None, None))),
                          *(_number(x) for x in (second or (None, None)))])
        return Table(header, lines)

    def markdown(self) -> str:
        """The section of compare.md: the note and the table, or the one line; "" when not shown."""
        if not self.shown:
            return ""
        table = self.table()
        parts = [f"## {ORDER_SENSITIVITY_TITLE}", *([self.note(), table.markdown()] if table else []),
                 *([self.reason] if self.reason else [])]
        return "\n\n".join(parts) + "\n"


def _comparable_settings(config: ExperimentConfig) -> dict[str, Any]:
    """What the rank prompts and their vote depend on besides the option order and the vote, as JSON."""
    same = config.model_copy(update={"ask_to_choose": config.ask_to_choose.model_copy(
        update={"option_order": "fixed", "vote": DEFAULT_VOTE})})
    settings: dict[str, Any] = json.loads(json.dumps(a2c_slice(same)))
    return settings


def _first_difference(a: Any, b: Any, key: str = "") -> tuple[str, Any, Any] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys()):
            found = _first_difference(a.get(k), b.get(k), f"{key}.{k}" if key else k)
            if found:
                return found
        return None
    return None if a == b else (key, a, b)


def _pair_reason(first: PickedRun, other: PickedRun) -> str | None:
    """Why two runs' picks cannot be put side by side for the option order, or None when they can."""
    for run in (first, other):
        if not any(run.a2c_picks.values()):
            return f"{run.label} made no Ask-to-Choose pick on the compared questions"
    ours, theirs = first.run.config, other.run.config
    assert isinstance(ours, ExperimentConfig) and isinstance(theirs, ExperimentConfig)  # QA runs only
    keys = sorted(first.candidates.keys() | other.candidates.keys())
    differ = [k for k in keys if first.candidates.get(k) != other.candidates.get(k)]
    if differ:
        question, source = differ[0]
        return (f"{first.label} and {other.label} do not share their candidates ({len(differ):,} of "
                f"{len(keys):,} answer sets differ, the first: question {question}, "
                f"{SOURCE_LABELS[source].table}), so a pick that differs need not come from the option order "
                "(another model, seed or generation)")
    found = _first_difference(_comparable_settings(ours), _comparable_settings(theirs))
    if found:
        key, a, b = found
        if key.startswith("a2c."):  # the stage slice's name of the section
            key = "ask_to_choose." + key.removeprefix("a2c.")
        return (f"{first.label} and {other.label} share their candidates but their rank prompts differ in "
                f"{key} ({json.dumps(a)} and {json.dumps(b)}), not only in option_order or vote")
    return None


def order_sensitivity(runs: Sequence[PickedRun], questions: Sequence[str], *, resamples: int, seed: int,
                      level: float) -> OrderSensitivity:
    """The order table of compared runs (see the module's doc): per source and pair of runs that qualify,
    with one line on the pairs that do not; nothing for fewer than two runs.

    Args:
      runs: the compared runs, in the comparison's order.
      questions: the compared question ids.
      resamples: bootstrap resamples of the questions per share.
      seed: their seed (the comparison's).
      level: the intervals' coverage.

    Returns:
      The shares of the pairs that qualify, and the one line on those that do not (None if all do).
    """
    pairs = list(combinations(range(len(runs)), 2))
    reasons = {(i, j): _pair_reason(runs[i], runs[j]) for i, j in pairs}
    unfit = [r for r in reasons.values() if r is not None]
    kept = [pair for pair in pairs if reasons[pair] is None]
    if not unfit:
        reason = None
    elif not kept:
        reason = (f"No order-sensitivity table: {unfit[0]}." if len(pairs) == 1 else
                  f"No order-sensitivity table: no pair of the {len(runs)} runs qualifies; the first, "
                  f"{unfit[0]}.")
    else:
        reason = f"Left out of the table: {len(unfit)} of {len(pairs)} pairs of runs; the first, {unfit[0]}."

    keys = [{s: {p.id: pick_key(p) for p in run.a2c_picks.get(s, ())} for s in SOURCES} for run in runs]
    shares = [PairShare(source, runs[i], runs[j],
                        differing_share([keys[i][source].get(q) for q in questions],
                                        [keys[j][source].get(q) for q in questions],
                                        resamples=resamples, seed=seed, level=level))
              for source in SOURCES for i, j in kept if keys[i][source] and keys[j][source]]
    return OrderSensitivity(shares, reason, resamples, seed, level)
