"""Loading Hugging Face models by name, the same way for judges and generators: a local folder or the
Hugging Face cache first, the hub only when it is allowed and answers, and one a2c message when none has it.

transformers alone retries an unreachable hub for ~30 s per file and then raises its own OSError; going
through `from_pretrained` here, a wrong name or a machine without the hub fails in seconds, with the name
and how to supply the model offline.
"""

from __future__ import annotations

import os
import stat
from functools import cache
from typing import Any

from a2c.common.errors import A2CError
from a2c.common.files import existing

HUB_TIMEOUT = 5.0  # seconds to wait for the hub's first answer before calling it unreachable


class ModelNotFoundError(A2CError):
    """A model name that is not embedded, not a local file or folder, not in the Hugging Face cache and not
    downloadable (no hub, or the hub does not have it)."""


def _local_folder(source: str) -> bool:
    """Whether `source` is a folder on disk; a name that cannot be a path (too long, say) is none."""
    info = existing(source)
    return info is not None and stat.S_ISDIR(info.st_mode)


def hub_offline() -> bool:
    """Whether `HF_HUB_OFFLINE` forbids the hub (huggingface_hub's own switch, honoured before any call)."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


@cache
def hub_unreachable() -> str | None:
    """Why the hub does not answer (None when it does), asked once per process with a short timeout."""
    import httpx
    from huggingface_hub import constants

    try:
        httpx.head(constants.ENDPOINT, timeout=HUB_TIMEOUT)
    except httpx.HTTPError as exc:
        return f"the hub at {constants.ENDPOINT} cannot be reached ({type(exc).__name__}: {exc})"
    return None


def model_not_found(model: str, kind: str, why: str) -> ModelNotFoundError:
    """a2c's message for a model that cannot be loaded, with how to supply it on a machine without the hub."""
    return ModelNotFoundError(
        f"cannot load {kind} model {model!r}: {why}. Without hub access, download it on a connected machine "
        f"(`hf download {model}`) and either set `model:` to that folder's path or copy the cache into this "
        "machine's HF_HOME (default ~/.cache/huggingface).")


def check_available(model: str, source: str, kind: str, *, offline: bool = False) -> None:
    """`ModelNotFoundError` now, before any work, when `from_pretrained` would not find the model: not a
    local folder, not in the Hugging Face cache, and the hub forbidden or unreachable."""
    if _local_folder(source):
        return
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(source, "config.json")
    except ValueError:  # not a repository id (a path that does not exist, say)
        cached = None
    if isinstance(cached, str):
        return
    _hub_allowed(model, kind, offline)


def _hub_allowed(model: str, kind: str, offline: bool) -> None:
    """`ModelNotFoundError` for a model on no disk when the hub is kept out or does not answer."""
    missing = "it is not a local folder and not in the Hugging Face cache"
    if offline or hub_offline():
        switch = "the option `offline: true`" if offline else "HF_HUB_OFFLINE"
        raise model_not_found(model, kind, f"{missing}, and {switch} keeps the hub out")
    unreachable = hub_unreachable()
    if unreachable:
        raise model_not_found(model, kind, f"{missing}, and {unreachable}")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def from_pretrained(loader: Any, source: str, *, model: str, kind: str, offline: bool = False,
                    **kwargs: Any) -> Any:
    """`loader.from_pretrained(source, **kwargs)` from a local folder or the cache, else from the hub when
    it is allowed (`offline`, HF_HUB_OFFLINE) and reachable; otherwise `ModelNotFoundError` naming `model`
    (the name as configured; `source` is what it resolved to) as a `kind` model ("judge", "generator")."""
    local = _local_folder(source)
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except (OSError, ValueError) as exc:
        if local:
            raise model_not_found(model, kind, "the local folder exists but does not hold a loadable model "
                                  f"({_first_line(exc)})") from None
    _hub_allowed(model, kind, offline)
    try:
        return loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise model_not_found(model, kind, "it is not a local folder and not in the Hugging Face cache, and "
                              f"the hub does not give it ({_first_line(exc)})") from None
