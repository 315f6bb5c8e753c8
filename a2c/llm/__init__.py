"""Text generation behind one `Generator` protocol, with every sample going through the request cache.

`build_generator(GeneratorConfig(...))` returns a `CachedGenerator`; the backend it wraps is chosen by
name from `BACKENDS` (transformers, vllm, openai, scripted: each a config model that builds its backend).
Generators are built once per process and config.
"""

from __future__ import annotations

from functools import lru_cache

from a2c.llm.base import Completion, Generation, GenerationRequest, GenerationStats, Generator, Message
from a2c.llm.config import BACKENDS, AnyGeneratorConfig, GeneratorConfig, validate_generator
from a2c.llm.sampling import CachedGenerator
from a2c.models.embedded import DEFAULT_MODEL
from a2c.system.cache import open_cache
from a2c.system.progress import status

__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL",
    "AnyGeneratorConfig",
    "CachedGenerator",
    "Completion",
    "Generation",
    "GenerationRequest",
    "GenerationStats",
    "Generator",
    "GeneratorConfig",
    "Message",
    "build_generator",
    "validate_generator",
]


@lru_cache(maxsize=16)
def _build(config: GeneratorConfig) -> CachedGenerator:
    with status(f"loading {config.model}"):  # an in-process model takes seconds to a minute
        impl = config.build()
    return CachedGenerator(impl, open_cache(config.cache))


def build_generator(config: GeneratorConfig | None = None, **overrides: object) -> CachedGenerator:
    """The generator for a config (fields may be given as keywords); one instance per process and config.

    Args:
        config: the generator's config; None builds one from `overrides` (the default backend and model
            unless they say otherwise).
        **overrides: config fields, set on `config` (a copy) or making the config.

    Returns:
        The backend wrapped in the request cache, the same instance for an equal config.

    Raises:
        pydantic.ValidationError: a field is unknown to the backend or has a bad value.
    """
    if config is None:
        config = GeneratorConfig(**overrides)
    elif overrides:
        config = config.model_copy(update=overrides)
    return _build(config)
