"""`embedding`: cosine similarity of sentence embeddings (offline default: the embedded all-MiniLM-L6-v2).

Any sentence-transformers model works: it embeds with its own modules (pooling, Dense layers, normalisation)
and prompts. A bi-encoder needs one forward pass per unique *text*, not per pair: the pair scores are dot
products of unit vectors, so the batched pass embeds every distinct answer of the dataset once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from a2c.judges.base import ModelJudge, ModelName, ModelOptions, Pair, Threshold
from a2c.judges.hf import SentenceEncoder, sentence_encoder

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


class EmbeddingJudge(ModelJudge):
    """Cosine similarity clipped to [0, 1] (negative cosine means unrelated, not "less than unrelated")."""

    name = "embedding"
    label = "Emb"
    directional = False

    class Options(ModelOptions):
        model: ModelName = DEFAULT_EMBEDDING_MODEL
        threshold: Threshold = 0.8
        # instruction-tuned embedders (E5, BGE, nomic ...) expect a prefix; by default the model's own
        prompt_name: str | None = Field(None, description="the model's prompt to put before each answer "
                                                          "(default: the model's default prompt, if any)")
        prompt: str | None = Field(None, description="text to put before each answer, instead of a named "
                                                     "prompt")

        @field_validator("prompt")
        @classmethod
        def _one_prompt(cls, value: str | None, info: ValidationInfo) -> str | None:
            if value is not None and info.data.get("prompt_name") is not None:
                raise ValueError("give `prompt` or `prompt_name`, not both")
            return value

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.prompt_name = options.prompt_name
        self.prompt = options.prompt

    @property
    def encoder(self) -> SentenceEncoder:
        return sentence_encoder(self.model, self.max_length, self.offline, self.prompt_name, self.prompt,
                                self.device)

    def identity(self) -> dict[str, Any]:
        # prompts enter only when set, so scores cached before the option existed keep their keys
        prompts = {"prompt_name": self.prompt_name, "prompt": self.prompt}
        return {"judge": self.name, "model": self.model, "max_length": self.max_length,
                **{k: v for k, v in prompts.items() if v is not None}}

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        texts = list(dict.fromkeys(t for p in pairs for t in (p.a, p.b)))
        vectors = self.encoder.unit_vectors(texts, self.batch_size)
        row = {t: k for k, t in enumerate(texts)}
        first = vectors[[row[p.a] for p in pairs]]
        second = vectors[[row[p.b] for p in pairs]]
        cosines: np.ndarray = np.clip(np.einsum("ij,ij->i", first, second), 0.0, 1.0)
        return cosines
