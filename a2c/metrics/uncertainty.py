"""Black-box uncertainty of one answer set from its pairwise similarities (graph measures).

Lin, Trivedi & Sun 2023, "Generating with Confidence": the n answers of a question are the nodes of a
graph whose edge weights are the judge's similarities. Symmetrised to W = (S + Sᵀ)/2 (a directional judge
scores both orders), with degrees d_j = Σ_k W_jk (the diagonal, an answer's similarity to itself, counts,
as in the paper and LM-Polygraph) and the normalised Laplacian L = I − D^{-1/2} W D^{-1/2}:

- U_NumSet: the number of semantic sets, connected components of the "equivalent both ways" graph.
- U_EigV = Σ_k max(0, 1 − λ_k) over L's eigenvalues: a continuous number of sets (1 … n).
- U_Deg = trace(nI − D)/n² = 1 − mean(d)/n, and per answer C_Deg(j) = d_j/n.
- U_Ecc: answer j is embedded as v_j, its row of L's eigenvectors whose eigenvalue is below a threshold
  (LM-Polygraph's way of picking the paper's k smallest, default 0.9); U_Ecc = ‖[v_j − v̄]_j‖ (Frobenius,
  as LM-Polygraph), and per answer C_Ecc(j) = −‖v_j − v̄‖.

Nikitin et al. 2024, "Kernel Language Entropy": the von Neumann entropy of the heat kernel exp(−t·L) of a
weight graph, L = D − W the combinatorial Laplacian, scaled by log n to [0, 1]. `nli_weights` builds W
from NLI probabilities as LM-Polygraph does (entailment 1, neutral ½, contradiction 0).

Sign convention: `UNCERTAINTY_MEASURES` declares for every measure whether higher means *less* confident
("uncertainty") or *more* ("confidence"), the statistic it needs and whether it gives one value per set
or per answer; `Measure.as_confidence` turns any of them into "higher = more confident".

Inputs are validated (square, finite, similarities in [0, 1]) with a ValueError; sets of fewer than two
answers are undefined and give None, as the other set metrics (`a2c.metrics.consistency`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from a2c.common.registry import Registry
from a2c.metrics.matrices import square
from a2c.metrics.whitebox import log_perplexity, maximum_sequence_probability

ECCENTRICITY_THRESHOLD = 0.9  # LM-Polygraph's eigenvalue cut for the eccentricity embedding
KLE_TIME = 0.3  # LM-Polygraph's heat-kernel time t (its default, from the KLE paper)
_ZERO_EIGENVALUE = 1e-8  # LM-Polygraph drops smaller density eigenvalues from the entropy sum (0·log 0)
_NEUTRAL_SLACK = 1e-6  # entailment + contradiction may exceed 1 by this much (softmax rounding)


def _numbers(arr: np.ndarray, name: str) -> npt.NDArray[np.float64]:
    """`arr` (any shape) as floats, refused unless finite numbers in [0, 1] (what every judge returns)."""
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must hold numbers in [0, 1], got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    if arr.size and (arr.min() < 0.0 or arr.max() > 1.0):
        raise ValueError(f"{name} entries must lie in [0, 1], got {arr.min():.4g} … {arr.max():.4g}")
    return arr


def _unit_interval(matrix: object, name: str) -> npt.NDArray[np.float64]:
    """A square float matrix with entries in [0, 1]."""
    return _numbers(square(matrix, name), name)


def _check_threshold(threshold: float) -> None:
    if not (0.0 < threshold <= 2.0):
        raise ValueError(f"threshold must be in (0, 2] (normalised Laplacian eigenvalues lie in [0, 2]), "
                         f"got {threshold}")


class MatrixStack:
    """Same-size matrices of many sets, stacked k×n×n, with what the measures read computed once for the
    whole stack and shared: the symmetrised weights, the normalised Laplacian, its eigenvalues
    (`eigvalsh`, for U_EigV) and eigenpairs (`eigh`, for U_Ecc and C_Ecc), the both-ways decisions.

    Why stacks: numpy's linalg calls cost tens of microseconds each whatever the size, and a run asks for
    millions of small ones. Each stacked operation is the per-matrix one applied matrix by matrix (sums
    along the same contiguous axis, LAPACK's routine per matrix), so a set's values do not depend on what
    it is stacked with; a one-matrix stack is how the per-set functions below compute theirs."""

    def __init__(self, matrices: np.ndarray, name: str) -> None:
        if matrices.ndim != 3 or matrices.shape[1] != matrices.shape[2]:
            raise ValueError(f"{name} must be a square n×n matrix, got shape {matrices.shape[1:]}")
        self.matrices = matrices
        self.name = name
        self.size: int = matrices.shape[1]
        self._embeddings: dict[float, list[np.ndarray]] = {}

    def undefined(self) -> list[None]:
        """What a measure gives every set of a stack of fewer than two answers: nothing to compare."""
        return [None] * len(self.matrices)

    @property
    def comparable(self) -> bool:
        """Whether the sets have two answers or more (the similarity measures are defined), asked after the
        matrices are validated as similarities: a bad one-answer matrix is refused, not called undefined."""
        _ = self.weights  # made once, and every matrix validated on the way
        return self.size >= 2

    @classmethod
    def of(cls, matrix: object, name: str) -> MatrixStack:
        """The stack of one matrix."""
        return cls(square(matrix, name)[None], name)

    @cached_property
    def weights(self) -> npt.NDArray[np.float64]:
        """W = (S + Sᵀ)/2 of every matrix, validated as similarities in [0, 1]."""
        arr = _numbers(self.matrices, self.name)
        weights: npt.NDArray[np.float64] = (arr + arr.transpose(0, 2, 1)) / 2
        return weights

    @cached_property
    def degrees(self) -> npt.NDArray[np.float64]:
        degrees: npt.NDArray[np.float64] = self.weights.sum(axis=2)
        return degrees

    @cached_property
    def laplacian(self) -> npt.NDArray[np.float64]:
        """I − D^{-1/2} W D^{-1/2} of every matrix; a ValueError names an answer with no similarity at all."""
        degrees = self.degrees
        if (degrees <= 0).any():
            j = int(np.argmin(degrees.min(axis=0)))
            raise ValueError(f"answer {j} has similarity 0 to every answer, itself included: the normalised "
                             "Laplacian needs a positive degree (judges put 1 on the diagonal)")
        scale = 1.0 / np.sqrt(degrees)
        laplacian: npt.NDArray[np.float64] = \
            np.eye(self.size) - scale[:, :, None] * self.weights * scale[:, None, :]
        return laplacian

    @cached_property
    def eigenvalues(self) -> npt.NDArray[np.float64]:
        return cast(npt.NDArray[np.float64], np.linalg.eigvalsh(self.laplacian))

    @cached_property
    def eigenpairs(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        values, vectors = np.linalg.eigh(self.laplacian)
        return values, vectors

    def centred_embeddings(self, threshold: float) -> list[np.ndarray]:
        """Per matrix, the rows v_j − v̄, v_j the answer's entries in the eigenvectors of eigenvalues below
        `threshold`.

        The eigenvalue 0 is always kept, so an embedding is never empty. A norm of centred rows does not
        depend on the sign or on the basis eigh picks inside a repeated eigenvalue (all of it is kept or
        dropped), so the values are well defined."""
        if threshold not in self._embeddings:
            values, vectors = self.eigenpairs
            embeddings = []
            for below, vector in zip(values < threshold, vectors, strict=True):
                kept = vector[:, below]
                embeddings.append(kept - kept.mean(axis=0))
            self._embeddings[threshold] = embeddings
        return self._embeddings[threshold]

    @cached_property
    def equivalence(self) -> npt.NDArray[np.bool_]:
        """The matrices as both-ways decisions: boolean, or numbers that are all 0 or 1."""
        arr = self.matrices
        if arr.dtype != np.bool_:
            if not np.issubdtype(arr.dtype, np.number) or not np.isin(arr, (0, 1)).all():
                raise ValueError("equivalence matrix must be boolean (or 0/1)")
            arr = arr.astype(bool)
        return arr


def num_semantic_sets_of(stack: MatrixStack) -> Sequence[int | None]:
    """U_NumSet of every matrix of a stack of both-ways decisions (`num_semantic_sets`)."""
    arr = stack.equivalence
    n = stack.size
    if n < 2:
        return stack.undefined()
    reach = (arr & arr.transpose(0, 2, 1)) | np.eye(n, dtype=bool)
    while True:
        step = reach.astype(np.float64)
        grown = step @ step > 0
        if np.array_equal(grown, reach):
            break
        reach = grown
    # each component counted once, at its lowest-numbered answer (the first True of its rows)
    counts: list[int] = np.count_nonzero(reach.argmax(axis=2) == np.arange(n), axis=1).tolist()
    return counts


def eigval_laplacian_of(stack: MatrixStack) -> Sequence[float | None]:
    """U_EigV of every matrix of a stack (`eigval_laplacian`)."""
    if not stack.comparable:
        return stack.undefined()
    values: list[float] = np.clip(1.0 - stack.eigenvalues, 0.0, None).sum(axis=1).tolist()
    return values


def degree_uncertainty_of(stack: MatrixStack) -> Sequence[float | None]:
    """U_Deg of every matrix of a stack (`degree_uncertainty`), each matrix summed as one flat row."""
    if not stack.comparable:
        return stack.undefined()
    n = stack.size
    totals = stack.weights.reshape(len(stack.weights), n * n).sum(axis=1)
    values: list[float] = ((n * n - totals) / (n * n)).tolist()
    return values


def degree_confidence_of(stack: MatrixStack) -> Sequence[np.ndarray | None]:
    """C_Deg of every matrix of a stack (`degree_confidence`)."""
    if not stack.comparable:
        return stack.undefined()
    return list(stack.degrees / stack.size)


def eccentricity_of(stack: MatrixStack, threshold: float = ECCENTRICITY_THRESHOLD) -> Sequence[float | None]:
    """U_Ecc of every matrix of a stack (`eccentricity`)."""
    _check_threshold(threshold)
    if not stack.comparable:
        return stack.undefined()
    return [float(np.linalg.norm(centred)) for centred in stack.centred_embeddings(threshold)]


def eccentricity_confidence_of(stack: MatrixStack, threshold: float = ECCENTRICITY_THRESHOLD
                               ) -> Sequence[np.ndarray | None]:
    """C_Ecc of every matrix of a stack (`eccentricity_confidence`)."""
    _check_threshold(threshold)
    if not stack.comparable:
        return stack.undefined()
    return [-np.linalg.norm(centred, axis=1) for centred in stack.centred_embeddings(threshold)]


def num_semantic_sets(equivalent: object) -> int | None:
    """U_NumSet: connected components of the graph where i ~ j when [i, j] and [j, i] both hold.

    Connected components as in the paper and LM-Polygraph, so a chain a ~ b ~ c is one set even when
    a ≁ c; `semantic_clusters` (representative-based) keeps such chains apart and can count more sets.
    A set holds tens of answers at most, so the reachability matrix is squared until it stops growing
    (log2 n products) instead of calling scipy's `connected_components`, whose input validation costs a
    millisecond per set, more than the metrics stage's whole budget per question.

    Args:
        equivalent: an n×n matrix of equivalence decisions (truthy: row i is equivalent to column j).

    Returns:
        The number of semantic sets, None for fewer than two answers.
    """
    return num_semantic_sets_of(MatrixStack.of(equivalent, "equivalence matrix"))[0]


def eigval_laplacian(similarity: object) -> float | None:
    """U_EigV = Σ_k max(0, 1 − λ_k) over the normalised Laplacian's eigenvalues (1 = one meaning, n = all
    different); the clip at 0 is the paper's and LM-Polygraph's.

    Args:
        similarity: an n×n similarity matrix with entries in [0, 1] (anything numpy reads as one).

    Returns:
        U_EigV, None for fewer than two answers.
    """
    return eigval_laplacian_of(MatrixStack.of(similarity, "similarity matrix"))[0]


def degree_uncertainty(similarity: object) -> float | None:
    """U_Deg = trace(nI − D)/n² = 1 − mean degree/n: 0 when all answers agree fully, (n−1)/n when none do.

    Args:
        similarity: an n×n similarity matrix with entries in [0, 1] (anything numpy reads as one).

    Returns:
        U_Deg, None for fewer than two answers.
    """
    return degree_uncertainty_of(MatrixStack.of(similarity, "similarity matrix"))[0]


def degree_confidence(similarity: object) -> np.ndarray | None:
    """C_Deg(j) = D_jj/n per answer: its mean similarity to all n answers, itself included.

    Args:
        similarity: an n×n similarity matrix with entries in [0, 1] (anything numpy reads as one).

    Returns:
        C_Deg of each answer, None for fewer than two answers.
    """
    return degree_confidence_of(MatrixStack.of(similarity, "similarity matrix"))[0]


def eccentricity(similarity: object, threshold: float = ECCENTRICITY_THRESHOLD) -> float | None:
    """U_Ecc: Frobenius norm of the centred eigenvector embedding (0 = all answers at one point; at most
    √(n−1), reached when no two answers are similar).

    Args:
        similarity: an n×n similarity matrix with entries in [0, 1] (anything numpy reads as one).
        threshold: the eigenvalue cut of the embedding: eigenvectors of the normalised Laplacian with
            eigenvalues below it make up each answer's coordinates.

    Returns:
        U_Ecc, None for fewer than two answers.
    """
    return eccentricity_of(MatrixStack.of(similarity, "similarity matrix"), threshold)[0]


def eccentricity_confidence(similarity: object, threshold: float = ECCENTRICITY_THRESHOLD
                            ) -> np.ndarray | None:
    """C_Ecc(j) = −‖v_j − v̄‖ per answer: answers near the centre of the embedding are more confident.

    Args:
        similarity: an n×n similarity matrix with entries in [0, 1] (anything numpy reads as one).
        threshold: the eigenvalue cut of the embedding: eigenvectors of the normalised Laplacian with
            eigenvalues below it make up each answer's coordinates.

    Returns:
        C_Ecc of each answer, None for fewer than two answers.
    """
    return eccentricity_confidence_of(MatrixStack.of(similarity, "similarity matrix"), threshold)[0]


def nli_weights(entail: object, contra: object) -> np.ndarray:
    """KLE's weight graph from NLI probabilities, as LM-Polygraph: W = P_e + ½·P_n with P_n = 1 − P_e − P_c
    (entailment 1, neutral ½, contradiction 0), then symmetrised (W + Wᵀ)/2 (KLE needs an undirected
    graph; the KLE authors add both directions, which is twice this W, i.e. twice the time t).

    Args:
        entail: the n×n entailment probabilities (row i entails column j).
        contra: the n×n contradiction probabilities, same shape.

    Returns:
        The symmetric n×n weight matrix KLE reads.
    """
    e = _unit_interval(entail, "entailment matrix")
    c = _unit_interval(contra, "contradiction matrix")
    if e.shape != c.shape:
        raise ValueError(f"entailment and contradiction matrices differ in shape: {e.shape} vs {c.shape}")
    if (e + c > 1.0 + _NEUTRAL_SLACK).any():
        raise ValueError("entailment + contradiction probabilities exceed 1 (no room for neutral)")
    weights = e + 0.5 * np.clip(1.0 - e - c, 0.0, None)
    return (weights + weights.T) / 2


def kernel_language_entropy(weights: object, t: float = KLE_TIME) -> float | None:
    """KLE: von Neumann entropy of the normalised heat kernel of a weight graph, scaled by log n.

    Laplacian L = D − W of W = (weights + weightsᵀ)/2 and the heat kernel K = exp(−t·L), from one
    eigendecomposition of L. Normalisation, cut and scaling follow LM-Polygraph (which follows the KLE
    authors' code): K is scaled to unit diagonal and divided by n (a unit-trace density matrix ρ);
    eigenvalues of ρ below 1e-8 are left out of −Σ μ·ln μ; the entropy is divided by ln n, so 0 = one
    meaning (ρ of rank 1), 1 = no edges at all (ρ = I/n). The Laplacian's sign follows the paper, the
    KLE authors' code and LM-Polygraph 0.7.0 (L = D − W, positive semidefinite). LM-Polygraph's graph
    adds both directions (twice `nli_weights`), so its KLE at time t is this one at 2t.

    Args:
        weights: an n×n non-negative weight graph (`nli_weights`, or a similarity matrix).
        t: the heat kernel's time, > 0.

    Returns:
        KLE in [0, 1], None for fewer than two answers.
    """
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"t must be a positive number, got {t}")
    stack = MatrixStack.of(weights, "weight matrix")
    if not stack.comparable:
        return None
    graph, n = stack.weights[0], stack.size
    eigenvalues, eigenvectors = np.linalg.eigh(np.diag(graph.sum(axis=1)) - graph)
    kernel = (eigenvectors * np.exp(-t * eigenvalues)) @ eigenvectors.T
    scale = 1.0 / np.sqrt(np.diag(kernel))  # a heat kernel is positive definite: its diagonal is > 0
    density = scale[:, None] * kernel * scale[None, :] / n
    mu = np.linalg.eigvalsh(density)
    mu = mu[mu > _ZERO_EIGENVALUE]
    return float(-(mu * np.log(mu)).sum() / math.log(n)) + 0.0  # + 0.0: no -0.0 for a single meaning


Kind = Literal["uncertainty", "confidence"]
Statistic = Literal["similarity", "equivalence", "nli", "tokens"]


@dataclass(frozen=True)
class Measure:
    """One measure as a signal table iterates it.

    `statistic` is what to feed `function`: "similarity" a judge's n×n agreement matrix, "equivalence" the
    judge's boolean both-ways decisions (`Judge.equivalent`), "nli" the weight graph
    `nli_weights(entail, contra)` of the `entail` and `contra` judges, "tokens" the answers' chosen-token
    log-probabilities (one array per answer: a white-box measure, `a2c.metrics.whitebox`, which needs a
    backend that returns them). `per_answer` measures return one value per answer (an array), the others
    one per set. `stacked`, where given, computes the measure of
    every matrix of a `MatrixStack` at once, to the same bits as `function` matrix by matrix."""

    # a matrix → its value(s); for the "tokens" statistic, a set's answers' log-probabilities → one per answer
    function: Callable[[Any], float | int | np.ndarray | None]
    kind: Kind
    statistic: Statistic
    label: str  # what tables call it: the paper's symbol
    per_answer: bool = False
    stacked: Callable[[MatrixStack], Sequence[float | int | np.ndarray | None]] | None = None

    def over(self, stack: MatrixStack) -> Sequence[float | int | np.ndarray | None]:
        """The measure of every matrix of a stack: in one pass where it has one, else matrix by matrix."""
        if self.stacked is not None:
            return self.stacked(stack)
        return [self.function(matrix) for matrix in stack.matrices]

    def as_confidence(self, value: float | np.ndarray | None) -> float | np.ndarray | None:
        """The value oriented so that higher = more confident (uncertainties are negated)."""
        if value is None or self.kind == "confidence":
            return value
        return -value


def _msp(answers: Sequence[np.ndarray]) -> np.ndarray:
    """−log P(y|x) of each answer of a set, from its chosen tokens' log-probabilities."""
    return maximum_sequence_probability(list(answers))


def _log_perplexity(answers: Sequence[np.ndarray]) -> np.ndarray:
    """−(1/L)·log P(y|x) of each answer of a set (LM-Polygraph's `Perplexity`)."""
    return log_perplexity(list(answers))


UNCERTAINTY_MEASURES: Registry[Measure] = Registry("uncertainty measure", base=Measure,
                                                       group="a2c.uncertainty")
# in the order a run's uncertainty rows list them (`Registry.items(as_registered=True)`)
for _name, _measure in (
    ("num_semantic_sets",
     Measure(num_semantic_sets, "uncertainty", "equivalence", "U_NumSet", stacked=num_semantic_sets_of)),
    ("eigval_laplacian",
     Measure(eigval_laplacian, "uncertainty", "similarity", "U_EigV", stacked=eigval_laplacian_of)),
    ("degree_uncertainty",
     Measure(degree_uncertainty, "uncertainty", "similarity", "U_Deg", stacked=degree_uncertainty_of)),
    ("eccentricity", Measure(eccentricity, "uncertainty", "similarity", "U_Ecc", stacked=eccentricity_of)),
    ("degree_confidence", Measure(degree_confidence, "confidence", "similarity", "C_Deg", per_answer=True,
                                  stacked=degree_confidence_of)),
    ("eccentricity_confidence", Measure(eccentricity_confidence, "confidence", "similarity", "C_Ecc",
                                        per_answer=True, stacked=eccentricity_confidence_of)),
    ("kernel_language_entropy", Measure(kernel_language_entropy, "uncertainty", "nli", "KLE")),
    # white-box: each answer's own token log-probabilities (`a2c.metrics.whitebox`), where a run has them
    ("maximum_sequence_probability", Measure(_msp, "uncertainty", "tokens", "MSP", per_answer=True)),
    ("perplexity", Measure(_log_perplexity, "uncertainty", "tokens", "PPL", per_answer=True)),
):
    UNCERTAINTY_MEASURES.register(_name)(_measure)
