"""How Ask-to-Choose's rank replies elect one answer: the plain majority, or a vote with position bias out.

A small model often names an option for where it is listed rather than for what it says. After PriDe
(Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice Selectors") the pick
distribution over displayed positions is read as a prior over positions times a preference over contents.
`debiased` estimates the prior from the rank replies themselves and weighs each pick at position k by
u = 1 / (n · P̂_n(k)), rescaled so that one vote's candidate picks weigh as many as they are (PriDe's
renormalisation), before the votes are summed per answer:

- P̂_n(k) = (c_n(k) + 1) / (N_n + n), where c_n(k) counts the replies naming the candidate shown at position
  k of a prompt listing n candidates and N_n = Σ_k c_n(k): add-one smoothing, so with few replies the prior
  stays near uniform and the vote near the plain one;
- prompts of different sizes have priors of their own (a habit at n = 2 says little about n = 5);
- "don't know" is not a position: it is always listed last, so its place cannot be told apart from the wish
  to decline. Its replies are left out of the counts and weigh 1 each; with the rescaling, debiasing moves
  weight among the candidates only, never between declining and answering;
- unparsed replies name no position: neither counted nor voted, as in the plain vote.

Where the prior comes from is the caller's (`PositionPrior.of_rows`): a run pools the rank replies of all
its questions (`a2c.qa.stages`), so a position's bias is measured over many contents; the decoding wrapper
and the server count each question's own replies (`question_prior`), so no answer depends on another
question's. A prompt size whose picks all came from one list of candidates gives no prior. Weights are
exact fractions, so a tie is a tie, broken as the plain vote breaks it (the text chosen first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from a2c.common.registry import Registry
from a2c.common.text import normalize

if TYPE_CHECKING:  # the config reads `VOTES` without the rows' module
    from a2c.qa.rows import ChoiceRow

__all__ = ["DEFAULT_VOTE", "VOTES", "Ballot", "PositionPrior", "VoteRule", "ballots", "debiased_weights",
           "elect", "question_prior", "weighted_vote"]

DEFAULT_VOTE = "plain"


@dataclass(frozen=True)
class Ballot:
    """One parsed rank reply as the vote reads it.

    `options` is how many candidates its prompt listed ("don't know" not counted); `position` is the 0-based
    place of the named candidate in that list, None for "don't know".
    """

    text: str
    options: int
    position: int | None

    @classmethod
    def of(cls, row: ChoiceRow) -> Ballot | None:
        """The ballot of one `choices.jsonl` row; None for an unparsed reply (it names no option)."""
        if row.option is None or row.text is None:
            return None
        return cls(row.text, len(row.options), None if row.dont_know else row.option)


def ballots(rows: Iterable[ChoiceRow]) -> list[Ballot]:
    """The parsed replies among `rows`, in order."""
    return [b for b in map(Ballot.of, rows) if b is not None]


@dataclass(frozen=True)
class PositionPrior:
    """Candidate picks per displayed position, per number of listed candidates: `counts[n][k]`."""

    counts: Mapping[int, tuple[int, ...]]

    @classmethod
    def of(cls, found: Iterable[Ballot]) -> PositionPrior:
        """The picks of `found` counted by position; "don't know" replies are not counted.

        Args:
          found: the ballots the prior is estimated from (a run's, or one question's).

        Returns:
          The counts, one tuple of n entries per prompt size n seen.
        """
        counts: dict[int, list[int]] = {}
        for b in found:
            if b.position is not None:
                counts.setdefault(b.options, [0] * b.options)[b.position] += 1
        return cls({n: tuple(c) for n, c in sorted(counts.items())})

    @classmethod
    def of_rows(cls, rows: Iterable[ChoiceRow]) -> PositionPrior:
        """The prior `choices.jsonl` rows give (a run's, or one question's), read as they come.

        A prompt size n is counted only where its candidate picks came from prompts listing more than one
        arrangement of candidates. Where all listed the same (one question under `fixed`), each candidate
        always sat at one place, so its pull and its position's cannot be told apart: that size keeps a
        uniform prior, and its votes stay plain.

        Args:
          rows: the rank prompts and their parsed replies.

        Returns:
          The counts of the sizes whose picks saw more than one arrangement.
        """
        found: list[Ballot] = []
        first: dict[int, tuple[str, ...]] = {}
        varied: set[int] = set()
        for row in rows:
            ballot = Ballot.of(row)
            if ballot is None or ballot.position is None:
                continue
            found.append(ballot)
            shown = tuple(normalize(o) for o in row.options)
            if first.setdefault(ballot.options, shown) != shown:
                varied.add(ballot.options)
        return cls({n: c for n, c in cls.of(found).counts.items() if n in varied})

    def share(self, options: int, position: int) -> Fraction:
        """P̂_n(k) = (c_n(k) + 1) / (N_n + n): the smoothed share of picks at `position` among prompts of
        `options` candidates (1/n where none were counted)."""
        counts = self.counts.get(options, (0,) * options)
        return Fraction(counts[position] + 1, sum(counts) + options)

    def weight(self, ballot: Ballot) -> Fraction:
        """u = 1 / (n · P̂_n(k)) for a pick at position k of n, before `debiased_weights` rescales it; 1 for
        "don't know"."""
        if ballot.position is None:
            return Fraction(1)
        return 1 / (ballot.options * self.share(ballot.options, ballot.position))


def debiased_weights(found: Sequence[Ballot], prior: PositionPrior) -> list[Fraction]:
    """Each ballot's weight in one debiased vote: a candidate pick's u = 1 / (n · P̂_n(k)), scaled so that the
    candidate picks weigh as many as they are; "don't know" picks weigh 1 each.

    Args:
      found: the parsed replies of one vote, in the order they were asked.
      prior: the position prior divided out.

    Returns:
      One exact weight per ballot.
    """
    raw = [prior.weight(b) for b in found]
    picked = [u for b, u in zip(found, raw, strict=True) if b.position is not None]
    scale = Fraction(len(picked)) / sum(picked, Fraction(0)) if picked else Fraction(1)
    return [u if b.position is None else u * scale for b, u in zip(found, raw, strict=True)]


def weighted_vote(found: Sequence[Ballot], weights: Sequence[Fraction]) -> tuple[str | None, float | None]:
    """The text with the largest summed weight (compared after normalisation; ties: the one chosen first) and
    its share of the total weight; (None, None) when nothing was chosen.

    Args:
      found: the parsed replies, in the order they were asked.
      weights: each ballot's weight (exact, so equal sums tie).

    Returns:
      The elected text as first spelled, and its weighted vote share.
    """
    if not found:
        return None, None
    scores: dict[str, Fraction] = {}
    for b, w in zip(found, weights, strict=True):
        key = normalize(b.text)
        scores[key] = scores.get(key, Fraction(0)) + w
    top = max(scores.values())
    total = sum(scores.values(), Fraction(0))
    return next(b.text for b in found if scores[normalize(b.text)] == top), float(top / total)


@dataclass(frozen=True)
class VoteRule:
    """One way to elect an answer from parsed rank replies; `elect(ballots, prior)` returns the text and its
    vote share. `uses_prior`: whether it reads the position prior (then a run estimates one)."""

    description: str
    elect: Callable[[Sequence[Ballot], PositionPrior], tuple[str | None, float | None]]
    uses_prior: bool = False


def _plain(found: Sequence[Ballot], prior: PositionPrior) -> tuple[str | None, float | None]:
    from a2c.qa.rank import majority_vote  # the rank prompts' module, loaded only when a vote is taken

    return majority_vote([b.text for b in found])


def _debiased(found: Sequence[Ballot], prior: PositionPrior) -> tuple[str | None, float | None]:
    return weighted_vote(found, debiased_weights(found, prior))


VOTES: Registry[VoteRule] = Registry("vote")
VOTES.register("plain")(VoteRule("one vote per parsed rank reply (the paper's majority)", _plain))
VOTES.register("debiased")(VoteRule("candidate picks weighted by 1 / (n · P̂_n(k)), the position prior "
                                    "divided out", _debiased, uses_prior=True))


def elect(vote: str, found: Sequence[Ballot], prior: PositionPrior | None = None
          ) -> tuple[str | None, float | None]:
    """The answer `vote` elects from `found` and its vote share.

    Args:
      vote: a `VOTES` name (`ask_to_choose.vote`).
      found: the parsed replies voted on, in the order they were asked.
      prior: the position prior to divide out (`PositionPrior.of_rows`); None: a uniform one.

    Returns:
      The elected text (None when nothing was chosen) and its share of the (weighted) votes.
    """
    return VOTES.get(vote).elect(found, PositionPrior({}) if prior is None else prior)


def question_prior(vote: str, rows: Iterable[ChoiceRow]) -> PositionPrior | None:
    """The prior one question's own rank replies give, where `vote` reads one (the wrapper's, the server's).

    Args:
      vote: a `VOTES` name.
      rows: the question's rank prompts, both sources.

    Returns:
      `PositionPrior.of_rows(rows)`, or None for a vote that reads no prior.
    """
    return PositionPrior.of_rows(rows) if VOTES.get(vote).uses_prior else None
