"""The batched ROUGE and BLEU of `a2c.metrics.overlap` equal the libraries' own per-pair calls exactly."""

from __future__ import annotations

import numpy as np
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from a2c.metrics.overlap import (
    BLEU_ARGS,
    SummarySentences,
    TokenIds,
    bleu_scores,
    bleu_statistics,
    bleu_tokens,
    matched_ngrams,
    question_ngrams,
    rouge_lsum,
    rouge_n,
    rouge_tokenizer,
    rouge_tokens,
)

# few distinct words so that n-grams repeat and match; punctuation, digits, symbols and non-ASCII letters
# exercise both tokenizers; " . " makes rougeLsum see several sentences
PIECES = ["the", "The", "cat", "cats", "running", "run", "a", "no", "comment", "I", "have", "seeds", ".",
          " . ", ",", "!", "?", "3.5", "1,000", "$", "%", "é", "Über", "U.S.", "don't", "-", "\n", "  "]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map(lambda parts: " ".join(parts).replace("   ", " "))
batches = st.tuples(st.lists(texts, min_size=1, max_size=6), st.lists(texts, min_size=1, max_size=5))
# a chunk of questions scored in one call: each answer only against its own question's references
chunks = st.lists(batches, min_size=1, max_size=4)


def library_matrix(answers: list[str], refs: list[str], one) -> np.ndarray:
    return np.array([[one(a, r) for r in refs] for a in answers], dtype=np.float64)


@settings(max_examples=150, deadline=None)
@given(chunks, st.booleans())
def test_rouge_equals_rouge_score(chunk, use_stemmer):
    tokens = rouge_tokens(use_stemmer)
    for n in (1, 2):
        kind = f"rouge{n}"
        scorer = rouge_scorer.RougeScorer([kind], use_stemmer=use_stemmer)
        got = rouge_n(tokens, n, chunk)
        assert len(got) == len(chunk)
        for (answers, refs), matrix in zip(chunk, got, strict=True):
            expected = library_matrix(answers, refs,
                                      lambda a, r, s=scorer, k=kind: s.score(r, a)[k].fmeasure)
            assert np.array_equal(matrix, expected)


@settings(max_examples=150, deadline=None)
@given(batches, st.booleans())
def test_rouge_lsum_equals_rouge_score_after_the_summary_preparation(batch, use_stemmer):
    answers, refs = batch
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=use_stemmer)

    def one(answer: str, ref: str) -> float:
        return scorer.score(ref.replace(" . ", " .\n"), answer.replace(" . ", " .\n"))["rougeLsum"].fmeasure

    sentences = SummarySentences(rouge_tokenizer(use_stemmer).tokenize)
    assert np.array_equal(rouge_lsum(sentences, answers, refs), library_matrix(answers, refs, one))


@settings(max_examples=150, deadline=None)
@given(chunks)
def test_bleu_equals_corpus_bleu(chunk):
    stats, grams = bleu_statistics(bleu_tokens(), chunk)
    got = grams.split(bleu_scores(stats))
    assert len(got) == len(chunk)
    for (answers, refs), matrix in zip(chunk, got, strict=True):
        expected = library_matrix(answers, refs,
                                  lambda a, r: sacrebleu.corpus_bleu([a], [[r]], **BLEU_ARGS).score)
        assert np.array_equal(matrix, expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(batches, min_size=1, max_size=7), st.integers(1, 3))
def test_blocks_of_questions_give_the_scores_of_one_pass(chunk, block):
    """A call scores its questions a block at a time (bounded arrays for `a2c score` of a huge file): any
    block size gives every question the matrices of one pass over all of them."""
    import a2c.metrics.overlap as overlap

    whole = (overlap.rouge_n(rouge_tokens(False), 1, chunk), overlap.bleu(bleu_tokens(), chunk))
    original = overlap.QUESTION_BLOCK
    overlap.QUESTION_BLOCK = block
    try:
        blocked = (overlap.rouge_n(rouge_tokens(False), 1, chunk), overlap.bleu(bleu_tokens(), chunk))
    finally:
        overlap.QUESTION_BLOCK = original
    for one, other in zip(whole, blocked, strict=True):
        assert len(one) == len(other) == len(chunk)
        assert all(np.array_equal(a, b) for a, b in zip(one, other, strict=True))


def test_matched_ngrams_clips_counts_by_hand():
    tokens = TokenIds(str.split)
    # a second question after the first: its answer "c a" shares "a" with the first question's references
    # but may only match its own reference "c"
    grams = question_ngrams(tokens, [(["a a b", "c", "", "b a"], ["a b b", "a a a"]), (["c a"], ["c"])], 2)
    first, second = grams.split(matched_ngrams(grams, 1))
    # unigrams — answer 0 {a: 2, b: 1} vs ref 0 {a: 1, b: 2}: min(2, 1) + min(1, 2) = 2; vs ref 1 {a: 3}: 2
    # answer 1 "c" and answer 2 "" match nothing; answer 3 {b: 1, a: 1}: 1 + 1 = 2 and 1
    assert first.tolist() == [[2, 2], [0, 0], [0, 0], [2, 1]]
    assert second.tolist() == [[1]]
    # bigrams — ref 0 {a b, b b}, ref 1 {a a: 2}; answer 0 {a a, a b}: 1 and 1; answer 3 {b a}: 0 and 0.
    # The texts lie end to end, but windows across two of them are no n-grams: answer 3 + ref 0 would add
    # "a a" to answer 3, ref 0 + ref 1 would add "b a" to ref 0, ref 1 + the next question's "c a" would
    # add "a c"
    first, second = grams.split(matched_ngrams(grams, 2))
    assert first.tolist() == [[1, 1], [0, 0], [0, 0], [0, 0]] and second.tolist() == [[0]]
    assert grams.counts(2).tolist() == [2, 0, 0, 1, 2, 2, 1, 0]


def test_rouge_lsum_at_and_beyond_one_machine_word():
    # references of 63, 64 (a full uint64) and 65 tokens (rouge-score's own function) and a multi-sentence one
    words = [f"w{k % 9}" for k in range(70)]
    refs = [" ".join(words[:63]), " ".join(words[:64]), " ".join(words[:65]), "w1 w2 . w3 w1"]
    answers = [" ".join(words[5:40]), " ".join(reversed(words)), "w1 w3 . w2", ""]
    scorer = rouge_scorer.RougeScorer(["rougeLsum"])

    def one(answer: str, ref: str) -> float:
        return scorer.score(ref.replace(" . ", " .\n"), answer.replace(" . ", " .\n"))["rougeLsum"].fmeasure

    expected = library_matrix(answers, refs, one)
    got = rouge_lsum(SummarySentences(rouge_tokenizer(False).tokenize), answers, refs)
    assert np.array_equal(got, expected)
    assert got[0, 0] == 2 * 35 / (35 + 63)  # the answer is a contiguous piece: LCS 35, F = 2·35 / (35 + 63)
