"""The exact top-p of `a2c.llm.top_p` as a vLLM logits processor, for the in-process vLLM engine.

It uses the extension point vLLM documents (`LLM(logits_processors=...)`), no patching of vLLM: a2c sends a
sampled request with `top_p=1.0`, so vLLM's sampler skips its full-vocabulary sort, and the real p in
`extra_args[TOP_P_ARG]` (`a2c.llm.top_p.sampling_args`). vLLM applies argmax-invariant processors after the
temperature and before its own top-k/top-p, which is where a nucleus is taken, so each sample's
distribution is what the request asks for (`tests/test_llm_nucleus.py` compares the masks with vLLM's
sampler on real model logits). Loaded in vLLM's engine process by name (`VLLMConfig.vllm_top_p`); the masking
itself is `a2c.llm.top_p.mask_rows`, tested on the CPU without vLLM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from a2c.llm.top_p import TOP_P_ARG, mask_rows

if TYPE_CHECKING:
    from vllm.config import VllmConfig


class NucleusPrefilter(LogitsProcessor):
    """Applies the top-p of each request that carries one in `extra_args[TOP_P_ARG]` (module docstring)."""

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.device = device
        self.top_p: dict[int, float] = {}  # batch row -> p, only rows that ask for a nucleus

    def is_argmax_invariant(self) -> bool:
        return True  # the most likely token is always kept

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.top_p.pop(index, None)
        for index, params, _, _ in batch_update.added:
            p = (params.extra_args or {}).get(TOP_P_ARG)
            if p is not None and p < 1.0:
                self.top_p[index] = float(p)
            else:
                self.top_p.pop(index, None)
        for a, b, direction in batch_update.moved:
            at_a, at_b = self.top_p.pop(a, None), self.top_p.pop(b, None)
            if at_a is not None:
                self.top_p[b] = at_a
            if at_b is not None and direction == MoveDirectionality.SWAP:
                self.top_p[a] = at_b

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        return mask_rows(logits, self.top_p)
