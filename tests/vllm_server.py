"""Test helpers for vLLM: its OpenAI-compatible server on the converted embedded model, and a watch on a
process's descendants, so a test can tell that no engine process outlived what started it.

The server runs in its own session (process group): stopping it signals the whole group, and every
descendant seen while it ran is killed by pid if it is still there, so no engine is left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

from a2c.llm.vllm_backend import cpu_environment
from a2c.models.embedded import DEFAULT_MODEL
from tests.conftest import free_port, wait_until_answering


def converted_model(root: Path) -> Path:
    """The embedded SmolLM2 as the safetensors folder vLLM loads, converted once under `root`."""
    from a2c.models.convert import convert_gguf

    folder = root / "smollm2-vllm"
    if not (folder / "config.json").is_file():
        convert_gguf(DEFAULT_MODEL, folder, report=lambda _: None)
    return folder


class ProcessWatch:
    """Records every descendant of `pid` (pid, start time, latest name) every 0.1 s from a thread, until
    `stop`."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.seen: dict[int, float] = {}
        self.names: dict[int, str] = {}  # vLLM renames its processes once started (VLLM::EngineCore)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            try:
                children = self.root.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for child in children:
                with contextlib.suppress(psutil.NoSuchProcess):
                    self.seen.setdefault(child.pid, child.create_time())
                    self.names[child.pid] = child.name()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def alive(self) -> list[psutil.Process]:
        """Recorded descendants still running (a reused pid or a zombie does not count)."""
        found = []
        for pid, started in list(self.seen.items()):
            try:
                process = psutil.Process(pid)
                if process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE:
                    found.append(process)
            except psutil.NoSuchProcess:
                pass
        return found

    def wait_gone(self, timeout: float) -> list[psutil.Process]:
        """Recorded descendants still running after up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (left := self.alive()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill_all(self) -> None:
        """SIGKILL every recorded descendant still running, by pid (test clean-up)."""
        for process in self.alive():
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


class VLLMServer:
    """`python -m vllm.entrypoints.openai.api_server` on a free 127.0.0.1 port, CPU settings as the in-process
    backend uses them; `start_seconds` is how long it took to answer /v1/models."""

    def __init__(self, model_dir: Path, log: Path, *, name: str = DEFAULT_MODEL, max_model_len: int = 2048,
                 timeout: float = 600.0) -> None:
        self.name = name
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        env = {**os.environ, **cpu_environment(kv_cache_gb=1)}
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
                   "--served-model-name", name, "--host", "127.0.0.1", "--port", str(self.port),
                   "--max-model-len", str(max_model_len), "--enforce-eager", "--seed", "0",
                   "--enable-prefix-caching", "--block-size", "32"]
        started = time.monotonic()
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        self.watch = ProcessWatch(self.proc.pid)
        self.log = log
        try:
            wait_until_answering(self.base_url, self.proc, timeout, "vLLM server", self.log)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started

    def requests_finished(self) -> int:
        """Requests the engine has finished, from the server's Prometheus metrics (all finish reasons)."""
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=10).text
        counts = re.findall(r"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", text, re.MULTILINE)
        return round(sum(float(c) for c in counts))

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 30 s; then every descendant left, by pid."""
        try:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        finally:
            self.watch.wait_gone(10)
            self.watch.kill_all()
            self.watch.stop()
