"""The `Judge` protocol and the one batched pass every pairwise judge shares.

A judge turns the n outputs of each question into an n×n agreement matrix. Doing this question by question
and pair by pair wastes most of the work: answers repeat within and across questions, identical answers
need no model, and a symmetric score needs each unordered pair only once. `PairwiseJudge.matrices`
therefore collects the pairs of the whole dataset, drops what needs no model call, looks the rest up in
the on-disk cache, hands the remaining unique pairs to the concrete judge in one call (which batches them
for its model) and scatters the scores back into per-question matrices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from a2c.common.errors import A2CError
from a2c.common.registry import Registry
from a2c.common.text import normalize
from a2c.system.cache import DEFAULT_CACHE_PATH, Cache, NoCache, damaged_cache, make_key, open_cache
from a2c.system.devices import Device

if TYPE_CHECKING:  # numpy loads when a judge scores, not when a config naming judges is read
    import numpy as np

CACHE_NAMESPACE = "judge"


class JudgeError(A2CError, ValueError):
    """Bad judge input or option: mismatched lengths, a non-text output, an out-of-range option value."""


@dataclass
class JudgeStats:
    """What the last `matrices` call did with the distinct pairs it needed: from the cache, or scored."""

    pairs: int = 0
    cached: int = 0
    scored: int = 0


@runtime_checkable
class Judge(Protocol):
    """Pairwise agreement between outputs: scores in [0, 1], one n×n matrix per question; `stats` counts
    the pairs of the last pass, so runs report pairs scored vs served from the cache."""

    directional: bool  # s(a, b) may differ from s(b, a); the matrix stores both directions
    threshold: float
    stats: JudgeStats

    @property
    def name(self) -> str: ...

    @property
    def higher_is_consistent(self) -> bool:  # False for `contra`, where a high score means disagreement
        ...

    def matrices(self, questions: Sequence[str], outputs_per_question: Sequence[Sequence[str]]
                 ) -> list[np.ndarray]:
        """One matrix per question from a single batched pass over the whole dataset."""
        ...

    def matrix(self, question: str, outputs: Sequence[str]) -> np.ndarray:
        ...

    def equivalent(self, matrix: np.ndarray) -> np.ndarray:
        """Boolean n×n: the judge's decision holds in both directions (input of clustering entropy)."""
        ...


# -- options: each judge class names its pydantic model as `Options`; configs, presets and `build_judge`
# validate through it, so a bad name or value fails when a config loads, not after the model stages
def _cache_branch(value: Any) -> str:
    return "Cache" if isinstance(value, (Cache, NoCache)) else "Path"


# A path or None (what YAML can say) or an open cache (what Python callers may pass). The branch is picked
# up front so a bad value gets one error, not one per alternative; config errors drop the capitalised
# branch tags from the key path.
CacheOption = Annotated[Annotated[Path | None, Tag("Path")] | Annotated[Cache | NoCache, Tag("Cache")],
                        Discriminator(_cache_branch),
                        Field(description="score cache file, null for none (a run uses its generator's)")]
Threshold = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False,
                                   description="score at which two answers count as equivalent "
                                               "(for `contra`: below which)")]
BatchSize = Annotated[int, Field(ge=1, description="inputs per forward pass")]
ModelName = Annotated[str, Field(min_length=1, description="hub id or local model folder")]


class JudgeOptions(BaseModel):
    """What every judge accepts; a judge's `Options` subclass adds its own fields and defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    threshold: Threshold = 0.5
    cache: CacheOption = DEFAULT_CACHE_PATH

    def given(self) -> dict[str, Any]:
        """The options set explicitly, typed; unset ones stay out so the judge's defaults (or a run's own
        cache) still apply when the dict is passed on."""
        return self.model_dump(exclude_unset=True)


class ModelOptions(JudgeOptions):
    """Options of the judges that run a transformers model."""

    model: ModelName
    batch_size: BatchSize = 64
    max_length: int | None = Field(None, ge=1, description="token limit per input (default: the model's)")
    offline: bool = Field(False, description="never try the hub, only local folders and the HF cache")
    device: Device = Field("auto", description="auto (sentence-transformers picks: the GPU if any), cpu, "
                                               "cuda, cuda:N or mps; checked when the config loads")


@dataclass(frozen=True)
class Pair:
    """One model call's worth of input; `question` is "" for judges that ignore the question."""

    question: str
    a: str
    b: str


def _check_texts(outputs: Sequence[str], where: str) -> list[str]:
    if isinstance(outputs, str):
        raise JudgeError(f"{where}: expected a list of outputs, got a single string")
    texts = list(outputs)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise JudgeError(f"{where}: output {i} is {type(text).__name__}, not text")
    return texts


class PairwiseJudge:
    """Base of every registered judge: the dataset-wide dedup → cache → score → scatter pass.

    Subclasses set the class attributes, declare what they accept as `Options` (a `JudgeOptions`
    model: built from a validated instance, a judge checks no option values itself) and implement
    `score_pairs` (unique pairs in, one score each out, batched however suits their model) and `identity`
    (what the cached scores depend on).
    """

    name: ClassVar[str]
    label: ClassVar[str]  # what tables and plots call it (R1-C, Emb, ...)
    Options: ClassVar[type[JudgeOptions]] = JudgeOptions
    # asks a generator; with no generator of its own a run lends it its main one (and its stage key then
    # depends on that generator)
    takes_run_generator: ClassVar[bool] = False
    # the paper clusters answers for the entropy with its LLM judge: the default entropy judge where listed
    preferred_for_clusters: ClassVar[bool] = False
    directional: bool = False
    higher_is_consistent: ClassVar[bool] = True
    uses_question: ClassVar[bool] = False
    cacheable: ClassVar[bool] = True  # cheap judges (exact, rouge1) skip the disk round trip
    store_every: ClassVar[int] = 4096  # pairs scored between cache writes: an interrupted run keeps them

    def __init__(self, options: JudgeOptions) -> None:
        self.options = options
        self.threshold = options.threshold
        self._cache_option = options.cache
        self.stats = JudgeStats()

    # -- what subclasses provide -------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Everything a score depends on besides the pair (model id, label, template ...)."""
        return {"judge": self.name}

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        raise NotImplementedError

    # -- the shared pass -----------------------------------------------------------------------------
    @property
    def consistent_value(self) -> float:
        """Score of two identical outputs: full agreement (1) or, for `contra`, no contradiction (0)."""
        return 1.0 if self.higher_is_consistent else 0.0

    def _cache(self) -> Cache | NoCache:
        option = self._cache_option
        if isinstance(option, (Cache, NoCache)):
            return option
        if not self.cacheable or option is None:
            return NoCache()
        return open_cache(Path(option))

    def matrix(self, question: str, outputs: Sequence[str]) -> np.ndarray:
        return self.matrices([question], [outputs])[0]

    def matrices(self, questions: Sequence[str], outputs_per_question: Sequence[Sequence[str]]
                 ) -> list[np.ndarray]:
        import numpy as np

        if isinstance(questions, str):
            raise JudgeError("questions must be a list of texts, not a single string")
        if len(questions) != len(outputs_per_question):
            raise JudgeError(f"got {len(questions)} questions but {len(outputs_per_question)} output lists")
        index: dict[Pair, int] = {}
        result: list[np.ndarray] = []
        scatter: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for q, (question, outputs) in enumerate(zip(questions, outputs_per_question, strict=True)):
            if not isinstance(question, str):
                raise JudgeError(f"question {q} is {type(question).__name__}, not text")
            texts = _check_texts(outputs, f"question {q}")
            norms = [normalize(t) for t in texts]
            n = len(texts)
            result.append(np.full((n, n), self.consistent_value, dtype=np.float64))
            context = question if self.uses_question else ""
            rows, cols, slots = [], [], []
            for i in range(n):
                for j in range(n) if self.directional else range(i + 1, n):
                    if i == j or norms[i] == norms[j]:
                        continue  # identical answers agree fully without a model call
                    a, b = texts[i], texts[j]
                    if not self.directional and b < a:
                        a, b = b, a  # one canonical order, so (a, b) and (b, a) share a score
                    slots.append(index.setdefault(Pair(context, a, b), len(index)))
                    rows.append(i)
                    cols.append(j)
            scatter.append((result[-1], np.array(rows, int), np.array(cols, int), np.array(slots, int)))
        scores = self._lookup_or_score(list(index))
        for out, at_rows, at_cols, at_slots in scatter:
            out[at_rows, at_cols] = scores[at_slots]
            if not self.directional:
                out[at_cols, at_rows] = scores[at_slots]
        return result

    def _lookup_or_score(self, pairs: list[Pair]) -> np.ndarray:
        import numpy as np

        scores = np.empty(len(pairs), dtype=np.float64)
        self.stats = JudgeStats()
        if not pairs:
            return scores  # nothing to score: do not load a model (or build a generator) at all
        cache = self._cache()
        use_cache = not isinstance(cache, NoCache)
        identity = self.identity()
        keys = [make_key(**identity, question=p.question, a=p.a, b=p.b) if use_cache else "" for p in pairs]
        found = cache.get_many(keys, CACHE_NAMESPACE) if use_cache else {}
        todo = []
        for k, key in enumerate(keys):
            if key in found:
                value = found[key]
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise damaged_cache(cache.path, f"a judge entry is not a score ({value!r:.40})")
                scores[k] = value
            else:
                todo.append(k)
        self.stats = JudgeStats(pairs=len(pairs), cached=len(pairs) - len(todo), scored=len(todo))
        for start in range(0, len(todo), self.store_every):
            chunk = todo[start:start + self.store_every]
            values = np.asarray(self.score_pairs([pairs[k] for k in chunk]), dtype=np.float64)
            if values.shape != (len(chunk),) or not np.isfinite(values).all():
                raise JudgeError(f"judge {self.name!r} returned {values.shape} scores for {len(chunk)} pairs")
            scores[chunk] = values = np.clip(values, 0.0, 1.0)
            if use_cache:
                stored = {keys[k]: float(v) for k, v in zip(chunk, values, strict=True)}
                cache.put_many(stored, CACHE_NAMESPACE)
        return scores

    def equivalent(self, matrix: np.ndarray) -> np.ndarray:
        import numpy as np

        m = np.asarray(matrix, dtype=np.float64)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise JudgeError(f"expected a square matrix, got shape {m.shape}")
        one_way = m >= self.threshold if self.higher_is_consistent else m < self.threshold
        both = one_way & one_way.T
        np.fill_diagonal(both, True)  # an output always means what it means
        return both

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity()})"


class ModelJudge(PairwiseJudge):
    """A judge that runs a transformers model: keeps the model settings its `ModelOptions` gave."""

    def __init__(self, options: ModelOptions) -> None:
        super().__init__(options)
        self.model = options.model
        self.batch_size = options.batch_size
        self.max_length = options.max_length
        self.offline = options.offline
        self.device = options.device


JUDGES: Registry[type[PairwiseJudge]] = Registry("judge", base=PairwiseJudge, group="a2c.judges")
for _name, _target in {"exact": "a2c.judges.lexical:ExactJudge", "rouge1": "a2c.judges.lexical:Rouge1Judge",
                       "ner": "a2c.judges.lexical:NERJudge", "pp": "a2c.judges.classifier:ParaphraseJudge",
                       "entail": "a2c.judges.classifier:EntailmentJudge",
                       "contra": "a2c.judges.classifier:ContradictionJudge",
                       "embedding": "a2c.judges.embedding:EmbeddingJudge",
                       "llm": "a2c.judges.llm:LLMJudge"}.items():
    JUDGES.register_lazy(_name, _target)
