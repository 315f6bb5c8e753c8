"""Exact top-p (nucleus) masks without sorting the vocabulary.

vLLM's CPU sampler finds a nucleus by sorting all ~49k logits of every sampled row at every step; for a
135M-parameter model that sort is a large share of the time per generated token. The nucleus of a peaked
distribution lies among its most likely few tokens, so `nucleus_mask` takes the `k` largest probabilities
(a partial selection, no full sort), and when their mass reaches p the nucleus is among them; otherwise the
row falls back to the full sort. The kept set is vLLM's rule: a token is kept when the mass of the tokens
more likely than it is below p (and the most likely one always). `a2c.llm.vllm_nucleus` applies it inside
vLLM's engine (`mask_rows`); torch only here, so the rule is tested without vLLM. Every tensor is made on
the device of the logits, so the same code runs on vLLM's CUDA build (not on MPS, which has no float64).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

TOP_P_ARG = "a2c_top_p"  # where a request carries its p for the engine's processor
PREFILTER_K = 64  # tokens selected per row; a row whose nucleus is wider falls back to the full sort


def nucleus_mask(probs: torch.Tensor, top_p: torch.Tensor, k: int = PREFILTER_K) -> torch.Tensor:
    """Which tokens each row's nucleus keeps (rows of probabilities, one p per row): a token is kept when
    the mass of the tokens ranked above it is below p. Rows whose k most likely tokens hold at least p are
    decided from those k alone; the others are sorted whole. Masses are summed in float64: vLLM's float32
    running sum over the whole ascending vocabulary drifts by up to ~1e-5, which keeps a few tokens whose
    mass above is just past p (docs/results/benchmarks.md: Speed of the paper's protocol)."""
    k = min(k, probs.shape[-1])
    values, indices = probs.topk(k, dim=-1)  # descending
    p = top_p.to(torch.float64).unsqueeze(-1)
    running = values.to(torch.float64).cumsum(dim=-1)
    above = running - values  # mass ranked above each of the k
    decided = running[:, -1:] >= p
    kept_top = above < p
    kept_top[:, 0] = True
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter_(-1, indices, kept_top)
    wide = (~decided[:, 0]).nonzero().flatten()
    if len(wide):
        ordered, order = probs[wide].sort(dim=-1, descending=True)
        kept = (ordered.to(torch.float64).cumsum(dim=-1) - ordered) < p[wide]
        kept[:, 0] = True
        keep[wide] = torch.zeros_like(kept).scatter_(-1, order, kept)
    return keep


def mask_rows(logits: torch.Tensor, top_p: Mapping[int, float]) -> torch.Tensor:
    """`logits` (one row per request of the batch) with the tokens outside each listed row's nucleus set to
    -inf, in place; rows not in `top_p` are left as they are."""
    if not top_p:
        return logits
    rows = sorted(top_p)
    p = torch.tensor([top_p[r] for r in rows], device=logits.device, dtype=torch.float64)
    if len(rows) == logits.shape[0]:  # every row samples with a nucleus: no gather, mask in place
        kept = nucleus_mask(logits.softmax(dim=-1, dtype=torch.float32), p)
        return logits.masked_fill_(~kept, -float("inf"))
    index = torch.tensor(rows, device=logits.device)
    mask = nucleus_mask(logits[index].softmax(dim=-1, dtype=torch.float32), p)
    logits[index] = logits[index].masked_fill(~mask, -float("inf"))
    return logits


def sampling_args(top_p: float, temperature: float) -> dict[str, Any]:
    """The `SamplingParams` fields for a request under the prefilter: vLLM's own top-p is switched off and
    the processor takes p; a greedy request keeps vLLM's path (no nucleus to take)."""
    if temperature <= 0 or top_p >= 1.0:
        return {"top_p": top_p}
    return {"top_p": 1.0, "extra_args": {TOP_P_ARG: top_p}}
