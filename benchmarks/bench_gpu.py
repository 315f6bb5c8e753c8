"""The paper-protocol slice and the batched sampler on one GPU: model load, stage time, tokens/s, GPU use.

Run from the repository root (PYTHONPATH=.): `python3 benchmarks/bench_gpu.py --csv PATH/TruthfulQA.csv
--json gpu.json`. Defaults are the GPU sizes; on a CPU try `--device cpu --limit 2 --batch-size 32
--sampler-prompts 16 --sampler-tokens 8`.

1. Model load of the transformers backend, each in a fresh process with `--workdir` as the models cache
   (default: a new temporary folder, so it holds no converted copy yet): first the GGUF is converted to the
   float32 safetensors folder (`a2c.models.convert`), then the same load again reads that folder. Goal: ≤ 5 s
   from the converted folder. Imports, the modules transformers imports on first use and the CUDA context
   are timed apart (every transformers model pays them once per process).
2. The first `--limit` (64) TruthfulQA questions under `experiments/truthfulqa-a2c.yaml` on the transformers
   backend (batch 256) with the judges that need neither spaCy nor MiniLM (rouge1, exact; accuracy by rouge1
   and, where sacrebleu is installed, bleu), a fresh request cache: seconds per stage and in all after the
   model is loaded (goal ≤ 30 s), generated tokens per second, GPU utilisation and memory (NVML, else
   `nvidia-smi`, sampled every 0.1 s), and each forward batch (rows, prompt length, steps, seconds).
   `--decode generate` runs the same on transformers' `generate` instead of the CUDA-graph loop.
3. Sampler: `--sampler-prompts` (256) TruthfulQA long-answer prompts × `--sampler-tokens` (64) new tokens,
   greedy against sampled (temperature 0.7, top-p 0.7), best of `--repeats`; prints sampled / greedy in wall
   time and per generated token (goal ≤ 1.3x).
`--json FILE` writes every number.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from a2c.models.convert import prepared_dir
from a2c.models.embedded import DEFAULT_MODEL
from a2c.system.devices import resolve_device

ROOT = Path(__file__).resolve().parents[1]
LOAD_RESULT = "LOAD_RESULT "


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def load_once(device: str) -> dict[str, Any]:
    """Child mode: import, then build the backend (conversion when the models cache lacks the folder)."""
    started = time.perf_counter()
    import torch  # (imports timed apart from the load)
    import transformers

    from a2c.llm.transformers_backend import TransformersBackend

    imported = time.perf_counter()
    # the modules `from_pretrained` imports on first use (transformers imports lazily): any model pays
    # them once per process, so they are timed apart from this model's load
    import transformers.generation.utils
    import transformers.modeling_utils
    import transformers.models.llama.modeling_llama  # noqa: F401

    lazy = time.perf_counter()
    if device.startswith("cuda"):  # the CUDA context: every process that touches the GPU pays it once
        torch.zeros(1, device=device)
        synchronize(device)
    ready = time.perf_counter()
    parts: dict[str, float] = {}
    with timed_calls(parts):
        backend = TransformersBackend(DEFAULT_MODEL, device=device)
        synchronize(device)
    return {"import_s": imported - started, "lazy_import_s": lazy - imported, "cuda_init_s": ready - lazy,
            "load_s": time.perf_counter() - ready, "load_parts_s": parts, "dtype": backend.dtype_name}


@contextmanager
def timed_calls(parts: dict[str, float]) -> Iterator[None]:
    """Seconds of each `from_pretrained` the load makes (config, tokenizer, weights), keyed by loader."""
    import a2c.llm.transformers_backend as backend_module
    import a2c.system.hub

    original = a2c.system.hub.from_pretrained

    def timed(loader: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(loader, *args, **kwargs)
        finally:
            parts[loader.__name__] = parts.get(loader.__name__, 0.0) + time.perf_counter() - started

    setattr(backend_module, "from_pretrained", timed)  # noqa: B010 (the module's own import of it)
    try:
        yield
    finally:
        setattr(backend_module, "from_pretrained", original)  # noqa: B010


@contextmanager
def recorded_batches(calls: list[dict[str, Any]], device: str) -> Iterator[None]:
    """One record per forward batch of the transformers backend: rows, padded prompt length, longest
    reply, seconds, and which decoding loop ran it."""
    from a2c.llm.transformers_backend import TransformersBackend

    original = TransformersBackend._generate

    def timed(self: Any, prompts: list[list[int]], jobs: list[Any], max_tokens: int, *rest: Any) -> Any:
        synchronize(device)
        started = time.perf_counter()
        out = original(self, prompts, jobs, max_tokens, *rest)
        synchronize(device)
        calls.append({"rows": len(prompts), "prompt": max(map(len, prompts)), "max_tokens": max_tokens,
                      "longest": max(r.completion.completion_tokens for r in out),
                      "seconds": time.perf_counter() - started, "static": self.static and rest[1] is None})
        return out

    setattr(TransformersBackend, "_generate", timed)  # noqa: B010
    try:
        yield
    finally:
        setattr(TransformersBackend, "_generate", original)  # noqa: B010


def timed_loads(device: str, workdir: Path) -> dict[str, Any]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    out: dict[str, Any] = {"converted_before": (prepared_dir(DEFAULT_MODEL) / "config.json").is_file()}
    for label in ("first_load", "cached_load"):
        command = [sys.executable, str(Path(__file__).resolve()), "--load-only", "--device", device]
        child = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, check=False)
        line = next((x for x in child.stdout.splitlines() if x.startswith(LOAD_RESULT)), None)
        if line is None:
            raise SystemExit(f"{label} failed:\n{child.stdout[-2000:]}\n{child.stderr[-3000:]}")
        out[label] = json.loads(line.removeprefix(LOAD_RESULT))
    return out


class GpuMonitor:
    """Samples GPU utilisation (%) and memory used (MiB) in a thread: NVML, else `nvidia-smi`."""

    def __init__(self, index: int, every: float = 0.1) -> None:
        self.index, self.every = index, every
        self.samples: list[tuple[float, float]] = []
        self.source = "none"
        self._stop = threading.Event()
        self._read = self._reader()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _reader(self) -> Callable[[], tuple[float, float]] | None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.source = "nvml"

            def nvml() -> tuple[float, float]:
                util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                return float(util), pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20

            return nvml
        except Exception:  # no pynvml, no driver: try the command line tool
            pass
        query = ["nvidia-smi", f"--id={self.index}", "--query-gpu=utilization.gpu,memory.used",
                 "--format=csv,noheader,nounits"]
        try:
            subprocess.run(query, capture_output=True, check=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        self.source = "nvidia-smi"

        def smi() -> tuple[float, float]:
            util, used = subprocess.run(query, capture_output=True, text=True, check=True,
                                        timeout=10).stdout.split(",")
            return float(util), float(used)

        return smi

    def _loop(self) -> None:
        while not self._stop.is_set() and self._read is not None:
            self.samples.append(self._read())
            self._stop.wait(self.every)

    @contextmanager
    def watching(self) -> Iterator[None]:
        self._thread.start()
        try:
            yield
        finally:
            self._stop.set()
            self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"source": self.source, "samples": 0}
        util = [u for u, _ in self.samples]
        memory = [m for _, m in self.samples]
        return {"source": self.source, "samples": len(self.samples), "util_mean_pct": sum(util) / len(util),
                "util_peak_pct": max(util), "memory_mean_mib": sum(memory) / len(memory),
                "memory_peak_mib": max(memory)}


def gpu_index(device: str) -> int:
    import torch

    return int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()


def similarities() -> list[str]:
    """rouge1 and bleu; bleu needs sacrebleu, which a bare GPU machine may lack (said, not hidden)."""
    if importlib.util.find_spec("sacrebleu") is None:
        print("sacrebleu is not installed: accuracy by rouge1 only (no bleu)")
        return ["rouge1"]
    return ["rouge1", "bleu"]


def slice_config(args: argparse.Namespace, device: str, tmp: Path) -> Any:
    """The paper-protocol config with the transformers backend, offline judges and the given sizes; every
    path absolute, so the run does not depend on the working folder."""
    from a2c.run.config_file import parse_config
    from a2c.run.tasks import task_of

    data = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    data["dataset"]["path"] = str(args.csv.resolve())
    data["generator"] = {"backend": "transformers", "model": data["generator"].get("model", DEFAULT_MODEL),
                         "batch_size": args.batch_size, "device": device, "cache": str(tmp / "cache.sqlite"),
                         "decode": args.decode}
    data["judges"] = [{"name": "rouge1"}, {"name": "exact"}]
    data["accuracy"] = {**data.get("accuracy", {}), "similarities": similarities()}
    data["limit"] = args.limit
    data["output"] = str(tmp / "run")
    config = parse_config(yaml.safe_dump(data), f"{args.config} (bench_gpu)")
    task_of(config).check_data(config)
    return config


def run_slice(args: argparse.Namespace, device: str) -> dict[str, Any]:
    from a2c.llm import build_generator
    from a2c.run.pipeline import run_experiment

    with tempfile.TemporaryDirectory() as tmp:
        config = slice_config(args, device, Path(tmp))
        started = time.perf_counter()
        generator = build_generator(config.generator)  # loaded once, outside the stage time
        synchronize(device)
        load = time.perf_counter() - started
        monitor = GpuMonitor(gpu_index(device)) if device.startswith("cuda") else None
        calls: list[dict[str, Any]] = []
        with recorded_batches(calls, device):
            if monitor is not None:
                with monitor.watching():
                    result = run_experiment(config, progress=False)
            else:
                result = run_experiment(config, progress=False)
    print(result.summary_table())
    totals = result.totals()
    return {"questions": args.limit, "batch_size": args.batch_size, "dtype": generator.impl.dtype_name,
            "similarities": [s.name for s in config.accuracy.similarities],
            "in_process_load_s": load, "stage_seconds": {n: s.seconds for n, s in result.stages.items()},
            "stage_total_s": result.seconds, "generated": totals.generated,
            "completion_tokens": totals.completion_tokens, "prompt_tokens": totals.prompt_tokens,
            "generated_tokens_per_s": totals.completion_tokens / result.seconds,
            "decode": args.decode, "batches": len(calls), "batch_seconds": sum(c["seconds"] for c in calls),
            "decode_steps": sum(c["longest"] for c in calls), "batch_records": calls,
            "gpu": monitor.summary() if monitor is not None else None}


def sampler_prompts(csv_path: Path, count: int, max_tokens: int, temperature: float, top_p: float
                    ) -> list[Any]:
    from a2c.llm import GenerationRequest
    from a2c.prompting.prompts import load_template

    with csv_path.open(newline="", encoding="utf-8") as f:
        questions = [row["Question"] for row in csv.DictReader(f)]
    template = load_template("long_answer")
    return [GenerationRequest(messages=template.messages(question=questions[i % len(questions)]),
                              temperature=temperature, top_p=top_p, seed=i, max_tokens=max_tokens)
            for i in range(count)]


def run_sampler(args: argparse.Namespace, device: str) -> dict[str, Any]:
    from a2c.llm import CachedGenerator
    from a2c.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(DEFAULT_MODEL, batch_size=args.sampler_prompts, device=device,
                                  decode=args.decode)
    generator = CachedGenerator(backend)
    modes = {"greedy": (0.0, 1.0), "sampled": (0.7, 0.7)}
    generator.generate(sampler_prompts(args.csv, 4, 4, 0.7, 0.7))  # warm-up: kernels, allocator
    out: dict[str, Any] = {"prompts": args.sampler_prompts, "max_new_tokens": args.sampler_tokens,
                           "dtype": backend.dtype_name, "decode": args.decode}
    for mode, (temperature, top_p) in modes.items():
        requests = sampler_prompts(args.csv, args.sampler_prompts, args.sampler_tokens, temperature, top_p)
        best = float("inf")
        for _ in range(args.repeats):
            synchronize(device)
            started = time.perf_counter()
            answers = generator.generate(requests)
            synchronize(device)
            best = min(best, time.perf_counter() - started)
        tokens = sum(c.completion_tokens for g in answers for c in g.completions)
        out[mode] = {"seconds": best, "tokens": tokens, "s_per_token": best / tokens}
    out["ratio_wall"] = out["sampled"]["seconds"] / out["greedy"]["seconds"]
    out["ratio_per_token"] = out["sampled"]["s_per_token"] / out["greedy"]["s_per_token"]
    print(f"sampler: greedy {out['greedy']['seconds']:.2f} s ({out['greedy']['tokens']} tokens), sampled "
          f"{out['sampled']['seconds']:.2f} s ({out['sampled']['tokens']} tokens): sampled / greedy "
          f"{out['ratio_wall']:.2f}x wall, {out['ratio_per_token']:.2f}x per token (goal <= 1.3x)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=Path(".gpudata/TruthfulQA.csv"), help="TruthfulQA.csv")
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "truthfulqa-a2c.yaml")
    parser.add_argument("--device", default="auto", help="auto (the first GPU, else cpu), cpu, cuda, cuda:N")
    parser.add_argument("--limit", type=int, default=64, help="questions of the slice (default 64)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--decode", default="auto", choices=["auto", "generate", "static"],
                        help="the transformers backend's decoding loop (auto: static + CUDA graphs on a GPU)")
    parser.add_argument("--sampler-prompts", type=int, default=256)
    parser.add_argument("--sampler-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="sampler timings: best of this many")
    parser.add_argument("--workdir", type=Path, help="the models cache (A2C_MODELS_CACHE) for the run "
                        "(default: a new temporary folder, so the first load converts)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["load", "slice", "sampler"])
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    device = resolve_device(args.device)
    if args.load_only:
        print(LOAD_RESULT + json.dumps(load_once(device)), flush=True)
        return 0

    import torch

    results: dict[str, Any] = {"device": device, "torch": torch.__version__,
                               "card": torch.cuda.get_device_name(device) if device.startswith("cuda") else
                               "cpu", "cpu_threads": torch.get_num_threads()}
    args.csv, args.config = args.csv.resolve(), args.config.resolve()
    args.json = args.json.resolve() if args.json else None
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="a2c-bench-gpu-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["A2C_MODELS_CACHE"] = str(workdir)  # where the backend finds and writes the converted folder
    os.chdir(workdir)
    if "load" not in args.skip:
        results["load"] = timed_loads(device, workdir)
        first, cached = results["load"]["first_load"], results["load"]["cached_load"]
        print(f"model load: first {first['load_s']:.1f} s (converting unless {workdir}/models had it: "
              f"{results['load']['converted_before']}), from the converted folder {cached['load_s']:.1f} s "
              f"(goal <= 5 s; {cached['load_parts_s']}; imports {cached['import_s']:.1f} s, transformers' "
              f"lazy imports {cached['lazy_import_s']:.1f} s and the CUDA context "
              f"{cached['cuda_init_s']:.1f} s apart) in {cached['dtype']}")
    if "slice" not in args.skip:
        results["slice"] = s = run_slice(args, device)
        gpu = s["gpu"] or {}
        print(f"slice: {s['questions']} questions, stages {s['stage_total_s']:.1f} s after a "
              f"{s['in_process_load_s']:.1f} s load (goal <= 30 s), "
              f"{s['generated_tokens_per_s']:.0f} generated tokens/s, {s['batches']} batches "
              f"({s['decode_steps']} decoding steps) in {s['batch_seconds']:.1f} s, decode {s['decode']}; "
              f"GPU ({gpu.get('source', 'none')}): "
              f"mean {gpu.get('util_mean_pct', 0):.0f}% busy, peak {gpu.get('memory_peak_mib', 0):.0f} MiB")
    if "sampler" not in args.skip:
        results["sampler"] = run_sampler(args, device)
    print(f"{results['card']} ({device}), torch {results['torch']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
