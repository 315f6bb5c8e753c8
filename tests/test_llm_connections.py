"""The openai backend's connections (`a2c.llm.connections`: urllib3's pools with a2c's guards) against
scripted 127.0.0.1 servers: the bytes of a request, connections kept and reused, chunked and read-to-close
bodies, a 100 Continue, a kept-alive connection the server closed, garbage, oversized and cut-short answers
and silence, each failure as httpx's type (the backend's retries and messages depend on it)."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from a2c.llm.connections import Connections

ANSWER = b'{"ok": true}'


class RawServer:
    """Accepts connections on 127.0.0.1 and answers each request with `reply(n)` (the n-th request), raw
    bytes; `close_after` closes a connection after that many answers. Counts connections and requests."""

    def __init__(self, reply: Callable[[int], bytes], close_after: int | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.reply, self.close_after, self.tls = reply, close_after, tls
        self.connections = self.requests = self.closed = 0
        self.bodies: list[bytes] = []
        self.heads: list[bytes] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://localhost:{self._sock.getsockname()[1]}/v1/chat/completions"
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
        try:
            if self.tls is not None:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except ssl.SSLError:
                    return  # a client that did not trust the certificate
            self._answer(conn)
        finally:
            conn.close()
            self.closed += 1

    def _answer(self, conn: socket.socket) -> None:
        buffer, answered = b"", 0
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            self.heads.append(head)
            length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), b"0"))
            while len(buffer) < length:
                buffer += conn.recv(65536)
            self.bodies.append(buffer[:length])
            buffer = buffer[length:]
            self.requests += 1
            conn.sendall(self.reply(self.requests))
            answered += 1
            if self.close_after is not None and answered >= self.close_after:
                return

    def stop(self) -> None:
        self._sock.close()


def _response(body: bytes = ANSWER, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


@pytest.fixture
def serve() -> Iterator[Callable[..., RawServer]]:
    started: list[RawServer] = []

    def start(reply: Callable[[int], bytes], close_after: int | None = None,
              tls: ssl.SSLContext | None = None) -> RawServer:
        started.append(RawServer(reply, close_after, tls))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _post(client: Connections, url: str, body: object) -> tuple[int, object]:
    status, data = client.request("POST", url, json.dumps(body).encode())
    return status, json.loads(data)


def test_one_connection_carries_every_request(serve):
    server = serve(lambda n: _response())
    client = Connections({"Authorization": "Bearer k"}, timeout=10)
    assert [_post(client, server.url, {"n": i}) for i in range(5)] == [(200, {"ok": True})] * 5
    assert server.connections == 1 and server.requests == 5
    assert json.loads(server.bodies[3]) == {"n": 3}


def test_threads_each_keep_their_own_connection(serve):
    server = serve(lambda n: _response())
    client = Connections({}, timeout=10)
    barrier = threading.Barrier(3)

    def work() -> None:
        barrier.wait()
        for _ in range(4):
            assert _post(client, server.url, {}) == (200, {"ok": True})

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.requests == 12 and server.connections <= 3


def test_a_chunked_body_with_trailers_is_joined(serve):
    body = b"7\r\n{\"ok\": \r\n5\r\ntrue}\r\n0\r\nX-Trailer: 1\r\n\r\n"
    server = serve(lambda n: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    client = Connections({}, timeout=10)
    assert _post(client, server.url, {}) == (200, {"ok": True})
    assert _post(client, server.url, {}) == (200, {"ok": True})  # the connection was left at the next answer
    assert server.connections == 1


def test_a_body_that_ends_with_the_connection(serve):
    server = serve(lambda n: b"HTTP/1.0 200 OK\r\n\r\n" + ANSWER, close_after=1)
    client = Connections({}, timeout=10)
    assert _post(client, server.url, {}) == (200, {"ok": True})
    assert _post(client, server.url, {}) == (200, {"ok": True})
    assert server.connections == 2  # HTTP/1.0 without keep-alive: nothing kept


def test_a_kept_connection_the_server_closed_is_replaced(serve):
    server = serve(lambda n: _response(), close_after=1)  # says HTTP/1.1, then hangs up anyway
    client = Connections({}, timeout=10)
    for i in range(3):
        while server.closed < i:  # the hang-up has happened (the check before reuse must see it)
            time.sleep(0.01)
        assert _post(client, server.url, {}) == (200, {"ok": True})
    assert server.requests == 3 and server.connections == 3


def test_error_statuses_come_back_as_they_are(serve):
    server = serve(lambda n: _response(b'{"error": "bad"}', "400 Bad Request"))
    client = Connections({}, timeout=10)
    assert client.request("POST", server.url, b"{}") == (400, b'{"error": "bad"}')
    assert _post(client, server.url, {}) == (400, {"error": "bad"})  # and the connection stays usable
    assert server.connections == 1


def test_garbage_and_a_hang_up_are_protocol_errors(serve):
    server = serve(lambda n: b"SMTP ready\r\n\r\n")
    client = Connections({}, timeout=10)
    with pytest.raises(httpx.RemoteProtocolError, match="BadStatusLine"):
        client.request("POST", server.url, b"{}")
    silent = serve(lambda n: b"", close_after=1)  # reads the request, answers nothing, hangs up
    with pytest.raises(httpx.RemoteProtocolError, match="RemoteDisconnected"):
        client.request("POST", silent.url, b"{}")


def test_a_refused_port_and_a_url_that_is_not_http():
    client = Connections({}, timeout=10)
    with socket.create_server(("127.0.0.1", 0)) as unused:
        port = unused.getsockname()[1]  # closed at once: nothing listens there
    with pytest.raises(httpx.ConnectError):
        client.request("POST", f"http://127.0.0.1:{port}/v1/chat/completions", b"{}")
    with pytest.raises(httpx.UnsupportedProtocol, match="not an http"):
        client.request("GET", "ftp://127.0.0.1/v1/models")


def test_a_silent_server_times_out_as_a_read_timeout(serve):
    server = serve(lambda n: (threading.Event().wait(5), b"")[1])  # answers nothing for 5 s
    client = Connections({}, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.request("POST", server.url, b"{}")
    assert time.monotonic() - started < 3


def test_a_request_is_its_head_and_its_body(serve):
    server = serve(lambda n: _response())
    client = Connections({"Authorization": "Bearer k"}, timeout=10)
    client.request("POST", server.url + "?a=1", b'{"x": 1}')
    client.request("GET", server.url.replace("/chat/completions", "/models"))
    port = server.url.split(":")[2].split("/")[0]
    post, get = (dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:]) for head in server.heads)
    assert server.heads[0].startswith(b"POST /v1/chat/completions?a=1 HTTP/1.1\r\n")
    assert server.heads[1].startswith(b"GET /v1/models HTTP/1.1\r\n")
    for fields in (post, get):
        assert fields[b"Host"] == f"localhost:{port}".encode() and fields[b"Authorization"] == b"Bearer k"
        assert fields[b"Accept-Encoding"] == b"identity"  # an answer is never decompressed
    assert post[b"Content-Length"] == b"8" and server.bodies == [b'{"x": 1}', b""]


def test_a_continue_is_skipped_and_a_bodiless_answer_keeps_the_connection(serve):
    answers = {1: b"HTTP/1.1 100 Continue\r\n\r\n" + _response(),
               2: b"HTTP/1.1 204 No Content\r\n\r\n", 3: _response(b'{"n": 3}')}
    server = serve(lambda n: answers[n])
    client = Connections({}, timeout=10)
    assert _post(client, server.url, {}) == (200, {"ok": True})
    assert client.request("POST", server.url, b"{}") == (204, b"")
    assert _post(client, server.url, {}) == (200, {"n": 3})
    assert server.connections == 1


def test_connection_close_is_obeyed_and_disagreeing_lengths_are_refused(serve):
    server = serve(lambda n: b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: Close\r\n\r\n" + ANSWER)
    client = Connections({}, timeout=10)
    assert [_post(client, server.url, {}) for _ in range(2)] == [(200, {"ok": True})] * 2
    assert server.connections == 2
    twice = serve(lambda n: b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 3\r\n\r\n" + ANSWER)
    with pytest.raises(httpx.RemoteProtocolError, match="Content-Length"):
        client.request("POST", twice.url, b"{}")


@pytest.mark.parametrize(("answer", "error"), [
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "IncompleteRead"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n",
     "IncompleteRead|malformed answer"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 60000 + b"\r\n{}", "IncompleteRead"),
    (b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + _response(), "after its answer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" + ANSWER, "IncompleteRead"),
    (b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", "more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70000 + b"\r\n\r\n", "LineTooLong: .* header line"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "BadStatusLine"),
])
def test_a_malformed_or_cut_short_answer_is_a_protocol_error(serve, answer, error):
    server = serve(lambda n: answer, close_after=1)
    with pytest.raises(httpx.RemoteProtocolError, match=error):
        Connections({}, timeout=10).request("POST", server.url, b"{}")


def test_a_line_break_in_a_header_or_a_space_in_the_path_is_refused_before_sending():
    with pytest.raises(ValueError, match="'Authorization' is not a valid") as caught:
        Connections({"Authorization": "Bearer k\r\nX-Injected: 1"}, timeout=10)
    assert "Injected" not in str(caught.value)  # the value (a key) is not shown
    with pytest.raises(ValueError, match="'X Bad'"):
        Connections({"X Bad": "1"}, timeout=10)
    with pytest.raises(ValueError, match="'X-Key'"):
        Connections({"X-Key": "schlüssel€"}, timeout=10)  # not latin-1
    with pytest.raises(httpx.InvalidURL, match="character HTTP forbids"):
        Connections({}, timeout=10).request("GET", "http://127.0.0.1:9/v1/a b")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_verifies_the_server_and_keeps_its_connection(serve, tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = serve(lambda n: _response(), tls=tls)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):  # not trusted yet
        Connections({}, timeout=10).request("POST", server.url, b"{}")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the default context now trusts it
    client = Connections({}, timeout=10)
    assert [_post(client, server.url, {"n": i}) for i in range(3)] == [(200, {"ok": True})] * 3
    assert server.requests == 3 and server.connections == 2  # the refused handshake, then one kept
