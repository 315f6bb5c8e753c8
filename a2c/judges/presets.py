"""Judge presets: YAML lists of judges with their options, shipped in `judges/` or given by path.

A preset file looks like

    description: ...
    judges:
      - name: embedding
      - name: entail
        model: microsoft/deberta-v2-xxlarge-mnli
        batch_size: 16

Names and options are checked when the file loads (did-you-mean for names, the judge's own keyword
arguments for options), so a typo fails before any model loads.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from a2c.errors import A2CError
from a2c.judges.base import JUDGES, Judge
from a2c.llm.base import Generator
from a2c.resources import shipped_or_path

PRESETS_PACKAGE = "a2c.resources.judges"


class PresetError(A2CError, ValueError):
    """A preset that is missing or malformed, or names an unknown judge or option."""


def judge_options(name: str) -> set[str]:
    """Keyword options of a judge class, following `**options` pass-through up to its base classes."""
    names: set[str] = set()
    for cls in JUDGES.get(name).__mro__:
        if "__init__" in vars(cls):
            names |= {p.name for p in inspect.signature(cls.__init__).parameters.values()
                      if p.kind is p.KEYWORD_ONLY}
    return names


def unknown_options(name: str, options: Iterable[str]) -> str | None:
    """What is wrong with a judge's option names, or None: the one message configs, presets and
    `build_judge` all give."""
    allowed = judge_options(name)
    unknown = sorted(set(options) - allowed)
    return f"judge {name!r} has no option(s) {unknown}; it takes {sorted(allowed)}" if unknown else None


def build_judge(name: str, **options: Any) -> Judge:
    """A judge by registry name; `llm` takes `generator=` (a `Generator`, or `GeneratorConfig` fields)."""
    factory = JUDGES.get(name)
    problem = unknown_options(name, options)
    if problem:
        raise PresetError(problem)
    generator = options.get("generator")
    if isinstance(generator, dict):
        from a2c.llm import GeneratorConfig, build_generator

        options["generator"] = build_generator(GeneratorConfig(**generator))
    return factory(**options)


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def build(self, generator: Generator | None = None) -> Judge:
        options = dict(self.options)
        if self.name == "llm" and generator is not None:
            options.setdefault("generator", generator)  # the run's generator unless the preset names one
        return build_judge(self.name, **options)


@dataclass(frozen=True)
class JudgePreset:
    name: str
    description: str
    judges: tuple[JudgeSpec, ...]

    def build(self, generator: Generator | None = None) -> list[Judge]:
        return [spec.build(generator) for spec in self.judges]


def parse_preset(path: Path, name: str | None = None) -> JudgePreset:
    if not path.is_file():
        raise PresetError(f"judge preset not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PresetError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("judges"), list) or not data["judges"]:
        raise PresetError(f"{path}: expected a mapping with a non-empty 'judges' list")
    unknown = sorted(set(data) - {"description", "judges"})
    if unknown:
        raise PresetError(f"{path}: unknown key(s) {unknown}")
    specs = []
    for i, entry in enumerate(data["judges"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise PresetError(f"{path}: judges[{i}] needs a 'name'")
        options = {k: v for k, v in entry.items() if k != "name"}
        try:
            problem = unknown_options(entry["name"], options)
        except A2CError as exc:
            raise PresetError(f"{path}: judges[{i}]: {exc}") from None
        if problem:
            raise PresetError(f"{path}: judges[{i}]: {problem}")
        specs.append(JudgeSpec(entry["name"], options))
    return JudgePreset(name or path.stem, str(data.get("description", "")).strip(), tuple(specs))


@cache
def load_preset(name_or_path: str) -> JudgePreset:
    """A shipped preset by name (`"offline"`, `"paper"`) or any preset file by path."""
    try:
        path, name = shipped_or_path(PRESETS_PACKAGE, name_or_path)
    except FileNotFoundError as exc:
        raise PresetError(f"no shipped judge preset {exc.args[0]}") from None
    return parse_preset(path, name)
