"""Any OpenAI-compatible server (`vllm serve`, llama.cpp's server, hosted APIs) over HTTP.

Raw prompts go to `/completions`, chat messages to `/chat/completions` (or flattened to `/completions`
with `endpoint: completions` for servers without a chat template). Requests fan out over `max_concurrency`
worker threads and are spread round-robin over `base_urls`, so several replicas serve one run. Transient
failures (429, 5xx, connection errors, timeouts) are retried with exponential backoff (tenacity), all
within `request_timeout` per request (a2c.llm.deadline); other 4xx answers and malformed bodies fail at
once with the server's message. Each finished request is handed to the cache immediately, so a run killed
mid-way resumes where it stopped.

Stopping (Ctrl-C or SIGTERM, or a request that failed for good): queued requests are dropped, no retry
starts, and requests in flight get `interrupt_grace` seconds; each that completes in that time is cached,
the rest are abandoned. The workers are daemon threads, so abandoned requests never hold up the exit (a
thread pool joins its threads at exit, which kept Ctrl-C waiting on every queued request and retry). With
`keep_going` (`a2c serve`: one client's failed prompt must not fail the others' questions) a failed
request stops nothing; `run` names every failed one once the rest are done. While a run is going, the
first SIGINT or SIGTERM is turned into an event of the main loop (`a2c.system.interrupts`), so it never lands
in the middle of a cache write; the second raises at once.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import Any, Literal, TypeVar

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    sleep_using_event,
    stop_after_attempt,
    wait_exponential,
)
from tenacity.stop import stop_base

from a2c.common.errors import A2CError
from a2c.common.redact import redact, remember_secret
from a2c.llm import logprobs
from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.config import OpenAIConfig
from a2c.llm.connections import Connections, status_error
from a2c.llm.deadline import deadline_at
from a2c.llm.render import flatten
from a2c.llm.sampling import Emit, FailedJobs, SampleResult
from a2c.llm.server import model_identity
from a2c.system.interrupts import first_interrupt_as_event


class BackendError(A2CError):
    """A server that cannot be reached, refuses a request, or answers with something unreadable."""


MAX_BACKOFF = 30.0  # seconds: the longest wait between two attempts
ANSWER_HEADROOM = 4 << 20  # bytes an answer may take beyond its tokens (usage, ids, a server's extras)

T = TypeVar("T")
# request bodies as httpx spelled them: compact, UTF-8 as it is, no NaN (JSON has none)
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class _Stopped(Exception):
    """Raised in a worker instead of starting an attempt or a backoff wait once the run is stopping."""


@dataclass(frozen=True)
class _Done:
    """A worker finished job `job`: with its result, or with the error that ends it."""

    job: int
    result: SampleResult | None = None
    error: Exception | None = None


# what the main loop waits for: finished jobs, a worker that stopped (no job left, or the run is
# stopping), the first SIGINT
_Event = _Done | Literal["exited", "interrupted"]


class _StopBeforeDeadline(stop_base):
    """tenacity's `stop_before_delay` against a fixed moment: a request's first attempt runs before
    tenacity is involved, so its time limit cannot count from tenacity's start."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return time.monotonic() + retry_state.upcoming_sleep >= self.deadline


def _transient(status: int) -> bool:
    return status == 429 or status >= 500


def _retryable(exc: BaseException) -> bool:
    """429, 5xx, and failures to connect or to get an answer in time."""
    if isinstance(exc, httpx.HTTPStatusError):
        return _transient(exc.response.status_code)
    return isinstance(exc, httpx.TransportError)


def _describe(exc: BaseException) -> str:
    """A failure in one line: an error answer's status and the start of its body, whitespace runs folded
    (an HTML page spans many lines). A refusal that is a web page means base_url points at a website, or
    at a server's root instead of its API, so the line says to check base_url."""
    if not isinstance(exc, httpx.HTTPStatusError):
        return f"{type(exc).__name__}: {exc}"
    status, text = exc.response.status_code, exc.response.text
    head = text.lstrip("\ufeff \t\r\n")[:1024].lower()
    web_page = head.startswith("<!doctype html") or "<html" in head or "<body" in head
    shown = " ".join(redact(text).split())
    limit = 120 if web_page else 300
    said = f"HTTP {status}: {shown[:limit]}{'…' if web_page and len(shown) > limit else ''}"
    if not web_page or _transient(status):  # a proxy's 502 page says the server is down, not misnamed
        return said
    url = exc.request.url
    origin = f"{url.scheme}://{url.netloc.decode()}"
    base = url.path
    for endpoint in ("/chat/completions", "/completions", "/models"):
        base = base.removesuffix(endpoint)
    base = base.rstrip("/")
    suggested = "" if base.endswith("/v1") else f" ({origin}{base}/v1)"
    return (f"{said}; the server at {origin} answered with a web page, not an OpenAI-compatible API: "
            f"is base_url the server's /v1 address{suggested}?")


class OpenAIBackend:
    backend = "openai"

    truncates_to: int | None = None  # the server applies its own context limit
    keep_going = False  # True (a2c serve): a failed request does not stop the others (`FailedJobs`)
    sampler: str | None = None  # the server draws: its own identity is `served_model`

    def __init__(self, config: OpenAIConfig) -> None:
        self.model = config.model
        self.config = config
        key = os.environ.get(config.api_key_env)
        remember_secret(key)  # masked in every error line, whatever the variable is called
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            self._http = Connections(headers, config.timeout, max_connections=config.max_concurrency)
        except ValueError as exc:  # a line break or a non-latin-1 character in the key
            raise BackendError(f"{exc}: check the key in ${config.api_key_env}") from None
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

    def answer_bound(self, request: GenerationRequest) -> int:
        """The largest answer read for `request`: `max_response_bytes`, else room for its tokens (with their
        log-probabilities where asked) above a few MB of headroom."""
        if self.config.max_response_bytes is not None:
            return self.config.max_response_bytes
        per_token = 64 * (1 + (request.logprobs or 0))  # a token's text and, per alternative, its JSON
        return ANSWER_HEADROOM + request.max_tokens * per_token

    def _post(self, path: str, body: dict[str, Any], bound: int, *, chat: bool) -> SampleResult:
        """One attempt: the answer read within `bound` and parsed; whatever the server sent that is not
        a completion (a body that is no JSON, too deep, without choices) is a protocol error, retried."""
        url = self._next_url() + path  # each attempt may go to another replica
        status, data = self._http.request("POST", url, _JSON.encode(body).encode(), max_bytes=bound)
        if status >= 400:
            raise status_error("POST", url, status, data)
        k = body.get("top_logprobs" if chat else "logprobs")  # the top-k asked for, None when none were
        return _parse(url, _json(url, data), chat=chat, k=k)

    def complete(self, request: GenerationRequest, stop: threading.Event) -> SampleResult:
        """One request, retried as `_with_retries` says; a refusal (4xx but 429) fails at once."""
        path, body = self.payload(request)
        where = f"{path} on {', '.join(self.config.base_urls)}"
        bound, chat = self.answer_bound(request), path == "/chat/completions"
        try:
            return self._with_retries(where, lambda: self._post(path, body, bound, chat=chat), stop)
        except httpx.HTTPStatusError as exc:
            raise BackendError(f"{exc.request.url} refused the request ({_describe(exc)})") from None

    def draw_identity(self) -> None:
        return None  # the server's device is its own; `served_model` says what it reports

    def served_model(self) -> dict[str, Any] | None:
        """What identifies the model the servers serve as `model` (`a2c.llm.server.model_identity`), the
        same on every base URL: replicas must serve one model, or their answers would be cached as one."""
        found = {url: self._identity_at(url) for url in self.config.base_urls}
        if len({json.dumps(identity, sort_keys=True) for identity in found.values()}) > 1:
            shown = "; ".join(f"{url}: {identity}" for url, identity in found.items())
            raise BackendError(f"the base_urls serve different models as {self.model!r} ({shown}); "
                               "replicas of one run must serve the same model")
        return found[self.config.base_urls[0]]

    def _identity_at(self, base_url: str) -> dict[str, Any] | None:
        url = f"{base_url}/models"
        status, data = self._with_retries(url, lambda: self._get(url), threading.Event())
        if status != 200:
            return None  # a server that does not list its models (404, 501), or not to us (401)
        try:
            listing = _json(url, data)
        except httpx.RemoteProtocolError:
            return None
        return model_identity(listing, self.model)

    def _get(self, url: str) -> tuple[int, bytes]:
        """The answer to GET `url`; only a transient refusal raises (501 Not Implemented is not one)."""
        status, data = self._http.request("GET", url)
        if _transient(status) and status != 501:
            raise status_error("GET", url, status, data)
        return status, data

    def _with_retries(self, where: str, send: Callable[[], T], stop: threading.Event) -> T:
        """`send()`, retried on transient failures: `max_retries` retries after the first attempt, waiting
        `retry_wait`, then twice as long each time (at most MAX_BACKOFF), all within `request_timeout`.
        `stop` ends the retrying: it wakes a backoff wait, and no attempt starts once it is set. A refusal
        is raised as it came (the caller words it); giving up is a BackendError naming `where`."""
        limit = self.config.request_timeout
        deadline = time.monotonic() + limit
        failed: list[BaseException] = []  # the first attempt's failure, handed to tenacity as its first

        def attempt() -> T:
            if failed:
                raise failed.pop()
            if stop.is_set():
                raise _Stopped  # not retried: the run is stopping
            with deadline_at(deadline):
                return send()

        try:  # the first attempt outside tenacity, whose bookkeeping costs a fair part of a request's CPU
            return attempt()
        except Exception as exc:
            if not _retryable(exc):
                raise
            failed.append(exc)
        retrying = self._retrying(stop, deadline)
        try:
            return retrying(attempt)
        except httpx.HTTPStatusError as exc:
            if not _transient(exc.response.status_code):
                raise
            failure: httpx.HTTPError = exc
        except httpx.TransportError as exc:  # connection refused/reset, timeouts
            failure = exc
        attempts = retrying.statistics["attempt_number"]
        if time.monotonic() >= deadline or attempts <= self.config.max_retries:
            raise BackendError(f"{where}: no answer within request_timeout={limit:g} s ({attempts} "
                               f"attempt(s)): {_describe(failure)}") from None
        raise BackendError(f"{where} failed after {attempts} attempt(s): {_describe(failure)}") from None

    def _retrying(self, stop: threading.Event, deadline: float | None = None) -> Retrying:
        """The retry policy of one request; its backoff wait returns as soon as `stop` is set, and no
        attempt starts whose wait would end past `deadline` (default: `request_timeout` from now)."""
        attempts = self.config.max_retries + 1
        if deadline is None:
            deadline = time.monotonic() + self.config.request_timeout
        return Retrying(
            stop=stop_after_attempt(attempts) | _StopBeforeDeadline(deadline),
            wait=wait_exponential(multiplier=self.config.retry_wait, max=MAX_BACKOFF),
            retry=retry_if_exception(_retryable), sleep=sleep_using_event(stop), reraise=True)

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        """Run the jobs on worker threads; this (calling) thread alone emits, so cache writes stay here."""
        todo: SimpleQueue[int] = SimpleQueue()
        for j in range(len(jobs)):
            todo.put(j)
        events: SimpleQueue[_Event] = SimpleQueue()
        stop = threading.Event()
        stopped_by: list[type[KeyboardInterrupt]] = []  # the first SIGINT (KeyboardInterrupt) or SIGTERM

        def interrupted(kind: type[KeyboardInterrupt]) -> None:  # in a signal handler: record and queue
            stopped_by.append(kind)
            events.put("interrupted")  # SimpleQueue.put is safe in a signal handler

        workers = min(self.config.max_concurrency, len(jobs))
        for i in range(workers):
            threading.Thread(target=self._work, args=(jobs, todo, events, stop), name=f"a2c-http-{i}",
                             daemon=True).start()
        failures: dict[int, Exception] = {}  # job → why it failed for good, in the order they failed
        try:
            with first_interrupt_as_event(interrupted):
                exited, deadline = 0, None
                while exited < workers:
                    wait = None if deadline is None else deadline - time.monotonic()
                    batch = _next_events(events, wait)
                    if not batch:
                        break  # the grace period is over: requests still in flight are abandoned
                    done = [(e.job, e.result) for e in batch if isinstance(e, _Done) and e.result is not None]
                    if done:
                        emit(done)
                    exited += batch.count("exited")
                    failures |= {e.job: e.error for e in batch if isinstance(e, _Done) and e.error}
                    failed = bool(failures) and not self.keep_going
                    if deadline is None and (failed or "interrupted" in batch):
                        stop.set()
                        deadline = time.monotonic() + self.config.interrupt_grace
        finally:
            stop.set()  # however the loop ended, no worker starts another attempt
        if stopped_by:
            raise stopped_by[0]
        if failures and self.keep_going:
            raise FailedJobs(failures)
        if failures:
            raise next(iter(failures.values()))

    def _work(self, jobs: Sequence[GenerationRequest], todo: SimpleQueue[int], events: SimpleQueue[_Event],
              stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    j = todo.get_nowait()
                except Empty:
                    return
                try:
                    events.put(_Done(j, result=self.complete(jobs[j], stop)))
                except _Stopped:
                    return
                except Exception as exc:
                    events.put(_Done(j, error=exc))
        finally:
            events.put("exited")


def _next_events(events: SimpleQueue[_Event], timeout: float | None) -> list[_Event]:
    """The next event (waiting at most `timeout` seconds, none once it is spent; None: as long as it takes)
    and every one already queued behind it, so finished jobs are cached in one transaction; [] if none."""
    try:
        batch = [events.get(timeout=None if timeout is None else max(timeout, 0.0))]
    except Empty:
        return []
    while True:
        try:
            batch.append(events.get_nowait())
        except Empty:
            return batch


def _json(url: str, data: bytes) -> Any:
    """The answer's JSON, or a protocol error naming the server and what it sent: not JSON, or nested past
    the interpreter's recursion limit (the JSON decoder refuses that depth rather than crash)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError too
        why = "nested too deep" if isinstance(exc, RecursionError) else "not JSON"
        text = data[:200].decode(errors="replace")
        raise httpx.RemoteProtocolError(f"malformed response from {url}: {why}: {redact(text)!r}") from None


def _parse(url: str, data: Any, *, chat: bool, k: int | None = None) -> SampleResult:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] if chat else choice["text"]
        if not isinstance(text, str):
            raise TypeError("text is not a string")
        usage = data.get("usage") or {}
        top, tokens, chosen = read_logprobs(choice.get("logprobs"), chat=chat, k=k)
        completion = Completion(text, choice.get("finish_reason"), int(usage.get("completion_tokens") or 0),
                                top, token_logprobs=chosen, tokens=tokens)
        return SampleResult(completion, int(usage.get("prompt_tokens") or 0))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise httpx.RemoteProtocolError(
            f"malformed response from {url}: {exc!r} in {redact(str(data))[:200]}") from None


def read_logprobs(raw: Any, *, chat: bool, k: int | None
                  ) -> tuple[list[dict[str, float]] | None, list[str] | None, list[float] | None]:
    """(top-k per position with the chosen token, chosen tokens' texts, their log-probabilities) from a
    choice's `logprobs`; each None where the server sent none or sent something else (a server that
    ignores the parameter, or `null` and `NaN` entries), never an error: the text is still the answer.

    Chat: `{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}`; completions:
    `{"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}, ...]}`."""
    if not isinstance(raw, dict):
        return None, None, None
    if chat:
        steps = raw.get("content")
        if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
            return None, None, None
        chosen = logprobs.chosen([step.get("logprob") for step in steps])
        tokens = logprobs.texts([step.get("token") for step in steps], len(steps))
        tops: list[Any] = []
        for step in steps:
            alternatives = step.get("top_logprobs") or []
            if not isinstance(alternatives, list) or not all(isinstance(t, dict) for t in alternatives):
                tops = []
                break
            tops.append({t.get("token"): t.get("logprob") for t in alternatives})
        top = logprobs.top_k(tops if len(tops) == len(steps) else None, k)
    else:
        chosen = logprobs.chosen(raw.get("token_logprobs"))
        tokens = logprobs.texts(raw.get("tokens"), len(chosen) if chosen is not None else None)
        top = logprobs.top_k(raw.get("top_logprobs"), k)
    if chosen is None or tokens is None:  # a log-probability without its token cannot be placed
        chosen, tokens = None, None
    return logprobs.with_chosen(top, tokens, chosen), tokens, chosen
