"""Which predictions feed which metric: the four papers' suites over a run's labelled inputs.

Every metric is the paper's function from `a2c.metrics`; this module only pairs predictions. Two rules for
unparsed replies (no label read), applied everywhere:
- metrics of *correctness* (accuracy, P_C, RC, the conditions of BECEL's conditional τ) count an unparsed
  reply as not correct — the model did not give the right label;
- metrics of *agreement between two predictions* (τ_sem, τ_sym, τ_neg, C_R, C_S) use only pairs whose
  both replies were parsed — an unparsed reply has no label to compare; the left-out pairs are counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from a2c.classification.config import ClassificationConfig
from a2c.classification.data import ClassificationItem
from a2c.classification.rows import InputRow, LabelRow
from a2c.metrics import becel as becel_metrics
from a2c.metrics.calm import reverse_consistency, signal_consistency
from a2c.metrics.contrast import contrast_set_scores
from a2c.metrics.paraphrastic import (
    min_paraphrastic_consistency,
    paraphrastic_accuracy,
    paraphrastic_consistency,
    proportion_of_variance_attributable_to_paraphrasing,
    variance_attributable_to_paraphrasing,
)


class Predictions:
    """The labelled inputs of a run, looked up by (item, kind): each input with its label (None: unparsed)."""

    def __init__(self, inputs: Sequence[InputRow], labels: dict[str, LabelRow]) -> None:
        self.labels = labels
        self._by: dict[tuple[str, str], list[tuple[InputRow, str | None]]] = defaultdict(list)
        for row in inputs:
            if row.key in labels:
                self._by[(row.item, row.kind)].append((row, labels[row.key].label))

    def of(self, item: str, kind: str) -> list[tuple[InputRow, str | None]]:
        return self._by.get((item, kind), [])

    def original(self, item: str) -> str | None:
        found = self.of(item, "original")
        return found[0][1] if found else None


@dataclass
class PairedScore:
    """An agreement metric over prediction pairs: its value, the pairs used and those left out."""

    value: float | None
    pairs: int
    unparsed: int


def _paired(preds: Predictions, originals: Sequence[ClassificationItem], kind: str
            ) -> tuple[list[str], list[str], int]:
    """(original predictions, perturbed predictions, pairs left out) over every input of `kind`."""
    first, second, left_out = [], [], 0
    for item in originals:
        base = preds.original(item.id)
        for _, label in preds.of(item.id, kind):
            if base is None or label is None:
                left_out += 1
            else:
                first.append(base)
                second.append(label)
    return first, second, left_out


@dataclass
class ContrastRow:
    bundle_size: int | None  # None: every bundle, sizes mixed
    bundles: int
    instances: int
    accuracy: float
    consistency: float
    relative_consistency: float | None


@dataclass
class ContrastSuite:
    rows: list[ContrastRow]
    unparsed: int
    single_bundles: int  # bundles of one item: no contrast, left out


def contrast_suite(originals: Sequence[ClassificationItem], preds: Predictions) -> ContrastSuite | None:
    """Paper 000: per bundle size b (RC needs one b) and over every bundle."""
    members: dict[str, list[ClassificationItem]] = defaultdict(list)
    for item in originals:
        if item.bundle is not None:
            members[item.bundle].append(item)
    singles = sum(len(m) == 1 for m in members.values())
    bundles = {b: m for b, m in members.items() if len(m) >= 2}
    if not bundles:
        return None

    def row(size: int | None, chosen: dict[str, list[ClassificationItem]]) -> ContrastRow:
        flat = [(b, item) for b, items in chosen.items() for item in items]
        scores = contrast_set_scores([preds.original(i.id) for _, i in flat], [i.label for _, i in flat],
                                     [b for b, _ in flat])
        return ContrastRow(size, scores.n_bundles, scores.n_instances, scores.accuracy, scores.consistency,
                           scores.relative_consistency)

    sizes = sorted({len(m) for m in bundles.values()})
    rows = [row(size, {b: m for b, m in bundles.items() if len(m) == size}) for size in sizes]
    if len(sizes) > 1:
        rows.append(row(None, bundles))
    unparsed = sum(preds.original(i.id) is None for m in bundles.values() for i in m)
    return ContrastSuite(rows, unparsed, singles)


@dataclass
class ParaphrasticSuite:
    accuracy_original: float  # A_O: the items as given
    accuracy_buckets: float  # A over buckets (E[θ])
    consistency: float  # P_C
    min_consistency: float  # 1 − 2A(1−A) at A = accuracy_buckets
    vap: float
    pvap: float | None
    buckets: int
    phrasings: int
    small_buckets: int  # buckets with one phrasing only: left out
    unparsed: int  # phrasings with no label read (scored as not correct)


def paraphrastic_suite(originals: Sequence[ClassificationItem], preds: Predictions
                       ) -> ParaphrasticSuite | None:
    """Paper 003: a bucket is an item's phrasings (as given and paraphrased), merged over a data `group`."""
    buckets: dict[str, list[tuple[str, str | None]]] = defaultdict(list)  # key → (gold, predicted)
    for item in originals:
        key = f"group:{item.group}" if item.group is not None else f"item:{item.id}"
        for kind in ("original", "paraphrase"):
            buckets[key] += [(row.gold, label) for row, label in preds.of(item.id, kind)]
    kept = [b for b in buckets.values() if len(b) >= 2]
    if not kept:
        return None
    correct = [[int(pred == gold) for gold, pred in b] for b in kept]
    accuracy = paraphrastic_accuracy(correct)
    given = [(item.label, preds.original(item.id)) for item in originals]
    return ParaphrasticSuite(
        accuracy_original=sum(p == g for g, p in given) / len(given), accuracy_buckets=accuracy,
        consistency=paraphrastic_consistency(correct), min_consistency=min_paraphrastic_consistency(accuracy),
        vap=variance_attributable_to_paraphrasing(correct),
        pvap=proportion_of_variance_attributable_to_paraphrasing(correct), buckets=len(kept),
        phrasings=sum(len(b) for b in kept), small_buckets=len(buckets) - len(kept),
        unparsed=sum(pred is None for b in kept for _, pred in b))


@dataclass
class ConditionalScore:
    value: float | None
    derived: int  # derived items of this kind
    conditioned: int  # of them, those whose two sources were predicted right (the set C)


@dataclass
class BecelSuite:
    semantic: PairedScore
    negational: PairedScore
    symmetric: PairedScore
    transitive: ConditionalScore
    additive: ConditionalScore
    negation_origins: dict[str, int] = field(default_factory=dict)  # data / llm


def _agreement(preds: Predictions, originals: Sequence[ClassificationItem], kind: str, metric) -> PairedScore:
    first, second, left_out = _paired(preds, originals, kind)
    return PairedScore(metric(first, second) if first else None, len(first), left_out)


def _conditional(preds: Predictions, originals: Sequence[ClassificationItem],
                 derived: Sequence[ClassificationItem], kind: str) -> ConditionalScore:
    chosen = [d for d in derived if d.derivation == kind]
    index = {item.id: k for k, item in enumerate(originals)}
    original_labels = [item.label for item in originals]
    original_preds = [preds.original(item.id) for item in originals]
    sources = [(index[d.sources[0]], index[d.sources[1]]) for d in chosen]
    value = becel_metrics.conditional_inconsistency(
        sources, [d.label for d in chosen], [preds.original(d.id) for d in chosen], original_labels,
        original_preds) if chosen else None
    right = [p == y for p, y in zip(original_preds, original_labels, strict=True)]
    return ConditionalScore(value, len(chosen), sum(right[i] and right[j] for i, j in sources))


def becel_suite(originals: Sequence[ClassificationItem], derived: Sequence[ClassificationItem],
                preds: Predictions) -> BecelSuite:
    """Paper 001's five inconsistencies τ (lower is better)."""
    origins = Counter(row.variant or "" for item in originals for row, _ in preds.of(item.id, "negation"))
    return BecelSuite(
        semantic=_agreement(preds, originals, "paraphrase", becel_metrics.semantic_inconsistency),
        negational=_agreement(preds, originals, "negation", becel_metrics.negational_inconsistency),
        symmetric=_agreement(preds, originals, "symmetric", becel_metrics.symmetric_inconsistency),
        transitive=_conditional(preds, originals, derived, "transitive"),
        additive=_conditional(preds, originals, derived, "additive"),
        negation_origins=dict(sorted(origins.items())))


@dataclass
class CalmSuite:
    accuracy: float  # on the items as given (the paper's Acc column)
    reverse: PairedScore  # C_R
    signal: PairedScore  # C_S; pairs = items with a parsed original and at least one parsed variant
    k: int
    threshold: float
    signal_unparsed_variants: int


def calm_suite(originals: Sequence[ClassificationItem], preds: Predictions, config: ClassificationConfig
               ) -> CalmSuite:
    """Paper 004: C_R over REVERSE pairs, C_S over each item's k SIGNAL variants at threshold θ."""
    first, second, left_out = _paired(preds, originals, "reverse")
    reverse = PairedScore(reverse_consistency(first, second) if first else None, len(first), left_out)
    bases, variants, skipped, unparsed_variants = [], [], 0, 0
    for item in originals:
        base = preds.original(item.id)
        parsed = [label for _, label in preds.of(item.id, "signal") if label is not None]
        unparsed_variants += len(preds.of(item.id, "signal")) - len(parsed)
        if base is None or not parsed:
            skipped += 1
            continue
        bases.append(base)
        variants.append(parsed)
    threshold = config.suites.calm.threshold
    signal = PairedScore(signal_consistency(bases, variants, threshold) if bases else None, len(bases),
                         skipped)
    accuracy = sum(preds.original(i.id) == i.label for i in originals) / len(originals)
    return CalmSuite(accuracy, reverse, signal, len(config.suites.calm.used_symbols), threshold,
                     unparsed_variants)


@dataclass
class KindCounts:
    inputs: int
    unparsed: int
    accuracy: float  # share of inputs labelled with their gold label (unparsed: not correct)


SCHEMA_VERSION: Final = 2  # 1: the untyped dict of a2c ≤ 0.1 (no `schema_version` key)


class Summary(BaseModel):
    """What `summary.json` holds for a classification run (pydantic, so it reads back typed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[2] = SCHEMA_VERSION
    name: str
    model: str
    items: int
    derived_items: int
    kinds: dict[str, KindCounts]
    read_methods: dict[str, int]
    rewrites: dict[str, dict[str, int]]  # kind → {written, failed, <problem>: n}
    contrast: ContrastSuite | None
    paraphrastic: ParaphrasticSuite | None
    becel: BecelSuite | None
    calm: CalmSuite | None
    label_counts: dict[str, int]  # over every input, in label-set order, then "unparsed"
    content_free: dict[str, float] | None  # what the labels were calibrated against; None: not calibrated


def summarize(config: ClassificationConfig, items: Sequence[ClassificationItem], inputs: Sequence[InputRow],
              labels: Sequence[LabelRow], rewrites: Sequence) -> Summary:
    """Every suite the config enables, with the counts the report shows."""
    preds = Predictions(inputs, {row.key: row for row in labels})
    originals = [i for i in items if not i.derived]
    derived = [i for i in items if i.derived]
    suites = config.suites
    kinds: dict[str, KindCounts] = {}
    for kind in dict.fromkeys(row.kind for row in inputs):
        rows = [(row, preds.labels[row.key].label) for row in inputs if row.kind == kind]
        kinds[kind] = KindCounts(len(rows), sum(label is None for _, label in rows),
                                 sum(label == row.gold for row, label in rows) / len(rows))
    written: dict[str, dict[str, int]] = {}
    for row in rewrites:
        counts = written.setdefault(row.kind, {"written": 0, "failed": 0})
        counts["written"] += 1
        if not row.ok:
            counts["failed"] += 1
            counts[row.problem or "failed"] = counts.get(row.problem or "failed", 0) + 1
    pairs = config.dataset.input == "pair"
    given = Counter(row.label or "unparsed" for row in labels)
    label_counts = {label: given[label] for label in [*config.dataset.labels, "unparsed"]}
    content_free = next((row.content_free for row in labels if row.content_free is not None), None)
    return Summary(
        name=config.name, model=config.generator.model, items=len(originals), derived_items=len(derived),
        kinds=kinds, read_methods=dict(Counter(row.method for row in labels)), rewrites=written,
        contrast=contrast_suite(originals, preds) if suites.contrast.enabled else None,
        paraphrastic=paraphrastic_suite(originals, preds) if suites.paraphrastic.enabled else None,
        becel=becel_suite(originals, derived, preds) if suites.becel.enabled else None,
        calm=calm_suite(originals, preds, config) if suites.calm.enabled and pairs else None,
        label_counts=label_counts, content_free=content_free)
