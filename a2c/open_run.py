"""Run folders as `a2c view` and `a2c compare` open them: the stored config and its task, the typed
summary, and the run's data where it can still be read (a moved data file or an unreachable hub leaves
it out, with the reason, instead of failing the whole view)."""

from __future__ import annotations

from pathlib import Path

from a2c.config_file import parse_config
from a2c.errors import A2CError
from a2c.pipeline import CONFIG_FILE, RunFolderError
from a2c.store import RunFolder
from a2c.tasks import OpenedRun, task_of


def open_run(path: Path, *, data: bool = True) -> OpenedRun:
    """A finished run folder, with its data unless `data` is False; a missing folder, a folder with no run
    or an unfinished run is a one-line `RunFolderError` saying what to do."""
    if not path.is_dir():
        raise RunFolderError(f"run folder not found: {path}")
    folder = RunFolder(path)
    if not folder.exists(CONFIG_FILE):
        raise RunFolderError(f"{path} holds no a2c run ({CONFIG_FILE} is missing); run `a2c run` first")
    config = parse_config(folder.read_text(CONFIG_FILE), folder.where(CONFIG_FILE))
    task = task_of(config)
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
