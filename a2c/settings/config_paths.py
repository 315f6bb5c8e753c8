"""Paths written in a config are read from the config file's folder, so a config means the same thing
whichever folder `a2c run` starts in (a config beside its data says `path: questions.jsonl`).

Applied to the YAML data before validation (`a2c.run.config_file.parse_config`), for the keys every run config
has (`CORE_PATH_KEYS`) and those its task declares (its config model's `path_keys`); absolute paths are kept.
A path that must exist and does not fails here, with the config line and the absolute path searched. Defaults
are not paths written in the config: the request cache (`.a2c-cache/cache.sqlite`, also when written out as
such, as a run's stored config does) and the run folder (`runs/NAME`) stay in the working folder; paths given
on the command line stay relative to it too."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from a2c.common.errors import A2CError
from a2c.common.files import existing, node_line
from a2c.system.cache import DEFAULT_CACHE_PATH

# file: a file that must exist. yaml: a shipped name, or a YAML file that must exist (`.yaml`/`.yml`, the
# rule of `a2c.resources.shipped_or_path`). model: a name (embedded, hub id), a `.gguf` file that must exist,
# or a folder, when one exists beside the config. created: a file or folder a2c writes.
Kind = Literal["file", "yaml", "model", "created"]
Data = dict[str, Any]


@dataclass(frozen=True)
class PathKey:
    keys: tuple[str, ...]  # "*": every item of a list
    kind: Kind
    applies: Callable[[Data], bool] = lambda data: True


def generator_keys(*at: str) -> tuple[PathKey, ...]:
    """The path keys of a generator section at `at` (its request cache and its model)."""
    return PathKey((*at, "cache"), "created"), PathKey((*at, "model"), "model")


# what every run config has (`a2c.settings.config.RunConfig`); a task adds its own (its config model's
# `path_keys`)
CORE_PATH_KEYS: tuple[PathKey, ...] = (
    *generator_keys("generator"), *generator_keys("aux_generator"), PathKey(("output",), "created"))


def _places(node: Any, keys: tuple[str, ...], loc: tuple[str | int, ...] = ()
            ) -> Iterator[tuple[Any, str | int, tuple[str | int, ...]]]:
    """(container, key, location) of every value `keys` reaches in `node`."""
    head, rest = keys[0], keys[1:]
    items: list[tuple[str | int, Any]]
    if head == "*":
        items = list(enumerate(node)) if isinstance(node, list) else []
    else:
        items = [(head, node[head])] if isinstance(node, dict) and head in node else []
    for key, value in items:
        if rest:
            yield from _places(value, rest, (*loc, key))
        else:
            yield node, key, (*loc, key)


def _is_path(kind: Kind, value: str, folder: Path) -> bool:
    if kind == "yaml":
        return Path(value).suffix in {".yaml", ".yml"}
    if kind == "model":  # a name too long to be a path is a name (`existing` gives None)
        return value.endswith(".gguf") or existing(folder / value) is not None
    if kind == "created":
        return Path(value) != DEFAULT_CACHE_PATH
    return True


def resolve_config_paths(data: Data, folder: Path, source: str, root: yaml.Node | None,
                         error: type[A2CError], task_keys: Sequence[PathKey] = ()) -> Data:
    """`data` with every relative path of `CORE_PATH_KEYS` and `task_keys` made absolute against `folder`
    (the config's); a missing file is `error` naming `source`, its line (in the YAML tree `root`) and the
    absolute path searched."""
    folder = Path(os.path.abspath(folder))
    for path_key in (*task_keys, *CORE_PATH_KEYS):
        if not path_key.applies(data):
            continue
        for container, key, loc in list(_places(data, path_key.keys)):
            value = container[key]
            if not isinstance(value, str) or not value or Path(value).is_absolute() \
                    or not _is_path(path_key.kind, value, folder):
                continue
            resolved = os.path.abspath(folder / value)  # normalises `..` without following links
            if path_key.kind != "created" and existing(resolved) is None:
                raise _missing(error, value, resolved, folder, f"{source}:{node_line(root, loc) or '?'}",
                               ".".join(map(str, loc)))
            container[key] = resolved
    return data


def _missing(error: type[A2CError], value: str, resolved: str, folder: Path, where: str, key: str
             ) -> A2CError:
    here = Path(value).absolute()
    hint = (f"{value} is relative to the working folder: write `{os.path.relpath(here, folder)}` (relative "
            "to the config's folder) or an absolute path" if here.exists()
            else "a relative path in a config is read from the config's folder")
    return error(f"{where}: {key}: no such file or folder: {resolved} (read relative to the config's "
                 f"folder {folder})", hint=hint)
