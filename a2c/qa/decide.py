"""Answer or decline at answer time: a calibration (`a2c.qa.calibration`) applied to one question's answers.

The signal is computed from the candidates the wrapper (or the server) just judged, by the same functions
the run's metrics stage and signal table use (a `MetricRow` and an `UncertaintyRow` of the source, before
A2C), so a served confidence is the calibrated value of exactly the score the calibration was fitted on.
The answer the confidence is about is the A2C answer of the calibration's source (the majority of that
source's rank choices, as the run's `a2c` selection labelled it).

A calibration holds only for answers produced the way its run produced them: `settings_mismatch` names the
first difference in model, variation, A2C settings or the judges the signal reads (the seed only changes
which samples are drawn, so it may differ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from a2c.judges import Judge
from a2c.metrics import cons_lex
from a2c.metrics.set_metrics import AnswerSet
from a2c.qa.calibration import Calibration, computable_signals, set_signals
from a2c.qa.choice import Choice, Decision
from a2c.qa.config import ExperimentConfig
from a2c.qa.measures import set_measures
from a2c.qa.metric_columns import compute_columns, computed_columns
from a2c.qa.rows import MetricRow, Source, UncertaintyRow
from a2c.qa.vote import DEFAULT_VOTE, ballots, elect, question_prior


def _differences(recorded: Any, current: Any, key: str) -> list[str]:
    if isinstance(recorded, dict) and isinstance(current, dict):
        return [d for k in recorded.keys() | current.keys()
                for d in _differences(recorded.get(k), current.get(k), f"{key}.{k}")]
    return [] if recorded == current else [f"{key}: the calibration's run used {recorded!r}, these settings "
                                           f"use {current!r}"]


def _scoring(spec: dict[str, Any]) -> dict[str, Any]:
    """A judge spec without where it caches: the cache changes no score."""
    return {k: v for k, v in spec.items() if k != "cache"}


# settings added after calibrations were first written → the value those calibrations' runs used
_ADDED: dict[str, dict[str, Any]] = {"ask_to_choose": {"option_order": "fixed", "vote": DEFAULT_VOTE}}


def settings_mismatch(calibration: Calibration, model: str, settings: ExperimentConfig) -> str | None:
    """The first way answers made with `model` and `settings` differ from the calibration's run, or None."""
    run = calibration.run
    if model != run.model:
        return (f"model: the calibration was fitted on answers of {run.model!r}, these come from {model!r}")
    current = settings.model_dump(mode="json", include={"variation", "ask_to_choose"})
    for section, former in (("variation", "variation"), ("ask_to_choose", "a2c")):  # a2c: its earlier name
        recorded = run.settings.get(section, run.settings.get(former))
        if isinstance(recorded, dict):
            recorded = {**_ADDED.get(section, {}), **recorded}
        found = sorted(_differences(recorded, current[section], section))
        if found:
            return found[0]
    given = {spec.name: _scoring(spec.model_dump(mode="json")) for spec in settings.judges}
    for spec in map(_scoring, calibration.judges):
        name = spec["name"]
        if name not in given:
            return (f"judges: the calibration's signal {calibration.signal!r} reads judge {name!r}, which "
                    f"these settings do not load ({', '.join(given) or 'none'})")
        if given[name] != spec:
            return f"judges.{name}: the calibration's run used {spec!r}, these settings use {given[name]!r}"
    if calibration.entropy_judge is not None and settings.entropy_judge_name != calibration.entropy_judge:
        return (f"entropy_judge: the calibration's signal clusters by {calibration.entropy_judge!r}, these "
                f"settings by {settings.entropy_judge_name!r}")
    computed = computable_signals(list(given), settings.entropy_judge_name if given else None)
    if calibration.signal not in computed:  # a score never computed would decline every answer
        return (f"signal: the calibration's signal {calibration.signal!r} is not one these settings' judges "
                f"({', '.join(given) or 'none'}) compute")
    return None


def source_signals(choice: Choice, source: Source, judges: Mapping[str, Judge], settings: ExperimentConfig
                   ) -> dict[str, float | None]:
    """Every set-level signal of the choice's candidates of one source, as the run's signal table names and
    computes them (None: undefined, e.g. below two candidates)."""
    texts = [g.answer(settings.variation.answer_field) for g in choice.generations if g.source == source]
    matrices = {name: np.asarray(sets[source].matrix, dtype=np.float64)
                for name, sets in choice.judged.items()}
    # each judge's decisions, made once for the registered metrics and the equivalence measures, as the
    # metrics stage makes them, so a calibration may rank by any of them
    decisions = {name: judges[name].equivalent(m) for name, m in matrices.items()}
    columns = computed_columns(list(matrices))
    judged = {c.judge: AnswerSet(texts, matrices[c.judge], decisions[c.judge])
              for c in columns if c.judge is not None}
    extra = compute_columns(columns, texts, judged)
    row = MetricRow(id="q", source=source, phase="before", n=len(texts), n_accurate=None,
                    cons_lex=cons_lex(texts), judges={name: sets[source].scores
                                                      for name, sets in choice.judged.items()}, accuracy={},
                    extra=extra)
    per_set, _ = set_measures(matrices, {name: judges[name] for name in matrices}, decisions)
    uncertainty = UncertaintyRow(id="q", source=source, phase="before", accurate=None, sets=per_set,
                                 answers={})
    values = set_signals([row], [uncertainty], list(choice.judged), settings.entropy_judge_name)
    return {name: float(v[0]) if np.isfinite(v[0]) else None for name, v in values.items()}


def source_score(calibration: Calibration, choice: Choice, judges: Mapping[str, Judge],
                 settings: ExperimentConfig) -> float | None:
    """The calibration's signal on the choice's candidates of its source (None below two candidates)."""
    return source_signals(choice, calibration.source, judges, settings).get(calibration.signal)


def source_answer(choice: Choice, source: str, vote: str = DEFAULT_VOTE) -> str | None:
    """The A2C answer of one source: the vote over its parsed rank choices (the run's `a2c` selection;
    `debiased` divides out the position prior of the question's own replies, both sources)."""
    text, _ = elect(vote, ballots(c for c in choice.choices if c.source == source),
                    question_prior(vote, choice.choices))
    return text


def decide(calibration: Calibration, choice: Choice, judges: Mapping[str, Judge],
           settings: ExperimentConfig) -> Decision:
    """Confidence and verdict for one question; declined when the signal is undefined, the confidence is
    below the calibration's threshold, or the source's rank replies gave no answer to vouch for."""
    score = source_score(calibration, choice, judges, settings)
    confidence = calibration.confidence(score)
    answer = source_answer(choice, calibration.source, settings.ask_to_choose.vote)
    return Decision(calibration.signal, calibration.source, score, confidence,
                    answer is None or calibration.declines(confidence), answer, calibration.decline_below)


def needed_judges(calibration: Calibration, judges: Sequence[Any]) -> list[Any]:
    """`judges` (JudgeSpec) plus any the calibration's signal reads that are missing, with its options."""
    from a2c.judges import JudgeSpec

    have = {spec.name for spec in judges}
    return [*judges, *(JudgeSpec.model_validate(spec) for spec in calibration.judges
                       if spec["name"] not in have)]
