"""OpenAI-style error answers (secrets are masked with `a2c.common.redact`, the masking every a2c message
uses).

Clients of an OpenAI-compatible server read `{"error": {"message", "type", "param", "code"}}` and map the
status to an exception class (the `openai` client: 400 BadRequestError, 401 AuthenticationError, 429
RateLimitError, ...), so every refusal of `a2c serve` has that shape and a message that says what to do.
"""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A request answered with an error status: the body says why; `headers` add e.g. Retry-After."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict[str, str] | None = None,
                 detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}
        self.detail = detail  # what was done before the failure (504): under the body's `a2c` key

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"message": self.message, "type": self.type, "param": self.param,
                                 "code": self.code}
        if self.detail is not None:
            error["a2c"] = self.detail
        return {"error": error}


def bad_request(message: str, param: str | None = None, code: str = "invalid_request") -> APIError:
    return APIError(400, message, param=param, code=code)
