"""`a2c serve` in front of an upstream that sends answers nobody asked for: two clients ask at once, each
with a private word in its question; the upstream echoes each prompt, and after some answers pushes an
extra one carrying the other client's word onto the same kept-alive connection. No reply may hold the
other client's word, neither from that server nor, after a restart on the same `--cache` against a correct
upstream, from the cache."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.serve_process import SMALL, ServeProcess

pytestmark = pytest.mark.slow

WORDS = {"alice": "zebracorn", "bob": "quokkafish"}


class EchoUpstream:
    """OpenAI chat on 127.0.0.1, HTTP/1.1 kept alive: each answer is the prompt's last message echoed;
    with `leak`, every second answer is followed, in the same write, by a forged one naming both words."""

    def __init__(self, leak: bool, broken: bytes = b"") -> None:
        self.leak, self.broken, self.answers = leak, broken, 0
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _reply(status: str, payload: object) -> bytes:
        body = json.dumps(payload).encode()
        return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                .encode() + body)

    def _chat(self, text: str) -> bytes:
        return self._reply("200 OK", {"choices": [{"message": {"role": "assistant", "content": text},
                                                   "finish_reason": "stop"}],
                                      "usage": {"prompt_tokens": 3, "completion_tokens": 3}})

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
                    body, buffer = buffer[:length], buffer[length:]
                    if head.startswith(b"GET"):
                        conn.sendall(self._reply("200 OK", {"object": "list", "data": [{"id": "fake"}]}))
                        continue
                    if self.broken:  # every completion answered with these bytes instead
                        conn.sendall(self.broken)
                        continue
                    prompt = json.loads(body)["messages"][-1]["content"]
                    with self._lock:
                        self.answers += 1
                        forge = self.leak and self.answers % 2 == 0
                    reply = self._chat(f"Echo: {prompt[-200:]}")
                    if forge:
                        reply += self._chat(f"Leaked: {WORDS['alice']} {WORDS['bob']}")
                    conn.sendall(reply)
            except OSError:
                return

    def stop(self) -> None:
        self._sock.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "serve.yaml").write_text(json.dumps({**SMALL, "generator": {"retry_wait": 0.01}}))
    return tmp_path


def _ask_both(proc: ServeProcess) -> dict[str, str]:
    def ask(who: str) -> str:
        question = f"What does the word {WORDS[who]} mean to {who}?"
        response = httpx.post(f"{proc.url}/v1/chat/completions", timeout=120, json={
            "model": "fake", "messages": [{"role": "user", "content": question}]})
        return response.text

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(WORDS, pool.map(ask, WORDS), strict=True))


def _serve(folder: Path, name: str, upstream: EchoUpstream, *extra: str) -> ServeProcess:
    proc = ServeProcess(folder, name, "--upstream", upstream.url, "--model", "fake", "--config",
                        str(folder / "serve.yaml"), "--cache", str(folder / "cache"), "--batch-window", "0",
                        *extra)
    proc.wait_healthy()
    return proc


@pytest.fixture
def upstreams() -> Iterator[list[EchoUpstream]]:
    made: list[EchoUpstream] = []
    yield made
    for upstream in made:
        upstream.stop()


def test_no_client_ever_reads_another_clients_text(folder, upstreams):
    leaking = EchoUpstream(leak=True)
    upstreams.append(leaking)
    proc = _serve(folder, "leaking", leaking)
    try:
        replies = _ask_both(proc)
    finally:
        proc.stop()
    assert leaking.answers >= 4  # the forged answers were sent
    for who, reply in replies.items():
        other = next(w for name, w in WORDS.items() if name != who)
        assert "Leaked" not in reply and other not in reply, (who, reply)
        assert WORDS[who] in reply, reply  # its own question's echo came back
    correct = EchoUpstream(leak=False)
    upstreams.append(correct)
    restarted = _serve(folder, "restarted", correct)
    try:
        again = _ask_both(restarted)
    finally:
        restarted.stop()
    for who, reply in again.items():
        other = next(w for name, w in WORDS.items() if name != who)
        assert "Leaked" not in reply and other not in reply, (who, reply)
    cached = b"".join(p.read_bytes() for p in (folder / "cache").rglob("*") if p.is_file())
    assert b"Leaked" not in cached


@pytest.mark.parametrize("broken", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{",
    b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 60000 + b"\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 60000 + b"\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + b"[" * 10000 + b"]" * 10000,
], ids=["a length of 10**12", "a 60,000-digit length", "a 60,000-digit chunk size", "JSON 10,000 deep"])
def test_a_garbled_upstream_answer_is_a_502_in_one_line(folder, upstreams, broken):
    upstream = EchoUpstream(leak=False, broken=broken)
    upstreams.append(upstream)
    # a length that lies ends at the read timeout
    proc = _serve(folder, "garbled", upstream, "--retries", "0", "--timeout", "3")
    try:
        response = httpx.post(f"{proc.url}/v1/chat/completions", timeout=120, json={
            "model": "fake", "messages": [{"role": "user", "content": "How many legs has a spider?"}]})
    finally:
        proc.stop()
    assert response.status_code == 502, response.text
    message = response.json()["error"]["message"]
    assert "\n" not in message and upstream.url.split("/v1")[0] in message
    assert "Traceback" not in proc.log.read_text()
