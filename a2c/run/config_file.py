"""A config file becomes a task's validated config here, in one pass down the floors: the file's text
(`a2c.common.files`), its YAML, the task's config model (`a2c.run.tasks.TASKS`, by the top-level `task`
key, `qa` when absent), its paths read from the file's folder (`a2c.settings.config_paths`), validation
(`a2c.settings.config`), the generators' model names (`check_model_names`), and the task's data read
through. Each step calls the next one down and hands its result back; none calls up, so a problem is
reported by the step that found it, as `file:line: key: message`.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from a2c.common.errors import RenamedKeyWarning
from a2c.common.files import node_line, parse_yaml, read_text
from a2c.common.registry import UnknownNameError
from a2c.run.tasks import DEFAULT_TASK, TASKS, task_of
from a2c.settings.config import ConfigError, RunConfig, check_model_names, validate_config
from a2c.settings.config_paths import resolve_config_paths


def load_config(path: str | Path, *, paths_from_file: bool = True, overrides: Sequence[str] = ()
                ) -> RunConfig:
    """A config file, validated, and its local data file read through (encoding, columns, every row):
    a bad config or data file fails here, before a run folder, a cache or a model is touched.

    Args:
        path: the YAML file.
        paths_from_file: read its relative paths from its folder; False: from the working folder (a run's
            stored config: `parse_stored_config`).
        overrides: `KEY=VALUE` settings put over the file's before validation (`a2c run --set`): a
            dotted key (`ask_to_choose.option_order`), a YAML value (`shuffled`, `0.5`, `[a, b]`).

    Returns:
        The task's validated config.

    Raises:
        ConfigError: a bad file, key or value (`file:line: key: message`), or a malformed override.
    """
    path = Path(path)
    text = read_text(path, ConfigError, what="config file", hint="a config is YAML text: save it as UTF-8")
    if paths_from_file:
        config, root = _parse(text, str(path), path.parent, overrides)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RenamedKeyWarning)
            config, root = _parse(text, str(path), None, overrides)
    check_model_names(config, root, str(path))  # a misspelt model is a config error, before any model loads
    task_of(config).check_data(config)
    return config


def parse_stored_config(text: str, source: str) -> RunConfig:
    """A run folder's own stored config: its paths were resolved when it was written, and a key it holds
    under an earlier release's name is read without a warning (the next run writes it anew; there is
    nothing for the user to edit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedKeyWarning)
        return parse_config(text, source)


def parse_config(text: str, source: str = "<config>", folder: Path | None = None) -> RunConfig:
    """Validate config text; every problem is reported as `file:line: key: message`. Relative paths are
    read from `folder` when given, else from the working folder."""
    return _parse(text, source, folder)[0]


def apply_settings(data: dict[str, Any], overrides: Sequence[str], source: str) -> dict[str, Any]:
    """`data` with each `KEY=VALUE` of `overrides` set in it (a copy; the dotted key's missing mappings are
    made). A value is read as YAML, so `0.5` is a number and `[a, b]` a list.

    Args:
        data: the config file's settings.
        overrides: the `--set` arguments, in order (a later one wins).
        source: the config file, for messages.

    Returns:
        The settings to validate.

    Raises:
        ConfigError: an override without `=` or a key, a value that is not YAML, or a key through a
            setting that is not a mapping.
    """
    data = copy.deepcopy(data)
    for override in overrides:
        key, eq, raw = override.partition("=")
        parts = key.strip().split(".")
        if not eq or not all(p.strip() for p in parts):
            raise ConfigError(f"--set {override!r}: expected KEY=VALUE with a dotted key, e.g. "
                              "ask_to_choose.option_order=shuffled")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {key.strip()}: the value {raw!r} is not YAML ({exc.__class__.__name__})"
                              ) from None
        node: dict[str, Any] = data
        for depth, part in enumerate(parts[:-1]):
            inner = node.setdefault(part.strip(), {})
            if not isinstance(inner, dict):
                where = ".".join(parts[:depth + 1])
                raise ConfigError(f"--set {key.strip()}: {source} sets {where} to "
                                  f"{type(inner).__name__} {inner!r}, not a mapping of settings")
            node = inner
        node[parts[-1].strip()] = value
    return data


def _parse(text: str, source: str, folder: Path | None, overrides: Sequence[str] = ()
           ) -> tuple[RunConfig, yaml.Node | None]:
    """`parse_config`, with the YAML node tree, which later checks need for their line numbers."""
    data, root = parse_yaml(text, source, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level")
    if overrides:
        data = apply_settings(data, overrides, source)
    name = data.get("task", DEFAULT_TASK)
    try:
        model = TASKS.get(str(name))
    except UnknownNameError as exc:
        line = node_line(root, ("task",))
        raise ConfigError(f"{source}{f':{line}' if line else ''}: task: {exc}") from None
    if folder is not None:
        data = resolve_config_paths(data, folder, source, root, ConfigError, model.path_keys)
    try:
        config: RunConfig = validate_config(model, data, root, source)  # each task's own model
    except ConfigError as exc:
        raise _from_settings(exc, overrides) from None
    return config, root


def _from_settings(exc: ConfigError, overrides: Sequence[str]) -> ConfigError:
    """`exc`, saying which `--set` gave the value it names: its line number is the file's, not the value's."""
    named = [o for o in overrides if f"{o.partition('=')[0].strip()}:" in str(exc)]
    if not named:
        return exc
    return ConfigError(f"{exc} (the value of --set {named[-1]})")
