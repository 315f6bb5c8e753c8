"""The transformers backend on the real embedded SmolLM2 model (few, short generations)."""

from __future__ import annotations

import pydantic
import pytest

from a2c.common.registry import UnknownNameError
from a2c.llm import BACKENDS, CachedGenerator, GenerationRequest, GeneratorConfig, Message, build_generator
from a2c.llm.render import prompt_text
from a2c.llm.sampling import sample_seed
from a2c.models.embedded import ModelNotFoundError, resolve_model
from a2c.system.cache import Cache

pytestmark = pytest.mark.slow

QUESTION = (Message("user", "Name one planet of the solar system."),)


def test_greedy_is_deterministic_and_batch_independent(smollm2):
    alone = smollm2.generate([GenerationRequest(messages=QUESTION, max_tokens=12)])[0]
    other = GenerationRequest(prompt="Once upon a time, in a land far away, there lived", max_tokens=12)
    batched = smollm2.generate([other, GenerationRequest(messages=QUESTION, max_tokens=12)])[1]
    assert alone.text.strip()
    assert alone.text == batched.text
    assert alone.prompt_tokens > 10  # the chat template's system + user turns
    assert alone.completions[0].completion_tokens <= 12


def test_seeds_reproduce_and_differ(smollm2):
    req = GenerationRequest(prompt="My favourite animal is the", temperature=1.0, max_tokens=8, seed=7, n=4)
    first = smollm2.generate([req])[0]
    again = smollm2.generate([req])[0]  # no cache on this fixture: generated a second time
    texts = [c.text for c in first.completions]
    assert texts == [c.text for c in again.completions]  # same seed, same samples
    assert len(set(texts)) >= 2  # sample index changes the seed
    other_seed = smollm2.generate([GenerationRequest(prompt="My favourite animal is the", temperature=1.0,
                                                     max_tokens=8, seed=8, n=4)])[0]
    assert [c.text for c in other_seed.completions] != texts


def test_logprobs_stop_strings_and_finish_reasons(smollm2):
    counted, capped = smollm2.generate([
        GenerationRequest(prompt="1, 2, 3, 4,", max_tokens=20, stop=(" 7",), logprobs=2),
        GenerationRequest(prompt="1, 2, 3, 4,", max_tokens=3),
    ])
    c = counted.completions[0]
    assert " 7" not in c.text and "5" in c.text
    assert c.finish_reason == "stop"
    assert c.logprobs is not None and len(c.logprobs) == c.completion_tokens
    assert all(len(step) >= 2 and all(v <= 0 for v in step.values()) for step in c.logprobs)
    assert capped.completions[0].finish_reason == "length"
    assert capped.completions[0].completion_tokens == 3


def test_cache_serves_rerun_with_zero_model_calls(smollm2, tmp_path):
    gen = CachedGenerator(smollm2.impl, Cache(tmp_path / "c.sqlite"))
    reqs = [GenerationRequest(prompt="The sky is", temperature=0.9, seed=1, n=2, max_tokens=6),
            GenerationRequest(prompt="Water is", max_tokens=6)]
    cold = gen.generate(reqs)
    assert gen.stats.generated == 3 and not any(any(g.cached) for g in cold)
    warm = gen.generate(reqs)
    assert gen.stats.generated == 3 and gen.stats.cached == 3
    assert all(all(g.cached) for g in warm)
    assert [c.text for g in warm for c in g.completions] == [c.text for g in cold for c in g.completions]
    # one more sample of the same request: samples 0-1 from the cache, only sample 2 is generated
    more = gen.generate([GenerationRequest(prompt="The sky is", temperature=0.9, seed=1, n=3, max_tokens=6)])
    assert more[0].cached == [True, True, False] and gen.stats.generated == 4
    # identical requests within one call are generated once
    twins = gen.generate([GenerationRequest(prompt="Fire is", max_tokens=4)] * 3)
    assert gen.stats.generated == 5 and len({g.text for g in twins}) == 1
    # and so are greedy ones that differ only in seed: the answer is the same, cached under each key
    seeded = [GenerationRequest(prompt="Ice is", max_tokens=4, seed=seed) for seed in (1, 2, 3)]
    alike = gen.generate(seeded)
    assert gen.stats.generated == 6 and len({g.text for g in alike}) == 1
    assert all(all(g.cached) for g in gen.generate(seeded)) and gen.stats.generated == 6


def test_chat_template_is_applied(smollm2):
    text = prompt_text(smollm2.impl.tokenizer, GenerationRequest(messages=QUESTION))
    assert "<|im_start|>user\nName one planet" in text and text.rstrip().endswith("<|im_start|>assistant")
    assert prompt_text(smollm2.impl.tokenizer, GenerationRequest(prompt="raw")) == "raw"


def test_build_generator_is_cached_per_config():
    assert build_generator(cache=None) is build_generator(GeneratorConfig(cache=None))


def test_bad_configs_and_names(tmp_path):
    with pytest.raises(UnknownNameError, match="transformers"):
        BACKENDS.get("transformer")
    with pytest.raises(pydantic.ValidationError, match="backend"):
        GeneratorConfig(backend="ollama")
    with pytest.raises(pydantic.ValidationError, match="base_urls"):
        GeneratorConfig(base_urls=["localhost:8000"])
    with pytest.raises(pydantic.ValidationError, match="batch_size"):
        GeneratorConfig(batch_size=0)
    with pytest.raises(ModelNotFoundError, match=r"nothere\.gguf"):
        resolve_model(str(tmp_path / "nothere.gguf"))
    assert resolve_model("SmolLM2-135M-Instruct").gguf_file.endswith(".gguf")
    with pytest.raises(ValueError, match="exactly one"):
        GenerationRequest(prompt="a", messages=QUESTION)
    for bad in (float("nan"), float("inf")):  # NaN would reach the records as `NaN`, which is not JSON
        with pytest.raises(ValueError, match="temperature must be a finite number"):
            GenerationRequest(prompt="a", temperature=bad)
        with pytest.raises(ValueError, match="top_p must be in"):
            GenerationRequest(prompt="a", top_p=bad)
        with pytest.raises(pydantic.ValidationError, match="interrupt_grace"):
            GeneratorConfig(interrupt_grace=bad)


def test_sample_seeds_are_distinct_and_stable():
    seeds = [sample_seed(5, i) for i in range(100)]
    assert seeds[0] == 5 and len(set(seeds)) == 100
    assert seeds == [sample_seed(5, i) for i in range(100)]
    assert sample_seed(None, 3) is None


def test_dtype_auto_is_float32_on_the_cpu_and_bfloat16_on_an_ampere_or_newer_gpu(monkeypatch):
    import types

    import torch

    from a2c.llm.transformers_backend import resolve_dtype

    assert resolve_dtype("auto", "cpu") == "float32"
    assert resolve_dtype("auto", "mps") == "float32"
    assert [resolve_dtype(d, "cpu") for d in ("float32", "bfloat16", "float16")] == [
        "float32", "bfloat16", "float16"]
    with pytest.raises(ValueError, match="dtype must be one of auto, float32, bfloat16, float16"):
        resolve_dtype("fp8", "cpu")
    asked = []

    def card(major: int):
        def properties(device):
            asked.append(device)
            return types.SimpleNamespace(major=major)
        return properties

    monkeypatch.setattr(torch.cuda, "get_device_properties", card(9))  # Hopper
    assert resolve_dtype("auto", "cuda:1") == "bfloat16" and asked == ["cuda:1"]
    monkeypatch.setattr(torch.cuda, "get_device_properties", card(7))  # Volta: no native bfloat16
    assert resolve_dtype("auto", "cuda") == "float32"
    assert resolve_dtype("float16", "cuda") == "float16"


def test_draw_identity_names_device_and_dtype_except_for_cpu_float32(smollm2):
    from a2c.llm.transformers_backend import TransformersBackend
    from a2c.models.embedded import DEFAULT_MODEL

    assert (smollm2.impl.device, smollm2.impl.dtype_name) == ("cpu", "float32")
    assert smollm2.impl.draw_identity() is None  # request-cache keys of CPU runs stay as they were
    half = TransformersBackend(DEFAULT_MODEL, dtype="bfloat16")
    assert half.draw_identity() == {"device": "cpu", "dtype": "bfloat16"}
    assert half.lm.dtype == half.lm.get_input_embeddings().weight.dtype
    assert str(half.lm.dtype) == "torch.bfloat16"


# greedy answers of the embedded SmolLM2 on the CPU in float32, recorded from the backend as it was before
# it loaded the converted folder and sampled in one batched step: neither may change a greedy answer
PINNED_GREEDY = {
    "Name one planet of the solar system.":
        "The planet Kepler-62f is a terrestrial exoplanet orbiting the star Kepler",
    "What happens if you swallow gum?": "When you swallow gum, it can have a range of effects on your body,",
    "What is the capital of France?": "The capital of France is Paris.",
    "Who wrote Romeo and Juliet?":
        "The story of Romeo and Juliet by William Shakespeare is attributed to the 17",
}


def test_greedy_answers_are_the_ones_pinned_before_the_batched_sampler(smollm2):
    requests = [GenerationRequest(messages=(Message("user", q),), max_tokens=16) for q in PINNED_GREEDY]
    mixed = [*requests, GenerationRequest(prompt="My favourite animal is the", temperature=0.8, top_p=0.7,
                                          seed=3, max_tokens=16)]  # sampled rows share the batch
    assert [g.text for g in smollm2.generate(mixed)[:-1]] == list(PINNED_GREEDY.values())


def test_a_sampled_answer_does_not_depend_on_its_batch_mates(smollm2):
    req = GenerationRequest(prompt="My favourite animal is the", temperature=0.9, top_p=0.8, max_tokens=10,
                            seed=21)
    alone = smollm2.generate([req])[0].text
    mates = [GenerationRequest(prompt="Once upon a time", temperature=1.2, top_p=1.0, max_tokens=10, seed=1),
             GenerationRequest(messages=QUESTION, max_tokens=10)]
    assert smollm2.generate([mates[0], req, mates[1]])[1].text == alone


def test_a_gguf_is_converted_once_into_the_prepared_folder(tmp_path, monkeypatch, capsys):
    from safetensors import safe_open

    from a2c.llm.transformers_backend import weights_source
    from a2c.models.embedded import DEFAULT_MODEL

    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "cache" / "prepared" / DEFAULT_MODEL
    assert weights_source(DEFAULT_MODEL).location == str(folder)
    assert f"transformers: preparing {DEFAULT_MODEL}: [4/4]" in capsys.readouterr().out
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        assert {str(weights.get_tensor(k).dtype) for k in weights.keys()}  # noqa: SIM118 (a safetensors handle, no dict) == {"torch.float32"}
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # another working folder: the machine's copy, no conversion
    assert weights_source(DEFAULT_MODEL).location == str(folder)
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in folder.parent.iterdir()) == [DEFAULT_MODEL]  # no temporary left
    assert weights_source("org/some-hf-model").location == "org/some-hf-model"


def test_the_static_decoding_loop_draws_what_generate_draws(smollm2):
    """`decode: static` (a2c.llm.static_decode; CUDA graphs on a GPU, run eagerly here) against transformers'
    `generate` on one batch: greedy and sampled rows, stop strings, rows of different prompt lengths (left
    padding) — same text, finish reason and token count."""
    from a2c.llm.transformers_backend import TransformersBackend

    generate = smollm2.impl
    static = TransformersBackend(generate.model, device="cpu", dtype="float32", decode="static")
    assert (generate.static, static.static, static.graphs) == (False, True, False)
    questions = ["Reply with one word: is the sky blue?", "What happens if you swallow gum?",
                 "Where did fortune cookies originate?", "Why do matadors wave red capes?"]
    requests = [GenerationRequest(messages=(Message("user", q),), temperature=t, top_p=0.7, seed=i,
                                  max_tokens=20, stop=stop)
                for i, (q, t, stop) in enumerate(zip(questions, [0.0, 0.7, 0.0, 0.9],
                                                     [(".",), (), (), ("e",)], strict=True))]
    answers = {}
    for backend in (generate, static):
        done: list = []
        backend.run(requests, done.extend)
        answers[backend.static] = [c.completion for _, c in sorted(done, key=lambda pair: pair[0])]
    assert answers[True] == answers[False]
    finishes = [c.finish_reason for c in answers[True]]
    assert "stop" in finishes and "length" in finishes  # both ways of ending were compared
