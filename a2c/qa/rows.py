"""The typed rows of a QA run's files: what each stage writes and the next stage, the report and the
decoding wrapper read back.

Every file is declared once here with its row type (`PARAPHRASES`, `GENERATIONS`, ...; the file kinds are
`a2c.run.runfiles`). File names and JSON field names are those of earlier a2c versions, so old run folders
still read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from a2c.metrics.sets import JudgeScores
from a2c.run.runfiles import MatricesFile, Row, RowsFile, RunFile

Source = Literal["paraphrase", "temperature"]  # in-context paraphrases (Y_c) or temperatures (Y_t)
SOURCES: tuple[Source, ...] = get_args(Source)


@dataclass(frozen=True)
class SourceLabel:
    """How the report, viewer and comparison name a source: in a table cell or plot title (Table 5's
    columns), and in a sentence of "What this run says"."""

    table: str
    prose: str


SOURCE_LABELS: dict[Source, SourceLabel] = {
    "paraphrase": SourceLabel("in-context paraphrases", "in-context paraphrases"),
    "temperature": SourceLabel("cross-temperature", "cross-temperature samples"),
}
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
    problem: str | None  # why it failed: "empty", "not a question", … (`a2c.variation.paraphrase_problem`)
    # under a meaning check only (absent otherwise): why the first draw failed (None: no retry), and the
    # check's score of the kept text (None: it failed a form check, so it was not scored)
    first_problem: str | None = Field(None, exclude_if=lambda v: v is None)
    meaning: float | None = Field(None, exclude_if=lambda v: v is None)


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
    technique: str | None  # the paraphrase's technique; None for temperature samples and given answers
    temperature: float | None  # None: a given answer (`dataset: samples`) whose temperature is not said
    asked: str  # the question as the model saw it
    long: str
    short: str
    # the long answer's chosen-token log-probabilities (`variation.logprobs`, or a samples file's); absent
    # from the file when not asked for, so older runs' rows read as written
    token_logprobs: list[float] | None = Field(None, exclude_if=lambda v: v is None)

    def answer(self, field: AnswerField) -> str:
        return self.short if field == "short" else self.long


class ChoiceRow(Row):
    """One rank prompt of Algorithm 1 and its parsed reply; `option` is 0-based, `len(options)` being the
    "don't know" option, None when the reply named no option (then `text` is None too).

    `options` are listed as the prompt showed them, so `option` is the position the model named. `order`
    is absent when that is the first-seen order (`ask_to_choose.option_order: fixed`, and rows written
    before the setting existed); otherwise `order[k]` is the first-seen index of `options[k]`."""

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
    order: list[int] | None = None

    @model_serializer(mode="wrap")
    def _first_seen_order_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `order` key for first-seen options: a `fixed` run writes the rows it wrote without it."""
        data: dict[str, Any] = handler(self)
        if self.order is None:
            data.pop("order", None)
        return data

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
    # the registered metrics the metrics stage computes (`a2c.qa.metric_columns`), by column key; left out
    # of the file when there are none, so runs without them write what earlier a2c versions wrote
    extra: dict[str, float | None] = Field(default_factory=dict, exclude_if=lambda extra: not extra)

    @property
    def referenced(self) -> bool:
        """Whether the question has references, so accuracy was scored."""
        return self.n_accurate is not None


class SelectionRow(Row):
    """One selection method's pick for one question and source (`a2c.qa.selection`).

    `candidate` indexes the source's candidates (its answers in `generations.jsonl` order); None when the
    pick is the "don't know" option or nothing was picked (`text` None: no candidates, no parsed reply).
    `dont_know` is None for a method that offers no "don't know" option (only A2C's rank prompts do).
    `calls` are the model calls the method spent on this pick; `reply` and `parse` are USC's raw reply
    and how it was read (None for methods that ask no model). `vote` is how A2C's rank replies elected the
    pick (`ask_to_choose.vote`, `a2c.qa.vote`), written only when not the plain majority: rows of a plain
    vote read as they were written before the setting."""

    id: str
    source: Source
    method: str
    text: str | None
    candidate: int | None
    dont_know: bool | None = None
    calls: int = 0
    reply: str | None = None
    parse: ParseMethod | None = None
    vote: str | None = None

    @model_serializer(mode="wrap")
    def _plain_vote_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No `vote` key for a plain vote or a method that takes none: those rows are as before."""
        data: dict[str, Any] = handler(self)
        if self.vote is None:
            data.pop("vote", None)
        return data

    @property
    def unparsed(self) -> bool:
        """The model was asked and its reply named no candidate."""
        return self.reply is not None and self.text is None


class SelectionScoreRow(Row):
    """Accuracy of one method's pick for one question and source, per similarity: empty for a question
    without references, None where nothing was picked. `random` is the exact expectation over the
    candidates, not a draw."""

    id: str
    source: Source
    method: str
    picked: bool
    unparsed: bool  # the model was asked and named no candidate
    dont_know: bool | None  # None: the method offers no "don't know" option (all but A2C)
    calls: int
    accuracy: dict[str, Accuracy | None]

    @property
    def referenced(self) -> bool:
        return bool(self.accuracy)


class UncertaintyRow(Row):
    """The black-box uncertainty measures of one output set (`a2c.metrics.uncertainty`), from the stored
    matrices: `sets[measure][judge]` one value per set, `answers[measure][judge]` one per answer (None
    below two answers); `accurate` is each answer's accuracy bit (None without references)."""

    id: str
    source: Source
    phase: Phase
    accurate: list[bool] | None
    sets: dict[str, dict[str, float | None]]
    answers: dict[str, dict[str, list[float] | None]]


PARAPHRASES = RowsFile("paraphrases.jsonl", ParaphraseRow)
GENERATIONS = RowsFile("generations.jsonl", GenerationRow)
CHOICES = RowsFile("choices.jsonl", ChoiceRow)
METRICS = RowsFile("metrics.jsonl", MetricRow)
SELECTIONS = RowsFile("selections.jsonl", SelectionRow)
SELECTION_SCORES = RowsFile("selection_scores.jsonl", SelectionScoreRow)
UNCERTAINTY = RowsFile("uncertainty.jsonl", UncertaintyRow)
MATRICES: dict[Phase, MatricesFile] = {phase: MatricesFile(f"matrices_{phase}.npz", SOURCES)
                                       for phase in PHASES}
SUMMARY = RunFile("summary.json")
