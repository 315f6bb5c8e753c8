"""`a2c serve` against hostile and unlucky clients: real `a2c serve` processes in front of a scripted upstream
on 127.0.0.1 (tests/fake_openai.py).

What must hold: a request changes only what is safe per request (never a generator, upstream, key, cache,
template or model: 400 naming the key, nothing sent, nothing created), within the server's bounds; bodies
are strict (lone surrogates, deep nesting, blank questions, booleans for numbers: 400 with one line); one
failing prompt fails only the requests that needed it, and a pass whose clients all left stops; slow
clients are dropped and the access log holds no raw control characters.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fake_openai import HANG, SlowServer
from tests.serve_process import ServeProcess

pytestmark = pytest.mark.slow

UPSTREAM_KEY = "upkey-5e1d0c93aa"
SETTINGS = {"variation": {"techniques": ["synonyms"], "temperatures": [0.5], "paraphrase_max_tokens": 24,
                          "long_max_tokens": 12, "short_max_tokens": 6},
            "judges": ["exact", "rouge1"], "ask_to_choose": {"max_tokens": 3},
            "generator": {"retry_wait": 0.01}}
READ_TIMEOUT = 2.0
CLIENTS = 64


@pytest.fixture(scope="module")
def upstream() -> Iterator[SlowServer]:
    server = SlowServer(lifetime=600.0)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(upstream: SlowServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three servers on the one scripted upstream: `guarded` with tight bounds, `isolating` taking 64
    questions per pass, `hanging` with a short deadline and upstream timeout."""
    folder = tmp_path_factory.mktemp("serve-untrusted")
    (folder / "serve.yaml").write_text(json.dumps(SETTINGS))  # JSON is YAML
    # two temperatures and an `llm` judge on the served model: its pair prompts fail with their question
    judged = {**SETTINGS, "variation": {**SETTINGS["variation"], "temperatures": [0.3, 0.7]},
              "judges": ["rouge1", "llm"]}
    (folder / "judged.yaml").write_text(json.dumps(judged))
    common = ("--upstream", upstream.url, "--model", "fake", "--concurrency", str(CLIENTS))
    keyed = {"OPENAI_API_KEY": UPSTREAM_KEY}
    procs = {
        "guarded": ServeProcess(folder, "guarded", *common, "--config", str(folder / "serve.yaml"),
                                "--max-tokens", "64", "--max-samples", "4",
                                "--max-calls", "60", "--read-timeout", str(READ_TIMEOUT),
                                "--batch-window", "0", "--log-requests", env=keyed),
        "isolating": ServeProcess(folder, "isolating", *common, "--config", str(folder / "judged.yaml"),
                                  "--retries", "1", "--max-batch", str(CLIENTS), "--batch-window", "10",
                                  env=keyed),
        "hanging": ServeProcess(folder, "hanging", *common, "--config", str(folder / "serve.yaml"),
                                "--retries", "0", "--timeout", "12", "--deadline",
                                "8", "--max-batch", str(CLIENTS), "--batch-window", "1", env=keyed),
    }
    try:
        for proc in procs.values():
            proc.wait_healthy()
        yield {"folder": folder, **procs}
    finally:
        for proc in procs.values():
            proc.stop()


def _post(proc: ServeProcess, body: Any, path: str = "/v1/chat/completions") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{proc.url}{path}", content=content, headers={"Content-Type": "application/json"},
                      timeout=60)


def _chat(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": "fake", "messages": [{"role": "user", "content": question}], **extra}


def _refused(response: httpx.Response, param: str | None) -> str:
    """The 400's message, checked to be one line naming `param`."""
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert "\n" not in error["message"] and "Traceback" not in error["message"]
    return str(error["message"])


# -- what a request may set ---------------------------------------------------------------------------------

def test_a_judge_generator_in_a_request_is_refused_and_the_key_goes_nowhere(served, upstream):
    """The exfiltration of issue 29: an `llm` judge with its own generator pointed at a listener, reading
    the server's upstream key variable."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    generator = {"backend": "openai", "model": "m", "base_urls": [url], "api_key_env": "OPENAI_API_KEY"}
    upstream.reset()
    hostile = [
        ({"a2c": {"judges": [{"name": "llm", "generator": generator}],
                  "variation": {"temperatures": [0.1, 0.5, 0.9]}}}, "a2c.judges.0.generator"),
        ({"a2c": {"judges": [{"name": "exact", "generator": generator}]}}, "a2c.judges.0.generator"),
        ({"a2c": {"generator": generator}}, "a2c.generator"),
        ({"a2c": {"variation": {"generator": generator}}}, "a2c.variation.generator"),
        ({"generator": generator}, "generator"),
        ({"api_key_env": "HOME"}, "api_key_env"),
        ({"base_url": url}, "base_url"),
    ]
    try:
        for extra, param in hostile:
            message = _refused(_post(served["guarded"], _chat("Why is the sky blue?", **extra)), param)
            assert UPSTREAM_KEY not in message
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    finally:
        listener.close()
    llm = _refused(_post(served["guarded"], _chat("Why?", a2c={"judges": [{"name": "llm"}]})),
                   "a2c.judges.0.name")
    assert "not one this server loaded" in llm and "exact, rouge1" in llm
    assert "judge is given by name only" in _refused(
        _post(served["guarded"], _chat("Why?", a2c={"judges": [{"name": "exact", "threshold": 0.1}]})),
        "a2c.judges.0.threshold")
    assert upstream.arrived == []  # refused before any model call


def test_paths_models_and_templates_named_by_a_request_are_refused_and_nothing_is_created(served, upstream,
                                                                                          tmp_path):
    cache, template = tmp_path / "made-by-a-client.sqlite", tmp_path / "template.yaml"
    template.write_text("secret_key_one: 1\nsecret_key_two: 2\n")
    upstream.reset()
    cases = [
        ({"judges": [{"name": "rouge1", "cache": str(cache)}]}, "a2c.judges.0.cache"),
        ({"judges": [{"name": "exact", "cache": "/etc/passwd"}]}, "a2c.judges.0.cache"),
        ({"judges": [{"name": "rouge1", "template": str(template)}]}, "a2c.judges.0.template"),
        ({"judges": [{"name": "rouge1", "model": "/etc"}]}, "a2c.judges.0.model"),
        ({"judges": [{"name": "rouge1", "device": "cuda"}]}, "a2c.judges.0.device"),
        ({"judges": ["pp"]}, "a2c.judges.0.name"),  # would try the model hub
        ({"judges": ["embedding"]}, "a2c.judges.0.name"),  # would load a model per request
        ({"cache": str(cache)}, "a2c.cache"),
        ({"template": str(template)}, "a2c.template"),
    ]
    for given, param in cases:
        message = _refused(_post(served["guarded"], _chat("Why is ice slippery?", a2c=given)), param)
        assert "secret_key" not in message
    for field in ("cache", "template", "device"):
        _refused(_post(served["guarded"], _chat("Why?", **{field: str(cache)})), field)
    assert not cache.exists() and upstream.arrived == []


def test_bounds_name_the_server_limit_and_the_calls_are_counted_before_any_is_made(served, upstream):
    upstream.reset()
    cases = [
        ({"ask_to_choose": {"max_tokens": 1e9}}, "a2c.ask_to_choose.max_tokens",
         "at most 64 (server.max_tokens)"),
        ({"variation": {"long_max_tokens": 1_000_000_000}}, "a2c.variation.long_max_tokens",
         "at most 64 (server.max_tokens)"),
        ({"variation": {"samples": 400}}, "a2c.variation.samples", "at most 4 (server.max_samples)"),
        ({"variation": {"temperatures": [t / 10 for t in range(10)], "samples": 4}}, "a2c",
         "127 model calls"),
    ]
    for given, param, said in cases:
        message = _refused(_post(served["guarded"], _chat("Why is ice slippery?", a2c=given)), param)
        assert said in message
    assert "server.max_calls_per_request" in message
    assert upstream.arrived == []
    allowed = {"variation": {"temperatures": [0.2], "samples": 2, "long_max_tokens": 64}, "judges": ["exact"],
               "ask_to_choose": {"max_tokens": 4, "idk_text": "No idea."}, "seed": 3}
    answered = _post(served["guarded"], _chat("Why is ice slippery?", a2c=allowed))
    assert answered.status_code == 200, answered.text
    proof = answered.json()["a2c"]
    assert proof["settings"]["variation"]["samples"] == 2 and proof["settings"]["seed"] == 3
    assert [j["name"] for j in proof["settings"]["judges"]] == ["exact"]
    assert len([c for c in proof["candidates"] if c["source"] == "temperature"]) == 2
    assert 0 < proof["model_calls"] <= 60


# -- strict bodies ------------------------------------------------------------------------------------------

def test_surrogates_depth_blank_questions_and_loose_types_are_one_line_400s(served, upstream):
    proc = served["guarded"]
    upstream.reset()
    surrogate = b'{"messages": [{"role": "user", "content": "why \\ud800?"}]}'
    assert "surrogate" in _refused(_post(proc, surrogate), None)
    deep = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert "nested deeper than 64" in _refused(_post(proc, deep), None)
    assert "not UTF-8" in _refused(_post(proc, b'{"prompt": "\xff"}', "/v1/completions"), None)
    for blank in ("\u200b\u00a0\t", "\x00", "\u3164 \u2060"):
        _refused(_post(proc, _chat(blank)), "messages.0.content")
        _refused(_post(proc, {"prompt": blank}, "/v1/completions"), "prompt")
    loose = [({"seed": True}, "seed"), ({"seed": "1"}, "seed"), ({"stream": "yes"}, "stream"),
             ({"stream": 1}, "stream"),
             ({"stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
             ({"a2c": {"seed": True}}, "a2c.seed"), ({"a2c": {"ask_to_choose": {"rank_temperature": True}}},
                                                     "a2c.ask_to_choose.rank_temperature"),
             ({"a2c": {"variation": {"temperatures": [True]}}}, "a2c.variation.temperatures.0")]
    for extra, param in loose:
        _refused(_post(proc, _chat("Why is the sea salty?", **extra)), param)
    assert upstream.arrived == []
    log = proc.log.read_text()
    assert "Traceback" not in log and "RecursionError" not in log and " 500 " not in log


# -- server hygiene -----------------------------------------------------------------------------------------

def _raw(proc: ServeProcess, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proc.port), timeout=10)
    sock.sendall(data)
    return sock


def test_control_characters_reach_the_access_log_escaped(served):
    proc = served["guarded"]
    with _raw(proc, b"GET /x%1b[2J%1b]0;owned%07 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n") as sock:
        assert sock.recv(100).startswith(b"HTTP/1.1 404")
    deadline = time.monotonic() + 10
    while "/x\\x1b[2J" not in proc.log.read_text():
        assert time.monotonic() < deadline, proc.log.read_text()[-2000:]
        time.sleep(0.1)
    log = proc.log.read_bytes()
    assert b"\x1b" not in log and b"\x07" not in log
    assert b"GET /x\\x1b[2J\\x1b]0;owned\\x07 404" in log


def test_slow_clients_are_dropped_after_the_read_timeout(served):
    proc = served["guarded"]
    started = time.monotonic()
    heads = [_raw(proc, b"POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Ty") for _ in range(100)]
    silent = [socket.create_connection(("127.0.0.1", proc.port), timeout=10) for _ in range(20)]
    body = _raw(proc, b"POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"messages\": ")
    assert httpx.get(f"{proc.url}/health", timeout=10).status_code == 200  # the server still answers
    open_ = heads + silent
    closed_at: list[float] = []
    while open_ and time.monotonic() < started + READ_TIMEOUT + 10:
        readable, _, _ = select.select(open_, [], [], 0.5)
        for sock in readable:
            assert sock.recv(1024) == b""  # closed without an answer: there was no request to answer
            closed_at.append(time.monotonic() - started)
            open_.remove(sock)
            sock.close()
    assert not open_, f"{len(open_)} slow connections still open"
    assert max(closed_at) < READ_TIMEOUT + 5
    answer = b""
    with body:
        while chunk := body.recv(4096):  # until the server closes it
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer


# -- failure isolation --------------------------------------------------------------------------------------

async def _ask_all(proc: ServeProcess, questions: list[str]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(questions))
    async with httpx.AsyncClient(base_url=proc.url, timeout=120, limits=limits) as client:
        return await asyncio.gather(*(client.post("/v1/chat/completions", json=_chat(q)) for q in questions))


def test_a_failing_prompt_fails_only_the_requests_that_needed_it(served, upstream):
    """Every call about every second question gets 500, however often it is retried (half the calls
    fail); the 64 questions share one batched pass."""
    questions = [f"What colour is flag number {i}{' (odd)' if i % 2 else ''}?" for i in range(CLIENTS)]
    upstream.reset(fails=lambda body: "(odd)" in json.dumps(body))
    responses = asyncio.run(_ask_all(served["isolating"], questions))
    statuses = [r.status_code for r in responses]
    assert statuses == [502 if i % 2 else 200 for i in range(CLIENTS)], statuses
    for i, response in enumerate(responses):
        if i % 2:
            assert response.json()["error"]["code"] == "upstream_failed" and "HTTP 500" in response.text
        else:
            proof = response.json()["a2c"]
            assert proof["batch"]["questions"] == CLIENTS  # answered in the pass that failed the others
            assert proof["question"] == questions[i] and proof["candidates"]
            assert set(proof["consistency"]["temperature"]["cons_sem"]) == {"rouge1", "llm"}
    refused = [b for b in upstream.arrived if "(odd)" in json.dumps(b)]
    assert refused and len(refused) < len(upstream.arrived)


def test_a_pass_whose_clients_all_left_stops_asking(served, upstream):
    """The upstream hangs: 64 clients get 504 at the deadline; the pass ends after the step in flight
    (each hung call gives up after --timeout 12) instead of working on for nobody, and the server answers
    again as soon as the upstream does. The deadline (8 s) leaves a loaded machine time to send all 64
    first-step calls before the clients leave (with 3 s, a busy CI machine sent 52)."""
    proc = served["hanging"]
    upstream.reset(delays=[HANG] * 10_000)
    questions = [f"How tall is tower number {i}?" for i in range(CLIENTS)]
    responses = asyncio.run(_ask_all(proc, questions))
    assert [r.status_code for r in responses] == [504] * CLIENTS
    assert {r.json()["error"]["code"] for r in responses} == {"deadline_exceeded"}
    deadline = time.monotonic() + 20
    while proc.pending():
        assert time.monotonic() < deadline, "the abandoned pass kept the server busy"
        time.sleep(0.1)
    first_step = len(upstream.arrived)
    assert first_step == CLIENTS  # one paraphrase per question, then nothing more
    upstream.reset()
    answered = _post(proc, _chat("How tall is the tallest tower?"))
    assert answered.status_code == 200, answered.text
