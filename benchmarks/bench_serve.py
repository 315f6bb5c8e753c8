"""Load on `a2c serve` in front of llama.cpp (embedded SmolLM2-135M): latency, throughput, batching, memory.

Run from the repository root: `.venv/bin/python benchmarks/bench_serve.py` (`--help` for sizes). Every
server listens on 127.0.0.1 and is stopped when the script ends; the run is bounded by --requests and
--max-seconds (requests not sent by then are counted, not waited for).

Workload: --requests distinct questions ("What is 17 plus 20?") sent by --clients concurrent `openai`
clients, each answered by Ask-to-Choose with settings small enough for a 2-core box (SETTINGS below: one
paraphrase technique, one temperature, replies of at most 16/12/6 tokens, rank replies of 3, the rouge1
judge): about 7 model calls per question.

1. Served load: errors (must be 0), p50/p95 latency, requests/s, and per request the upstream round trips
   (batched generate steps: each one wave of concurrent HTTP requests) and model calls; the server's peak
   RSS (VmHWM from /proc, else the largest psutil sample).
2. Baseline: --sequential questions answered one after another by `AskToChoose.answer` against the same
   upstream. Round trips per question, sequential / served, is the batching.
3. Proxy overhead: --overhead requests one at a time to `a2c serve --backend scripted` (no window) vs
   `AskToChoose.answer` in process on the same scripted model: the median difference is what serving adds
   per request (HTTP, JSON, validation, judging the candidates, the evidence field).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from a2c.llm import GeneratorConfig, build_generator
from a2c.models.embedded import DEFAULT_MODEL, embedded_gguf
from a2c.serve.config import answer_settings
from a2c.serve.engine import wrapper
from a2c.serve.usage import RecordingGenerator

SETTINGS: dict[str, Any] = {
    "variation": {"techniques": ["synonyms"], "temperatures": [0.7], "paraphrase_max_tokens": 16,
                  "long_max_tokens": 12, "short_max_tokens": 6},
    "judges": ["rouge1"], "a2c": {"max_tokens": 3}}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen[bytes], what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{what} did not answer {url} within {timeout:.0f} s")


def start(command: list[str], url: str, what: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    wait_for(url, proc, what)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


class PeakRSS:
    """The peak resident memory of a process: the kernel's VmHWM when /proc has it, else psutil samples."""

    def __init__(self, pid: int) -> None:
        self.pid, self.sampled, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        try:
            import psutil
        except ImportError:
            return
        process = psutil.Process(self.pid)
        while not self._stop.wait(0.2):
            try:
                self.sampled = max(self.sampled, process.memory_info().rss)
            except psutil.Error:
                return

    def peak_mb(self) -> tuple[float, str]:
        self._stop.set()
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024, "VmHWM"
        except OSError:
            pass
        return self.sampled / 2**20, "psutil samples"


@dataclass
class Outcome:
    seconds: float
    status: int  # 200, an error status, or 0 for a connection failure
    model_calls: int = 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def served_load(base_url: str, questions: list[str], clients: int, until: float) -> list[Outcome | None]:
    from openai import APIStatusError, OpenAI

    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=3600)

    def one(question: str) -> Outcome | None:
        if time.monotonic() > until:
            return None  # not sent: the time bound is spent
        started = time.monotonic()
        try:
            answer = client.chat.completions.create(model=DEFAULT_MODEL,
                                                    messages=[{"role": "user", "content": question}])
        except APIStatusError as exc:
            return Outcome(time.monotonic() - started, exc.status_code)
        except Exception:
            return Outcome(time.monotonic() - started, 0)
        return Outcome(time.monotonic() - started, 200, answer.model_extra["a2c"]["model_calls"])

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(one, questions))


def sequential_baseline(upstream: str, questions: list[str]) -> tuple[float, int, int]:
    """Seconds, generate steps and model calls of AskToChoose.answer, one question after another."""
    generator = RecordingGenerator(build_generator(GeneratorConfig(backend="openai", model=DEFAULT_MODEL,
                                                                   base_urls=upstream, cache=None)))
    chooser = wrapper(generator, answer_settings(SETTINGS, ""))
    calls_before = generator.stats.generated
    started = time.monotonic()
    for question in questions:
        chooser.answer(question)
    return time.monotonic() - started, generator.steps, generator.stats.generated - calls_before


def median_ms(action: Callable[[], object], times: int) -> float:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000


def proxy_overhead(folder: Path, config: Path, times: int) -> tuple[float, float]:
    """Median ms per question: through `a2c serve` (scripted model, no window) and AskToChoose in process."""
    port = free_port()
    proc = start([sys.executable, "-m", "a2c", "serve", "--backend", "scripted", "--model", "scripted",
                  "--config", str(config), "--batch-window", "0", "--port", str(port)],
                 f"http://127.0.0.1:{port}/health", "a2c serve (scripted)", folder / "scripted.log")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1", timeout=60) as client:
            body = {"model": "scripted", "messages": [{"role": "user", "content": "What is 2 plus 2?"}]}

            def ask() -> None:
                client.post("/chat/completions", json=body).raise_for_status()

            median_ms(ask, 3)  # warm-up: the judge and the first request's imports
            served = median_ms(ask, times)
    finally:
        stop(proc)
    chooser = wrapper(build_generator(GeneratorConfig(backend="scripted", model="scripted", cache=None)),
                      answer_settings(SETTINGS, ""))
    median_ms(lambda: chooser.answer("What is 2 plus 2?"), 3)
    return served, median_ms(lambda: chooser.answer("What is 2 plus 2?"), times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests sent to a2c serve")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--sequential", type=int, default=32, help="questions of the AskToChoose baseline")
    parser.add_argument("--overhead", type=int, default=50, help="requests timed for the proxy overhead")
    parser.add_argument("--batch-window", type=float, default=0.05, help="a2c serve --batch-window")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="no request is sent after this")
    args = parser.parse_args()
    questions = [f"What is {i} plus {i + 3}?" for i in range(args.requests)]
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.requests} requests from {args.clients} "
          f"clients, baseline {args.sequential} sequential questions; settings {json.dumps(SETTINGS)}",
          flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        folder = Path(tmp)
        config = folder / "serve.yaml"
        config.write_text(json.dumps(SETTINGS))  # JSON is YAML
        llama_port, serve_port = free_port(), free_port()
        upstream = f"http://127.0.0.1:{llama_port}/v1"
        gguf = str(embedded_gguf(DEFAULT_MODEL))
        llama = start([sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--model_alias",
                       DEFAULT_MODEL, "--host", "127.0.0.1", "--port", str(llama_port), "--n_ctx", "2048",
                       "--n_threads", "2", "--verbose", "False"],
                      f"{upstream}/models", "llama.cpp server", folder / "llama.log")
        try:
            health = f"http://127.0.0.1:{serve_port}/health"
            serve = start([sys.executable, "-m", "a2c", "serve", "--upstream", upstream, "--model",
                           DEFAULT_MODEL, "--config", str(config), "--port", str(serve_port), "--max-batch",
                           str(args.clients), "--batch-window", str(args.batch_window), "--max-pending",
                           str(args.requests), "--concurrency", "8"],
                          health, "a2c serve", folder / "serve.log")
            memory = PeakRSS(serve.pid)
            try:
                before = httpx.get(health).json()
                started = time.monotonic()
                outcomes = served_load(f"http://127.0.0.1:{serve_port}/v1", questions, args.clients,
                                       started + args.max_seconds)
                wall = time.monotonic() - started
                after = httpx.get(health).json()
                peak, peak_source = memory.peak_mb()
            finally:
                stop(serve)
            print("served load done; sequential baseline ...", flush=True)
            seq_seconds, seq_steps, seq_calls = sequential_baseline(upstream, questions[:args.sequential])
        finally:
            stop(llama)
        print("proxy overhead on the scripted model ...", flush=True)
        served_ms, wrapper_ms = proxy_overhead(folder, config, args.overhead)

    sent = [o for o in outcomes if o is not None]
    ok = [o for o in sent if o.status == 200]
    errors = len(sent) - len(ok)
    latencies = [o.seconds for o in ok]
    steps = after["steps"] - before["steps"]
    calls = after["model_calls"] - before["model_calls"]
    batches = after["batches"] - before["batches"]
    served_steps, baseline_steps = steps / max(len(ok), 1), seq_steps / max(args.sequential, 1)
    rows = [
        ("requests sent / answered / not sent (time bound)",
         f"{len(sent)} / {len(ok)} / {len(outcomes) - len(sent)}"),
        ("errors", f"{errors}  ({'OK' if errors == 0 else 'FAILED'})"),
        ("latency p50 / p95", f"{percentile(latencies, 0.5):.1f} s / {percentile(latencies, 0.95):.1f} s"
         if latencies else "-"),
        ("throughput", f"{len(ok) / wall:.3f} requests/s ({wall:.0f} s wall)"),
        ("batched passes (mean questions per pass)", f"{batches} ({len(ok) / max(batches, 1):.1f})"),
        ("served: round trips / model calls per request",
         f"{served_steps:.2f} / {calls / max(len(ok), 1):.1f}"),
        (f"sequential AskToChoose.answer x{args.sequential}: round trips / model calls per question",
         f"{baseline_steps:.2f} / {seq_calls / max(args.sequential, 1):.1f} "
         f"({seq_seconds / max(args.sequential, 1):.1f} s per question)"),
        ("round trips per question, sequential / served", f"{baseline_steps / max(served_steps, 1e-9):.1f}x"),
        ("peak RSS of a2c serve", f"{peak:.0f} MB ({peak_source})"),
        ("one request, scripted model: a2c serve / AskToChoose in process",
         f"{served_ms:.1f} ms / {wrapper_ms:.1f} ms: serving adds {served_ms - wrapper_ms:.1f} ms"),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
