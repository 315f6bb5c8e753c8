"""The layer every backend sits under: one request with n samples → n single-sample jobs, each cached.

Backends only ever see single-sample jobs (`n == 1`) whose seed is derived from the request seed and the
sample index, so sample i of a request is reproducible on its own and has its own cache entry. Backends
report finished jobs through `emit` as soon as a batch is done; each `emit` is one cache transaction,
so an interrupted run loses at most the jobs still in flight. A sample whose prompt was cut to fit the
model's context is cached with that limit and served again only by a backend that cuts to the same one.
A sample drawn on a GPU or in another dtype is cached apart from a CPU float32 one (`draw_identity`):
the same seed draws other tokens there, and greedy answers may differ in their last digits' ties.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from a2c.common.errors import A2CError
from a2c.common.wording import plural
from a2c.llm.base import Completion, Generation, GenerationRequest, GenerationStats
from a2c.llm.context import ContextLengthWarning
from a2c.system.cache import Cache, NoCache, damaged_cache, make_key
from a2c.system.progress import GenerationBar, showing

CACHE_NAMESPACE = "generation"
_UNREAD = object()  # CachedGenerator has not asked its backend which model it serves yet


@dataclass
class SampleResult:
    completion: Completion
    prompt_tokens: int = 0
    truncated_to: int | None = None  # the context limit the prompt was cut to fit; None: read whole


Emit = Callable[[list[tuple[int, SampleResult]]], None]


class FailedJobs(Exception):
    """A backend with `keep_going` ran every job it could; these failed for good (job index → error)."""

    def __init__(self, errors: dict[int, Exception]) -> None:
        super().__init__(str(next(iter(errors.values()))))
        self.errors = errors


class RequestsFailed(A2CError):
    """Some requests of a `generate` call failed for good, the others were answered (`keep_going`):
    `errors` by request index, `generations` for every request, a failed one holding `failed_generation`."""

    def __init__(self, errors: dict[int, Exception], generations: list[Generation]) -> None:
        super().__init__(str(next(iter(errors.values()))))
        self.errors, self.generations = errors, generations


def failed_generation(request: GenerationRequest) -> Generation:
    """What stands in for a request that got no answer: empty text, finish reason `error`, no tokens."""
    return Generation(request, [Completion("", "error", 0)] * request.n, 0, [False] * request.n)


class SampleBackend(Protocol):
    """What a backend implements: run single-sample jobs, reporting (job index, result) pairs via emit.
    `truncates_to` is the context limit it cuts long prompts to (None: it never cuts them). With
    `keep_going` set, a job that fails for good does not stop the others: `run` raises `FailedJobs` once
    every other job is emitted (a backend that runs a batch as one whole ignores it)."""

    backend: str
    model: str
    truncates_to: int | None
    keep_going: bool
    # the algorithm that draws sampled tokens, where draws from one seed differ from what earlier entries of
    # a cache hold (part of the key of sampled requests only: greedy answers do not depend on it); None: as
    # before
    sampler: str | None

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None: ...

    def served_model(self) -> dict[str, Any] | None:
        """What identifies the weights behind `model` beyond its name, as the server reports it (part of
        every cache key); None when the name says it all (in-process backends load what it names)."""
        ...

    def draw_identity(self) -> dict[str, str] | None:
        """What besides the model changes a draw in process: `{"device": type, "dtype": ...}` (part of
        every cache key); None for a server (it reports its own identity) and for the CPU at float32,
        where answers were drawn before this was recorded, so their keys stay the same."""
        ...


def sample_seed(seed: int | None, sample: int) -> int | None:
    """Seed of sample `sample`: the request seed itself for sample 0, a hash-spread value after it."""
    if seed is None or sample == 0:
        return seed
    digest = hashlib.sha256(f"{seed}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def request_key(backend: str, model: str, request: GenerationRequest, sample: int,
                served: Mapping[str, Any] | None = None, drawn: Mapping[str, str] | None = None,
                sampler: str | None = None) -> str:
    """Cache key: backend, model, the full prompt and every sampling parameter, plus the sample index, what
    identifies the served model where the server reports it (`served`), the device type and dtype of an
    in-process draw (`drawn`) and, for a sampled request, the backend's `sampler`; None leaves each out, so
    a key made before it existed is the same key."""
    identity: dict[str, Any] = {} if served is None else {"served": served}
    if drawn is not None:
        identity["drawn"] = dict(drawn)
    if sampler is not None and request.temperature > 0:
        identity["sampler"] = sampler
    return make_key(
        **identity,
        backend=backend,
        model=model,
        prompt=request.prompt,
        messages=[[m.role, m.content] for m in request.messages] if request.messages is not None else None,
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=request.max_tokens,
        stop=list(request.stop),
        seed=request.seed,
        logprobs=request.logprobs,
        sample=sample,
    )


@dataclass
class CachedGenerator:
    """A `Generator`: expands samples, serves what the cache holds, runs the rest on the backend."""

    impl: SampleBackend
    cache: Cache | NoCache = field(default_factory=NoCache)
    stats: GenerationStats = field(default_factory=GenerationStats)
    _served: Any = field(default=_UNREAD, init=False, repr=False)
    _drawn: Any = field(default=_UNREAD, init=False, repr=False)

    @property
    def backend(self) -> str:
        return self.impl.backend

    @property
    def model(self) -> str:
        return self.impl.model

    def served_model(self) -> dict[str, Any] | None:
        """The backend's `served_model`, asked on first use only (one /models request per server)."""
        if self._served is _UNREAD:
            self._served = self.impl.served_model()
        served: dict[str, Any] | None = self._served
        return served

    def keep_going(self) -> None:
        """From now on a request that fails fails alone: the backend answers the others and `generate`
        raises `RequestsFailed` holding them (a server's batched pass must not fail every client's question
        for one failed prompt; a run stops at its first failure instead)."""
        self.impl.keep_going = True

    def draw_identity(self) -> dict[str, str] | None:
        """The backend's `draw_identity`, asked once."""
        if self._drawn is _UNREAD:
            self._drawn = self.impl.draw_identity()
        drawn: dict[str, str] | None = self._drawn
        return drawn

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        slots = [(r, i) for r, request in enumerate(requests) for i in range(request.n)]
        served = self.served_model() if slots else None
        drawn = self.draw_identity() if slots else None
        keys = [request_key(self.backend, self.model, requests[r], i, served, drawn, self.impl.sampler)
                for r, i in slots]
        stored = self.cache.get_many(keys, CACHE_NAMESPACE)
        results: list[SampleResult | None] = [None] * len(slots)
        from_cache = [False] * len(slots)
        for s, key in enumerate(keys):
            if key in stored and _has_token_logprobs(stored[key], requests[slots[s][0]]):
                result = _from_json(stored[key], self.cache.path)
                # a sample of a cut prompt answers this request only if the prompt would be cut the same way
                if result.truncated_to is None or result.truncated_to == self.impl.truncates_to:
                    results[s] = result
                    from_cache[s] = True
        # identical samples within one call are generated once; so are greedy ones that differ only in
        # seed or sample index (a greedy answer depends on neither), each still cached under its own key
        first_slot: dict[Any, int] = {}
        answered_by = list(range(len(slots)))  # slot → the slot whose job answers it
        for s, key in enumerate(keys):
            if results[s] is None:
                request = requests[slots[s][0]]
                same = key if request.temperature > 0 else replace(request, seed=None, n=1)
                answered_by[s] = first_slot.setdefault(same, s)
        todo = [s for s in range(len(slots)) if results[s] is None and answered_by[s] == s]
        jobs = [replace(requests[slots[s][0]], n=1, seed=sample_seed(requests[slots[s][0]].seed, slots[s][1]))
                for s in todo]
        also: dict[int, set[str]] = {}  # a job's slot → the other keys its answer is cached under
        for s, first in enumerate(answered_by):
            if first != s and keys[s] != keys[first]:
                also.setdefault(first, set()).add(keys[s])

        budgets = [requests[r].max_tokens for r, _ in slots]
        running = set(todo)  # the others are served by the cache or by a duplicate within the call
        bar = GenerationBar(budgets, done=[budgets[s] for s in range(len(slots)) if s not in running])

        def emit(done: list[tuple[int, SampleResult]]) -> None:
            bar.finished([jobs[j].max_tokens for j, _ in done])
            for j, result in done:
                results[todo[j]] = result
                self.stats.generated += 1
                self.stats.prompt_tokens += result.prompt_tokens
                self.stats.completion_tokens += result.completion.completion_tokens
            entries = {}
            for j, result in done:
                value = _to_json(result, asked=jobs[j].logprobs is not None)
                entries[keys[todo[j]]] = value
                entries.update(dict.fromkeys(also.get(todo[j], ()), value))
            self.cache.put_many(entries, CACHE_NAMESPACE)

        failed: dict[int, Exception] = {}  # slot → why it failed for good (`keep_going`)
        with showing(bar):
            if jobs:
                try:
                    self.impl.run(jobs, emit)
                except FailedJobs as exc:
                    failed = {todo[j]: error for j, error in exc.errors.items()}
        for s, first in enumerate(answered_by):
            if results[s] is None:
                results[s] = results[first]
                if first in failed:
                    failed[s] = failed[first]
        self.stats.cached += sum(from_cache)
        missing = [s for s in todo if results[s] is None and s not in failed]
        if missing:
            raise RuntimeError(f"backend {self.backend!r} returned no result for "
                               f"{plural(len(missing), 'sample')}")

        self._count_truncated([r for r in results if r is not None and r.truncated_to], len(slots))

        errors = {slots[s][0]: error for s, error in failed.items()}  # by request
        out = [Generation(request=request, completions=[]) for request in requests]
        for s, (r, _) in enumerate(slots):
            sample = results[s]
            if r in errors or sample is None:
                continue
            out[r].completions.append(sample.completion)
            out[r].cached.append(from_cache[s])
            out[r].prompt_tokens = sample.prompt_tokens
        if errors:
            raise RequestsFailed(errors, [failed_generation(requests[r]) if r in errors else g
                                          for r, g in enumerate(out)])
        return out

    def _count_truncated(self, cut: list[SampleResult], samples: int) -> None:
        """Count the samples (generated or cached) whose prompt was cut, and say so once per call."""
        if not cut:
            return
        self.stats.truncated += len(cut)
        warnings.warn(f"{len(cut)} of {plural(samples, 'sample')} came from a prompt longer than the "
                      f"context of {self.model} ({cut[0].truncated_to} tokens), cut in the middle to fit "
                      "(context_policy: truncate)", ContextLengthWarning, stacklevel=3)


def _to_json(result: SampleResult, *, asked: bool = True) -> dict[str, Any]:
    """The stored form of one answer. Top-k stay `{token: log-probability}` per position: parallel token
    and value lists are no shorter in JSON. Unless log-probabilities were `asked` for, the empty
    `token_logprobs` and `tokens` are left out, so such an entry is what it was before they existed;
    where they were asked for, both are written even as None (the backend gave none), which tells the entry
    from one written before them (`_has_token_logprobs`)."""
    cut = {} if result.truncated_to is None else {"truncated_to": result.truncated_to}
    # the completion's fields as they are (asdict would deep-copy the logprobs only to serialise them)
    fields = vars(result.completion)
    if not asked and fields.get("token_logprobs") is None and fields.get("tokens") is None:
        fields = {k: v for k, v in fields.items() if k not in ("token_logprobs", "tokens")}
    return {**fields, "prompt_tokens": result.prompt_tokens, **cut}


def _has_token_logprobs(value: Any, request: GenerationRequest) -> bool:
    """Whether a stored answer holds what the request asks for: one asking for log-probabilities needs an
    entry that records the chosen tokens' (`token_logprobs`, None where the backend gave none). Entries
    written before that field existed hold only the top-k under the same key: they are drawn again and
    overwritten, not served without it."""
    return request.logprobs is None or not isinstance(value, dict) or "token_logprobs" in value


def _from_json(value: Any, path: Path | None) -> SampleResult:
    try:
        value = dict(value)
        prompt_tokens = int(value.pop("prompt_tokens", 0))
        truncated_to = value.pop("truncated_to", None)
        completion = Completion(**value)
        if not isinstance(completion.text, str):
            raise TypeError("text is not a string")
        chosen = completion.token_logprobs
        if chosen is not None and not (isinstance(chosen, list)
                                       and all(type(v) in (int, float) for v in chosen)):
            raise TypeError("token_logprobs is not a list of numbers")
    except (TypeError, ValueError) as exc:  # not what _to_json wrote
        raise damaged_cache(path, f"a generation entry is not a stored answer ({exc})") from None
    return SampleResult(completion, prompt_tokens, truncated_to)
