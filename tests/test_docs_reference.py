"""The generated Reference pages (docs/hooks/reference.py) cover the code: every CLI flag, every config key
of every model a config can reach, every registered name. The lists the pages are checked against are
found here independently (the parser walk, the registries declared in a2c's source), so a page that skips
a new command, model or registry fails, and the checks are shown to catch an omission."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from a2c.cli import build_parser
from tests.test_cli_help import _commands

ROOT = Path(__file__).resolve().parent.parent


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {path: write() for path, write in HOOK.PAGES.items()}


def _sections(page: str, level: str) -> dict[str, str]:
    """heading text → the section's text, for headings of exactly `level` (`##`) or deeper."""
    parts = re.split(rf"^({level}#* .*)$", page, flags=re.M)
    return {parts[i].lstrip("#").strip(): parts[i + 1] for i in range(1, len(parts), 2)}


# ---------------------------------------------------------------- CLI


def missing_flags(page: str) -> list[str]:
    sections = _sections(page, "##")
    missing = []
    for name, parser in _commands(build_parser()):
        text = sections.get(f"`{name}`")
        if text is None:
            missing.append(name)
            continue
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for flag in action.option_strings or [action.metavar or action.dest]:
                if f"`{flag}`" not in text:
                    missing.append(f"{name} {flag}")
    return missing


def test_every_command_and_flag_is_on_the_cli_page(pages):
    assert missing_flags(pages["reference/cli.md"]) == []


def test_a_flag_left_off_the_cli_page_is_caught(pages):
    page = pages["reference/cli.md"]
    row = next(line for line in page.splitlines() if line.startswith("| `--limit`"))
    assert any(m.endswith(" --limit") for m in missing_flags(page.replace(row + "\n", "", 1)))


# ---------------------------------------------------------------- configuration


def _config_roots() -> list[type[BaseModel]]:
    """Every model a config file or a serve file is validated by, from the registries and the serve config."""
    from a2c.judges.base import JudgeOptions
    from a2c.llm.config import BACKENDS
    from a2c.qa.scoring import SIMILARITIES
    from a2c.qa.selection import SELECTION_METHODS
    from a2c.run.tasks import TASKS
    from a2c.serve.config import ServerOptions

    roots: list[type[BaseModel]] = [model for _, model in TASKS.items()]
    roots += [model for _, model in BACKENDS.items()]
    roots += [method.options for _, method in SELECTION_METHODS.items()]
    roots += [similarity.options for _, similarity in SIMILARITIES.items()]
    return [*roots, JudgeOptions, ServerOptions]


def _reachable(roots: list[type[BaseModel]]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []

    def models_in(annotation: Any) -> Iterator[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield annotation
        for arg in get_args(annotation):
            yield from models_in(arg)

    todo = list(roots)
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.append(model)
        for field in model.model_fields.values():
            todo.extend(models_in(field.annotation))
    return found


def missing_keys(page: str) -> list[str]:
    by_model = {}
    for text in _sections(page, "##").values():
        match = re.match(r"\s*`([\w.]+)`\.", text)
        if match:
            by_model[match.group(1)] = text
    missing = []
    for model in _reachable(_config_roots()):
        where = f"{model.__module__}.{model.__name__}"
        text = by_model.get(where)
        if text is None:
            missing.append(where)
            continue
        missing += [f"{where}.{key}" for key in (f.alias or n for n, f in model.model_fields.items())
                    if f"| `{key}` |" not in text]
    return missing


def test_every_config_key_is_on_the_config_page(pages):
    assert missing_keys(pages["reference/config.md"]) == []


def test_a_key_left_off_the_config_page_is_caught(pages):
    page = pages["reference/config.md"]
    row = next(line for line in page.splitlines() if line.startswith("| `max_pending` |"))
    assert missing_keys(page.replace(row + "\n", "", 1)) == ["a2c.serve.config.ServerOptions.max_pending"]


def test_field_comments_explain_the_keys(pages):
    """Most a2c fields are explained by a comment on their line; the page carries it."""
    assert "items per generate call inside a stage" in pages["reference/config.md"]


# ---------------------------------------------------------------- registries

_DECLARED = re.compile(r"^(\w+): Registry\[", re.M)


def _declared_registries() -> list[tuple[str, Any]]:
    """(`module.NAME`, the registry) for every `NAME: Registry[...]` in a2c's source."""
    found = []
    for path in sorted((ROOT / "a2c").rglob("*.py")):
        for name in _DECLARED.findall(path.read_text(encoding="utf-8")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found.append((f"{module}.{name}", getattr(importlib.import_module(module), name)))
    return found


def missing_names(page: str) -> list[str]:
    sections = list(_sections(page, "##").values())
    missing = []
    for where, registry in _declared_registries():
        names = registry.names()
        text = next((s for s in sections if f"`{where}`" in s.split("|", 1)[0]), None)
        if text is None:
            missing.append(where)
            continue
        missing += [f"{where}: {name}" for name in names if f"| `{name}` |" not in text]
    return missing


def test_the_source_scan_finds_the_registries():
    assert {"a2c.judges.base.JUDGES", "a2c.llm.config.BACKENDS", "a2c.qa.selection.SELECTION_METHODS",
            "a2c.metrics.uncertainty.UNCERTAINTY_MEASURES"} <= {where for where, _ in _declared_registries()}


def test_every_registered_name_is_on_the_registries_page(pages):
    assert missing_names(pages["reference/registries.md"]) == []


def test_a_name_left_off_the_registries_page_is_caught(pages):
    page = pages["reference/registries.md"]
    row = next(line for line in page.splitlines() if line.startswith("| `medoid` |"))
    assert missing_names(page.replace(row + "\n", "", 1)) == ["a2c.qa.selection.SELECTION_METHODS: medoid"]
