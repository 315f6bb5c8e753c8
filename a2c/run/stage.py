"""What a stage is, the context it runs in, and how the runner decides to run or reuse it.

A stage declares the files it reads and writes, the slice of the config its output depends on, and `run`.
Its key is a hash of that slice and of the digests of the files it reads. A stage whose marker
(`stages/<name>.json`) holds the same key, and whose outputs are all there, is reused; otherwise it runs.
A changed output changes the key of every stage that reads it, so a config change re-runs exactly the
stages whose slice changed and those their new outputs feed; an output that comes out the same stops
the wave. Inside a stage that runs again, the request cache serves every generation made before.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field, fields, replace
from itertools import islice
from typing import Any, Generic, TypeVar

from a2c.llm import GenerationStats, Generator, build_generator
from a2c.run.runfiles import RunFile, RunFileError
from a2c.run.store import Store
from a2c.settings.config import RunConfig
from a2c.system.progress import bar, status, ticking

T = TypeVar("T")
C = TypeVar("C", bound=RunConfig)
GENERATION_COUNTS = tuple(f.name for f in fields(GenerationStats))
Slice = dict[str, Any]

# not a file: the items (questions and references, labelled inputs) the run was given; stages that use them
# list it in `reads`, and the task's context says what it is by its `dataset_digest`
DATASET = RunFile("dataset")


@dataclass
class StageStats(GenerationStats):
    """What one stage did: the generation counts of every generator it used, its wall time, judge pairs."""

    seconds: float = 0.0
    judge_pairs_scored: int = 0
    judge_pairs_cached: int = 0
    skipped: bool = False  # reused: its key matched a finished run of it
    why: str = ""  # why it ran or was reused


@dataclass(frozen=True)
class Generators:
    """Generators built by the caller (the decoding wrapper gets them from its user)."""

    main: Generator
    aux: Generator


@dataclass
class RunContext(ABC, Generic[C]):
    """What a task's stages share: the config, the store, generators (built on first use), the counts.

    Each task subclasses it with its dataset (and what else its stages need) and says what the dataset is
    by `dataset_digest`, which keys every stage that reads `DATASET`.
    """

    config: C
    store: Store
    generators: Generators | None = field(default=None, kw_only=True)  # None: built from the config
    progress: bool = field(default=True, kw_only=True)
    # every generator used so far, with its counts when first used, so stages count deltas
    _used: dict[int, tuple[Generator, GenerationStats]] = field(default_factory=dict, kw_only=True)

    def _use(self, generator: Generator) -> Generator:
        self._used.setdefault(id(generator), (generator, replace(generator.stats)))
        return generator

    @property
    def generator(self) -> Generator:
        """The main model."""
        if self.generators is not None:
            return self._use(self.generators.main)
        return self._use(build_generator(self.config.generator))

    @property
    def aux(self) -> Generator:
        """The auxiliary model (paraphrases, negations)."""
        if self.generators is not None:
            return self._use(self.generators.aux)
        return self._use(build_generator(self.config.aux_generator or self.config.generator))

    def counts(self) -> dict[int, GenerationStats]:
        """A copy of the counts of every generator used so far."""
        return {key: replace(generator.stats) for key, (generator, _) in self._used.items()}

    def add_counts_since(self, before: dict[int, GenerationStats], stats: GenerationStats) -> None:
        """Add to `stats` what every generator did since `before` (from its first use, if it is new)."""
        for key, (generator, first) in self._used.items():
            start = before.get(key, first)
            for name in GENERATION_COUNTS:
                done = getattr(generator.stats, name) - getattr(start, name)
                setattr(stats, name, getattr(stats, name) + done)

    def chunks(self, desc: str, items: Iterable[T], total: int | None = None) -> Iterator[list[T]]:
        """`chunk_size` items at a time with a progress bar (counts and ETA) over all of them, its clock
        redrawn every second on a terminal while a chunk runs. Items may stream (a file's rows): `total`
        then says how many to expect."""
        size = self.config.chunk_size
        count = total if total is not None else len(items) if isinstance(items, Sized) else None
        shown = bar(total=count, desc=desc, unit="q", disable=not self.progress, leave=True)
        stream = iter(items)
        with ticking(shown):
            while chunk := list(islice(stream, size)):
                yield chunk
                shown.update(len(chunk))

    @property
    @abstractmethod
    def dataset_digest(self) -> str:
        """A digest of the items the run was given (the `DATASET` input of the stages that read it)."""

    def item_texts(self) -> dict[str, str]:
        """Each item's text by id, where the task's results show it (QA: the questions)."""
        return {}

    def digest(self, file: RunFile) -> str | None:
        return self.dataset_digest if file == DATASET else self.store.digest(file.name)


X = TypeVar("X", bound=RunContext[Any])


def _always(config: Any) -> bool:
    return True


@dataclass(frozen=True)
class Stage(Generic[X]):
    """One step of the run over the whole dataset: reads files, writes files, depends on a config slice.

    `config_slice` returns only the settings the outputs depend on (never output paths, chunk sizes,
    caches or batch sizes); `run` writes every file of `writes` through `ctx.store`. A stage that is not
    `enabled` for a config has its files and marker removed.
    """

    name: str
    reads: tuple[RunFile, ...]
    writes: tuple[RunFile, ...]
    config_slice: Callable[[Any], Slice]  # (the task's config) → the settings its outputs depend on
    run: Callable[[X, StageStats], None]
    enabled: Callable[[Any], bool] = _always
    former_names: tuple[str, ...] = ()  # its names in earlier releases: their markers still count
    # why it is off for a config, for the run's log (None: it is left out silently, as it always was)
    off_line: Callable[[Any], str | None] | None = None

    @property
    def marker(self) -> str:
        return f"stages/{self.name}.json"

    @property
    def started_marker(self) -> str:
        """Written as the stage starts, removed once its marker is: left behind, it says the stage was
        interrupted (or failed) before it finished, so a rerun says that rather than "not run before"."""
        return f"stages/{self.name}.started.json"

    def markers(self) -> tuple[str, ...]:
        """Its marker, then those an earlier release wrote under a former name."""
        return (self.marker, *(f"stages/{name}.json" for name in self.former_names))

    def marker_in(self, store: Store) -> str | None:
        """The marker this stage has in `store` (its own, else one under a former name), or None."""
        return next((marker for marker in self.markers() if store.exists(marker)), None)


def json_digest(data: Any) -> str:
    """sha256 of data as canonical JSON: the same data, the same key, in any process."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Decision:
    """Whether a stage runs, why, and the key its marker records."""

    key: str
    config_slice: Slice
    inputs: dict[str, str | None]
    reuse: bool
    why: str


INTERRUPTED = "interrupted or failed before it finished last time"


def _interrupted(config: RunConfig) -> str:
    """Why a stage runs whose last run started and did not finish (Ctrl-C, a kill, an error), and whether
    the model calls it made come back from the request cache."""
    cached = config.generator.cache is not None
    return INTERRUPTED + ("; resumed: the request cache serves the model calls it made" if cached
                          else "; runs again from its start (no request cache)")


def _changed_outputs(store: Store, marker: Any) -> list[str]:
    recorded = marker.get("outputs", {}) if isinstance(marker, dict) else {}
    return [name for name, digest in recorded.items() if store.digest(name) not in (digest, None)]


def decide(ctx: RunContext[Any], stage: Stage[Any]) -> Decision:
    """The stage's key now against the one its marker recorded; on a mismatch, what changed."""
    # through JSON, so the slice compares equal to the one a marker stored
    config_slice = json.loads(json.dumps(stage.config_slice(ctx.config)))
    inputs = {file.name: ctx.digest(file) for file in stage.reads}
    key = json_digest({"slice": config_slice, "inputs": inputs})[:16]
    try:
        found = stage.marker_in(ctx.store)
        marker = ctx.store.read_json(found) if found is not None else None
    except RunFileError:
        marker = {}
    reuse, why = False, ""
    if marker is None:
        why = _interrupted(ctx.config) if ctx.store.exists(stage.started_marker) else "not run before"
    elif not isinstance(marker, dict) or "key" not in marker:
        why = "its marker holds no key (an older a2c wrote it, or it is damaged)"
    elif marker["key"] == key:
        missing = [file.name for file in stage.writes if not ctx.store.exists(file.name)]
        damaged = _changed_outputs(ctx.store, marker)
        reuse = not missing and not damaged
        why = (f"output missing: {', '.join(missing)}" if missing
               else f"output damaged or edited since it was written: {', '.join(damaged)}" if damaged
               else "same config slice and inputs")
    else:
        old_slice, old_inputs = marker.get("slice", {}), marker.get("inputs", {})
        changed = sorted(k for k in {*old_slice, *config_slice} if old_slice.get(k) != config_slice.get(k))
        inputs_changed = [name for name, d in inputs.items() if old_inputs.get(name) != d]
        parts = ([f"config changed: {', '.join(changed)}"] if changed else []) \
            + ([f"input changed: {', '.join(inputs_changed)}"] if inputs_changed else [])
        why = "; ".join(parts) or "stage key changed"
    return Decision(key, config_slice, inputs, reuse, why)


def run_stage(ctx: X, stage: Stage[X], decision: Decision) -> StageStats:
    """Run one stage and record its marker: the key it ran under and the digests of what it wrote."""
    stats = StageStats(why=decision.why)
    before = ctx.counts()
    started = time.perf_counter()
    ctx.store.write_json(stage.started_marker, {"key": decision.key, "started": time.time()})
    stage.run(ctx, stats)
    stats.seconds = time.perf_counter() - started
    ctx.add_counts_since(before, stats)
    record_marker(ctx, stage, decision, stats)
    return stats


def record_marker(ctx: RunContext[Any], stage: Stage[Any], decision: Decision, stats: StageStats) -> None:
    """The stage's marker: the key its outputs were made under and their digests (also after a caller such
    as `a2c report` rewrote them, so the next run reuses them instead of calling them damaged)."""
    ctx.store.write_json(stage.marker, {"key": decision.key, "slice": decision.config_slice,
                                        "inputs": decision.inputs,
                                        "outputs": {f.name: ctx.store.digest(f.name) for f in stage.writes},
                                        "stats": asdict(stats)})
    for former in stage.markers()[1:]:  # the stage's marker goes by its current name from now on
        ctx.store.delete(former)
    ctx.store.delete(stage.started_marker)


def run_stages(ctx: X, stages: Sequence[Stage[X]], log: Callable[[str], None] | None = None, *,
               around: Callable[[], AbstractContextManager[object]] = nullcontext) -> dict[str, StageStats]:
    """Run or reuse each stage in order; returns what each did (wall time, model calls, tokens, pairs).
    Each stage that runs runs inside `around()`: a whole run freezes the heap there
    (`a2c.system.heap.frozen_heap`), a caller that runs a stage per request does not."""
    results: dict[str, StageStats] = {}
    # a file another stage writes in this config's graph (paraphrases.jsonl from a samples file) stays
    kept = {file.name for stage in stages if stage.enabled(ctx.config) for file in stage.writes}
    for stage in stages:
        if not stage.enabled(ctx.config):
            for file in stage.writes:
                if file.name not in kept:
                    ctx.store.delete(file.name)
            off = stage.off_line(ctx.config) if stage.off_line is not None else None
            if log is not None and off:
                log(f"{stage.name}: off ({off})")
            for marker in (*stage.markers(), stage.started_marker):
                ctx.store.delete(marker)
            continue
        with status(f"{stage.name}: comparing with what the run folder holds"):  # may import torch
            decision = decide(ctx, stage)
        if log is not None:
            damaged = "damaged" in decision.why
            repair = "; made again, the request cache serves its model calls" if damaged else ""
            log(f"{stage.name}: {'reused' if decision.reuse else 'runs'} ({decision.why}{repair})")
        if decision.reuse:
            results[stage.name] = StageStats(skipped=True, why=decision.why)
            continue
        with around():
            results[stage.name] = run_stage(ctx, stage, decision)
    return results
