"""ROUGE-1/2/Lsum and BLEU of many answers against their question's references, batched and exact.

TruthfulQA's script scores one (answer, reference) pair per library call, so every call tokenises both
texts and counts their n-grams again: each reference is tokenised once per answer. Here each distinct text
is tokenised once with the library's own tokenizer (rouge-score's `DefaultTokenizer`, sacrebleu's `intl`)
into integer token ids, and the n-grams and matches of all answers × references of a whole chunk of
questions come from a few numpy operations (each answer matched against its own question's references).
The scores are then the libraries' own formulas on those counts (rouge-score's precision, recall and F
with the same float operations; sacrebleu's `BLEU.compute_bleu`), so they equal `RougeScorer.score` and
`corpus_bleu` bit for bit (tests/test_overlap.py checks this on random texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import chain
from typing import Any

import numpy as np

# TruthfulQA's BLEU of one answer against one reference: sacrebleu.corpus_bleu([answer], [[ref]], **BLEU_ARGS)
BLEU_ARGS: dict[str, Any] = {"smooth_method": "exp", "smooth_value": 0.0, "force": False, "lowercase": False,
                             "tokenize": "intl", "use_effective_order": False}
BLEU_MAX_ORDER = 4
LCS_WORD = 64  # reference sentences up to this many tokens take the vectorised LCS (one uint64 per pair)
QUESTION_BLOCK = 512  # questions per n-gram pass (`_by_blocks`)


class TokenIds:
    """Each distinct text's tokens, from the library's tokenizer once, as integer ids (one per token)."""

    def __init__(self, tokenize: Callable[[str], list[str]]) -> None:
        self._tokenize = tokenize
        self._ids: dict[str, int] = {}
        self._texts: dict[str, list[int]] = {}

    def __call__(self, text: str) -> list[int]:
        found = self._texts.get(text)
        if found is None:
            ids = self._ids
            # `len(ids)` is read before `setdefault` inserts, so a new token gets the next free id
            found = self._texts[text] = [ids.setdefault(t, len(ids)) for t in self._tokenize(text)]
        return found


Question = tuple[Sequence[str], Sequence[str]]  # (answers, references) of one question


@dataclass(frozen=True)
class Ngrams:
    """The n-grams of many questions' texts, laid end to end: each question's answers, then its references.

    `orders[n − 1]` holds (key, text) of every n-gram; two keys are equal exactly when the n-grams are.
    The pairs scored are every answer × reference of the same question, question after question, each
    question's in row-major order (`split` gives them back as one matrix per question).
    """

    lengths: np.ndarray  # tokens per text
    question: np.ndarray  # question of each text
    local: np.ndarray  # index of each text among its question's answers, or among its references
    is_ref: np.ndarray
    shapes: np.ndarray  # (answers, references) per question
    orders: list[tuple[np.ndarray, np.ndarray]]

    def counts(self, n: int) -> np.ndarray:
        """n-grams per text: every window of n tokens inside it."""
        counts: np.ndarray = np.maximum(self.lengths - n + 1, 0)
        return counts

    @property
    def pair_starts(self) -> np.ndarray:
        """Where each question's pairs begin, and (last) how many pairs there are."""
        starts: np.ndarray = np.r_[0, np.cumsum(self.shapes[:, 0] * self.shapes[:, 1])]
        return starts

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(answer text, reference text) of every pair, in pair order."""
        sizes = self.shapes[:, 0] * self.shapes[:, 1]
        starts = self.pair_starts
        of = np.repeat(np.arange(len(sizes)), sizes)
        within = np.arange(starts[-1]) - starts[:-1][of]
        refs = self.shapes[of, 1]
        first_text = np.r_[0, np.cumsum(self.shapes.sum(axis=1))][:-1][of]
        return first_text + within // refs, first_text + self.shapes[of, 0] + within % refs

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-pair values (first axis) back as one (answers, references, ...) array per question."""
        starts = self.pair_starts
        return [flat[starts[q]:starts[q + 1]].reshape(int(a), int(r), *flat.shape[1:])
                for q, (a, r) in enumerate(self.shapes.tolist())]


def question_ngrams(tokens: TokenIds, questions: Sequence[Question], max_order: int) -> Ngrams:
    """Orders 1..max_order of all the questions' texts from their token ids laid end to end. An n-gram's
    key combines the rank of the key of its first n − 1 tokens with its last token id; windows that run
    across two texts are dropped. All numpy: no n-gram is built as a Python object, and one call serves
    a whole chunk of questions."""
    ids_per_text = [tokens(t) for answers, refs in questions for t in chain(answers, refs)]
    shapes = np.array([(len(answers), len(refs)) for answers, refs in questions],
                      dtype=np.int64).reshape(-1, 2)
    per_question = shapes.sum(axis=1)
    question = np.repeat(np.arange(len(shapes)), per_question)
    local = np.arange(len(question)) - np.repeat(np.r_[0, np.cumsum(per_question)][:-1], per_question)
    is_ref = local >= shapes[question, 0]
    local = np.where(is_ref, local - shapes[question, 0], local)
    lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(ids_per_text))
    ids = np.fromiter(chain.from_iterable(ids_per_text), dtype=np.int64, count=int(lengths.sum()))
    texts = np.repeat(np.arange(len(ids_per_text)), lengths)
    width = int(ids.max()) + 1 if len(ids) else 1
    orders = [(ids, texts)]
    keys = ids  # key of the window starting at each position (windows may cross texts; filtered below)
    for n in range(2, max_order + 1):
        windows = max(len(ids) - n + 1, 0)
        _, rank = np.unique(keys, return_inverse=True)
        keys = rank[:windows] * width + ids[n - 1:n - 1 + windows]
        inside = texts[:windows] == texts[n - 1:n - 1 + windows]
        orders.append((keys[inside], texts[:windows][inside]))
    return Ngrams(lengths, question, local, is_ref, shapes, orders)


def matched_ngrams(grams: Ngrams, n: int) -> np.ndarray:
    """Σ_g min(count of g in the answer, count of g in the reference) for every pair (answer × reference
    of one question): the clipped n-gram matches both rouge-score and sacrebleu count. Each (text, n-gram)
    is counted once, then the answers' are joined to the references' of the same question on the n-gram:
    work in proportion to the n-grams and the matches, never to a vocabulary."""
    keys, texts = grams.orders[n - 1]
    starts = grams.pair_starts
    if not len(keys):
        return np.zeros(starts[-1], dtype=np.int64)
    _, gram = np.unique(keys, return_inverse=True)
    width = int(gram.max()) + 1
    ref = grams.is_ref[texts]
    answer_pairs, answer_counts = np.unique(texts[~ref] * width + gram[~ref], return_counts=True)
    ref_pairs, ref_counts = np.unique(texts[ref] * width + gram[ref], return_counts=True)
    answer_text, answer_gram = np.divmod(answer_pairs, width)
    ref_text, ref_gram = np.divmod(ref_pairs, width)
    # the join key: (question, n-gram); the references' sorted by it
    ref_key = grams.question[ref_text] * width + ref_gram
    order = np.argsort(ref_key, kind="stable")
    ref_key, ref_text, ref_counts = ref_key[order], ref_text[order], ref_counts[order]
    answer_key = grams.question[answer_text] * width + answer_gram
    low = np.searchsorted(ref_key, answer_key, "left")
    found = np.searchsorted(ref_key, answer_key, "right") - low
    which = np.repeat(np.arange(len(answer_key)), found)  # each match: its answer's (text, n-gram) ...
    at = np.arange(int(found.sum())) - np.repeat(np.cumsum(found) - found, found) + np.repeat(low, found)
    clipped = np.minimum(answer_counts[which], ref_counts[at])  # ... and its reference's
    a, r = answer_text[which], ref_text[at]
    q = grams.question[a]
    position = starts[q] + grams.local[a] * grams.shapes[q, 1] + grams.local[r]
    # sums of small counts: exact in float64
    return np.bincount(position, weights=clipped, minlength=starts[-1]).astype(np.int64)


def f_measure(hits: np.ndarray, predicted: np.ndarray, target: np.ndarray) -> np.ndarray:
    """rouge-score's precision = hits / max(predicted, 1), recall = hits / max(target, 1) and `fmeasure`
    (2PR / (P + R), 0 when both are 0), elementwise with its float operations in its order: same bits."""
    precision = hits / np.maximum(predicted, 1)
    recall = hits / np.maximum(target, 1)
    total = precision + recall
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 2 * precision * recall / total
    return np.where(total > 0, value, 0.0)


@cache
def rouge_tokenizer(use_stemmer: bool) -> Any:
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer)


def rouge_tokens(use_stemmer: bool) -> TokenIds:
    """A fresh token table over rouge-score's default tokenizer."""
    return TokenIds(rouge_tokenizer(use_stemmer).tokenize)


def _by_blocks(questions: Sequence[Question], score: Callable[[Sequence[Question]], list[np.ndarray]]
               ) -> list[np.ndarray]:
    """`score` over the questions in blocks of `QUESTION_BLOCK`, one n-gram pass per block, so a call with
    every answer of a 100,000-question run (`a2c score`) holds one block's arrays, not the whole call's."""
    return [matrix for start in range(0, len(questions), QUESTION_BLOCK)
            for matrix in score(questions[start:start + QUESTION_BLOCK])]


def rouge_n(tokens: TokenIds, n: int, questions: Sequence[Question]) -> list[np.ndarray]:
    """ROUGE-n F of every answer × reference of each question (one matrix per question), as
    `RougeScorer([f"rouge{n}"]).score(ref, answer)`."""

    def block(part: Sequence[Question]) -> list[np.ndarray]:
        grams = question_ngrams(tokens, part, n)
        counts = grams.counts(n)
        answer, ref = grams.pairs()
        return grams.split(f_measure(matched_ngrams(grams, n), counts[answer], counts[ref]))

    return _by_blocks(questions, block)


def summary_sentences(text: str) -> list[str]:
    """The sentences rouge-score's `rougeLsum` sees after TruthfulQA's (t5's) summary preparation, which
    breaks the line after every " . "."""
    return [s for s in text.replace(" . ", " .\n").split("\n") if s]


class SummarySentences:
    """Each distinct text's `summary_sentences`, tokenised once."""

    def __init__(self, tokenize: Callable[[str], list[str]]) -> None:
        self._tokenize = tokenize
        self._texts: dict[str, list[list[str]]] = {}

    def __call__(self, text: str) -> list[list[str]]:
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = [self._tokenize(s) for s in summary_sentences(text)]
        return found


def _lcs_lengths(answers: Sequence[Sequence[str]], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """LCS length of every answer × reference token list (references of ≤ LCS_WORD tokens), bit-parallel
    (Hyyrö 2004) over all pairs at once: bit i of a reference's mask for token t is set where its token i
    is t, and each answer token updates one uint64 per pair, V ← ((V + U) | (V − U)) with U = V & mask;
    the LCS is the number of zero bits of V among the reference's."""
    vocab: dict[str, int] = {}  # tokens of the references; 0 = in no reference (mask 0 leaves V alone)
    masks = [[0] * len(refs)]
    for j, ref in enumerate(refs):
        for i, token in enumerate(ref):
            row = vocab.setdefault(token, len(vocab) + 1)
            if row == len(masks):
                masks.append([0] * len(refs))
            masks[row][j] |= 1 << i
    table = np.array(masks, dtype=np.uint64)
    longest = max(map(len, answers), default=0)
    grid = np.zeros((len(answers), longest), dtype=np.intp)
    for row, answer in enumerate(answers):
        grid[row, :len(answer)] = [vocab.get(t, 0) for t in answer]
    ref_lengths = np.array([len(r) for r in refs], dtype=np.int64)
    full = np.array([(1 << m) - 1 for m in ref_lengths.tolist()], dtype=np.uint64)
    v = np.repeat(full[None, :], len(answers), axis=0)
    for k in range(longest):
        u = v & table[grid[:, k]]
        v = ((v + u) | (v - u)) & full  # uint64 arithmetic wraps: only the reference's bits are read
    return ref_lengths[None, :] - np.bitwise_count(v).astype(np.int64)


def rouge_lsum(sentences: SummarySentences, answers: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """ROUGE-Lsum F (what TruthfulQA reports as rougeL) of every answer × reference.

    When both texts are one sentence, summary-level LCS is the plain LCS length (the union of one LCS
    counts each of its tokens once), found by `_lcs_lengths`; other pairs go through rouge-score's own
    summary-level function (private, but it is the formula) on the already tokenised sentences.
    """
    from rouge_score.rouge_scorer import _summary_level_lcs

    answer_sents = [sentences(a) for a in answers]
    ref_sents = [sentences(r) for r in refs]
    out = np.zeros((len(answers), len(refs)), dtype=np.float64)
    rows = [i for i, s in enumerate(answer_sents) if len(s) == 1]
    cols = [j for j, s in enumerate(ref_sents) if len(s) == 1 and len(s[0]) <= LCS_WORD]
    if rows and cols:
        hits = _lcs_lengths([answer_sents[i][0] for i in rows], [ref_sents[j][0] for j in cols])
        predicted = np.array([len(answer_sents[i][0]) for i in rows], dtype=np.int64)[:, None]
        target = np.array([len(ref_sents[j][0]) for j in cols], dtype=np.int64)[None, :]
        out[np.ix_(rows, cols)] = f_measure(hits, predicted, target)
    fast_rows, fast_cols = set(rows), set(cols)
    for i, cand in enumerate(answer_sents):
        for j, ref in enumerate(ref_sents):
            if i not in fast_rows or j not in fast_cols:
                out[i, j] = _summary_level_lcs(ref, cand).fmeasure
    return out


@cache
def bleu_tokenizer() -> Callable[[str], str]:
    from sacrebleu.metrics.bleu import BLEU

    bleu = BLEU(tokenize=BLEU_ARGS["tokenize"], lowercase=BLEU_ARGS["lowercase"])
    tokenizer: Callable[[str], str] = bleu.tokenizer
    return tokenizer


def bleu_tokens() -> TokenIds:
    """A fresh token table over the tokens sacrebleu's BLEU counts: the right-stripped text through the
    `intl` tokenizer, split on whitespace (its `_preprocess_segment` then `extract_all_word_ngrams`)."""
    tokenizer = bleu_tokenizer()
    return TokenIds(lambda text: tokenizer(text.rstrip()).split())


def bleu_statistics(tokens: TokenIds, questions: Sequence[Question]) -> tuple[np.ndarray, Ngrams]:
    """sacrebleu's sufficient statistics of every answer × reference pair of the questions, shape
    (pairs, 10): hypothesis length, reference length, matched n-grams per order, hypothesis n-grams per
    order; with the n-grams, whose `split` gives each question's (answers, refs, 10) back."""
    grams = question_ngrams(tokens, questions, BLEU_MAX_ORDER)
    answer, ref = grams.pairs()
    stats = np.empty((len(answer), 2 + 2 * BLEU_MAX_ORDER), dtype=np.int64)
    stats[:, 0] = grams.lengths[answer]
    stats[:, 1] = grams.lengths[ref]
    for n in range(1, BLEU_MAX_ORDER + 1):
        stats[:, 1 + n] = matched_ngrams(grams, n)
        stats[:, 1 + BLEU_MAX_ORDER + n] = grams.counts(n)[answer]
    return stats, grams


def bleu_scores(stats: np.ndarray) -> np.ndarray:
    """BLEU (0–100) of statistics rows (n × 10), through sacrebleu's own `compute_bleu` once per distinct
    row; rows without a matched unigram are 0, as `compute_bleu` itself returns for them."""
    from sacrebleu.metrics.bleu import BLEU

    k = BLEU_MAX_ORDER
    scores = np.zeros(len(stats), dtype=np.float64)
    matched = stats[stats[:, 2] > 0]
    if not len(matched):
        return scores
    # rows are told apart by lengths and matches (the n-gram totals follow from the hypothesis length),
    # packed into one integer where they fit: a far cheaper sort than comparing whole rows
    columns = matched[:, :2 + k]
    base = int(columns.max()) + 1
    packed = base ** columns.shape[1] < 2 ** 63
    keys = columns @ (base ** np.arange(columns.shape[1], dtype=np.int64)) if packed else columns
    _, first, inverse = np.unique(keys, axis=None if packed else 0, return_index=True, return_inverse=True)
    settings = {"smooth_method": BLEU_ARGS["smooth_method"], "smooth_value": BLEU_ARGS["smooth_value"],
                "effective_order": BLEU_ARGS["use_effective_order"], "max_ngram_order": k}
    values = [BLEU.compute_bleu(row[2:2 + k], row[2 + k:], row[0], row[1], **settings).score
              for row in matched[first].tolist()]
    scores[stats[:, 2] > 0] = np.asarray(values, dtype=np.float64)[inverse.reshape(-1)]
    return scores


def bleu(tokens: TokenIds, questions: Sequence[Question]) -> list[np.ndarray]:
    """BLEU (0–100) of every answer × reference of each question (one matrix per question), as
    `corpus_bleu([answer], [[ref]], **BLEU_ARGS)`; each distinct statistics row of a block scored once."""

    def block(part: Sequence[Question]) -> list[np.ndarray]:
        stats, grams = bleu_statistics(tokens, part)
        return grams.split(bleu_scores(stats))

    return _by_blocks(questions, block)
