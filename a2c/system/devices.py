"""Which device a model runs on: one `device:` option (`auto | cpu | cuda | cuda:N | mps`) for every model.

A config names a device; `check_device` refuses a bad name or one this machine does not have when the
config loads (before any model does), and `resolve_device` turns the name into what torch is given.
`auto` is the first GPU where torch sees one and the CPU elsewhere; it never picks `mps`, which has no
float64 (a2c's exact top-p sums masses in float64) and is asked for by name. torch is imported only when
a name needs it, so `a2c --help` and the openai backend stay free of it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

DEVICE_NAMES = "auto, cpu, cuda, cuda:N, mps"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(?::(?P<index>0|[1-9][0-9]*))?")


def _gpus() -> int:
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _has_mps() -> bool:
    import torch

    return bool(torch.backends.mps.is_available())


def device_problem(spec: str) -> str | None:
    """Why `spec` cannot be used on this machine (one line), or None when it can."""
    match = _DEVICE.fullmatch(spec)
    if match is None:
        return f"unknown device {spec!r}; one of {DEVICE_NAMES}"
    if spec == "mps" and not _has_mps():
        return "mps requested but torch sees no Apple GPU (MPS)"
    if spec.startswith("cuda"):
        gpus = _gpus()
        if gpus == 0:
            return f"{spec} requested but torch sees no GPU"
        index = match.group("index")
        if index is not None and int(index) >= gpus:
            have = "cuda:0" if gpus == 1 else f"cuda:0 to cuda:{gpus - 1}"
            return f"{spec} requested but torch sees {gpus} GPU{'s' if gpus > 1 else ''} ({have})"
    return None


def check_device(spec: str) -> str:
    """`spec` itself when this machine has it; a validation error naming what is wrong otherwise (without
    pydantic's "Value error, " prefix, so the config line reads `generator.device: cuda requested ...`)."""
    problem = device_problem(spec)
    if problem is not None:
        raise PydanticCustomError("device", problem)
    return spec


# a config field: checked when the config loads
Device = Annotated[str, AfterValidator(check_device)]


def resolve_device(spec: str) -> str:
    """What torch is given for a checked `spec`: `auto` becomes `cuda:0` or `cpu`, the rest stays."""
    if spec != "auto":
        return spec
    return "cuda:0" if _gpus() else "cpu"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (oneDNN's bf16 kernels: AVX512-BF16 or AMX). Without
    them torch's bf16 matmul is a scalar fallback: vLLM's CPU build generated 41 tokens/s in bfloat16 and 150
    in float32 on a 2-core AVX2 EPYC (`benchmarks/bench_cpu_dtype.py`)."""
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def device_type(device: str) -> str:
    """`cuda` for `cuda:1`: what a draw depends on (the kind of device, not which one of a kind)."""
    return device.split(":", 1)[0]


def free_cores(*, cores: int | None = None, load: float | None = None) -> int:
    """Threads a CPU inference server (llama.cpp's `--n_threads`) should use: the cores this process may
    run on less those the machine's other work keeps busy (the 1-minute load average), at least 1.

    Threads that spin at each barrier (llama.cpp's, OpenMP's) wait for any of them that another process has
    descheduled: on a busy 2-core machine llama.cpp with 2 threads fell to 0.2 tokens/s where 1 thread kept
    its speed, so a shared machine gets 1 thread and an idle one all its cores.
    """
    import os

    cores = len(os.sched_getaffinity(0)) if cores is None else cores
    load = os.getloadavg()[0] if load is None else load
    return max(1, min(cores, cores - round(load)))
