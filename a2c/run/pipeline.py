"""The experiment runner: a task's stage graph (`a2c.run.tasks`) over its dataset, into a run folder,
resumable.

A run folder belongs to one experiment `name`. Running a config into it again re-runs exactly the stages
whose config slice or inputs changed (`a2c.run.stage`) and reuses the rest; a folder of another experiment,
or a non-empty one holding no a2c run, is refused unless `force`. Inside a stage that runs again, the
request cache serves every generation that had finished, so an interrupted run repeats no model call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from a2c.common.errors import A2CError
from a2c.run.config_file import load_config
from a2c.run.open_run import CONFIG_FILE, RUN_FILE, RunFolderError, stored_run
from a2c.run.runfiles import Row, RunFile, RunFileError
from a2c.run.runlock import LOCK_FILE, hold_run_folder
from a2c.run.stage import (
    GENERATION_COUNTS,
    RunContext,
    Stage,
    StageStats,
    decide,
    record_marker,
    run_stage,
    run_stages,
)
from a2c.run.store import RunFolder, streamed_name
from a2c.run.tasks import TASKS, TaskSpec, task_named, task_of
from a2c.settings.config import RunConfig, check_model_names, dump_config
from a2c.system.heap import frozen_heap

TIMINGS = RunFile("timings.json")  # wall time and per-stage counts of the last `a2c run`


MARKERS = "stages"  # the folder of stage markers
VIEW_FILE = "report.html"  # `a2c view`/`a2c report` write it for people; a2c never reads it
CALIBRATION_FILE = "calibration.json"  # `a2c calibrate` writes it by default; the run never reads it


def _written_by_a2c(folder: RunFolder) -> set[str]:
    """The top-level files an a2c run writes into its folder: its own files, every file any task's stages
    write, and whatever the folder's markers say their stages wrote."""
    names = {RUN_FILE, CONFIG_FILE, TIMINGS.name, LOCK_FILE, VIEW_FILE, CALIBRATION_FILE}
    for name in TASKS.names():
        names |= {file.name for stage in task_named(name).stages for file in stage.writes}
    markers = folder.path / MARKERS
    for marker in sorted(markers.glob("*.json")) if markers.is_dir() else ():
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8")).get("outputs", {})
        except (OSError, ValueError, AttributeError):
            continue  # a damaged marker names nothing; its stage's files are known by name anyway
        names |= {n for n in recorded if isinstance(n, str) and "/" not in n}
    return names


def read_back_files(run_dir: Path) -> set[str] | None:
    """The top-level files of the run folder `run_dir` that a2c reads again (all it writes there but the
    HTML view and the calibration), which no other output may replace; None when `run_dir` holds no run."""
    folder = RunFolder(run_dir)
    return _written_by_a2c(folder) - {VIEW_FILE, CALIBRATION_FILE} if folder.exists(RUN_FILE) else None


def _abandoned_temps(folder: RunFolder, ours: set[str]) -> list[Path]:
    """Half-written streams (`RunFolder.streams`) of one of a2c's own files, left by a run that was killed
    (kill -9, power loss) before it could rename or remove them. Only called with the folder's lock held,
    so no writer is alive."""
    return sorted(e for e in folder.path.iterdir()
                  if e.is_file() and not e.is_symlink() and streamed_name(e.name) in ours)


def _foreign_files(folder: RunFolder, ours: set[str]) -> list[str]:
    """Top-level files (and links) a2c did not write: their folder is no run folder. Subfolders other
    than `stages/` are never touched, so whatever they hold (a `.git`, notes, the cache) is left alone."""
    return sorted(e.name for e in folder.path.iterdir()
                  if (not e.is_dir() or e.is_symlink()) and e.name not in ours)


def _clear(folder: RunFolder) -> None:
    """Delete what a2c wrote (its files, the stage markers) and nothing else; the lock stays held."""
    ours = _written_by_a2c(folder) - {LOCK_FILE}
    for entry in folder.path.iterdir():
        if entry.name in ours and (not entry.is_dir() or entry.is_symlink()):
            entry.unlink()
    markers = folder.path / MARKERS
    if markers.is_dir() and not markers.is_symlink():
        for marker in markers.glob("*.json"):
            marker.unlink()
        if not any(markers.iterdir()):
            markers.rmdir()


@contextmanager
def claim_run_folder(config: RunConfig, run_dir: Path, *, force: bool) -> Iterator[RunFolder]:
    """Hold the folder for this experiment while the block runs: a run of the same `name` is continued
    stage by stage; one of another experiment is started over only with `force`. A folder holding files
    a2c did not write is refused, `force` or not: `force` deletes only what a2c wrote. The folder is locked
    (and proven writable) before anything in it is read or deleted, so `--force` never deletes the folder
    of a run that is still going."""
    with hold_run_folder(run_dir):
        folder = RunFolder(run_dir)
        ours = _written_by_a2c(folder)
        for temp in _abandoned_temps(folder, ours):
            temp.unlink()
        foreign = _foreign_files(folder, ours)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise RunFolderError(f"{run_dir} holds files a2c did not write ({shown}), so it is no run folder "
                                 "and a2c writes nothing into it, --force or not",
                                 hint="set `output` (or --output) to a folder of its own, e.g. runs/NAME")
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
                                         f"{config.name!r}; use --force to start it over (it deletes only "
                                         "what a2c wrote), or set `output` to another folder")
                _clear(folder)
        elif any(e.name != LOCK_FILE for e in run_dir.iterdir()) and not force:
            raise RunFolderError(f"{run_dir} is not empty and holds no a2c run; use --force (it deletes "
                                 "nothing a2c did not write) or another `output`")
        folder.write_json(RUN_FILE, {"name": config.name})
        folder.write_text(CONFIG_FILE, dump_config(config))
        yield folder


class PandasMissingError(A2CError):
    """`.to_pandas()` without pandas installed."""


@dataclass
class RunResult:
    """What `run_experiment` did (per-stage stats) and what it found: `summary` is the task's typed
    summary (`QASummary` for QA), `metrics` its per-item rows where the task has them (one `MetricRow`
    per question, source and phase for QA), read from the run folder when asked: a 100,000-question run
    returns without holding 400,000 rows."""

    folder: Path
    stages: dict[str, StageStats]
    seconds: float
    summary: BaseModel | None = None
    task: TaskSpec[Any] | None = None
    questions: dict[str, str] = field(default_factory=dict)  # id → question text

    def iter_metrics(self) -> Iterator[Row]:
        """The per-item rows one at a time, from the run folder's file (none for a task without them).

        Returns:
            An iterator over the task's metric rows (QA: `MetricRow`), read as it goes.
        """
        if self.task is None or self.task.metrics is None:
            return iter(())
        return RunFolder(self.folder).iter_rows(self.task.metrics)

    @property
    def metrics(self) -> list[Row]:
        """Every per-item row, read now (`iter_metrics` streams them)."""
        return list(self.iter_metrics())

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """The metric rows flattened to one dict each, one at a time (QA: `<judge>_cons_sem`,
        `<similarity>_acc`, ...; a question without references has no accuracy keys: absent, not zero).

        Returns:
            An iterator over one flat dict per metric row, the item's text under its id.
        """
        flatten = self.task.flatten if self.task is not None else None
        return (flatten(r, self.questions) for r in self.iter_metrics()) if flatten is not None else iter(())

    def records(self) -> list[dict[str, Any]]:
        """`iter_records` as a list.

        Returns:
            Every flattened metric row, in the file's order.
        """
        return list(self.iter_records())

    def to_pandas(self) -> Any:
        """The per-question metrics as a pandas DataFrame (needs pandas: `pip install 'a2c[data]'`).

        Returns:
            A `pandas.DataFrame`, one row per record.

        Raises:
            PandasMissingError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError:
            raise PandasMissingError("RunResult.to_pandas() needs pandas (pip install 'a2c[data]'); "
                                     "RunResult.records() gives the same rows as dicts") from None
        return pd.DataFrame(self.iter_records())

    def totals(self) -> StageStats:
        """The run's counts over its stages, for the summary table's total line.

        Returns:
            The wall time of the whole call and the sums of the stages' model calls, cache hits, tokens, cut
            prompts and judge pairs (stages done earlier left out).
        """
        total = StageStats(seconds=self.seconds)
        for s in self.stages.values():
            if not s.skipped:
                for name in (*GENERATION_COUNTS, "judge_pairs_scored", "judge_pairs_cached"):
                    setattr(total, name, getattr(total, name) + getattr(s, name))
        return total

    def summary_table(self) -> str:
        """What each stage cost, as the plain-text table `a2c run` prints at the end.

        Returns:
            One line per stage and a total line: seconds, model calls, cache hits, tokens, cut prompts and
            judge pairs.
        """
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
    Returns per-stage wall time, calls, tokens, hits, the summary and, for QA, per-question typed rows.

    Args:
        config: the run's config, or the path of its YAML file (`task:` picks the task).
        run_dir: the run folder; None uses the config's `output` (`runs/<name>` by default).
        force: start over a folder holding a run of another experiment (only what a2c wrote is deleted).
        progress: whether to show progress bars.
        log: called with one line per stage (runs or reused, and why); None says nothing.

    Returns:
        The folder, each stage's stats, the task's summary and the items' texts.

    Raises:
        ConfigError: the config file is invalid, or it names a model that cannot be found.
        RunFolderError: the folder holds another experiment's run (without `force`) or files a2c did not
            write.
        RunFolderBusyError: another a2c process holds the folder.
    """
    started = time.perf_counter()
    if isinstance(config, str | Path):
        config = load_config(config)  # which checks the model names with the file's lines
    else:
        check_model_names(config)  # a misspelt model fails here, before the run folder is made
    task = task_of(config)
    with claim_run_folder(config, Path(run_dir or config.run_dir), force=force) as folder:
        ctx = task.make_context(config, folder, progress=progress)
        stages = run_stages(ctx, task.stages, log, around=frozen_heap)
        result = RunResult(folder.path, stages, time.perf_counter() - started, task.read_summary(folder),
                           task, ctx.item_texts())
        folder.write_json(TIMINGS.name, _timings(folder, stages, result.seconds))
    return result


def _timings(folder: RunFolder, stages: dict[str, StageStats], wall: float) -> dict[str, Any]:
    """timings.json: per stage the invocation that did its work (a reused stage keeps the seconds of the
    run that made its outputs, so a fully cached rerun does not erase the real run time), their total, and
    what this invocation took (`last_invocation`)."""
    try:
        previous = folder.read_json(TIMINGS.name).get("stages", {}) if folder.exists(TIMINGS.name) else {}
    except (RunFileError, AttributeError):
        previous = {}  # damaged or of an older shape: only this invocation's stages are known
    kept = {name: previous[name] if stats.skipped and isinstance(previous.get(name), dict) else asdict(stats)
            for name, stats in stages.items()}
    return {"seconds": sum(float(s.get("seconds", 0.0)) for s in kept.values()), "stages": kept,
            "last_invocation": {"seconds": wall, "ran": [n for n, s in stages.items() if not s.skipped]}}


def report_run(run_dir: Path, *, rescore: bool = True, human_labels: Path | None = None,
               progress: bool = False) -> str:
    """Redraw a finished run's report; with `rescore`, first recompute its metrics with the current code
    from the stored outputs (no generation, so released or older runs are rescored in seconds). Every
    stage the report builds on is checked first against the run's config and dataset (its key and its
    outputs' digests): a stale, missing or edited one is refused, never reported from. The folder is locked
    for all of it, and the report stage's marker is updated, so the next `a2c run` reuses the report."""
    # opened before the lock, which would create a file in a folder holding no run; a run rewriting the
    # folder meanwhile holds the lock (taking it fails), and one that ended meanwhile leaves stale stages
    run = stored_run(run_dir)
    folder, config, task, config_file = run.folder, run.config, run.task, run.config_file
    with hold_run_folder(Path(run_dir)):
        task.check_data(config)
        report = task.stages[-1]
        ctx = task.make_context(config, folder, progress=progress)
        built_on = task.stages[:task.stages.index(task.rescore[0] if rescore else report)]
        also = "" if rescore else f" (or `a2c report {run_dir}` when only the metrics are out of date)"
        _check_current(ctx, built_on, f"`a2c run {config_file} --output {run_dir}`{also}")
        if rescore:
            for stage in task.rescore:
                run_stage(ctx, stage, decide(ctx, stage))
        text = task.write_report(folder, human_labels)
        record_marker(ctx, report, decide(ctx, report), StageStats(why="written by a2c report"))
    return text


def _check_current(ctx: RunContext[Any], stages: Sequence[Stage[Any]], repair: str) -> None:
    """RunFolderError unless every enabled stage is finished and current: its marker's key matches the
    config and inputs now, and its outputs are there as it wrote them. `repair` is the command (in
    backticks) that makes them again."""
    unfinished = [s.name for s in stages if s.enabled(ctx.config) and s.marker_in(ctx.store) is None]
    if unfinished:
        raise RunFolderError(f"{ctx.store.where('')}: the run has not finished (stages not done: "
                             f"{', '.join(unfinished)})", hint=f"finish it: {repair}")
    stale = [(s.name, decision.why) for s in stages if s.enabled(ctx.config)
             and not (decision := decide(ctx, s)).reuse]
    if stale:
        listed = "; ".join(f"{name}: {why}" for name, why in stale[:3])
        more = f" (and {len(stale) - 3} more)" if len(stale) > 3 else ""
        raise RunFolderError(f"{ctx.store.where('')}: stage outputs are stale or changed — {listed}{more}",
                             hint=f"{repair} makes them again (the request cache serves every model call "
                             "made before)")


__all__ = ["CONFIG_FILE", "RUN_FILE", "TIMINGS", "RunFolder", "RunFolderError", "RunResult",
           "claim_run_folder", "report_run", "run_experiment"]
