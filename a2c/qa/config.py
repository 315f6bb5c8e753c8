"""The config of a QA experiment (`task: qa`, the default): dataset, variation, judges, accuracy, A2C.

Unknown keys are errors (a typo must not silently fall back to a default). Names of datasets, judges,
similarities and paraphrase techniques are checked against their registries, so a bad name fails when the
config loads, before any model does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    FiniteFloat,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from a2c.common.components import ComponentSpec, expand
from a2c.common.errors import A2CError, RenamedKeyWarning
from a2c.common.files import DEFAULT_ENCODING, check_encoding
from a2c.judges import JUDGES, JudgeSpec
from a2c.qa.data.columns import ColumnMap
from a2c.qa.data.samples import ReferenceDataset, SampleColumns
from a2c.qa.idk import DEFAULT_IDK_TEXT
from a2c.qa.option_order import OptionOrder
from a2c.qa.vote import DEFAULT_VOTE, VOTES
from a2c.settings.config import RunConfig, StrictModel, registered
from a2c.settings.config_paths import Data, PathKey, generator_keys


class DatasetConfig(StrictModel):
    """Which questions a run asks: `quickstart`, `truthfulqa`, or your own (`file`, `hf`) with a column map.

    Each dataset declares the settings it reads (`a2c.qa.data.DATASETS`); one it does not read is an error
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
    sample_columns: SampleColumns | None = None  # answer field → column name (`samples`)
    references: ReferenceDataset | None = None  # where a samples file's questions get references (`samples`)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from a2c.qa.data import DATASETS

        return registered(DATASETS, name)

    @field_validator("encoding")
    @classmethod
    def _decodable(cls, encoding: str) -> str:
        return check_encoding(encoding)

    @field_validator("references")
    @classmethod
    def _a_question_set(cls, refs: ReferenceDataset | None) -> ReferenceDataset | None:
        """References come from a registered dataset of questions, not from another samples file."""
        from a2c.qa.data import DATASETS

        if refs is not None:
            registered(DATASETS, refs.name)
            check_encoding(refs.encoding)
            if refs.name == "samples":
                raise ValueError("references come from a dataset of questions, not another samples file")
        return refs

    @model_validator(mode="after")
    def _settings_it_reads(self) -> DatasetConfig:
        from a2c.qa.data import DATASETS, given_settings

        if self.name in DATASETS:
            DATASETS.get(self.name).check(self.name, given_settings(self.settings() | {"path": self.path}))
        return self

    def settings(self) -> dict[str, Any]:
        """The source settings besides name, path and encoding, as `a2c.qa.data.load_records` takes them."""
        return {k: getattr(self, k) for k in ("columns", "separator", "config", "split", "revision",
                                              "sample_columns", "references")}


class TechniqueConfig(StrictModel):
    """A paraphrasing technique written out in the config (instead of a built-in name)."""

    name: str
    instruction: str
    example_question: str
    example_paraphrase: str


DEFAULT_TECHNIQUE_NAMES: tuple[str | TechniqueConfig, ...] = ("synonyms", "word forms", "sentence structure",
                                                              "conjunctions")


# the embedding judge's cosine below which a paraphrase asks another question: the threshold that separates
# tests/fixtures/paraphrase_pairs.jsonl best (docs/concepts/generation.md, the meaning check)
DEFAULT_MEANING_THRESHOLD = 0.82


class MeaningCheckConfig(StrictModel):
    """A paraphrase must keep its question's meaning: scored against the question by a judge (the
    embedding judge by default; a directional one such as `entail` both ways, the lower score counting),
    and failed as "changed meaning" below `threshold`, then retried as the form checks' failures are."""

    judge: JudgeSpec = Field(default_factory=lambda: JudgeSpec.default("embedding"))
    threshold: float = Field(DEFAULT_MEANING_THRESHOLD, ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("judge", mode="before")
    @classmethod
    def _bare_name(cls, judge: Any) -> Any:
        """`judge: entail` is `judge: {name: entail}`, as in the judges list."""
        return {"name": judge} if isinstance(judge, str) else judge


class VariationConfig(StrictModel):
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
    # None: the form checks alone (the paper's); written only when set, so older configs resolve unchanged
    meaning_check: MeaningCheckConfig | None = Field(None, exclude_if=lambda v: v is None)
    # ask the generator for each long answer's token log-probabilities (k top alternatives; 0: the chosen
    # tokens only), for the white-box uncertainty measures; None: none asked (the paper's)
    logprobs: int | None = Field(None, ge=0, le=20, exclude_if=lambda v: v is None)

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
        from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES

        known = {t.name for t in DEFAULT_TECHNIQUES}
        for t in techniques:
            if isinstance(t, str) and t not in known:
                raise ValueError(f"unknown technique {t!r}; built in: {sorted(known)} "
                                 "(or give name/instruction/example_question/example_paraphrase)")
        return techniques

    def resolved_techniques(self) -> list[Any]:
        from a2c.prompting.paraphrase import DEFAULT_TECHNIQUES, Technique

        by_name = {t.name: t for t in DEFAULT_TECHNIQUES}
        return [by_name[t] if isinstance(t, str) else Technique(**t.model_dump()) for t in self.techniques]


class SimilarityConfig(ComponentSpec):
    """An accuracy similarity by name with its options inline (`{name: rouge1, use_stemmer: true}`); a bare
    name (`rouge1`) is the same with no options, and is written back as a bare name, so the resolved
    config and the stage keys of a plain list stay as they were."""

    kind = "similarity"
    registry_at = "a2c.qa.scoring:SIMILARITIES"
    bare_when_plain = True


class CorrectnessConfig(ComponentSpec):
    """The correctness rule by name with its options inline (`{name: token_f1, threshold: 0.6}`); a bare
    name is the same with no options, written back as a bare name. Checked by the rule's options model
    (`a2c.qa.correctness.CORRECTNESS_RULES`)."""

    kind = "correctness rule"
    registry_at = "a2c.qa.correctness:CORRECTNESS_RULES"
    bare_when_plain = True


class AccuracyConfig(StrictModel):
    # when an answer is correct: truthfulqa (the benchmark's protocol, under each of `similarities`), or a
    # gold-answer rule (exact_match, token_f1, rouge_l), which needs no incorrect references and scores one
    # column named by the rule; options inline, e.g. {name: token_f1, threshold: 0.6}
    rule: CorrectnessConfig = Field(default_factory=lambda: CorrectnessConfig.default("truthfulqa"))
    # answer-vs-reference similarities (SPEC §4), each a name or {name, options}: rouge1 (R1-A), rouge2,
    # rougeL, bleu, bleurt, and embedding (the offline stand-in for BLEURT); truthfulqa's only, so [] under
    # a gold-answer rule
    similarities: list[SimilarityConfig] = Field(
        default_factory=lambda: [SimilarityConfig.default("rouge1"), SimilarityConfig.default("embedding")])

    @field_validator("rule", mode="before")
    @classmethod
    def _bare_rule(cls, rule: Any) -> Any:
        """`rule: token_f1` is short for `rule: {name: token_f1}`."""
        return {"name": rule} if isinstance(rule, str) else rule

    @field_validator("rule")
    @classmethod
    def _run_rule(cls, rule: CorrectnessConfig) -> CorrectnessConfig:
        """In a run, TruthfulQA's similarities are `accuracy.similarities`, not the rule's options."""
        named = sorted(set(rule.options) & {"similarity", "similarity_options"}) \
            if rule.name == "truthfulqa" else []
        if named:
            raise ValueError(f"{', '.join(named)} is set by accuracy.similarities in a run; truthfulqa "
                             "takes only threshold here")
        return rule

    @field_validator("similarities", mode="before")
    @classmethod
    def _expand(cls, similarities: Any) -> Any:
        """`[rouge1, bleu]` is short for `[{name: rouge1}, {name: bleu}]`."""
        return expand(similarities)

    @field_validator("similarities")
    @classmethod
    def _distinct(cls, similarities: list[SimilarityConfig], info: ValidationInfo) -> list[SimilarityConfig]:
        """Checked when given (a default is not): distinct names, at least one under TruthfulQA's protocol
        and none under a gold-answer rule, which would leave them silently unused."""
        names = [s.name for s in similarities]
        if len(set(names)) != len(names):
            raise ValueError(f"similarities are listed twice: {names} (metrics are keyed by name)")
        rule = info.data.get("rule")  # absent: the rule failed, and that is the error to show
        if rule is not None and rule.name == "truthfulqa" and not similarities:
            raise PydanticCustomError("too_short", "List should have at least 1 item (truthfulqa scores "
                                      "under each similarity)")
        if rule is not None and rule.name != "truthfulqa" and similarities:
            raise ValueError(f"the rule {rule.name!r} scores against the gold answers alone, under no "
                             "similarity; leave similarities out (or use rule: truthfulqa)")
        return similarities

    @model_validator(mode="after")
    def _no_similarities_for_gold_rules(self) -> AccuracyConfig:
        """A gold-answer rule scores under no similarity: the default list becomes [], as written back."""
        if self.rule.name != "truthfulqa" and self.similarities:
            object.__setattr__(self, "similarities", [])  # frozen: set once, while validating
        return self

    @property
    def columns(self) -> list[str]:
        """The accuracy columns a run keeps: the similarities under truthfulqa, else the rule's name."""
        return [s.name for s in self.similarities] if self.rule.name == "truthfulqa" else [self.rule.name]


class SelectionConfig(ComponentSpec):
    """A selection method by name with its options inline (`{name: medoid, judge: rouge1}`); a bare name is
    the same with no options and is written back as a bare name. Checked by the method's `Options` model
    (`a2c.qa.selection.SELECTION_METHODS`)."""

    kind = "selection method"
    registry_at = "a2c.qa.selection:SELECTION_METHODS"
    bare_when_plain = True


def selection_problems(selection: Sequence[SelectionConfig], judges: Sequence[str], a2c_enabled: bool
                       ) -> list[str]:
    """What is wrong with a method list for a run: a method listed twice, a judge the run does not list,
    `a2c` when Ask-to-Choose is off."""
    names = [spec.name for spec in selection]
    problems = [f"selection methods are listed twice: {names}"] if len(set(names)) != len(names) else []
    for spec in selection:
        judge = spec.options.get("judge")
        if judge is not None and judge not in judges:
            problems.append(f"{spec.name}: judge {judge!r} is not among the judges {list(judges)}")
        if spec.name == "a2c" and not a2c_enabled:
            problems.append("a2c picks from the rank choices: it needs Ask-to-Choose "
                            "(ask_to_choose.enabled: true)")
    return problems


# config sections renamed since an earlier release: old name → new. "a2c" named the package, the algorithm, a
# config section, a stage and a selection method; the section and the stage are Ask-to-Choose's now
RENAMED_SECTIONS: tuple[tuple[str, str], ...] = (("a2c", "ask_to_choose"),)


def renamed_keys(data: Any, renamed: Sequence[tuple[str, str]], where: str = "") -> Any:
    """`data` with each old key under its new name and one warning line naming both; both given is an
    error (which one is meant?)."""
    if not isinstance(data, dict) or not any(old in data for old, _ in renamed):
        return data
    data = dict(data)
    for old, new in renamed:
        if old not in data:
            continue
        if new in data:
            raise ValueError(f"{where}{old} and {where}{new} are both given: {where}{old} is the old name of "
                             f"{where}{new}; keep {where}{new} only")
        warnings.warn(f"config key `{where}{old}:` is deprecated, write `{where}{new}:` (read as it)",
                      RenamedKeyWarning, stacklevel=2)
        data[new] = data.pop(old)
    return data


class A2CConfig(StrictModel):
    enabled: bool = True
    # decoding of the paraphrase-slot rank prompts
    rank_temperature: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    max_tokens: int = Field(8, ge=1)
    # the rank prompt's last option, in the paper's Listing 1 wording. The wording moves accuracy: under
    # TruthfulQA's scoring "I have no comment." is a true reference, and "I don't know ..." shares its "I"
    idk_text: str = Field(DEFAULT_IDK_TEXT, min_length=1)
    # the order each rank prompt lists the candidates in (don't know stays last): fixed (as first seen, in
    # every prompt: the paper's), shuffled (a permutation per prompt from the seed, question and slot) or
    # cyclic (rotated by the slot). Moving them cancels a model's habit of picking by position
    option_order: OptionOrder = "fixed"
    # how the parsed rank replies elect one answer (`a2c.qa.vote.VOTES`): plain (one vote per reply, the
    # paper's majority) or debiased (each pick weighted by 1 / (n · P̂_n(k)), the model's prior over displayed
    # positions, estimated from the run's own rank replies, divided out)
    vote: str = DEFAULT_VOTE

    @field_validator("vote")
    @classmethod
    def _known_vote(cls, vote: str) -> str:
        return registered(VOTES, vote)


def _read_locally(section: Any) -> bool:
    """A dataset section's `path` is a file unless its dataset is read from the hub (`hf`: owner/name)."""
    from a2c.qa.data import DATASETS  # the loaders' registry, when a config with a dataset path is read

    name = section.get("name") if isinstance(section, dict) else None
    return not (isinstance(name, str) and name in DATASETS and DATASETS.get(name).path_kind == "hub")


def _local_dataset(data: Data) -> bool:
    """`dataset.path` is a file unless the dataset is read from the hub."""
    return _read_locally(data.get("dataset"))


def _local_references(data: Data) -> bool:
    """`dataset.references.path` is a file unless that dataset is read from the hub."""
    dataset = data.get("dataset")
    return _read_locally(dataset.get("references") if isinstance(dataset, dict) else None)


# the QA config keys that hold paths besides the core's, read from the config file's folder
PATH_KEYS: tuple[PathKey, ...] = (
    PathKey(("dataset", "path"), "file", _local_dataset),
    PathKey(("dataset", "references", "path"), "file", _local_references),
    PathKey(("judges",), "yaml"),  # a preset
    PathKey(("judges", "*", "cache"), "created"), PathKey(("judges", "*", "model"), "model"),
    PathKey(("judges", "*", "template"), "yaml"), *generator_keys("judges", "*", "generator"),
    PathKey(("accuracy", "similarities", "*", "model"), "model"),
)


class ExperimentConfig(RunConfig):
    """A QA experiment (the paper's pipeline): vary each question, judge agreement, Ask-to-Choose."""

    path_keys: ClassVar[tuple[PathKey, ...]] = PATH_KEYS
    runs_at: ClassVar[str] = "a2c.qa.task:TASK"

    task: Literal["qa"] = "qa"
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    variation: VariationConfig = Field(default_factory=VariationConfig)
    judges: list[JudgeSpec] = Field(default_factory=lambda: [JudgeSpec.default("embedding")], min_length=1)
    entropy_judge: str | None = None  # whose decisions cluster answers for the report's entropy; default llm
    accuracy: AccuracyConfig = Field(default_factory=AccuracyConfig)
    # `a2c:` in earlier versions (still read, with a warning: `RENAMED_SECTIONS`)
    ask_to_choose: A2CConfig = Field(default_factory=A2CConfig)
    # how one answer per question and source is picked, each a name or {name, <options>}: a2c (the default:
    # the majority of the rank choices), usc, medoid, majority_cluster; `random` is always reported
    selection: list[SelectionConfig] = Field(default_factory=lambda: [SelectionConfig.default("a2c")])

    @model_validator(mode="before")
    @classmethod
    def _renamed_sections(cls, data: Any) -> Any:
        return renamed_keys(data, RENAMED_SECTIONS)

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
        return expand(judges)

    @field_validator("selection", mode="before")
    @classmethod
    def _expand_selection(cls, selection: Any) -> Any:
        """`[a2c, usc]` is short for `[{name: a2c}, {name: usc}]`."""
        return expand(selection)

    @field_validator("selection")
    @classmethod
    def _selection_fits(cls, selection: list[SelectionConfig], info: ValidationInfo) -> list[SelectionConfig]:
        """Methods listed once, reading judges the run has; `a2c` only with Ask-to-Choose on. The default
        (`[a2c]`, also as a resolved config writes it out) just picks nothing when A2C is off."""
        if len(selection) == 1 and selection[0].name == "a2c" and not selection[0].options:
            return selection
        if "judges" in info.data and "ask_to_choose" in info.data:  # absent: already reported as invalid
            problems = selection_problems(selection, [j.name for j in info.data["judges"]],
                                          info.data["ask_to_choose"].enabled)
            if problems:
                raise ValueError("; ".join(problems))
        return selection

    @model_validator(mode="after")
    def _distinct_judges(self) -> ExperimentConfig:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judges are listed twice: {names}")
        if self.entropy_judge is not None and self.entropy_judge not in names:
            raise ValueError(f"entropy_judge {self.entropy_judge!r} is not among the judges {names}")
        return self

    @model_validator(mode="after")
    def _own_samples(self) -> ExperimentConfig:
        """A samples run asks no model unless told to: without a `generator:` section Ask-to-Choose is off
        (as written back), and its default selection is the file's main answer (`main`), then A2C's pick
        when A2C is on. `main` reads a samples file: any other dataset has no main answer."""
        names = [s.name for s in self.selection]
        if self.dataset.name != "samples":
            if "main" in names:
                raise ValueError("selection method main picks a samples file's main answer: it needs "
                                 "dataset: {name: samples, ...}")
            return self
        given_a2c = "ask_to_choose" in self.model_fields_set \
            and "enabled" in self.ask_to_choose.model_fields_set
        if "generator" not in self.model_fields_set and not given_a2c and self.ask_to_choose.enabled:
            if "selection" in self.model_fields_set and "a2c" in names:
                raise ValueError("selection lists a2c, which asks the generator to choose; a samples run "
                                 "asks no model unless `generator:` is given (or ask_to_choose.enabled: "
                                 "true)")
            off = self.ask_to_choose.model_copy(update={"enabled": False})
            object.__setattr__(self, "ask_to_choose", off)
        if "selection" not in self.model_fields_set:
            picks = ["main", *(["a2c"] if self.ask_to_choose.enabled else [])]
            object.__setattr__(self, "selection", [SelectionConfig.default(name) for name in picks])
        return self

    @property
    def selection_methods(self) -> list[SelectionConfig]:
        """The methods that pick an answer: as listed, without `random` (always reported, it picks none)
        and without `a2c` when Ask-to-Choose is off."""
        return [s for s in self.selection
                if s.name != "random" and (s.name != "a2c" or self.ask_to_choose.enabled)]

    @property
    def entropy_judge_name(self) -> str:
        """The paper clusters with its LLM judge; without one, the first judge listed."""
        names = [j.name for j in self.judges]
        preferred = [name for name in names if JUDGES.get(name).preferred_for_clusters]
        return self.entropy_judge or (preferred or names)[0]
