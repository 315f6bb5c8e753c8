"""Config of a classification run (`task: classification`): the data, the labelling prompt and the suites.

Validated like the QA config (unknown keys are errors, each problem reported as `file:line: key: message`),
and the data file is read through when the config loads, so a label outside the set or a missing column
fails before any model is touched.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from a2c.common.files import DEFAULT_ENCODING, check_encoding
from a2c.settings.config import RunConfig
from a2c.settings.config_paths import PathKey

# the fields an item can have; `columns:` maps each to the file's own column name
FIELDS = ("id", "text", "premise", "hypothesis", "label", "bundle", "group", "negated_hypothesis",
          "negated_label", "derivation", "sources")
BUILTIN_DATASETS = ("nli-quickstart",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClassificationData(_Strict):
    """Where the items come from and how the file names its columns."""

    name: str | None = None  # a built-in set (`nli-quickstart`); exclusive with `path`
    path: str | None = None  # a JSONL, CSV or parquet file, relative to the config file's folder
    encoding: str = DEFAULT_ENCODING
    input: Literal["pair", "single"] = "pair"  # premise/hypothesis pairs, or one text per item
    labels: list[str] = Field(min_length=2)
    # label → the word the model is asked to reply with (default: the label itself)
    label_words: dict[str, str] = Field(default_factory=dict)
    columns: dict[str, str] = Field(default_factory=dict)  # our field → the file's column

    @field_validator("encoding")
    @classmethod
    def _decodable(cls, encoding: str) -> str:
        return check_encoding(encoding)

    @field_validator("columns")
    @classmethod
    def _known_fields(cls, columns: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(columns) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s) {unknown}; an item has {list(FIELDS)}")
        return columns

    @model_validator(mode="after")
    def _source(self) -> ClassificationData:
        if (self.name is None) == (self.path is None):
            raise ValueError(f"give exactly one of `name` (built in: {list(BUILTIN_DATASETS)}) and `path`")
        if self.name is not None and self.name not in BUILTIN_DATASETS:
            raise ValueError(f"unknown built-in dataset {self.name!r}; built in: {list(BUILTIN_DATASETS)}")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"labels are listed twice: {self.labels}")
        stray = sorted(set(self.label_words) - set(self.labels))
        if stray:
            raise ValueError(f"label_words names label(s) {stray} outside the label set {self.labels}")
        words = [self.word(label).casefold() for label in self.labels]
        if len(set(words)) != len(words) or not all(w.strip() for w in words):
            raise ValueError(f"label words must be distinct and non-empty, got {words}")
        return self

    def word(self, label: str) -> str:
        return self.label_words.get(label, label)

    def column(self, field: str) -> str:
        return self.columns.get(field, field)


class LabelingConfig(_Strict):
    """The few-shot labelling prompt and how its reply is read."""

    template: str = "nli_label"  # shipped name or YAML path; fields `labels` and `input`
    max_tokens: int = Field(4, ge=1)
    logprobs: int = Field(10, ge=0)  # top log-probabilities at the first reply position; 0 reads the text
    indicators: tuple[str, str] = ("Premise", "Hypothesis")  # sentence-type indicators of a pair input
    text_indicator: str = "Text"  # of a single-text input
    separator: str = ":"
    # contextual calibration (Zhao et al. 2021) against the prompt's label probabilities for content-free
    # inputs; `none` keeps the published settings' labels
    calibration: Literal["none", "content_free"] = "none"
    content_free_inputs: list[str] = Field(default_factory=lambda: ["N/A"], min_length=1)

    @field_validator("template")
    @classmethod
    def _loadable(cls, template: str) -> str:
        from a2c.prompting.prompts import load_template

        fields = set(load_template(template).fields)
        if fields != {"labels", "input"}:
            raise ValueError(f"template {template!r} must take the fields labels and input, takes "
                             f"{sorted(fields)}")
        return template

    @model_validator(mode="after")
    def _calibration_reads_logprobs(self) -> LabelingConfig:
        if self.calibration == "content_free" and self.logprobs < 1:
            raise ValueError("calibration: content_free weighs label log-probabilities; set logprobs >= 1")
        return self


class ParaphrasticConfig(_Strict):
    """Paper 003: in-context paraphrases of one input field, one per technique; buckets per item/group."""

    enabled: bool = True
    field: Literal["hypothesis", "premise", "text"] | None = None  # default: hypothesis, or text
    techniques: list[str] = Field(default_factory=lambda: ["synonyms", "sentence structure", "word order"],
                                  min_length=1)
    temperature: float = Field(0.7, ge=0.0, allow_inf_nan=False)
    max_tokens: int = Field(48, ge=1)

    @field_validator("techniques")
    @classmethod
    def _known(cls, techniques: list[str]) -> list[str]:
        from a2c.classification.rewrite import SENTENCE_TECHNIQUES

        known = {t.name for t in SENTENCE_TECHNIQUES}
        bad = [t for t in techniques if t not in known]
        if bad:
            raise ValueError(f"unknown technique(s) {bad}; built in: {sorted(known)}")
        return techniques


# paper 004, Table 7: the ten replacements of the ':' after an indicator; two characters wrap the indicator
CALM_SYMBOLS: tuple[str, ...] = ("[]", "{}", "()", "<>", ";", "#", "!", "@", "~", "-")


class CalmConfig(_Strict):
    """Paper 004: REVERSE and SIGNAL (k symbols, pass-rate threshold θ)."""

    enabled: bool = True
    symbols: list[str] = Field(default_factory=lambda: list(CALM_SYMBOLS), min_length=1)
    k: int | None = Field(None, ge=1)  # the first k symbols (default all: the paper's k = 10)
    threshold: float = Field(1.0, gt=0.0, le=1.0)

    @field_validator("symbols")
    @classmethod
    def _shapes(cls, symbols: list[str]) -> list[str]:
        bad = [s for s in symbols if len(s) not in (1, 2) or s.strip() != s]
        if bad:
            raise ValueError(f"a symbol is one separator character or two wrapping ones ('[]'), got {bad}")
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"symbols are listed twice: {symbols}")
        return symbols

    @property
    def used_symbols(self) -> list[str]:
        return self.symbols[: self.k] if self.k else list(self.symbols)


class BecelConfig(_Strict):
    """Paper 001: symmetric swaps, negations (given or LLM-written) and the derived items of the data."""

    enabled: bool = True
    # swapping premise and hypothesis keeps these labels (paper: only contradiction for SNLI)
    symmetric_labels: list[str] = Field(default_factory=lambda: ["contradiction"])
    # label of an item → label of its negation (paper: only entailment flips reliably, to contradiction)
    negation_labels: dict[str, str] = Field(default_factory=lambda: {"entailment": "contradiction"})
    write_negations: bool = True  # ask the auxiliary LLM for a negation where the data gives none
    negation_max_tokens: int = Field(48, ge=1)


class ContrastConfig(_Strict):
    """Paper 000: accuracy, consistency and RC over the items' `bundle` column."""

    enabled: bool = True


class SuitesConfig(_Strict):
    paraphrastic: ParaphrasticConfig = Field(default_factory=ParaphrasticConfig)
    calm: CalmConfig = Field(default_factory=CalmConfig)
    becel: BecelConfig = Field(default_factory=BecelConfig)
    contrast: ContrastConfig = Field(default_factory=ContrastConfig)


# the classification config keys that hold paths, read from the config file's folder
PATH_KEYS: tuple[PathKey, ...] = (PathKey(("dataset", "path"), "file"),
                                  PathKey(("labeling", "template"), "yaml"))


class ClassificationConfig(RunConfig):
    """An experiment whose items are labelled by the LLM and probed by the four papers' suites.

    `limit` keeps the first N items (derived items keep their sources); the auxiliary generator writes
    paraphrases and negations."""

    path_keys: ClassVar[tuple[PathKey, ...]] = PATH_KEYS
    runs_at: ClassVar[str] = "a2c.classification.task:TASK"

    task: Literal["classification"] = "classification"
    dataset: ClassificationData
    labeling: LabelingConfig = Field(default_factory=LabelingConfig)
    suites: SuitesConfig = Field(default_factory=SuitesConfig)


    @field_validator("suites")
    @classmethod
    def _fits_the_data(cls, suites: SuitesConfig, info: ValidationInfo) -> SuitesConfig:
        """Labels and fields the suites name must exist (checked here so the error names `suites`' line)."""
        data, labeling = info.data.get("dataset"), info.data.get("labeling")
        if data is None or labeling is None:
            return suites  # already reported
        becel = suites.becel
        stray = sorted({*becel.symmetric_labels, *becel.negation_labels, *becel.negation_labels.values()}
                       - set(data.labels))
        if stray:
            raise ValueError(f"becel names label(s) {stray} outside the label set {data.labels}")
        if suites.paraphrastic.field is not None:
            wanted = "text" if data.input == "single" else ("premise", "hypothesis")
            if suites.paraphrastic.field not in wanted:
                raise ValueError(f"paraphrastic.field {suites.paraphrastic.field!r} does not exist for "
                                 f"`{data.input}` inputs")
        if labeling.separator in suites.calm.symbols:
            raise ValueError(f"calm.symbols must differ from the separator {labeling.separator!r}")
        return suites

    @property
    def paraphrase_field(self) -> str:
        default = "text" if self.dataset.input == "single" else "hypothesis"
        return self.suites.paraphrastic.field or default
