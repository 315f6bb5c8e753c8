"""`a2c serve`: Ask-to-Choose behind an OpenAI-compatible API, so any OpenAI client gets the selected
answer and its consistency evidence by changing its base URL.

config.py: what the server is configured with; schema.py: request/response shapes and the `a2c` field;
engine.py: the blocking batched pass; batcher.py: the gathering window and bounded queue; usage.py: each
request's share of a pass's model calls; errors.py: OpenAI-style errors and secret masking; app.py: routes.
FastAPI and uvicorn (the `serve` extra) are imported by app.py only.

Nothing is exported here: import each module by its path (`a2c.serve.app`).
"""

from __future__ import annotations

__all__: list[str] = []
