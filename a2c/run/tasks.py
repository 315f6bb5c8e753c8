"""The task registry: what a config's `task` runs, and how a config file becomes a task's config.

A task (a wing: QA, classification) registers one `TaskSpec`: its config model, how its data is read through
at load, its stages and their context, the summary model its metrics stage writes, the stages `a2c report`
re-runs and how its report is drawn, and what else it supports: a view (`a2c view`), a comparison of runs
(`a2c compare`), serving (`a2c serve`); its config model declares the keys that hold paths
(`RunConfig.path_keys`). `a2c run`, `a2c report`, `a2c.run_experiment`, config loading (`a2c.run.config_file`)
and those commands all ask it, so the core names no task. The registry holds each task's config model by
the task's name, lazily (`"module:attr"`): reading a config imports only its own task's config, and the model
says where its `TaskSpec` is (`RunConfig.runs_at`), imported when a run needs the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from a2c.common.errors import A2CError
from a2c.common.registry import Registry, resolve
from a2c.settings.config import RunConfig

if TYPE_CHECKING:  # a config error is reported before stages, stores and views (and numpy) are imported
    from pydantic import BaseModel

    from a2c.display.viewdata import ItemView, Section
    from a2c.run.runfiles import RowsFile, RunFile
    from a2c.run.stage import RunContext, Stage
    from a2c.run.store import RunFolder, Store

C = TypeVar("C", bound=RunConfig)
DEFAULT_TASK = "qa"  # the paper's pipeline, when a config names no task


@dataclass(frozen=True)
class TaskSpec(Generic[C]):
    """Everything the runner needs of a task."""

    name: str
    config: type[C]
    load_data: Callable[[C], Any]  # the config's dataset, every row checked
    # what `a2c.run.config_file.load_config` checks before anything runs: a local data file read through (a
    # hub dataset is fetched only when the run starts)
    check_data: Callable[[C], None]
    context: Callable[[C, Store, Any], RunContext[C]]  # (config, store, data) → the stages' context
    stages: tuple[Stage[Any], ...]
    rescore: tuple[Stage[Any], ...]  # re-run by `a2c report` from stored outputs (no generation)
    summary: RunFile
    read_summary: Callable[[Store], BaseModel]  # the typed summary (refuses an older one with a hint)
    write_report: Callable[[Store, Path | None], str]  # (store, human labels CSV) → report.md text
    metrics: RowsFile[Any] | None = None  # per-item metric rows, where the task has them
    # a metric row as one flat dict (`RunResult.records`, `to_pandas`); None: the task has no such rows
    flatten: Callable[[Any, dict[str, str]], dict[str, Any]] | None = None
    # what `a2c run` checks before the first stage besides the servers: every judge and similarity model
    # on disk or downloadable, so a missing one fails in seconds, not after the generation stages
    check_models: Callable[[C], None] | None = None
    # what `a2c run` prints when it ends: the result in a few lines (the summary → text)
    headline: Callable[[Any], str] | None = None
    # (store, config, its data or None where that cannot be read now) → the item list and item pages of
    # `a2c view`; None: the viewer shows the report only
    view: Callable[[Store, C, Any], ItemView] | None = None
    compare: Comparer | None = None  # how `a2c compare` puts its runs side by side; None: it cannot
    serves: bool = False  # whether `a2c serve` answers with this task

    def make_context(self, config: C, store: Store, *, progress: bool) -> RunContext[C]:
        ctx = self.context(config, store, self.load_data(config))
        ctx.progress = progress
        return ctx


@dataclass(frozen=True)
class OpenedRun:
    """A finished run folder as `a2c view` and `a2c compare` read it (`a2c.run.open_run.open_run`)."""

    folder: RunFolder
    config: RunConfig
    task: TaskSpec[Any]
    summary: BaseModel
    data: Any | None  # the task's data (`TaskSpec.load_data`); None where it cannot be read now
    data_problem: str | None  # why not

    @property
    def path(self) -> Path:
        return self.folder.path


class CompareError(A2CError):
    """Runs that cannot be put side by side: a task without a comparison, runs of different tasks or
    questions, labels that do not fit."""


class Comparison(Protocol):
    """Runs put side by side: as markdown (`a2c compare` prints it), as the viewer's first sections, and
    as the files `a2c compare -o` writes."""

    def markdown(self) -> str: ...

    def sections(self) -> list[Section]: ...

    def write(self, out: Path) -> list[Path]: ...


@dataclass(frozen=True)
class Comparer:
    """A task's comparison of its runs: `compare(runs, labels, intersect)`, and the names of the files
    `Comparison.write` writes (checked before anything is computed)."""

    compare: Callable[[Sequence[OpenedRun], Sequence[str] | None, bool], Comparison]
    files: tuple[str, ...]


# a config's `task:` → the task's config model, which declares the config keys that hold paths
# (`RunConfig.path_keys`) and where the task's `TaskSpec` is (`RunConfig.runs_at`)
TASKS: Registry[type[RunConfig]] = Registry("task", base=RunConfig, group="a2c.tasks")
TASKS.register_lazy("qa", "a2c.qa.config:ExperimentConfig")
TASKS.register_lazy("classification", "a2c.classification.config:ClassificationConfig")


def task_named(name: str) -> TaskSpec[Any]:
    """A registered task's spec (its stages and what it supports); `UnknownNameError` for another name."""
    spec: TaskSpec[Any] = resolve(TASKS.get(name).runs_at, TaskSpec, f"task {name!r}")
    return spec


def task_of(config: RunConfig) -> TaskSpec[Any]:
    return task_named(config.task)


def supporting(supports: Callable[[TaskSpec[Any]], bool]) -> str:
    """The tasks for which `supports` holds, for a refusal's one line: "(tasks that do: qa)"."""
    names = [name for name in TASKS.names() if supports(task_named(name))]
    return f"(tasks that do: {', '.join(names) or 'none'})"

