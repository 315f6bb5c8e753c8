"""Classification task, fast tier: label reading, each perturbation, and which prediction pairs feed which
metric — expected values worked out by hand in the comments."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from a2c.classification.config import CALM_SYMBOLS, ClassificationConfig
from a2c.classification.data import load_items
from a2c.classification.labeling import read_label
from a2c.classification.perturbations import PERTURBATIONS, build_inputs, signal_texts
from a2c.classification.rows import LabelRow, RewriteRow
from a2c.classification.suites import summarize
from a2c.llm.base import Completion

E, N, C = "entailment", "neutral", "contradiction"
WORDS = {E: E, N: N, C: C}


# -- reading labels -----------------------------------------------------------------------------------------

def test_label_from_logprobs_sums_each_labels_first_tokens():
    # "ent" starts only entailment, "Ne"/"neutral" only neutral; "The" none: P(E) = 0.3 / (0.3 + 0.1 + 0.1)
    top = {"The": math.log(0.4), "ent": math.log(0.3), "Ne": math.log(0.1), " neutral": math.log(0.1)}
    reading = read_label(Completion("The answer", logprobs=[top]), WORDS)
    assert reading.label == E and reading.method == "logprobs"
    assert reading.probabilities[E] == pytest.approx(0.6)
    assert reading.probabilities[N] == pytest.approx(0.4)


def test_label_from_a_later_position_and_ambiguous_prefixes_are_ignored():
    words = {"not_entailment": "not_entailment", "neutral": "neutral"}
    # "n" starts both words: no evidence; the second position's "neut" decides
    positions = [{"n": 0.0}, {"neut": math.log(0.2), "not": math.log(0.1)}]
    reading = read_label(Completion("neutral", logprobs=positions), words)
    assert reading.label == "neutral"
    assert reading.probabilities["neutral"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(("reply", "label"), [
    ("I think it is neutral.", N), ("Contradiction", C), ("entail", E),  # cut by the token budget
    ("no idea", None), ("", None), ("entailment or contradiction", E)])  # the first label word counts
def test_label_from_text_when_no_logprobs(reply, label):
    reading = read_label(Completion(reply), WORDS)
    assert reading.label == label
    assert reading.method == ("unparsed" if label is None else "text")


# -- items and perturbations ----------------------------------------------------------------------

def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ITEMS = [
    dict(id="a", premise="Pa", hypothesis="Ha", label=E, bundle="x", negated_hypothesis="not Ha"),
    dict(id="b", premise="Pb", hypothesis="Hb", label=C, bundle="x"),
    dict(id="c", premise="Pc", hypothesis="Hc", label=E, bundle="y"),
    dict(id="d", premise="Pd", hypothesis="Hd", label=N, bundle="y"),
    dict(id="e", premise="Pe", hypothesis="He", label=C, group="g"),
    dict(id="f", premise="Pf", hypothesis="Hf", label=C, group="g"),
    dict(id="t", premise="Pa", hypothesis="Hc", label=E, derivation="transitive", sources=["a", "c"]),
    dict(id="u", premise="Pa", hypothesis="Hb", label=C, derivation="transitive", sources="a,b"),
]


def _config(path: Path, **suites: Any) -> ClassificationConfig:
    return ClassificationConfig.model_validate({
        "name": "unit", "dataset": {"path": str(path), "labels": [E, N, C]},
        "suites": {"paraphrastic": {"techniques": ["synonyms", "word forms"]}, "calm": {"k": 3}, **suites}})


def _rewrite(item: str, kind: str, slot: int, text: str, ok: bool = True) -> RewriteRow:
    return RewriteRow(item=item, kind=kind, slot=slot, technique=None if kind == "negation" else
                      ["synonyms", "word forms"][slot], source="", text=text, ok=ok,
                      problem=None if ok else "identical")


REWRITES = [
    _rewrite("a", "paraphrase", 0, "Ha1"), _rewrite("a", "paraphrase", 1, "Ha2"),
    *[_rewrite(i, "paraphrase", 0, f"H{i}1") for i in "bcef"],
    *[_rewrite(i, "paraphrase", 1, f"H{i}", ok=False) for i in "bcdef"],
    _rewrite("d", "paraphrase", 0, "Hd", ok=False),
    _rewrite("c", "negation", 0, "Hc", ok=False),  # failed: c gets no negation input
]


def _grouped(rows: list[RewriteRow]) -> dict[tuple[str, str], list[RewriteRow]]:
    out: dict[tuple[str, str], list[RewriteRow]] = {}
    for r in rows:
        out.setdefault((r.item, r.kind), []).append(r)
    return out


@pytest.fixture
def setup(tmp_path):
    config = _config(_write(tmp_path / "items.jsonl", ITEMS))
    items = load_items(config)
    return config, items, build_inputs(items, config, _grouped(REWRITES))


def test_each_perturbation_builds_the_papers_inputs(setup):
    _, _, inputs = setup
    by_key = {row.key: row for row in inputs}
    assert by_key["a|original|0"].text == "Premise: Pa\nHypothesis: Ha"
    # CALM REVERSE: sentences swap with their indicators; BECEL symmetric: texts swap, indicators stay
    assert by_key["a|reverse|0"].text == "Hypothesis: Ha\nPremise: Pa"
    assert by_key["b|symmetric|0"].text == "Premise: Hb\nHypothesis: Pb"
    assert "a|symmetric|0" not in by_key  # entailment is not a symmetric label
    # SIGNAL, paper Table 7: wrapped indicators and replaced separators, first k = 3 symbols
    assert [by_key[f"a|signal|{k}"].text for k in range(3)] == [
        "[Premise] Pa\n[Hypothesis] Ha", "{Premise} Pa\n{Hypothesis} Ha", "(Premise) Pa\n(Hypothesis) Ha"]
    assert "a|signal|3" not in by_key
    # negation: the data's, gold flipped entailment → contradiction; c's LLM negation failed its checks
    assert (by_key["a|negation|0"].text, by_key["a|negation|0"].gold, by_key["a|negation|0"].variant) == (
        "Premise: Pa\nHypothesis: not Ha", C, "data")
    assert "c|negation|0" not in by_key
    # paraphrases replace the hypothesis, keep the label; failed ones give no input
    assert by_key["a|paraphrase|1"].text == "Premise: Pa\nHypothesis: Ha2"
    assert by_key["a|paraphrase|1"].gold == E
    assert not [k for k in by_key if k.startswith("d|paraphrase")]
    # derived items are labelled as given, never perturbed
    assert [r.kind for r in inputs if r.item in ("t", "u")] == ["original", "original"]
    assert set(PERTURBATIONS.names()) == {"original", "paraphrase", "negation", "symmetric", "reverse",
                                          "signal"}


def test_llm_negation_is_used_where_the_data_gives_none(tmp_path):
    config = _config(_write(tmp_path / "items.jsonl", ITEMS))
    items = load_items(config)
    rewrites = _grouped([_rewrite("c", "negation", 0, "Hc is false")])
    row = next(r for r in build_inputs(items, config, rewrites) if r.key == "c|negation|0")
    assert (row.text, row.gold, row.variant) == ("Premise: Pc\nHypothesis: Hc is false", C, "llm")


def test_signal_symbols_default_to_the_papers_ten():
    texts = signal_texts("Premise: P\nHypothesis: H", list(CALM_SYMBOLS), ("Premise", "Hypothesis"), ":")
    assert len(texts) == 10 and len(set(texts)) == 10
    assert texts[3] == "<Premise> P\n<Hypothesis> H"
    assert texts[4] == "Premise; P\nHypothesis; H"
    assert texts[9] == "Premise- P\nHypothesis- H"


# predictions by (item, kind, slot); None = an unparsed reply
PREDICTED: dict[tuple[str, str, int], str | None] = {
    ("a", "original", 0): E, ("a", "negation", 0): E, ("a", "paraphrase", 0): E, ("a", "paraphrase", 1): N,
    ("b", "original", 0): C, ("b", "symmetric", 0): N, ("b", "paraphrase", 0): C,
    ("c", "original", 0): E, ("c", "paraphrase", 0): None,
    ("d", "original", 0): E,
    ("e", "original", 0): C, ("e", "symmetric", 0): C, ("e", "paraphrase", 0): C,
    ("f", "original", 0): None, ("f", "symmetric", 0): C, ("f", "paraphrase", 0): E,
    ("t", "original", 0): E, ("u", "original", 0): N,
    ("a", "reverse", 0): E, ("b", "reverse", 0): N, ("c", "reverse", 0): E, ("d", "reverse", 0): N,
    ("e", "reverse", 0): None, ("f", "reverse", 0): C,
    **{("a", "signal", k): E for k in range(3)},
    ("b", "signal", 0): C, ("b", "signal", 1): C, ("b", "signal", 2): N,
    ("c", "signal", 0): E, ("c", "signal", 1): None, ("c", "signal", 2): E,
    **{("d", "signal", k): E for k in range(3)},
    **{("e", "signal", k): None for k in range(3)},
    **{("f", "signal", k): C for k in range(3)},
}


def _labels(inputs) -> list[LabelRow]:
    rows = []
    for r in inputs:
        label = PREDICTED[(r.item, r.kind, r.slot)]
        rows.append(LabelRow(key=r.key, item=r.item, kind=r.kind, slot=r.slot, reply=label or "?",
                             label=label, method="text" if label else "unparsed", probabilities={}))
    return rows


def test_every_input_has_a_hand_prediction(setup):
    _, _, inputs = setup
    assert {(r.item, r.kind, r.slot) for r in inputs} == set(PREDICTED)


def test_suites_pair_the_right_predictions(setup):
    config, items, inputs = setup
    s = summarize(config, items, inputs, _labels(inputs), REWRITES)

    # 000: bundle x = (a ✓, b ✓) consistent, y = (c ✓, d ✗): a = 3 of 4, c = 1 of 2 bundles;
    # c_min = c_max = 1 for n = 2, a = 3, so RC = 1
    assert s.contrast is not None and len(s.contrast.rows) == 1
    row = s.contrast.rows[0]
    assert (row.bundle_size, row.bundles, row.instances) == (2, 2, 4)
    assert (row.accuracy, row.consistency, row.relative_consistency) == (0.75, 0.5, 1.0)

    # 003: buckets a = (✓ ✓ ✗) θ=2/3, b = (✓ ✓) 1, c = (✓, unparsed ✗) 1/2, group g = e (✓ ✓) + f (✗ ✗)
    # 1/2; d has one phrasing (left out). A = 2/3, VAP = (2/9 + 0 + 1/4 + 1/4)/4 = 13/72,
    # P_C = 1 − 26/72 = 23/36, Var(θ) = 1/24 = 3/72, PVAP = 13/16, min P_C = 1 − 2·(2/3)(1/3) = 5/9
    p = s.paraphrastic
    assert p is not None
    assert (p.buckets, p.phrasings, p.small_buckets, p.unparsed) == (4, 11, 1, 2)
    assert p.accuracy_buckets == pytest.approx(2 / 3)
    assert p.vap == pytest.approx(13 / 72)
    assert p.consistency == pytest.approx(23 / 36)
    assert p.pvap == pytest.approx(13 / 16)
    assert p.min_consistency == pytest.approx(5 / 9)
    assert p.accuracy_original == pytest.approx(4 / 6)  # a b c e right, d wrong, f unparsed

    # 001: τsem over (a,E|E) (a,E|N) (b,C|C) (e,C|C); c and f pairs left out → 1 − 3/4
    b = s.becel
    assert b is not None
    assert (b.semantic.value, b.semantic.pairs, b.semantic.unparsed) == (0.25, 4, 2)
    # τsym over b (C→N) and e (C→C); f's original unparsed → 1 − 1/2
    assert (b.symmetric.value, b.symmetric.pairs, b.symmetric.unparsed) == (0.5, 2, 1)
    # τneg: a keeps E after negation → inconsistent; c's negation failed → 1 of 1
    assert (b.negational.value, b.negational.pairs) == (1.0, 1)
    assert b.negation_origins == {"data": 1}
    # τtrn: t (sources a, c both right) correct, u (a, b both right) wrong → 1 − 1/2
    assert (b.transitive.value, b.transitive.conditioned, b.transitive.derived) == (0.5, 2, 2)
    assert (b.additive.value, b.additive.derived) == (None, 0)

    # 004: C_R over a (same), b (changed), c (same), d (changed); e, f left out → 2/4
    calm = s.calm
    assert calm is not None
    assert (calm.reverse.value, calm.reverse.pairs, calm.reverse.unparsed) == (0.5, 4, 2)
    # C_S at θ = 1: a 3/3, b 2/3 ✗, c 2/2 (one unparsed variant dropped), d 3/3 → 3 of 4; e, f left out
    assert (calm.signal.value, calm.signal.pairs, calm.signal.unparsed) == (0.75, 4, 2)
    assert calm.signal_unparsed_variants == 4 and calm.k == 3
    assert calm.accuracy == pytest.approx(4 / 6)

    assert s.kinds["original"].inputs == 8 and s.kinds["original"].unparsed == 1
    assert s.rewrites["paraphrase"] == {"written": 12, "failed": 6, "identical": 6}
    assert s.rewrites["negation"] == {"written": 1, "failed": 1, "identical": 1}


def test_signal_threshold_is_the_papers_pass_rate_bar(tmp_path):
    config = _config(_write(tmp_path / "items.jsonl", ITEMS), calm={"k": 3, "threshold": 0.6})
    items = load_items(config)
    inputs = build_inputs(items, config, _grouped(REWRITES))
    calm = summarize(config, items, inputs, _labels(inputs), REWRITES).calm
    assert calm is not None and calm.signal.value == 1.0  # b's 2/3 now reaches 0.6


def test_contrast_reports_each_bundle_size_and_rc_only_for_one_size(tmp_path):
    rows = [dict(id=f"{b}{k}", premise="P", hypothesis=f"H{b}{k}", label=E, bundle=b)
            for b, size in (("p", 2), ("q", 3), ("r", 3)) for k in range(size)]
    config = _config(_write(tmp_path / "items.jsonl", rows))
    items = load_items(config)
    inputs = build_inputs(items, config, {})
    # every instance right but r2: bundles of 3 → n=2, a=5, c=1; RC = μ(1,5)/C(6,5): c_min = 5−4 = 1 → 1.0
    labels = [LabelRow(key=r.key, item=r.item, kind=r.kind, slot=r.slot, reply="", method="text",
                       label=N if r.item == "r2" else E, probabilities={}) for r in inputs]
    contrast = summarize(config, items, inputs, labels, []).contrast
    assert contrast is not None
    by_size = {row.bundle_size: row for row in contrast.rows}
    assert set(by_size) == {2, 3, None}
    assert (by_size[3].accuracy, by_size[3].consistency, by_size[3].relative_consistency) == (5 / 6, 0.5, 1.0)
    assert (by_size[2].consistency, by_size[2].relative_consistency) == (1.0, 1.0)
    assert by_size[None].relative_consistency is None and by_size[None].instances == 8


@pytest.mark.parametrize(("sentence", "written", "problem"), [
    ("A boy is feeding birds.", "A boy is not feeding birds.", None),
    ("Someone is outdoors.", "No one is outdoors.", None),
    ("A cat can't swim.", "A cat can swim.", None),  # removing a negation negates too
    ("A boy is feeding birds.", "The boy is feeding a bird.", "not negated"),  # reworded, not negated
    ("A boy is feeding birds.", "A boy is feeding birds.", "identical"),
    ("A boy is feeding birds.", "A boy is not\nfeeding birds.", "multi-line"),
])
def test_written_negations_must_negate(sentence, written, problem):
    from a2c.classification.rewrite import negation_problem

    assert negation_problem(sentence, written) == problem


def test_a_constant_labeller_is_warned_about_and_a_varied_one_is_not():
    from a2c.classification.report import constant_labeller_warning

    warning = constant_labeller_warning({"entailment": 1, "neutral": 0, "contradiction": 39, "unparsed": 5})
    assert warning is not None and "98% of the inputs `contradiction`" in warning and "C_R" in warning
    varied = {"entailment": 3, "neutral": 0, "contradiction": 37, "unparsed": 0}
    assert constant_labeller_warning(varied) is None
    assert constant_labeller_warning({"entailment": 0, "unparsed": 4}) is None  # nothing labelled: no claim
