"""What an OpenAI-compatible server says about itself: that it answers, and which model it serves.

`check_servers` asks every base URL of a run's served generators once, before any work, so a wrong URL or a
server that is down fails in seconds with the URL in the message (`a2c run`, `a2c probe`) rather than after
every retry of the first stage.

`model_identity` reads a `/models` answer for the request cache: a server may serve another model under the
configured name (llama.cpp serves any file under `--alias`), and answers cached from one model must not be
served for another. What identifies the weights is whatever the server reports beyond the name: vLLM's
`root` (the model path or hub id it loaded) and `parent`, llama.cpp's `meta` (vocabulary, parameter count,
file size), or the path it reports as the id when it serves one model under another name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2c.common.errors import A2CError
from a2c.llm.config import GeneratorConfig, OpenAIConfig

# the fields of a /models entry that say which weights are served; others (created, owned_by,
# permission, max_model_len) change with each start or say nothing about the weights
IDENTITY_FIELDS = ("id", "root", "parent", "meta")


class ServerUnreachableError(A2CError):
    """The OpenAI-compatible server does not answer at the given base URL."""


def check_server(base_url: str, timeout: float = 5.0) -> None:
    """GET {base_url}/models: any HTTP answer means a server is there; no answer is a clear error."""
    import httpx

    try:
        httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise ServerUnreachableError(
            f"cannot reach the server at {base_url} ({type(exc).__name__}: {exc}); is it running (e.g. "
            "`python -m vllm.entrypoints.openai.api_server --model NAME`) and is the URL right "
            "(it usually ends in /v1)?") from None


def check_servers(configs: Iterable[GeneratorConfig], timeout: float = 5.0) -> None:
    """`check_server` on every base URL of the `openai` generators among `configs`, each URL once."""
    urls = dict.fromkeys(url for config in configs if isinstance(config, OpenAIConfig)
                         for url in config.base_urls)
    for url in urls:
        check_server(url, timeout)


def model_identity(listing: Any, model: str) -> dict[str, Any] | None:
    """What identifies the model served as `model` in a `/models` answer: the identity fields of its entry
    (the one with that id, else the only one listed). None when the answer says nothing beyond the name
    (an entry holding only `id: model`), when no entry is the model's, or when it is no model list."""
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data if isinstance(entry, dict)]
    named = [entry for entry in entries if entry.get("id") == model]
    match = named or (entries if len(entries) == 1 else [])
    if len(match) != 1:
        return None
    identity = {key: match[0][key] for key in IDENTITY_FIELDS if match[0].get(key) is not None}
    return None if identity in ({}, {"id": model}) else identity
