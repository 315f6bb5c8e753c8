"""a2c's pipeline against the engine alone: what orchestration costs over the model calls it makes.

Run: `.venv-vllm/bin/python benchmarks/bench_engine_ratio.py [--config experiments/truthfulqa-a2c.yaml]
[--limit 64]` from the repository root (a config on the in-process vllm backend). It runs the config's first
`--limit` questions into a temporary run folder with a fresh request cache, recording every request the
stages hand the engine (prompt, sampling settings, max tokens); then it empties the engine's prefix cache and
replays exactly those requests through the same engine in one `LLM.generate` call. Both halves run back to
back in one process on one loaded engine, so they see the same machine. It prints the pipeline's seconds
(model load excluded), the time its stages spent inside the engine, the replay's seconds, prompt and
generated tokens per second for each, and the ratio pipeline / replay (target 1.05). The replay is a lower
bound no staged pipeline can reach exactly: stage k+1's prompts need stage k's answers, so the engine's
batches in the pipeline are smaller. Per prompt template (told apart by its system text) it prints the
requests, prompt tokens per request, the tokens the engine computed (prompt tokens not read from its prefix
cache) per request, and generated tokens: the figures fewer computed tokens are measured by. `--json FILE`
also writes the numbers, `--requests FILE` every recorded request (JSON lines) for offline analysis.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class Half:
    seconds: float
    prompt_tokens: int
    generated_tokens: int
    cached_prompt_tokens: int  # prompt tokens the engine read from its prefix cache

    def rates(self) -> str:
        return (f"{self.prompt_tokens / self.seconds:,.0f} prompt tok/s "
                f"({self.cached_prompt_tokens / max(self.prompt_tokens, 1):.0%} from the prefix cache), "
                f"{self.generated_tokens / self.seconds:,.1f} generated tok/s")


def _tokens(outputs: list[Any]) -> tuple[int, int, int]:
    prompt = sum(len(out.prompt_token_ids or ()) for out in outputs)
    generated = sum(len(sample.token_ids) for out in outputs for sample in out.outputs)
    return prompt, generated, sum(out.num_cached_tokens or 0 for out in outputs)


def _template_of(prompt: Any, systems: dict[str, str]) -> str:
    """The shipped template whose system text the prompt holds (prompts are rendered chat text)."""
    text = prompt if isinstance(prompt, str) else ""
    return next((name for name, system in systems.items() if system in text), "other")


def _per_template(outputs: list[Any], systems: dict[str, str]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for out in outputs:
        row = table.setdefault(_template_of(out.prompt, systems),
                               {"requests": 0, "prompt": 0, "computed": 0, "generated": 0})
        prompt, generated, cached = _tokens([out])
        row["requests"] += 1
        row["prompt"] += prompt
        row["computed"] += prompt - cached
        row["generated"] += generated
    return table


def _print_table(title: str, table: dict[str, dict[str, int]]) -> None:
    print(f"{title}: template, requests, prompt tok/request, computed prompt tok/request, "
          "prompt tokens, computed, generated")
    total = {key: sum(row[key] for row in table.values()) for key in ("requests", "prompt", "computed",
                                                                      "generated")}
    for name, row in [*table.items(), ("all", total)]:
        n = max(row["requests"], 1)
        print(f"  {name:12} {row['requests']:6,} {row['prompt'] / n:7.1f} {row['computed'] / n:7.1f} "
              f"{row['prompt']:10,} {row['computed']:9,} {row['generated']:8,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/truthfulqa-a2c.yaml"))
    parser.add_argument("--dataset-path", type=Path, help="a local TruthfulQA.csv (default: the config's)")
    parser.add_argument("--limit", type=int, default=64, help="questions to run (default 64)")
    parser.add_argument("--target", type=float, default=1.05, help="ratio to reach (default 1.05)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    parser.add_argument("--requests", type=Path, help="also write every recorded request (JSON lines)")
    parser.add_argument("--no-replay", action="store_true",
                        help="run the pipeline half only (its token figures; no ratio): half the time")
    args = parser.parse_args()

    import vllm

    from a2c.cli.run import apply_overrides
    from a2c.llm import build_generator
    from a2c.prompting.prompts import load_template
    from a2c.run.config_file import load_config
    from a2c.run.pipeline import run_experiment

    config = apply_overrides(load_config(args.config), limit=None, no_cache=False,
                             dataset_path=args.dataset_path)
    if config.generator.backend != "vllm":
        parser.error(f"{args.config}: generator.backend is {config.generator.backend!r}; the ratio is "
                     "measured against the in-process vllm engine")
    recorded: list[tuple[list[Any], list[Any]]] = []
    pipeline_outputs: list[Any] = []
    inside = {"seconds": 0.0, "prompt": 0, "generated": 0, "cached": 0}
    generate = vllm.LLM.generate

    def recording(self: Any, prompts: Any, params: Any = None, **kwargs: Any) -> Any:
        started = time.perf_counter()
        outputs = generate(self, prompts, params, **kwargs)
        inside["seconds"] += time.perf_counter() - started
        prompt, generated, cached = _tokens(outputs)
        inside["prompt"] += prompt
        inside["generated"] += generated
        inside["cached"] += cached
        recorded.append((list(prompts), list(params)))
        pipeline_outputs.extend(outputs)
        return outputs

    with tempfile.TemporaryDirectory() as tmp:
        generator = config.generator.model_copy(update={"cache": Path(tmp) / "cache.sqlite"})
        config = config.model_copy(update={"limit": args.limit, "generator": generator,
                                           "output": str(Path(tmp) / "run")})
        started = time.perf_counter()
        backend = build_generator(config.generator)  # the engine is loaded once, outside both halves
        load = time.perf_counter() - started
        llm = backend.impl.llm
        vllm.LLM.generate = recording
        try:
            result = run_experiment(config, progress=False)
        finally:
            vllm.LLM.generate = generate
        pipeline = Half(result.seconds, *(int(inside[name]) for name in ("prompt", "generated", "cached")))

        prompts = [p for batch, _ in recorded for p in batch]
        params = [p for _, batch in recorded for p in batch]
        outputs: list[Any] = []
        replay = None
        if not args.no_replay:
            llm.reset_prefix_cache()  # the replay must not reuse what the pipeline left in the cache
            started = time.perf_counter()
            outputs = llm.generate(prompts, params, use_tqdm=False)
            replay = Half(time.perf_counter() - started, *_tokens(outputs))

    systems = {name: (load_template(name).system or "").strip().splitlines()[0]
               for name in ("paraphrase", "long_answer", "answer", "rank", "usc", "same_answer")}
    in_pipeline, in_replay = _per_template(pipeline_outputs, systems), _per_template(outputs, systems)
    print(f"config {args.config}, {args.limit} questions, model load {load:.0f} s, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"requests: {len(prompts):,} in {len(recorded)} generate calls "
          f"({sum(p.n for p in params):,} samples)")
    print(f"pipeline: {pipeline.seconds:,.1f} s ({inside['seconds']:,.1f} s inside the engine); "
          f"{pipeline.rates()}")
    ratio = None if replay is None else pipeline.seconds / replay.seconds
    if replay is not None and ratio is not None:
        print(f"engine replay, one call: {replay.seconds:,.1f} s; {replay.rates()}")
        print(f"ratio pipeline / engine: {ratio:.3f} (target {args.target:.2f})")
    stages = {name: round(s.seconds, 1) for name, s in result.stages.items() if not s.skipped}
    print("per stage: " + ", ".join(f"{name} {seconds:,.1f} s" for name, seconds in stages.items()))
    _print_table("pipeline per template", in_pipeline)
    if replay is not None:
        _print_table("replay per template", in_replay)
    if args.requests:
        with args.requests.open("w") as out:
            for prompt, param, done in zip(prompts, params, pipeline_outputs, strict=True):
                out.write(json.dumps({"prompt": prompt, "n": param.n, "temperature": param.temperature,
                                      "max_tokens": param.max_tokens,
                                      "prompt_tokens": len(done.prompt_token_ids or ()),
                                      "cached_tokens": done.num_cached_tokens or 0,
                                      "generated": [sample.text for sample in done.outputs]}) + "\n")
    if args.json:
        args.json.write_text(json.dumps({
            "config": str(args.config), "limit": args.limit, "load_seconds": load, "ratio": ratio,
            "requests": len(prompts), "generate_calls": len(recorded),
            "pipeline": asdict(pipeline), "pipeline_inside_engine_seconds": inside["seconds"],
            "replay": None if replay is None else asdict(replay), "stage_seconds": stages,
            "pipeline_per_template": in_pipeline, "replay_per_template": in_replay,
            "loadavg": os.getloadavg()}, indent=2) + "\n")
    return 0 if ratio is None or ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
