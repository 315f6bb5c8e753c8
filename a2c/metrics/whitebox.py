"""White-box uncertainty of answers from their token log-probabilities, batched over many answers at once.

A backend that returns log-probabilities gives, for an answer y = (y_1..y_L), the chosen tokens' values
ℓ_l = log p(y_l | x, y_<l), and possibly the top-k alternatives at each position. The measures here are
the field's standard ones, defined as LM-Polygraph 0.7.0's estimators define them, except semantic
entropy's default, which normalises the class masses (tests/test_whitebox_parity.py feeds both the same
numbers):

- maximum sequence probability (MSP): −Σ_l ℓ_l (`maximum_sequence_probability`; the confidence
  Σ_l ℓ_l = log P(y|x) is `sequence_log_likelihood`);
- perplexity: exp(−(1/L)·Σ_l ℓ_l); its log, −(1/L)·Σ_l ℓ_l, is what LM-Polygraph's `Perplexity` returns
  (`log_perplexity`);
- mean token entropy over the top-k each position gives (`mean_token_entropy`);
- semantic entropy weighted by the samples' likelihoods (Kuhn et al. 2023; Farquhar et al. 2024), in nats
  (`weighted_semantic_entropy`; the discrete one over class sizes is `a2c.metrics.semantic_entropy`, in bits);
- CoCoA (Vashurin et al. 2025): an answer's uncertainty times its mean dissimilarity to the samples.

Every function returns one float per answer (or per question) in a float64 array, oriented as
LM-Polygraph's estimators are: higher = more uncertain, except `sequence_log_likelihood`, a confidence.

Batching: a run holds hundreds of thousands of short answers, and a numpy call costs more than the
arithmetic of one answer. The ragged inputs (one 1-D array per answer) are therefore concatenated once and
reduced per answer with `np.add.reduceat`: past reading each answer's array once, the cost is a few numpy
calls per batch, not per answer.
Answers with no tokens (and questions with no samples) give NaN where a mean is undefined, as
`np.mean` of nothing does in LM-Polygraph, and 0 where the value is a sum.

Inputs are validated with a ValueError naming the argument and the index of the offending answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# log-probabilities may come back a little above 0 from a backend's float32 softmax; beyond this, the
# numbers are not log-probabilities (logits, or probabilities) and are refused
LOGPROB_SLACK = 1e-4
SemanticEstimator = Literal["exact", "monte_carlo"]


class Ragged:
    """Many 1-D arrays as one: `values` concatenated, `lengths[i]` of answer i, `owner[j]` of value j.

    Built once per batch so that every measure reduces over the same concatenation; `name` is the argument
    the arrays came from, for error messages."""

    def __init__(self, values: FloatArray, lengths: IntArray, name: str) -> None:
        self.name = name
        self.values = values
        self.lengths = lengths
        ends = np.cumsum(lengths)
        self.starts: IntArray = (ends - lengths).astype(np.int64)

    @classmethod
    def of(cls, arrays: Sequence[object], name: str) -> Ragged:
        """Concatenate one 1-D array per answer (a ValueError names the first that is not one)."""
        parts: list[FloatArray] = []
        for i, item in enumerate(arrays):
            try:
                part = np.asarray(item, dtype=np.float64)
            except (TypeError, ValueError) as error:
                raise ValueError(f"{name}[{i}]: not an array of numbers ({error})") from None
            if part.ndim != 1:
                raise ValueError(f"{name}[{i}]: expected a 1-D array, got shape {part.shape}")
            parts.append(part)
        lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
        return cls(np.concatenate(parts) if parts else np.zeros(0), lengths, name)

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def owner(self) -> IntArray:
        """The answer index of every concatenated value."""
        return np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)

    def first_bad(self, bad: npt.ArrayLike) -> int:
        """The answer holding the first True of a mask over `values`."""
        return int(np.searchsorted(np.cumsum(self.lengths), int(np.argmax(bad)), side="right"))

    def sums(self, values: FloatArray | None = None) -> FloatArray:
        """Σ of each answer's values (0 for an empty answer)."""
        return segment_sums(self.values if values is None else values, self.starts, self.lengths)

    def means(self, values: FloatArray | None = None) -> FloatArray:
        """Mean of each answer's values (NaN for an empty answer)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sums(values) / self.lengths


def segment_sums(values: FloatArray, starts: IntArray, lengths: IntArray) -> FloatArray:
    """Σ over consecutive segments of `values`; empty segments give 0.

    `np.add.reduceat` returns the element at an empty segment's start instead of 0, so the reduction runs
    over the non-empty segments only: their starts are strictly increasing and each one's end is the next
    one's start, because the empty segments in between have no length."""
    out = np.zeros(len(lengths), dtype=np.float64)
    full = lengths > 0
    if full.any():
        out[full] = np.add.reduceat(values, starts[full])
    return out


def _logprobs(token_logprobs: Sequence[object] | Ragged, name: str = "token_logprobs") -> Ragged:
    ragged = token_logprobs if isinstance(token_logprobs, Ragged) else Ragged.of(token_logprobs, name)
    bad = ~np.isfinite(ragged.values) | (ragged.values > LOGPROB_SLACK)
    if bad.any():
        i = ragged.first_bad(bad)
        value = ragged.values[int(np.argmax(bad))]
        raise ValueError(f"{ragged.name}[{i}]: {float(value)!r} is not a log-probability (finite, ≤ 0)")
    return ragged


def sequence_log_likelihood(token_logprobs: Sequence[object]) -> FloatArray:
    """log P(y|x) = Σ_l ℓ_l of each answer: a confidence (higher = more sure).

    Args:
        token_logprobs: one 1-D array per answer, the chosen tokens' log-probabilities ℓ_l.

    Returns:
        One value ≤ 0 per answer (0 for an answer with no tokens).
    """
    return _logprobs(token_logprobs).sums()


def maximum_sequence_probability(token_logprobs: Sequence[object]) -> FloatArray:
    """MSP uncertainty −Σ_l ℓ_l = −log P(y|x) of each answer, as LM-Polygraph's MaximumSequenceProbability.

    Args:
        token_logprobs: one 1-D array per answer, the chosen tokens' log-probabilities ℓ_l.

    Returns:
        One value ≥ 0 per answer, higher = more uncertain (0 for an answer with no tokens).
    """
    return -sequence_log_likelihood(token_logprobs)


def log_perplexity(token_logprobs: Sequence[object]) -> FloatArray:
    """−(1/L)·Σ_l ℓ_l of each answer: the log of its perplexity, which is the value LM-Polygraph's
    `Perplexity` estimator returns (under that name). Length-normalised, so long answers are not
    penalised for their length as MSP penalises them.

    Args:
        token_logprobs: one 1-D array per answer, the chosen tokens' log-probabilities ℓ_l.

    Returns:
        One value ≥ 0 per answer, higher = more uncertain (NaN for an answer with no tokens).
    """
    return -_logprobs(token_logprobs).means()


def perplexity(token_logprobs: Sequence[object]) -> FloatArray:
    """exp(−(1/L)·Σ_l ℓ_l) of each answer, the perplexity proper (1 = every token certain).

    Monotone in `log_perplexity`, so both rank answers alike (same AUROC, same selection); this form is
    the one papers print.

    Args:
        token_logprobs: one 1-D array per answer, the chosen tokens' log-probabilities ℓ_l.

    Returns:
        One value ≥ 1 per answer, higher = more uncertain (NaN for an answer with no tokens).
    """
    return np.exp(log_perplexity(token_logprobs))


def token_entropies(topk_logprobs: Sequence[object], renormalise: bool = False) -> tuple[FloatArray, Ragged]:
    """Entropy H_l = −Σ_v p_l(v)·log p_l(v) at every position of every answer, over the top-k given.

    Args:
        topk_logprobs: one 2-D array per answer, L × k (row l: the log-probabilities of the k most likely
            tokens at position l). Answers may differ in k. −inf entries are absent tokens and are left out
            (0·log 0 = 0), so rows of different length can be padded with −inf.
        renormalise: False (LM-Polygraph's definition): the top-k probabilities are used as given, so the
            entropy leaves out the vocabulary's tail (a lower bound of the full entropy, exact when k
            covers the vocabulary). True: each row is rescaled to sum to 1 first (the
            entropy of the top-k as a distribution of its own).

    Returns:
        The entropies of all positions concatenated, and the `Ragged` that says which answer each belongs
        to (`mean_token_entropy` reduces it).
    """
    rows: list[FloatArray] = []
    for i, item in enumerate(topk_logprobs):
        try:
            block = np.asarray(item, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"topk_logprobs[{i}]: not an array of numbers ({error})") from None
        if block.ndim == 1 and block.size == 0:  # an answer with no tokens
            block = block.reshape(0, 1)
        if block.ndim != 2 or block.shape[1] == 0:
            raise ValueError(f"topk_logprobs[{i}]: expected an L × k array (k ≥ 1), got shape {block.shape}")
        rows.append(block)
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    ragged = Ragged(np.zeros(0), lengths, "topk_logprobs")
    widths = {r.shape[1] for r in rows}
    if len(widths) <= 1:  # the usual case: one k for the whole batch, a single concatenation
        table = np.concatenate(rows) if rows else np.zeros((0, 1))
    else:  # pad the narrower answers with −inf, which counts as an absent token
        table = np.full((int(lengths.sum()), max(widths)), -np.inf)
        for block, start in zip(rows, ragged.starts, strict=True):
            table[start:start + len(block), :block.shape[1]] = block
    bad = np.isnan(table) | (table > LOGPROB_SLACK)
    if bad.any():
        bad_rows = bad.any(axis=1)
        value = float(table[int(np.argmax(bad_rows))][bad[int(np.argmax(bad_rows))]][0])
        raise ValueError(f"topk_logprobs[{ragged.first_bad(bad_rows)}]: {value!r} is not a log-probability "
                         "(≤ 0 or −inf)")
    present = np.isfinite(table)
    empty = ~present.any(axis=1)
    if empty.any():
        answer = ragged.first_bad(empty)
        raise ValueError(f"topk_logprobs[{answer}]: position {int(np.argmax(empty)) - ragged.starts[answer]} "
                         "has no finite log-probability")
    if renormalise:
        top = np.max(table, axis=1, keepdims=True)
        table = table - (top + np.log(np.exp(table - top).sum(axis=1, keepdims=True)))
    else:
        mass = np.exp(table).sum(axis=1)
        over = mass > 1.0 + LOGPROB_SLACK
        if over.any():
            raise ValueError(f"topk_logprobs[{ragged.first_bad(over)}]: a position's top-k probabilities "
                             f"sum to {mass[int(np.argmax(over))]:.6g} > 1 (logits, not log-probabilities?)")
    finite = np.where(present, table, 0.0)
    entropies: FloatArray = -(np.exp(finite) * finite * present).sum(axis=1)
    ragged.values = entropies
    return entropies, ragged


def mean_token_entropy(topk_logprobs: Sequence[object], renormalise: bool = False) -> FloatArray:
    """(1/L)·Σ_l H_l of each answer, H_l the entropy over the top-k log-probabilities of position l.

    Over the top-k only: with renormalise=False (the default, LM-Polygraph's MeanTokenEntropy, whose
    EntropyCalculator sums −p·log p over the finite entries of each position's log-probabilities) the
    missing tail's share is simply left out; with renormalise=True each position's top-k is rescaled to
    a distribution first. Both equal the full entropy only when k covers the vocabulary.

    Args:
        topk_logprobs: one L × k array per answer (see `token_entropies`).
        renormalise: rescale each position's top-k to sum to 1 before taking its entropy.

    Returns:
        One value ≥ 0 per answer, higher = more uncertain (NaN for an answer with no positions).
    """
    entropies, ragged = token_entropies(topk_logprobs, renormalise)
    return ragged.means(entropies)


def _group_logsumexp(values: FloatArray, starts: IntArray) -> FloatArray:
    """log Σ exp over consecutive non-empty segments starting at `starts`, stable (max subtracted)."""
    top = np.maximum.reduceat(values, starts)
    sizes = np.diff(np.append(starts, len(values)))
    shifted = np.exp(values - np.repeat(top, sizes))
    result: FloatArray = top + np.log(np.add.reduceat(shifted, starts))
    return result


def weighted_semantic_entropy(log_likelihoods: Sequence[object], cluster_ids: Sequence[object],
                     estimator: SemanticEstimator = "exact", normalise: bool = True) -> FloatArray:
    """Semantic entropy of each question's samples, each class weighted by its members' likelihoods.

    A class C's log-mass is log Σ_{s∈C} P(s|x), the log-sum-exp of its members' log-likelihoods (pass
    length-normalised log-likelihoods for the length-normalised variant). With normalise=True the masses
    are divided by their sum over the question's classes, p(C) = P(C) / Σ_C' P(C').

    - estimator="exact" (Farquhar et al. 2024): SE = −Σ_C p(C)·log p(C), each class once.
    - estimator="monte_carlo" (Kuhn et al. 2023): SE = −(1/M)·Σ_j log p(C_j) over the M samples, each
      sample's class. With normalise=False this is LM-Polygraph's SemanticEntropy (its default "sum" class
      probabilities and "mean" entropy estimation), which does not normalise over classes.

    Every sample counts, duplicates included (as LM-Polygraph's default, use_unique_responses=False): a
    text sampled twice adds its probability twice to its class. To count each distinct text once, pass
    only the distinct texts. With all log-likelihoods equal the normalised exact value is the discrete
    semantic entropy over class sizes (`a2c.metrics.semantic_entropy`, which is in bits: × ln 2).

    Args:
        log_likelihoods: one 1-D array per question, the samples' log P(s|x) (finite).
        cluster_ids: one 1-D integer array per question, the class of each sample (any integer labels).
        estimator: "exact" or "monte_carlo", as above.
        normalise: normalise the class masses over the question's classes.

    Returns:
        One value per question in nats, higher = more uncertain (NaN for a question with no samples).
        Normalised and exact, the value lies in [0, ln(number of classes)].
    """
    if estimator not in ("exact", "monte_carlo"):
        raise ValueError(f"estimator must be 'exact' or 'monte_carlo', got {estimator!r}")
    if len(log_likelihoods) != len(cluster_ids):
        raise ValueError(f"log_likelihoods has {len(log_likelihoods)} questions, "
                         f"cluster_ids {len(cluster_ids)}")
    lls = Ragged.of(log_likelihoods, "log_likelihoods")
    if not np.isfinite(lls.values).all():
        i = lls.first_bad(~np.isfinite(lls.values))
        raise ValueError(f"log_likelihoods[{i}]: log-likelihoods must be finite")
    labels_parts: list[IntArray] = []
    for i, item in enumerate(cluster_ids):
        part = np.asarray(item)
        if part.ndim != 1 or len(part) != lls.lengths[i]:
            raise ValueError(f"cluster_ids[{i}]: expected {lls.lengths[i]} labels (one per sample), "
                             f"got shape {part.shape}")
        if part.size and not np.issubdtype(part.dtype, np.integer):
            raise ValueError(f"cluster_ids[{i}]: labels must be integers, got dtype {part.dtype}")
        labels_parts.append(part.astype(np.int64))
    n_questions = len(lls)
    result = np.full(n_questions, np.nan)
    if lls.values.size == 0:
        return result
    labels = np.concatenate(labels_parts)
    question = lls.owner
    # group the samples by (question, class): sorted so that each class is one segment, and each
    # question's classes are consecutive segments
    order = np.lexsort((labels, question))
    q_sorted, l_sorted = question[order], labels[order]
    new_class = np.ones(len(order), dtype=bool)
    new_class[1:] = (q_sorted[1:] != q_sorted[:-1]) | (l_sorted[1:] != l_sorted[:-1])
    class_starts = np.flatnonzero(new_class)
    class_of_sample = np.empty(len(order), dtype=np.int64)
    class_of_sample[order] = np.cumsum(new_class) - 1
    class_mass = _group_logsumexp(lls.values[order], class_starts)  # log P(C)
    class_question = q_sorted[class_starts]
    present = lls.lengths > 0
    if normalise:
        question_starts = np.flatnonzero(np.r_[True, class_question[1:] != class_question[:-1]])
        log_total = _group_logsumexp(class_mass, question_starts)
        class_mass = class_mass - np.repeat(log_total, np.diff(np.append(question_starts, len(class_mass))))
    if estimator == "exact":
        n_classes = np.bincount(class_question, minlength=n_questions)
        starts = np.concatenate(([0], np.cumsum(n_classes)[:-1])).astype(np.int64)
        result[present] = segment_sums(-np.exp(class_mass) * class_mass, starts, n_classes)[present]
    else:
        per_sample = class_mass[class_of_sample]  # in the caller's sample order, like lls.values
        result[present] = (lls.sums(-per_sample) / np.maximum(lls.lengths, 1))[present]
    return result + 0.0  # + 0.0: no -0.0 for a single class


def cocoa(uncertainty: object, similarities: Sequence[object]) -> FloatArray:
    """CoCoA (Vashurin et al. 2025): u(y*)·(1/M)·Σ_i (1 − s(y*, y_i)) for each question.

    The main answer's own uncertainty u(y*) (MSP, log-perplexity or mean token entropy) times its mean
    dissimilarity to the M samples, s a judge's similarity in [0, 1]. An answer the model is sure of and
    that agrees with every sample scores 0 on both counts.

    Args:
        uncertainty: one value per question, the main answer's uncertainty (higher = less sure).
        similarities: one 1-D array per question, s(y*, y_i) of the main answer to each sample.

    Returns:
        One value per question, higher = more uncertain (NaN for a question with no samples, or whose
        uncertainty is NaN).
    """
    u = np.asarray(uncertainty, dtype=np.float64)
    if u.ndim != 1:
        raise ValueError(f"uncertainty: expected one value per question, got shape {u.shape}")
    sims = Ragged.of(similarities, "similarities")
    if len(sims) != len(u):
        raise ValueError(f"uncertainty has {len(u)} questions, similarities {len(sims)}")
    if np.isinf(u).any():  # NaN passes through: a main answer without tokens has no log-perplexity
        raise ValueError(f"uncertainty[{int(np.argmax(np.isinf(u)))}]: infinite")
    bad = ~((sims.values >= 0.0) & (sims.values <= 1.0))
    if bad.any():
        i = sims.first_bad(bad)
        raise ValueError(f"similarities[{i}]: {float(sims.values[int(np.argmax(bad))])!r} is outside [0, 1]")
    result: FloatArray = u * sims.means(1.0 - sims.values)
    return result


def cocoa_msp(token_logprobs: Sequence[object], similarities: Sequence[object]) -> FloatArray:
    """CoCoA with MSP: −log P(y*|x) times the mean dissimilarity, as LM-Polygraph's CocoaMSP.

    Args:
        token_logprobs: one 1-D array per question, the main answer's chosen-token log-probabilities.
        similarities: one 1-D array per question, the main answer's similarity to each sample.

    Returns:
        One value ≥ 0 per question, higher = more uncertain.
    """
    return cocoa(maximum_sequence_probability(token_logprobs), similarities)


def cocoa_ppl(token_logprobs: Sequence[object], similarities: Sequence[object]) -> FloatArray:
    """CoCoA with the log-perplexity −(1/L)·Σ ℓ_l, as LM-Polygraph's CocoaPPL (which calls it PPL).

    Args:
        token_logprobs: one 1-D array per question, the main answer's chosen-token log-probabilities.
        similarities: one 1-D array per question, the main answer's similarity to each sample.

    Returns:
        One value ≥ 0 per question, higher = more uncertain.
    """
    return cocoa(log_perplexity(token_logprobs), similarities)


def cocoa_mte(topk_logprobs: Sequence[object], similarities: Sequence[object],
              renormalise: bool = False) -> FloatArray:
    """CoCoA with the mean token entropy over the top-k, as LM-Polygraph's CocoaMTE.

    Args:
        topk_logprobs: one L × k array per question, the main answer's top-k log-probabilities.
        similarities: one 1-D array per question, the main answer's similarity to each sample.
        renormalise: as `mean_token_entropy`.

    Returns:
        One value ≥ 0 per question, higher = more uncertain.
    """
    return cocoa(mean_token_entropy(topk_logprobs, renormalise), similarities)
