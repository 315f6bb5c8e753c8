"""`a2c serve` as a real process for the tests (tests/test_serve.py in front of llama.cpp,
tests/test_vllm_server.py in front of vLLM's server)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import free_port

CLIENT_KEY = "client-key-0a1b"
# one paraphrase and one temperature with short replies: a served answer costs seconds on a CPU
SMALL = {"variation": {"techniques": ["synonyms"], "temperatures": [0.5], "paraphrase_max_tokens": 24,
                       "long_max_tokens": 12, "short_max_tokens": 6},
         "judges": ["rouge1"], "ask_to_choose": {"max_tokens": 3}}


class ServeProcess:
    """`python -m a2c serve` on a free 127.0.0.1 port, its output in a log file."""

    def __init__(self, folder: Path, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"{name}.log"
        keys = {"OPENAI_API_KEY", "A2C_SERVE_API_KEY"}
        environment = {k: v for k, v in os.environ.items() if k not in keys} | (env or {})
        command = [sys.executable, "-m", "a2c", "serve", "--port", str(self.port), *args]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)

    def wait_healthy(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"a2c serve exited with {self.proc.returncode}: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"a2c serve did not answer within {timeout:.0f} s: {self.log.read_text()}")

    def client(self, key: str = CLIENT_KEY):
        from openai import OpenAI

        return OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, timeout=600)

    def pending(self) -> int:
        return httpx.get(f"{self.url}/health", timeout=10).json()["pending"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
