"""The one record type every dataset loader yields: a question with its reference answers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QARecord:
    """A question and its references; `correct` includes the best answer (SPEC §4 scores against both)."""

    id: str
    question: str
    best_answer: str
    correct: tuple[str, ...]
    incorrect: tuple[str, ...]
    category: str = ""

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ValueError(f"record {self.id}: empty question")
        if not self.correct or not self.incorrect:
            raise ValueError(f"record {self.id}: needs at least one correct and one incorrect reference")
