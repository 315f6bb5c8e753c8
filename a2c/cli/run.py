"""`a2c run CONFIG.yaml`: run, resume or update an experiment; says per stage whether it runs and why, and
prints the per-stage summary at the end."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2c.llm import GeneratorConfig
    from a2c.settings.config import RunConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run (or resume) an experiment config into its run folder",
        description="Run an experiment config (YAML) through its stages: for QA, paraphrases and "
        "temperature samples of every question, their answers, the judges' agreement matrices, "
        "Ask-to-Choose and the judges again, the metrics and report.md, all in the run folder. A rerun "
        "reuses every stage whose settings and inputs are unchanged, so an interrupted run resumes and a "
        "changed config re-runs only what it affects; each line says whether a stage runs and why. "
        "Relative paths in the config are read from its folder.")
    parser.add_argument("config", type=Path, help="experiment config (YAML)")
    parser.add_argument("--output", type=Path,
                        help="run folder (default: the config's `output`, else runs/NAME)")
    parser.add_argument("--limit", type=int, help="only the first N questions (overrides the config)")
    parser.add_argument("--dataset-path", type=Path, metavar="FILE",
                        help="read the config's dataset from this local file (overrides dataset.path; "
                        "e.g. a TruthfulQA.csv where the config reads the benchmark from the hub)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="put a setting over the config's before it is validated (repeatable): a dotted "
                        "key and a YAML value, e.g. --set ask_to_choose.option_order=shuffled --set "
                        "generator.batch_size=64; the run folder's config.yaml holds the result")
    parser.add_argument("--force", action="store_true",
                        help="start over when the run folder holds a run of another experiment (name), "
                        "or use a non-empty folder that holds no a2c run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--quiet", action="store_true",
                        help="do not print the result table at the end (the run folder has it in report.md)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the request/judge cache (every model call runs; an "
                        "interrupted stage then restarts from its beginning)")
    parser.set_defaults(handler=_run)


def apply_overrides(config: RunConfig, *, limit: int | None, no_cache: bool,
                    dataset_path: Path | None = None) -> RunConfig:
    """The config a run uses once the command-line flags are applied on top of the file."""
    from a2c.settings.config import ConfigError

    if dataset_path is not None:
        config = with_dataset_path(config, dataset_path)
    update: dict[str, object] = {}
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {limit}")
        update["limit"] = limit
    if no_cache:
        update["generator"] = config.generator.model_copy(update={"cache": None})
        if config.aux_generator is not None:
            update["aux_generator"] = config.aux_generator.model_copy(update={"cache": None})
    return config.model_copy(update=update)


def with_dataset_path(config: RunConfig, path: Path) -> RunConfig:
    """`--dataset-path`: the config's dataset read from a local file, validated and read through as the
    config's own `dataset.path` would be (relative to the working folder, as every command-line path)."""
    from pydantic import BaseModel, ValidationError

    from a2c.run.tasks import task_of
    from a2c.settings.config import ConfigError

    dataset = getattr(config, "dataset", None)
    if not isinstance(dataset, BaseModel) or "path" not in type(dataset).model_fields:
        raise ConfigError(f"--dataset-path: a {config.task} config's dataset takes no path")
    if not path.exists():  # a folder, device or FIFO is refused by the data file's reader, naming its kind
        raise ConfigError(f"--dataset-path: no such file: {path.resolve()}")
    try:
        local = type(dataset).model_validate({**dataset.model_dump(), "path": str(path.resolve())})
    except ValidationError as exc:
        raise ConfigError(f"--dataset-path: {exc.errors()[0]['msg']}") from None
    updated = config.model_copy(update={"dataset": local})
    task_of(updated).check_data(updated)
    return updated


def served_generators(config: RunConfig) -> list[GeneratorConfig]:
    """Every generator a run uses: `generator`, `aux_generator` and an llm judge's own `generator:`."""
    from a2c.judges.presets import validate_options
    from a2c.llm import GeneratorConfig

    found = [config.generator, config.aux_generator]
    for judge in getattr(config, "judges", ()):
        found.append(getattr(validate_options(judge.name, judge.options), "generator", None))
    return [g for g in found if isinstance(g, GeneratorConfig)]


def batch_sizes(config: RunConfig) -> dict[str, int]:
    """The batch sizes of the run's in-process generators, by config key: what to lower when a GPU runs out
    of memory."""
    from a2c.llm.config import InProcessConfig

    return {f"{key}.batch_size": generator.batch_size
            for key, generator in (("generator", config.generator), ("aux_generator", config.aux_generator))
            if isinstance(generator, InProcessConfig)}


def _run(args: argparse.Namespace) -> int:
    from a2c.run.config_file import load_config
    from a2c.run.tasks import task_of
    from a2c.system.progress import generation_progress, status

    with generation_progress("generate", enabled=not args.no_progress):  # a bar per generate call
        with status("preparing the run (config, libraries, servers, models)"):  # seconds on a busy CPU
            # the config first: a mistake in it is reported before the pipeline's libraries load
            config = apply_overrides(load_config(args.config, overrides=args.settings), limit=args.limit,
                                     no_cache=args.no_cache, dataset_path=args.dataset_path)
            from a2c.llm.model_names import check_generators
            from a2c.llm.server import check_servers
            from a2c.run.pipeline import run_experiment
            from a2c.settings.runpaths import run_output
            from a2c.system.faults import gpu_memory_fault

            check_servers(served_generators(config))  # a server that is down fails now, not after retries
            # so does a misspelt model of an llm judge, and a hub id on no disk while the hub is out or silent
            check_generators(served_generators(config))
            check_models = task_of(config).check_models
            if check_models is not None:
                check_models(config)  # so does a judge or similarity model that is nowhere to be had
        output = None if args.output is None else run_output(str(args.output))  # as `output:` is normalised
        try:
            result = run_experiment(config, run_dir=output, force=args.force, progress=not args.no_progress,
                                    log=print)
        except RuntimeError as exc:
            fault = gpu_memory_fault(exc, batch_sizes(config))
            if fault is None:
                raise
            raise fault from exc
    print(result.summary_table())
    headline = result.task.headline if result.task is not None else None
    if headline is not None and result.summary is not None and not args.quiet:
        print("\n" + headline(result.summary))
    print(f"\nrun folder: {result.folder}\nreport: {result.folder / 'report.md'}")
    return 0
