"""Any OpenAI-compatible server (`vllm serve`, llama.cpp's server, hosted APIs) over HTTP.

Raw prompts go to `/completions`, chat messages to `/chat/completions` (or flattened to `/completions`
with `endpoint: completions` for servers without a chat template). Requests fan out over a thread pool
bounded by `max_concurrency` and are spread round-robin over `base_urls`, so several replicas serve one
run. Transient failures (429, 5xx, connection errors, timeouts) are retried with exponential backoff;
other 4xx answers and malformed bodies fail at once with the server's message. Each finished request is
handed to the cache immediately, so a run killed mid-way resumes where it stopped.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import httpx
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from a2c.errors import A2CError
from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.config import GeneratorConfig
from a2c.llm.sampling import Emit, SampleResult
from a2c.prompts import flatten


class BackendError(A2CError):
    """A server that cannot be reached, refuses a request, or answers with something unreadable."""


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)  # connection refused/reset, timeouts


def _describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}: {exc.response.text[:300]}"
    return f"{type(exc).__name__}: {exc}"


class OpenAIBackend:
    backend = "openai"

    def __init__(self, config: GeneratorConfig) -> None:
        self.model = config.model
        self.config = config
        key = os.environ.get(config.api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Limits(max_connections=config.max_concurrency,
                              max_keepalive_connections=config.max_concurrency)
        self._client = httpx.Client(headers=headers, timeout=config.timeout, limits=limits)
        self._urls = itertools.cycle(config.base_urls)
        self._urls_lock = threading.Lock()

    def _next_url(self) -> str:
        with self._urls_lock:
            return next(self._urls)

    def payload(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        """Endpoint path and JSON body for one single-sample request."""
        body: dict[str, Any] = {"model": self.model, "temperature": request.temperature,
                                "top_p": request.top_p, "max_tokens": request.max_tokens, "n": 1}
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.messages is not None and self.config.endpoint == "chat":
            body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
            if request.logprobs is not None:
                body["logprobs"], body["top_logprobs"] = True, request.logprobs
            return "/chat/completions", body
        body["prompt"] = request.prompt if request.prompt is not None else flatten(request.messages or ())
        if request.logprobs is not None:
            body["logprobs"] = request.logprobs
        return "/completions", body

    def _post(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        url = self._next_url() + path  # each attempt may go to another replica
        response = self._client.post(url, json=body)
        response.raise_for_status()
        try:
            return url, response.json()
        except ValueError:
            raise BackendError(f"malformed response from {url}: not JSON: {response.text[:200]!r}") from None

    def complete(self, request: GenerationRequest) -> SampleResult:
        path, body = self.payload(request)
        attempts = self.config.max_retries + 1
        retrying = Retrying(stop=stop_after_attempt(attempts), retry=retry_if_exception(_transient),
                            wait=wait_exponential(multiplier=self.config.retry_wait, max=30), reraise=False)
        try:
            url, data = retrying(self._post, path, body)
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            assert cause is not None
            raise BackendError(f"{path} on {', '.join(self.config.base_urls)} failed after {attempts} "
                               f"attempt(s): {_describe(cause)}") from None
        except httpx.HTTPStatusError as exc:
            raise BackendError(f"{exc.request.url} refused the request ({_describe(exc)})") from None
        return _parse(url, data, chat=path == "/chat/completions")

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        with ThreadPoolExecutor(self.config.max_concurrency, thread_name_prefix="a2c-http") as pool:
            pending = {pool.submit(self.complete, job): j for j, job in enumerate(jobs)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                finished = [(pending.pop(f), f) for f in done]
                emit([(j, f.result()) for j, f in finished if f.exception() is None])
                failed = [f.exception() for _, f in finished if f.exception() is not None]
                if failed:
                    for f in pending:
                        f.cancel()
                    raise failed[0]  # type: ignore[misc]


def _parse(url: str, data: Any, *, chat: bool) -> SampleResult:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] if chat else choice["text"]
        if not isinstance(text, str):
            raise TypeError("text is not a string")
        usage = data.get("usage") or {}
        completion = Completion(text, choice.get("finish_reason"), int(usage.get("completion_tokens") or 0),
                                _logprobs(choice.get("logprobs"), chat=chat))
        return SampleResult(completion, int(usage.get("prompt_tokens") or 0))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise BackendError(f"malformed response from {url}: {exc!r} in {str(data)[:200]}") from None


def _logprobs(raw: Any, *, chat: bool) -> list[dict[str, float]] | None:
    if not raw:
        return None
    if chat:  # {"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}
        return [{**{t["token"]: t["logprob"] for t in step.get("top_logprobs") or []},
                 step["token"]: step["logprob"]} for step in raw.get("content") or []]
    tops = raw.get("top_logprobs") or []  # completions: [{token: logprob}] per generated token
    return [dict(step) for step in tops if step is not None]
