"""How far a maintainer walks to follow a call: rooms, moves and climbs of a real call through a2c's modules.

A call is traced (`sys.settrace`, a2c's frames only) and read as a walk through the house. The rooms are
the core modules it enters; a move is a call from one module into another (each caller → callee pair
counted once); a climb is a move onto a higher floor than the module the call came from: a lower module
calling back up (a callback, a lambda handed down), which the layering is meant to rule out.
Calls from the core into a task's wing go through the task's `TaskSpec` (its config model, stages, data,
summary and report) and are counted apart, as hooks, since each is one line of the task's spec and not a
detour; what the wing's own code then calls is the task's walk and is not followed.

The issue's first measure read the walk in reading order instead: each room entered, then the next one
entered, a return not followed. There a step to a higher floor ("back up") is also what happens after any
helper returns and its caller calls the next step one floor up (read a file, then validate), so it counts
more than calls going the wrong way; it is printed beside the climbs for comparison.

Floors, bottom to top, as `tests/test_architecture.py` layers the package: shared utilities, the machine
(cache, devices, hub, signals), the components (llm, judges, metrics, data, prompting, display), the
settings (config models and paths), the run machinery, the wings, the facade. `FLOORS` names both the
modules' current places and their places before the floor plan, so the same script measures either
checkout (`PYTHONPATH=<checkout> python benchmarks/walks.py`).

Two walks, each on its own fresh copy of a small run made on the scripted backend:
`pipeline.run_experiment(config file)` and `pipeline.report_run(run folder)`. Each is run once untraced
first so that imports (module bodies) are not counted; the traced call then starts in a fresh folder.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

# (floor, module prefixes): the first prefix that matches a module decides its floor. Inside the run
# machinery and the settings, a module is a step above the modules it imports (x.1, x.2, ...). Each floor
# lists the modules' paths before and after the floor plan (floor plan: old names kept), so the script
# measures a checkout of either.
FLOORS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (6, ("a2c.cli", "a2c.view", "a2c.serve", "a2c.inspect", "a2c.lmeval", "a2c.choose", "a2c.scoring",
         "a2c.__main__")),
    (5, ("a2c.qa", "a2c.classification")),
    (4.4, ("a2c.run.pipeline", "a2c.pipeline")),
    (4.3, ("a2c.run.open_run", "a2c.open_run", "a2c.run.config_file", "a2c.config_file")),
    (4.2, ("a2c.run.tasks", "a2c.tasks")),
    (4.1, ("a2c.run.stage", "a2c.stage")),
    (4, ("a2c.run", "a2c.store", "a2c.runfiles", "a2c.runlock")),
    (3.2, ("a2c.settings.config", "a2c.config")),
    (3.1, ("a2c.settings.config_paths", "a2c.config_paths")),
    (3, ("a2c.settings", "a2c.runpaths")),
    (2, ("a2c.llm", "a2c.judges", "a2c.metrics", "a2c.data", "a2c.prompting", "a2c.display",
         "a2c.paraphrase", "a2c.paraphrase_checks", "a2c.prompts", "a2c.reporting", "a2c.viewdata",
         "a2c.calibration_maps")),
    (1, ("a2c.system", "a2c.cache", "a2c.faults", "a2c.interrupts", "a2c.reaper", "a2c.devices", "a2c.hub")),
    (0, ("a2c.common", "a2c.errors", "a2c.registry", "a2c.components", "a2c.text", "a2c.wording",
         "a2c.redact", "a2c.seeds", "a2c.untrusted", "a2c.files", "a2c.resources")),
)
WINGS = 5


def floor(module: str) -> float:
    for level, prefixes in FLOORS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return level
    if module == "a2c":
        return 6
    raise KeyError(f"{module}: on no floor; add it to FLOORS")


@dataclass
class Walk:
    entry: str
    # each pair once, in the order first taken (dicts keep it)
    moves: dict[tuple[str, str], None] = field(default_factory=dict)  # caller's module → callee's (core)
    hooks: dict[tuple[str, str], None] = field(default_factory=dict)  # core → the task's wing
    reading: dict[tuple[str, str], None] = field(default_factory=dict)  # room entered → next room entered

    @property
    def rooms(self) -> set[str]:
        return {self.entry} | {m for move in self.moves for m in move}

    @property
    def climbs(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self.moves if floor(b) > floor(a)]

    @property
    def zigzags(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self.reading if floor(b) > floor(a)]


def _wing_on_stack(frame: FrameType | None) -> bool:
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("a2c.") and floor(name) == WINGS:
            return True
        frame = frame.f_back
    return False


def _caller(frame: FrameType | None) -> str | None:
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("a2c"):
            return name
        frame = frame.f_back
    return None


def trace(call: Callable[[], Any], entry: str) -> Walk:
    """The walk `call` takes through a2c's core (in this thread)."""
    walk = Walk(entry)
    here = [entry]

    def on_call(frame: FrameType, event: str, arg: Any) -> None:
        room = str(frame.f_globals.get("__name__", ""))
        if event != "call" or not room.startswith("a2c") or _wing_on_stack(frame.f_back):
            return
        caller = _caller(frame.f_back) or entry
        if floor(room) == WINGS:
            walk.hooks.setdefault((caller, room), None)
            return
        if caller != room:
            walk.moves.setdefault((caller, room), None)
        if room != here[0]:
            walk.reading.setdefault((here[0], room), None)
            here[0] = room

    sys.settrace(on_call)
    threading.settrace(on_call)  # type: ignore[arg-type]
    try:
        call()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return walk


# paths relative to the config's folder, so loading it resolves them (part of the walk)
CONFIG = """\
name: walk
dataset: {name: file, path: data/q.jsonl, columns: {id: qid, question: prompt}}
generator: {backend: scripted, model: 'scripted:1|2|Which one?', cache: cache/requests.sqlite}
judges: [exact, rouge1]
accuracy: {similarities: [rouge1]}
"""
QUESTIONS = ('{"qid": "a", "prompt": "What is the capital of France?"}\n'
             '{"qid": "b", "prompt": "Why is the sky blue?"}\n')


def walks(root: Path) -> dict[str, Walk]:
    # the runner where the floor plan put it, else at the root (a checkout from before the plan)
    name = "a2c.run.pipeline" if importlib.util.find_spec("a2c.run") else "a2c.pipeline"
    pipeline = importlib.import_module(name)
    config = root / "walk.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    (root / "data").mkdir()
    (root / "data" / "q.jsonl").write_text(QUESTIONS, encoding="utf-8")
    pipeline.run_experiment(config, run_dir=root / "warm", progress=False)  # imports, fills the cache
    run = trace(lambda: pipeline.run_experiment(config, run_dir=root / "traced", progress=False),
                name)
    shutil.copytree(root / "traced", root / "report")
    pipeline.report_run(root / "warm")  # imports what the report alone needs
    report = trace(lambda: pipeline.report_run(root / "report"), name)
    return {"pipeline.run_experiment(config)": run, "pipeline.report_run(run_dir)": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", action="store_true", help="list every move, climbs marked")
    args = parser.parse_args()
    import a2c

    print(f"a2c from {Path(a2c.__file__).parent}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, walk in walks(Path(tmp)).items():
            print(f"{name}: {len(walk.rooms)} rooms, {len(walk.moves)} moves, {len(walk.climbs)} climbs; "
                  f"{len(walk.hooks)} hooks into the wing; reading order: {len(walk.reading)} steps, "
                  f"{len(walk.zigzags)} back up")
            for a, b in walk.climbs:
                print(f"  climb {a} ({floor(a)}) -> {b} ({floor(b)})")
            if args.moves:
                for a, b in [*walk.moves, *walk.hooks]:
                    mark = " (climb)" if (a, b) in walk.climbs else " (hook)" if (a, b) in walk.hooks else ""
                    print(f"    {a} -> {b}{mark}")
                for a, b in walk.zigzags:
                    print(f"    back up in reading order: {a} ({floor(a)}) -> {b} ({floor(b)})")


if __name__ == "__main__":
    main()
