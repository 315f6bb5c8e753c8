"""Cross-encoder judges: paraphrase probability (`pp`) and NLI entailment / contradiction.

The label a score reads is looked up by name in the model's own `id2label`, never by a hard-coded index:
MNLI checkpoints disagree on label order. Models load as `sentence_transformers.CrossEncoder` (its activation
applies before the softmax); `entail` and `contra` on the same model share one `PairScorer`, so each
ordered pair costs one forward pass for both matrices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from a2c.judges.base import ModelJudge, ModelName, ModelOptions, Pair, Threshold
from a2c.judges.hf import PairScorer, label_index, pair_scorer

PAPER_NLI_MODEL = "microsoft/deberta-v2-xxlarge-mnli"
PAPER_PP_MODEL = "domenicrosati/deberta-v3-large-finetuned-paws-paraphrase-detector"


class CrossEncoderJudge(ModelJudge):
    """Reads the probability of one label of a sequence-pair classifier, batched over unique pairs."""

    directional = True
    labels: ClassVar[tuple[str, ...]]

    class Options(ModelOptions):
        label: str | None = Field(None, description="the `id2label` name to read (default: found by name)")

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.wanted = (options.label,) if options.label else self.labels
        self._scorer: PairScorer | None = None
        self._label: int | None = None

    @property
    def scorer(self) -> PairScorer:
        """Loaded on first use, so building a judge from a preset costs nothing until it scores."""
        if self._scorer is None:
            self._scorer = pair_scorer(self.model, self.max_length, self.offline, self.device)
            self._label = label_index(self._scorer.config, self.wanted, self.model)
        return self._scorer

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "model": self.model, "label": list(self.wanted),
                "max_length": self.max_length}

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        probs = self.scorer.probabilities([(p.a, p.b) for p in pairs], self.batch_size)
        return probs[:, self._label]


class ParaphraseJudge(CrossEncoderJudge):
    """P(paraphrase) from a paraphrase classifier (paper: DeBERTa-v3-large on PAWS), threshold 0.8.

    Checkpoints name their positive label differently ("paraphrase", "equivalent", "duplicate", or just
    "LABEL_1"); the first three are found by name, anything else is set with `label:`.
    """

    name = "pp"
    label = "PP"
    labels = ("paraphrase", "equivalent", "duplicate", "is_paraphrase")

    class Options(CrossEncoderJudge.Options):
        model: ModelName = PAPER_PP_MODEL
        threshold: Threshold = 0.8


class EntailmentJudge(CrossEncoderJudge):
    """P(entailment) of an NLI model, both directions of every pair."""

    name = "entail"
    label = "Entail"
    labels = ("entailment",)

    class Options(CrossEncoderJudge.Options):
        model: ModelName = PAPER_NLI_MODEL


class ContradictionJudge(CrossEncoderJudge):
    """P(contradiction) of an NLI model; lower is more consistent, identical answers score 0."""

    name = "contra"
    label = "Contra"
    labels = ("contradiction",)
    higher_is_consistent = False

    class Options(CrossEncoderJudge.Options):
        model: ModelName = PAPER_NLI_MODEL
