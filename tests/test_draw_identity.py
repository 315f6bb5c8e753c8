"""The request-cache key records where an in-process answer was drawn (`SampleBackend.draw_identity`): the
same request on another device type or in another dtype is another key, so a GPU run never reuses CPU draws
(or the reverse); the CPU at float32 (identity None) keeps the exact keys of the release before, pinned
here."""

from __future__ import annotations

from a2c.llm.base import GenerationRequest, Message
from a2c.llm.sampling import CachedGenerator, request_key
from a2c.llm.scripted import ScriptedBackend
from a2c.system.cache import Cache

GREEDY = GenerationRequest(prompt="The capital of France is", max_tokens=8)
SAMPLED = GenerationRequest(messages=(Message("user", "Name a colour."),), temperature=0.7, top_p=0.9, seed=3)
# computed with the code of the release before draw identities (a2c/llm/sampling.py at 97868dd)
PINNED = {("transformers", GREEDY, 0): "b178ab5c1ee948799990e06eea8dcc32b6fd0aa1276d0df7929e71dc5d7b3de4",
          ("vllm", SAMPLED, 1): "faa45183894326c944115246c86f5dc131fc670aa1afa01ec7392501e52f588f"}


def test_the_cpu_float32_key_is_the_key_of_the_release_before():
    for (backend, request, sample), key in PINNED.items():
        assert request_key(backend, "SmolLM2-135M-Instruct", request, sample) == key
        assert request_key(backend, "SmolLM2-135M-Instruct", request, sample, None, None) == key


def test_each_device_type_and_dtype_is_its_own_key():
    drawn = [None, {"device": "cuda", "dtype": "bfloat16"}, {"device": "cuda", "dtype": "float32"},
             {"device": "cpu", "dtype": "bfloat16"}, {"device": "mps", "dtype": "float32"}]
    for request in (GREEDY, SAMPLED):
        keys = {request_key("transformers", "m", request, 0, drawn=d) for d in drawn}
        assert len(keys) == len(drawn)
    # the identity is data, not an ordering of its keys
    assert request_key("vllm", "m", GREEDY, 0, drawn={"device": "cuda", "dtype": "float16"}) == \
        request_key("vllm", "m", GREEDY, 0, drawn={"dtype": "float16", "device": "cuda"})


class Drawn(ScriptedBackend):
    """The scripted model as if drawn on a device: its identity is what the test says."""

    def __init__(self, identity: dict[str, str] | None) -> None:
        super().__init__("scripted:a|b|c")
        self.identity, self.asked = identity, 0

    def draw_identity(self) -> dict[str, str] | None:
        self.asked += 1
        return self.identity


def test_a_gpu_run_does_not_reuse_cpu_draws_from_the_cache(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    requests = [GREEDY, SAMPLED]
    on_cpu = CachedGenerator(Drawn(None), cache)
    on_cpu.generate(requests)
    assert on_cpu.stats.generated == 2
    on_gpu = Drawn({"device": "cuda", "dtype": "bfloat16"})
    gpu = CachedGenerator(on_gpu, cache)
    gpu.generate(requests)
    gpu.generate(requests)
    assert (gpu.stats.generated, gpu.stats.cached) == (2, 2)  # its own entries, then served from them
    assert on_gpu.asked == 1  # asked once per generator
    again = CachedGenerator(Drawn(None), cache)
    again.generate(requests)
    assert (again.stats.generated, again.stats.cached) == (0, 2)  # the CPU entries are still the CPU's


def test_a_new_sampler_keys_sampled_requests_only():
    """The transformers backend's batched sampler draws other tokens from one seed than the per-row
    generators before it: its sampled keys move, its greedy keys (pinned above) do not."""
    from a2c.llm.transformers_backend import TransformersBackend

    sampler = TransformersBackend.sampler
    assert sampler is not None
    greedy = PINNED[("transformers", GREEDY, 0)]
    assert request_key("transformers", "SmolLM2-135M-Instruct", GREEDY, 0, sampler=sampler) == greedy
    before = request_key("transformers", "SmolLM2-135M-Instruct", SAMPLED, 0)
    assert request_key("transformers", "SmolLM2-135M-Instruct", SAMPLED, 0, sampler=sampler) != before


def test_the_generator_keys_with_its_backends_sampler(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    CachedGenerator(Drawn(None), cache).generate([GREEDY, SAMPLED])
    newer = Drawn(None)
    newer.sampler = "another"
    again = CachedGenerator(newer, cache)
    again.generate([GREEDY, SAMPLED])
    assert (again.stats.cached, again.stats.generated) == (1, 1)  # the greedy answer is served, not the draw
