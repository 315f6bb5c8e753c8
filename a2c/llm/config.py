"""Typed configuration of a generator: which backend, which model, how to reach and pace it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from a2c.cache import DEFAULT_CACHE_PATH
from a2c.llm.context import ContextPolicy
from a2c.llm.embedded import DEFAULT_MODEL
from a2c.redact import redact


class GeneratorConfig(BaseModel):
    """One generator. `cache: null` turns the request cache off (what `--no-cache` does)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # scripted: a deterministic stand-in model for tests (a2c.llm.scripted)
    backend: Literal["transformers", "vllm", "openai", "scripted"] = "transformers"
    model: str = DEFAULT_MODEL
    cache: Path | None = DEFAULT_CACHE_PATH
    batch_size: int = Field(32, ge=1, description="prompts per batch (transformers, vllm)")
    # openai backend
    base_urls: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    api_key_env: str = "OPENAI_API_KEY"
    endpoint: Literal["chat", "completions"] = "chat"
    # httpx applies it to each phase (connect, write, each read): a server that sleeps fails the attempt
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False, description="seconds per socket read/write")
    # one request from its first attempt to its answer, retries and backoff waits included: a server that
    # trickles a byte every few seconds passes every read timeout, never this (a2c.llm.deadline)
    request_timeout: float = Field(300.0, gt=0, allow_inf_nan=False,
                                   description="seconds one request may take, all attempts included")
    max_concurrency: int = Field(8, ge=1)
    max_retries: int = Field(5, ge=0, description="retries after the first try (429, 5xx, connection)")
    retry_wait: float = Field(1.0, gt=0, allow_inf_nan=False,
                              description="first backoff wait in seconds; doubles each retry, at most 30")
    # after Ctrl-C or a failed request: queued requests are dropped, retries stop, and requests in flight
    # get this long to finish (each one that does is cached) before the run stops
    interrupt_grace: float = Field(3.0, ge=0, allow_inf_nan=False,
                                   description="seconds a stopping run waits for requests in flight")
    # in-process backends
    device: str = "cpu"
    seed: int = Field(0, description="engine seed for vllm (per-request seeds crash its CPU build)")
    # prompt + reply tokens the in-process backends run, capped by the model's own context (transformers)
    # and passed to vLLM's engine: it bounds memory and time; longer prompts go by `context_policy`
    max_model_len: int = Field(2048, ge=64)
    # truncate: keep the prompt's first and last tokens, cut the middle (counted, warned); refuse: fail
    context_policy: ContextPolicy = "truncate"
    vllm_kv_cache_gb: int = Field(1, ge=1)
    # tokens per KV-cache block = the granularity of prefix caching: a prompt reuses only whole cached
    # blocks, so vLLM-CPU's default of 128 recomputes ~64 shared few-shot tokens per prompt; 32 made our
    # paraphrase prompts 2.5x faster on 2 cores
    vllm_block_size: int = Field(32, ge=16, multiple_of=16)
    # how the vllm backend takes a sampled request's nucleus: `prefilter` selects each row's 64 most likely
    # tokens and sorts the vocabulary only when they hold less than p (a2c.llm.nucleus; the same kept set),
    # `vllm` is vLLM's own sampler, which sorts the whole vocabulary at every step
    vllm_top_p: Literal["prefilter", "vllm"] = "prefilter"

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
