"""What the decoding wrapper returns for one question: its candidates, rank choices and consistency, the
judges' sets and selections where asked for, and the answer-or-decline verdict (`a2c.qa.decide`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from a2c.metrics import cons_lex
from a2c.metrics.sets import JudgeScores
from a2c.qa.rows import AnswerField, ChoiceRow, GenerationRow, ParaphraseItem, SelectionRow, Source
from a2c.qa.vote import DEFAULT_VOTE, ballots, elect, question_prior


@dataclass(frozen=True)
class Decision:
    """A calibration's verdict on one question: the raw signal, its calibrated confidence, whether the
    answer is declined, and the answer it is about (None when the source's rank replies named nothing)."""

    signal: str
    source: Source
    score: float | None
    confidence: float | None
    declined: bool
    answer: str | None
    decline_below: float | None  # the calibration's threshold (None: it declines everything)


@dataclass(frozen=True)
class JudgedSet:
    """One judge on the candidates of one source: its agreement matrix and the set scores a run computes."""

    matrix: list[list[float]]
    scores: JudgeScores


@dataclass
class Choice:
    """What the decoding wrapper returns for one question."""

    question: str
    answer: str | None  # the most chosen option's text; None when no reply could be parsed
    candidates: list[str]  # Y_c then Y_t (a paraphrase that failed its checks has no answer in Y_c)
    choices: list[ChoiceRow] = field(repr=False)  # one per rank prompt, as `choices.jsonl` keeps them
    consistency: dict[str, float | int | None] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)  # the question each candidate answered (q or a paraphrase)
    generations: list[GenerationRow] = field(default_factory=list, repr=False)  # the rows behind `candidates`
    # every in-context paraphrase, one per technique: those that failed their checks too (`ok`, `problem`),
    # so a caller can show what the model wrote instead of only counting what was left out
    paraphrases: list[ParaphraseItem] = field(default_factory=list, repr=False)
    # judge → source → the run's judges stage on the candidates (only when `answer_many(judges=...)`)
    judged: dict[str, dict[Source, JudgedSet]] = field(default_factory=dict, repr=False)
    # selection method → source → its pick, as `selections.jsonl` keeps it (only with `selection=`)
    selections: dict[str, dict[Source, SelectionRow]] = field(default_factory=dict, repr=False)
    decision: Decision | None = None  # answer or decline (only with `AskToChoose(calibration=...)`)

    @property
    def confidence(self) -> float | None:
        """P(the calibration source's A2C answer is accurate), calibrated; None without a calibration or
        when the signal is undefined."""
        return None if self.decision is None else self.decision.confidence

    @property
    def declined(self) -> bool | None:
        """Whether the calibration says not to answer; None without a calibration."""
        return None if self.decision is None else self.decision.declined

    @property
    def chosen_texts(self) -> list[str]:
        return [c.text for c in self.choices if c.text is not None]


def summarize(question: str, generations: Sequence[GenerationRow], choices: Sequence[ChoiceRow],
              answer_field: AnswerField = "short", vote: str = DEFAULT_VOTE) -> Choice:
    """The vote over parsed choices (`ask_to_choose.vote`: the majority, ties: first chosen; `debiased`
    divides out the position prior of this question's own replies), with agreement before and after
    choosing.

    Args:
        question: the question asked.
        generations: the rows of its candidate answers (Y_c then Y_t).
        choices: its rank prompts' parsed replies.
        answer_field: which answer of a generation is the candidate (`short` or `long`).
        vote: the `VOTES` name electing the answer.

    Returns:
        The elected answer with the candidates, the choices and their lexical agreement, vote share and
        number of unparsed replies.
    """
    candidates = [g.answer(answer_field) for g in generations]
    chosen = [c.text for c in choices if c.text is not None]
    answer, share = elect(vote, ballots(choices), question_prior(vote, choices))
    consistency: dict[str, float | int | None] = {
        "candidates_lexical": _lexical_agreement(candidates),
        "choices_lexical": _lexical_agreement(chosen),
        "vote_share": share,
        "unparsed": sum(1 for c in choices if not c.parsed),
    }
    return Choice(question, answer, candidates, list(choices), consistency, [g.asked for g in generations],
                  list(generations))


def _lexical_agreement(texts: Sequence[str]) -> float | None:
    return cons_lex(list(texts)) if len(texts) >= 2 else None
