"""Perturbations of classification items: each turns one item into the inputs a suite compares.

A perturbation is registered by name in `PERTURBATIONS` with the check of whether it applies to a config
and the function building its inputs; the name becomes the `kind` of the input rows, which is how the
suites (`a2c.classification.suites`) find the predictions they pair. Only `original` applies to derived
items (BECEL's transitive/additive items are labelled as given, never perturbed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from a2c.classification.config import ClassificationConfig
from a2c.classification.data import ClassificationItem
from a2c.classification.labeling import pair_input, single_input
from a2c.classification.rows import InputRow, RewriteRow
from a2c.common.registry import Registry
from a2c.metrics.calm import parse_indicator_pair, reverse_input, signal_inputs

Rewrites = Mapping[tuple[str, str], list[RewriteRow]]  # (item, kind) → rows in slot order


@dataclass(frozen=True)
class Perturbation:
    applies: Callable[[ClassificationConfig], bool]
    build: Callable[[ClassificationItem, ClassificationConfig, Rewrites], list[InputRow]]


PERTURBATIONS: Registry[Perturbation] = Registry("perturbation", group="a2c.perturbations")


def render(item: ClassificationItem, config: ClassificationConfig) -> str:
    """The item as the labelling prompt shows it."""
    lab = config.labeling
    if config.dataset.input == "single":
        return single_input(item.field("text"), lab.text_indicator, lab.separator)
    return pair_input(item.field("premise"), item.field("hypothesis"), lab.indicators, lab.separator)


def content_free_input(filler: str, config: ClassificationConfig) -> str:
    """A content-free input for contextual calibration: every text field holds `filler` ("N/A"), rendered as
    the items are, so it differs from them only in content."""
    blank = ClassificationItem(id="content-free", label=config.dataset.labels[0], text=filler, premise=filler,
                               hypothesis=filler)
    return render(blank, config)


def _row(item: ClassificationItem, kind: str, slot: int, variant: str | None, text: str,
         gold: str | None = None) -> InputRow:
    return InputRow(key=f"{item.id}|{kind}|{slot}", item=item.id, kind=kind, slot=slot, variant=variant,
                    text=text, gold=gold or item.label)


def _register(name: str, applies: Callable[[ClassificationConfig], bool]) -> Callable[..., object]:
    def add(build: Callable[[ClassificationItem, ClassificationConfig, Rewrites], list[InputRow]]) -> object:
        PERTURBATIONS.register(name)(Perturbation(applies, build))
        return build

    return add


def _pairs(config: ClassificationConfig) -> bool:
    return config.dataset.input == "pair"


@_register("original", lambda config: True)
def original(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    return [_row(item, "original", 0, None, render(item, config))]


@_register("paraphrase", lambda config: config.suites.paraphrastic.enabled)
def paraphrase(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    """Paper 003: the target field replaced by each LLM paraphrase that passed its checks (same label)."""
    return [_row(item, "paraphrase", r.slot, r.technique,
                 render(item.with_field(config.paraphrase_field, r.text), config))
            for r in rewrites.get((item.id, "paraphrase"), []) if r.ok]


def _negation_field(config: ClassificationConfig) -> str:
    return "hypothesis" if config.dataset.input == "pair" else "text"


@_register("negation", lambda config: config.suites.becel.enabled)
def negation(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    """Paper 001: the hypothesis negated (the data's, else the LLM's); gold is the flipped label."""
    field = _negation_field(config)
    if item.negated_hypothesis is not None:
        text, origin, gold = item.negated_hypothesis, "data", item.negated_label
    else:
        written = [r for r in rewrites.get((item.id, "negation"), []) if r.ok]
        if not written:
            return []
        text, origin = written[0].text, "llm"
        gold = config.suites.becel.negation_labels[item.label]
    return [_row(item, "negation", 0, origin, render(item.with_field(field, text), config), gold)]


@_register("symmetric", lambda config: config.suites.becel.enabled and _pairs(config))
def symmetric(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    """Paper 001: premise and hypothesis swapped (indicators stay) for labels that survive the swap."""
    if item.label not in config.suites.becel.symmetric_labels:
        return []
    swapped = replace(item, premise=item.hypothesis, hypothesis=item.premise)
    return [_row(item, "symmetric", 0, None, render(swapped, config))]


@_register("reverse", lambda config: config.suites.calm.enabled and _pairs(config))
def reverse(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    """Paper 004 REVERSE: the two sentences swapped together with their indicators."""
    lab = config.labeling
    text = reverse_input(render(item, config), lab.indicators, lab.separator)
    return [_row(item, "reverse", 0, None, text)]


def signal_texts(text: str, symbols: list[str], indicators: tuple[str, str], separator: str) -> list[str]:
    """Paper 004 SIGNAL, Table 7: a one-character symbol replaces the separator (`Premise;`), a pair of
    characters wraps the indicator instead (`[Premise]`)."""
    suffixes = [s for s in symbols if len(s) == 1]
    by_suffix = dict(zip(suffixes, signal_inputs(text, suffixes, indicators, separator), strict=True)) \
        if suffixes else {}
    pair = parse_indicator_pair(text, indicators, separator)
    out = []
    for symbol in symbols:
        if len(symbol) == 1:
            out.append(by_suffix[symbol])
        else:
            left, right = tuple(symbol)  # the two characters that wrap the indicator
            out.append(f"{left}{pair.first_indicator}{right} {pair.first_text}{pair.gap}"
                       f"{left}{pair.second_indicator}{right} {pair.second_text}")
    return out


@_register("signal", lambda config: config.suites.calm.enabled and _pairs(config))
def signal(item: ClassificationItem, config: ClassificationConfig, rewrites: Rewrites) -> list[InputRow]:
    lab = config.labeling
    symbols = config.suites.calm.used_symbols
    texts = signal_texts(render(item, config), symbols, lab.indicators, lab.separator)
    return [_row(item, "signal", slot, symbol, text)
            for slot, (symbol, text) in enumerate(zip(symbols, texts, strict=True))]


def build_inputs(items: list[ClassificationItem], config: ClassificationConfig, rewrites: Rewrites
                 ) -> list[InputRow]:
    """Every input of the run, item-major, in registry order; derived items only as given."""
    kinds = [name for name in PERTURBATIONS if PERTURBATIONS.get(name).applies(config)]
    kinds.sort(key=lambda name: name != "original")
    rows: list[InputRow] = []
    for item in items:
        for name in kinds if not item.derived else ["original"]:
            rows += PERTURBATIONS.get(name).build(item, config, rewrites)
    return rows
