"""The experiment runner: the stage graph (`a2c.stages`) over a dataset, into a run folder, resumable.

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
from dataclasses import asdict, dataclass
from pathlib import Path

from a2c.config import ExperimentConfig, dump_config, load_config
from a2c.data import load_records
from a2c.errors import A2CError
from a2c.records import TIMINGS, Question, RunFileError
from a2c.runlock import LOCK_FILE, hold_run_folder
from a2c.stage import (
    GENERATION_COUNTS,
    RunContext,
    StageStats,
    damaged_outputs,
    decide,
    run_stage,
    run_stages,
)
from a2c.stages import JUDGES_AFTER, JUDGES_BEFORE, METRICS_STAGE, STAGES
from a2c.store import RunFolder

RUN_FILE = "run.json"  # marks an a2c run folder and names its experiment
CONFIG_FILE = "config.yaml"  # the resolved config of the last `a2c run`


class RunFolderError(A2CError):
    """The run folder holds another experiment or no a2c run (rerun with --force), or no judged run yet."""


def _clear(run_dir: Path) -> None:
    """Empty the folder but for its lock file, which the caller holds."""
    for entry in run_dir.iterdir():
        if entry.name != LOCK_FILE:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


@contextmanager
def claim_run_folder(config: ExperimentConfig, run_dir: Path, *, force: bool) -> Iterator[RunFolder]:
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


def experiment_context(config: ExperimentConfig, folder: RunFolder, *, progress: bool) -> RunContext:
    """The stages' context for a config's dataset in a run folder (generators built from the config)."""
    records = load_records(config.dataset.name, config.dataset.path, config.limit,
                           encoding=config.dataset.encoding)
    return RunContext(config, folder, [Question(r.id, r.question) for r in records],
                      {r.id: r for r in records}, progress=progress)


@dataclass
class RunResult:
    folder: Path
    stages: dict[str, StageStats]
    seconds: float

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


def run_experiment(config: ExperimentConfig, *, run_dir: Path | None = None, force: bool = False,
                   progress: bool = True, log: Callable[[str], None] | None = None) -> RunResult:
    """Run the stages of an experiment, reusing those whose slice and inputs are unchanged; `log` gets one
    line per stage saying whether it runs and why. Returns per-stage wall time, calls, tokens, hits."""
    started = time.perf_counter()
    with claim_run_folder(config, run_dir or config.run_dir, force=force) as folder:
        stages = run_stages(experiment_context(config, folder, progress=progress), STAGES, log)
        result = RunResult(folder.path, stages, time.perf_counter() - started)
        folder.write_json(TIMINGS.name, {"seconds": result.seconds,
                                         "stages": {k: asdict(v) for k, v in stages.items()}})
    return result


def rescore_run(run_dir: Path, *, progress: bool = False) -> None:
    """Recompute a finished run's metrics with the current scoring code, from its stored generations,
    choices and matrices: no generation, so released or older runs are rescored in seconds."""
    if not Path(run_dir).is_dir():
        raise RunFolderError(f"run folder not found: {run_dir}")
    folder = RunFolder(run_dir)
    if not folder.exists(JUDGES_BEFORE.marker) or not folder.exists(CONFIG_FILE):
        raise RunFolderError(f"{run_dir} holds no run whose answers are judged yet ({CONFIG_FILE}, "
                             f"{JUDGES_BEFORE.marker}); run `a2c run` first")
    with hold_run_folder(Path(run_dir)):
        config = load_config(folder.file(CONFIG_FILE))
        repair = f"a2c run {folder.file(CONFIG_FILE)} --output {run_dir}"
        if config.a2c.enabled and not folder.exists(JUDGES_AFTER.marker):
            raise RunFolderError(f"{run_dir}: the Ask-to-Choose stages have not finished",
                                 hint=f"finish the run: {repair}")
        ctx = experiment_context(config, folder, progress=progress)
        # the metrics stage remakes its own files; what it reads must be as its stages wrote it
        upstream = STAGES[:STAGES.index(METRICS_STAGE)]
        damaged = {stage.name: names for stage in upstream if (names := damaged_outputs(ctx, stage))}
        if damaged:
            listed = "; ".join(f"{stage}: {', '.join(names)}" for stage, names in damaged.items())
            raise RunFolderError(f"{run_dir}: files changed since their stage wrote them ({listed})",
                                 hint=f"`{repair}` makes them again (the request cache serves every model "
                                 "call made before)")
        run_stage(ctx, METRICS_STAGE, decide(ctx, METRICS_STAGE))


__all__ = ["RunFolder", "RunFolderError", "RunResult", "claim_run_folder", "experiment_context",
           "rescore_run", "run_experiment"]
