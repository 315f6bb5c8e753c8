"""What `a2c serve` is configured with: the answer settings every request starts from, the generator it
asks, and the server's own limits.

The answer settings are the run config's own sections (`seed`, `variation`, `judges`, `entropy_judge`,
`ask_to_choose`, whose earlier name `a2c` is still read with a warning), validated by the run config's
model, so a served answer and an `a2c run` answer are configured alike and a typo fails the same way. A
request may override some of them in its `a2c` object, within the limits (`a2c.serve.per_request`); the
generator, the judges' options and the limits are the operator's.
A file may name its `task` (the default, `qa`, is the one that declares serving: `TaskSpec.serves`); any
other is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from a2c.common.errors import A2CError
from a2c.common.files import parse_yaml, read_text
from a2c.common.registry import UnknownNameError
from a2c.common.untrusted import is_blank
from a2c.llm import GeneratorConfig, validate_generator
from a2c.qa.calibration import Calibration
from a2c.qa.config import RENAMED_SECTIONS, ExperimentConfig, renamed_keys
from a2c.qa.decide import settings_mismatch
from a2c.run.tasks import DEFAULT_TASK, supporting, task_named

# per request
SETTING_KEYS: tuple[str, ...] = ("seed", "variation", "judges", "entropy_judge", "ask_to_choose")
FILE_KEYS: tuple[str, ...] = ("task", "generator", "server", *SETTING_KEYS)


class SettingsError(A2CError, ValueError):
    """Answer settings that do not validate; `param` is the dotted key at fault (for a 400's `param`)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ServerOptions(BaseModel):
    """The server's limits and batching (the `server:` section of a serve config, or the flags)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8100, ge=0, le=65535)
    # gathering window: requests arriving within it of the first waiting one share one batched pass
    batch_window: float = Field(0.05, ge=0, allow_inf_nan=False)
    max_batch: int = Field(64, ge=1)  # questions per batched pass; a full batch goes without waiting
    max_pending: int = Field(256, ge=1)  # requests queued or being answered; more are refused with 429
    deadline: float = Field(600.0, gt=0, allow_inf_nan=False)  # seconds per request, queue included
    max_body_bytes: int = Field(1_048_576, ge=1)
    read_timeout: float = Field(10.0, gt=0, allow_inf_nan=False)  # seconds for a request's head, and its body
    log_requests: bool = False  # put the question of each request in the access log
    # what one request may cost (a2c.serve.per_request): answers per temperature, tokens per reply, and the
    # model calls its settings could make for its question
    max_samples: int = Field(16, ge=1)
    max_tokens: int = Field(1024, ge=1)
    max_calls_per_request: int = Field(256, ge=1)
    # other names a request's `model` may give for the served model (a client hard-wired to one); "*" takes
    # any name. Any other name is a 404 `model_not_found`
    model_aliases: tuple[str, ...] = ()

    @field_validator("model_aliases")
    @classmethod
    def _named(cls, aliases: tuple[str, ...]) -> tuple[str, ...]:
        if any(is_blank(a) for a in aliases):
            raise ValueError("an alias must be a name (not empty or only invisible characters)")
        return aliases


def describe(exc: ValidationError, prefix: str) -> tuple[str, str]:
    """A pydantic error as `(message, dotted key)`: unknown keys named as such, one problem per key."""
    messages: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        # union branches ('str', 'TechniqueConfig') are not keys
        loc = [str(p) for p in error["loc"] if isinstance(p, int) or (not p[:1].isupper() and p != "str")]
        key = ".".join([prefix, *loc]) if prefix else ".".join(loc) or "(top level)"
        messages.setdefault(key, "unknown key" if error["type"] == "extra_forbidden" else error["msg"])
    first = next(iter(messages))
    return "; ".join(f"{key}: {msg}" for key, msg in messages.items()), first


def answer_settings(values: dict[str, Any], where: str) -> ExperimentConfig:
    """Validate answer settings (keys of SETTING_KEYS) with the run config's model; `where` prefixes keys."""
    unknown = [k for k in values if k not in SETTING_KEYS]
    if unknown:
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise SettingsError(f"{key}: unknown key; settings are {', '.join(SETTING_KEYS)}", key)
    try:
        return ExperimentConfig.model_validate({"name": "ask-to-choose", **values})
    except ValidationError as exc:
        message, key = describe(exc, where)
        raise SettingsError(message, key) from None


def settings_json(config: ExperimentConfig) -> dict[str, Any]:
    """The answer settings of a config as JSON (what a response echoes and batches are grouped by)."""
    return config.model_dump(mode="json", include=set(SETTING_KEYS))


@dataclass(frozen=True)
class ServeConfig:
    generator: GeneratorConfig
    defaults: ExperimentConfig  # the answer settings a request starts from
    server: ServerOptions
    # answer or decline (`a2c serve --calibration`): the operator's, at start-up, never a request's
    calibration: Calibration | None = None
    decline_text: str | None = None  # answered instead of a declined answer


def with_calibration(config: ServeConfig, calibration: Calibration, decline_text: str | None,
                     source: str) -> ServeConfig:
    """The config with a calibration, refused in one line when it was made from answers other than the
    ones this server gives (another model, variation, A2C settings or judge)."""
    mismatch = settings_mismatch(calibration, config.generator.model, config.defaults)
    if mismatch is not None:
        raise ServeConfigError(f"{source}: the calibration was made from other answers than this server "
                               f"gives: {mismatch}")
    return replace(config, calibration=calibration, decline_text=decline_text)


class ServeConfigError(A2CError):
    """A serve config file that is missing, not YAML, or does not validate."""


def read_serve_file(path: Path) -> dict[str, Any]:
    """The sections of a serve config file, their keys checked (values are validated with the flags)."""
    text = read_text(path, ServeConfigError, what="serve config", hint="a serve config is YAML text")
    data, _ = parse_yaml(text, str(path), ServeConfigError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ServeConfigError(f"{path}: expected a mapping of sections ({', '.join(FILE_KEYS)})")
    try:
        data = renamed_keys(data, RENAMED_SECTIONS)
    except ValueError as exc:
        raise ServeConfigError(f"{path}: {exc}") from None
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown:
        raise ServeConfigError(f"{path}: {unknown[0]}: unknown key; sections are {', '.join(FILE_KEYS)}")
    _check_task(str(data.pop("task", DEFAULT_TASK)), path)
    return data


def _check_task(name: str, path: Path) -> None:
    """The file's task must declare serving (`TaskSpec.serves`)."""
    try:
        task = task_named(name)
    except UnknownNameError as exc:
        raise ServeConfigError(f"{path}: task: {exc}") from None
    if not task.serves:
        raise ServeConfigError(f"{path}: task: {name!r} does not support a2c serve "
                               f"{supporting(lambda t: t.serves)}")


def _section(file: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    value = file.get(name) or {}
    if not isinstance(value, dict):
        raise ServeConfigError(f"{source}: {name}: expected a mapping of settings")
    return value


def build_serve_config(file: dict[str, Any], generator: dict[str, Any], server: dict[str, Any],
                       source: str = "serve config") -> ServeConfig:
    """Validate the file's sections with the flags' values (`generator`, `server`) on top of them."""
    # a served model answers fresh by default: the request cache is on only when given
    sections = {"generator": {"cache": None, **_section(file, "generator", source), **generator},
                "server": {**_section(file, "server", source), **server}}
    built: dict[str, Any] = {}
    for name, validate in (("generator", validate_generator), ("server", ServerOptions.model_validate)):
        try:
            built[name] = validate(sections[name])
        except ValidationError as exc:
            raise ServeConfigError(f"{source}: {describe(exc, name)[0]}") from None
    try:
        defaults = answer_settings({k: v for k, v in file.items() if k in SETTING_KEYS}, "")
    except SettingsError as exc:
        raise ServeConfigError(f"{source}: {exc}") from None
    return ServeConfig(built["generator"], defaults, built["server"])
