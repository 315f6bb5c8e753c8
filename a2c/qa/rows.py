"""The typed rows of a QA run's files: what each stage writes and the next stage, the report and the
decoding wrapper read back.

Every file is declared once here with its row type (`PARAPHRASES`, `GENERATIONS`, ...; the file kinds are
`a2c.runfiles`). File names and JSON field names are those of earlier a2c versions, so old run folders
still read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from a2c.metrics.sets import JudgeScores
from a2c.runfiles import MatricesFile, Row, RowsFile, RunFile

Source = Literal["paraphrase", "temperature"]  # in-context paraphrases (Y_c) or temperatures (Y_t)
SOURCES: tuple[Source, ...] = get_args(Source)
Phase = Literal["before", "after"]  # before or after Ask-to-Choose
PHASES: tuple[Phase, ...] = get_args(Phase)
ParseMethod = Literal["number", "letter", "text", "idk", "unparsed"]  # how a rank reply was read
PARSE_METHODS: tuple[ParseMethod, ...] = get_args(ParseMethod)
AnswerField = Literal["short", "long"]


@dataclass(frozen=True)
class Question:
    """One question of a run: what the variation stage paraphrases (a dataset record, or a wrapper input)."""

    id: str
    question: str


class ParaphraseItem(Row):
    technique: str
    text: str
    ok: bool  # passed its checks (after one retry); a failed one is left out of Y_c and counted
    problem: str | None  # why it failed: "empty", "identical", "multi-line", "rambling"


class ParaphraseRow(Row):
    """The in-context paraphrases of one question, one per technique (slot = technique index)."""

    id: str
    question: str
    paraphrases: list[ParaphraseItem]


class GenerationRow(Row):
    """One answer of Y_c (to paraphrase `slot`) or Y_t (sample `slot` over temperatures × samples)."""

    id: str
    source: Source
    slot: int
    technique: str | None  # the paraphrase's technique; None for temperature samples
    temperature: float
    asked: str  # the question as the model saw it
    long: str
    short: str

    def answer(self, field: AnswerField) -> str:
        return self.short if field == "short" else self.long


class ChoiceRow(Row):
    """One rank prompt of Algorithm 1 and its parsed reply; `option` is 0-based, `len(options)` being the
    "don't know" option, None when the reply named no option (then `text` is None too)."""

    id: str
    source: Source
    slot: int
    shown_question: str
    temperature: float
    options: list[str]
    reply: str
    option: int | None
    method: ParseMethod
    text: str | None

    @property
    def parsed(self) -> bool:
        return self.option is not None

    @property
    def dont_know(self) -> bool:
        """The model took the last option, "don't know": it counts as an answer."""
        return self.option == len(self.options)


class Accuracy(Row):
    """TruthfulQA accuracy of one output set under one similarity: means over its answers."""

    max_true: float
    diff: float
    acc: float


class MetricRow(Row):
    """Scores of one output set: question `id`, `source`, `phase`; `accuracy[sim]` is None for no outputs.

    A question without references has no accuracy: `n_accurate` is None and `accuracy` is empty (absent,
    not zero), so tables and plots leave it out instead of counting it as wrong.
    """

    id: str
    source: Source
    phase: Phase
    n: int
    n_accurate: int | None
    cons_lex: float | None
    judges: dict[str, JudgeScores]
    accuracy: dict[str, Accuracy | None]

    @property
    def referenced(self) -> bool:
        """Whether the question has references, so accuracy was scored."""
        return self.n_accurate is not None


PARAPHRASES = RowsFile("paraphrases.jsonl", ParaphraseRow)
GENERATIONS = RowsFile("generations.jsonl", GenerationRow)
CHOICES = RowsFile("choices.jsonl", ChoiceRow)
METRICS = RowsFile("metrics.jsonl", MetricRow)
MATRICES: dict[Phase, MatricesFile] = {phase: MatricesFile(f"matrices_{phase}.npz", SOURCES)
                                       for phase in PHASES}
SUMMARY = RunFile("summary.json")
