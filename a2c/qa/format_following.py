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

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from a2c.qa.rows import SOURCES, AnswerField, ChoiceRow, GenerationRow, Source
from a2c.reporting import Table, fmt
from a2c.text import normalize

FORMAT_FOLLOWING_NOTE = (
    "The paper's hypothesis is that Ask-to-Choose needs a model that follows the rank prompt. Per source: "
    "the share of rank replies naming one of the answer options, the \"don't know\" option, or nothing "
    "(left out of the choices); then, among the replies that picked an answer of a prompt showing at least "
    "two, the share picked at each position against the share of the candidates merged into the option "
    "there (what a pick blind to positions gets on average): picked well above the candidates' share at "
    "position 1 is a preference for the first line.")


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


def format_following(choices: Sequence[ChoiceRow], generations: Sequence[GenerationRow],
                     answer_field: AnswerField) -> dict[Source, FormatFollowing]:
    """Format-following per source of the rank replies (empty without A2C)."""
    candidates: dict[tuple[str, Source], list[str]] = {}
    for g in generations:
        key = normalize(g.answer(answer_field))
        if key:
            candidates.setdefault((g.id, g.source), []).append(key)
    result = {}
    for source in SOURCES:
        mine = [c for c in choices if c.source == source]
        if not mine:
            continue
        picks: list[int] = []
        shares: list[list[float]] = []
        for c in mine:
            if c.option is None or c.dont_know or len(c.options) < 2:
                continue
            pool = candidates.get((c.id, source), [])
            if not pool:
                continue
            picks.append(c.option)
            shares.append([sum(k == normalize(o) for k in pool) / len(pool) for o in c.options])
        width = max((len(s) for s in shares), default=0)
        picked = [sum(p == k for p in picks) / len(picks) for k in range(width)] if picks else []
        expected = [sum(s[k] for s in shares if k < len(s)) / len(shares) for k in range(width)]
        result[source] = FormatFollowing(
            replies=len(mine), named_option=sum(c.parsed and not c.dont_know for c in mine),
            named_idk=sum(c.dont_know for c in mine), unparsed=sum(not c.parsed for c in mine),
            positioned=len(picks), picked=picked, expected=expected)
    return result


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
                           fmt(ff.share(ff.named_idk)), fmt(ff.share(ff.unparsed)), f"{ff.positioned:,}",
                           _position(ff, 0, 1), _position(ff, 1, 2), _position(ff, 2)] for lead, ff in rows])
