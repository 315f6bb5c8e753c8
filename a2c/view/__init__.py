"""`a2c view`: a run folder (or several) as one self-contained HTML file that opens from disk.

For each run: the overview (its report.md, with the tables and plots the task's report draws, and every
field of its summary), the item list (filterable, sortable) and a page per item, both built by the
task's `view` entry (`a2c.run.tasks.TaskSpec.view`), so this package knows no task's files. Several runs of a
task that can compare them (`TaskSpec.compare`: QA's is the paper's Table 5 layout) are put side by side
first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from a2c.run.open_run import open_run
from a2c.run.store import RunFolder
from a2c.run.tasks import CompareError, Comparer, Comparison, OpenedRun, supporting
from a2c.view.html import RunPage, render_html
from a2c.view.overview import report_sections, summary_section

REPORT_FILE = "report.md"  # what every task's `write_report` writes
HTML_FILE = "report.html"  # `a2c report` writes it beside report.md


def run_page(run: OpenedRun, title: str) -> RunPage:
    """What the viewer shows of one open run."""
    store = run.folder
    notes = []
    overview = report_sections(store.read_text(REPORT_FILE), store) if store.exists(REPORT_FILE) else []
    if not overview:
        notes.append(f"This run has no {REPORT_FILE} yet: `a2c report {run.path}` draws it.")
    if run.data_problem:
        notes.append(f"The run's data could not be read here: {run.data_problem}")
    overview.append(summary_section(run.summary, run.task.summary.name))
    items = run.task.view(store, run.config, run.data) if run.task.view is not None else None
    subtitle = f"{run.task.name} run · model {run.config.generator.model} · folder {run.path.name}"
    return RunPage(title, subtitle, overview, items, tuple(notes))


def _titles(runs: Sequence[OpenedRun]) -> list[str]:
    """Each run's experiment name; runs of one name are told apart by their folder as given."""
    names = [run.config.name for run in runs]
    return [name if names.count(name) == 1 else f"{name} ({run.path})"
            for name, run in zip(names, runs, strict=True)]


def comparer_of(runs: Sequence[OpenedRun]) -> Comparer:
    """The comparison of the runs' task; a task that declares none, or runs of several tasks, are refused
    in one line naming the task."""
    if not runs:
        raise CompareError("give at least one run folder")
    task = runs[0].task
    for run in runs:
        if run.task.compare is None:
            raise CompareError(f"{run.path} is a {run.task.name} run: task {run.task.name!r} does not "
                               f"support a2c compare {supporting(lambda t: t.compare is not None)}")
        if run.task is not task:
            raise CompareError(f"{runs[0].path} is a {task.name} run and {run.path} a {run.task.name} run: "
                               "only runs of one task are compared")
    assert task.compare is not None
    return task.compare


def open_comparable(paths: Sequence[Path]) -> tuple[list[OpenedRun], Comparer]:
    """Open run folders to compare (their data is not read) and their task's comparison."""
    runs = [open_run(Path(p), data=False) for p in paths]
    return runs, comparer_of(runs)


def compare_runs(paths: Sequence[Path], *, labels: Sequence[str] | None = None, intersect: bool = False
                 ) -> Comparison:
    """Open run folders and compare them as their task does (`TaskSpec.compare`)."""
    runs, comparer = open_comparable(paths)
    return comparer.compare(runs, labels, intersect)


def build_view(paths: Sequence[Path], *, labels: Sequence[str] | None = None, intersect: bool = False
               ) -> str:
    """The HTML text of the view of one or several run folders (several QA runs: the comparison first)."""
    if not paths:
        raise CompareError("give at least one run folder")
    runs = [open_run(Path(p)) for p in paths]
    comparison = None
    if len(runs) > 1 and all(run.task is runs[0].task for run in runs) and runs[0].task.compare is not None:
        comparison = runs[0].task.compare.compare(runs, labels, intersect).sections()
    titles = _titles(runs)
    title = f"a2c · {titles[0]}" if len(runs) == 1 else f"a2c · {len(runs)} runs"
    return render_html(title, [run_page(run, t) for run, t in zip(runs, titles, strict=True)], comparison)


def view_file(out: Path) -> Path:
    """The file the view goes to when asked for `out`: `out/report.html` for a folder."""
    return out / HTML_FILE if out.is_dir() else out


def write_view(paths: Sequence[Path], out: Path, *, labels: Sequence[str] | None = None,
               intersect: bool = False) -> Path:
    """Write the view to `out` (`out/report.html` for a folder), in one step: a reader never sees half a
    file. Returns the file written."""
    out = view_file(out)
    text = build_view(paths, labels=labels, intersect=intersect)
    RunFolder(out.parent).write_text(out.name, text)
    return out


__all__ = ["HTML_FILE", "CompareError", "Comparison", "build_view", "compare_runs", "open_comparable",
           "view_file", "write_view"]
