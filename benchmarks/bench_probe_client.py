"""`a2c probe --questions`: a2c's own CPU per HTTP request it sends to a served model (target ≤ 0.5 ms).

Run: `.venv/bin/python benchmarks/bench_probe_client.py [--questions 40] [--target 0.5]` from the repository
root. It starts a scripted OpenAI-compatible server that answers at once (`tests/fake_openai.SlowServer`,
HTTP/1.1 keep-alive as vLLM's and llama.cpp's servers; `--close` for one that closes every connection) in
a child process, so its CPU is not counted, then runs `a2c probe --questions FILE --base-url URL` in this
process on made-up questions (request cache on, in a temporary folder; the `exact` judge, so no judge model
loads). It counts the process's CPU time (user + system) spent inside the probe's `generate` calls, where
every HTTP request is made, written to the cache and parsed, and divides it by the requests the server
received; it also says how much of it the calling thread spent (cache keys, cache writes, bookkeeping) and
how much the HTTP worker threads. Process CPU time does not grow with the wait for the server, but a loaded
machine still inflates it (cache misses, context switches): the load average is printed with it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted server lives with the tests

SERVER = """
import sys, time
from tests.fake_openai import SlowServer
server = SlowServer(lifetime=3600, keep_alive=sys.argv[1] == "keep-alive")
print(server.url, flush=True)
for line in sys.stdin:  # any line: how many requests arrived so far
    print(len(server.arrived), flush=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40, help="questions to probe (default 40)")
    parser.add_argument("--target", type=float, default=0.5, help="ms of CPU per request to reach")
    parser.add_argument("--close", action="store_true",
                        help="the server closes every connection after its answer (HTTP/1.0)")
    args = parser.parse_args()

    from a2c.cli import main as a2c_main
    from a2c.llm.base import Generation, GenerationRequest
    from a2c.llm.sampling import CachedGenerator

    server = subprocess.Popen([sys.executable, "-c", SERVER, "close" if args.close else "keep-alive"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert server.stdin is not None and server.stdout is not None

    def arrived() -> int:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n")
        server.stdin.flush()
        return int(server.stdout.readline())

    spent = {"cpu": 0.0, "wall": 0.0, "calling": 0.0}
    generate = CachedGenerator.generate

    def timed(self: CachedGenerator, requests: Sequence[GenerationRequest]) -> list[Generation]:
        cpu, wall, calling = time.process_time(), time.perf_counter(), time.thread_time()
        try:
            return generate(self, requests)
        finally:
            spent["cpu"] += time.process_time() - cpu
            spent["wall"] += time.perf_counter() - wall
            spent["calling"] += time.thread_time() - calling

    try:
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            questions = Path(tmp) / "questions.jsonl"
            questions.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Why is thing number {i} "
                                                     "the way it is, and since when?"}) + "\n"
                                         for i in range(args.questions)))
            before = arrived()
            CachedGenerator.generate = timed  # type: ignore[method-assign]  # timed for this run only
            cwd = Path.cwd()
            os.chdir(tmp)  # the request cache (.a2c-cache/) goes in the temporary folder
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    code = a2c_main(["probe", "--questions", str(questions), "--base-url", url,
                                     "--model", "scripted-server", "--judge", "exact", "--no-progress"])
            finally:
                os.chdir(cwd)
                CachedGenerator.generate = generate  # type: ignore[method-assign]
            requests = arrived() - before
    finally:
        server.kill()
    if code != 0 or not requests:
        print(f"the probe failed (exit {code}, {requests} requests)", file=sys.stderr)
        return 2
    per_request = 1000 * spent["cpu"] / requests
    kind = "closing" if args.close else "keep-alive"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.questions} questions, {requests:,} HTTP requests ({kind} server), load average {load}")
    print(f"client CPU inside generate: {spent['cpu']:.2f} s = {per_request:.3f} ms per request "
          f"(target {args.target:g} ms); wall {1000 * spent['wall'] / requests:.2f} ms per request")
    print(f"  of which the calling thread (cache keys and writes, bookkeeping): "
          f"{1000 * spent['calling'] / requests:.3f} ms; the HTTP worker threads: "
          f"{1000 * (spent['cpu'] - spent['calling']) / requests:.3f} ms")
    return 0 if per_request <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
