"""Prompt templates: YAML files in `prompts/` (shipped inside the package) rendered to chat messages.

A template file holds `fields` (the names a caller must supply), an optional `system` text, few-shot
`examples` (user/assistant turns) and the final `user` turn. `system_pad: N` ends the system text with N
lines holding a single space: whitespace that says nothing, there so that the part every prompt of the
template shares (system, examples, the final turn's fixed start) ends on a KV-cache block boundary of the
embedded model (32 SmolLM2 tokens; `tests/test_prompt_alignment.py` pins it). vLLM's prefix cache reuses
whole blocks only, so without it each prompt recomputed the shared prefix's last partial block.
Placeholders are `{name}`; literal braces are doubled. Rendering to messages lets instruct models see
their own chat template; `text()` flattens the same turns for completion-only endpoints (`a2c.llm.render`).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from a2c.common.errors import A2CError
from a2c.common.files import parse_yaml, read_text
from a2c.llm.base import Message
from a2c.llm.render import flatten
from a2c.resources import shipped_or_path

PROMPTS_PACKAGE = "a2c.resources.prompts"
PAD_LINE = " \n"  # one token for SmolLM2's tokenizer, merging with neither neighbour


class TemplateError(A2CError, ValueError):
    """A template file that is missing, malformed, or rendered with the wrong fields."""


def _placeholders(text: str, where: str, path: Path) -> set[str]:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as exc:
        raise TemplateError(f"{path}: {where}: bad placeholder syntax ({exc})") from None
    bad = {n for n in names if not n.isidentifier()}
    if bad:
        raise TemplateError(f"{path}: {where}: placeholders must be plain names, got {sorted(bad)}")
    return names


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    path: Path
    fields: tuple[str, ...]
    system: str | None
    examples: tuple[tuple[str, str], ...]
    user: str
    system_pad: int = 0  # lines holding one space that end the system text (block alignment)

    def messages(self, **values: object) -> tuple[Message, ...]:
        """Render to chat turns; every declared field must be given, and nothing else."""
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise TemplateError(f"{self.path}: missing field(s) {missing} for template {self.name!r}")
        extra = sorted(set(values) - set(self.fields))
        if extra:
            raise TemplateError(f"{self.path}: unknown field(s) {extra}; template {self.name!r} takes "
                                f"{list(self.fields)}")
        turns: list[Message] = []
        if self.system:
            turns.append(Message("system", self.system.format(**values) + PAD_LINE * self.system_pad))
        for user, assistant in self.examples:
            turns.append(Message("user", user.format(**values)))
            turns.append(Message("assistant", assistant.format(**values)))
        turns.append(Message("user", self.user.format(**values)))
        return tuple(turns)

    def text(self, **values: object) -> str:
        """The same turns as plain text, ending where the model's answer starts."""
        return flatten(self.messages(**values))


def parse_template(path: Path, name: str | None = None) -> PromptTemplate:
    """Read and validate one template file; errors name the file and the offending field."""
    text = read_text(path, TemplateError, what="prompt template",
                     hint="a template is YAML text: save it as UTF-8")
    data, _ = parse_yaml(text, str(path), TemplateError)
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: expected a mapping with 'fields' and 'user'")
    unknown = sorted(set(data) - {"description", "fields", "system", "system_pad", "examples", "user"})
    if unknown:
        raise TemplateError(f"{path}: unknown key(s) {unknown}")
    if not isinstance(data.get("user"), str) or not data["user"].strip():
        raise TemplateError(f"{path}: missing field 'user' (the final user turn)")
    fields = data.get("fields") or []
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise TemplateError(f"{path}: 'fields' must be a list of names")
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise TemplateError(f"{path}: 'system' must be text")
    pad = data.get("system_pad", 0)
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
        raise TemplateError(f"{path}: 'system_pad' must be a whole number >= 0, got {pad!r}")
    if pad and not system:
        raise TemplateError(f"{path}: 'system_pad' needs a 'system' text to pad")
    examples: list[tuple[str, str]] = []
    for i, ex in enumerate(data.get("examples") or []):
        if not isinstance(ex, dict) or not isinstance(ex.get("user"), str) \
                or not isinstance(ex.get("assistant"), str):
            raise TemplateError(f"{path}: examples[{i}] needs 'user' and 'assistant' texts")
        examples.append((ex["user"], ex["assistant"]))

    used = _placeholders(data["user"], "user", path)
    if system:
        used |= _placeholders(system, "system", path)
    for i, (u, a) in enumerate(examples):
        used |= _placeholders(u, f"examples[{i}].user", path)
        used |= _placeholders(a, f"examples[{i}].assistant", path)
    undeclared = sorted(used - set(fields))
    if undeclared:
        raise TemplateError(f"{path}: placeholder(s) {undeclared} not declared in 'fields'")
    unused = sorted(set(fields) - used)
    if unused:
        raise TemplateError(f"{path}: field(s) {unused} declared but never used")
    return PromptTemplate(name or path.stem, path, tuple(fields), system, tuple(examples), data["user"], pad)


def with_context(messages: tuple[Message, ...], context: str) -> tuple[Message, ...]:
    """The turns with `context` (a passage, a story and its conversation so far) shown before the final
    user turn's text, which asks the question; no context leaves the turns as they are. Prepended rather
    than templated, so every template shows a question's context the same way and a prompt without one
    is byte for byte the template's.

    Args:
        messages: rendered turns ending with the user turn that asks the question.
        context: the text the question is asked with; "" for none.

    Returns:
        The turns, the last one starting with the context and a blank line.
    """
    if not context:
        return messages
    last = messages[-1]
    if last.role != "user":
        raise TemplateError(f"a context goes before the final user turn, but the last turn is {last.role!r}")
    return (*messages[:-1], Message("user", f"{context}\n\n{last.content}"))


@cache
def load_template(name_or_path: str) -> PromptTemplate:
    """A shipped template by name (`"rank"`) or any template file by path (`"my/rank.yaml"`)."""
    try:
        path, name = shipped_or_path(PROMPTS_PACKAGE, name_or_path)
    except FileNotFoundError as exc:
        raise TemplateError(f"no shipped prompt template {exc.args[0]}") from None
    return parse_template(path, name)
