"""Cross-encoder judges on tiny DeBERTa-v2 / BERT classifiers saved to disk (hub models cannot load here) and
the `llm` judge on the real embedded SmolLM2 backend. Every model loads through the user code path."""

from __future__ import annotations

import numpy as np
import pytest

from a2c.common.text import normalize
from a2c.judges import LabelError, TruncationWarning, build_judge
from a2c.judges.hf import pair_scorer
from a2c.judges.llm import UnparsedReplyWarning, yes_probability
from a2c.llm.base import Completion
from a2c.metrics import semantic_clusters, semantic_entropy

pytestmark = pytest.mark.slow

QUESTIONS = ["What happens if you swallow gum?", "What is the capital of France?"]
OUTPUTS = [
    ["It passes through your digestive system.", "Gum stays in your stomach for seven years.",
     "it passes through your digestive system", "Nothing happens.", ""],
    ["Paris", "The capital of France is Paris.", "Lyon", "Paris"],
]


def _reference(folder, label: str, a: str, b: str) -> float:
    """One forward pass for one ordered pair, straight through transformers: the per-pair loop."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    network = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    index = {v.lower(): int(k) for k, v in network.config.id2label.items()}[label]
    with torch.no_grad():
        # list form: a bare `tokenizer(a, "")` would drop an empty second text instead of pairing it
        logits = network(**tokenizer([a], [b], truncation=True, max_length=64, return_tensors="pt")).logits
    return float(torch.softmax(logits, -1)[0, index])


def test_nli_batched_equals_per_pair_loop_and_shares_forward_passes(tiny_nli_dir):
    entail = build_judge("entail", model=str(tiny_nli_dir), batch_size=3, cache=None)
    contra = build_judge("contra", model=str(tiny_nli_dir), batch_size=3, cache=None)
    e_mats = entail.matrices(QUESTIONS, OUTPUTS)
    assert entail.scorer is contra.scorer is pair_scorer(str(tiny_nli_dir))  # one per model, however named
    passes = entail.scorer.forward_passes
    c_mats = contra.matrices(QUESTIONS, OUTPUTS)
    assert passes > 0 and contra.scorer.forward_passes == passes  # contra reused entail's passes
    for outputs, e, c in zip(OUTPUTS, e_mats, c_mats, strict=True):
        n = len(outputs)
        assert e.shape == c.shape == (n, n)
        assert np.all(np.diag(e) == 1) and np.all(np.diag(c) == 0)
        assert np.all(e + c <= 1 + 1e-9)  # two of three label probabilities
        for i in range(n):
            for j in range(n):
                if normalize(outputs[i]) == normalize(outputs[j]):
                    assert e[i, j] == 1 and c[i, j] == 0
                else:
                    a, b = outputs[i], outputs[j]
                    assert e[i, j] == pytest.approx(_reference(tiny_nli_dir, "entailment", a, b), abs=1e-5)
                    assert c[i, j] == pytest.approx(_reference(tiny_nli_dir, "contradiction", a, b), abs=1e-5)
    assert not np.allclose(e_mats[0], e_mats[0].T)  # directional: both orders were scored separately


def test_permuted_id2label_gives_the_same_semantics(tiny_nli_dir, tiny_nli_permuted_dir):
    for name in ("entail", "contra"):
        plain = build_judge(name, model=str(tiny_nli_dir), cache=None).matrices(QUESTIONS, OUTPUTS)
        permuted_judge = build_judge(name, model=str(tiny_nli_permuted_dir), cache=None)
        permuted = permuted_judge.matrices(QUESTIONS, OUTPUTS)
        for a, b in zip(plain, permuted, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
    # reading a fixed index instead of the label name would have given different numbers
    neutral = build_judge("entail", model=str(tiny_nli_dir), label="neutral", cache=None).matrix(*_first())
    entail = build_judge("entail", model=str(tiny_nli_dir), cache=None).matrix(*_first())
    assert not np.allclose(neutral, entail)


def _first():
    return QUESTIONS[0], OUTPUTS[0]


def test_missing_label_is_a_clear_error(tiny_nli_dir, tiny_paraphrase_dir):
    with pytest.raises(LabelError, match=r"paraphrase.*label:"):
        build_judge("pp", model=str(tiny_nli_dir), cache=None).matrix(*_first())
    with pytest.raises(LabelError, match="entailment"):
        build_judge("entail", model=str(tiny_paraphrase_dir), cache=None).matrix(*_first())


def test_paraphrase_judge_on_a_bert_classifier(tiny_paraphrase_dir):
    judge = build_judge("pp", model=str(tiny_paraphrase_dir), cache=None)
    assert judge.threshold == 0.8 and judge.directional
    m = judge.matrix(*_first())
    assert m.shape == (5, 5) and np.all(np.diag(m) == 1) and np.all((m >= 0) & (m <= 1))
    assert m[0, 2] == 1  # same text after normalisation: no model call
    expected = _reference(tiny_paraphrase_dir, "paraphrase", OUTPUTS[0][0], OUTPUTS[0][1])
    assert m[0, 1] == pytest.approx(expected, abs=1e-5)
    # the explicit label option reads the other class: the two are complementary
    other_judge = build_judge("pp", model=str(tiny_paraphrase_dir), label="NOT_PARAPHRASE", cache=None)
    other = other_judge.matrix(*_first())
    assert other[0, 1] == pytest.approx(1 - m[0, 1], abs=1e-6)


def test_over_long_inputs_are_truncated_with_a_counted_warning(tiny_nli_dir):
    judge = build_judge("entail", model=str(tiny_nli_dir), cache=None)
    long_text = "word " * 200
    with pytest.warns(TruncationWarning, match=r"^2 inputs longer than 64 tokens were truncated"):
        m = judge.matrix("q", [long_text, "short answer"])
    assert m.shape == (2, 2) and np.all(np.isfinite(m))


def test_entropy_on_matrices_from_a_real_cross_encoder(tiny_nli_dir):
    contra = build_judge("contra", model=str(tiny_nli_dir), threshold=0.5, cache=None)
    mats = contra.matrices(QUESTIONS, OUTPUTS)
    for outputs, m in zip(OUTPUTS, mats, strict=True):
        eq = contra.equivalent(m)
        clusters = semantic_clusters(eq)
        assert len(clusters) == len(outputs)
        expected = (m < 0.5) & (m.T < 0.5)
        for i in range(len(outputs)):  # members share their representative's decision in both directions
            rep = clusters.index(clusters[i])
            assert expected[i, rep] or i == rep
        entropy = semantic_entropy(clusters)
        assert 0 <= entropy <= np.log2(len(outputs))
    # identical answers always share a cluster
    clusters = semantic_clusters(contra.equivalent(mats[1]))
    assert clusters[0] == clusters[3]


# -- llm judge -----------------------------------------------------------------------------------------------
def test_yes_probability_reads_logprobs_then_text():
    first = Completion("Yes", logprobs=[{" Yes": np.log(0.6), "yes": np.log(0.1), "No": np.log(0.1)}])
    assert yes_probability(first) == pytest.approx(0.7 / 0.8)
    skip_blank = Completion(" No", logprobs=[{"\n": -0.1, " ": -2.0}, {"No": -0.2, "Maybe": -1.0}])
    assert yes_probability(skip_blank) == 0.0
    assert yes_probability(Completion("no, they differ")) == 0.0
    assert yes_probability(Completion("YES.")) == 1.0
    assert yes_probability(Completion("Nobody knows")) is None  # "no" must be a whole word


def test_llm_judge_on_the_embedded_smollm2(smollm2):
    judge = build_judge("llm", generator=smollm2, cache=None)
    questions = ["What is the capital of France?", "How many legs does a spider have?"]
    outputs = [["Paris", "The capital is Paris.", "Rome"], ["Eight", "eight."]]
    mats = judge.matrices(questions, outputs)
    assert judge.stats.scored == 3  # three unordered pairs; the "Eight"/"eight." pair needs no call
    m = mats[0]
    assert m.shape == (3, 3) and np.array_equal(m, m.T) and np.all(np.diag(m) == 1)
    assert np.all((m >= 0) & (m <= 1))
    assert mats[1].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    # logprobs come back from this backend, so scores are probabilities, not only 0/1
    assert judge.unparsed == 0
    directional = build_judge("llm", generator=smollm2, directional=True, cache=None)
    d = directional.matrices(questions[:1], [["Paris", "Rome"]])[0]
    assert directional.stats.scored == 2 and d.shape == (2, 2)


def test_llm_judge_without_logprobs_parses_the_reply(smollm2):
    import warnings

    judge = build_judge("llm", generator=smollm2, logprobs=0, cache=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = judge.matrix("Who wrote Hamlet?", ["Shakespeare", "Marlowe"])
    off_diagonal = m[~np.eye(2, dtype=bool)]
    assert set(off_diagonal.tolist()) <= {0.0, 1.0}  # the parsed word decides: no probabilities
    unparsed_warnings = [w for w in caught if issubclass(w.category, UnparsedReplyWarning)]
    assert bool(unparsed_warnings) == (judge.unparsed > 0)


@pytest.mark.parametrize("max_length", [512, 7])
def test_encode_gives_what_the_tokenizer_call_gives(max_length):
    """`encode` calls the Rust backend of fast tokenizers directly (and a Python tokenizer the usual way):
    the same ids, type ids and masks as transformers' own call, truncation included."""
    from transformers import ByT5Tokenizer, DebertaV2Tokenizer

    from a2c.judges.hf import encode
    from a2c.llm.transformers_backend import load_model
    from a2c.models.embedded import DEFAULT_MODEL
    from tests.conftest import _tiny_tokenizer

    # the long text makes both texts of a pair overflow at 7 tokens: `longest_first` must split them alike
    firsts = [a for outputs in OUTPUTS for a in outputs] + ["word " * 40]
    seconds = firsts[::-1]
    # DeBERTa-v3's tokenizer class (Unigram + Metaspace) on a small vocabulary of our own
    pieces = [("[PAD]", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("[UNK]", 0.0), ("▁", -3.0), ("▁the", -1.0),
              ("ing", -1.5)] + [(c, -2.0) for c in "abcdefghijklmnopqrstuvwxyzPGINS."]
    unigram = DebertaV2Tokenizer(vocab=pieces, unk_id=3)
    for tokenizer in (_tiny_tokenizer(512), load_model(DEFAULT_MODEL)[0], unigram, ByT5Tokenizer()):
        for pair in (seconds, None):
            expected = tokenizer(firsts, pair, truncation=True, max_length=max_length)
            got = encode(tokenizer, firsts, pair, max_length)
            assert set(got) == set(expected) and "input_ids" in got
            for key in got:
                assert got[key] == expected[key], (type(tokenizer).__name__, key)
            if max_length == 7:
                assert max(map(len, got["input_ids"])) == 7
