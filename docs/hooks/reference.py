"""The Reference pages, written from the code at every `mkdocs build` so they cannot drift from it.

`on_files` (an mkdocs hook, see mkdocs.yml) adds three generated pages: the CLI from `a2c.cli.build_parser`,
the configuration from the pydantic models' JSON schemas (a field's description is its `description=` or,
where the code keeps it as a comment on the field's line, that comment), and the registries from
`a2c.common.registry.Registry` objects. `tests/test_docs_reference.py` checks that every
flag, field and registry name appears in them.
"""

from __future__ import annotations

import argparse
import inspect
import io
import re
import tokenize
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

# (page title, model, what it configures), in the order the configuration page lists them
CONFIG_MODELS: tuple[tuple[str, str, str], ...] = (
    ("QA run (`task: qa`, the default)", "a2c.qa.config:ExperimentConfig",
     "What `a2c run` reads for the paper's pipeline (paraphrases, temperatures, judges, Ask-to-Choose)."),
    ("Classification run (`task: classification`)", "a2c.classification.config:ClassificationConfig",
     "What `a2c run` reads for the related papers' consistency suites."),
    ("Generator: `backend: transformers`", "a2c.llm.config:TransformersConfig", "The in-process model."),
    ("Generator: `backend: vllm`", "a2c.llm.config:VLLMConfig", "vLLM in the same process."),
    ("Generator: `backend: openai`", "a2c.llm.config:OpenAIConfig",
     "Any OpenAI-compatible server (llama.cpp, vLLM, a hosted API)."),
    ("Generator: `backend: scripted`", "a2c.llm.config:ScriptedConfig",
     "Canned replies, for tests and demos."),
    ("Judge options (`judges.options.NAME`)", "a2c.judges.base:JudgeOptions",
     "What a model judge loads and how."),
    ("`a2c serve`: the `server:` section", "a2c.serve.config:ServerOptions", "The server's own limits."),
)


def _load(target: str) -> Any:
    import importlib

    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _cell(text: object) -> str:
    """Text for one table cell: one line, `|` escaped, and `<`/`>` outside code spans escaped, so that
    `runs/<name>` is not read as an HTML tag and dropped."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
                   for part in parts).replace("|", "\\|")


# ---------------------------------------------------------------- CLI


def cli_commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(`a2c run`, its parser) for the top level and every subcommand, depth first."""
    from a2c.cli import build_parser

    def walk(prog: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        yield prog, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if sub.prog.split()[-1] == name:  # aliases point at the same parser
                        yield from walk(f"{prog} {name}", sub)

    yield from walk("a2c", build_parser())


def _documented(action: argparse.Action) -> bool:
    return not isinstance(action, argparse._HelpAction | argparse._SubParsersAction) \
        and action.help != argparse.SUPPRESS


def _argument_rows(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if not _documented(action):
            continue
        names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
        default = action.default
        quiet = default in (None, False, argparse.SUPPRESS) or not action.option_strings
        shown = "" if quiet else f"`{default}`"
        listed = ", ".join(map(str, action.choices)) if action.choices else ""
        help_text = action.help % {"default": default, "prog": parser.prog, "choices": listed} \
            if action.help else ""
        choices = f" One of: {listed}." if listed and "%(choices)" not in (action.help or "") else ""
        yield f"| {names} | {shown} | {_cell(help_text)}{_cell(choices)} |"


def cli_page() -> str:
    lines = ["# Command line", "",
             "Generated from `a2c.cli.build_parser()` when the site is built: every command, flag and "
             "default below is the one `a2c COMMAND --help` prints.", ""]
    for prog, parser in cli_commands():
        depth = min(prog.count(" ") + 1, 4)
        lines += [f"{'#' * (depth + 1)} `{prog}`", ""]
        if parser.description:
            lines += [parser.description.strip(), ""]
        usage = parser.format_usage().strip().removeprefix("usage: ")
        lines += ["```text", usage, "```", ""]
        rows = list(_argument_rows(parser))
        if rows:
            lines += ["| argument | default | meaning |", "|---|---|---|", *rows, ""]
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subs:
            helps = {c.dest: c.help for c in action._choices_actions}
            lines += ["| command | what it does |", "|---|---|"]
            lines += [f"| `{prog} {name}` | {_cell(helps.get(name) or '')} |" for name in action.choices
                      if action.choices[name].prog.split()[-1] == name]
            lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- configuration


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """field name → the comment on its line in the class body (how most a2c fields are explained)."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        pending: list[str] = []  # comment lines above a field explain it too
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                pending.append(stripped.lstrip("# "))
                continue
            match = re.match(r"\s+(\w+)\s*:", line)
            if match and match.group(1) in model.model_fields:
                comment = _trailing_comment(line)
                text = " ".join([*pending, comment]).strip()
                if text:
                    found[match.group(1)] = text
            pending = []
    return found


def _trailing_comment(line: str) -> str:
    try:
        for token in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if token.type == tokenize.COMMENT:
                return token.string.lstrip("# ")
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return ""


def _schema_type(prop: dict[str, Any], linked: frozenset[str] = frozenset()) -> str:
    """The type of a schema property in words; a model documented on the page (`linked`) links to it."""
    if "$ref" in prop:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})" if name in linked else name
    if "const" in prop:
        return repr(prop["const"])
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop or "oneOf" in prop:
        return " or ".join(_schema_type(p, linked) for p in prop.get("anyOf", prop.get("oneOf", [])))
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_schema_type(prop.get('items', {}), linked)}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map to {_schema_type(prop['additionalProperties'], linked)}"
    return str(kind)


_LIMITS = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<",
           "minLength": "length ≥", "minItems": "items ≥", "maxItems": "items ≤"}


def _limits(prop: dict[str, Any]) -> str:
    parts = [f"{sign} {prop[key]}" for key, sign in _LIMITS.items() if key in prop]
    for option in prop.get("anyOf", []):
        parts += [f"{sign} {option[key]}" for key, sign in _LIMITS.items() if key in option]
    return ", ".join(parts)


def config_models() -> Iterator[tuple[str, type[BaseModel], str]]:
    """(section title, model, what it is) for every model the configuration page documents: the listed ones
    and every model their fields hold, each once."""
    seen: set[type[BaseModel]] = set()

    def nested(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
        for field in model.model_fields.values():
            for arg in _annotation_models(field.annotation):
                if arg not in seen:
                    seen.add(arg)
                    yield arg
                    yield from nested(arg)

    from a2c.qa.scoring import SIMILARITIES
    from a2c.qa.selection import SELECTION_METHODS

    listed = [(title, _load(target), what) for title, target, what in CONFIG_MODELS]
    listed += [(f"Selection method `{name}`: its options", method.options,
                f"`selection: [{{name: {name}, ...}}]`") for name, method in SELECTION_METHODS.items()]
    listed += [(f"Accuracy similarity `{name}`: its options", similarity.options,
                "`accuracy.similarities` entries naming it") for name, similarity in SIMILARITIES.items()]
    for title, model, what in listed:
        if model in seen:  # already documented where another model holds it
            continue
        seen.add(model)
        yield title, model, what
        for inner in nested(model):
            yield f"`{inner.__name__}`", inner, _first_line(inner.__doc__)


def _annotation_models(annotation: Any) -> Iterator[type[BaseModel]]:
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in get_args(annotation):
        yield from _annotation_models(arg)


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _model_section(title: str, model: type[BaseModel], what: str, linked: frozenset[str]) -> list[str]:
    schema = model.model_json_schema(mode="validation")
    comments = field_comments(model)
    required = set(schema.get("required", []))
    where = f"`{model.__module__}.{model.__name__}`"
    lines = [f"## {title} {{#{model.__name__.lower()}}}", "", f"{where}. {_cell(what)}", ""]
    doc = _first_line(model.__doc__)
    if doc and doc != what:
        lines += [doc, ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        key = field.alias or name
        prop = schema.get("properties", {}).get(key, {})
        default = ("required" if key in required else f"`{prop['default']!r}`" if "default" in prop
                   else "its own defaults")
        limits = _limits(prop)
        held = next(_annotation_models(field.annotation), None)  # a section's meaning: its model's docstring
        meaning = field.description or comments.get(name) or (_first_line(held.__doc__) if held else "")
        kind = _schema_type(prop, linked) + (f" ({limits})" if limits else "")
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_cell(meaning)} |")
    return [*lines, ""]


def config_page() -> str:
    lines = ["# Configuration", "",
             "Generated from the pydantic models when the site is built: every key a config file takes, its "
             "type, limits and default come from the model's JSON schema, so this page is what the code "
             "validates. Unknown keys are refused (with a did-you-mean).", ""]
    sections = list(config_models())
    linked = frozenset(model.__name__ for _, model, _ in sections)
    for title, model, what in sections:
        lines += _model_section(title, model, what, linked)
    return "\n".join(lines)


# ---------------------------------------------------------------- registries


def registries() -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
    """(title, where, [(name, what it is)]) for every registry a config names components from."""
    from a2c.classification.perturbations import PERTURBATIONS
    from a2c.judges.base import JUDGES
    from a2c.llm.config import BACKENDS
    from a2c.metrics.calibration_maps import CALIBRATION_METHODS
    from a2c.metrics.set_metrics import SET_METRICS
    from a2c.metrics.uncertainty import UNCERTAINTY_MEASURES
    from a2c.qa.correctness import CORRECTNESS_RULES
    from a2c.qa.data import DATASETS
    from a2c.qa.scoring import SIMILARITIES
    from a2c.qa.selection import SELECTION_METHODS
    from a2c.qa.vote import VOTES
    from a2c.run.tasks import TASKS

    yield ("Tasks (`task:`)", "a2c.run.tasks.TASKS",
           [(n, f"config model `{m.__name__}`, stages in `{m.runs_at}`") for n, m in TASKS.items()])
    yield ("Generation backends (`generator.backend:`)",
           "a2c.llm.config.BACKENDS",
           [(n, _first_line(m.__doc__)) for n, m in BACKENDS.items()])
    yield ("Judges (`judges.names:`)", "a2c.judges.base.JUDGES",
           [(n, _first_line(j.__doc__)) for n, j in JUDGES.items()])
    yield ("Selection methods (`selection:`)", "a2c.qa.selection.SELECTION_METHODS",
           [(n, f"{m.label}: {_first_line(vars(m.options).get('__doc__'))}".rstrip(": "))
            for n, m in SELECTION_METHODS.items()])
    yield ("Ask-to-Choose votes (`ask_to_choose.vote:`)", "a2c.qa.vote.VOTES",
           [(n, v.description) for n, v in VOTES.items()])
    yield ("Uncertainty measures (report and `selection`)", "a2c.metrics.uncertainty.UNCERTAINTY_MEASURES",
           [(n, f"{m.label} ({m.kind}, from {m.statistic} matrices): "
                f"{_first_line(m.function.__doc__)}") for n, m in UNCERTAINTY_MEASURES.items()])
    yield ("Set metrics (summary, report, signal table, `a2c compare`)",
           "a2c.metrics.set_metrics.SET_METRICS",
           [(n, f"{m.label} (per {m.per}, {'higher' if m.higher_is_better else 'lower'} is better"
                f"{'' if m.signal else ', not ranked as a signal'})") for n, m in SET_METRICS.items()])
    yield ("Accuracy similarities (`accuracy.similarities:`)", "a2c.qa.scoring.SIMILARITIES",
           [(n, s.label) for n, s in SIMILARITIES.items()])
    yield ("Correctness rules (`a2c.qa.correctness.score_correctness`)",
           "a2c.qa.correctness.rule.CORRECTNESS_RULES",
           [(n, f"{r.label}: correct when {'>' if r.strict else '≥'} {r.default_threshold:g} by default"
                f"{'; needs incorrect references' if r.needs_incorrect else ''}")
            for n, r in CORRECTNESS_RULES.items()])
    yield ("Datasets (`dataset.name:`)", "a2c.qa.data.DATASETS",
           [(n, f"path: {d.path}; settings: {', '.join(sorted(d.settings)) or 'none'}")
            for n, d in DATASETS.items()])
    yield ("Calibration methods (`a2c calibrate --method`)",
           "a2c.metrics.calibration_maps.CALIBRATION_METHODS",
           [(n, _first_line(f.__doc__)) for n, f in CALIBRATION_METHODS.items()])
    yield ("Perturbations (classification suites)", "a2c.classification.perturbations.PERTURBATIONS",
           [(n, _first_line(getattr(p.build, "__doc__", None))) for n, p in PERTURBATIONS.items()])


def registries_page() -> str:
    from a2c.common.registry import Registry, resolve

    lines = ["# Registries", "",
             "Generated from the registries when the site is built: the names a config may use, and what "
             "each one is (from its docstring). Each registry also takes the names that installed "
             "plug-ins declare in its entry-point group ([Plug-ins](../how-to/plugins.md)); those installed "
             "where the site was built are listed with their distribution.", ""]
    for title, where, entries in registries():
        module, _, attr = where.rpartition(".")
        registry: Registry[Any] = resolve(f"{module}:{attr}", Registry)
        lines += [f"## {title}", "", f"`{where}` · plug-ins: entry-point group `{registry.group}`", "",
                  "| name | what it is |", "|---|---|"]
        for name, what in entries:
            plugin = registry.plugin_of(name)
            origin = f" (plug-in from `{plugin.distribution}`)" if plugin else ""
            lines.append(f"| `{name}` | {_cell(what)}{origin} |")
        lines.append("")
    return "\n".join(lines)


PAGES = {"reference/cli.md": cli_page, "reference/config.md": config_page,
         "reference/registries.md": registries_page}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for path, write in PAGES.items():
        files.append(File.generated(config, path, content=write()))
    return files
