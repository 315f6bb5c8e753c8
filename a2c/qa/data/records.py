"""The one record type every dataset loader yields: a question with its reference answers, if any."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class QARecord:
    """A question and its references; `correct` includes the best answer (SPEC §4 scores against both).

    Your own questions may come without references (both lists empty): consistency and Ask-to-Choose need
    none, only accuracy does. A gold-answer set gives `correct` alone (its gold answer and aliases), which
    the gold-answer correctness rules score; TruthfulQA's protocol also needs `incorrect`, and a run under
    it refuses a question without (`a2c.qa.correctness.check_references`). Incorrect references without
    correct ones are refused here: no rule can use them.

    `context` is text the question is asked with and is meaningless without (SQuAD's passage, CoQA's
    story and earlier turns): the answer and rank prompts show it before the question, paraphrases
    rephrase only the question. Empty for a standalone question, whose prompts show the question alone.
    """

    id: str
    question: str
    best_answer: str | None = None
    correct: tuple[str, ...] = ()
    incorrect: tuple[str, ...] = ()
    category: str = ""
    context: str = ""

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ValueError(f"record {self.id}: empty question")
        if self.incorrect and not self.correct:
            raise ValueError(f"record {self.id}: has incorrect references but no correct ones; accuracy "
                             "needs the correct ones (or give neither)")

    @property
    def has_references(self) -> bool:
        """Whether accuracy can be scored for this record."""
        return bool(self.correct)

    @property
    def references(self) -> tuple[str, ...]:
        """Every reference answer, correct then incorrect (a paraphrase must state none of them)."""
        return (*self.correct, *self.incorrect)


def split_references(cell: str, separator: str = ";") -> tuple[str, ...]:
    """A reference list stored as one text cell (TruthfulQA's CSV uses `; `), blanks dropped."""
    return tuple(part.strip() for part in cell.split(separator) if part.strip())


def with_best(best: str, refs: Iterable[str]) -> tuple[str, ...]:
    """The correct references with the best answer among them (SPEC §4 scores against both)."""
    refs = tuple(r.strip() for r in refs if r.strip())
    return refs if best in refs else (best, *refs)
