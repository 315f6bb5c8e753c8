"""Judge presets: YAML lists of judges with their options, shipped in `judges/` or given by path.

A preset file looks like

    description: ...
    judges:
      - name: embedding
      - name: entail
        model: microsoft/deberta-v2-xxlarge-mnli
        batch_size: 16

Names and values of options are checked when the file loads, by the judge's `Options` model (the same
check configs and `build_judge` make), so a typo or a bad value fails before any model loads.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from a2c.errors import A2CError
from a2c.files import parse_yaml, read_text
from a2c.judges.base import JUDGES, Judge, JudgeError, JudgeOptions
from a2c.llm.base import Generator
from a2c.resources import shipped_or_path

PRESETS_PACKAGE = "a2c.resources.judges"


class PresetError(A2CError, ValueError):
    """A preset that is missing or malformed, or names an unknown judge or option."""


class OptionError(JudgeError, PresetError):
    """A judge option with an unknown name or a bad value; both a `JudgeError` (for `build_judge`
    callers) and a `PresetError` (for preset callers), since both paths check options the same way."""


def judge_options(name: str) -> set[str]:
    """Names of the options a judge takes (the fields of its `Options` model)."""
    return set(JUDGES.get(name).Options.model_fields)


def validate_options(name: str, options: Mapping[str, Any]) -> JudgeOptions:
    """A judge's options checked by its `Options` model: unknown names first (each with the closest known
    one and the full list), then every value. Raises pydantic's `ValidationError` keyed by option, so a
    config nests it under the judge's entry and reports `file:line: judges.0.threshold: ...`."""
    model = JUDGES.get(name).Options
    unknown = [key for key in options if key not in model.model_fields]
    if unknown:
        known = sorted(model.model_fields)
        raise ValidationError.from_exception_data(
            model.__name__, [_unknown_option(key, options[key], known) for key in unknown])
    return model.model_validate(dict(options))


def _unknown_option(key: str, value: Any, known: list[str]) -> InitErrorDetails:
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    error = PydanticCustomError("unknown_option", "unknown option{hint}; this judge takes {known}",
                                {"hint": hint, "known": known})
    return InitErrorDetails(type=error, loc=(key,), input=value)


def checked_options(name: str, options: Mapping[str, Any]) -> JudgeOptions:
    """`validate_options` with its problems as one `OptionError`: the message presets and `build_judge`
    give, `judge 'embedding': threshold: Input should be ...` (a config names the file line instead)."""
    try:
        return validate_options(name, options)
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors(include_url=False))
        raise OptionError(f"judge {name!r}: {problems}") from None


def _problem(error: ErrorDetails) -> str:
    # capitalised path parts are union-branch tags (e.g. `GeneratorConfig`), not option keys
    key = ".".join(str(p) for p in error["loc"] if not str(p)[:1].isupper())
    got = "" if error["type"] == "unknown_option" else f", got {error['input']!r}"
    return f"{key}: {error['msg']}{got}"


def build_judge(name: str, **options: Any) -> Judge:
    """A judge by registry name with its options checked first; `llm` takes `generator=` (a `Generator`, or
    `GeneratorConfig` fields)."""
    return JUDGES.get(name)(checked_options(name, options))


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def build(self, generator: Generator | None = None) -> Judge:
        options = dict(self.options)
        if JUDGES.get(self.name).takes_run_generator and generator is not None:
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
    text = read_text(path, PresetError, what="judge preset", hint="a preset is YAML text: save it as UTF-8")
    data, _ = parse_yaml(text, str(path), PresetError)
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
            specs.append(JudgeSpec(entry["name"], checked_options(entry["name"], options).given()))
        except A2CError as exc:
            raise PresetError(f"{path}: judges[{i}]: {exc}") from None
    return JudgePreset(name or path.stem, str(data.get("description", "")).strip(), tuple(specs))


@cache
def load_preset(name_or_path: str) -> JudgePreset:
    """A shipped preset by name (`"offline"`, `"paper"`) or any preset file by path."""
    try:
        path, name = shipped_or_path(PRESETS_PACKAGE, name_or_path)
    except FileNotFoundError as exc:
        raise PresetError(f"no shipped judge preset {exc.args[0]}") from None
    return parse_preset(path, name)
