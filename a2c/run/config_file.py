"""A config file becomes a task's validated config here, in one pass down the floors: the file's text
(`a2c.common.files`), its YAML, the task's config model (`a2c.run.tasks.TASKS`, by the top-level `task`
key, `qa` when absent), its paths read from the file's folder (`a2c.settings.config_paths`), validation
(`a2c.settings.config`), the generators' model names (`check_model_names`), and the task's data read
through. Each step calls the next one down and hands its result back; none calls up, so a problem is
reported by the step that found it, as `file:line: key: message`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import yaml

from a2c.common.errors import RenamedKeyWarning
from a2c.common.files import node_line, parse_yaml, read_text
from a2c.common.registry import UnknownNameError
from a2c.run.tasks import DEFAULT_TASK, TASKS, task_of
from a2c.settings.config import ConfigError, RunConfig, check_model_names, validate_config
from a2c.settings.config_paths import resolve_config_paths


def load_config(path: str | Path, *, paths_from_file: bool = True) -> RunConfig:
    """A config file, validated, and its local data file read through (encoding, columns, every row):
    a bad config or data file fails here, before a run folder, a cache or a model is touched. Its relative
    paths are read from its folder (`paths_from_file=False`: from the working folder, for a run's stored
    config: `parse_stored_config`)."""
    path = Path(path)
    text = read_text(path, ConfigError, what="config file", hint="a config is YAML text: save it as UTF-8")
    if paths_from_file:
        config, root = _parse(text, str(path), path.parent)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RenamedKeyWarning)
            config, root = _parse(text, str(path), None)
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


def _parse(text: str, source: str, folder: Path | None) -> tuple[RunConfig, yaml.Node | None]:
    """`parse_config`, with the YAML node tree, which later checks need for their line numbers."""
    data, root = parse_yaml(text, source, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level")
    name = data.get("task", DEFAULT_TASK)
    try:
        model = TASKS.get(str(name))
    except UnknownNameError as exc:
        line = node_line(root, ("task",))
        raise ConfigError(f"{source}{f':{line}' if line else ''}: task: {exc}") from None
    if folder is not None:
        data = resolve_config_paths(data, folder, source, root, ConfigError, model.path_keys)
    config: RunConfig = validate_config(model, data, root, source)  # each task's own model
    return config, root
