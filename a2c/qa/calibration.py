"""Answer or decline: P(the A2C answer is accurate | a consistency signal), fitted on a labelled run.

The unit is a question and a source of variation (paraphrases or temperatures). Its *signal* is a score
of that source's candidates before A2C — any set-level score of the signal table (Cons_sem per judge, the
negated clustering entropy, Cons_lex, the per-set uncertainty measures), oriented higher = more
confident — and its *label* is whether the answer A2C gives from that source (the `a2c` selection: the
majority of the source's rank choices) is accurate under a similarity (R1-A by default). A question whose
rank replies named no option has no answer to label and is left out (counted).

`calibration_file` fits the map (`a2c.metrics.calibration_maps`), picks the signal by cross-validated AURC of
the calibrated score unless one is named, reports out-of-sample figures by cross-fitting (each unit's
confidence from a map fitted without it), and with a risk bound picks the decline threshold by
Learn-then-Test (`a2c.metrics.risk_control`) on questions the map was not fitted on. The result is a
versioned `calibration.json`: what was fitted, on which run (its files' digest, model and answer
settings), and the figures; `read_calibration` refuses a damaged or foreign file in one line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from a2c.common.errors import A2CError
from a2c.common.files import read_text
from a2c.common.seeds import stable_seed
from a2c.metrics.calibration_maps import FittedMap, MapKind, fit_map
from a2c.metrics.risk_control import learn_then_test, threshold_grid
from a2c.metrics.selective import (
    RISKS,
    Estimate,
    aurc,
    coverage_at_risk,
    estimate,
    excess_aurc,
    expected_calibration_error,
    paired_difference,
)
from a2c.metrics.set_metrics import SET_METRICS
from a2c.qa.columns import Columns, MetricColumns, SelectionColumns, UncertaintyColumns
from a2c.qa.config import ExperimentConfig
from a2c.qa.metric_columns import computed_columns
from a2c.qa.rows import METRICS, SELECTION_SCORES, UNCERTAINTY, MetricRow, Source, UncertaintyRow
from a2c.qa.summary import judge_label, signal_scores, uncertainty_name, uncertainty_scores
from a2c.run.stage import json_digest
from a2c.run.store import Store

CALIBRATION_FORMAT: Final = "a2c-calibration"
CALIBRATION_VERSION: Final = 1
FOLDS = 5  # cross-fitting and the cross-validated AURC of the signal choice
# the files the run digest covers
DIGESTED = ("config.yaml", METRICS.name, UNCERTAINTY.name, SELECTION_SCORES.name)


class CalibrationError(A2CError):
    """A calibration that cannot be made (no labels, an unknown signal) or read (damaged, foreign, newer)."""


# -- units of a run ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Units:
    """One question per row: its signals (NaN where undefined), its A2C answer's 0/1 accuracy, and which
    judges each signal reads (what a server must score alike for the calibration to apply)."""

    ids: list[str]
    correct: np.ndarray
    signals: dict[str, np.ndarray]
    reads: dict[str, tuple[str, ...]]
    dropped: int = 0  # questions left out: no reference answers, or no A2C answer

    def subset(self, keep: np.ndarray) -> Units:
        return Units([i for i, k in zip(self.ids, keep, strict=True) if k], self.correct[keep],
                     {name: v[keep] for name, v in self.signals.items()}, self.reads, self.dropped)

    def defined(self, signal: str) -> Units:
        return self.subset(np.isfinite(self.signals[signal]))


def signal_reads(judges: Sequence[str], entropy_judge: str, measures: Sequence[tuple[str, str]]
                 ) -> dict[str, tuple[str, ...]]:
    """Signal name (as the signal table names it) → the judges its value is computed from."""
    cons_sem, entropy, cons_lex = (SET_METRICS.get(name) for name in ("cons_sem", "entropy", "cons_lex"))
    reads: dict[str, tuple[str, ...]] = {f"{judge_label(j)} {cons_sem.label}": (j,) for j in judges}
    reads[f"{entropy.signed_label} ({judge_label(entropy_judge)})"] = (entropy_judge,)
    reads[cons_lex.signed_label] = ()
    reads.update({uncertainty_name(m, graph): tuple(graph.split("+")) for m, graph in measures})
    reads.update({c.signed_label: (c.judge,) if c.judge is not None else ()
                  for c in computed_columns(judges) if c.metric.signal})
    return reads


def metric_signals(metrics: MetricColumns, judges: Sequence[str], entropy_judge: str
                   ) -> dict[str, np.ndarray]:
    """The set-level signals of metric columns (one value per row, NaN: undefined), as the signal table
    computes them: the built-in metrics and every registered metric the columns hold."""
    extra = [c for c in computed_columns(judges) if metrics.has_extra(c.key)]
    return signal_scores(metrics, judges, entropy_judge, extra)


def set_signals(rows: Sequence[MetricRow], uncertainty: Sequence[UncertaintyRow], judges: Sequence[str],
                entropy_judge: str) -> dict[str, np.ndarray]:
    """Every set-level signal of the rows: `metric_signals`, then the uncertainty measures."""
    return {**metric_signals(MetricColumns.read(rows), judges, entropy_judge),
            **uncertainty_scores(UncertaintyColumns.read(uncertainty))}


def default_similarity(similarities: Sequence[str]) -> str:
    """R1-A when the run scored it, else its first similarity."""
    return "rouge1" if "rouge1" in similarities else similarities[0]


def run_units(store: Store, source: Source, similarity: str, *, judges: Sequence[str], entropy_judge: str,
              similarities: Sequence[str]) -> Units:
    """The labelled units of a finished run for one source: signals before A2C, the A2C answer's accuracy
    (the run's judges, entropy judge and accuracy similarities as its config or summary lists them)."""
    if similarity not in similarities:
        raise CalibrationError(f"similarity {similarity!r} did not score this run (it scored "
                               f"{', '.join(similarities)})")
    return units_of(RunColumns.read(store), source, similarity, judges=judges, entropy_judge=entropy_judge)


@dataclass(frozen=True)
class RunColumns:
    """What calibration reads of a finished run, as columns (`a2c.qa.columns`): read once for every
    source, and a few hundred bytes per question however many questions the run has."""

    store: Store  # where they were read (for messages)
    metrics: MetricColumns
    uncertainty: UncertaintyColumns | None
    picks: SelectionColumns

    @classmethod
    def read(cls, store: Store, metrics: MetricColumns | None = None,
             uncertainty: UncertaintyColumns | None = None) -> RunColumns:
        """The run's columns; `metrics` and `uncertainty` when the caller has read them already."""
        for file in (METRICS, SELECTION_SCORES):
            if not store.exists(file.name):
                raise CalibrationError(f"{store.where(file.name)} is missing: calibration needs a finished "
                                       "run with the `a2c` selection (its default)",
                                       hint="run `a2c run CONFIG` to the end, with `selection: [a2c]`")
        if uncertainty is None and store.exists(UNCERTAINTY.name):
            uncertainty = UncertaintyColumns.read(store.iter_rows(UNCERTAINTY))
        if metrics is None:  # (not `or`: columns of no rows are falsy)
            metrics = MetricColumns.read(store.iter_rows(METRICS))
        return cls(store, metrics, uncertainty,
                   SelectionColumns.read(store.iter_rows(SELECTION_SCORES)))


def _rows_by_id(columns: Columns, rows: np.ndarray) -> dict[str, int]:
    """Question id → its row among `rows` (the last, should a question repeat)."""
    return {columns.ids[q]: r for q, r in zip(columns.question[rows].tolist(), rows.tolist(), strict=True)}


def units_of(run: RunColumns, source: Source, similarity: str, *, judges: Sequence[str],
             entropy_judge: str) -> Units:
    """One source's labelled units of a run: the questions whose A2C answer has an accuracy under
    `similarity`, in the order of the selection scores, with every set-level signal of their answers
    before A2C, exactly as the signal table computes them."""
    metrics, uncertainty, picks = run.metrics, run.uncertainty, run.picks
    before = _rows_by_id(metrics, metrics.where(source, "before"))
    a2c_rows = picks.where(source)
    a2c_rows = a2c_rows[picks.method[a2c_rows] == (picks.methods.index("a2c") if "a2c" in picks.methods
                                                   else -1)]
    if not len(a2c_rows):
        raise CalibrationError(f"{run.store.where(SELECTION_SCORES.name)} holds no A2C answers for source "
                               f"{source!r}: the run needs `selection: [a2c]` (the default) and a2c enabled")
    accuracy = picks.accuracy(similarity)
    labelled = [(qid, accuracy[r]) for qid, r in _rows_by_id(picks, a2c_rows).items()
                if picks.picked[r] and qid in before and not math.isnan(accuracy[r])]
    if not labelled:
        raise CalibrationError(f"no question of {run.store.where('')} has an accurate-or-not A2C answer for "
                               f"source {source!r} (no reference answers, or no rank reply named an option)")
    ids = [qid for qid, _ in labelled]
    rows = np.array([before[qid] for qid in ids], dtype=np.int64)
    # every signal is an elementwise orientation of a column, so it is taken whole, then at the units' rows
    signals = {name: values[rows] for name, values in metric_signals(metrics, judges, entropy_judge).items()}
    measures: list[tuple[str, str]] = []
    if uncertainty is not None:
        sets = _rows_by_id(uncertainty, uncertainty.where(source, "before"))
        if all(qid in sets for qid in ids):  # the measures of some units only would rank them apart
            held = np.array([sets[qid] for qid in ids], dtype=np.int64)
            signals.update({name: values[held] for name, values in uncertainty_scores(uncertainty).items()})
        measures = uncertainty.measures()
    reads = signal_reads(judges, entropy_judge, measures)
    return Units(ids, np.array([acc == 1.0 for _, acc in labelled], dtype=np.int64), signals,
                 {name: reads[name] for name in signals}, dropped=len(before) - len(ids))


# -- fitting -----------------------------------------------------------------------------------------------

def fold_of(ids: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """A fold per question from its id alone (seeded): the same question lands in the same fold whatever
    else the run holds, so halves and folds are reproducible."""
    return np.array([stable_seed("calibration-fold", seed, qid) % folds for qid in ids], dtype=np.int64)


def cross_fitted(method: str, scores: np.ndarray, correct: np.ndarray, ids: Sequence[str], *,
                 folds: int = FOLDS, seed: int = 0) -> np.ndarray:
    """Each unit's calibrated confidence from a map fitted on the other folds (out of sample)."""
    fold = fold_of(ids, folds, seed)
    out = np.empty(len(scores), dtype=np.float64)
    for k in range(folds):
        held = fold == k
        if not held.any():
            continue
        train = ~held if (~held).any() else held  # a single fold: nothing else to fit on
        out[held] = fit_map(method, scores[train], correct[train]).predict(scores[held])
    return out


def signal_aurcs(units: Units, method: str, *, folds: int = FOLDS, seed: int = 0) -> dict[str, float]:
    """Cross-validated AURC of each signal's calibrated score, compared on the units where every signal is
    defined; a signal undefined on half the units or more, or constant, is left out."""
    usable = [name for name, v in units.signals.items()
              if np.isfinite(v).sum() >= max(2, len(v) // 2) and len(np.unique(v[np.isfinite(v)])) > 1]
    if not usable:
        return {}
    part = units.subset(np.all([np.isfinite(units.signals[name]) for name in usable], axis=0))
    return {name: aurc(cross_fitted(method, part.signals[name], part.correct, part.ids, folds=folds,
                                    seed=seed), part.correct) for name in usable}


def choose_signal(cv: Mapping[str, float]) -> str:
    """The signal with the lowest cross-validated AURC (ties: the first name)."""
    if not cv:
        raise CalibrationError("no signal is defined and varies on enough questions to calibrate",
                               hint="name one with --signal, or calibrate on a run with more questions")
    return min(cv, key=lambda name: (cv[name], name))


def split_halves(ids: Sequence[str], seed: int) -> np.ndarray:
    """True for the questions the risk-control test runs on, False for those the signal is chosen and the
    map fitted on; by id, so a question keeps its half in any subset of the units."""
    return fold_of(ids, 2, stable_seed("risk-control", seed)) == 1


# -- the file ----------------------------------------------------------------------------------------------

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Interval(_Model):
    value: float
    low: float | None
    high: float | None

    @classmethod
    def of(cls, e: Estimate) -> Interval:
        return cls(value=e.value, low=e.low, high=e.high)


class OutOfSample(_Model):
    """Cross-fitted figures of the chosen signal (each unit scored by a map fitted without it)."""

    units: int
    accuracy: float  # always answering: 1 − its risk
    aurc: Interval  # of the calibrated confidence
    excess_aurc: Interval
    aurc_raw: Interval  # of the raw signal's own order
    ece: Interval  # calibrated, equal-mass bins
    ece_raw: Interval | None  # the raw signal read as a probability; None when it is not in [0, 1]
    ece_change: Interval | None  # calibrated − raw, paired bootstrap
    coverage_at_risk: dict[str, Interval]  # "0.1" → the largest coverage with selective risk ≤ 0.1
    folds: int
    bins: int
    bootstrap: int
    seed: int


class RiskControlRecord(_Model):
    """The Learn-then-Test threshold and what it was tested on."""

    max_risk: float
    delta: float
    threshold: float | None  # None: no threshold passed, every question is declined
    fit_questions: int
    control_questions: int
    answered: int  # control questions answered at the threshold
    errors: int
    thresholds_tested: int


class RunRecord(_Model):
    """The run a calibration was fitted on: its name, files' digest, model and answer settings."""

    name: str
    digest: str
    model: str
    backend: str
    questions: int
    settings: dict[str, Any]  # seed, variation, judges, entropy_judge, a2c as the run's config has them


class Calibration(_Model):
    """What `calibration.json` holds (version 1)."""

    format: Literal["a2c-calibration"] = CALIBRATION_FORMAT
    version: Literal[1] = CALIBRATION_VERSION
    signal: str
    judges: list[dict[str, Any]]  # the judges the signal reads, with their options as the run had them
    entropy_judge: str | None  # the run's entropy judge when the signal is the clustering entropy
    source: Source
    similarity: str
    method: MapKind
    map: FittedMap
    decline_below: float | None  # declined when confidence < this; None: every answer is declined
    rule: Literal["min-confidence", "risk-controlled"]
    risk_control: RiskControlRecord | None
    units: int  # questions the map was fitted on
    dropped: int
    signals_cv_aurc: dict[str, float]  # the candidates and their cross-validated AURC
    out_of_sample: OutOfSample
    run: RunRecord

    def confidence(self, score: float | None) -> float | None:
        return None if score is None or not math.isfinite(score) else float(self.map.predict([score])[0])

    def declines(self, confidence: float | None) -> bool:
        return confidence is None or self.decline_below is None or confidence < self.decline_below


def _coverage(confidence: np.ndarray, correct: np.ndarray, max_risk: float) -> float:
    return coverage_at_risk(confidence, correct, max_risk)


def out_of_sample(units: Units, signal: str, method: str, *, folds: int = FOLDS, bins: int = 10,
                  replicates: int = 1000, seed: int = 0) -> OutOfSample:
    """The chosen signal's cross-fitted figures with seeded bootstrap intervals over questions."""
    part = units.defined(signal)
    raw, y = part.signals[signal], part.correct
    calibrated = cross_fitted(method, raw, y, part.ids, folds=folds, seed=seed)
    boot: dict[str, Any] = {"replicates": replicates, "seed": seed}

    def ece(c: np.ndarray, labels: np.ndarray) -> float:
        return expected_calibration_error(c, labels, bins=bins)

    raw_is_probability = bool(np.all((raw >= 0) & (raw <= 1)))
    return OutOfSample(
        units=len(y), accuracy=float(y.mean()),
        aurc=Interval.of(estimate(aurc, calibrated, y, **boot)),
        excess_aurc=Interval.of(estimate(excess_aurc, calibrated, y, **boot)),
        aurc_raw=Interval.of(estimate(aurc, raw, y, **boot)),
        ece=Interval.of(estimate(ece, calibrated, y, **boot)),
        ece_raw=Interval.of(estimate(ece, raw, y, **boot)) if raw_is_probability else None,
        ece_change=Interval.of(paired_difference(ece, raw, calibrated, y, **boot)) if raw_is_probability
        else None,
        coverage_at_risk={f"{r:g}": Interval.of(estimate(partial(_coverage, max_risk=r), calibrated, y,
                                                         **boot)) for r in RISKS},
        folds=folds, bins=bins, bootstrap=replicates, seed=seed)


def risk_controlled_map(units: Units, signal: str, method: str, *, max_risk: float, delta: float,
                        seed: int = 0) -> tuple[FittedMap, RiskControlRecord]:
    """The map fitted on one half of the questions and the Learn-then-Test threshold tested on the other:
    the tested half's labels choose nothing else, so the guarantee holds for questions like them."""
    part = units.defined(signal)
    control = split_halves(part.ids, seed)
    if control.all() or not control.any():
        raise CalibrationError(f"{len(part.ids)} questions are too few to split for risk control")
    fitted = fit_map(method, part.signals[signal][~control], part.correct[~control])
    grid = threshold_grid(fitted.predict(part.signals[signal][~control]), part.correct[~control], delta=delta)
    result = learn_then_test(fitted.predict(part.signals[signal][control]), part.correct[control], grid,
                             max_risk=max_risk, delta=delta)
    return fitted, RiskControlRecord(max_risk=max_risk, delta=delta, threshold=result.threshold,
                                     fit_questions=int((~control).sum()),
                                     control_questions=int(control.sum()),
                                     answered=result.answered, errors=result.errors,
                                     thresholds_tested=len(result.tested))


def run_record(store: Store, config: ExperimentConfig, questions: int) -> RunRecord:
    digests = {name: store.digest(name) for name in DIGESTED}
    return RunRecord(name=config.name, digest=json_digest(digests), model=config.generator.model,
                     backend=config.generator.backend, questions=questions,
                     settings=config.model_dump(mode="json", include={"seed", "variation", "judges",
                                                                      "entropy_judge", "ask_to_choose"}))


def calibration_file(store: Store, config: ExperimentConfig, *, source: Source = "paraphrase",
                     similarity: str | None = None, method: str = "isotonic", signal: str | None = None,
                     max_risk: float | None = None, delta: float = 0.1, min_confidence: float = 0.5,
                     folds: int = FOLDS, bins: int = 10, replicates: int = 1000, seed: int = 0
                     ) -> Calibration:
    """Fit a calibration on a finished run (module docstring)."""
    sims = [s.name for s in config.accuracy.similarities]
    similarity = similarity or default_similarity(sims)
    units = run_units(store, source, similarity, judges=[j.name for j in config.judges],
                      entropy_judge=config.entropy_judge_name, similarities=sims)
    # with risk control the signal is chosen on the fitting half only: the tested half's labels choose nothing
    choosing = units if max_risk is None else units.subset(~split_halves(units.ids, seed))
    cv = signal_aurcs(choosing, method, folds=folds, seed=seed)
    if signal is not None and signal not in units.signals:
        raise CalibrationError(f"unknown signal {signal!r}; this run has: {', '.join(units.signals)}")
    chosen = signal or choose_signal(cv)
    part = units.defined(chosen)
    if len(part.ids) < 2 * folds:
        raise CalibrationError(f"signal {chosen!r} is defined on {len(part.ids)} questions of source "
                               f"{source!r}: too few to fit and cross-fit ({2 * folds} at least)")
    if len(np.unique(part.correct)) < 2:
        every = "accurate" if part.correct[0] else "inaccurate"
        raise CalibrationError(f"every A2C answer of source {source!r} is {every}: nothing to calibrate "
                               "against")
    figures = out_of_sample(units, chosen, method, folds=folds, bins=bins, replicates=replicates, seed=seed)
    below: float | None = min_confidence
    if max_risk is None:
        fitted, control = fit_map(method, part.signals[chosen], part.correct), None
        rule: Literal["min-confidence", "risk-controlled"] = "min-confidence"
    else:
        fitted, control = risk_controlled_map(units, chosen, method, max_risk=max_risk, delta=delta,
                                              seed=seed)
        below, rule = control.threshold, "risk-controlled"
    judges = {spec.name: spec.model_dump(mode="json") for spec in config.judges}
    reads = units.reads[chosen]
    return Calibration(
        signal=chosen, judges=[judges[j] for j in reads], source=source, similarity=similarity,
        entropy_judge=config.entropy_judge_name if chosen.startswith(SET_METRICS.get("entropy").signed_label)
        else None,
        method=fitted.kind, map=fitted, decline_below=below, rule=rule, risk_control=control,
        units=len(part.ids), dropped=units.dropped + len(units.ids) - len(part.ids), signals_cv_aurc=cv,
        out_of_sample=figures, run=run_record(store, config, len(units.ids) + units.dropped))


def write_calibration(calibration: Calibration, path: Path) -> None:
    path.write_text(json.dumps(calibration.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


def read_calibration(path: Path) -> Calibration:
    """A calibration file, or CalibrationError in one line: missing, not JSON, not a calibration, newer."""
    text = read_text(path, CalibrationError, what="calibration file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CalibrationError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, Mapping) or data.get("format") != CALIBRATION_FORMAT:
        raise CalibrationError(f"{path}: not an a2c calibration file (its \"format\" is not "
                               f"\"{CALIBRATION_FORMAT}\"; `a2c calibrate RUN_DIR` makes one)")
    version = data.get("version")
    if isinstance(version, int) and version > CALIBRATION_VERSION:
        raise CalibrationError(f"{path}: calibration version {version} is newer than this a2c reads "
                               f"({CALIBRATION_VERSION}): upgrade a2c, or calibrate again")
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise CalibrationError(f"{path}: damaged calibration ({where}: {first['msg']})") from None

