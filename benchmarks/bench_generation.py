"""Generation speed on the embedded SmolLM2-135M: batching, vLLM vs transformers, warm request cache.

Run from the repository root: `.venv/bin/python benchmarks/bench_generation.py` (`--help` for sizes);
add `--vllm-python .venv-vllm/bin/python` to also time vLLM (it runs this script in that interpreter).

Workload: the first 64 TruthfulQA questions × 4 temperatures (0, 0.5, 1.0, 1.5; top-p 0.95), each as
the long-answer chat prompt of `a2c.variation.answer`, 32 new tokens at most — 256 generations.

1. transformers, batched (batch size 32) vs one request at a time. The one-at-a-time baseline is timed on
   a subsample (`--sequential`) and compared as prompts/s. Target: ≥ 3×.
2. vLLM CPU (in-process, prefix caching) vs transformers batched: generated tokens/s on the same requests.
3. Warm request cache: the batched run wrote every sample to a fresh cache; the same call again must be
   served entirely from it. Target: warm time < 2% of the cold run.
Timings are wall-clock on a shared machine; the script prints the load average next to them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from a2c.llm import CachedGenerator, GenerationRequest, GeneratorConfig
from a2c.prompting.prompts import load_template
from a2c.qa.variation import temperature_tasks
from a2c.system.cache import Cache

TEMPERATURES = (0.0, 0.5, 1.0, 1.5)


def workload(csv_path: Path, questions: int, max_tokens: int) -> list[GenerationRequest]:
    with csv_path.open(newline="", encoding="utf-8") as f:
        texts = [row["Question"] for row in csv.DictReader(f)][:questions]
    template = load_template("long_answer")
    return [GenerationRequest(messages=template.messages(question=t.question), temperature=t.temperature,
                              top_p=t.top_p, seed=t.seed, max_tokens=max_tokens)
            for t in temperature_tasks(texts, TEMPERATURES, top_p=0.95, samples=1, seed=0)]


def timed(gen: CachedGenerator, requests: list[GenerationRequest]) -> tuple[float, int]:
    """Seconds and generated tokens for one generate call."""
    start = time.perf_counter()
    out = gen.generate(requests)
    return time.perf_counter() - start, sum(c.completion_tokens for g in out for c in g.completions)


def run_vllm(requests: list[GenerationRequest], batch_size: int) -> dict[str, float]:
    from a2c.llm.vllm_backend import VLLMBackend
    from a2c.models.convert import convert_gguf

    with tempfile.TemporaryDirectory() as tmp:
        folder = convert_gguf("SmolLM2-135M-Instruct", Path(tmp) / "smol", report=lambda _: None)
        backend = VLLMBackend(GeneratorConfig(backend="vllm", model=str(folder), cache=None,
                                              batch_size=batch_size, max_model_len=1024))
        gen = CachedGenerator(backend)
        timed(gen, requests[:8])  # engine warm-up (first forward passes compile/allocate)
        seconds, tokens = timed(gen, requests)
    return {"seconds": seconds, "tokens": tokens}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=Path("../shared/data/truthfulqa/TruthfulQA.csv"))
    parser.add_argument("--questions", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequential", type=int, default=32, help="requests timed one at a time")
    parser.add_argument("--vllm-python", help="interpreter with the vllm extra installed")
    parser.add_argument("--only-vllm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    requests = workload(args.csv, args.questions, args.max_tokens)

    if args.only_vllm:  # child mode: print vLLM numbers as JSON for the parent
        print("VLLM_RESULT " + json.dumps(run_vllm(requests, max(args.batch_size, 256))), flush=True)
        os._exit(0)  # vLLM's CPU engine can hang in its exit handlers; the numbers are already out

    from a2c.llm.transformers_backend import TransformersBackend

    print(f"workload: {len(requests)} requests ({args.questions} questions × {len(TEMPERATURES)} "
          f"temperatures), ≤ {args.max_tokens} new tokens; load average {os.getloadavg()[0]:.1f}")
    backend = TransformersBackend("SmolLM2-135M-Instruct", batch_size=args.batch_size)
    timed(CachedGenerator(backend), requests[:2])  # warm-up

    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedGenerator(backend, Cache(Path(tmp) / "bench.sqlite"))
        cold_s, cold_tokens = timed(cached, requests)
        warm_s, _ = timed(cached, requests)
        assert cached.stats.generated == len(requests) and cached.stats.cached == len(requests)

    one = TransformersBackend("SmolLM2-135M-Instruct", batch_size=1)
    sample = requests[:: max(1, len(requests) // args.sequential)][: args.sequential]
    start = time.perf_counter()
    for request in sample:
        CachedGenerator(one).generate([request])
    seq_s = time.perf_counter() - start

    batched_rate, seq_rate = len(requests) / cold_s, len(sample) / seq_s
    tf_tps = cold_tokens / cold_s
    print(f"transformers batched (batch {args.batch_size}): {cold_s:7.1f} s  {batched_rate:5.2f} prompts/s  "
          f"{tf_tps:6.1f} tokens/s")
    print(f"transformers one at a time ({len(sample)} timed): {seq_s:7.1f} s  {seq_rate:5.2f} prompts/s")
    print(f"  batching speed-up: {batched_rate / seq_rate:.2f}x (target >= 3x)")
    print(f"warm-cache rerun: {warm_s * 1000:.1f} ms = {100 * warm_s / cold_s:.3f}% of the cold run "
          f"(target < 2%)")
    ok = batched_rate / seq_rate >= 3 and warm_s / cold_s < 0.02

    if args.vllm_python:
        child = subprocess.run([args.vllm_python, __file__, "--only-vllm", "--csv", str(args.csv),
                                "--questions", str(args.questions), "--max-tokens", str(args.max_tokens)],
                               capture_output=True, text=True, check=False)
        line = next((x for x in child.stdout.splitlines() if x.startswith("VLLM_RESULT ")), None)
        if line is None:
            print("vLLM run failed:\n" + child.stderr[-2000:])
            return 1
        result = json.loads(line.removeprefix("VLLM_RESULT "))
        v_tps = result["tokens"] / result["seconds"]
        print(f"vLLM CPU (prefix caching): {result['seconds']:7.1f} s  "
              f"{len(requests) / result['seconds']:5.2f} prompts/s  {v_tps:6.1f} tokens/s")
        print(f"  vLLM / transformers tokens/s: {v_tps / tf_tps:.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
