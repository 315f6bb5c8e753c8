"""Hostile upstream servers on 127.0.0.1 against the openai backend's connections: an answer never goes to
another request (stray answers after an answer, a short Content-Length, a 204 with a body, a 503 followed
by a stray answer, on kept-alive connections), and every answer has a bound on its size, enforced while it
is read (a 300 MB answer, an endless chunked one), in a child process whose peak memory is measured."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from a2c.llm.connections import Connections

ROOT = Path(__file__).resolve().parents[1]


def _answer(payload: object, status: str = "200 OK", length: int | None = None) -> bytes:
    body = json.dumps(payload).encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n\r\n").encode() + body


class EchoServer:
    """Answers each request with its own `id` (`{"id": ...}`), except the third, which gets `third(id)`:
    raw bytes, possibly more than one answer. Counts connections."""

    def __init__(self, third: Callable[[int], bytes]) -> None:
        self.third, self.connections, self.requests = third, 0, 0
        self.later = b""  # sent 50 ms after the third answer
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1/chat/completions"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            try:
                while True:
                    while b"\r\n\r\n" not in buffer:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buffer += chunk
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                                       if line.lower().startswith(b"content-length")), b"0"))
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    ident, buffer = json.loads(buffer[:length])["id"], buffer[length:]
                    self.requests += 1
                    reply = self.third(ident) if self.requests == 3 else _answer({"id": ident})
                    conn.sendall(reply)
                    if self.requests == 3 and self.later:
                        time.sleep(0.05)
                        conn.sendall(self.later)  # onto a connection that is idle by now
            except OSError:
                return

    def stop(self) -> None:
        self._sock.close()


@pytest.fixture
def echo() -> Iterator[Callable[[Callable[[int], bytes]], EchoServer]]:
    started: list[EchoServer] = []

    def start(third: Callable[[int], bytes]) -> EchoServer:
        started.append(EchoServer(third))
        return started[-1]

    yield start
    for server in started:
        server.stop()


STRAY = {
    "a forged answer in the same write": lambda i: _answer({"id": i}) + _answer({"id": "forged"}),
    "a Content-Length shorter than the body": lambda i: _answer({"id": i, "pad": "x" * 40}, length=12),
    "a 204 with a body": lambda i: b"HTTP/1.1 204 No Content\r\n\r\n" + _answer({"id": "stray"}),
    "a 503 then a stray answer": lambda i: _answer({"error": "busy"}, "503 Busy") + _answer({"id": "stray"}),
}


@pytest.mark.parametrize("case", list(STRAY))
def test_each_request_gets_its_own_answer_or_an_error(echo, case):
    server = echo(STRAY[case])
    client = Connections({}, timeout=10)
    got: list[object] = []
    for i in range(12):
        try:
            status, data = client.request("POST", server.url, json.dumps({"id": i}).encode())
            got.append(json.loads(data)["id"] if status == 200 else status)
        except httpx.RemoteProtocolError as exc:
            assert "after its answer" in str(exc) and server.url in str(exc)
            got.append("error")
    assert got == [0, 1, "error", *range(3, 12)]  # the third exchange failed whole; no shift after it
    assert server.connections == 2  # the connection that carried more than its answer was not reused


def test_an_answer_pushed_onto_an_idle_connection_retires_it(echo):
    server = echo(lambda i: _answer({"id": i}))
    server.later = _answer({"id": "pushed"})
    client = Connections({}, timeout=10)
    got = []
    for i in range(6):
        if i == 3:
            time.sleep(0.3)  # the pushed answer is waiting on the idle connection
        got.append(json.loads(client.request("POST", server.url, json.dumps({"id": i}).encode())[1])["id"])
    assert got == list(range(6)) and server.connections == 2


class FloodServer:
    """Sends every request the same endless or huge answer, a MB at a time, until the client leaves."""

    def __init__(self, head: bytes, piece: bytes, total: int | None) -> None:
        self.head, self.piece, self.total = head, piece, total
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1/chat/completions"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._flood, args=(conn,), daemon=True).start()

    def _flood(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(self.head)
                sent = 0
                deadline = time.monotonic() + 60
                while (self.total is None or sent < self.total) and time.monotonic() < deadline:
                    conn.sendall(self.piece)
                    sent += len(self.piece)
            except OSError:
                return  # the client gave up, as it should

    def stop(self) -> None:
        self._sock.close()


CLIENT = """
import json, sys, time, tracemalloc
from a2c.llm.connections import Connections
client = Connections({}, timeout=30)
tracemalloc.start()
started = time.monotonic()
try:
    client.request("POST", sys.argv[1], b"{}", max_bytes=int(sys.argv[2]))
    error = None
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
grown = tracemalloc.get_traced_memory()[1]  # the most memory Python held at once during the request
print(json.dumps({"error": error, "grown": grown, "seconds": time.monotonic() - started}))
"""

MB = 1 << 20
FLOODS = {
    "300 MB with a Content-Length": (f"HTTP/1.1 200 OK\r\nContent-Length: {300 * MB}\r\n\r\n".encode(),
                                     b"x" * MB, 300 * MB,
                                     "announced an answer of 314,572,800 bytes (Content-Length), over the "
                                     "bound of 1,048,576"),
    "300 MB read to the close": (b"HTTP/1.0 200 OK\r\n\r\n", b"x" * MB, 300 * MB, "longer than the bound"),
    "300 MB in 1 MB chunks": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                              b"%x\r\n%b\r\n" % (MB, b"x" * MB), 300 * MB, "longer than the bound"),
    "endless 1-byte chunks": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nx\r\n" * 4096,
                              None, "longer than the bound"),
    "a chunk size of 10**12": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % 10**12,
                               b"x" * MB, None, "longer than the bound"),
}


@pytest.mark.parametrize("case", list(FLOODS))
def test_an_answer_past_the_bound_ends_in_one_line_without_holding_it(case):
    head, piece, total, said = FLOODS[case]
    server = FloodServer(head, piece, total)
    bound = MB // 4 if case.startswith("endless") else MB  # a2c reads tiny chunks at ~30 us each
    try:
        done = subprocess.run([sys.executable, "-c", CLIENT, server.url, str(bound)], capture_output=True,
                              text=True, timeout=120, cwd=ROOT, check=True)
    finally:
        server.stop()
    result = json.loads(done.stdout)
    assert result["error"].startswith("RemoteProtocolError") and said in result["error"]
    assert "\n" not in result["error"] and server.url in result["error"]
    assert result["grown"] < 2 * bound, result  # the bound holds while reading, not after
