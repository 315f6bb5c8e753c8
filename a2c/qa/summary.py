"""The typed summary of a QA run (`summary.json`): dataset means per source and phase, counts, signal.

Written by the metrics stage, read by the report, `a2c report`, `RunResult` and `to_pandas()`: one model,
so no reader re-spells a key. `schema_version` says which a2c wrote it; a summary of an older a2c (no
version) is refused with one line naming the command that recomputes it from the stored outputs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import PurePath
from typing import Final, Literal, TypeVar, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a2c.judges import JUDGES
from a2c.metrics.bootstrap import PairedDifference, defined_pairs, paired_difference_ci
from a2c.metrics.set_metrics import SET_METRICS, mean_defined
from a2c.metrics.signal import Groups, Signal, signal
from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES
from a2c.prompting.paraphrase import CHANGED_MEANING
from a2c.qa.columns import Columns, MetricColumns, SelectionColumns, UncertaintyColumns, optional
from a2c.qa.config import ExperimentConfig
from a2c.qa.correctness.rule import CORRECTNESS_RULES
from a2c.qa.dont_know import share_of_choices, share_of_picks
from a2c.qa.format_following import FormatFollowing, format_following, held
from a2c.qa.measures import measure_label
from a2c.qa.metric_columns import MetricColumn, computed_columns, judge_label
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    METRICS,
    PARAPHRASES,
    PARSE_METHODS,
    PHASES,
    SELECTION_SCORES,
    SOURCES,
    UNCERTAINTY,
    Accuracy,
    AnswerField,
    ChoiceRow,
    ParseMethod,
    Phase,
    Source,
)
from a2c.qa.selection import SELECTION_METHODS
from a2c.qa.vote import DEFAULT_VOTE
from a2c.run.runfiles import RunFileError
from a2c.run.store import Store

# 1: the untyped dict of a2c ≤ 0.1 (no `schema_version` key); 2: typed; 3: selection, paired intervals,
# uncertainty measures in the signal
TRUTHFULQA_RULE: Final = "truthfulqa"  # the default correctness rule
SCHEMA_VERSION: Final = 3
PAIRED_RESAMPLES = 2000  # paired bootstrap over questions: before → after cells and the selection table
PAIRED_LEVEL = 0.95


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Mean(_Model):
    """A dataset mean over the sets where the value is defined, and how many sets had none."""

    mean: float | None
    skipped: int

    @classmethod
    def of(cls, values: Sequence[float | None],
           aggregate: Callable[[Iterable[float | None]], tuple[float | None, int]] = mean_defined) -> Mean:
        """`aggregate`: the metric's own (`SetMetric.aggregate`), the mean over defined values by default."""
        mean, skipped = aggregate(values)
        return cls(mean=mean, skipped=skipped)


class AccuracyMeans(_Model):
    """TruthfulQA's three numbers under one similarity, averaged over the referenced questions."""

    max_true: Mean
    diff: Mean
    acc: Mean


class GroupSummary(_Model):
    """One (source, phase) group: means over its questions."""

    method: Source
    model: str
    phase: Phase
    sets: int
    outputs: int
    cons_lex: Mean
    consistency: dict[str, Mean]  # by judge
    consistency_accurate: dict[str, Mean]
    entropy: dict[str, Mean]
    clusters: dict[str, Mean]
    accuracy: dict[str, AccuracyMeans]  # by similarity
    # after A2C: the don't-know share of choices (`a2c.qa.dont_know`; "don't know" counts as an answer)
    idk_share: float | None = None
    # the computed metrics' aggregates by column key (`a2c.qa.metric_columns`); absent when there are none
    extra: dict[str, Mean] = Field(default_factory=dict, exclude_if=lambda extra: not extra)


class SourceCounts(_Model):
    """The rank prompts of one source: asked, unparsed, "don't know"."""

    rank_prompts: int
    unparsed: int
    idk: int


class Counts(_Model):
    questions: int
    questions_with_references: int
    paraphrases: int | None = None  # None: the run kept no paraphrases file
    paraphrases_failed: int | None = None
    choices: dict[Source, SourceCounts] = {}  # empty without A2C
    parse_methods: dict[ParseMethod, int] = {}
    prompts_cut_to_fit_context: int = 0
    # sets of referenced questions left without accuracy because a grader rule (`llm`) could not read its
    # reply to one of their answers; None (and absent from the file) under a rule that asks no model
    ungraded_sets: int | None = Field(None, exclude_if=lambda n: n is None)
    # under a meaning check only (None and absent otherwise): first draws that changed the meaning, those
    # retried into a passing paraphrase, and paraphrases left failed as "changed meaning"
    paraphrases_first_changed_meaning: int | None = Field(None, exclude_if=lambda n: n is None)
    paraphrases_retried_into_passing: int | None = Field(None, exclude_if=lambda n: n is None)
    paraphrases_changed_meaning: int | None = Field(None, exclude_if=lambda n: n is None)


class Difference(_Model):
    """The mean of a paired difference over questions (after − before, method − comparator) with its
    percentile bootstrap interval (`a2c.metrics.bootstrap.paired_difference_ci`); all None below two
    pairs. `dropped`: questions where a side was undefined."""

    mean: float | None
    low: float | None
    high: float | None
    pairs: int
    dropped: int

    @classmethod
    def of(cls, d: PairedDifference) -> Difference:
        return cls(mean=d.mean_difference, low=d.low, high=d.high, pairs=d.n, dropped=d.dropped)

    @property
    def direction(self) -> Literal["up", "down"] | None:
        """Where the interval lies, when it excludes 0; None when it does not (or is undefined)."""
        if self.low is not None and self.low > 0:
            return "up"
        if self.high is not None and self.high < 0:
            return "down"
        return None


class BeforeAfter(_Model):
    """After − before A2C per question for every cell of the before → after table of one source."""

    source: Source
    accuracy: dict[str, Difference]  # by similarity
    consistency: dict[str, Difference]  # by judge
    entropy: Difference  # of the entropy judge
    cons_lex: Difference
    extra: dict[str, Difference] = Field(default_factory=dict, exclude_if=lambda extra: not extra)


class SelectionSummary(_Model):
    """One selection method on one source: accuracy of its picks, what it cost, how it compares."""

    method: str
    label: str
    source: Source
    questions: int
    picked: int  # questions it picked an answer for
    unparsed: int  # model replies that named no candidate (USC)
    accuracy: dict[str, Mean]  # by similarity, over the referenced questions; skipped = no pick
    # the don't-know share of picks (`a2c.qa.dont_know`); None for a method with no "don't know" option
    dont_know_share: float | None
    calls: int  # model calls it spent, over all questions
    vs_random: dict[str, Difference]  # method − random per similarity (empty for random itself)
    vs_a2c: dict[str, Difference]  # method − a2c (empty for a2c itself, or without a2c)


class SignalKey(_Model):
    """Which signal a row holds: one consistency metric for one source and phase. `level`: every answer
    carries its set's score ("set"), or its own (per-answer confidences, "answer")."""

    metric: str
    source: Source
    phase: Phase
    level: Literal["set", "answer"] = "set"


class SignalRow(Signal, SignalKey):
    """AUROC/PRR of one signal (`a2c.metrics.signal.Signal`) under its key; the key's fields come first in
    `summary.json` (pydantic lays out the fields of the last base first)."""


class QASummary(_Model):
    """What `summary.json` holds for a QA run."""

    schema_version: Literal[3] = SCHEMA_VERSION
    name: str
    model: str
    judges: list[str]
    similarities: list[str]
    entropy_judge: str
    groups: list[GroupSummary]
    counts: Counts
    signal: list[SignalRow]
    before_after: list[BeforeAfter]
    selection: list[SelectionSummary]
    seed: int  # of every bootstrap
    format_following: dict[Source, FormatFollowing] = {}  # of the rank replies; empty without A2C
    paired_resamples: int = PAIRED_RESAMPLES
    # how accuracy was decided and how A2C asked: written only where not the defaults (TruthfulQA's
    # protocol; the paper's fixed option order and plain vote), so the paper's summaries stay as they were
    accuracy_rule: str = Field(TRUTHFULQA_RULE, exclude_if=lambda v: v == TRUTHFULQA_RULE)
    option_order: str = Field("fixed", exclude_if=lambda v: v == "fixed")
    vote: str = Field(DEFAULT_VOTE, exclude_if=lambda v: v == DEFAULT_VOTE)

    def group(self, method: Source, phase: Phase) -> GroupSummary | None:
        return next((g for g in self.groups if g.method == method and g.phase == phase), None)

    def change(self, source: Source) -> BeforeAfter | None:
        return next((c for c in self.before_after if c.source == source), None)

    @property
    def referenced(self) -> int:
        """How many questions have references."""
        return self.counts.questions_with_references

    def computed_columns(self) -> list[MetricColumn]:
        """The computed metrics' columns this summary holds (a metric registered after the run is not)."""
        held = {key for g in self.groups for key in g.extra}
        return [c for c in computed_columns(self.judges) if c.key in held]


class OldSummaryError(RunFileError):
    """A summary.json this a2c cannot read: written by an older a2c, or damaged."""


def read_summary(store: Store, file: str, hint: str) -> QASummary:
    """The run's typed summary; an older or damaged one is refused with `hint` (how to recompute it)."""
    data = store.read_json(file)
    if isinstance(data, dict) and "schema_version" not in data:
        raise OldSummaryError(f"{store.where(file)} was written by an older a2c (no schema_version)",
                              hint=hint)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version < SCHEMA_VERSION:
        raise OldSummaryError(f"{store.where(file)} was written by an older a2c (summary schema {version}, "
                              f"this a2c reads {SCHEMA_VERSION})", hint=hint)
    try:
        return QASummary.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise OldSummaryError(f"{store.where(file)}: not a QA summary ({where}: {first['msg']})",
                              hint=hint) from None


def summarize_metrics(store: Store, config: ExperimentConfig, prompts_cut: int = 0) -> QASummary:
    """Dataset means per (source, phase) from `metrics.jsonl`, the counts and the signal of every metric;
    the rows are read into columns as they stream by (`a2c.qa.columns`), never held as row objects."""
    metrics = MetricColumns.read(store.iter_rows(METRICS))
    judges = [j.name for j in config.judges]
    extra = computed_columns(judges)
    sims = config.accuracy.columns
    entropy_judge = config.entropy_judge_name
    # a samples run's answers are the file's: the generator, if any, only chose among them
    model = config.generator.model if config.dataset.name != "samples" \
        else f"the answers of {PurePath(config.dataset.path or '').name}"
    has_choices = store.exists(CHOICES.name)
    per_source, parse_methods, follow = _read_choices(store, metrics.ids, config.variation.answer_field) \
        if has_choices else ({}, {}, {})
    groups: list[GroupSummary] = []
    for source in SOURCES:
        for phase in PHASES:
            part = metrics.where(source, phase)
            if not len(part):
                continue
            idk_share = None
            if phase == "after" and source in per_source:
                counted = per_source[source]
                idk_share = share_of_choices(counted.rank_prompts, counted.unparsed, counted.idk)
            referenced = part[metrics.referenced[part]]
            answered = metrics.n[part] > 0

            def mean(values: np.ndarray, rows: np.ndarray = part) -> Mean:
                return Mean.of(optional(values[rows]))

            groups.append(GroupSummary(
                method=source, model=model, phase=phase, sets=len(part), outputs=int(metrics.n[part].sum()),
                cons_lex=mean(metrics.cons_lex),
                consistency={j: mean(metrics.judge("cons_sem", j)) for j in judges},
                consistency_accurate={j: mean(metrics.judge("cons_sem_accurate", j)) for j in judges},
                entropy={j: mean(metrics.judge("entropy", j)) for j in judges},
                clusters={j: Mean.of(optional(np.where(answered, metrics.judge("clusters", j)[part],
                                                       math.nan))) for j in judges},
                extra={c.key: Mean.of(optional(metrics.extra(c.key)[part]), c.metric.aggregate)
                       for c in extra},
                # over the questions with references only: the others have no accuracy, not a zero one
                accuracy={s: AccuracyMeans(**{k: mean(metrics.accuracy(s, k), referenced)
                                              for k in Accuracy.model_fields}) for s in sims},
                idk_share=idk_share))
    counts = Counts(questions=len(metrics.ids),
                    questions_with_references=len(np.unique(metrics.question[metrics.referenced])),
                    choices=per_source, parse_methods=parse_methods,
                    prompts_cut_to_fit_context=prompts_cut)
    if CORRECTNESS_RULES.get(config.accuracy.rule.name).takes_run_generator:
        ungraded = sum(1 for r in store.iter_rows(METRICS) if r.n_accurate is None and r.accuracy)
        counts = counts.model_copy(update={"ungraded_sets": ungraded})
    if store.exists(PARAPHRASES.name):
        made = failed = 0
        meaning = [0, 0, 0]
        for p in store.iter_rows(PARAPHRASES):
            made += len(p.paraphrases)
            failed += sum(not x.ok for x in p.paraphrases)
            for x in p.paraphrases:
                first = x.first_problem == CHANGED_MEANING
                meaning[0] += first
                meaning[1] += first and x.ok
                meaning[2] += x.problem == CHANGED_MEANING
        update: dict[str, int] = {"paraphrases": made, "paraphrases_failed": failed}
        if config.variation.meaning_check is not None:
            update |= dict(zip(("paraphrases_first_changed_meaning", "paraphrases_retried_into_passing",
                                "paraphrases_changed_meaning"), meaning, strict=True))
        counts = counts.model_copy(update=update)
    uncertainty = UncertaintyColumns.read(store.iter_rows(UNCERTAINTY)) if store.exists(UNCERTAINTY.name) \
        else None
    signal_rows = [SignalRow(metric=name, source=source, phase=phase, level=level, **dict(result))
                   for (name, source, phase, level), result in
                   consistency_signal(metrics, judges, entropy_judge, uncertainty, seed=config.seed,
                                      extra=extra).items()]
    paired = _PairedBatch(config.seed)  # the before → after cells' and the selection table's, together
    before_after = _ask_before_after(paired, metrics, judges, sims, entropy_judge, extra)
    del metrics, uncertainty
    scores = SelectionColumns.read(store.iter_rows(SELECTION_SCORES) if store.exists(SELECTION_SCORES.name)
                                   else ())
    labels = {name: SELECTION_METHODS.get(name).label for name in scores.methods if name in SELECTION_METHODS}
    selection = _ask_selection(paired, scores, sims, labels)
    differences = paired.run()
    return QASummary(name=config.name, model=model, judges=judges, similarities=sims,
                     entropy_judge=entropy_judge, groups=groups, counts=counts, signal=signal_rows,
                     before_after=before_after(differences), selection=selection(differences),
                     seed=config.seed, format_following=follow, accuracy_rule=config.accuracy.rule.name,
                     **({"option_order": config.ask_to_choose.option_order, "vote": config.ask_to_choose.vote}
                        if config.ask_to_choose.enabled else {}))


def _read_choices(store: Store, questions: list[str], answer_field: AnswerField) -> tuple[
        dict[Source, SourceCounts], dict[ParseMethod, int], dict[Source, FormatFollowing]]:
    """The rank replies counted (per source; how each was parsed) and their format-following, in one pass
    over the choices; the candidates the rank prompts showed are read with them, a batch of questions at a
    time (none: the replies are still counted)."""
    counts = _ChoiceCounts()
    replies = counts.passing(store.iter_rows(CHOICES))
    if store.exists(GENERATIONS.name):
        with store.item_rows(GENERATIONS, questions) as generations:
            follow = format_following(replies, generations.rows, answer_field)
    else:
        follow = format_following(replies, held(()), answer_field)
    return *counts.result(), follow  # counted once the replies have passed


class _ChoiceCounts:
    """Rank prompts, unparsed and "don't know" replies per source, and how each reply was parsed, counted as
    the replies pass by on their way to another reader."""

    def __init__(self) -> None:
        self._per_source: dict[Source, list[int]] = {source: [0, 0, 0] for source in SOURCES}
        self._methods = dict.fromkeys(PARSE_METHODS, 0)

    def passing(self, choices: Iterable[ChoiceRow]) -> Iterator[ChoiceRow]:
        for c in choices:
            counted = self._per_source[c.source]
            counted[0] += 1
            counted[1] += not c.parsed
            counted[2] += c.dont_know
            if c.method in self._methods:
                self._methods[c.method] += 1
            yield c

    def result(self) -> tuple[dict[Source, SourceCounts], dict[ParseMethod, int]]:
        return ({source: SourceCounts(rank_prompts=n, unparsed=unparsed, idk=idk)
                 for source, (n, unparsed, idk) in self._per_source.items()}, dict(self._methods))


# -- paired intervals over questions ----------------------------------------------------------------------

def paired(before: Sequence[float | None], after: Sequence[float | None], seed: int) -> Difference:
    """after − before over the paired questions, with the summary's bootstrap settings."""
    return Difference.of(paired_difference_ci(before, after, resamples=PAIRED_RESAMPLES, seed=seed,
                                              level=PAIRED_LEVEL))


Paired = Sequence[float | None] | np.ndarray  # one side of a paired difference: None or NaN is undefined
T = TypeVar("T")
Finish = Callable[[list[Difference]], list[T]]  # builds a table once its batch's differences are computed


class _PairedBatch:
    """Paired differences asked for one by one and computed together, those that resample the same
    number of pairs one after another. They all use the summary's seed, so those draw the same resamples,
    which `a2c.metrics.bootstrap` keeps for the last few sizes only. In the order the tables list them
    the sizes alternate; at 100,000 questions one draw is about 200 MB, so a size would be drawn again
    whenever two others came between. A summary asks its before → after cells and its selection table
    in one batch: apart, the sizes the two share were drawn twice. The values do not depend on the order
    they are computed in."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._asked: list[tuple[Paired, Paired]] = []

    def ask(self, before: Paired, after: Paired) -> int:
        """Where the difference will be in `run`'s list."""
        self._asked.append((before, after))
        return len(self._asked) - 1

    def run(self) -> list[Difference]:
        sizes = [defined_pairs(before, after) for before, after in self._asked]
        done: dict[int, Difference] = {}
        for k in sorted(range(len(self._asked)), key=sizes.__getitem__):
            before, after = self._asked[k]
            done[k] = paired(before.tolist() if isinstance(before, np.ndarray) else before,
                             after.tolist() if isinstance(after, np.ndarray) else after, self._seed)
        return [done[k] for k in range(len(done))]


def _last_row(columns: Columns, rows: np.ndarray) -> dict[int, int]:
    """Question → its last row among `rows`, questions in the order first seen (as a dict comprehension
    over the rows keeps them)."""
    return dict(zip(columns.question[rows].tolist(), rows.tolist(), strict=True))


def before_after_changes(metrics: MetricColumns, judges: Sequence[str], similarities: Sequence[str],
                         entropy_judge: str, *, seed: int = 0, extra: Sequence[MetricColumn] = ()
                         ) -> list[BeforeAfter]:
    """Every before → after cell's change as a paired difference over the questions that have both
    phases (a set undefined in either phase drops that question from that cell)."""
    batch = _PairedBatch(seed)
    return _ask_before_after(batch, metrics, judges, similarities, entropy_judge, extra)(batch.run())


def _ask_before_after(batch: _PairedBatch, metrics: MetricColumns, judges: Sequence[str],
                      similarities: Sequence[str], entropy_judge: str, extra: Sequence[MetricColumn]
                      ) -> Finish[BeforeAfter]:
    """`before_after_changes`, its differences asked of `batch`."""
    asked = []
    for source in SOURCES:
        before = _last_row(metrics, metrics.where(source, "before"))
        after = _last_row(metrics, metrics.where(source, "after"))
        pairs = np.array([(b, after[q]) for q, b in before.items() if q in after], dtype=np.int64)
        if not len(pairs):
            continue

        def change(values: np.ndarray, pairs: np.ndarray = pairs) -> int:
            return batch.ask(values[pairs[:, 0]], values[pairs[:, 1]])

        asked.append((source, {s: change(metrics.accuracy(s)) for s in similarities},
                      {j: change(metrics.judge("cons_sem", j)) for j in judges},
                      change(metrics.judge("entropy", entropy_judge)), change(metrics.cons_lex),
                      {c.key: change(metrics.extra(c.key)) for c in extra}))
    return lambda done: [
        BeforeAfter(source=source, accuracy={s: done[k] for s, k in accuracy.items()},
                    consistency={j: done[k] for j, k in consistency.items()}, entropy=done[entropy],
                    cons_lex=done[cons_lex], extra={key: done[k] for key, k in computed.items()})
        for source, accuracy, consistency, entropy, cons_lex, computed in asked]


def summarize_selection(scores: SelectionColumns, similarities: Sequence[str],
                        labels: Mapping[str, str], *, seed: int = 0) -> list[SelectionSummary]:
    """Per source and method (in the order the rows list them): mean accuracy of the picks, don't-know
    share, calls, and the paired differences to `random` and `a2c` over the referenced questions."""
    batch = _PairedBatch(seed)
    return _ask_selection(batch, scores, similarities, labels)(batch.run())


def _ask_selection(batch: _PairedBatch, scores: SelectionColumns, similarities: Sequence[str],
                   labels: Mapping[str, str]) -> Finish[SelectionSummary]:
    """`summarize_selection`, its differences asked of `batch`."""
    methods = scores.methods
    asked: list[tuple[SelectionSummary, dict[str, dict[str, int]]]] = []  # the comparisons filled in last
    for source in SOURCES:
        mine = scores.where(source)
        by_method = {m: _last_row(scores, mine[scores.method[mine] == k]) for k, m in enumerate(methods)}
        referenced = list(_last_row(scores, mine[scores.referenced[mine]]))
        accs: dict[tuple[str, str], list[float | None]] = {}
        for sim in similarities:
            values = scores.accuracy(sim).tolist()
            for m in methods:
                accs[(m, sim)] = [None if (k := by_method[m].get(i)) is None or math.isnan(values[k])
                                  else values[k] for i in referenced]
        for method in methods:
            rows = np.array(list(by_method[method].values()), dtype=np.int64)
            if not len(rows):
                continue
            picks = rows[scores.picked[rows]]
            can_say_idk = bool((scores.dont_know[picks] >= 0).all())
            versus = {other: {s: batch.ask(accs[(other, s)], accs[(method, s)]) for s in similarities}
                      for other in ("random", "a2c") if other != method and by_method.get(other)}
            asked.append((SelectionSummary(
                method=method, label=labels.get(method, method), source=source, questions=len(rows),
                picked=len(picks), unparsed=int(scores.unparsed[rows].sum()),
                accuracy={sim: Mean.of(accs[(method, sim)]) for sim in similarities},
                dont_know_share=share_of_picks((scores.dont_know[picks] == 1).tolist()) if can_say_idk
                else None,
                calls=int(scores.calls[rows].sum()), vs_random={}, vs_a2c={}), versus))
    return lambda done: [
        summary.model_copy(update={f"vs_{other}": {s: done[k] for s, k in versus.get(other, {}).items()}
                                   for other in ("random", "a2c")})
        for summary, versus in asked]


# -- consistency as a signal of correctness ---------------------------------------------------------------

def _judge_sign(judge: str) -> float:
    """+1 where a higher score means more consistent, −1 for judges like `contra` (so every score ranks
    answers the same way round: higher = more confident)."""
    return 1.0 if judge not in JUDGES or JUDGES.get(judge).higher_is_consistent else -1.0


def signal_scores(metrics: MetricColumns, judges: Sequence[str], entropy_judge: str,
                  extra: Sequence[MetricColumn] = ()) -> dict[str, np.ndarray]:
    """Per set, every consistency metric as a confidence (higher = more consistent; NaN: undefined),
    oriented and named by its registry entry: Cons_sem per judge, the negated clustering entropy, Cons_lex,
    then every computed metric that asks to be ranked."""
    cons_sem, entropy, cons_lex = (SET_METRICS.get(name) for name in ("cons_sem", "entropy", "cons_lex"))
    columns: dict[str, np.ndarray] = {}
    for j in judges:
        columns[f"{judge_label(j)} {cons_sem.label}"] = _judge_sign(j) * metrics.judge("cons_sem", j)
    columns[f"{entropy.signed_label} ({judge_label(entropy_judge)})"] = entropy.as_confidences(
        metrics.judge("entropy", entropy_judge))
    columns[cons_lex.signed_label] = cons_lex.as_confidences(metrics.cons_lex)
    for c in extra:
        if c.metric.signal:
            columns[c.signed_label] = c.metric.as_confidences(metrics.extra(c.key))
    return columns


def graph_label(graph: str) -> str:
    """A judge's label, or for KLE's NLI graph (`entail+contra`) the labels of both."""
    return "+".join(judge_label(j) for j in graph.split("+"))


def _confidence(measure: str, values: np.ndarray) -> np.ndarray:
    """A measure's values oriented so that higher = more confident."""
    return cast(np.ndarray, UNCERTAINTY_MEASURES.get(measure).as_confidence(values))


def uncertainty_name(measure: str, graph: str) -> str:
    """What the signal table calls a per-set measure of a judge (or graph) as a confidence: `-U_Deg (...)`."""
    sign = "-" if UNCERTAINTY_MEASURES.get(measure).kind == "uncertainty" else ""
    return f"{sign}{measure_label(measure)} ({graph_label(graph)})"


def uncertainty_scores(uncertainty: UncertaintyColumns) -> dict[str, np.ndarray]:
    """Per set, every per-set uncertainty measure of every judge as a confidence (uncertainties negated)."""
    return {uncertainty_name(measure, graph): _confidence(measure, uncertainty.sets[(measure, graph)])
            for measure, graph in uncertainty.measures()}


Key = tuple[str, Source, Phase]
Level = Literal["set", "answer"]  # a signal over sets (a set's score for its answers) or over answers


def _where_rank(key: Key) -> int:
    """A key's (source, phase) in the order the signal generators go through them."""
    return SOURCES.index(key[1]) * len(PHASES) + PHASES.index(key[2])


def _grouped(columns: Mapping[str, np.ndarray], rows: Columns, answers: np.ndarray, accurate: np.ndarray
             ) -> Iterator[tuple[Key, Groups]]:
    """(metric, source, phase) and the referenced sets (`accurate` ≥ 0) with a defined score, as `Groups`;
    a key for every source and phase with referenced sets, even when no score is defined. Yielded one at a
    time, so no more than one metric's groups are alive (a 100,000-question run has hundreds of them);
    source and phase outermost, so the metrics that resample the same sets come one after another."""
    for source in SOURCES:
        for phase in PHASES:
            mine = rows.where(source, phase)
            mine = mine[accurate[mine] >= 0]
            if not len(mine):
                continue
            for name, values in columns.items():
                kept = mine[~np.isnan(values[mine])]
                yield (name, source, phase), Groups.of(values[kept], answers[kept], accurate[kept])


def signal_groups(metrics: MetricColumns, judges: Sequence[str], entropy_judge: str,
                  uncertainty: UncertaintyColumns | None = None, extra: Sequence[MetricColumn] = ()
                  ) -> Iterator[tuple[Key, Groups]]:
    """(metric, source, phase) and the sets with references and a defined score, as `Groups` for
    `a2c.metrics.signal`: every answer of a set carries the set's score, its accuracy is the target.
    Cons_sem, entropy and Cons_lex from `metrics.jsonl`, the per-set uncertainty measures from
    `uncertainty.jsonl`; one (source, phase) after another, each with all its metrics."""
    per_set = _grouped(signal_scores(metrics, judges, entropy_judge, extra), metrics, metrics.n,
                       metrics.n_accurate)
    if uncertainty is None:
        yield from per_set
        return
    yield from heapq.merge(per_set, _grouped(uncertainty_scores(uncertainty), uncertainty,
                                             uncertainty.answers_n, uncertainty.accurate_n),
                           key=lambda item: _where_rank(item[0]))


def answer_groups(uncertainty: UncertaintyColumns | None) -> Iterator[tuple[Key, tuple[Groups, np.ndarray]]]:
    """(metric, source, phase) and every answer with its own confidence (degree, eccentricity) and
    accuracy, as one-answer `Groups`, with the index of its set (so intervals resample questions, not
    answers); one key at a time."""
    if uncertainty is None:
        return
    for source in SOURCES:
        for phase in PHASES:
            mine = uncertainty.where(source, phase)
            mine = mine[uncertainty.accurate_n[mine] >= 0]
            if not len(mine):
                continue
            for (measure, graph), (values, owners) in uncertainty.answers.items():
                kept = np.isin(owners, mine)
                with_values = np.unique(owners[kept])
                labels = uncertainty.accurate[np.isin(uncertainty.accurate_rows, with_values)]
                # an uncertainty (the white-box ones) is negated into a confidence, and named so: `-MSP`
                sign = "-" if measure in UNCERTAINTY_MEASURES \
                    and UNCERTAINTY_MEASURES.get(measure).kind == "uncertainty" else ""
                yield ((f"{sign}{measure_label(measure)} ({graph_label(graph)}, per answer)", source, phase),
                       (Groups.per_answer(_confidence(measure, values[kept]), labels), owners[kept]))


def consistency_signal(metrics: MetricColumns, judges: Sequence[str], entropy_judge: str,
                       uncertainty: UncertaintyColumns | None = None, *, seed: int = 0,
                       extra: Sequence[MetricColumn] = ()
                       ) -> dict[tuple[str, Source, Phase, Level], Signal]:
    """AUROC and PRR (with seeded bootstrap intervals) of every metric, source and phase, set-level and
    (for per-answer confidences) answer-level; empty without references. Listed metric by metric, but
    computed one (source, phase) after another: the intervals of one (source, phase) resample the same
    sets, and `a2c.metrics.bootstrap` keeps the draws of the last few sizes only. Metric by metric, a run
    whose (source, phase) sizes pass that budget together (from about 103,000 questions of the paper's
    protocol) drew every size again for every metric; this way each is drawn once."""
    Job = tuple[Key, Level, Groups, np.ndarray | None]  # with the set of each answer, for answer-level
    per_set: Iterator[Job] = ((key, "set", g, None)
                              for key, g in signal_groups(metrics, judges, entropy_judge, uncertainty, extra))
    per_answer: Iterator[Job] = ((key, "answer", g, sets) for key, (g, sets) in answer_groups(uncertainty))
    out: dict[tuple[str, Source, Phase, Level], Signal] = {}
    for key, level, g, sets in heapq.merge(per_set, per_answer, key=lambda item: _where_rank(item[0])):
        out[(*key, level)] = signal(g, seed=seed, clusters=sets)
    first_seen: dict[tuple[str, str], int] = {}
    for name, _, _, level in out:
        first_seen.setdefault((level, name), len(first_seen))

    def listed(key: tuple[str, Source, Phase, Level]) -> tuple[bool, int, int]:
        name, source, phase, level = key
        return level == "answer", first_seen[(level, name)], _where_rank((name, source, phase))

    return {key: out[key] for key in sorted(out, key=listed)}
