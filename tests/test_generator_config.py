"""Per-backend generator options (`a2c.llm.config`): each backend validates its own, so an option that means
nothing to a backend is refused naming the key and the backend; the YAML stays flat (`backend:` picks the
model, transformers when absent) and run folders of the previous release, which hold every backend's options
at their defaults, still read. vLLM's CPU-only and GPU-only settings are refused on the other device, and
`EngineSettings` gives each device only its own engine arguments. What torch sees is stubbed."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
import yaml

from a2c.llm import GeneratorConfig, validate_generator
from a2c.llm.config import OpenAIConfig, ScriptedConfig, TransformersConfig, VLLMConfig, generator_slice
from a2c.llm.vllm_backend import EngineSettings, engine_settings
from a2c.run.config_file import parse_config
from a2c.settings.config import ConfigError
from a2c.system import devices

OLD_RUN_CONFIG = Path(__file__).parent / "fixtures" / "previous_release" / "run" / "config.yaml"


@pytest.fixture
def gpus(monkeypatch):
    def see(count: int) -> None:
        monkeypatch.setattr(devices, "_gpus", lambda: count)

    see(0)
    return see


def test_the_backend_picks_the_model_and_transformers_is_the_default():
    assert type(GeneratorConfig()) is TransformersConfig and GeneratorConfig().device == "auto"
    assert type(validate_generator({})) is TransformersConfig
    for backend, model in [("vllm", VLLMConfig), ("openai", OpenAIConfig), ("scripted", ScriptedConfig)]:
        built = GeneratorConfig(backend=backend)
        assert type(built) is model and isinstance(built, GeneratorConfig)
        assert type(validate_generator({"backend": backend})) is model
    assert GeneratorConfig(backend="openai", base_urls="http://h:1/v1/").base_urls == ("http://h:1/v1",)
    copy = GeneratorConfig(backend="openai").model_copy(update={"cache": None})
    assert type(copy) is OpenAIConfig and copy.cache is None


@pytest.mark.parametrize(("backend", "key", "value", "owners"), [
    ("openai", "gpu_memory_utilization", 0.5, "vllm"),
    ("transformers", "gpu_memory_utilization", 0.5, "vllm"),
    ("openai", "device", "cuda", "transformers, vllm"),
    ("openai", "dtype", "bfloat16", "transformers, vllm"),
    ("scripted", "batch_size", 4, "transformers, vllm"),
    ("transformers", "base_urls", ["http://h/v1"], "openai"),
    ("transformers", "vllm_kv_cache_gb", 4, "vllm"),
    ("vllm", "timeout", 3.0, "openai"),
    ("vllm", "decode", "static", "transformers"),  # CUDA graphs are the transformers backend's own loop
])
def test_another_backend_s_option_is_refused_naming_the_key_and_the_backend(backend, key, value, owners):
    with pytest.raises(pydantic.ValidationError) as info:
        GeneratorConfig(backend=backend, **{key: value})
    (error,) = info.value.errors()
    assert error["loc"][-1] == key
    assert error["msg"] == f"not an option of the {backend} backend (it is one of {owners})"


@pytest.mark.parametrize(("text", "expected"), [
    ("name: x\ngenerator:\n  backend: openai\n  gpu_memory_utilization: 0.8\n",
     "<config>:4: generator.gpu_memory_utilization: not an option of the openai backend (it is one of "
     "vllm)"),
    ("name: x\ngenerator:\n  backend: openai\n  device: cuda\n",
     "<config>:4: generator.device: not an option of the openai backend"),
    ("name: x\ngenerator:\n  tensor_parallel_size: 2\n",
     "<config>:3: generator.tensor_parallel_size: not an option of the transformers backend"),
    ("name: x\ngenerator:\n  backend: tgi\n",
     "<config>:3: generator.backend: Value error, unknown generation backend 'tgi'"),
    ("name: x\ngenerator:\n  backend: vlm\n", "Did you mean 'vllm'"),
    ("name: x\ngenerator:\n  dtype: float64\n", "<config>:3: generator.dtype: Input should be 'auto'"),
    ("name: x\ngenerator:\n  decode: graphs\n", "<config>:3: generator.decode: Input should be 'auto', "
     "'generate' or 'static'"),
    ("name: x\ngenerator:\n  devcie: cpu\n", "<config>:3: generator.devcie: unknown key"),
    ("name: x\ngenerator:\n  backend: vllm\n  device: cpu\n  gpu_memory_utilization: 0.8\n",
     "<config>:5: generator.gpu_memory_utilization: not an option of vLLM on the CPU (device: cpu)"),
    ("name: x\ngenerator:\n  backend: vllm\n  device: cpu\n  tensor_parallel_size: 2\n",
     "<config>:5: generator.tensor_parallel_size: not an option of vLLM on the CPU (device: cpu)"),
    ("name: x\ngenerator:\n  backend: vllm\n  gpu_memory_utilization: 1.5\n",
     "<config>:4: generator.gpu_memory_utilization: Input should be less than or equal to 1"),
])
def test_bad_generator_options_name_the_line(gpus, text, expected):
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_vllm_on_a_gpu_takes_the_gpu_options_and_refuses_the_cpu_ones(gpus):
    gpus(1)
    config = validate_generator({"backend": "vllm", "device": "cuda", "gpu_memory_utilization": 0.8,
                                 "tensor_parallel_size": 1, "max_num_seqs": 64, "dtype": "bfloat16"})
    assert isinstance(config, VLLMConfig) and config.gpu_memory_utilization == 0.8
    with pytest.raises(ConfigError, match=r"<config>:5: generator.vllm_kv_cache_gb: not an option of vLLM on "
                                          r"a GPU \(device: cuda\)"):
        parse_config("name: x\ngenerator:\n  backend: vllm\n  device: cuda\n  vllm_kv_cache_gb: 4\n")
    # at their defaults (as a run's config.yaml writes every option) they are no mistake
    assert validate_generator({"backend": "vllm", "device": "cuda", "vllm_kv_cache_gb": 1}).device == "cuda"
    # vLLM picks its GPUs itself
    with pytest.raises(ConfigError, match=r"generator\.device: Value error, cuda:0: vLLM takes auto, cpu or "
                                          r"cuda"):
        parse_config("name: x\ngenerator:\n  backend: vllm\n  device: cuda:0\n")


def test_under_auto_both_devices_options_are_kept_so_one_config_runs_on_either_box(gpus):
    """The shipped paper-protocol config sets the CPU build's `vllm_kv_cache_gb`; it loads on a GPU box too,
    where the option goes unused."""
    given = {"backend": "vllm", "vllm_kv_cache_gb": 3, "gpu_memory_utilization": 0.6}
    for count in (0, 1):
        gpus(count)
        config = validate_generator(given)
        settings = engine_settings(config, "/m")
        assert settings.on_cpu == (count == 0)
        assert ("gpu_memory_utilization" in settings.llm_kwargs()) == (count == 1)
    parse_config((Path(__file__).parents[1] / "experiments" / "truthfulqa-a2c.yaml").read_text())


def test_each_device_gets_only_its_own_engine_arguments(gpus, monkeypatch):
    # a CPU with native bfloat16 keeps vLLM's `auto` (tests/test_vllm_seeds.py: float32 on one without)
    monkeypatch.setattr("a2c.llm.vllm_backend.cpu_has_native_bf16", lambda: True)
    cpu = engine_settings(VLLMConfig(vllm_kv_cache_gb=3, max_num_seqs=8), "/m")
    assert cpu.device == "cpu" and cpu.on_cpu
    args = cpu.llm_kwargs()
    assert args["enforce_eager"] is True and args["max_num_seqs"] == 8 and args["dtype"] == "auto"
    assert "gpu_memory_utilization" not in args and "tensor_parallel_size" not in args
    assert args["logits_processors"] == ["a2c.llm.vllm_nucleus:NucleusPrefilter"]
    gpus(2)
    gpu = engine_settings(VLLMConfig(device="cuda", gpu_memory_utilization=0.7, tensor_parallel_size=2,
                                     dtype="float16", vllm_top_p="vllm"), "/m")
    assert gpu.device == "cuda" and not gpu.on_cpu
    args = gpu.llm_kwargs()
    assert "enforce_eager" not in args and "logits_processors" not in args
    assert (args["gpu_memory_utilization"], args["tensor_parallel_size"], args["dtype"]) == (0.7, 2,
                                                                                          "float16")
    assert engine_settings(VLLMConfig(), "/m") == EngineSettings("/m", "cuda", 0, 2048, 32, "prefilter")


def test_a_run_folder_of_the_previous_release_still_reads():
    """Its config.yaml holds every backend's options at their defaults (one flat model wrote them)."""
    old = yaml.safe_load(OLD_RUN_CONFIG.read_text())["generator"]
    assert "base_urls" in old and "vllm_kv_cache_gb" in old and old["backend"] == "scripted"
    for backend in ("scripted", "transformers", "vllm", "openai"):
        config = validate_generator({**old, "backend": backend, "model": "m"})
        assert config.backend == backend and config.model == "m"
    # a key of another backend at any other value is a mistake, not an old default
    with pytest.raises(pydantic.ValidationError, match="seed"):
        validate_generator({**old, "seed": 1})


def test_the_stage_key_records_the_device_and_dtype_but_not_on_the_cpu_at_the_default(gpus):
    cpu = {"backend": "transformers", "model": "m", "max_model_len": 2048}
    assert generator_slice(TransformersConfig(model="m")) == cpu  # the keys of older runs
    assert generator_slice(TransformersConfig(model="m", device="cpu")) == cpu
    assert generator_slice(TransformersConfig(model="m", dtype="bfloat16"))["drawn"] == {
        "device": "cpu", "dtype": "bfloat16"}
    assert generator_slice(OpenAIConfig(model="m")) == {"backend": "openai", "model": "m"}
    gpus(1)
    assert generator_slice(TransformersConfig(model="m"))["drawn"] == {"device": "cuda", "dtype": "auto"}
    assert generator_slice(VLLMConfig(model="m", device="cuda"))["drawn"] == {"device": "cuda",
                                                                              "dtype": "auto"}
