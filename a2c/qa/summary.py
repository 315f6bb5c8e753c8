"""The typed summary of a QA run (`summary.json`): dataset means per source and phase, counts, signal.

Written by the metrics stage, read by the report, `a2c report`, `RunResult` and `to_pandas()`: one model,
so no reader re-spells a key. `schema_version` says which a2c wrote it; a summary of an older a2c (no
version) is refused with one line naming the command that recomputes it from the stored outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Final, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a2c.judges import JUDGES
from a2c.metrics.bootstrap import PairedDifference, paired_difference_ci
from a2c.metrics.set_metrics import SET_METRICS, mean_defined
from a2c.metrics.signal import Groups, Signal, signal
from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES
from a2c.qa.config import ExperimentConfig
from a2c.qa.format_following import FormatFollowing, format_following
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
    ChoiceRow,
    MetricRow,
    ParseMethod,
    Phase,
    SelectionScoreRow,
    Source,
    UncertaintyRow,
)
from a2c.qa.selection import SELECTION_METHODS
from a2c.runfiles import RunFileError
from a2c.store import Store

# 1: the untyped dict of a2c ≤ 0.1 (no `schema_version` key); 2: typed; 3: selection, paired intervals,
# uncertainty measures in the signal
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
    # after A2C: the share of parsed choices that took the "don't know" option (it counts as an answer)
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
    dont_know_share: float | None  # of its picks; None for a method with no "don't know" option
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
    """Dataset means per (source, phase) from `metrics.jsonl`, the counts and the signal of every metric."""
    rows = store.read_rows(METRICS)
    judges = [j.name for j in config.judges]
    extra = computed_columns(judges)
    sims = [spec.name for spec in config.accuracy.similarities]
    entropy_judge = config.entropy_judge_name
    model = config.generator.model
    has_choices = store.exists(CHOICES.name)
    per_source, parse_methods = _choice_counts(store.iter_rows(CHOICES)) if has_choices else ({}, {})
    groups: list[GroupSummary] = []
    for source in SOURCES:
        for phase in PHASES:
            part = [r for r in rows if r.source == source and r.phase == phase]
            if not part:
                continue
            idk_share = None
            if phase == "after" and source in per_source:
                counted = per_source[source]
                parsed = counted.rank_prompts - counted.unparsed
                idk_share = counted.idk / parsed if parsed else None
            referenced = [r for r in part if r.referenced]
            groups.append(GroupSummary(
                extra={c.key: Mean.of([r.extra.get(c.key) for r in part], c.metric.aggregate) for c in extra},
                method=source, model=model, phase=phase, sets=len(part), outputs=sum(r.n for r in part),
                cons_lex=Mean.of([r.cons_lex for r in part]),
                consistency={j: Mean.of([r.judges[j].cons_sem for r in part]) for j in judges},
                consistency_accurate={j: Mean.of([r.judges[j].cons_sem_accurate for r in part])
                                      for j in judges},
                entropy={j: Mean.of([r.judges[j].entropy for r in part]) for j in judges},
                clusters={j: Mean.of([r.judges[j].clusters if r.n else None for r in part]) for j in judges},
                # over the questions with references only: the others have no accuracy, not a zero one
                accuracy={s: AccuracyMeans(**{k: Mean.of([getattr(a, k) if (a := r.accuracy.get(s)) else None
                                                          for r in referenced])
                                              for k in Accuracy.model_fields}) for s in sims},
                idk_share=idk_share))
    counts = Counts(questions=len({r.id for r in rows}),
                    questions_with_references=len({r.id for r in rows if r.referenced}),
                    choices=per_source, parse_methods=parse_methods,
                    prompts_cut_to_fit_context=prompts_cut)
    if store.exists(PARAPHRASES.name):
        made = failed = 0
        for p in store.iter_rows(PARAPHRASES):
            made += len(p.paraphrases)
            failed += sum(not x.ok for x in p.paraphrases)
        counts = counts.model_copy(update={"paraphrases": made, "paraphrases_failed": failed})
    uncertainty = store.read_rows(UNCERTAINTY) if store.exists(UNCERTAINTY.name) else []
    signal_rows = [SignalRow(metric=name, source=source, phase=phase, level=level, **dict(result))
                   for (name, source, phase, level), result in
                   consistency_signal(rows, judges, entropy_judge, uncertainty, seed=config.seed,
                                      extra=extra).items()]
    scores = store.read_rows(SELECTION_SCORES) if store.exists(SELECTION_SCORES.name) else []
    # the candidates the rank prompts showed, for their position bias (none: replies are still counted)
    generations = store.iter_rows(GENERATIONS) if store.exists(GENERATIONS.name) else iter(())
    labels = {name: SELECTION_METHODS.get(name).label for name in {r.method for r in scores}
              if name in SELECTION_METHODS}
    return QASummary(name=config.name, model=model, judges=judges, similarities=sims,
                     entropy_judge=entropy_judge, groups=groups, counts=counts, signal=signal_rows,
                     before_after=before_after_changes(rows, judges, sims, entropy_judge, seed=config.seed,
                                                       extra=extra),
                     selection=summarize_selection(scores, sims, labels, seed=config.seed), seed=config.seed,
                     format_following=format_following(store.iter_rows(CHOICES), generations,
                                                       config.variation.answer_field)
                     if has_choices else {})


def _choice_counts(choices: Iterable[ChoiceRow]) -> tuple[dict[Source, SourceCounts], dict[ParseMethod, int]]:
    """Rank prompts, unparsed and "don't know" replies per source, and how each reply was parsed, counted
    in one pass over the choices."""
    per_source: dict[Source, list[int]] = {source: [0, 0, 0] for source in SOURCES}
    methods = dict.fromkeys(PARSE_METHODS, 0)
    for c in choices:
        counted = per_source[c.source]
        counted[0] += 1
        counted[1] += not c.parsed
        counted[2] += c.dont_know
        if c.method in methods:
            methods[c.method] += 1
    return ({source: SourceCounts(rank_prompts=n, unparsed=unparsed, idk=idk)
             for source, (n, unparsed, idk) in per_source.items()}, methods)


# -- paired intervals over questions ----------------------------------------------------------------------

def paired(before: Sequence[float | None], after: Sequence[float | None], seed: int) -> Difference:
    """after − before over the paired questions, with the summary's bootstrap settings."""
    return Difference.of(paired_difference_ci(before, after, resamples=PAIRED_RESAMPLES, seed=seed,
                                              level=PAIRED_LEVEL))


def _acc(accuracy: Accuracy | None) -> float | None:
    return None if accuracy is None else accuracy.acc


def _accuracy_of(similarity: str, row: MetricRow) -> float | None:
    return _acc(row.accuracy.get(similarity))


def _cons_sem_of(judge: str, row: MetricRow) -> float | None:
    return row.judges[judge].cons_sem


def _entropy_of(judge: str, row: MetricRow) -> float | None:
    return row.judges[judge].entropy


def _cons_lex_of(row: MetricRow) -> float | None:
    return row.cons_lex


def _extra_of(key: str, row: MetricRow) -> float | None:
    return row.extra.get(key)


def before_after_changes(rows: Sequence[MetricRow], judges: Sequence[str], similarities: Sequence[str],
                         entropy_judge: str, *, seed: int = 0, extra: Sequence[MetricColumn] = ()
                         ) -> list[BeforeAfter]:
    """Every before → after cell's change as a paired difference over the questions that have both
    phases (a set undefined in either phase drops that question from that cell)."""
    out = []
    for source in SOURCES:
        before = {r.id: r for r in rows if r.source == source and r.phase == "before"}
        after = {r.id: r for r in rows if r.source == source and r.phase == "after"}
        pairs = [(before[i], after[i]) for i in before if i in after]
        if not pairs:
            continue

        def change(get: Callable[[MetricRow], float | None],
                   pairs: list[tuple[MetricRow, MetricRow]] = pairs) -> Difference:
            return paired([get(b) for b, _ in pairs], [get(a) for _, a in pairs], seed)

        out.append(BeforeAfter(
            source=source,
            accuracy={s: change(partial(_accuracy_of, s)) for s in similarities},
            consistency={j: change(partial(_cons_sem_of, j)) for j in judges},
            entropy=change(partial(_entropy_of, entropy_judge)), cons_lex=change(_cons_lex_of),
            extra={c.key: change(partial(_extra_of, c.key)) for c in extra}))
    return out


def summarize_selection(scores: Sequence[SelectionScoreRow], similarities: Sequence[str],
                        labels: Mapping[str, str], *, seed: int = 0) -> list[SelectionSummary]:
    """Per source and method (in the order the rows list them): mean accuracy of the picks, don't-know
    share, calls, and the paired differences to `random` and `a2c` over the referenced questions."""
    methods = list(dict.fromkeys(r.method for r in scores))
    out = []
    for source in SOURCES:
        mine = [r for r in scores if r.source == source]
        by_method = {m: {r.id: r for r in mine if r.method == m} for m in methods}
        referenced = list(dict.fromkeys(r.id for r in mine if r.referenced))
        accs = {(m, sim): [_acc(r.accuracy.get(sim)) if (r := by_method[m].get(i)) else None
                           for i in referenced]
                for m in methods for sim in similarities}
        for method in methods:
            rows = list(by_method[method].values())
            if not rows:
                continue
            picks = [r for r in rows if r.picked]
            can_say_idk = all(r.dont_know is not None for r in picks)
            versus = {other: {s: paired(accs[(other, s)], accs[(method, s)], seed) for s in similarities}
                      for other in ("random", "a2c") if other != method and by_method.get(other)}
            out.append(SelectionSummary(
                method=method, label=labels.get(method, method), source=source, questions=len(rows),
                picked=len(picks), unparsed=sum(r.unparsed for r in rows),
                accuracy={sim: Mean.of(accs[(method, sim)]) for sim in similarities},
                dont_know_share=sum(bool(r.dont_know) for r in picks) / len(picks) if picks and can_say_idk
                else None,
                calls=sum(r.calls for r in rows), vs_random=versus.get("random", {}),
                vs_a2c=versus.get("a2c", {})))
    return out


# -- consistency as a signal of correctness ---------------------------------------------------------------

def _judge_sign(judge: str) -> float:
    """+1 where a higher score means more consistent, −1 for judges like `contra` (so every score ranks
    answers the same way round: higher = more confident)."""
    return 1.0 if judge not in JUDGES or JUDGES.get(judge).higher_is_consistent else -1.0


def signal_scores(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str,
                  extra: Sequence[MetricColumn] = ()) -> dict[str, list[float | None]]:
    """Per set, every consistency metric as a confidence (higher = more consistent), oriented and named
    by its registry entry: Cons_sem per judge, the negated clustering entropy, Cons_lex, then every
    computed metric that asks to be ranked."""
    cons_sem, entropy, cons_lex = (SET_METRICS.get(name) for name in ("cons_sem", "entropy", "cons_lex"))
    columns: dict[str, list[float | None]] = {}
    for j in judges:
        sign = _judge_sign(j)
        columns[f"{judge_label(j)} {cons_sem.label}"] = [
            None if (v := r.judges[j].cons_sem) is None else sign * v for r in rows]
    columns[f"{entropy.signed_label} ({judge_label(entropy_judge)})"] = [
        entropy.as_confidence(r.judges[entropy_judge].entropy) for r in rows]
    columns[cons_lex.signed_label] = [cons_lex.as_confidence(r.cons_lex) for r in rows]
    for c in extra:
        if c.metric.signal:
            columns[c.signed_label] = [c.metric.as_confidence(r.extra.get(c.key)) for r in rows]
    return columns


def graph_label(graph: str) -> str:
    """A judge's label, or for KLE's NLI graph (`entail+contra`) the labels of both."""
    return "+".join(judge_label(j) for j in graph.split("+"))


def _confidence(measure: str, value: float) -> float:
    """A measure's value oriented so that higher = more confident."""
    return cast(float, UNCERTAINTY_MEASURES.get(measure).as_confidence(value))


def uncertainty_name(measure: str, graph: str) -> str:
    """What the signal table calls a per-set measure of a judge (or graph) as a confidence: `-U_Deg (...)`."""
    sign = "-" if UNCERTAINTY_MEASURES.get(measure).kind == "uncertainty" else ""
    return f"{sign}{measure_label(measure)} ({graph_label(graph)})"


def uncertainty_keys(rows: Sequence[UncertaintyRow]) -> list[tuple[str, str]]:
    """The (measure, judge or graph) pairs the rows hold per set, in the order they first appear."""
    return list(dict.fromkeys((m, g) for r in rows for m, values in r.sets.items() for g in values))


def uncertainty_scores(rows: Sequence[UncertaintyRow]) -> dict[str, list[float | None]]:
    """Per set, every per-set uncertainty measure of every judge as a confidence (uncertainties negated)."""
    columns: dict[str, list[float | None]] = {}
    for measure, graph in uncertainty_keys(rows):
        columns[uncertainty_name(measure, graph)] = [
            None if (v := r.sets.get(measure, {}).get(graph)) is None else _confidence(measure, v)
            for r in rows]
    return columns


Key = tuple[str, Source, Phase]
SetInfo = tuple[Source, Phase, int, int | None]  # source, phase, answers, accurate answers (None: no refs)


def _grouped(columns: Mapping[str, Sequence[float | None]], sets: Sequence[SetInfo]) -> dict[Key, Groups]:
    """(metric, source, phase) → the referenced sets with a defined score, as `Groups`; a key for every
    source and phase with referenced sets, even when no score is defined."""
    out: dict[Key, Groups] = {}
    for name, values in columns.items():
        for source in SOURCES:
            for phase in PHASES:
                mine = [(v, n, a) for v, (s, p, n, a) in zip(values, sets, strict=True)
                        if s == source and p == phase and a is not None]
                if mine:
                    kept = [(v, n, a) for v, n, a in mine if v is not None]
                    out[(name, source, phase)] = Groups.of([v for v, _, _ in kept], [n for _, n, _ in kept],
                                                           [a for _, _, a in kept])
    return out


def _set_info(row: UncertaintyRow) -> SetInfo:
    accurate = row.accurate
    return (row.source, row.phase, len(accurate or ()), None if accurate is None else sum(accurate))


def signal_groups(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str,
                  uncertainty: Sequence[UncertaintyRow] = (), extra: Sequence[MetricColumn] = ()
                  ) -> dict[Key, Groups]:
    """(metric, source, phase) → the sets with references and a defined score, as `Groups` for
    `a2c.metrics.signal`: every answer of a set carries the set's score, its accuracy is the target.
    Cons_sem, entropy and Cons_lex from `metrics.jsonl`, the per-set uncertainty measures from
    `uncertainty.jsonl`."""
    return {**_grouped(signal_scores(rows, judges, entropy_judge, extra),
                       [(r.source, r.phase, r.n, r.n_accurate) for r in rows]),
            **_grouped(uncertainty_scores(uncertainty), [_set_info(r) for r in uncertainty])}


def answer_groups(uncertainty: Sequence[UncertaintyRow]) -> dict[Key, tuple[Groups, np.ndarray]]:
    """(metric, source, phase) → every answer with its own confidence (degree, eccentricity) and accuracy,
    as one-answer `Groups`, with the index of its set (so intervals resample questions, not answers)."""
    keys = dict.fromkeys((m, g) for r in uncertainty for m, values in r.answers.items() for g in values)
    out: dict[Key, tuple[Groups, np.ndarray]] = {}
    for measure, graph in keys:
        name = f"{measure_label(measure)} ({graph_label(graph)}, per answer)"
        for source in SOURCES:
            for phase in PHASES:
                mine = [(k, r) for k, r in enumerate(uncertainty)
                        if r.source == source and r.phase == phase and r.accurate is not None]
                if not mine:
                    continue
                scores: list[float] = []
                labels: list[bool] = []
                sets: list[int] = []
                for k, r in mine:
                    values = r.answers.get(measure, {}).get(graph)
                    if values is None or r.accurate is None:
                        continue
                    scores += [_confidence(measure, v) for v in values]
                    labels += r.accurate
                    sets += [k] * len(values)
                out[(name, source, phase)] = (Groups.per_answer(scores, labels),
                                              np.asarray(sets, dtype=np.int64))
    return out


def consistency_signal(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str,
                       uncertainty: Sequence[UncertaintyRow] = (), *, seed: int = 0,
                       extra: Sequence[MetricColumn] = ()
                       ) -> dict[tuple[str, Source, Phase, Literal["set", "answer"]], Signal]:
    """AUROC and PRR (with seeded bootstrap intervals) of every metric, source and phase, set-level and
    (for per-answer confidences) answer-level; empty without references."""
    out: dict[tuple[str, Source, Phase, Literal["set", "answer"]], Signal] = {
        (*key, "set"): signal(g, seed=seed)
        for key, g in signal_groups(rows, judges, entropy_judge, uncertainty, extra).items()}
    for key, (g, sets) in answer_groups(uncertainty).items():
        out[(*key, "answer")] = signal(g, seed=seed, clusters=sets)
    return out
