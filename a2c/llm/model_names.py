"""Whether an in-process generator's `model:` names a model a2c can load, decided before a run starts.

Loading is the slow way to find a misspelt name: the first stage has begun, a progress bar is up, the run
folder exists, and the error suggests a hub download. Here a name is checked against what is on this
machine (the embedded models, a file or folder, the Hugging Face cache) without loading anything; a name
none of them has is refused with the closest embedded names, unless it has the form of a hub repository
id (`OWNER/NAME`), which is the hub's to answer (`check_generators`, under the usual `HF_HUB_OFFLINE` and
5-second rules of `a2c.system.hub`).
"""

from __future__ import annotations

import difflib
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from a2c.common.files import existing
from a2c.llm.config import GeneratorConfig, InProcessConfig
from a2c.models.embedded import DEFAULT_MODEL, EMBEDDED_GENERATORS
from a2c.system.hub import ModelNotFoundError, check_available

# OWNER/NAME as the hub allows it: each part of letters, digits, `_`, `-`, `.`, neither end a `-` or `.`
_PART = r"\w(?:[\w.-]{0,94}\w)?"
_HUB_ID = re.compile(f"{_PART}/{_PART}", re.ASCII)
SHOWN_CHARS = 80  # of a name quoted in a message; a 300-character value would bury the rest of the line


class UnknownModelError(ModelNotFoundError):
    """A model name that is not embedded, not a file or folder here, not in the Hugging Face cache, and
    cannot be a hub id either."""


def embedded_generators() -> list[str]:
    """The embedded generator names, the default first (the order messages list them in)."""
    return [DEFAULT_MODEL, *sorted(n for n in EMBEDDED_GENERATORS if n != DEFAULT_MODEL)]


def closest_embedded(name: str, n: int = 3) -> list[str]:
    """The embedded generator names most like `name` (case aside), best first: the did-you-mean."""
    names = {known.lower(): known for known in embedded_generators()}
    return [names[m] for m in difflib.get_close_matches(name.lower(), list(names), n=n, cutoff=0.6)]


def _shown(name: str) -> str:
    if len(name) <= SHOWN_CHARS:
        return repr(name)
    return f"{name[:SHOWN_CHARS]!r}… ({len(name)} characters)"


def in_hub_cache(name: str) -> bool:
    """Whether the Hugging Face cache holds the model (its config.json), asked without the network."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # no hub library, so no cache to read either
        return False
    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except ValueError:  # not a repository id (too long, a character the hub does not allow)
        return False


def is_hub_id(name: str) -> bool:
    """Whether `name` has the form of a hub repository id with an owner (`OWNER/NAME`: letters, digits,
    `_`, `-`, `.`; no `--` or `..`; at most 96 characters a part). Bare names are left out: the hub's few
    old ownerless ids (`gpt2`) are reached under their owners now (`openai-community/gpt2`), and a bare
    name is much more often a misspelt embedded one."""
    return _HUB_ID.fullmatch(name) is not None and "--" not in name and ".." not in name \
        and not name.endswith(".git")


def unknown_model(name: str) -> UnknownModelError:
    """The refusal of a name nothing here has: the closest embedded names, and all of them."""
    close = closest_embedded(name)
    guess = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    return UnknownModelError(
        f"unknown model {_shown(name)}: no embedded model, file or folder here, or Hugging Face cache entry "
        f"has this name{guess} (the embedded generators: {', '.join(embedded_generators())}; a hub model "
        "is named OWNER/NAME)")


def check_model_name(name: str) -> None:
    """`UnknownModelError` now, loading nothing, for a name `resolve_model` could not turn into a model:
    not embedded, no `.gguf` file, no file or folder, not in the Hugging Face cache, and no hub id.

    Args:
        name: a generator's `model:` as configured (paths already read from the config's folder).
    """
    if name in EMBEDDED_GENERATORS:
        return
    if name.endswith(".gguf"):  # read as a file, as `resolve_model` reads it
        info = existing(Path(name).expanduser())
        if info is None or not stat.S_ISREG(info.st_mode):
            raise UnknownModelError(f"GGUF model file not found: {_shown(name)}")
        return
    if existing(name) is not None or in_hub_cache(name) or is_hub_id(name):
        return
    raise unknown_model(name)


def in_process(generators: Iterable[GeneratorConfig | None]) -> list[InProcessConfig]:
    """The generators a2c loads into its own process (a served model's name is its server's business)."""
    return [g for g in generators if isinstance(g, InProcessConfig)]


def check_generators(generators: Iterable[GeneratorConfig | None]) -> None:
    """Before a run starts, for every in-process generator (an `llm` judge's own too): `UnknownModelError`
    for a name nothing here has (`check_model_name`), and `ModelNotFoundError` for a hub id that is neither
    on disk nor in the cache while the hub is kept out (`HF_HUB_OFFLINE`) or does not answer.

    Args:
        generators: a run's generators (others than in-process ones are skipped).
    """
    for generator in in_process(generators):
        name = generator.model
        check_model_name(name)
        if name in EMBEDDED_GENERATORS or name.endswith(".gguf") or existing(name) is not None:
            continue
        check_available(name, name, "generator")
