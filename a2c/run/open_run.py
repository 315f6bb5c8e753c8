"""Opening a run folder: the one way `a2c report`, `a2c view`, `a2c compare`, `a2c calibrate` and the Python
API (`report_run`) read a run that was made. A missing folder, a folder holding no run, or
(where a finished run is needed) an unfinished one is one `RunFolderError` line saying what to do.

`stored_run` reads the folder's stored config and its task; `open_run` adds the typed summary and the
run's data where it can still be read (a moved data file or an unreachable hub leaves it out, with the
reason, instead of failing the whole view)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2c.common.errors import A2CError
from a2c.run.config_file import parse_stored_config
from a2c.run.store import RunFolder
from a2c.run.tasks import OpenedRun, TaskSpec, task_of
from a2c.settings.config import RunConfig

RUN_FILE = "run.json"  # marks an a2c run folder and names its experiment
CONFIG_FILE = "config.yaml"  # the resolved config of the last `a2c run`


class RunFolderError(A2CError):
    """The run folder holds another experiment or no a2c run (rerun with --force), or an unfinished one."""


@dataclass(frozen=True)
class StoredRun:
    """The run a folder holds, as it was configured: the folder, its stored config and the config's task."""

    folder: RunFolder
    config: RunConfig
    task: TaskSpec[Any]

    @property
    def config_file(self) -> Path:
        return self.folder.file(CONFIG_FILE)


def stored_run(path: Path) -> StoredRun:
    """The run in the folder `path`: its stored config (whose paths were resolved when it was written, so
    they are read as they are) and its task."""
    path = Path(path)
    if not path.is_dir():
        raise RunFolderError(f"run folder not found: {path}")
    folder = RunFolder(path)
    if not folder.exists(CONFIG_FILE):
        raise RunFolderError(f"{path} holds no a2c run ({CONFIG_FILE} is missing); run `a2c run` first")
    config = parse_stored_config(folder.read_text(CONFIG_FILE), folder.where(CONFIG_FILE))
    return StoredRun(folder, config, task_of(config))


def open_run(path: Path, *, data: bool = True) -> OpenedRun:
    """A finished run folder (`stored_run`) with its summary, and its data unless `data` is False."""
    run = stored_run(path)
    folder, config, task = run.folder, run.config, run.task
    if not folder.exists(task.summary.name):
        raise RunFolderError(f"{path}: the run has not finished (no {task.summary.name})",
                             hint=f"finish it: a2c run {folder.where(CONFIG_FILE)} --output {path}")
    summary = task.read_summary(folder)
    loaded, problem = None, None
    if data:
        try:
            loaded = task.load_data(config)
        except A2CError as exc:
            problem = str(exc)
    return OpenedRun(folder, config, task, summary, loaded, problem)
