"""A fake OpenAI-compatible server on 127.0.0.1 for the cases a real one will not produce on demand: answers
late or never, refusals, and whatever `/models` says about the model it serves."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LIFETIME = 120.0  # seconds (by default): the server shuts itself down after this, whatever the test does
HANG = 60.0  # a request that "never" gets its answer (ends early when the server stops)


class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 resets connections when 64 clients' calls arrive at once


class SlowServer:
    """OpenAI chat/completions on 127.0.0.1: the i-th request (in arrival order) is answered after
    `delays[i]` seconds (at once when not listed) or, when `status` is set, refused with it; a request whose
    body `fails` says yes to is refused with 500 each time it comes (a prompt that never gets an answer).
    It records what arrived and what it finished answering, and stops by itself after LIFETIME seconds.
    `keep_alive`: answer in HTTP/1.1 and keep connections open (by default each answer closes its own)."""

    def __init__(self, lifetime: float = LIFETIME, keep_alive: bool = False) -> None:
        self.delays: list[float] = []
        self.status: int | None = None
        self.fails: Callable[[dict], bool] = lambda body: False
        self.models: list[dict[str, Any]] | None = []  # the `/models` data; None: answer 404
        self.choice: dict[str, Any] = {}  # fields added to every answer's choice (`text`, a `logprobs` shape)
        self.model_lists = 0  # GET /models requests seen
        self.arrived: list[dict] = []
        self.answered: list[dict] = []
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        handler = self._handler()
        if keep_alive:  # HTTP/1.1: connections stay open between requests, as vLLM's and llama.cpp's do
            handler.protocol_version = "HTTP/1.1"
        self._http = _Listener(("127.0.0.1", 0), handler)
        self._http.handle_error = lambda request, address: None  # a client that left mid-answer
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.start()

    def reset(self, delays: list[float] | None = None, status: int | None = None,
              fails: Callable[[dict], bool] | None = None) -> None:
        with self._lock:
            self.delays, self.status = delays or [], status
            self.fails = fails or (lambda body: False)
            self.arrived, self.answered = [], []

    def wait_for(self, condition: Callable[[], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "the server never saw what the test waits for"
            time.sleep(0.02)

    def stop(self) -> None:
        self.stopped.set()  # ends every delay at once
        self._timer.cancel()
        self._http.shutdown()
        self._http.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # /models: what `a2c run` and `a2c probe` check before they start
                with server._lock:
                    server.model_lists += 1
                    models = server.models
                if models is None:
                    self._send(404, {"error": "not found"})
                else:
                    self._send(200, {"object": "list", "data": models})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    n = len(server.arrived)
                    server.arrived.append(body)
                    delay = server.delays[n] if n < len(server.delays) else 0.0
                    status = 500 if server.fails(body) else server.status
                if server.stopped.wait(delay):
                    return
                if status is not None:
                    self._send(status, {"error": "busy"})
                    return
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": f"Answer {n}."},
                                              "finish_reason": "stop", **server.choice}],
                                 "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
                with server._lock:
                    server.answered.append(body)

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        return Handler
