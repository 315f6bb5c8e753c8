"""The ASGI app of `a2c serve`: OpenAI routes answered by Ask-to-Choose, plus health and readiness.

Every refusal is an OpenAI-style error (`a2c.serve.errors`); every request leaves one access-log line
(method, path, status, latency, model calls; its question only with `log_requests`). Upstream messages
are masked before they reach a response or the log, so the upstream key never leaves the process.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from a2c.common.redact import redact
from a2c.common.untrusted import UntrustedInputError, parse_json, printable
from a2c.llm import Generator
from a2c.llm.config import OpenAIConfig
from a2c.llm.openai_backend import BackendError
from a2c.llm.sampling import CachedGenerator, RequestsFailed
from a2c.qa.decide import settings_mismatch
from a2c.serve.batcher import Batcher, Job, QueueFull
from a2c.serve.config import ServeConfig, SettingsError, settings_json
from a2c.serve.engine import Answered, Ask, Engine
from a2c.serve.errors import APIError, bad_request
from a2c.serve.isolation import NotAsked
from a2c.serve.per_request import override
from a2c.serve.schema import (
    ENDPOINTS,
    Endpoint,
    completion_body,
    evidence,
    ignored_fields,
    parse_request,
    stream_chunks,
)

ACCESS_LOG = "a2c.serve.access"


@dataclass
class ServeState:
    """What the routes share: the config, the batcher in front of the engine, the keys."""

    config: ServeConfig
    engine: Engine
    batcher: Batcher[Ask, Answered]
    api_key: str | None  # clients must send it as a bearer token; None: no auth
    secrets: tuple[str, ...]  # masked wherever text may come from the upstream
    log: logging.Logger = field(default_factory=lambda: logging.getLogger(ACCESS_LOG))

    @property
    def model(self) -> str:
        return self.config.generator.model

    @property
    def model_ids(self) -> list[str]:
        """What `GET /v1/models` lists: the served model, then its named aliases (not the wildcard)."""
        aliases = self.config.server.model_aliases
        return [self.model, *dict.fromkeys(a for a in aliases if a not in ("*", self.model))]

    def check_model(self, asked: str | None) -> None:
        """A request naming a model this server does not serve is refused as OpenAI refuses one: 404
        `model_not_found`, not answered by another model under the name it asked for. No `model` at all is
        the served one."""
        if asked is None or asked in self.model_ids or "*" in self.config.server.model_aliases:
            return
        served = ", ".join(f"`{m}`" for m in self.model_ids)
        raise APIError(404, f"the model `{printable(asked[:200])}` is not served here; this server serves "
                       f"{served} (as GET /v1/models lists): send that as `model`, or start the server with "
                       "--model-alias NAME to take another name for it", param="model",
                       code="model_not_found")

    def mask(self, text: str) -> str:
        return redact(text, self.secrets)

    def check_key(self, request: Request) -> None:
        if self.api_key is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        matches = hmac.compare_digest(given.strip().encode(), self.api_key.encode())
        if scheme.lower() != "bearer" or not matches:
            raise APIError(401, "missing or wrong API key: send the key a2c serve was started with "
                           "(--api-key or A2C_SERVE_API_KEY) as `Authorization: Bearer KEY`",
                           code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})

    async def answer(self, ask: Ask) -> tuple[Answered, Job[Ask, Answered]]:
        """Queue the question, wait for its batched pass, map failures to OpenAI-style errors."""
        try:
            job = self.batcher.submit(ask)
        except QueueFull:
            wait = max(1, math.ceil(self.batcher.last_batch_seconds or self.config.server.batch_window))
            raise APIError(429, f"the server is busy: {self.batcher.pending} requests are queued or being "
                           f"answered (--max-pending {self.config.server.max_pending}); retry in about "
                           f"{wait} s", type="rate_limit_error", code="queue_full",
                           headers={"Retry-After": str(wait)}) from None
        deadline = self.config.server.deadline
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), deadline), job
        except TimeoutError:
            self._leave(job)
            raise self._deadline_error(job) from None
        except asyncio.CancelledError:  # the client went away
            self._leave(job)
            raise
        except (BackendError, RequestsFailed) as exc:
            raise APIError(502, f"the upstream model failed: {self.mask(str(exc))}", type="upstream_error",
                           code="upstream_failed") from None
        except NotAsked:
            raise APIError(503, "a prompt this question needed was left out of its batched pass, for a "
                           "request that had passed its deadline; send the request again",
                           type="server_error", code="retry", headers={"Retry-After": "1"}) from None
        except Exception as exc:
            raise APIError(500, self.mask(f"{type(exc).__name__}: {exc}"), type="server_error",
                           code="internal_error") from None

    def _leave(self, job: Job[Ask, Answered]) -> None:
        """The client stopped waiting: drop its question from the queue, or from its running pass."""
        self.batcher.abandon(job)
        job.item.left.set()

    def _deadline_error(self, job: Job[Ask, Answered]) -> APIError:
        deadline, now = self.config.server.deadline, time.monotonic()
        queued = (job.started or now) - job.arrived
        passed = f"the deadline of {deadline:g} s passed"
        if job.started is None:
            return APIError(504, f"{passed} while the request waited in the queue ({queued:.2f} s): no model "
                            "call was made for it; raise --deadline or send fewer requests at once",
                            type="timeout_error", code="deadline_exceeded",
                            detail={"state": "queued", "queued_seconds": round(queued, 3), "steps": 0,
                                    "samples": 0})
        steps0, samples0 = job.progress_at_start
        steps, samples = self.engine.recorder.steps - steps0, self.engine.recorder.samples - samples0
        ran = now - job.started
        return APIError(504, f"{passed} before the answer was ready: the request waited {queued:.2f} s in "
                        f"the queue, then its batched pass of {job.batch_size} question(s) ran {ran:.2f} s "
                        f"and finished {steps} generate step(s) with {samples} sample(s); the pass asks "
                        "nothing more for this question. Raise --deadline or ask with smaller settings "
                        "(fewer techniques or temperatures, shorter max_tokens)",
                        type="timeout_error", code="deadline_exceeded",
                        detail={"state": "running", "queued_seconds": round(queued, 3),
                                "running_seconds": round(ran, 3), "batch_questions": job.batch_size,
                                "steps": steps, "samples": samples})

async def read_json(request: Request, limit: int, seconds: float) -> Any:
    """The body as JSON (`a2c.common.untrusted.parse_json`: bounded nesting, no lone surrogates), refused with
    413 past `limit` bytes (declared or sent) and with 408 when it has not all arrived within `seconds`."""
    too_large = APIError(413, f"the request body is larger than {limit} bytes (--max-body)",
                         code="request_too_large")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise too_large
    except TimeoutError:
        raise APIError(408, f"the request body did not arrive within {seconds:g} s (--read-timeout)",
                       code="request_timeout", headers={"Connection": "close"}) from None
    try:
        return parse_json(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad_request("the request body is not UTF-8 text", code="invalid_json") from None
    except UntrustedInputError as exc:
        raise bad_request(f"the request body is refused: {exc}", code="invalid_json") from None
    except ValueError:
        raise bad_request("the request body is not valid JSON", code="invalid_json") from None


def error_response(error: APIError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def create_app(state: ServeState) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.batcher.start()
        try:
            yield
        finally:
            await state.batcher.stop()

    app = FastAPI(title="a2c serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found" if exc.status_code == 404 else "invalid_request"
        return error_response(APIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}",
                                       code=kind))

    @app.middleware("http")
    async def _access_log(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.monotonic()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            calls = getattr(request.state, "model_calls", 0)
            took = (time.monotonic() - started) * 1000
            line = f"{request.method} {request.url.path} {status} {took:.0f} ms model_calls={calls}"
            question = getattr(request.state, "question", None)
            if state.config.server.log_requests and question is not None:
                line += f" question={json.dumps(state.mask(question), ensure_ascii=False)}"
            state.log.info(printable(line))  # the path and question are the client's: no raw escapes

    async def serve_completion(request: Request, endpoint: Endpoint) -> Response:
        state.check_key(request)
        server = state.config.server
        body = await read_json(request, server.max_body_bytes, server.read_timeout)
        model, question_of = ENDPOINTS[endpoint]
        parsed = parse_request(model, body)
        state.check_model(parsed.model)
        question, unused = question_of(parsed)
        ignored = ignored_fields(body) + unused
        given = parsed.a2c
        if parsed.seed is not None and (given is None or isinstance(given, dict)):
            given = {"seed": parsed.seed, **(given or {})}  # `a2c.seed` wins over the OpenAI `seed`
        try:
            settings = override(state.config.defaults, given, limits=server)
        except SettingsError as exc:
            raise bad_request(str(exc), param=exc.param) from None
        calibration = state.config.calibration
        mismatch = None if calibration is None else settings_mismatch(calibration, state.model, settings)
        if mismatch is not None:
            key = f"a2c.{mismatch.partition(':')[0]}"
            raise bad_request(f"{key}: this server decides whether to answer by a calibration made from "
                              f"answers of its own settings, which a request may not change here "
                              f"({mismatch})", param=key)
        request.state.question = question
        answered, job = await state.answer(Ask(question, settings))
        request.state.model_calls = answered.usage.model_calls
        queued = (job.started or job.arrived) - job.arrived
        decline_text = state.config.decline_text
        proof = evidence(answered, settings_json(settings), queued, ignored, decline_text)
        if not parsed.stream:
            return JSONResponse(completion_body(endpoint, state.model, answered, proof, decline_text))
        chunks = stream_chunks(endpoint, state.model, answered, proof, parsed.include_usage, decline_text)

        async def events() -> AsyncIterator[str]:
            for chunk in chunks:
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await serve_completion(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await serve_completion(request, "completions")

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        state.check_key(request)
        return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "a2c"}
                                           for model in state.model_ids]}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness, with the counters a load test reads: batches, their generate steps, samples generated."""
        recorder = state.engine.recorder
        return {"status": "ok", "pending": state.batcher.pending, "batches": state.batcher.batches,
                "steps": recorder.steps, "model_calls": recorder.stats.generated}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        upstreams = await check_upstreams(state)
        ok = not upstreams or any(u["ok"] for u in upstreams)
        return JSONResponse({"status": "ready" if ok else "unavailable", "upstreams": upstreams},
                            status_code=200 if ok else 503)

    return app


async def check_upstreams(state: ServeState) -> list[dict[str, Any]]:
    """Each upstream's `GET /models` (with the upstream key); none for an in-process backend."""
    generator = state.config.generator
    if not isinstance(generator, OpenAIConfig):
        return []
    key = os.environ.get(generator.api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def one(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
        try:
            response = await client.get(f"{url}/models", headers=headers)
        except httpx.HTTPError as exc:
            return {"url": url, "ok": False, "error": state.mask(f"{type(exc).__name__}: {exc}")}
        if response.is_success:
            return {"url": url, "ok": True}
        said = state.mask(f"HTTP {response.status_code}: {response.text[:200]}")
        return {"url": url, "ok": False, "error": said}

    async with httpx.AsyncClient(timeout=5.0) as client:
        return list(await asyncio.gather(*(one(client, url) for url in generator.base_urls)))


def build_state(config: ServeConfig, generator: Generator, *, api_key: str | None) -> ServeState:
    """Engine (its judges built and loaded here), batcher and keys for a config; the upstream key (from the
    generator's env var) is a secret. A failed upstream request fails alone (`CachedGenerator.keep_going`)."""
    if isinstance(generator, CachedGenerator):
        generator.keep_going()
    engine = Engine(generator, config.generator, config.defaults.judges, config.calibration)
    server = config.server
    batcher: Batcher[Ask, Answered] = Batcher(
        engine.answer, window=server.batch_window, max_batch=server.max_batch, max_pending=server.max_pending,
        progress=lambda: (engine.recorder.steps, engine.recorder.samples))
    upstream = config.generator
    upstream_key = os.environ.get(upstream.api_key_env) if isinstance(upstream, OpenAIConfig) else None
    secrets = tuple(s for s in (upstream_key, api_key) if s)
    return ServeState(config, engine, batcher, api_key, secrets)
