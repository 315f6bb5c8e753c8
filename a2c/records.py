"""The typed rows of a run's files: what each stage writes and the next stage, the report and the decoding
wrapper read back.

Every file is declared once here with its row type (`PARAPHRASES`, `GENERATIONS`, ...), so writer and
readers cannot drift apart. File names and JSON field names are those of earlier a2c versions, so old run
folders still read. Unknown fields are ignored (a newer a2c may add some); a missing or mistyped field is
a `RunFileError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar, cast, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from a2c.errors import A2CError
from a2c.scoring import JudgeScores

Source = Literal["paraphrase", "temperature"]  # in-context paraphrases (Y_c) or temperatures (Y_t)
SOURCES: tuple[Source, ...] = get_args(Source)
Phase = Literal["before", "after"]  # before or after Ask-to-Choose
PHASES: tuple[Phase, ...] = get_args(Phase)
ParseMethod = Literal["number", "letter", "text", "idk", "unparsed"]  # how a rank reply was read
PARSE_METHODS: tuple[ParseMethod, ...] = get_args(ParseMethod)
AnswerField = Literal["short", "long"]


class RunFileError(A2CError):
    """A run file that is missing or does not parse: the message names the file and, for rows, the line."""


@dataclass(frozen=True)
class Question:
    """One question of a run: what the variation stage paraphrases (a dataset record, or a wrapper input)."""

    id: str
    question: str


class Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class ParaphraseItem(Row):
    technique: str
    text: str
    ok: bool  # passed its checks (after one retry); a failed one is left out of Y_c and counted
    problem: str | None  # why it failed: "empty", "not a question", … (`a2c.variation.paraphrase_problem`)


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


R = TypeVar("R", bound=Row)


@dataclass(frozen=True)
class RunFile:
    """A file of the run folder, by name."""

    name: str


@dataclass(frozen=True)
class RowsFile(RunFile, Generic[R]):
    """A JSON-lines file whose every line is one `row`."""

    row: type[R]

    def dumps(self, rows: list[R]) -> str:
        return "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows)

    def loads(self, text: str, where: str) -> list[R]:
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(self.row.model_validate_json(line))
            except ValidationError as exc:
                problems = "; ".join(_problem(e) for e in exc.errors(include_url=False))
                raise RunFileError(f"{where}:{number}: not a {self.row.__name__}: {problems}") from None
        return rows


def _problem(error: Mapping) -> str:
    key = ".".join(str(p) for p in error["loc"])
    return f"{key}: {error['msg']}" if key else str(error["msg"])


MatrixKey = tuple[str, Source, str]  # (judge, source, question id)


@dataclass(frozen=True)
class MatrixSet:
    """The agreement matrices of one phase, keyed (judge, source, question id); on disk an npz whose keys
    are `judge|source|id`."""

    matrices: Mapping[MatrixKey, np.ndarray]

    def __getitem__(self, key: MatrixKey) -> np.ndarray:
        return self.matrices[key]

    def __iter__(self) -> Iterator[MatrixKey]:
        return iter(self.matrices)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"|".join(key): m for key, m in self.matrices.items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], where: str) -> MatrixSet:
        matrices: dict[MatrixKey, np.ndarray] = {}
        for name, m in arrays.items():
            judge, source, qid = [*name.split("|", 2), "", ""][:3]
            if source not in SOURCES or not judge or not qid:
                raise RunFileError(f"{where}: key {name!r} is not judge|source|id with a source in {SOURCES}")
            if m.ndim != 2 or m.shape[0] != m.shape[1]:
                raise RunFileError(f"{where}: {name} has shape {m.shape}, not a square matrix")
            matrices[(judge, cast(Source, source), qid)] = m
        return cls(matrices)


@dataclass(frozen=True)
class MatricesFile(RunFile):
    """An npz of one `MatrixSet`."""


PARAPHRASES = RowsFile("paraphrases.jsonl", ParaphraseRow)
GENERATIONS = RowsFile("generations.jsonl", GenerationRow)
CHOICES = RowsFile("choices.jsonl", ChoiceRow)
METRICS = RowsFile("metrics.jsonl", MetricRow)
MATRICES: dict[Phase, MatricesFile] = {phase: MatricesFile(f"matrices_{phase}.npz") for phase in PHASES}
SUMMARY = RunFile("summary.json")
TIMINGS = RunFile("timings.json")  # wall time and per-stage counts of the last `a2c run`
