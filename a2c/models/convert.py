"""One-off conversion of a GGUF model to a safetensors folder, the format vLLM loads.

transformers dequantizes GGUF weights to float32 on load, but its config keeps a `quantization_config`
that would make vLLM look for GGUF kernels; we rebuild the model from a config without it, copy the
dequantized weights in and save a plain float32 folder with its tokenizer (float32 holds the dequantized
values exactly; a backend casts them to the dtype it runs in). The folder is written under a temporary
name and renamed into place, so a reader (the transformers backend converts on first use) never finds a
half-written one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from a2c.common.errors import A2CError
from a2c.models.embedded import resolve_model
from a2c.models.split_gguf import models_cache


def prepared_dir(model: str, models_dir: Path | None = None) -> Path:
    """Where `a2c models prepare MODEL` writes, and the vllm and transformers backends look for, the
    converted folder: `prepared/` of the models cache (`a2c.models.split_gguf.models_cache`), one per machine
    and user whatever the working folder, so a model is converted once per machine."""
    return (models_dir or models_cache() / "prepared") / Path(model).name.removesuffix(".gguf")


def convert_gguf(model: str, output: Path, *, report: Callable[[str], None] = print) -> Path:
    """Write `model` (an embedded name or a .gguf path) as a safetensors folder; returns the folder."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = resolve_model(model)
    if source.gguf_file is None:
        raise A2CError(f"{model!r} is not a GGUF model; vLLM can load a transformers folder directly")
    steps = ["reading and dequantizing the GGUF weights", "rebuilding the model without quantization",
             "writing safetensors weights", "writing the tokenizer"]
    step = iter(range(1, len(steps) + 1))

    def say(text: str) -> None:
        report(f"[{next(step)}/{len(steps)}] {text}")

    say(steps[0])
    loaded = AutoModelForCausalLM.from_pretrained(source.location, gguf_file=source.gguf_file,
                                                  dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)
    say(steps[1])
    config = AutoConfig.from_pretrained(source.location, gguf_file=source.gguf_file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    real_missing = [k for k in missing if k not in set(getattr(plain, "_tied_weights_keys", None) or [])]
    if real_missing or unexpected:
        raise A2CError(f"conversion of {model!r} lost weights: missing {real_missing[:5]}, "
                       f"unexpected {unexpected[:5]}")
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.parent / f".{output.name}.partial-{os.getpid()}"
    try:
        say(f"{steps[2]} to {output}")
        plain.save_pretrained(partial, safe_serialization=True)
        say(steps[3])
        tokenizer.save_pretrained(partial)
        _move_into_place(partial, output)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    report(f"wrote {output.resolve()}")
    return output


def _move_into_place(partial: Path, output: Path) -> None:
    """Rename the finished folder to `output`, replacing an earlier conversion there (a folder holding
    anything else is refused, never deleted)."""
    if output.exists() and any(output.iterdir()):
        if not (output / "config.json").is_file():
            raise A2CError(f"{output} is not empty and holds no converted model; choose another --output")
        old = output.parent / f".{output.name}.old-{os.getpid()}"
        output.rename(old)
        shutil.rmtree(old)
    elif output.exists():
        output.rmdir()
    try:
        partial.rename(output)
    except OSError:
        if not (output / "config.json").is_file():  # not another process's finished conversion
            raise
