"""vLLM's CPU build in bfloat16 against float32 on this machine: why `dtype: auto` means float32 on a CPU
without native bfloat16 (`a2c.llm.vllm_backend.engine_dtype`).

Run: `.venv-vllm/bin/python benchmarks/bench_cpu_dtype.py [--prompts 128] [--tokens 48]` from the repository
root. Each dtype runs in a fresh child process (one engine per process, as a2c runs it): the embedded
SmolLM2-135M-Instruct, prepared for vLLM as the vllm backend prepares it, `--prompts` distinct prompts
sampled at temperature 0.7 / top-p 0.7 for exactly `--tokens` tokens each, in one `LLM.generate` call,
model load excluded. It prints generated tokens per second per dtype, the ratio float32 / bfloat16, and
whether oneDNN has bfloat16 kernels for this CPU (`a2c.system.devices.cpu_has_native_bf16`); a2c picks
float32 for `auto` exactly when it has not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

DTYPES = ("bfloat16", "float32")


def one_dtype(dtype: str, prompts: int, tokens: int) -> dict[str, float]:
    """Load the engine in `dtype` and time one generate call (run inside the child process)."""
    from vllm import LLM, SamplingParams

    from a2c.llm.vllm_backend import vllm_model_path
    from a2c.models.embedded import DEFAULT_MODEL

    llm = LLM(model=vllm_model_path(DEFAULT_MODEL), dtype=dtype, enforce_eager=True, max_model_len=1024,
              block_size=32, seed=0)
    asked = [f"Question {i}: what happens to you if you eat watermelon seeds? Answer in one sentence."
             for i in range(prompts)]
    params = SamplingParams(max_tokens=tokens, temperature=0.7, top_p=0.7, ignore_eos=True)
    started = time.perf_counter()
    out = llm.generate(asked, params, use_tqdm=False)
    seconds = time.perf_counter() - started
    generated = sum(len(o.outputs[0].token_ids) for o in out)
    return {"seconds": seconds, "generated": generated, "tokens_per_s": generated / seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=128, help="prompts in the generate call (default 128)")
    parser.add_argument("--tokens", type=int, default=48, help="tokens generated per prompt (default 48)")
    parser.add_argument("--child", choices=DTYPES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(one_dtype(args.child, args.prompts, args.tokens)))
        return 0
    from a2c.system.devices import cpu_has_native_bf16

    cores = sorted(os.sched_getaffinity(0))  # every core this process may use, as the vllm backend does
    os.environ.update({"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cores)),
                       "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "OMP_NUM_THREADS": str(len(cores))})
    rates = {}
    for dtype in DTYPES:
        child = subprocess.run([sys.executable, __file__, "--child", dtype, "--prompts", str(args.prompts),
                                "--tokens", str(args.tokens)], capture_output=True, text=True, check=False)
        line = next((x for x in child.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(child.stderr[-2000:], file=sys.stderr)
            return 1
        found = json.loads(line.removeprefix("RESULT "))
        rates[dtype] = found["tokens_per_s"]
        print(f"{dtype:>9}: {found['generated']} tokens in {found['seconds']:.1f} s = "
              f"{found['tokens_per_s']:.0f} tokens/s")
    print(f"float32 / bfloat16: {rates['float32'] / rates['bfloat16']:.2f}x; this CPU has native bfloat16: "
          f"{cpu_has_native_bf16()} (a2c's `auto`: {'bfloat16' if cpu_has_native_bf16() else 'float32'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
