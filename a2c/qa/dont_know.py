"""The run's three don't-know figures, each defined once here and named apart wherever it is shown.

They count the same rank-prompt option, "don't know", over three different things, so on one run they
differ (and a table showing one names it by its name below):

- **of choices**: among the rank replies that named an option (A2C's choices, the after-A2C answers
  whose accuracy and consistency the "after" cells measure), the share naming "don't know";
- **of rank replies**: among every rank reply, those that named nothing included, the share naming
  "don't know" (the format-following table's "named don't know", beside "named an option" and "named
  nothing", the three adding up to 1);
- **of picks**: among A2C's picks (its majority choice, one per question and source, where it picked
  anything), the share that is "don't know".
"""

from __future__ import annotations

from collections.abc import Iterable

OF_CHOICES = "don't-know share of choices"
OF_RANK_REPLIES = "don't-know share of rank replies"
OF_PICKS = "don't-know share of picks"


def heading(name: str) -> str:
    """A figure's name as a table column starts it ("Don't-know share of picks")."""
    return name[:1].upper() + name[1:]


def share_of_choices(rank_replies: int, unparsed: int, named_dont_know: int) -> float | None:
    """The don't-know share of choices: replies naming "don't know" over those naming any option.

    Args:
        rank_replies: every rank reply of the source.
        unparsed: the replies that named no option (left out of the choices).
        named_dont_know: the replies that named "don't know".

    Returns:
        The share, None when no reply named an option.
    """
    parsed = rank_replies - unparsed
    return named_dont_know / parsed if parsed else None


def share_of_rank_replies(rank_replies: int, named_dont_know: int) -> float | None:
    """The don't-know share of rank replies: replies naming "don't know" over every reply.

    Args:
        rank_replies: every rank reply of the source.
        named_dont_know: the replies that named "don't know".

    Returns:
        The share, None when there was no rank reply.
    """
    return named_dont_know / rank_replies if rank_replies else None


def share_of_picks(picks_dont_know: Iterable[bool]) -> float | None:
    """The don't-know share of picks: picks that are "don't know" over every pick.

    Args:
        picks_dont_know: per pick (a question and source where A2C picked an answer), whether it is the
            "don't know" option.

    Returns:
        The share, None when nothing was picked.
    """
    flags = [bool(flag) for flag in picks_dont_know]
    return sum(flags) / len(flags) if flags else None
