"""The experiment runner: a task's stage graph (`a2c.tasks`) over its dataset, into a run folder, resumable.

A run folder belongs to one experiment `name`. Running a config into it again re-runs exactly the stages
whose config slice or inputs changed (`a2c.stage`) and reuses the rest; a folder of another experiment,
or a non-empty one holding no a2c run, is refused unless `force`. Inside a stage that runs again, the
request cache serves every generation that had finished, so an interrupted run repeats no model call.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from a2c.config import RunConfig, dump_config
from a2c.errors import A2CError
from a2c.runfiles import Row, RunFile, RunFileError
from a2c.runlock import LOCK_FILE, hold_run_folder
from a2c.stage import GENERATION_COUNTS, StageStats, damaged_outputs, decide, run_stage, run_stages
from a2c.store import RunFolder
from a2c.tasks import TaskSpec, load_config, task_of

RUN_FILE = "run.json"  # marks an a2c run folder and names its experiment
CONFIG_FILE = "config.yaml"  # the resolved config of the last `a2c run`
TIMINGS = RunFile("timings.json")  # wall time and per-stage counts of the last `a2c run`


class RunFolderError(A2CError):
    """The run folder holds another experiment or no a2c run (rerun with --force), or an unfinished one."""


def _clear(run_dir: Path) -> None:
    """Empty the folder but for its lock file, which the caller holds."""
    for entry in run_dir.iterdir():
        if entry.name != LOCK_FILE:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


@contextmanager
def claim_run_folder(config: RunConfig, run_dir: Path, *, force: bool) -> Iterator[RunFolder]:
    """Hold the folder for this experiment while the block runs: a run of the same `name` is continued
    stage by stage; one of another experiment is started over only with `force`, and a stray non-empty
    folder used only then. The folder is locked (and proven writable) before anything in it is read or
    deleted, so `--force` never deletes the folder of a run that is still going."""
    with hold_run_folder(run_dir):
        folder = RunFolder(run_dir)
        if folder.exists(RUN_FILE):
            try:
                previous = folder.read_json(RUN_FILE).get("name")
            except (RunFileError, AttributeError):
                previous = None
                if not force:
                    raise RunFolderError(f"{folder.file(RUN_FILE)} is damaged, so the folder's experiment "
                                         "is unknown", hint="use --force to start the run over (the "
                                         "request cache keeps every model call made)") from None
            if previous != config.name:
                if not force:
                    raise RunFolderError(f"{run_dir} holds a run of experiment {previous!r}, not "
                                         f"{config.name!r}; use --force to start it over, or set `output` "
                                         "to another folder")
                _clear(run_dir)
        elif any(e.name != LOCK_FILE for e in run_dir.iterdir()) and not force:
            raise RunFolderError(f"{run_dir} is not empty and holds no a2c run; use --force or another "
                                 "`output`")
        folder.write_json(RUN_FILE, {"name": config.name})
        folder.write_text(CONFIG_FILE, dump_config(config))
        yield folder


class PandasMissingError(A2CError):
    """`.to_pandas()` without pandas installed."""


@dataclass
class RunResult:
    """What `run_experiment` did (per-stage stats) and what it found: `summary` is the task's typed
    summary (`a2c.qa.summary.QASummary` for QA), `metrics` its per-item rows where the task has them (one
    `a2c.qa.rows.MetricRow` per question, source and phase for QA)."""

    folder: Path
    stages: dict[str, StageStats]
    seconds: float
    summary: BaseModel | None = None
    task: TaskSpec[Any] | None = None
    metrics: list[Row] = field(default_factory=list)
    questions: dict[str, str] = field(default_factory=dict)  # id → question text

    def records(self) -> list[dict[str, Any]]:
        """The metric rows flattened to one dict each (QA: `<judge>_cons_sem`, `<similarity>_acc`, ...; a
        question without references has no accuracy keys: absent, not zero)."""
        flatten = self.task.flatten if self.task is not None else None
        return [flatten(r, self.questions) for r in self.metrics] if flatten is not None else []

    def to_pandas(self) -> Any:
        """The per-question metrics as a pandas DataFrame (needs pandas: `pip install 'a2c[data]'`)."""
        try:
            import pandas as pd
        except ImportError:
            raise PandasMissingError("RunResult.to_pandas() needs pandas (pip install 'a2c[data]'); "
                                     "RunResult.records() gives the same rows as dicts") from None
        return pd.DataFrame(self.records())

    def totals(self) -> StageStats:
        total = StageStats(seconds=self.seconds)
        for s in self.stages.values():
            if not s.skipped:
                for name in (*GENERATION_COUNTS, "judge_pairs_scored", "judge_pairs_cached"):
                    setattr(total, name, getattr(total, name) + getattr(s, name))
        return total

    def summary_table(self) -> str:
        lines = [f"{'stage':<14}{'seconds':>9}{'model calls':>13}{'cache hits':>12}{'tokens':>10}"
                 f"{'cut prompts':>13}{'judge pairs':>13}{'pair hits':>11}"]
        rows = [*self.stages.items(), ("total", self.totals())]
        for name, s in rows:
            if s.skipped:
                lines.append(f"{name:<14}{'done earlier':>21}")
                continue
            lines.append(f"{name:<14}{s.seconds:>9.1f}{s.generated:>13}{s.cached:>12}"
                         f"{s.prompt_tokens + s.completion_tokens:>10}{s.truncated:>13}"
                         f"{s.judge_pairs_scored:>13}{s.judge_pairs_cached:>11}")
        return "\n".join(lines)


def run_experiment(config: RunConfig | str | Path, *, run_dir: str | Path | None = None, force: bool = False,
                   progress: bool = True, log: Callable[[str], None] | None = None) -> RunResult:
    """Run the stages of an experiment of any task (a config, or the path of its YAML file), reusing those
    whose slice and inputs are unchanged; `log` gets one line per stage saying whether it runs and why.
    Returns per-stage wall time, calls, tokens, hits, the summary and, for QA, per-question typed rows."""
    started = time.perf_counter()
    if isinstance(config, str | Path):
        config = load_config(config)
    task = task_of(config)
    with claim_run_folder(config, Path(run_dir or config.run_dir), force=force) as folder:
        ctx = task.make_context(config, folder, progress=progress)
        stages = run_stages(ctx, task.stages, log)
        rows = list(folder.read_rows(task.metrics)) if task.metrics else []
        result = RunResult(folder.path, stages, time.perf_counter() - started, task.read_summary(folder),
                           task, rows, ctx.item_texts())
        folder.write_json(TIMINGS.name, {"seconds": result.seconds,
                                         "stages": {k: asdict(v) for k, v in stages.items()}})
    return result


def rescore_run(run_dir: Path, *, progress: bool = False) -> TaskSpec[Any]:
    """Recompute a finished run's metrics with the current code, from its stored outputs: no generation,
    so released or older runs are rescored in seconds. Returns the run's task (to redraw its report)."""
    config_file = _stored_config_file(run_dir)  # checked before the lock, which would create a file
    folder = RunFolder(run_dir)
    with hold_run_folder(Path(run_dir)):
        config = load_config(config_file)
        task = task_of(config)
        repair = f"a2c run {config_file} --output {run_dir}"
        # what the rescored stages read must be finished, and as its stages wrote it
        upstream = task.stages[:task.stages.index(task.rescore[0])]
        unfinished = [s.name for s in upstream if s.enabled(config) and not folder.exists(s.marker)]
        if unfinished:
            raise RunFolderError(f"{run_dir}: the run has not finished (stages not done: "
                                 f"{', '.join(unfinished)})", hint=f"finish it: {repair}")
        ctx = task.make_context(config, folder, progress=progress)
        damaged = {stage.name: names for stage in upstream if (names := damaged_outputs(ctx, stage))}
        if damaged:
            listed = "; ".join(f"{stage}: {', '.join(names)}" for stage, names in damaged.items())
            raise RunFolderError(f"{run_dir}: files changed since their stage wrote them ({listed})",
                                 hint=f"`{repair}` makes them again (the request cache serves every model "
                                 "call made before)")
        for stage in task.rescore:
            run_stage(ctx, stage, decide(ctx, stage))
    return task


def run_task(run_dir: Path) -> TaskSpec[Any]:
    """The task of the run in a folder, from its config (for `a2c report --no-rescore`)."""
    return task_of(load_config(_stored_config_file(run_dir)))


def _stored_config_file(run_dir: Path) -> Path:
    """The resolved config a run folder holds, or `RunFolderError` when there is no folder or no run."""
    if not Path(run_dir).is_dir():
        raise RunFolderError(f"run folder not found: {run_dir}")
    folder = RunFolder(Path(run_dir))
    if not folder.exists(CONFIG_FILE):
        raise RunFolderError(f"{run_dir} holds no a2c run ({CONFIG_FILE} is missing); run `a2c run` first")
    return folder.file(CONFIG_FILE)


__all__ = ["TIMINGS", "RunFolder", "RunFolderError", "RunResult", "claim_run_folder", "rescore_run",
           "run_experiment", "run_task"]
