"""sentence-transformers is the model layer: tiny models built and saved here (no hub), loaded through a2c's
own path, give what sentence-transformers' own `encode` / `predict` give, including the parts a hand-written
mean-pooling recipe would get wrong (CLS pooling, a Dense layer, prompts, a cross-encoder's activation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from a2c.common.text import normalize
from a2c.judges import build_judge, hf
from a2c.judges.hf import PromptError, load_encoder, pair_scorer, sentence_encoder
from a2c.qa.data import QARecord
from a2c.qa.scoring import truthfulqa_references
from a2c.scoring import score_answers

pytestmark = pytest.mark.slow

TEXTS = ["It passes through your digestive system.", "Gum stays in your stomach for seven years.",
         "Nothing happens.", "", "The capital of France is Paris.", "word " * 80]
PROMPTS = {"query": "query: ", "passage": "passage: "}


def _bert_folder(folder: Path, seed: int) -> Path:
    """A tiny random BERT encoder with the MiniLM WordPiece tokenizer (inputs up to 64 tokens)."""
    from transformers import BertConfig, BertModel

    from tests.conftest import _tiny_tokenizer

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, initializer_range=0.4)
    BertModel(config).eval().save_pretrained(folder)
    _tiny_tokenizer(64).save_pretrained(folder)
    return folder


def _save_st(folder: Path, pooling: str, dense: bool, include_prompt: bool = True,
             default_prompt_name: str | None = None) -> Path:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(_bert_folder(folder / "bert", 5)))
    modules = [transformer, Pooling(32, pooling, include_prompt=include_prompt)]
    if dense:
        torch.manual_seed(6)
        modules.append(Dense(32, 16))
    model = SentenceTransformer(modules=modules, device="cpu", prompts=PROMPTS,
                                default_prompt_name=default_prompt_name)
    model.save(str(folder / "st"))
    return folder / "st"


@pytest.fixture(scope="module")
def cls_dense_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """BERT → CLS pooling → Dense(32 → 16, tanh), no normalisation: nothing like MiniLM's recipe."""
    return _save_st(tmp_path_factory.mktemp("st-cls-dense"), "cls", dense=True)


def _own_encode(folder: Path, texts: list[str], **kwargs) -> np.ndarray:
    """sentence-transformers' own answer, from an instance a2c never touched."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(texts, batch_size=4, **kwargs)


def _cosine(x: np.ndarray) -> np.ndarray:
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.clip(unit @ unit.T, 0.0, 1.0)


def test_embeddings_are_sentence_transformers_own(cls_dense_dir):
    expected = _own_encode(cls_dense_dir, TEXTS)
    got = sentence_encoder(str(cls_dense_dir)).embed(TEXTS, batch_size=3)
    assert got.shape == expected.shape == (len(TEXTS), 16)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    # the mean pooling that a2c used to apply to every model gives other vectors
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    loaded = load_encoder(str(cls_dense_dir))
    mean = SentenceTransformer(modules=[loaded[0], Pooling(32, "mean"), loaded[2]], device="cpu")
    assert not np.allclose(mean.encode(TEXTS), expected, atol=1e-3)
    assert not np.allclose(np.linalg.norm(expected, axis=1), 1.0)  # and no normalisation: cosine is needed


def test_embedding_judge_and_similarity_on_a_cls_dense_model(cls_dense_dir, monkeypatch):
    expected = _cosine(_own_encode(cls_dense_dir, TEXTS))
    m = build_judge("embedding", model=str(cls_dense_dir), cache=None, batch_size=2).matrix("q", TEXTS)
    off = ~np.eye(len(TEXTS), dtype=bool)
    np.testing.assert_allclose(m[off], expected[off], atol=1e-5)
    assert len(np.unique(np.round(m[off], 4))) > 3  # real, distinct similarities
    # the `embedding` accuracy similarity reads the same model through the same encoder
    monkeypatch.setattr("a2c.judges.embedding.DEFAULT_EMBEDDING_MODEL", str(cls_dense_dir))
    record = QARecord(id="q", question="q", best_answer=TEXTS[2], correct=(TEXTS[2], TEXTS[0]),
                      incorrect=(TEXTS[1], TEXTS[4]))
    answers = [TEXTS[0], TEXTS[4], TEXTS[5]]
    scores = score_answers("embedding", answers, [record] * len(answers))
    true_refs, false_refs = truthfulqa_references(record)
    vectors = _own_encode(cls_dense_dir, [*answers, *true_refs, *false_refs])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = np.clip(unit[:3] @ unit[3:].T, 0, 1)
    n_true = len(true_refs)
    for row, got in zip(sims, scores, strict=True):
        assert got.max_true == pytest.approx(row[:n_true].max(), abs=1e-5)
        assert got.diff == pytest.approx(row[:n_true].max() - row[n_true:].max(), abs=1e-5)


def test_the_embedded_minilm_is_sentence_transformers_own():
    expected = _own_encode(Path(hf.resolve_model("all-MiniLM-L6-v2")), TEXTS)
    got = sentence_encoder("all-MiniLM-L6-v2").embed(TEXTS, batch_size=64)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert load_encoder("all-MiniLM-L6-v2").max_seq_length == 256  # its sentence_bert_config.json


@pytest.fixture(scope="module")
def prompted_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Mean pooling that leaves the prompt tokens out, with saved prompts and a default prompt."""
    return _save_st(tmp_path_factory.mktemp("st-prompted"), "mean", dense=False, include_prompt=False,
                    default_prompt_name="query")


def test_prompts_are_applied_as_sentence_transformers_does(prompted_dir):
    default = sentence_encoder(str(prompted_dir)).embed(TEXTS, 2)
    np.testing.assert_allclose(default, _own_encode(prompted_dir, TEXTS), atol=1e-5, rtol=0)
    named = sentence_encoder(str(prompted_dir), prompt_name="passage").embed(TEXTS, 2)
    own = _own_encode(prompted_dir, TEXTS, prompt_name="passage")
    np.testing.assert_allclose(named, own, atol=1e-5, rtol=0)
    text = sentence_encoder(str(prompted_dir), prompt="Represent this answer: ").embed(TEXTS, 2)
    own = _own_encode(prompted_dir, TEXTS, prompt="Represent this answer: ")
    np.testing.assert_allclose(text, own, atol=1e-5, rtol=0)
    none = sentence_encoder(str(prompted_dir), prompt="").embed(TEXTS, 2)
    np.testing.assert_allclose(none, _own_encode(prompted_dir, TEXTS, prompt=""), atol=1e-5, rtol=0)
    for a, b in ((default, named), (default, text), (default, none)):
        assert not np.allclose(a, b, atol=1e-3)
    # the pooling skips the prompt's tokens: counting them in would give other vectors
    load_encoder(str(prompted_dir))[1].include_prompt = True
    try:
        with_prompt = hf.SentenceEncoder(str(prompted_dir)).embed(TEXTS, 2)  # fresh memo, same model
    finally:
        load_encoder(str(prompted_dir))[1].include_prompt = False
    assert not np.allclose(with_prompt, default, atol=1e-3)


def test_the_prompt_option_reaches_the_judge_and_its_cache_identity(prompted_dir):
    judge = build_judge("embedding", model=str(prompted_dir), prompt_name="passage", cache=None)
    assert judge.identity()["prompt_name"] == "passage" and "prompt" not in judge.identity()
    m = judge.matrix("q", TEXTS[:3])
    expected = _cosine(_own_encode(prompted_dir, TEXTS[:3], prompt_name="passage"))
    assert m[0, 1] == pytest.approx(expected[0, 1], abs=1e-5)
    with pytest.raises(PromptError, match=r"no prompt 'title'.*'passage', 'query'\]"):
        build_judge("embedding", model=str(prompted_dir), prompt_name="title", cache=None).matrix("q", TEXTS)


def test_a_chat_templated_model_goes_through_its_own_preprocess(tmp_path):
    """sentence-transformers renders text through a tokenizer's chat template: a2c must not tokenise the
    raw text itself there, or the vectors would silently differ."""
    folder = _bert_folder(tmp_path / "bert", 7)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
    tokenizer.save_pretrained(folder)
    expected = _own_encode(folder, TEXTS[:5])
    got = sentence_encoder(str(folder)).embed(TEXTS[:5], 2)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert not hf._takes_plain_tokens(load_encoder(str(folder)))


# -- cross-encoders -----------------------------------------------------------------------------------------
# every ordered pair of differing short texts, and one over the model's 64 tokens
PAIRS = [*((a, b) for a in TEXTS[:4] for b in TEXTS[:4] if normalize(a) != normalize(b)),
         (TEXTS[5], TEXTS[0])]


def _own_predict(folder: Path, pairs, **kwargs) -> np.ndarray:
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(folder), device="cpu").predict(pairs, batch_size=4, **kwargs)


def test_pair_probabilities_are_cross_encoder_predict_with_softmax(tiny_nli_dir, tiny_nli_permuted_dir):
    expected = _own_predict(tiny_nli_dir, PAIRS, apply_softmax=True)
    got = pair_scorer(str(tiny_nli_dir)).probabilities(PAIRS, batch_size=3)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert not np.allclose(got, _own_predict(tiny_nli_dir, PAIRS), atol=1e-3)  # raw logits differ
    # the judges read their column by label name, whatever the model's order
    permuted = _own_predict(tiny_nli_permuted_dir, PAIRS, apply_softmax=True)
    labels = pair_scorer(str(tiny_nli_permuted_dir)).config.id2label
    column = {name.lower(): int(k) for k, name in labels.items()}
    judge = build_judge("entail", model=str(tiny_nli_permuted_dir), cache=None)
    matrix = judge.matrix("q", TEXTS[:4])
    for a, b in PAIRS[:-1]:
        i, j = TEXTS.index(a), TEXTS.index(b)
        assert matrix[i, j] == pytest.approx(permuted[PAIRS.index((a, b)), column["entailment"]], abs=1e-5)

