"""HTTP clients side by side: a2c's connections (urllib3) against httpcore, httpx and aiohttp, each sending
the same JSON POST to one scripted keep-alive server in a child process (its CPU not counted).

Run: `.venv/bin/python benchmarks/bench_http_clients.py [--requests 2000]` from the repository root. For
each client it prints the process CPU time per request (user + system, the server excluded) and its ratio
to a2c's, then whether it keeps every answer with its own request against a server that, once, sends a
second answer after the first in the same write (the next ten requests are checked).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = r"""
import json, socket, sys, threading
forge = sys.argv[1] == "forge"
def answer(ident):
    body = json.dumps({"id": ident, "choices": [{"message": {"role": "assistant", "content": "Answer."},
                       "finish_reason": "stop"}], "usage": {"prompt_tokens": 5}}).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    return head % len(body) + body
served = 0
def serve(conn):
    global served
    buffer = b""
    while True:
        while b"\r\n\r\n" not in buffer:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buffer += chunk
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length"):
                length = int(line.split(b":")[1])
        while len(buffer) < length:
            buffer += conn.recv(65536)
        ident, buffer = json.loads(buffer[:length])["id"], buffer[length:]
        served += 1
        conn.sendall(answer(ident) + (answer("forged") if forge and served == 3 else b""))
sock = socket.create_server(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
while True:
    conn, _ = sock.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""

Send = Callable[[str, bytes], bytes]


def clients() -> dict[str, Send]:
    """Each client, made once, as a function of URL and body to the answer's body."""
    import aiohttp
    import httpcore
    import httpx

    from a2c.llm.connections import Connections

    ours = Connections({"Authorization": "Bearer k"}, timeout=30)
    pool = httpcore.ConnectionPool()
    fields = [(b"Authorization", b"Bearer k"), (b"Content-Type", b"application/json")]
    sent = {"Authorization": "Bearer k", "Content-Type": "application/json"}
    client = httpx.Client(headers=sent, timeout=30)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    async def session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(headers=sent)

    aio = asyncio.run_coroutine_threadsafe(session(), loop).result()

    async def aio_post(url: str, body: bytes) -> bytes:
        async with aio.post(url, data=body) as response:
            return await response.read()

    return {
        "a2c (urllib3)": lambda url, body: ours.request("POST", url, body)[1],
        "httpcore": lambda url, body: pool.request("POST", url, headers=fields, content=body).content,
        "httpx": lambda url, body: client.post(url, content=body).content,
        "aiohttp": lambda url, body: asyncio.run_coroutine_threadsafe(aio_post(url, body), loop).result(),
    }


def server(mode: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, mode], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{proc.stdout.readline().strip()}/v1/chat/completions"


def cpu_per_request(send: Send, url: str, requests: int) -> float:
    body = json.dumps({"id": 0, "model": "m", "messages": [{"role": "user", "content": "hi " * 60}]}).encode()
    for _ in range(50):
        send(url, body)
    started = time.process_time()
    for _ in range(requests):
        send(url, body)
    return 1000 * (time.process_time() - started) / requests


def misattributed(send: Send, url: str) -> str:
    wrong = 0
    for i in range(13):
        try:
            if json.loads(send(url, json.dumps({"id": i}).encode()))["id"] != i:
                wrong += 1
        except Exception:  # a refused exchange is the right outcome here
            pass
    return f"{wrong} of 13 answers went to another request"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per client (default 2000)")
    args = parser.parse_args()
    made = clients()
    proc, url = server("plain")
    try:
        costs = {name: cpu_per_request(send, url, args.requests) for name, send in made.items()}
    finally:
        proc.kill()
    print(f"CPU per request over {args.requests} kept-alive requests (1 core, server in a child):")
    base = costs["a2c (urllib3)"]
    for name, cost in costs.items():
        print(f"  {name:14s} {cost:.3f} ms  ({cost / base:.2f}x a2c's)")
    print("a second answer sent after the third one, in the same write:")
    for name, send in clients().items():
        proc, url = server("forge")
        try:
            print(f"  {name:14s} {misattributed(send, url)}")
        finally:
            proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
