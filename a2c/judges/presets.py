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

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from a2c.common import components
from a2c.common.components import ComponentSpec
from a2c.common.errors import A2CError
from a2c.common.files import parse_yaml, read_text
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
    config nests it under the judge's entry and reports `file:line: judges.0.threshold: ...`.

    Args:
        name: the judge's registry name (`JUDGES`).
        options: its options by name.

    Returns:
        The judge's `Options` model.

    Raises:
        UnknownNameError: no judge has that name.
        pydantic.ValidationError: an option is unknown or has a bad value.
    """
    return cast(JudgeOptions, components.validate_options(JUDGES.get(name).Options, options, "judge"))


def checked_options(name: str, options: Mapping[str, Any]) -> JudgeOptions:
    """`validate_options` with its problems as one `OptionError`: the message presets and `build_judge`
    give, `judge 'embedding': threshold: Input should be ...` (a config names the file line instead)."""
    try:
        return validate_options(name, options)
    except ValidationError as exc:
        raise OptionError(components.one_line("judge", name, exc)) from None


def build_judge(name: str, **options: Any) -> Judge:
    """A judge by registry name with its options checked first; `llm` takes `generator=` (a `Generator`, or
    `GeneratorConfig` fields).

    Args:
        name: the judge's registry name (`JUDGES`: exact, rouge1, ner, pp, entail, contra, llm, embedding).
        **options: the judge's options (its `Options` model's fields).

    Returns:
        The judge, its model (if any) loaded on first use.

    Raises:
        UnknownNameError: no judge has that name.
        OptionError: an option is unknown or has a bad value.
    """
    return JUDGES.get(name)(checked_options(name, options))


class JudgeSpec(ComponentSpec):
    """A judge by name with its options inline, as in a config or a preset file (`{name: pp, threshold:
    0.8}`); the options are checked by the judge's own `Options` model."""

    kind = "judge"
    registry_at = "a2c.judges.base:JUDGES"
    options_attr = "Options"

    def build(self, generator: Generator | None = None) -> Judge:
        """The judge; one that asks a generator gets `generator` unless its options name one."""
        options = self.options
        if JUDGES.get(self.name).takes_run_generator and generator is not None:
            options.setdefault("generator", generator)
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
            specs.append(JudgeSpec.of(entry["name"], **options))
        except A2CError as exc:
            raise PresetError(f"{path}: judges[{i}]: {exc}") from None
    return JudgePreset(name or path.stem, str(data.get("description", "")).strip(), tuple(specs))


@cache
def load_preset(name_or_path: str) -> JudgePreset:
    """A shipped preset by name (`"offline"`, `"paper"`) or any preset file by path.

    Args:
        name_or_path: a shipped preset's name, or a `.yaml` file's path.

    Returns:
        The preset's name, description and judge specs (`JudgePreset.build` makes the judges).

    Raises:
        PresetError: no shipped preset has that name, or the file is not a valid preset.
    """
    try:
        path, name = shipped_or_path(PRESETS_PACKAGE, name_or_path)
    except FileNotFoundError as exc:
        raise PresetError(f"no shipped judge preset {exc.args[0]}") from None
    return parse_preset(path, name)
