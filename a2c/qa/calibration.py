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
settings), and the figures. `read_calibration` reads it strictly, so what a server acts on is what a fit
makes: finite numbers in their ranges, a monotone map, a signal its judges compute, a rule whose fields
agree; anything else is refused in one line naming the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from a2c.common.errors import A2CError
from a2c.common.files import read_text
from a2c.common.seeds import stable_seed
from a2c.common.wording import plural
from a2c.judges import JUDGES, JudgeSpec
from a2c.metrics.calibration_maps import (
    FittedMap,
    MapKind,
    Probability,
    fit_map,
    inconsistent,
    number,
    shown,
    whole,
)
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
from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES
from a2c.qa.columns import Columns, MetricColumns, SelectionColumns, UncertaintyColumns
from a2c.qa.config import ExperimentConfig
from a2c.qa.measures import NLI_GRAPH, NLI_PAIR
from a2c.qa.metric_columns import computed_columns
from a2c.qa.rows import METRICS, SELECTION_SCORES, SOURCES, UNCERTAINTY, MetricRow, Source, UncertaintyRow
from a2c.qa.summary import judge_label, signal_scores, uncertainty_name, uncertainty_scores
from a2c.run.stage import json_digest
from a2c.run.store import Store

CALIBRATION_FORMAT: Final = "a2c-calibration"
A2C_LABEL: Final = "a2c"  # whose answers are labelled unless told otherwise: A2C's picks
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


def signal_reads(judges: Sequence[str], entropy_judge: str | None, measures: Sequence[tuple[str, str]]
                 ) -> dict[str, tuple[str, ...]]:
    """Signal name (as the signal table names it) → the judges its value is computed from; the clustering
    entropy's only with an entropy judge."""
    cons_sem, entropy, cons_lex = (SET_METRICS.get(name) for name in ("cons_sem", "entropy", "cons_lex"))
    reads: dict[str, tuple[str, ...]] = {f"{judge_label(j)} {cons_sem.label}": (j,) for j in judges}
    if entropy_judge is not None:
        reads[f"{entropy.signed_label} ({judge_label(entropy_judge)})"] = (entropy_judge,)
    reads[cons_lex.signed_label] = ()
    reads.update({uncertainty_name(m, graph): tuple(graph.split("+")) for m, graph in measures})
    reads.update({c.signed_label: (c.judge,) if c.judge is not None else ()
                  for c in computed_columns(judges) if c.metric.signal})
    return reads


def measure_graphs(judges: Sequence[str]) -> list[tuple[str, str]]:
    """(measure, judge or graph) of every per-set uncertainty measure answers judged by `judges` get, as
    `a2c.qa.measures` feeds them: a similarity measure the judges whose higher score means more alike, an
    equivalence measure every judge, the NLI graph both of its judges."""
    out: list[tuple[str, str]] = []
    for name, measure in UNCERTAINTY_MEASURES.items(as_registered=True):
        if measure.per_answer:  # a value per answer, not a set's score
            continue
        if measure.statistic == "similarity":
            out += [(name, j) for j in judges if j not in JUDGES or JUDGES.get(j).higher_is_consistent]
        elif measure.statistic == "equivalence":
            out += [(name, j) for j in judges]
        elif all(j in judges for j in NLI_PAIR):
            out.append((name, NLI_GRAPH))
    return out


def computable_signals(judges: Sequence[str], entropy_judge: str | None) -> dict[str, tuple[str, ...]]:
    """Every set-level signal that answers judged by `judges` (entropy clustered by `entropy_judge`) have
    where they are given (`a2c.qa.decide`), with the judges each reads: what a calibration's signal must
    be one of.

    Args:
        judges: judge names, as a config lists them.
        entropy_judge: the judge the clustering entropy clusters by (None: no entropy signal).

    Returns:
        Signal name → the judges its value is computed from.
    """
    return signal_reads(judges, entropy_judge, measure_graphs(judges))


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


def default_label(config: ExperimentConfig) -> str:
    """A2C's picks where the run made them, else a samples run's main answers (`main`).

    Args:
        config: the run's config.

    Returns:
        The selection method whose picks `a2c calibrate` labels by default.
    """
    return label_of([spec.name for spec in config.selection_methods])


def label_of(methods: Sequence[str]) -> str:
    """Whose picks are labelled among the selection methods a run has: A2C's where it has them, else a
    samples run's main answers (`main`), else A2C's (whose absence the caller then reports).

    Args:
        methods: selection method names.

    Returns:
        `a2c` or `main`.
    """
    return A2C_LABEL if A2C_LABEL in methods or "main" not in methods else "main"


def run_units(store: Store, source: Source, similarity: str, *, judges: Sequence[str], entropy_judge: str,
              similarities: Sequence[str], label: str = A2C_LABEL) -> Units:
    """The labelled units of a finished run for one source: signals before A2C, the accuracy of the pick of
    `label` (A2C's answer by default; `main`: a samples file's main answer), with the run's judges, entropy
    judge and accuracy similarities as its config or summary lists them."""
    if similarity not in similarities:
        raise CalibrationError(f"similarity {similarity!r} did not score this run (it scored "
                               f"{', '.join(similarities)})")
    return units_of(RunColumns.read(store), source, similarity, judges=judges, entropy_judge=entropy_judge,
                    label=label)


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
             entropy_judge: str, label: str = A2C_LABEL) -> Units:
    """One source's labelled units of a run: the questions whose A2C answer has an accuracy under
    `similarity`, in the order of the selection scores, with every set-level signal of their answers
    before A2C, exactly as the signal table computes them."""
    metrics, uncertainty, picks = run.metrics, run.uncertainty, run.picks
    before = _rows_by_id(metrics, metrics.where(source, "before"))
    a2c_rows = picks.where(source)
    a2c_rows = a2c_rows[picks.method[a2c_rows] == (picks.methods.index(label) if label in picks.methods
                                                   else -1)]
    if not len(a2c_rows):
        if label != A2C_LABEL:
            raise CalibrationError(f"{run.store.where(SELECTION_SCORES.name)} holds no {label!r} picks for "
                                   f"source {source!r}: the run needs `{label}` among its selection methods")
        raise CalibrationError(f"{run.store.where(SELECTION_SCORES.name)} holds no A2C answers for source "
                               f"{source!r}: the run needs `selection: [a2c]` (the default) and a2c enabled",
                               hint="a run without A2C (a samples run) labels its main answers: --label main")
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


def usable_signals(units: Units) -> list[str]:
    """The signals defined on half the units or more that vary there: the ones a map can be fitted to."""
    return [name for name, v in units.signals.items()
            if np.isfinite(v).sum() >= max(2, len(v) // 2) and len(np.unique(v[np.isfinite(v)])) > 1]


def signal_aurcs(units: Units, method: str, *, folds: int = FOLDS, seed: int = 0) -> dict[str, float]:
    """Cross-validated AURC of each signal's calibrated score, compared on the units where every signal is
    defined; a signal undefined on half the units or more, or constant, is left out."""
    usable = usable_signals(units)
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


def no_usable_signal(source: Source, checked: int, elsewhere: Mapping[Source, Sequence[str]]
                     ) -> CalibrationError:
    """The error for a source none of whose signals can be fitted, naming the other sources whose signals
    can, with the flag that picks one: a run whose paraphrases all got the same answer still calibrates
    on its temperatures.

    Args:
        source: the source asked for.
        checked: how many signals it has.
        elsewhere: the usable signals of each other source of the run (empty lists included).

    Returns:
        The error to raise.
    """
    message = (f"no signal of source {source!r} (of its {checked}) is defined and varies on enough "
               "questions to calibrate")
    varying = {other: names for other, names in elsewhere.items() if names}
    if not varying:
        return CalibrationError(message + "; nor does any of the other sources'",
                                hint="calibrate on a run with more questions")
    for other, names in varying.items():
        shown = ", ".join(map(repr, names[:4])) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        message += f"; source {other!r} has {len(names)} that do{'' if len(names) > 1 else 'es'}: {shown}"
    flags = " or ".join(f"--source {other}" for other in varying)
    return CalibrationError(message, hint=f"try {flags}")


def split_halves(ids: Sequence[str], seed: int) -> np.ndarray:
    """True for the questions the risk-control test runs on, False for those the signal is chosen and the
    map fitted on; by id, so a question keeps its half in any subset of the units."""
    return fold_of(ids, 2, stable_seed("risk-control", seed)) == 1


# -- the file ----------------------------------------------------------------------------------------------

class _Model(BaseModel):
    # what a file says is taken as it is: no "1" for 1, no true for 1, and numbers checked by `number`
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Count = Annotated[int, whole(0)]
Positive = Annotated[int, whole(1)]
Share = Annotated[float, number(0.0, 1.0, low_open=True, high_open=True)]  # a risk, a miscoverage
Change = Annotated[float, number(-1.0, 1.0)]  # a difference of two figures in [0, 1]


def _ordered(low: float | None, high: float | None) -> None:
    if (low is None) != (high is None):
        raise inconsistent("low and high are both numbers or both null (no interval)")
    if low is not None and high is not None and low > high:
        raise inconsistent(f"low {low:g} is above high {high:g}")


class Interval(_Model):
    """A figure in [0, 1] with its bootstrap interval (null ends: too few defined replicates)."""

    value: Probability
    low: Probability | None
    high: Probability | None

    @model_validator(mode="after")
    def _ends(self) -> Interval:
        _ordered(self.low, self.high)
        return self

    @classmethod
    def of(cls, e: Estimate) -> Interval:
        return cls(value=e.value, low=e.low, high=e.high)


class Difference(_Model):
    """A difference of two figures in [0, 1] (so in [−1, 1]) with its bootstrap interval."""

    value: Change
    low: Change | None
    high: Change | None

    @model_validator(mode="after")
    def _ends(self) -> Difference:
        _ordered(self.low, self.high)
        return self

    @classmethod
    def of(cls, e: Estimate) -> Difference:
        return cls(value=e.value, low=e.low, high=e.high)


class OutOfSample(_Model):
    """Cross-fitted figures of the chosen signal (each unit scored by a map fitted without it)."""

    units: Positive
    accuracy: Probability  # always answering: 1 − its risk
    aurc: Interval  # of the calibrated confidence
    excess_aurc: Difference
    aurc_raw: Interval  # of the raw signal's own order
    ece: Interval  # calibrated, equal-mass bins
    ece_raw: Interval | None  # the raw signal read as a probability; None when it is not in [0, 1]
    ece_change: Difference | None  # calibrated − raw, paired bootstrap
    coverage_at_risk: dict[str, Interval]  # "0.1" → the largest coverage with selective risk ≤ 0.1
    folds: Positive
    bins: Positive
    bootstrap: Positive
    seed: Annotated[int, whole()]

    @field_validator("coverage_at_risk")
    @classmethod
    def _risks(cls, value: dict[str, Interval]) -> dict[str, Interval]:
        for key in value:
            try:
                risk = float(key)
            except ValueError:
                risk = math.nan
            if not 0 < risk < 1:
                raise inconsistent(f"key {key!r} is not a risk in (0, 1)")
        return value

    @model_validator(mode="after")
    def _raw(self) -> OutOfSample:
        if (self.ece_raw is None) != (self.ece_change is None):
            raise inconsistent("ece_raw and ece_change are both figures or both null (the raw signal is "
                               "a probability or not)")
        return self


class RiskControlRecord(_Model):
    """The Learn-then-Test threshold and what it was tested on."""

    max_risk: Share
    delta: Share
    threshold: Probability | None  # None: no threshold passed, every question is declined
    fit_questions: Positive
    control_questions: Positive
    answered: Count  # control questions answered at the threshold
    errors: Count
    thresholds_tested: Count

    @model_validator(mode="after")
    def _counts(self) -> RiskControlRecord:
        if self.answered > self.control_questions:
            raise inconsistent(f"answered: {self.answered} of {self.control_questions} control questions")
        if self.errors > self.answered:
            raise inconsistent(f"errors: {self.errors} wrong of {self.answered} answered")
        if self.threshold is None and (self.answered or self.errors):
            raise inconsistent("threshold: null (every question declined), yet answered and errors are "
                               "not 0")
        if self.threshold is not None and not self.thresholds_tested:
            raise inconsistent("threshold: a threshold passed, yet thresholds_tested is 0")
        return self


class RunRecord(_Model):
    """The run a calibration was fitted on: its name, files' digest, model and answer settings."""

    name: str
    digest: str
    model: str
    backend: str
    questions: Positive
    settings: dict[str, Any]  # seed, variation, judges, entropy_judge, a2c as the run's config has them

    @field_validator("digest")
    @classmethod
    def _sha256(cls, value: str) -> str:
        if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
            raise inconsistent(f"must be a sha256 digest (64 hex digits), got {shown(value)}")
        return value


class Calibration(_Model):
    """What `calibration.json` holds (version 1).

    A file is taken only when its fields agree the way `calibration_file` makes them: a signal the listed
    judges compute (reading exactly them), the entropy judge given for the entropy signal only, the map of
    the method, a risk-controlled rule declining below its tested threshold, a min-confidence rule with a
    number, and the counts adding up."""

    format: Literal["a2c-calibration"] = CALIBRATION_FORMAT
    version: Literal[1] = CALIBRATION_VERSION
    signal: str
    judges: list[dict[str, Any]]  # the judges the signal reads, with their options as the run had them
    entropy_judge: str | None  # the run's entropy judge when the signal is the clustering entropy
    source: Source
    similarity: str
    method: MapKind
    map: FittedMap
    decline_below: Probability | None  # declined when confidence < this; None: every answer is declined
    rule: Literal["min-confidence", "risk-controlled"]
    risk_control: RiskControlRecord | None
    units: Positive  # questions the map was fitted on
    dropped: Count
    signals_cv_aurc: dict[str, Probability]  # the candidates and their cross-validated AURC
    out_of_sample: OutOfSample
    run: RunRecord
    # the selection method whose picks were labelled: A2C's answers, or a samples file's main answers
    # (`main`); written only when not A2C's, so files of A2C's labels read as they were written before
    label: str = A2C_LABEL

    @model_serializer(mode="wrap")
    def _a2c_label_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.label == A2C_LABEL:
            data.pop("label", None)
        return data

    @field_validator("version", mode="before")
    @classmethod
    def _whole_version(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):  # True == 1 would pass Literal[1]
            raise PydanticCustomError("whole_number", "must be a whole number, got {got}",
                                      {"got": shown(value)})
        return value

    @field_validator("judges")
    @classmethod
    def _judge_specs(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        names: list[str] = []
        for i, spec in enumerate(value):
            try:
                names.append(JudgeSpec.model_validate(spec).name)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                key = ".".join(str(p) for p in first["loc"])
                raise inconsistent(f"[{i}]{'.' + key if key else ''}: {first['msg']}") from None
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise inconsistent(f"judge {twice[0]!r} is listed twice")
        return value

    @model_validator(mode="after")
    def _agree(self) -> Calibration:
        names = [spec["name"] for spec in self.judges]
        entropy_label = SET_METRICS.get("entropy").signed_label
        is_entropy = self.signal.startswith(f"{entropy_label} (")
        if is_entropy and self.entropy_judge is None:
            raise inconsistent(f"entropy_judge: null, but the signal {self.signal!r} is the clustering "
                               "entropy: it must name the judge it clusters by")
        if not is_entropy and self.entropy_judge is not None:
            raise inconsistent(f"entropy_judge: {self.entropy_judge!r} given, but the signal "
                               f"{self.signal!r} is not the clustering entropy (null)")
        known = computable_signals(names, self.entropy_judge)
        if self.signal not in known:
            listed = ", ".join(names) or "none"
            raise inconsistent(f"signal: {self.signal!r} is not a signal that the listed judges ({listed}) "
                               f"compute; they compute: {', '.join(known)}")
        if list(known[self.signal]) != names:
            raise inconsistent(f"judges: the signal {self.signal!r} reads "
                               f"{', '.join(known[self.signal]) or 'no judge'}, but the file lists "
                               f"{', '.join(names) or 'none'}")
        if self.method != self.map.kind:
            raise inconsistent(f"method: {self.method!r}, but the map is {self.map.kind!r}")
        control = self.risk_control
        if self.rule == "risk-controlled":
            if control is None:
                raise inconsistent("risk_control: null, but the rule is 'risk-controlled' (it records the "
                                   "test its threshold passed)")
            if self.decline_below != control.threshold:
                raise inconsistent(f"decline_below: {shown(self.decline_below)}, but a risk-controlled rule "
                                   f"declines below the threshold it tested, risk_control.threshold = "
                                   f"{shown(control.threshold)}")
            if control.fit_questions + control.control_questions != self.units:
                raise inconsistent(f"risk_control: {control.fit_questions} fitted + "
                                   f"{control.control_questions} tested questions, but units is {self.units}")
        else:
            if control is not None:
                raise inconsistent("risk_control: given, but the rule is 'min-confidence' (null)")
            if self.decline_below is None:
                raise inconsistent("decline_below: null (decline everything) is a risk-controlled rule's "
                                   "outcome; a 'min-confidence' rule needs a number in [0, 1]")
        if self.out_of_sample.units != self.units:
            raise inconsistent(f"out_of_sample.units: {self.out_of_sample.units}, but units is {self.units}")
        if self.units + self.dropped != self.run.questions:
            raise inconsistent(f"run.questions: {self.run.questions}, but units + dropped is "
                               f"{self.units + self.dropped}")
        return self

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
        excess_aurc=Difference.of(estimate(excess_aurc, calibrated, y, **boot)),
        aurc_raw=Interval.of(estimate(aurc, raw, y, **boot)),
        ece=Interval.of(estimate(ece, calibrated, y, **boot)),
        ece_raw=Interval.of(estimate(ece, raw, y, **boot)) if raw_is_probability else None,
        ece_change=Difference.of(paired_difference(ece, raw, calibrated, y, **boot)) if raw_is_probability
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
        raise CalibrationError(f"{plural(len(part.ids), 'question is', 'questions are')} too few to split "
                               "for risk control")
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
                     folds: int = FOLDS, bins: int = 10, replicates: int = 1000, seed: int = 0,
                     label: str = A2C_LABEL) -> Calibration:
    """Fit a calibration on a finished run (module docstring); `label` is the selection method whose picks'
    accuracy is the label (`a2c`; `main`, a samples run's main answers)."""
    sims = config.accuracy.columns
    similarity = similarity or default_similarity(sims)
    units = run_units(store, source, similarity, judges=[j.name for j in config.judges],
                      entropy_judge=config.entropy_judge_name, similarities=sims, label=label)
    # with risk control the signal is chosen on the fitting half only: the tested half's labels choose nothing
    choosing = units if max_risk is None else units.subset(~split_halves(units.ids, seed))
    cv = signal_aurcs(choosing, method, folds=folds, seed=seed)
    if signal is not None and signal not in units.signals:
        raise CalibrationError(f"unknown signal {signal!r}; this run has: {', '.join(units.signals)}")
    if signal is None and not cv:
        elsewhere = {other: _usable_elsewhere(store, config, other, similarity, sims,
                                              halves=max_risk is not None, seed=seed, label=label)
                     for other in SOURCES if other != source}
        raise no_usable_signal(source, len(units.signals), elsewhere)
    chosen = signal or choose_signal(cv)
    part = units.defined(chosen)
    if len(part.ids) < 2 * folds:
        raise CalibrationError(f"signal {chosen!r} is defined on {plural(len(part.ids), 'question')} of "
                               f"source {source!r}: too few to fit and cross-fit ({2 * folds} at least)")
    if len(np.unique(part.correct)) < 2:
        every = "accurate" if part.correct[0] else "inaccurate"
        whose = "A2C answer" if label == A2C_LABEL else f"{label!r} pick"
        raise CalibrationError(f"every {whose} of source {source!r} is {every}: nothing to calibrate "
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
        out_of_sample=figures, run=run_record(store, config, len(units.ids) + units.dropped), label=label)


def _usable_elsewhere(store: Store, config: ExperimentConfig, source: Source, similarity: str,
                      similarities: Sequence[str], *, halves: bool, seed: int, label: str = A2C_LABEL
                      ) -> list[str]:
    """The usable signals of another source, on the units the signal would be chosen on there (the
    fitting half with risk control); none where that source has no labelled A2C answers."""
    try:
        units = run_units(store, source, similarity, judges=[j.name for j in config.judges],
                          entropy_judge=config.entropy_judge_name, similarities=similarities, label=label)
    except CalibrationError:
        return []
    return usable_signals(units.subset(~split_halves(units.ids, seed)) if halves else units)


def write_calibration(calibration: Calibration, path: Path) -> None:
    path.write_text(json.dumps(calibration.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


def _where(loc: Sequence[int | str]) -> str:
    """A pydantic location as a field path: `map.y[2]`, `out_of_sample.coverage_at_risk["0.1"].low`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(top level)"


def _described(error: Mapping[str, Any]) -> str:
    """One pydantic error as `field: what is wrong`, saying what was given where the message does not."""
    where = _where(error["loc"])
    kind = error["type"]
    if kind == "missing":
        return f"{where}: missing"
    if kind == "extra_forbidden":
        return f"{where}: unknown key"
    if kind == "inconsistent" and not error["loc"]:  # the file's fields disagree: the message names them
        return str(error["msg"])
    if kind in ("number", "whole_number", "inconsistent"):
        return f"{where}: {error['msg']}"
    return f"{where}: {error['msg']}, got {shown(error['input'])}"


def _non_finite(value: Any, loc: tuple[int | str, ...] = ()) -> tuple[tuple[int | str, ...], float] | None:
    """(where, value) of the first NaN or ±Infinity in a JSON value (in its free-form parts too), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return loc, value
    items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) \
        else ()
    for key, item in items:
        found = _non_finite(item, (*loc, key))
        if found is not None:
            return found
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise ValueError(f"key {twice!r} is given twice in one object")
    return dict(pairs)


def read_calibration(path: Path) -> Calibration:
    """A calibration file, read strictly, or CalibrationError in one line naming the field: missing, not
    JSON, not a calibration, newer, or a field that is missing, of the wrong type, not a finite number in
    its range (JSON's NaN and Infinity are refused anywhere), a map that is not monotone, or fields that
    disagree (`Calibration`).

    Args:
        path: the `calibration.json` of `a2c calibrate`.

    Returns:
        The calibration.
    """
    text = read_text(path, CalibrationError, what="calibration file")
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except ValueError as exc:
        raise CalibrationError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, Mapping) or data.get("format") != CALIBRATION_FORMAT:
        raise CalibrationError(f"{path}: not an a2c calibration file (its \"format\" is not "
                               f"\"{CALIBRATION_FORMAT}\"; `a2c calibrate RUN_DIR` makes one)")
    if "version" not in data:
        raise CalibrationError(f"{path}: version: missing")
    version = data["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise CalibrationError(f"{path}: version: must be a whole number, got {shown(version)}")
    if version > CALIBRATION_VERSION:
        raise CalibrationError(f"{path}: calibration version {version} is newer than this a2c reads "
                               f"({CALIBRATION_VERSION}): upgrade a2c, or calibrate again")
    if version < CALIBRATION_VERSION:
        raise CalibrationError(f"{path}: version: {version} is no calibration version (this a2c reads "
                               f"{CALIBRATION_VERSION})")
    try:
        calibration = Calibration.model_validate(data)
    except ValidationError as exc:
        raise CalibrationError(f"{path}: {_described(exc.errors(include_url=False)[0])}") from None
    bad = _non_finite(data)  # the typed fields refused it above; this is the free-form parts (run.settings)
    if bad is not None:
        raise CalibrationError(f"{path}: {_where(bad[0])}: must be a finite number, got {shown(bad[1])}")
    return calibration
