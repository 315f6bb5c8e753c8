"""What every task's config shares, and how a config file's problems are reported.

A task's config model (QA's `ExperimentConfig`, classification's `ClassificationConfig`) derives from
`RunConfig`; `a2c.run.config_file` reads a config file into one, picking the model by the file's `task` key
(`a2c.run.tasks.TASKS`). Every validation problem is reported as `file:line: key: message`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from a2c.common.errors import A2CError
from a2c.common.files import node_line
from a2c.common.registry import Registry, UnknownNameError
from a2c.llm.config import AnyGeneratorConfig, TransformersConfig
from a2c.llm.model_names import check_model_name, in_process
from a2c.settings.key_hints import did_you_mean
from a2c.settings.runpaths import run_name, run_output
from a2c.system.hub import ModelNotFoundError

if TYPE_CHECKING:
    from a2c.settings.config_paths import PathKey


class ConfigError(A2CError, ValueError):
    """A config file that is missing, not YAML, or does not validate."""


def registered(registry: Registry[Any], name: str) -> str:
    """Registry lookup as a validation error, so the message gets the key and the file line."""
    try:
        registry.get(name)
    except UnknownNameError as exc:
        raise ValueError(str(exc)) from None
    return name


class StrictModel(BaseModel):
    """Unknown keys are errors and values are frozen: a typo never falls back to a default silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunConfig(StrictModel):
    """The settings every task's run has: its name and folder, the seed, the models, the batching."""

    # the config keys of the task that hold paths besides the core's (`a2c.settings.config_paths`)
    path_keys: ClassVar[tuple[PathKey, ...]] = ()
    # where the task's `TaskSpec` (its stages, report, view) is, "module:attr": imported when a run starts,
    # so reading a config imports no stage
    runs_at: ClassVar[str]

    task: str
    name: str = Field(min_length=1)
    seed: int = 0
    limit: int | None = Field(None, ge=1)  # the first N items of the dataset
    generator: AnyGeneratorConfig = Field(default_factory=TransformersConfig)  # also sets the cache file
    aux_generator: AnyGeneratorConfig | None = None  # the paraphrasing model; None = the main generator
    output: str | None = None  # run folder; default runs/<name>
    # items per generate call inside a stage: batches stay large, the progress bar and resume stay fine
    chunk_size: int = Field(64, ge=1)

    @field_validator("name")
    @classmethod
    def _inside_runs(cls, name: str) -> str:
        return run_name(name)

    @field_validator("output")
    @classmethod
    def _normal_output(cls, output: str | None) -> str | None:
        return None if output is None else run_output(output)

    @property
    def run_dir(self) -> Path:
        return Path(self.output) if self.output else Path("runs") / self.name


C = TypeVar("C", bound=RunConfig)


def _describe(error: dict[str, Any], root: yaml.Node | None, source: str, model: type[BaseModel]) -> str:
    # pydantic puts union-branch names (e.g. 'str', 'TechniqueConfig') into the path: keep real keys only
    loc = tuple(p for p in error["loc"] if isinstance(p, int) or (not p[:1].isupper() and p != "str"))
    line = node_line(root, loc)
    where = f"{source}:{line}" if line else source
    key = ".".join(str(p) for p in loc) or "(top level)"
    # an unknown key gets the closest keys valid at its place (the raw location keeps the union branch)
    message = ("unknown key" + did_you_mean(model, error["loc"]) if error["type"] == "extra_forbidden"
               else error["msg"])
    return f"{where}: {key}: {message}"


def validate_config(model: type[C], data: dict[str, Any], root: yaml.Node | None, source: str) -> C:
    """`data` validated by a task's config model, every problem as `file:line: key: message`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # a union (str | TechniqueConfig) reports one error per branch; keep the first per key path
        seen: dict[str, str] = {}
        for err in errors:
            described = _describe(dict(err), root, source, model)
            seen.setdefault(described.split(": ")[0] + str(err["loc"][:2]), described)
        raise ConfigError("invalid config: " + "; ".join(seen.values())) from None


GENERATOR_KEYS = ("generator", "aux_generator")  # the run's own generators, checked by `check_model_names`


def check_model_names(config: RunConfig, root: yaml.Node | None = None, source: str | None = None) -> None:
    """`ConfigError` (`file:line: generator.model: unknown model ...`, with the closest embedded names) for
    an in-process generator whose model nothing on this machine has and that is no hub id: a misspelt
    name fails with the config, before a run folder exists or a model loads (`a2c.llm.model_names`).

    Args:
        config: the validated config.
        root: the YAML node tree of the config file, for the line; None for a config built in Python.
        source: the config file's name, for the message.
    """
    for key in GENERATOR_KEYS:
        for generator in in_process([getattr(config, key)]):
            try:
                check_model_name(generator.model)
            except ModelNotFoundError as exc:
                line = node_line(root, (key, "model"))
                where = f"{source}:{line}: " if source and line else f"{source}: " if source else ""
                raise ConfigError(f"{where}{key}.model: {exc}") from None


def dump_config(config: RunConfig) -> str:
    """The resolved config (defaults filled in) as YAML, written into every run folder."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
