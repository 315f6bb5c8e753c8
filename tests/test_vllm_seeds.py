"""How the in-process vLLM backend seeds its samples, on a stand-in engine (no vLLM needed): on a GPU each
sample is its own request carrying its own seed; on the CPU build, which dies on per-request seeds, repeated
samples of one prompt are one request with `n=` and no seed (the engine's seed draws them). The draw identity
is None only for the CPU build at its default dtype."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.context import ContextGuard
from a2c.llm.sampling import CachedGenerator, sample_seed
from a2c.llm.vllm_backend import EngineSettings, VLLMBackend


class Params:
    def __init__(self, **fields: Any) -> None:
        self.fields = fields


class Engine:
    """Answers each request with `n` samples naming the request's seed; records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[Params] = []

    def generate(self, prompts: list[Any], params: list[Params], use_tqdm: bool) -> list[Any]:
        self.asked += params
        def sample(p: Params, i: int) -> Any:
            return types.SimpleNamespace(text=f"seed {p.fields.get('seed')} #{i}", finish_reason="length",
                                         token_ids=[3], logprobs=None)

        return [types.SimpleNamespace(prompt_token_ids=[1, 2],
                                      outputs=[sample(p, i) for i in range(p.fields["n"])]) for p in params]


class Tokenizer:
    chat_template = None

    def encode(self, text: str) -> list[int]:
        return [1] * len(text.split())


@pytest.fixture(autouse=True)
def stand_in_vllm(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=Params))


def _backend(device: str, dtype: str = "auto") -> VLLMBackend:
    backend = VLLMBackend.__new__(VLLMBackend)  # no engine start: the parts `run` uses
    backend.model, backend.batch_size, backend.prefilter = "m", 8, True
    backend.settings = EngineSettings("/m", device, seed=0, max_model_len=512, block_size=32, dtype=dtype)
    backend.llm, backend.tokenizer = Engine(), Tokenizer()
    backend.guard = ContextGuard("m", 512, "truncate", reply_in_context=True)
    backend.truncates_to = backend.guard.truncates_to
    return backend


SAMPLED = GenerationRequest(prompt="Name a colour.", temperature=0.8, top_p=0.7, seed=5, n=3, max_tokens=4)
GREEDY = GenerationRequest(prompt="The capital of France is", max_tokens=4)


def test_on_a_gpu_every_sample_is_a_request_with_its_own_seed():
    backend = _backend("cuda")
    out = CachedGenerator(backend).generate([SAMPLED, GREEDY])
    asked = [p.fields for p in backend.llm.asked]
    assert [(a["n"], a.get("seed")) for a in asked if a["temperature"] > 0] == [(1, sample_seed(5, i))
                                                                               for i in range(3)]
    assert len({c.text for c in out[0].completions}) == 3 and isinstance(out[0].completions[0], Completion)
    assert all(a["top_p"] == 1.0 and a["extra_args"] for a in asked if a["temperature"] > 0)  # the prefilter


def test_on_the_cpu_repeated_samples_are_one_request_without_a_seed():
    backend = _backend("cpu")
    out = CachedGenerator(backend).generate([SAMPLED, GREEDY])
    asked = [p.fields for p in backend.llm.asked]
    assert sorted(a["n"] for a in asked) == [1, 3] and not any("seed" in a for a in asked)
    assert [c.text for c in out[0].completions] == ["seed None #0", "seed None #1", "seed None #2"]


@pytest.mark.parametrize(("native", "device", "asked", "runs"), [
    (False, "cpu", "auto", "float32"),  # an AVX2 CPU: bfloat16 would be torch's scalar fallback
    (True, "cpu", "auto", "auto"),  # AVX512-BF16 / AMX: vLLM's own choice (bfloat16)
    (False, "cpu", "bfloat16", "bfloat16"),  # asked for: kept
    (False, "cuda", "auto", "auto"),
])
def test_auto_on_a_cpu_without_native_bfloat16_runs_float32(monkeypatch, native, device, asked, runs):
    from a2c.llm import vllm_backend
    from a2c.llm.config import VLLMConfig

    monkeypatch.setattr(vllm_backend, "cpu_has_native_bf16", lambda: native)
    assert vllm_backend.engine_dtype(device, asked) == runs
    settings = vllm_backend.engine_settings(VLLMConfig(device="cpu", dtype=asked), "/m") if device == "cpu" \
        else None
    if settings is not None:
        assert settings.dtype == runs and settings.llm_kwargs()["dtype"] == runs
        backend = _backend("cpu", settings.dtype)
        assert backend.draw_identity() == (None if runs == "auto" else {"device": "cpu", "dtype": runs})


def test_the_draw_identity_leaves_the_cpu_default_alone():
    assert _backend("cpu").draw_identity() is None
    assert _backend("cpu", "bfloat16").draw_identity() == {"device": "cpu", "dtype": "bfloat16"}
    # the engine's own dtype where it reports one (vLLM resolves `auto`), else the configured one
    gpu = _backend("cuda")
    assert gpu.draw_identity() == {"device": "cuda", "dtype": "auto"}
    gpu.llm.llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(dtype="torch.bfloat16"))
    assert gpu.draw_identity() == {"device": "cuda", "dtype": "bfloat16"}
