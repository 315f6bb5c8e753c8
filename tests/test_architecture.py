"""The package's import graph keeps its shape: no circle at any level, and every import runs down the floors.

Floors, top to bottom (`FLOORS`, drawn in docs/concepts/architecture.md): the facade (`a2c`, `a2c.choose`,
`a2c.scoring`, the CLI, the viewer, the server and the inspect_ai / lm-eval integrations), the wings (one
task each: the packages the task registry's entries live in, `a2c.qa` and `a2c.classification`), the run
machinery (`a2c.run`), the settings (`a2c.settings`), the components (llm, models, prompting,
judges, metrics, data, display), the machine (`a2c.system`) and the shared utilities (`a2c.common`).
An import never goes to a higher floor; a wing never imports another wing; the core names no wing
except where the task registry registers it. Every module is on a floor: a new one at the root of `a2c/`
must be given one.
Imports inside functions count (a function-level import must not dodge a circle), and so do imports
under `if TYPE_CHECKING:` (two modules that name each other's types are still read back and forth).
No circle either between the modules and sub-packages of any package (`a2c`, `a2c.qa`, ...).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "a2c"
FACADE = ("a2c.__main__", "a2c.choose", "a2c.scoring", "a2c.cli", "a2c.serve", "a2c.view", "a2c.inspect",
          "a2c.lmeval")
RUNNER = ("a2c.settings", "a2c.run")
COMPONENTS = ("a2c.llm", "a2c.models", "a2c.prompting", "a2c.judges", "a2c.metrics", "a2c.data",
              "a2c.display")
# bottom to top; the wings' floor is read from the task registry (`WINGS`), the facade's is `FACADE`; the
# old paths of the documented API (deprecation aliases, one release) import nothing
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shared utilities", ("a2c.common",)),
    ("the machine", ("a2c.system", "a2c.resources")),
    ("components", COMPONENTS),
    ("settings", ("a2c.settings",)),
    ("run machinery", ("a2c.run",)),
)
MOVED_ALIASES = ("a2c.pipeline", "a2c.registry")
# a2c.data's names of 0.1 resolve into the wing with a DeprecationWarning (PEP 562): the one way from the
# core into a wing, gone with those aliases
DEPRECATED_ALIASES = {("a2c.data", "a2c.qa.data")}


def _source(module: str) -> Path:
    return PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")


def _registered_wings() -> tuple[str, ...]:
    """The packages of the task registry's entries (`TASKS.register_lazy("qa", "a2c.qa.config:...")`)."""
    tree = ast.parse(_source("a2c.run.tasks").read_text(encoding="utf-8"))
    targets = [node.args[1].value for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "register_lazy" and isinstance(node.args[1], ast.Constant)]
    return tuple(sorted({target.partition(":")[0].rsplit(".", 1)[0] for target in targets}))


WINGS = _registered_wings()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@cache  # read-only: every test shares one walk of the package
def import_graph() -> dict[str, set[str]]:
    """Module → the a2c modules it imports (a submodule when one is named, else the module), at run time or
    for annotations; the deprecated aliases' edges are left out."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t.split(".")[0] == "a2c" and t != name
                      and (name, t) not in DEPRECATED_ALIASES}
        graph[name] = edges
    return graph


def packages() -> list[str]:
    return sorted({_module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("*.py")})


def level_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The imports between the direct children (modules and sub-packages) of `package`, each sub-package
    standing for everything in it; the package's own `__init__` is no child of it."""
    def child(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return f"{package}.{module[len(package) + 1:].split('.')[0]}"

    out: dict[str, set[str]] = {}
    for source, targets in graph.items():
        if (s := child(source)) is None:
            continue
        out.setdefault(s, set()).update(t for target in targets if (t := child(target)) not in (None, s))
    return out


def _under(module: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if module == p or module.startswith(p + ".")), None)


def _facade(module: str) -> bool:
    return module == "a2c" or _under(module, FACADE) is not None


def forbidden(source: str, target: str) -> str | None:
    """Why an import from `source` to `target` runs the wrong way, or None."""
    if _facade(source):
        return None
    wing, target_wing = _under(source, WINGS), _under(target, WINGS)
    if _facade(target):
        return "imports the facade"
    if wing is None and target_wing is not None:
        return "core imports a wing"
    if wing is not None and target_wing is not None and wing != target_wing:
        return "a wing imports another wing"
    if floor(target) > floor(source):
        return f"imports a higher floor ({_floor_name(source)} -> {_floor_name(target)})"
    return None


def floor(module: str) -> int:
    """The module's floor, 0 at the bottom (`FLOORS`, then the wings, then the facade)."""
    if _facade(module) or module in MOVED_ALIASES:
        return len(FLOORS) + 1
    if _under(module, WINGS):
        return len(FLOORS)
    found = [level for level, (_, prefixes) in enumerate(FLOORS) if _under(module, prefixes)]
    if not found:
        raise KeyError(f"{module} is on no floor: put it in a package of FLOORS (or the facade)")
    return found[0]


def _floor_name(module: str) -> str:
    level = floor(module)
    return ("the facade" if level > len(FLOORS) else "a wing" if level == len(FLOORS)
            else FLOORS[level][0])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_circle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("package", packages())
def test_no_circle_between_the_parts_of_a_package(package):
    assert cycles(level_graph(import_graph(), package)) == []


def test_the_core_names_no_wing():
    """Not in an import, a lazy entry, a comment or a docstring: the core asks the task registry, whose
    entries are the only place a wing is named (one `register_lazy` line each in `TASKS`, naming the task's
    config model, which says where the rest of its task is)."""
    named = []
    for module, path in _modules().items():
        if _facade(module) or _under(module, WINGS) or module in {s for s, _ in DEPRECATED_ALIASES}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if module == "a2c.run.tasks" and re.match(r"TASKS\.register_lazy\(", line):
                continue
            named += [f"{module}:{number}: {wing}" for wing in WINGS
                      if re.search(rf"{re.escape(wing)}\b", line)]
    assert named == []


def test_the_wings_are_the_registered_tasks():
    assert WINGS == ("a2c.classification", "a2c.qa")


def test_every_import_runs_down_the_floors():
    wrong = sorted(f"{s} -> {t}: {why}" for s, targets in import_graph().items() for t in targets
                   if (why := forbidden(s, t)))
    assert wrong == []


def test_every_module_is_on_a_floor():
    """A new module at the root of a2c/ (or a new package) is given a floor, not left beside the others."""
    unplaced = []
    for module in _modules():
        try:
            floor(module)
        except KeyError:
            unplaced.append(module)
    assert unplaced == []


def test_the_root_holds_only_the_facade_and_the_floors():
    root = sorted(m for m in _modules() if m.count(".") == 1)
    allowed = {p for _, prefixes in FLOORS for p in prefixes} | set(FACADE) | set(WINGS) | set(MOVED_ALIASES)
    assert [m for m in root if m not in allowed] == []


def test_the_moved_aliases_import_nothing_but_the_lazy_mechanism():
    """The old paths of `a2c.pipeline` and `a2c.registry` resolve names on use (PEP 562, through
    `lazy_attributes`), with a warning."""
    assert {alias: import_graph()[alias] for alias in MOVED_ALIASES} == {
        alias: {"a2c.common.registry"} for alias in MOVED_ALIASES}


def test_the_runner_knows_no_task():
    graph = import_graph()
    for module in (m for m in graph if _under(m, RUNNER)):
        assert not any(_under(t, WINGS) for t in graph[module]), module


def test_a_circle_between_sub_packages_is_found():
    graph = {"a2c.x.a": {"a2c.y.b"}, "a2c.y.b": {"a2c.x.c"}, "a2c.x.c": set(), "a2c.x": {"a2c.x.a"}}
    assert cycles(graph) == []  # no circle between modules ...
    assert cycles(level_graph(graph, "a2c")) == [["a2c.x", "a2c.y"]]  # ... but one between packages
    assert level_graph(graph, "a2c.x") == {"a2c.x.a": set(), "a2c.x.c": set()}


@pytest.mark.parametrize(("source", "target", "why"), [
    ("a2c.run.stage", "a2c.qa.config", "core imports a wing"),
    ("a2c.qa.stages", "a2c.classification.rows", "a wing imports another wing"),
    ("a2c.judges.llm", "a2c.run.pipeline", "imports a higher floor (components -> run machinery)"),
    ("a2c.settings.config", "a2c.run.tasks", "imports a higher floor (settings -> run machinery)"),
    ("a2c.common.files", "a2c.system.cache", "imports a higher floor (shared utilities -> the machine)"),
    ("a2c.run.stage", "a2c.llm.base", None),
    ("a2c.metrics.signal", "a2c.cli.probe", "imports the facade"),
    ("a2c.qa.stages", "a2c.run.stage", None),
    ("a2c.choose", "a2c.qa.rank", None),
])
def test_the_rules_catch_what_they_should(source, target, why):
    assert forbidden(source, target) == why


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_stage_machinery_knows_no_generation_backend():
    """`a2c.run.stage` builds generators through `a2c.llm` and keys stages by what they read; what a backend's
    settings change in its outputs (`generator_slice`) is the generator config's business."""
    assert import_graph()["a2c.run.stage"] <= {  # progress: the bars and status lines, no backend
        "a2c.settings.config", "a2c.llm", "a2c.system.progress", "a2c.run.runfiles", "a2c.run.store"}
    text = _source("a2c.run.stage").read_text(encoding="utf-8").lower()
    backends = ("transformers", "vllm", "openai", "scripted", "inprocess", "in-process", "device")
    named = [name for name in backends if name in text]
    assert named == []


# -- one way to declare a component ------------------------------------------------------------------------

def _a2c_names(tree: ast.Module) -> set[str]:
    """The names a module binds to a2c's own code: imported from a2c, or classes it defines."""
    names = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "a2c":
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _dict_literal(value: ast.expr | None) -> ast.Dict | None:
    """The dict a module-level value spells: `{...}`, `dict({...})` or `MappingProxyType({...})`."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args \
            and value.func.id in {"dict", "MappingProxyType"}:
        return _dict_literal(value.args[0])
    return value if isinstance(value, ast.Dict) else None


def _component(value: ast.expr | None, ours: set[str]) -> bool:
    """An a2c class (`Judge`), or an instance built from one (`Measure(...)`)."""
    if isinstance(value, ast.Call):
        return _component(value.func, ours)
    return (isinstance(value, ast.Name) and value.id in ours and value.id[:1].isupper()
            and not value.id.isupper())


def hand_kept_registries(source: str) -> list[str]:
    """Module-level dicts from names to a2c classes or their instances, by name: registries kept by hand."""
    tree = ast.parse(source)
    ours = _a2c_names(tree)
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and (d := _dict_literal(node.value)) is not None \
                and any(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in d.keys) \
                and any(_component(v, ours) for v in d.values):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            found.append(ast.unparse(target))
    return found


# name → data, not code a config plugs in: model files shipped in packages, with aliases; the display labels
# of the two sources of variation (a closed Literal, not a point where components plug in)
CATALOGS = {"a2c.models.embedded.EMBEDDED_MODELS", "a2c.qa.rows.SOURCE_LABELS"}


def test_components_are_registered_only_through_a_registry():
    """Names map to components in `a2c.common.registry.Registry` instances only (label, options, lazy import
    and the base-class check in one place), never in a module-level dict kept beside the code."""
    found = [f"{module}.{name}" for module, path in _modules().items()
             for name in hand_kept_registries(path.read_text(encoding="utf-8"))]
    assert sorted(set(found) - CATALOGS) == []


def test_a_hand_kept_registry_is_caught():
    assert hand_kept_registries("from a2c.judges.base import Judge\nBY_NAME = {'x': Judge}\n") == ["BY_NAME"]
    assert hand_kept_registries("from a2c.metrics.uncertainty import Measure\n"
                                "M = MappingProxyType({'u': Measure(f, 'uncertainty', 'x')})\n") == ["M"]
    # another library's classes are not a2c components
    assert hand_kept_registries("from inspect_ai.model import ChatMessageUser\n"
                                "R = {'user': ChatMessageUser}\n") == []
    assert hand_kept_registries("from a2c.judges.base import Judge\nLIMITS = {'x': 3}\n") == []


def test_registries_are_declared_at_module_level_with_their_kind():
    """`NAME: Registry[...] = Registry(...)`: the reference pages find every registry by this form."""
    loose = []
    for module, path in _modules().items():
        if module == "a2c.common.registry":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and isinstance(node.value.func, ast.Name) and node.value.func.id == "Registry":
                loose.append(f"{module}:{node.lineno}")
    assert loose == []
