"""Does the model follow the rank prompt? The paper's hypothesis is that Ask-to-Choose needs a model that
does, so a run measures it per source from its rank replies (`choices.jsonl`) and candidates
(`generations.jsonl`):

- the share of replies that name one of the answer options, that name the "don't know" option, and that
  name nothing (left out of A2C's choices);
- position bias: among replies that named an answer option of a prompt showing at least two, how often
  each position was picked against the share of the candidates merged into the option at that position.
  The candidate share is what a pick that ignores positions would get on average — a uniform draw of a
  candidate, the `random` selection baseline — so an excess at position 1 is a preference for the first
  line, not for the answer most samples gave (which the merging tends to put first as well).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from a2c.common.text import normalize
from a2c.display.reporting import Table, fmt
from a2c.qa.dont_know import OF_RANK_REPLIES, share_of_rank_replies
from a2c.qa.rows import SOURCES, AnswerField, ChoiceRow, GenerationRow, Source

FORMAT_FOLLOWING_NOTE = (
    "The paper's hypothesis is that Ask-to-Choose needs a model that follows the rank prompt. Per source: "
    "the share of rank replies naming one of the answer options, the \"don't know\" option (\"named don't "
    f"know\": the {OF_RANK_REPLIES}), or nothing (left out of the choices); then, among the replies that "
    "picked an answer of a prompt showing at least two, the share picked at each position against the "
    "share of the candidates merged into the option there (what a pick blind to positions gets on "
    "average): picked well above the candidates' share at position 1 is a preference for the first line.")


class FormatFollowing(BaseModel):
    """Rank replies of one source: how many named an option, "don't know", nothing; picks by position."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    replies: int
    named_option: int  # one of the answer options (not "don't know")
    named_idk: int
    unparsed: int
    positioned: int  # replies that named an answer option of a prompt showing at least two
    picked: list[float]  # share of those picks at position 1, 2, …
    expected: list[float]  # mean candidate share of the option at that position, over the same replies

    def share(self, count: int) -> float | None:
        return count / self.replies if self.replies else None

    def bias(self, position: int) -> float | None:
        """Picked / expected at a 0-based position (1 = no preference; None where nothing is expected)."""
        if position >= len(self.picked) or not self.expected[position]:
            return None
        return self.picked[position] / self.expected[position]


@dataclass
class _Tally:
    """One source's replies counted as they stream by: sums per option position, no list of replies."""

    replies: int = 0
    named_option: int = 0
    named_idk: int = 0
    unparsed: int = 0
    positioned: int = 0
    picks: Counter[int] = field(default_factory=Counter)  # option position → replies that picked it
    shares: list[float] = field(default_factory=list)  # position → summed candidate share there

    def add(self, choice: ChoiceRow, pool: list[str], normal: Callable[[str], str] = normalize) -> None:
        self.replies += 1
        self.named_option += choice.parsed and not choice.dont_know
        self.named_idk += choice.dont_know
        self.unparsed += not choice.parsed
        if choice.option is None or choice.dont_know or len(choice.options) < 2 or not pool:
            return
        self.positioned += 1
        self.picks[choice.option] += 1
        for k, option in enumerate(choice.options):
            share = pool.count(normal(option)) / len(pool)  # normalised once, not once per candidate
            if k < len(self.shares):
                self.shares[k] += share
            else:
                self.shares.append(0 + share)

    def result(self) -> FormatFollowing:
        width = len(self.shares)
        n = self.positioned
        return FormatFollowing(
            replies=self.replies, named_option=self.named_option, named_idk=self.named_idk,
            unparsed=self.unparsed, positioned=n,
            picked=[self.picks[k] / n for k in range(width)] if n else [],
            expected=[self.shares[k] / n for k in range(width)])


GenerationsOf = Callable[[Sequence[str]], Iterable[GenerationRow]]
"""The answers of some questions (e.g. `ItemRows.rows` over `generations.jsonl`, or `held`)."""

_QUESTIONS_AT_ONCE = 256  # whose candidates are held while their replies are tallied


def format_following(choices: Iterable[ChoiceRow], generations_of: GenerationsOf,
                     answer_field: AnswerField) -> dict[Source, FormatFollowing]:
    """Format-following per source of the rank replies (empty without A2C), in one pass over the choices.
    The candidates are read for a few hundred questions' replies at a time: a run's answers are never all
    held (at 100,000 questions, 2.8 million of them)."""
    # a question's samples repeat one another and its rank prompts show the same options again and again:
    # each text is normalised once while it recurs (a bounded memo, so a large run holds no more)
    normal = lru_cache(maxsize=4096)(normalize)
    tallies: dict[Source, _Tally] = {}
    for batch, ids in _batches(choices):
        candidates: dict[tuple[str, Source], list[str]] = {}
        for g in generations_of(ids):
            key = normal(g.answer(answer_field))
            if key:
                candidates.setdefault((g.id, g.source), []).append(key)
        for c in batch:
            tallies.setdefault(c.source, _Tally()).add(c, candidates.get((c.id, c.source), []), normal)
    return {source: tallies[source].result() for source in SOURCES if source in tallies}


def _batches(choices: Iterable[ChoiceRow]) -> Iterator[tuple[list[ChoiceRow], list[str]]]:
    """The replies in their order, cut into runs of at most `_QUESTIONS_AT_ONCE` questions, with those
    questions' ids (the tallies add in the replies' order whatever the cuts: the same sums)."""
    batch: list[ChoiceRow] = []
    ids: dict[str, None] = {}
    for c in choices:
        if c.id not in ids and len(ids) == _QUESTIONS_AT_ONCE:
            yield batch, list(ids)
            batch, ids = [], {}
        ids[c.id] = None
        batch.append(c)
    if batch:
        yield batch, list(ids)


def held(generations: Iterable[GenerationRow]) -> GenerationsOf:
    """Answers already in memory, looked up by question (for callers that hold them: `a2c compare`)."""
    by_id: dict[str, list[GenerationRow]] = {}
    for g in generations:
        by_id.setdefault(g.id, []).append(g)
    return lambda ids: [g for i in ids for g in by_id.get(i, [])]


def _position(ff: FormatFollowing, first: int, last: int | None = None) -> str:
    """Picked vs candidate share of positions first..last (0-based, last exclusive; None: to the end)."""
    picked, expected = sum(ff.picked[first:last]), sum(ff.expected[first:last])
    if not ff.positioned or first >= len(ff.picked):
        return "n/a"
    return f"{picked:.2f} vs {expected:.2f}"


def format_following_table(rows: Sequence[tuple[Sequence[str], FormatFollowing]],
                           leading: Sequence[str]) -> Table:
    """One line per (`leading` cells, source's figures): shares of replies naming an option, "don't know"
    or nothing, and the picks at positions 1, 2 and 3+ against the candidates' share there."""
    header = [*leading, "rank replies", "named an option", "named don't know", "named nothing",
              "answer picks (≥ 2 options)", "position 1: picked vs candidates", "position 2",
              "positions 3+"]
    return Table(header, [[*lead, f"{ff.replies:,}", fmt(ff.share(ff.named_option)),
                           fmt(share_of_rank_replies(ff.replies, ff.named_idk)), fmt(ff.share(ff.unparsed)),
                           f"{ff.positioned:,}", _position(ff, 0, 1), _position(ff, 1, 2), _position(ff, 2)]
                          for lead, ff in rows])
