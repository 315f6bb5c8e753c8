import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.metrics import (
    DEFAULT_SIGNAL_SYMBOLS,
    parse_indicator_pair,
    reverse_consistency,
    reverse_input,
    signal_consistency,
    signal_inputs,
)

PAIR = "Premise: A man is sleeping on a bench.\nHypothesis: Someone is resting."


def test_reverse_moves_the_indicators_with_their_sentences():
    assert reverse_input(PAIR) == "Hypothesis: Someone is resting.\nPremise: A man is sleeping on a bench."
    assert reverse_input("Premise:a Hypothesis:b") == "Hypothesis: b Premise: a"


def test_reverse_with_other_indicators_and_separator():
    text = "Sentence1 - Cats purr. Sentence2 - Dogs bark."
    swapped = reverse_input(text, ("Sentence1", "Sentence2"), " -")
    assert swapped == "Sentence2 - Dogs bark. Sentence1 - Cats purr."


sentence = st.text(alphabet="abc xyz.,?", min_size=1).map(str.strip).filter(bool)


@given(sentence, sentence)
def test_reverse_twice_restores_the_pair(first, second):
    text = f"Premise: {first} Hypothesis: {second}"
    back = reverse_input(reverse_input(text), ("Hypothesis", "Premise"))
    assert back == text


def test_signal_replaces_the_separator_after_both_indicators():
    variants = signal_inputs(PAIR)
    assert len(variants) == len(DEFAULT_SIGNAL_SYMBOLS) == 10
    assert len(set(variants)) == 10
    assert variants[0] == "Premise# A man is sleeping on a bench.\nHypothesis# Someone is resting."
    for symbol, variant in zip(DEFAULT_SIGNAL_SYMBOLS, variants, strict=True):
        pair = parse_indicator_pair(variant, separator=symbol)
        assert (pair.first_text, pair.second_text) == ("A man is sleeping on a bench.", "Someone is resting.")
    assert signal_inputs(PAIR, symbols=["@", "->"]) == [
        "Premise@ A man is sleeping on a bench.\nHypothesis@ Someone is resting.",
        "Premise-> A man is sleeping on a bench.\nHypothesis-> Someone is resting.",
    ]


def test_perturbation_bad_input():
    with pytest.raises(ValueError, match="not formatted"):
        reverse_input("A man is sleeping. Someone is resting.")
    with pytest.raises(ValueError, match="not formatted"):
        signal_inputs("Hypothesis: b Premise: a")
    with pytest.raises(ValueError, match="at least one"):
        signal_inputs(PAIR, symbols=[])
    with pytest.raises(ValueError, match="differ from the original separator"):
        signal_inputs(PAIR, symbols=[":", "#"])


def test_reverse_consistency():
    assert reverse_consistency(["e", "n", "c", "e"], ["e", "c", "c", "n"]) == 0.5
    with pytest.raises(ValueError, match="differ in length"):
        reverse_consistency(["e"], [])


def test_signal_consistency_with_thresholds():
    original = ["e", "n", "c"]
    variants = [["e", "e"], ["n", "x"], ["y", "y"]]  # pass rates 1, 1/2, 0
    assert signal_consistency(original, variants) == pytest.approx(1 / 3)
    assert signal_consistency(original, variants, threshold=0.5) == pytest.approx(2 / 3)
    seven_of_ten = [["a"] * 7 + ["b"] * 3]
    assert signal_consistency(["a"], seven_of_ten, threshold=0.7) == 1.0
    assert signal_consistency(["a"], seven_of_ten, threshold=0.71) == 0.0


@pytest.mark.parametrize(
    ("original", "variants", "threshold", "message"),
    [
        (["a"], [["a"]], 0.0, "outside"),
        (["a"], [["a"]], 1.5, "outside"),
        (["a", "b"], [["a"]], 1.0, "SIGNAL rows"),
        (["a"], [[]], 1.0, "item 0 has no SIGNAL"),
        ([], [], 1.0, "no predictions"),
    ],
)
def test_signal_consistency_bad_input(original, variants, threshold, message):
    with pytest.raises(ValueError, match=message):
        signal_consistency(original, variants, threshold)
