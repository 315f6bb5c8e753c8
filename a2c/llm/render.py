"""How a request's chat turns become the text a model sees: flattened turns for completion endpoints and
models without a chat template, or the tokenizer's own chat template. Shared by every backend, so they
render prompts identically."""

from __future__ import annotations

from typing import Any

from a2c.llm.base import GenerationRequest, Message


def flatten(messages: tuple[Message, ...]) -> str:
    """Plain-text form of chat turns for completion endpoints and models without a chat template."""
    labels = {"system": "", "user": "User: ", "assistant": "Assistant: "}
    parts = [f"{labels[m.role]}{m.content.strip()}" for m in messages]
    return "\n\n".join(parts) + "\n\nAssistant:"


def prompt_text(tokenizer: Any, request: GenerationRequest) -> str:
    """The exact text a local model sees: its chat template for messages (plain turns if it has none),
    the raw prompt otherwise. Shared by the in-process backends so they render prompts identically."""
    if request.messages is None:
        assert request.prompt is not None
        return request.prompt
    if not getattr(tokenizer, "chat_template", None):
        return flatten(request.messages)
    turns = [{"role": m.role, "content": m.content} for m in request.messages]
    text: str = tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
    return text
