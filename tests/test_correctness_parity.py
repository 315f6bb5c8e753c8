"""SQuAD v1.1 exact match and token F1: a2c's values equal the published evaluation's, on hostile pairs.

The reference is the SQuAD v1.1 evaluation logic that lm-evaluation-harness ships (imported and run, not
copied): `lm_eval.tasks.qasper.metrics.normalize_answer` and `f1_abstractive` (the official v1.1
`normalize_answer` and `f1_score`; the latter reads the first item of its two lists) and
`lm_eval.api.metrics.metric_max_over_ground_truths` (v1.1's best over the aliases). v1.1's
`exact_match_score` is `normalize_answer(prediction) == normalize_answer(ground_truth)`; lm-eval has no
function of that form with v1.1's normalisation, so the test composes it from the installed
`normalize_answer`.

Why that package: of the installed SQuAD-style scorers, it is the one with v1.1's empty-text behaviour (F1 0
when either side has no tokens; the v2 form, which lm-eval's coqa and french_bench tasks follow, gives 1
when both are empty) and v1.1's English articles (mlqa/tydiqa normalise per language, french_bench drops
French articles). torchmetrics is not a dependency. So the identity holds on every pair, the empty ones
included, with no deliberate difference; `test_the_v1_1_corners_as_the_spec_states_them` also checks those
corners against SPEC §12's wording, independently of the package.

Pairs: a seeded generator (articles, ASCII and non-ASCII punctuation, accented letters, non-breaking and
zero-width spaces, CJK, emoji, numbers, repeated tokens, empty strings and empty-after-normalising texts),
hand-picked cases and hypothesis' arbitrary text; `test_the_pairs_reach_every_step_of_the_normalisation`
shows that each normalisation step changes some value, so the set would catch a step done differently.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.metrics import squad
from a2c.qa.correctness import score_correctness

reference = pytest.importorskip("lm_eval.tasks.qasper.metrics", reason="lm-eval not installed (make setup)")
lm_eval_metrics = pytest.importorskip("lm_eval.api.metrics", reason="lm-eval not installed (make setup)")

Pair = tuple[str, list[str]]


def v11_exact_match(prediction: str, ground_truth: str) -> bool:
    return bool(reference.normalize_answer(prediction) == reference.normalize_answer(ground_truth))


def v11_f1(prediction: str, ground_truth: str) -> float:
    return float(reference.f1_abstractive([prediction], [ground_truth]))


def v11_scores(pairs: Sequence[Pair]) -> tuple[list[float], list[float]]:
    """(EM, F1) per pair by the installed v1.1 logic, each the best over the pair's aliases."""
    best = lm_eval_metrics.metric_max_over_ground_truths
    return ([float(best(v11_exact_match, a, aliases)) for a, aliases in pairs],
            [float(best(v11_f1, a, aliases)) for a, aliases in pairs])


FRAGMENTS = [
    "the", "The", "THE", "a", "A", "an", "An", "AN", "theatre", "another", "anthem", "and", "at", "them",
    "Paris", "paris", "PARIS", "France", "Eiffel", "tower", "Tower", "of", "in",
    "café", "cafe", "Café", "CAFÉ", "naïve", "naive", "résumé", "İstanbul", "istanbul", "straße", "STRASSE",
    "Ωmega", "ωmega", "the\u0301", "ＴＨＥ", "ａ", "東京", "日本語の答え", "北京", "서울", "مرحبا",
    "😀", "👍🏽",
    "🇫🇷", "1", "2", "42", "1,000", "1000", "1.5", "3.14", "-7", "1e9", "1st", "½", "٣", "forty-two",
    "U.S.", "U.S.A", "e.g.", "don't", "rock'n'roll", "o'clock", "¿qué?", "¡sí!", "—", "–", "…", "“quoted”",
    "'single'", "\"double\"", "(paren)", "[x]", "{y}", "$5", "100%", "#1", "a.m.", "@user", "x_y", "a/b",
    "«guillemets»", "。", "、", "·", "•", ",", ".", "!", "?", ";", ":", "-", "_", "'", "...",
]
SEPARATORS = [" ", " ", " ", "", "  ", "\u00a0", "\u2009", "\u3000", "\u200b", "\n", "\t", ",", "-", ". "]


def _text(rng: random.Random, words: int | None = None) -> str:
    n = rng.randint(0, 6) if words is None else words
    out = ""
    for k in range(n):
        out += (rng.choice(SEPARATORS) if k else "") + rng.choice(FRAGMENTS)
    if rng.random() < 0.2:
        out = rng.choice(["", " ", "\u00a0", "\n"]) + out + rng.choice(["", " ", ".", "!", " \u00a0"])
    return out


def _mutated(rng: random.Random, alias: str) -> str:
    """An answer near an alias, so F1 takes values strictly between 0 and 1."""
    tokens = alias.split() or [""]
    how = rng.randrange(8)
    if how == 0:
        return alias.upper()
    if how == 1:
        return rng.choice(["the ", "a ", "An ", "THE "]) + alias + rng.choice(["", ".", "!", "?"])
    if how == 2:
        return " ".join(tokens * rng.randint(2, 4))  # repeated tokens
    if how == 3:
        return " ".join(tokens[:-1]) if len(tokens) > 1 else alias + " " + rng.choice(FRAGMENTS)
    if how == 4:
        return " ".join([*rng.sample(tokens, len(tokens)), rng.choice(FRAGMENTS)])
    if how == 5:
        return alias.replace(" ", rng.choice(["\u00a0", "  ", "\t", "", "\u200b"]))
    if how == 6:
        return "".join(ch for ch in alias if ch not in string.punctuation)
    return f"{alias} {_text(rng, rng.randint(1, 3))}"


def _generated(seed: int, count: int) -> list[Pair]:
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for _ in range(count):
        aliases = [_text(rng, rng.randint(0, 5)) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.1:
            aliases.append(aliases[0])  # a duplicate alias
        answer = _mutated(rng, rng.choice(aliases)) if rng.random() < 0.6 else _text(rng)
        pairs.append((answer, aliases))
    return pairs


HAND_PICKED: list[Pair] = [
    ("", [""]), ("", ["Paris"]), ("Paris", [""]), (" ", ["\u00a0"]), ("\u200b", [""]), ("...", ["!?"]),
    ("the", ["a"]), ("The an A", [""]), ("the", ["the"]), ("a", ["Paris", ""]), ("", ["", "Paris"]),
    ("The Eiffel Tower.", ["Eiffel Tower"]), ("eiffel   tower!!", ["the Eiffel Tower", "la tour Eiffel"]),
    ("theatre", ["atre"]), ("the theatre", ["theatre"]), ("another", ["other"]), ("an apple", ["apple"]),
    ("café", ["cafe"]), ("CAFÉ", ["café"]), ("Café", ["café."]), ("naïve", ["naive"]),
    ("the\u0301", [""]), ("thé", ["th"]), ("ＴＨＥ answer", ["answer"]), ("İstanbul", ["istanbul"]),
    ("Straße", ["strasse"]), ("ΣΊΣΥΦΟΣ", ["σίσυφος"]),
    ("Paris\u00a0France", ["Paris France"]), ("Paris\u200bFrance", ["Paris France"]),
    ("Paris\u3000France", ["paris france"]), ("東京", ["東京"]), ("東京 大阪", ["東京"]),
    ("日本語の答え", ["日本語"]),
    ("😀", ["😀"]), ("😀 yes", ["yes"]), ("👍🏽", ["👍"]), ("🇫🇷 France", ["France"]),
    ("1,000", ["1000"]), ("1.5", ["15"]), ("-7", ["7"]), ("½", ["1/2"]), ("٣", ["3"]), ("42", ["forty-two"]),
    ("U.S.A.", ["USA"]), ("don't", ["dont"]), ("¿qué?", ["qué"]), ("—", [""]), ("“yes”", ["yes"]),
    ("yes yes yes", ["yes"]), ("yes", ["yes yes yes"]), ("a b a b", ["b a b a"]), ("x x y", ["x y y"]),
    ("no", ["yes", "no", "no"]), ("Paris", ["paris", "PARIS", "Paris."]), ("x" * 2000, ["x" * 2000]),
    (" ".join(["word"] * 500), ["word"]), ("tab\tand\nnewline", ["tab newline"]),
]


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    generated = _generated(seed=20240601, count=600)
    assert len(generated) + len(HAND_PICKED) >= 300
    return generated + HAND_PICKED


def test_normalisation_is_v1_1s_on_every_text(pairs):
    texts = sorted({t for a, aliases in pairs for t in (a, *aliases)})
    assert len(texts) > 1000
    assert [squad.normalize_answer(t) for t in texts] == [reference.normalize_answer(t) for t in texts]


def test_exact_match_and_f1_are_v1_1s_to_the_last_bit(pairs):
    em, f1 = v11_scores(pairs)
    assert squad.exact_match_scores(pairs).tolist() == em
    assert squad.token_f1_scores(pairs).tolist() == f1
    # one pair at a time, and through the registry's rules, the same floats
    assert [max(squad.exact_match(a, r) for r in aliases) for a, aliases in pairs] == em
    assert [max(squad.token_f1(a, r) for r in aliases) for a, aliases in pairs] == f1
    assert score_correctness("exact_match", pairs).scores.tolist() == em
    assert score_correctness("token_f1", pairs).scores.tolist() == f1


def test_the_pairs_are_hostile_enough(pairs):
    """The values cover matches and misses, partial F1, empty texts on both sides."""
    em, f1 = v11_scores(pairs)
    assert 0.1 < float(np.mean(em)) < 0.9
    partial = [v for v in f1 if 0 < v < 1]
    assert len(partial) >= 100 and len(set(partial)) >= 15
    empty = [(a, r) for a, aliases in pairs for r in aliases
             if not reference.normalize_answer(a) and not reference.normalize_answer(r)]
    assert len(empty) >= 10
    non_ascii = [a for a, _ in pairs if any(ord(ch) > 127 for ch in a)]
    assert len(non_ascii) >= 100


def _without(step: str) -> Callable[[str], str]:
    """v1.1's normalisation with one step changed, as a wrong implementation might do it."""
    def normalise(text: str) -> str:
        if step != "lower":
            text = text.lower()
        if step == "unicode punctuation":
            text = "".join(ch for ch in text if ch.isalnum() or ch.isspace())
        elif step != "punctuation":
            text = "".join(ch for ch in text if ch not in string.punctuation)
        if step == "ascii articles":
            text = re.sub(r"\b(a|an|the)\b", " ", text, flags=re.ASCII)
        elif step != "articles":
            text = re.sub(r"\b(a|an|the)\b", " ", text)
        return text if step == "whitespace" else " ".join(text.split())
    return normalise


@pytest.mark.parametrize("step", ["lower", "punctuation", "unicode punctuation", "articles", "ascii articles",
                                  "whitespace"])
def test_the_pairs_reach_every_step_of_the_normalisation(pairs, step):
    """Each variant below disagrees with v1.1 on some pair's EM or F1, so these pairs tell them apart."""
    wrong = _without(step)

    def em(a: str, r: str) -> float:
        return float(wrong(a) == wrong(r))

    def f1(a: str, r: str) -> float:
        return squad._f1_of_tokens(wrong(a).split(), wrong(r).split())

    right_em, right_f1 = v11_scores(pairs)
    wrong_em = [max(em(a, r) for r in aliases) for a, aliases in pairs]
    wrong_f1 = [max(f1(a, r) for r in aliases) for a, aliases in pairs]
    assert wrong_em != right_em or wrong_f1 != right_f1


def test_the_v2_empty_rule_would_be_caught(pairs):
    """SQuAD v2 (and CoQA) score F1 1 when both texts have no tokens; v1.1, and a2c, score 0."""
    def v2_f1(a: str, r: str) -> float:
        a_tokens, r_tokens = reference.normalize_answer(a).split(), reference.normalize_answer(r).split()
        if not a_tokens or not r_tokens:
            return float(a_tokens == r_tokens)
        return v11_f1(a, r)

    v2 = [max(v2_f1(a, r) for r in aliases) for a, aliases in pairs]
    assert v2 != squad.token_f1_scores(pairs).tolist()


def test_the_v1_1_corners_as_the_spec_states_them():
    """SPEC §12 independently of any package: two empty texts give EM 1 and F1 0; one empty side gives 0."""
    for a, r in [("", ""), ("the", "a"), ("...", " "), ("\u00a0", "An")]:
        assert squad.exact_match(a, r) == 1.0
        assert squad.token_f1(a, r) == 0.0
    assert squad.exact_match("", "Paris") == 0.0 and squad.token_f1("", "Paris") == 0.0
    assert squad.token_f1("Paris", "") == 0.0
    # the formula: "x b c d" (4 tokens) and "b c" (2) share 2: P = 1/2, R = 1, F1 = 2/3
    assert squad.token_f1("x b c d", "b c") == (2 * 0.5 * 1.0) / 1.5
    # multiset overlap: "x x y" vs "x y y" share one x and one y
    assert squad.token_f1("x x y", "x y y") == (2 * (2 / 3) * (2 / 3)) / (4 / 3)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.text(max_size=30), st.lists(st.text(max_size=30), min_size=1, max_size=3))
def test_arbitrary_text_scores_as_v1_1(answer, aliases):
    em, f1 = v11_scores([(answer, aliases)])
    assert squad.exact_match_scores([(answer, aliases)]).tolist() == em
    assert squad.token_f1_scores([(answer, aliases)]).tolist() == f1


@pytest.mark.parametrize(("pairs_", "error"), [
    ([("a", [])], ValueError), ([("a", "a")], TypeError), ([(1, ["a"])], TypeError),
    ([("a", [None])], TypeError),
])
def test_bad_pairs_are_refused(pairs_, error):
    with pytest.raises(error):
        squad.token_f1_scores(pairs_)
    with pytest.raises(error):
        squad.exact_match_scores(pairs_)
