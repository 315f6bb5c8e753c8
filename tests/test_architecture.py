"""The package's import graph keeps its shape: no circle, and every import runs down the floors.

Floors, top to bottom: the facade (`a2c`, `a2c.choose`, `a2c.scoring`, the CLI, the server and the
inspect_ai / lm-eval integrations), the wings
(`a2c.qa`, `a2c.classification`: one task each), the runner (`a2c.config`, `a2c.stage`, `a2c.tasks`,
`a2c.pipeline`) and the components below it (llm, judges, metrics, data and the small shared modules).
A wing never imports another wing; the core never imports a wing or the facade; the components never
import the runner. Imports under `if TYPE_CHECKING:` are for annotations only and are left out; imports
inside functions count (a function-level import must not dodge a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "a2c"
FACADE = ("a2c.__main__", "a2c.choose", "a2c.scoring", "a2c.cli", "a2c.serve", "a2c.view", "a2c.inspect",
          "a2c.lmeval")
WINGS = ("a2c.qa", "a2c.classification")
RUNNER = ("a2c.config", "a2c.stage", "a2c.tasks", "a2c.pipeline")
COMPONENTS = ("a2c.llm", "a2c.judges", "a2c.metrics", "a2c.data")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def import_graph() -> dict[str, set[str]]:
    """Module → the a2c modules it imports at run time (a submodule when one is named, else the module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        edges: set[str] = set()
        for node in ast.walk(tree):
            if _type_checking_only(node, parents):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t.split(".")[0] == "a2c" and t != name}
        graph[name] = edges
    return graph


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
    if _under(source, COMPONENTS) and _under(target, RUNNER):
        return "a component imports the runner"
    return None


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


def test_every_import_runs_down_the_floors():
    wrong = sorted(f"{s} -> {t}: {why}" for s, targets in import_graph().items() for t in targets
                   if (why := forbidden(s, t)))
    assert wrong == []


def test_the_runner_knows_no_task():
    graph = import_graph()
    for module in RUNNER:
        assert not any(_under(t, WINGS) for t in graph[module]), module


@pytest.mark.parametrize(("source", "target", "why"), [
    ("a2c.stage", "a2c.qa.config", "core imports a wing"),
    ("a2c.qa.stages", "a2c.classification.rows", "a wing imports another wing"),
    ("a2c.judges.llm", "a2c.pipeline", "a component imports the runner"),
    ("a2c.metrics.signal", "a2c.cli.probe", "imports the facade"),
    ("a2c.qa.stages", "a2c.stage", None),
    ("a2c.choose", "a2c.qa.rank", None),
])
def test_the_rules_catch_what_they_should(source, target, why):
    assert forbidden(source, target) == why


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
