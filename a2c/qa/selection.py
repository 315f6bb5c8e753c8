"""Picking one answer per question and source: Ask-to-Choose and the cheap ways it is compared with.

Every method is one entry of `SELECTION_METHODS` (its label, its `Options` model, what it reads and a
selector batched over a chunk of questions), so adding one is adding an entry:

- `a2c`: the vote over the source's parsed rank choices (`ask_to_choose.vote`, `a2c.qa.vote`: the majority,
  ties as the wrapper breaks them, or the debiased vote); its calls are the rank prompts plus the fresh
  paraphrases they show.
- `usc`: Universal Self-Consistency, one prompt per question and source (`a2c.qa.usc`).
- `medoid`: the candidate with the highest mean agreement to the others under a judge (option `judge`,
  default the first listed); minimum Bayes risk under that judge.
- `majority_cluster`: the first member of the largest cluster of the entropy judge (self-consistency's
  majority vote on free-form answers); ties as `a2c.metrics.selection.majority_cluster_index`.
- `main`: the main answer a samples file gives for the question (`dataset: {name: samples}`), for both
  sources; the field's protocol labels it and estimates its uncertainty from the samples.
- `random`: a uniformly drawn candidate. It picks nothing: its accuracy is the exact expectation over the
  candidates (`expected_random_accuracy`), always reported as the comparator.

A judge whose high score means disagreement (`contra`) is read as agreement 1 − score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from a2c.common.errors import A2CError
from a2c.common.registry import Registry
from a2c.common.seeds import stable_seed
from a2c.common.text import normalize
from a2c.judges import JUDGES, Judge
from a2c.llm.base import Generator
from a2c.llm.config import generator_slice
from a2c.metrics.consistency import semantic_clusters
from a2c.metrics.selection import majority_cluster_index, medoid_index
from a2c.qa.rows import SOURCES, ChoiceRow, ParseMethod, Question, SelectionRow, Source
from a2c.qa.usc import Responses, universal_self_consistency
from a2c.qa.vote import DEFAULT_VOTE, VOTES, PositionPrior, ballots, elect
from a2c.run.runfiles import MatrixLookup
from a2c.settings.config import registered

if TYPE_CHECKING:  # the config validates method names against this registry
    from a2c.qa.config import ExperimentConfig, SelectionConfig

RANDOM = "random"


class SelectionError(A2CError, ValueError):
    """Selection methods a run or the wrapper cannot use (a judge it lacks, `a2c` without A2C, `random`)."""


SetKey = tuple[str, Source]  # (question id, source)


class SelectionOptions(BaseModel):
    """What a method accepts (nothing by default); strict, so a YAML string is not read as a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class MedoidOptions(SelectionOptions):
    judge: str | None = Field(None, description="whose agreement matrix (default: the first judge listed)")

    @field_validator("judge")
    @classmethod
    def _known(cls, judge: str | None) -> str | None:
        return None if judge is None else registered(JUDGES, judge)


class UscOptions(SelectionOptions):
    max_tokens: int = Field(8, ge=1, description="reply budget (one response number is wanted)")


@dataclass(frozen=True)
class Pick:
    """One method's answer for one question and source (`SelectionRow` without its keys)."""

    text: str | None
    candidate: int | None
    dont_know: bool | None = None  # None: the method offers no "don't know" option
    calls: int = 0
    reply: str | None = None
    parse: ParseMethod | None = None
    vote: str | None = None  # how rank replies elected it, when not the plain majority

    def row(self, question_id: str, source: Source, method: str) -> SelectionRow:
        return SelectionRow(id=question_id, source=source, method=method, text=self.text,
                            candidate=self.candidate, dont_know=self.dont_know, calls=self.calls,
                            reply=self.reply, parse=self.parse, vote=self.vote)


@dataclass(frozen=True)
class SelectionInputs:
    """What the selectors read, for a chunk of questions: the candidates of every question and source (the
    configured answer field of `generations.jsonl`), the rank choices, and — read or built on first use —
    the judges' matrices before A2C, the judges and the main model."""

    config: ExperimentConfig
    questions: Sequence[Question]
    candidates: Mapping[str, Mapping[Source, Sequence[str]]]
    choices: Mapping[SetKey, Sequence[ChoiceRow]]
    matrices: Callable[[], MatrixLookup]
    judge: Callable[[str], Judge]
    generator: Callable[[], Generator]
    # the position prior A2C's debiased vote divides out, counted over the run's rank replies; None: each
    # question's own replies (the wrapper's and the server's, so no answer depends on another question)
    run_prior: Callable[[], PositionPrior] | None = None
    # each question's main answer, given by a samples file (`a2c.qa.data.samples`); `main` picks it
    main_answers: Mapping[str, str] = field(default_factory=dict)

    def position_prior(self, question_id: str) -> PositionPrior:
        """The prior over displayed positions for one question's vote (`a2c.qa.vote`): the run's, when
        given, else the one the question's own rank replies (both sources) give."""
        if self.run_prior is not None:
            return self.run_prior()
        return PositionPrior.of_rows(c for s in SOURCES for c in self.choices.get((question_id, s), ()))

    def agreement(self, judge: str, key: SetKey) -> np.ndarray:
        """The judge's matrix of one set as agreement (higher = more alike)."""
        m = np.asarray(self.matrices()[(judge, key[1], key[0])], dtype=np.float64)
        return m if self.judge(judge).higher_is_consistent else 1.0 - m


Selector = Callable[[SelectionInputs, Any], dict[SetKey, Pick]]


def _no_judges(options: Any, config: ExperimentConfig) -> tuple[str, ...]:
    return ()


def _no_settings(options: Any, config: ExperimentConfig) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class SelectionMethod:
    """A selection method. `select` is None for one that picks nothing (`random`); `judges` names the judges
    whose matrices it reads and `settings` what else its picks depend on (both key the selection stage)."""

    label: str
    options: type[SelectionOptions]
    select: Selector | None
    judges: Callable[[Any, ExperimentConfig], tuple[str, ...]] = _no_judges
    settings: Callable[[Any, ExperimentConfig], dict[str, Any]] = _no_settings
    asks_generator: bool = False  # it asks the run's generator to pick (a samples run may have none)


SELECTION_METHODS: Registry[SelectionMethod] = Registry("selection method", group="a2c.selection")


def selection_options(name: str, options: Mapping[str, Any]) -> SelectionOptions:
    """A method's options checked by its model: bad values raise pydantic's `ValidationError` keyed by
    option (a config reports `file:line: selection.0.judge: ...`), unknown options too."""
    return SELECTION_METHODS.get(name).options.model_validate(dict(options))


def method_judges(spec: SelectionConfig, config: ExperimentConfig) -> tuple[str, ...]:
    """The judges whose matrices a configured method reads."""
    return SELECTION_METHODS.get(spec.name).judges(selection_options(spec.name, spec.options), config)


def method_settings(spec: SelectionConfig, config: ExperimentConfig) -> dict[str, Any]:
    """A configured method's options (defaults filled in) and the other settings its picks depend on."""
    method = SELECTION_METHODS.get(spec.name)
    options = selection_options(spec.name, spec.options)
    return {"options": options.model_dump(mode="json"), **method.settings(options, config)}


def select(chunks: Callable[[str], Iterable[SelectionInputs]], methods: Sequence[SelectionConfig]
           ) -> Iterator[SelectionRow]:
    """Every method's pick for every question and source, method-major, in question and source order.
    `chunks(method)` gives the inputs a chunk of questions at a time (a run reads them from its files as it
    goes), so one chunk's candidates and picks are held at a time."""
    for spec in methods:
        method = SELECTION_METHODS.get(spec.name)
        if method.select is None:
            continue
        options = selection_options(spec.name, spec.options)
        for inputs in chunks(spec.name):
            picks = method.select(inputs, options)
            yield from (picks[(q.id, s)].row(q.id, s, spec.name) for q in inputs.questions for s in SOURCES)


def _candidate_of(text: str, candidates: Sequence[str]) -> int | None:
    """The first candidate that says `text` (after normalisation), as a rank option maps back."""
    key = normalize(text)
    return next((i for i, c in enumerate(candidates) if normalize(c) == key), None)


# -- the methods ------------------------------------------------------------------------------------------

def _a2c(inputs: SelectionInputs, options: SelectionOptions) -> dict[SetKey, Pick]:
    fresh = len(inputs.config.variation.techniques)  # one fresh paraphrase per context, shown by both sources
    vote = inputs.config.ask_to_choose.vote
    recorded = None if vote == DEFAULT_VOTE else vote
    uses_prior = VOTES.get(vote).uses_prior
    picks = {}
    for q in inputs.questions:
        prior = inputs.position_prior(q.id) if uses_prior else None
        for s in SOURCES:
            choices = inputs.choices.get((q.id, s), ())
            text, _ = elect(vote, ballots(choices), prior)
            calls = len(choices) + fresh
            if text is None:
                picks[(q.id, s)] = Pick(None, None, dont_know=False, calls=calls, vote=recorded)
                continue
            dont_know = any(c.dont_know and normalize(c.text or "") == normalize(text) for c in choices)
            candidate = None if dont_know else _candidate_of(text, inputs.candidates[q.id][s])
            picks[(q.id, s)] = Pick(text, candidate, dont_know=dont_know, calls=calls, vote=recorded)
    return picks


def _usc(inputs: SelectionInputs, options: UscOptions) -> dict[SetKey, Pick]:
    """One prompt per set of two or more non-empty candidates (one is its own pick, none has none), all
    in one batched call."""
    picks: dict[SetKey, Pick] = {}
    asked: list[tuple[SetKey, Question, Responses]] = []
    for q in inputs.questions:
        for s in SOURCES:
            texts = inputs.candidates[q.id][s]
            responses = Responses.of(texts)
            if len(responses.shown) >= 2:
                asked.append(((q.id, s), q, responses))
            else:
                only = responses.shown[0] if responses.shown else None
                picks[(q.id, s)] = Pick(None if only is None else texts[only], only)
    if asked:
        seed = inputs.config.seed
        found = universal_self_consistency(
            inputs.generator(), [q.question for _, q, _ in asked], [r for _, _, r in asked],
            [stable_seed(seed, "usc", q.question, key[1]) for key, q, _ in asked],
            max_tokens=options.max_tokens)
        for (key, _, responses), pick in zip(asked, found, strict=True):
            parse: ParseMethod = pick.parsed.method if pick.candidate is not None \
                else "idk" if pick.parsed.method == "idk" else "unparsed"
            text = None if pick.candidate is None else responses.candidates[pick.candidate]
            picks[key] = Pick(text, pick.candidate, calls=1, reply=pick.reply, parse=parse)
    return picks


def _medoid_judge(options: MedoidOptions, config: ExperimentConfig) -> tuple[str, ...]:
    return (options.judge or config.judges[0].name,)


def _medoid(inputs: SelectionInputs, options: MedoidOptions) -> dict[SetKey, Pick]:
    (judge,) = _medoid_judge(options, inputs.config)
    picks = {}
    for q in inputs.questions:
        for s in SOURCES:
            index = medoid_index(inputs.agreement(judge, (q.id, s)))
            picks[(q.id, s)] = Pick(None if index is None else inputs.candidates[q.id][s][index], index)
    return picks


def _entropy_judge(options: SelectionOptions, config: ExperimentConfig) -> tuple[str, ...]:
    return (config.entropy_judge_name,)


def _cluster_threshold(options: SelectionOptions, config: ExperimentConfig) -> dict[str, Any]:
    """The clusters are the entropy judge's decisions: its threshold moves them."""
    spec = next(j for j in config.judges if j.name == config.entropy_judge_name)
    return {"threshold": spec.options.get("threshold")}


def _majority_cluster(inputs: SelectionInputs, options: SelectionOptions) -> dict[SetKey, Pick]:
    name = inputs.config.entropy_judge_name
    judge = inputs.judge(name)
    picks = {}
    for q in inputs.questions:
        for s in SOURCES:
            m = inputs.matrices()[(name, s, q.id)]
            clusters = semantic_clusters(judge.equivalent(m)) if m.shape[0] else []
            index = majority_cluster_index(clusters, inputs.agreement(name, (q.id, s)))
            picks[(q.id, s)] = Pick(None if index is None else inputs.candidates[q.id][s][index], index)
    return picks


def _main(inputs: SelectionInputs, options: SelectionOptions) -> dict[SetKey, Pick]:
    """The main answer a samples file gives (for both sources), no pick where it gives none. `candidate`
    is the set's answer with that very text, so the pick takes its scores; otherwise it is scored alone."""
    picks = {}
    for q in inputs.questions:
        text = inputs.main_answers.get(q.id)
        for s in SOURCES:
            candidates = inputs.candidates[q.id][s]
            at = None if text is None else next((i for i, c in enumerate(candidates) if c == text), None)
            picks[(q.id, s)] = Pick(text, at)
    return picks


def _usc_model(options: UscOptions, config: ExperimentConfig) -> dict[str, Any]:
    return {"generator": generator_slice(config.generator), "seed": config.seed}


def _a2c_calls(options: SelectionOptions, config: ExperimentConfig) -> dict[str, Any]:
    """The calls it counts, and the vote when not the plain one (so a folder made before the setting keeps
    its picks, and another vote re-runs selection alone: the rank choices are the A2C stage's)."""
    vote = config.ask_to_choose.vote
    return {"fresh_paraphrases": len(config.variation.techniques),
            **({} if vote == DEFAULT_VOTE else {"vote": vote})}


SELECTION_METHODS.register("a2c")(SelectionMethod("A2C", SelectionOptions, _a2c, settings=_a2c_calls,
                                                  asks_generator=True))
SELECTION_METHODS.register("usc")(SelectionMethod("USC", UscOptions, _usc, settings=_usc_model,
                                                  asks_generator=True))
SELECTION_METHODS.register("medoid")(SelectionMethod("Medoid", MedoidOptions, _medoid, judges=_medoid_judge))
SELECTION_METHODS.register("majority_cluster")(SelectionMethod(
    "Majority cluster", SelectionOptions, _majority_cluster, judges=_entropy_judge,
    settings=_cluster_threshold))
SELECTION_METHODS.register("main")(SelectionMethod("Main answer", SelectionOptions, _main))
SELECTION_METHODS.register(RANDOM)(SelectionMethod("Random (expected)", SelectionOptions, None))
