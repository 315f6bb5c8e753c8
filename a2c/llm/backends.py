"""Backend registry: a config's `backend:` name → the factory that builds its sample backend.

Factories import their heavy libraries lazily, so choosing `openai` never imports torch and the
`vllm` extra is only needed by those who use it. Each takes its backend's own config model
(`a2c.llm.config.GENERATOR_CONFIGS` registers them under the same names).
"""

from __future__ import annotations

from collections.abc import Callable

from a2c.common.registry import Registry
from a2c.llm.config import OpenAIConfig, ScriptedConfig, TransformersConfig, VLLMConfig
from a2c.llm.sampling import SampleBackend
from a2c.system.devices import resolve_device

BackendFactory = Callable[..., SampleBackend]  # called with the config model registered under its name
BACKENDS: Registry[BackendFactory] = Registry("generation backend")


@BACKENDS.register("transformers")
def _transformers(config: TransformersConfig) -> SampleBackend:
    from a2c.llm.transformers_backend import TransformersBackend

    return TransformersBackend(config.model, batch_size=config.batch_size,
                               device=resolve_device(config.device), dtype=config.dtype,
                               max_model_len=config.max_model_len, context_policy=config.context_policy,
                               decode=config.decode)


@BACKENDS.register("openai")
def _openai(config: OpenAIConfig) -> SampleBackend:
    from a2c.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(config)


@BACKENDS.register("vllm")
def _vllm(config: VLLMConfig) -> SampleBackend:
    from a2c.llm.vllm_backend import VLLMBackend

    return VLLMBackend(config)


@BACKENDS.register("scripted")
def _scripted(config: ScriptedConfig) -> SampleBackend:
    from a2c.llm.scripted import ScriptedBackend

    return ScriptedBackend(config.model)
