"""Model files a2c brings or makes, kept apart from generation: the table of models shipped inside PyPI
packages and how each is found (`embedded`), GGUF files split over pinned packages and joined into the
model cache (`split_gguf`), and the one-off GGUF → safetensors conversion vLLM loads (`convert`).

The generators (`a2c.llm`) and the judges' encoders (`a2c.judges`) read these; nothing here generates.
"""

from __future__ import annotations

__all__: list[str] = []
