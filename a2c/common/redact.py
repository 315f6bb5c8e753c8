"""Masking credentials in text a2c shows: server error bodies, error lines.

A server's error body can echo the request (a 401 that quotes the `Authorization` header), and an error
line can quote a URL or a value; `redact` replaces what looks like a credential with `***` before any of
it reaches stderr: bearer tokens, `key=value` pairs whose key names a secret, tokens in the
well-known formats of API providers, long random-looking strings, URL userinfo, the values of credential
environment variables and of the key variables a backend read (and any value the caller names).

It keeps the rest of the text, so the error stays useful: an error line names config keys
(`server.api_key: expected a string`) and models (`hf download sentence-transformers/all-MiniLM-L6-v2`),
and masking those words would leave a message that cannot be followed. So a value after `name: ` is
masked only when it looks like a credential (a digit in it, or long), while one after `=` or in quotes
(`token=...`, `"api_key": "..."`) is a value whatever it looks like.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

MASK = "***"
_SECRET_NAME = r"(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token|authorization)"
_VALUE = r"[^\s\"',;&}]"
_NOT_MASKED = rf"(?!{re.escape(MASK)}|bearer\s)"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    # a value: after `=`, or quoted (`"api_key": "…"`, `token='…'`)
    (re.compile(rf"(?i)({_SECRET_NAME}[\"']?\s*(?:=\s*[\"']?|:\s*[\"']))(?:{_NOT_MASKED}){_VALUE}{{6,}}"),
     rf"\1{MASK}"),
    # after `name: ` unquoted, the text may be a message about the key: masked only when credential-like
    (re.compile(rf"(?i)({_SECRET_NAME}[\"']?:\s*)(?:{_NOT_MASKED})(?:(?={_VALUE}*\d){_VALUE}{{6,}}|{_VALUE}{{24,}})"),
     rf"\1{MASK}"),
    # OpenAI/Anthropic-style sk-…, Hugging Face hf_…, GitHub gh?_…, Slack xox?-…, Google AIza…
    (re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{12,}|\bhf_[A-Za-z0-9]{12,}|\bgh[pousr]_[A-Za-z0-9]{20,}"
                r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}"), MASK),
    # 24+ letters and digits in one run, upper and lower case and digits mixed: a random key of some other
    # provider. Words, hub ids (their parts are words joined by - and _) and hex digests are not that.
    (re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])"
                r"[A-Za-z0-9]{24,}(?![A-Za-z0-9])"), MASK),
    (re.compile(r"(?<=://)[^/\s@]+@"), f"{MASK}@"),
)
# environment variables whose values are credentials (OPENAI_API_KEY, HF_TOKEN, ...)
_SECRET_VARIABLE = re.compile(r"(?i)(?:^|_)(?:key|token|secret|password)$")
_SHORTEST_SECRET = 8  # shorter values of variables (a "1" or "true") would mask ordinary text
_READ: set[str] = set()  # keys a backend read from a variable of any name (`api_key_env: MY_LLM`)


def remember_secret(value: str | None) -> None:
    """Mask `value` in everything `redact` shows from now on: a key read from a variable whose name does
    not say it holds one."""
    if value and len(value) >= _SHORTEST_SECRET:
        _READ.add(value)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with credentials masked: the values in `secrets`, those of credential environment variables
    and remembered keys, and whatever looks like one."""
    # the caller's `secrets` are known keys whatever their length; values found by a variable's name only
    # from _SHORTEST_SECRET on
    found = [*_READ, *(v for k, v in os.environ.items() if _SECRET_VARIABLE.search(k))]
    values = {v for v in secrets if v} | {v for v in found if v and len(v) >= _SHORTEST_SECRET}
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
