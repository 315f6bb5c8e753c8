"""The typed summary of a QA run (`summary.json`): dataset means per source and phase, counts, signal.

Written by the metrics stage, read by the report, `a2c report`, `RunResult` and `to_pandas()`: one model,
so no reader re-spells a key. `schema_version` says which a2c wrote it; a summary of an older a2c (no
version) is refused with one line naming the command that recomputes it from the stored outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from a2c.judges import JUDGES
from a2c.metrics import mean_defined
from a2c.metrics.signal import Groups, Signal, signal
from a2c.qa.config import ExperimentConfig
from a2c.qa.rows import (
    CHOICES,
    METRICS,
    PARAPHRASES,
    PARSE_METHODS,
    PHASES,
    SOURCES,
    Accuracy,
    MetricRow,
    ParseMethod,
    Phase,
    Source,
)
from a2c.runfiles import RunFileError
from a2c.store import Store

SCHEMA_VERSION: Final = 2  # 1: the untyped dict of a2c ≤ 0.1 (no `schema_version` key)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Mean(_Model):
    """A dataset mean over the sets where the value is defined, and how many sets had none."""

    mean: float | None
    skipped: int

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Mean:
        mean, skipped = mean_defined(values)
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


class SignalRow(_Model):
    """AUROC/PRR of one consistency metric for one source and phase (`a2c.metrics.signal.Signal`)."""

    metric: str
    source: Source
    phase: Phase
    sets: int
    answers: int
    accurate: int
    auroc: float | None
    auroc_ci: tuple[float, float] | None
    prr: float | None
    prr_ci: tuple[float, float] | None
    undefined: str | None
    bootstrap: int
    seed: int


class QASummary(_Model):
    """What `summary.json` holds for a QA run."""

    schema_version: Literal[2] = SCHEMA_VERSION
    name: str
    model: str
    judges: list[str]
    similarities: list[str]
    entropy_judge: str
    groups: list[GroupSummary]
    counts: Counts
    signal: list[SignalRow]

    def group(self, method: Source, phase: Phase) -> GroupSummary | None:
        return next((g for g in self.groups if g.method == method and g.phase == phase), None)

    @property
    def referenced(self) -> int:
        """How many questions have references."""
        return self.counts.questions_with_references


class OldSummaryError(RunFileError):
    """A summary.json this a2c cannot read: written by an older a2c, or damaged."""


def read_summary(store: Store, file: str, hint: str) -> QASummary:
    """The run's typed summary; an older or damaged one is refused with `hint` (how to recompute it)."""
    data = store.read_json(file)
    if isinstance(data, dict) and "schema_version" not in data:
        raise OldSummaryError(f"{store.where(file)} was written by an older a2c (no schema_version)",
                              hint=hint)
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
    sims = [spec.name for spec in config.accuracy.similarities]
    entropy_judge = config.entropy_judge_name
    model = config.generator.model
    choices = store.read_rows(CHOICES) if store.exists(CHOICES.name) else None
    per_source = {source: SourceCounts(rank_prompts=len(mine), unparsed=sum(not c.parsed for c in mine),
                                       idk=sum(c.dont_know for c in mine))
                  for source in SOURCES if choices is not None
                  for mine in [[c for c in choices if c.source == source]]}
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
                    choices=per_source,
                    parse_methods={m: sum(c.method == m for c in choices) for m in PARSE_METHODS}
                    if choices is not None else {},
                    prompts_cut_to_fit_context=prompts_cut)
    if store.exists(PARAPHRASES.name):
        paraphrases = store.read_rows(PARAPHRASES)
        counts = counts.model_copy(update={
            "paraphrases": sum(len(p.paraphrases) for p in paraphrases),
            "paraphrases_failed": sum(not x.ok for p in paraphrases for x in p.paraphrases)})
    signal_rows = [SignalRow(metric=name, source=source, phase=phase, **asdict(result))
                   for (name, source, phase), result in
                   consistency_signal(rows, judges, entropy_judge, seed=config.seed).items()]
    return QASummary(name=config.name, model=model, judges=judges, similarities=sims,
                     entropy_judge=entropy_judge, groups=groups, counts=counts, signal=signal_rows)


# -- consistency as a signal of correctness ---------------------------------------------------------------

def judge_label(judge: str) -> str:
    """What tables call a judge (its registry entry's label; the name for one this a2c does not know)."""
    return JUDGES.get(judge).label if judge in JUDGES else judge


def _judge_sign(judge: str) -> float:
    """+1 where a higher score means more consistent, −1 for judges like `contra` (so every score ranks
    answers the same way round: higher = more confident)."""
    return 1.0 if judge not in JUDGES or JUDGES.get(judge).higher_is_consistent else -1.0


def signal_scores(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str
                  ) -> dict[str, list[float | None]]:
    """Per set, every consistency metric as a confidence (higher = more consistent): Cons_sem per judge,
    the negated clustering entropy and Cons_lex."""
    columns: dict[str, list[float | None]] = {}
    for j in judges:
        sign = _judge_sign(j)
        columns[f"{judge_label(j)} Cons_sem"] = [
            None if (v := r.judges[j].cons_sem) is None else sign * v for r in rows]
    columns[f"-Entropy ({judge_label(entropy_judge)})"] = [
        None if (e := r.judges[entropy_judge].entropy) is None else -e for r in rows]
    columns["Cons_lex"] = [r.cons_lex for r in rows]
    return columns


def signal_groups(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str
                  ) -> dict[tuple[str, Source, Phase], Groups]:
    """(metric, source, phase) → the sets with references and a defined score, as `Groups` for
    `a2c.metrics.signal`: every answer of a set carries the set's score, its accuracy is the target."""
    out: dict[tuple[str, Source, Phase], Groups] = {}
    for name, values in signal_scores(rows, judges, entropy_judge).items():
        for source in SOURCES:
            for phase in PHASES:
                part = [(v, r) for v, r in zip(values, rows, strict=True)
                        if r.source == source and r.phase == phase and r.referenced and v is not None]
                if any(r.source == source and r.phase == phase and r.referenced for r in rows):
                    out[(name, source, phase)] = Groups.of([v for v, _ in part], [r.n for _, r in part],
                                                           [r.n_accurate or 0 for _, r in part])
    return out


def consistency_signal(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str, *,
                       seed: int = 0) -> dict[tuple[str, Source, Phase], Signal]:
    """AUROC and PRR (with seeded bootstrap intervals) of every metric, source and phase; empty without
    references."""
    groups = signal_groups(rows, judges, entropy_judge)
    return {key: signal(g, seed=seed) for key, g in groups.items()}
