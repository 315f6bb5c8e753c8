"""Experiment configs: YAML validated by pydantic, with errors that name the key and the file line.

Unknown keys are errors (a typo must not silently fall back to a default). Names of datasets, judges and
paraphrase techniques are checked against their registries, so a bad name fails before any model loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from a2c.config_paths import resolve_config_paths
from a2c.data.columns import ColumnMap
from a2c.errors import A2CError
from a2c.files import DEFAULT_ENCODING, check_encoding, parse_yaml, read_text
from a2c.llm import GeneratorConfig
from a2c.registry import Registry, UnknownNameError

if TYPE_CHECKING:
    from a2c.classification.config import ClassificationConfig

# a config of any task: what `parse_config` and `load_config` return
TaskConfig: TypeAlias = "ExperimentConfig | ClassificationConfig"


class ConfigError(A2CError, ValueError):
    """A config file that is missing, not YAML, or does not validate."""


def _registered(registry: Registry[Any], name: str) -> str:
    """Registry lookup as a validation error, so the message gets the key and the file line."""
    try:
        registry.get(name)
    except UnknownNameError as exc:
        raise ValueError(str(exc)) from None
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetConfig(_Strict):
    """Which questions a run asks: `quickstart`, `truthfulqa`, or your own (`file`, `hf`) with a column map.

    Each dataset declares the settings it reads (`a2c.data.DATASETS`); one it does not read is an error
    here, so a misplaced `columns:` or `split:` never goes silently unused.
    """

    name: str = "quickstart"
    # a local file (TruthfulQA CSV; .jsonl/.csv/.parquet for `file`), relative to the config file's folder,
    # or the hub dataset's owner/name for `hf`; None = built in / TruthfulQA from the hub
    path: str | None = None
    encoding: str = DEFAULT_ENCODING  # of `path`; the default reads UTF-8 with or without a byte-order mark
    columns: ColumnMap | None = None  # record field → column name (`file`, `hf`)
    separator: str = Field(";", min_length=1)  # splits a list cell that is not a JSON list
    config: str | None = Field(None, min_length=1)  # hub dataset configuration (`hf`)
    split: str | None = Field(None, min_length=1)  # hub split (`hf`); None = the only one
    revision: str | None = Field(None, min_length=1)  # hub git revision (`hf`)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from a2c.data import DATASETS

        return _registered(DATASETS, name)

    @field_validator("encoding")
    @classmethod
    def _decodable(cls, encoding: str) -> str:
        return check_encoding(encoding)

    @model_validator(mode="after")
    def _settings_it_reads(self) -> DatasetConfig:
        from a2c.data import DATASETS, given_settings

        if self.name in DATASETS:
            DATASETS.get(self.name).check(self.name, given_settings(self.settings() | {"path": self.path}))
        return self

    def settings(self) -> dict[str, Any]:
        """The source settings besides name, path and encoding, as `a2c.data.load_records` takes them."""
        return {k: getattr(self, k) for k in ("columns", "separator", "config", "split", "revision")}

    def load(self, limit: int | None = None) -> list[Any]:
        """The dataset's `QARecord`s (the first `limit`)."""
        from a2c.data import load_records

        return load_records(self.name, self.path, limit, encoding=self.encoding, **self.settings())


class TechniqueConfig(_Strict):
    """A paraphrasing technique written out in the config (instead of a built-in name)."""

    name: str
    instruction: str
    example_question: str
    example_paraphrase: str


DEFAULT_TECHNIQUE_NAMES = ("synonyms", "word forms", "sentence structure", "conjunctions")


class VariationConfig(_Strict):
    techniques: list[str | TechniqueConfig] = Field(default_factory=lambda: list(DEFAULT_TECHNIQUE_NAMES),
                                                    min_length=1)
    # answers to paraphrased questions are nucleus samples, as in the paper; 0.6 and top_p 0.7 are the
    # authors' released settings (their 10-temperature grid is in experiments/truthfulqa-a2c-paper.yaml)
    # finite: inf passes these bounds (NaN the list's check) and was written into the JSONL records as `NaN`
    # or `Infinity`, which are not JSON
    paraphrase_temperature: float = Field(0.6, ge=0.0, allow_inf_nan=False)
    temperatures: list[FiniteFloat] = Field(default_factory=lambda: [0.25, 0.5, 0.75, 1.0], min_length=1)
    top_p: float = Field(0.7, gt=0.0, le=1.0, allow_inf_nan=False)
    samples: int = Field(1, ge=1)  # answers per temperature
    answer_field: Literal["short", "long"] = "short"  # which answer text the judges and metrics see
    # reply budgets: on a CPU the longest reply of a batch sets its time, so these drive the run time
    paraphrase_max_tokens: int = Field(64, ge=1)
    long_max_tokens: int = Field(96, ge=1)
    short_max_tokens: int = Field(16, ge=1)

    @field_validator("temperatures")
    @classmethod
    def _non_negative(cls, temps: list[float]) -> list[float]:
        bad = [t for t in temps if t < 0]
        if bad:
            raise ValueError(f"temperatures must be >= 0, got {bad}")
        return temps

    @field_validator("techniques")
    @classmethod
    def _known_techniques(cls, techniques: list[str | TechniqueConfig]) -> list[str | TechniqueConfig]:
        from a2c.variation import DEFAULT_TECHNIQUES

        known = {t.name for t in DEFAULT_TECHNIQUES}
        for t in techniques:
            if isinstance(t, str) and t not in known:
                raise ValueError(f"unknown technique {t!r}; built in: {sorted(known)} "
                                 "(or give name/instruction/example_question/example_paraphrase)")
        return techniques

    def resolved_techniques(self) -> list[Any]:
        from a2c.variation import DEFAULT_TECHNIQUES, Technique

        by_name = {t.name: t for t in DEFAULT_TECHNIQUES}
        return [by_name[t] if isinstance(t, str) else Technique(**t.model_dump()) for t in self.techniques]


class JudgeConfig(BaseModel):
    """A judge by name with its options inline, as in a judge preset file (`{name: pp, threshold: 0.8}`).

    The options (names and values) are checked by the judge's own `Options` model when the config loads;
    the inline values are kept as written (what the resolved config dumps), `options` gives them typed.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    _options: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from a2c.judges import JUDGES

        return _registered(JUDGES, name)

    @model_validator(mode="after")
    def _valid_options(self) -> JudgeConfig:
        from a2c.judges.presets import validate_options

        # its ValidationError is keyed by option, and pydantic nests that under this entry: judges.0.threshold
        self._options = validate_options(self.name, self.model_extra or {}).given()
        return self

    @property
    def options(self) -> dict[str, Any]:
        """The options given, typed; unset ones are left to the judge (or, for `cache`, to the run)."""
        return dict(self._options)


class SimilarityConfig(BaseModel):
    """An accuracy similarity by name with its options inline (`{name: rouge1, use_stemmer: true}`); a bare
    name (`rouge1`) is the same with no options, and is written back as a bare name, so the resolved
    config and the stage keys of a plain list stay as they were."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from a2c.scoring import SIMILARITIES

        return _registered(SIMILARITIES, name)

    @model_validator(mode="after")
    def _valid_options(self) -> SimilarityConfig:
        from a2c.scoring import similarity_options

        similarity_options(self.name, self.options)  # bad values: keyed by option under this entry
        return self

    @model_serializer(mode="wrap")
    def _bare_name(self, handler: Any) -> Any:
        return handler(self) if self.model_extra else self.name

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class AccuracyConfig(_Strict):
    # answer-vs-reference similarities (SPEC §4), each a name or {name, options}: rouge1 (R1-A), rouge2,
    # rougeL, bleu, bleurt, and embedding (the offline stand-in for BLEURT)
    similarities: list[SimilarityConfig] = Field(
        default_factory=lambda: [SimilarityConfig(name="rouge1"), SimilarityConfig(name="embedding")],
        min_length=1)

    @field_validator("similarities", mode="before")
    @classmethod
    def _expand(cls, similarities: Any) -> Any:
        """`[rouge1, bleu]` is short for `[{name: rouge1}, {name: bleu}]`."""
        if isinstance(similarities, list):
            return [{"name": s} if isinstance(s, str) else s for s in similarities]
        return similarities

    @field_validator("similarities")
    @classmethod
    def _distinct(cls, similarities: list[SimilarityConfig]) -> list[SimilarityConfig]:
        names = [s.name for s in similarities]
        if len(set(names)) != len(names):
            raise ValueError(f"similarities are listed twice: {names} (metrics are keyed by name)")
        return similarities


class A2CConfig(_Strict):
    enabled: bool = True
    # decoding of the paraphrase-slot rank prompts
    rank_temperature: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    max_tokens: int = Field(8, ge=1)
    # the rank prompt's last option, in the paper's Listing 1 wording. The wording moves accuracy: under
    # TruthfulQA's scoring "I have no comment." is a true reference, and "I don't know ..." shares its "I"
    idk_text: str = Field("Don't know the correct answer", min_length=1)


class ExperimentConfig(_Strict):
    task: Literal["qa"] = "qa"  # the paper's pipeline; `classification` has its own config model
    name: str = Field(min_length=1)
    seed: int = 0
    limit: int | None = Field(None, ge=1)  # the first N questions of the dataset
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)  # also sets the cache file
    aux_generator: GeneratorConfig | None = None  # the paraphrasing model; None = the main generator
    variation: VariationConfig = Field(default_factory=VariationConfig)
    judges: list[JudgeConfig] = Field(default_factory=lambda: [JudgeConfig(name="embedding")], min_length=1)
    entropy_judge: str | None = None  # whose decisions cluster answers for the report's entropy; default llm
    accuracy: AccuracyConfig = Field(default_factory=AccuracyConfig)
    a2c: A2CConfig = Field(default_factory=A2CConfig)
    output: str | None = None  # run folder; default runs/<name>
    # questions per generate call inside a stage: batches stay large, the progress bar and resume stay fine
    chunk_size: int = Field(64, ge=1)

    @field_validator("judges", mode="before")
    @classmethod
    def _expand(cls, judges: Any) -> Any:
        """`judges: offline` names a preset; `[embedding, rouge1]` is short for `[{name: embedding}, ...]`."""
        if isinstance(judges, str):
            from a2c.judges import load_preset

            try:
                preset = load_preset(judges)
            except A2CError as exc:
                raise ValueError(str(exc)) from None
            return [{"name": spec.name, **spec.options} for spec in preset.judges]
        if isinstance(judges, list):
            return [{"name": j} if isinstance(j, str) else j for j in judges]
        return judges

    @model_validator(mode="after")
    def _distinct_judges(self) -> ExperimentConfig:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judges are listed twice: {names}")
        if self.entropy_judge is not None and self.entropy_judge not in names:
            raise ValueError(f"entropy_judge {self.entropy_judge!r} is not among the judges {names}")
        return self

    @property
    def entropy_judge_name(self) -> str:
        """The paper clusters with its LLM judge; without one, the first judge listed."""
        names = [j.name for j in self.judges]
        return self.entropy_judge or ("llm" if "llm" in names else names[0])

    @property
    def run_dir(self) -> Path:
        return Path(self.output) if self.output else Path("runs") / self.name

    def check_data(self) -> None:
        """Read a local or hub dataset through (columns and every row), so a bad one fails at load."""
        if self.dataset.path is not None:
            self.dataset.load()


def _node_line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest YAML node on a pydantic error path (key node for mappings)."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _describe(error: dict[str, Any], root: yaml.Node | None, source: str) -> str:
    # pydantic puts union-branch names (e.g. 'str', 'TechniqueConfig') into the path: keep real keys only
    loc = tuple(p for p in error["loc"] if isinstance(p, int) or (not p[:1].isupper() and p != "str"))
    line = _node_line(root, loc)
    where = f"{source}:{line}" if line else source
    key = ".".join(str(p) for p in loc) or "(top level)"
    message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
    return f"{where}: {key}: {message}"


def _task_model(task: str) -> type[BaseModel]:
    """The config model of a task; `qa` (the paper's pipeline) is the default when a file names none."""
    if task == "classification":
        from a2c.classification.config import ClassificationConfig

        return ClassificationConfig
    return ExperimentConfig


TASKS = ("qa", "classification")


def parse_config(text: str, source: str = "<config>", folder: Path | None = None) -> TaskConfig:
    """Validate config text; every problem is reported as `file:line: key: message`. The top-level `task`
    key picks the config model (`qa` when absent). Relative paths are read from `folder` when given
    (`a2c.config_paths`), else from the working folder."""
    data, root = parse_yaml(text, source, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level")
    if folder is not None:
        data = resolve_config_paths(data, folder, source, lambda loc: _node_line(root, loc), ConfigError)
    task = data.get("task", "qa")
    if task not in TASKS:
        line = _node_line(root, ("task",))
        raise ConfigError(f"{source}{f':{line}' if line else ''}: task: unknown task {task!r}; known: "
                          f"{', '.join(TASKS)}")
    try:
        return _task_model(task).model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # a union (str | TechniqueConfig) reports one error per branch; keep the first per key path
        seen: dict[str, str] = {}
        for err in errors:
            described = _describe(err, root, source)
            seen.setdefault(described.split(": ")[0] + str(err["loc"][:2]), described)
        raise ConfigError("invalid config: " + "; ".join(seen.values())) from None


def load_config(path: str | Path, *, paths_from_file: bool = True) -> TaskConfig:
    """A config file, validated, and its local data file read through (encoding, columns, every row):
    a bad config or data file fails here, before a run folder, a cache or a model is touched. Its relative
    paths are read from its folder (`paths_from_file=False`: from the working folder, for a run's stored
    config, whose paths were resolved when it was written)."""
    path = Path(path)
    text = read_text(path, ConfigError, what="config file",
                     hint="a config is YAML text: save it as UTF-8")
    config = parse_config(text, str(path), path.parent if paths_from_file else None)
    config.check_data()
    return config


def dump_config(config: TaskConfig) -> str:
    """The resolved config (defaults filled in) as YAML, written into every run folder."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
