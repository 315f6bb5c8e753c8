"""The openai backend against a real OpenAI-compatible server (llama.cpp on the embedded GGUF) and a
scripted 127.0.0.1 HTTP server for the fault cases a real server will not produce on demand."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig, Message
from a2c.llm.openai_backend import BackendError, OpenAIBackend
from a2c.system.cache import Cache, NoCache
from tests.conftest import LlamaServer, free_port

pytestmark = pytest.mark.slow

QUESTION = (Message("user", "Name a colour of the rainbow."),)


def _generator(urls, cache: Cache | None = None, **options) -> CachedGenerator:
    config = GeneratorConfig(backend="openai", base_urls=urls, cache=None, **options)
    return CachedGenerator(OpenAIBackend(config), cache if cache is not None else NoCache())


def test_chat_and_completion_endpoints_on_a_real_server(llama_server):
    gen = _generator([llama_server.base_url], max_concurrency=2)
    again = gen.generate([GenerationRequest(messages=QUESTION, max_tokens=8)])[0]  # no cache: generated
    chat, raw, sampled = gen.generate([
        GenerationRequest(messages=QUESTION, max_tokens=8),
        GenerationRequest(prompt="The capital of France is", max_tokens=6, logprobs=2),
        GenerationRequest(prompt="My favourite animal is the", temperature=1.0, seed=3, n=3, max_tokens=6),
    ])
    assert chat.text.strip() and chat.text == again.text  # greedy is deterministic
    assert chat.prompt_tokens > 10 and chat.completions[0].completion_tokens <= 8
    assert raw.completions[0].finish_reason in {"stop", "length"}
    assert raw.completions[0].logprobs and all(v <= 0 for v in raw.completions[0].logprobs[0].values())
    assert len(sampled.completions) == 3 and len({c.text for c in sampled.completions}) >= 2


def test_round_robin_over_replicas_and_flattened_chat(llama_server):
    second = LlamaServer()
    try:
        urls = [llama_server.base_url, second.base_url]
        backend = OpenAIBackend(GeneratorConfig(backend="openai", base_urls=urls, cache=None,
                                                endpoint="completions"))
        assert [backend._next_url() for _ in range(4)] == urls * 2
        gen = CachedGenerator(backend, NoCache())
        outs = gen.generate([GenerationRequest(messages=QUESTION, max_tokens=4, seed=i) for i in range(4)])
        assert all(o.text.strip() for o in outs)
        path, body = backend.payload(GenerationRequest(messages=QUESTION))
        assert path == "/completions" and body["prompt"].endswith("Assistant:")
    finally:
        second.stop()


def test_server_not_started_is_a_clear_error_after_bounded_retries():
    url = f"http://127.0.0.1:{free_port()}/v1"
    gen = _generator([url], max_retries=2, retry_wait=0.01, timeout=2)
    with pytest.raises(BackendError, match=r"failed after 3 attempt\(s\): ConnectError") as info:
        gen.generate([GenerationRequest(prompt="hi")])
    assert url in str(info.value)


def test_server_killed_mid_run_resumes_from_cache(tmp_path):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed (make setup)")
    server = LlamaServer()

    class KillAfterThree(Cache):
        """A real cache that takes the server down once three results are stored."""

        def put_many(self, items, namespace="generation"):
            super().put_many(items, namespace)
            if self.count() >= 3:
                server.stop()

    cache = KillAfterThree(tmp_path / "c.sqlite")
    requests = [GenerationRequest(prompt=f"Fact number {i}:", max_tokens=12, temperature=0.5, seed=i)
                for i in range(10)]
    gen = _generator([server.base_url], cache, max_concurrency=1, max_retries=1, retry_wait=0.01)
    with pytest.raises(BackendError, match="ConnectError"):
        gen.generate(requests)
    cache = Cache(tmp_path / "c.sqlite")
    saved = cache.count()
    assert 3 <= saved < 10

    restarted = LlamaServer()
    try:
        resumed = _generator([restarted.base_url], cache, max_concurrency=2)
        outs = resumed.generate(requests)
    finally:
        restarted.stop()
    assert resumed.stats.cached == saved and resumed.stats.generated == 10 - saved
    assert sum(o.cached[0] for o in outs) == saved and all(o.text for o in outs)
    assert cache.count() == 10


class _Scripted(BaseHTTPRequestHandler):
    """Answers POSTs with the next scripted (status, body); records what it received."""

    script: ClassVar[list[tuple[int, str]]] = []
    seen: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        type(self).seen.append({"path": self.path, "body": json.loads(self.rfile.read(length)),
                                "auth": self.headers.get("Authorization")})
        status, body = type(self).script.pop(0) if type(self).script else (500, "script exhausted")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def scripted():
    _Scripted.script, _Scripted.seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Scripted
    server.shutdown()


GOOD = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Blue"},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 11, "completion_tokens": 1}})


def test_429_and_500_are_retried_then_succeed(scripted, monkeypatch):
    url, handler = scripted
    handler.script = [(429, "slow down"), (500, "oops"), (503, "busy"), (200, GOOD)]
    monkeypatch.setenv("A2C_TEST_KEY", "sk-test")
    gen = _generator([url], max_retries=3, retry_wait=0.01, api_key_env="A2C_TEST_KEY")
    out = gen.generate([GenerationRequest(messages=QUESTION, seed=5, stop=("\n",))])[0]
    assert out.text == "Blue" and out.prompt_tokens == 11 and out.completions[0].completion_tokens == 1
    assert len(handler.seen) == 4 and {s["path"] for s in handler.seen} == {"/v1/chat/completions"}
    body = handler.seen[0]["body"]
    assert body["seed"] == 5 and body["stop"] == ["\n"] and body["messages"][0]["content"].startswith("Name")
    assert handler.seen[0]["auth"] == "Bearer sk-test"


def test_a_key_with_a_line_break_is_refused_before_any_request(scripted, monkeypatch):
    url, handler = scripted
    monkeypatch.setenv("A2C_TEST_KEY", "sk-test\r\nX-Injected: 1")
    with pytest.raises(BackendError, match=r"'Authorization' is not a valid.*\$A2C_TEST_KEY") as caught:
        _generator([url], api_key_env="A2C_TEST_KEY")
    assert "sk-test" not in str(caught.value) and handler.seen == []


def test_client_errors_are_not_retried(scripted):
    url, handler = scripted
    handler.script = [(400, '{"error": "bad temperature"}'), (200, GOOD)]
    gen = _generator([url], max_retries=3, retry_wait=0.01)
    with pytest.raises(BackendError, match="bad temperature"):
        gen.generate([GenerationRequest(messages=QUESTION)])
    assert len(handler.seen) == 1


def test_retries_are_bounded(scripted):
    url, handler = scripted
    handler.script = [(500, "down")] * 5
    gen = _generator([url], max_retries=2, retry_wait=0.01)
    with pytest.raises(BackendError, match=r"after 3 attempt\(s\): HTTP 500: down"):
        gen.generate([GenerationRequest(messages=QUESTION)])
    assert len(handler.seen) == 3


@pytest.mark.parametrize("body", ["<html>not json</html>", '{"choices": []}',
                                  '{"choices": [{"text": null}]}'])
def test_malformed_response_is_a_clear_error(scripted, body):
    url, handler = scripted
    handler.script = [(200, body)]
    gen = _generator([url], max_retries=0)
    with pytest.raises(BackendError, match=r"malformed response from http://127\.0\.0\.1"):
        gen.generate([GenerationRequest(prompt="hi")])


def test_a_malformed_answer_is_the_servers_fault_and_retried(scripted):
    url, handler = scripted
    deep = "[" * 5000 + "]" * 5000
    handler.script = [(200, "<html>not json</html>"), (200, deep), (200, '{"choices": []}'), (200, GOOD)]
    gen = _generator([url], max_retries=3, retry_wait=0.01)
    assert gen.generate([GenerationRequest(messages=QUESTION)])[0].text == "Blue"
    assert len(handler.seen) == 4


def test_deep_or_oversized_answers_end_in_one_line_naming_the_server(scripted):
    url, handler = scripted
    handler.script = [(200, "[" * 5000 + "]" * 5000)]
    with pytest.raises(BackendError, match=r"RemoteProtocolError: malformed response from http://127\.0\.0\.1"
                                           r".*nested too deep") as deep:
        _generator([url], max_retries=0).generate([GenerationRequest(messages=QUESTION)])
    handler.script = [(200, json.dumps({"choices": [{"message": {"content": "x" * 5000}}]}))]
    bounded = _generator([url], max_retries=0, max_response_bytes=2048)
    with pytest.raises(BackendError, match=r"longer than the bound of 2,048 bytes|over the bound of 2,048") \
            as large:
        bounded.generate([GenerationRequest(messages=QUESTION)])
    assert "\n" not in str(deep.value) + str(large.value)


class _Trickle(BaseHTTPRequestHandler):
    """Sends a good answer one byte at a time, `pause` seconds apart, from the status line on: every read
    gets a byte long before the read timeout, so only a deadline on the whole request stops it."""

    pause: ClassVar[float] = 0.3

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        data = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(GOOD)}\r\n\r\n"
                + GOOD).encode()
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(self.pause)
        except OSError:  # the client gave up
            pass

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def trickle():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_server_that_trickles_bytes_fails_at_the_request_deadline(trickle):
    # the answer takes ~80 s at 0.3 s a byte; each read waits 0.3 s, far under the 5 s read timeout
    gen = _generator([trickle], timeout=5.0, request_timeout=1.5, max_retries=3, retry_wait=0.01)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"no answer within request_timeout=1\.5 s \(1 attempt\(s\)\): "
                                           r"ReadTimeout"):
        gen.generate([GenerationRequest(messages=QUESTION)])
    assert time.monotonic() - started < 20  # not the 80 s the whole answer would take


def test_the_request_deadline_covers_retries_and_backoff(scripted):
    url, handler = scripted
    handler.script = [(503, "busy")] * 50
    gen = _generator([url], max_retries=40, retry_wait=0.2, request_timeout=1.0)
    with pytest.raises(BackendError, match=r"no answer within request_timeout=1 s \((\d) attempt\(s\)\): "
                                           r"HTTP 503: busy") as info:
        gen.generate([GenerationRequest(messages=QUESTION)])
    attempts = int(info.value.args[0].split("(")[1].split(" ")[0])
    # waits 0.2, 0.4, 0.8 s: the third would end past the 1 s deadline, so no fourth attempt starts
    assert attempts == len(handler.seen) == 3


def test_stop_wakes_a_backoff_wait_and_starts_no_attempt(scripted):
    url, handler = scripted
    handler.script = [(503, "busy")] * 5
    backend = OpenAIBackend(GeneratorConfig(backend="openai", base_urls=[url], cache=None, retry_wait=600.0))
    stop, raised = threading.Event(), []

    def request() -> None:
        try:
            backend.complete(GenerationRequest(messages=QUESTION), stop)
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=request)
    worker.start()
    while not handler.seen:
        time.sleep(0.01)
    stop.set()  # the worker is in its 600 s backoff wait
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert [type(e).__name__ for e in raised] == ["_Stopped"] and len(handler.seen) == 1


def test_backoff_doubles_from_retry_wait_up_to_the_cap():
    from a2c.llm.openai_backend import MAX_BACKOFF

    backend = OpenAIBackend(GeneratorConfig(backend="openai", cache=None, retry_wait=4.0, max_retries=9))
    waits: list[float] = []
    retrying = backend._retrying(threading.Event()).copy(sleep=waits.append)
    failures = iter([httpx.ConnectError("refused")] * 9 + [None])

    def attempt() -> str:
        failure = next(failures)
        if failure is not None:
            raise failure
        return "answered"

    assert retrying(attempt) == "answered"
    assert waits == [4.0, 8.0, 16.0, MAX_BACKOFF, 30.0, 30.0, 30.0, 30.0, 30.0]
