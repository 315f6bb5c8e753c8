"""Masking credentials in text a2c shows: server error bodies, error lines.

A server's error body can echo the request (a 401 that quotes the `Authorization` header), and an error
line can quote a URL or a value; `redact` replaces what looks like a credential with `***` before any of
it reaches stderr: bearer tokens, `key=value` pairs whose key names a secret, tokens in the
well-known formats of API providers, URL userinfo, and the values of credential environment variables
(and any value the caller names). It keeps the rest of the text, so the error stays readable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

MASK = "***"
_SECRET_NAME = r"(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token|authorization)"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    (re.compile(rf"(?i)({_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?)(?!{re.escape(MASK)}|bearer\s)[^\s\"',;&}}]{{6,}}"),
     rf"\1{MASK}"),
    # OpenAI/Anthropic-style sk-…, Hugging Face hf_…, GitHub gh?_…, Slack xox?-…, Google AIza…
    (re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{12,}|\bhf_[A-Za-z0-9]{12,}|\bgh[pousr]_[A-Za-z0-9]{20,}"
                r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}"), MASK),
    (re.compile(r"(?<=://)[^/\s@]+@"), f"{MASK}@"),
)
# environment variables whose values are credentials (OPENAI_API_KEY, HF_TOKEN, ...)
_SECRET_VARIABLE = re.compile(r"(?i)(?:^|_)(?:key|token|secret|password)$")
_SHORTEST_SECRET = 8  # shorter values (a "1" or "true") would mask ordinary text


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with credentials masked: the values in `secrets`, those of credential environment variables,
    and whatever looks like one."""
    values = [*secrets, *(v for k, v in os.environ.items() if _SECRET_VARIABLE.search(k))]
    for value in sorted({v for v in values if v and len(v) >= _SHORTEST_SECRET}, key=len, reverse=True):
        text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
