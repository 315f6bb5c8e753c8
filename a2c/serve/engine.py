"""The blocking part of serving: answer a batch of questions by Ask-to-Choose, with evidence and usage.

Runs on the batcher's worker thread. Questions of a batch that share their answer settings go through one
`AskToChoose.answer_many` pass (the run's own stages, one generate call per step for all of them); a batch
holding several settings makes one pass per settings. The run's judges stage scores every question's
answer sets in the same pass (one call per judge), as `a2c probe` does, with the judges the server built
(and whose models it loaded) at start-up. A failed prompt fails only the questions that needed it, and a
question whose client left is not worked for (`a2c.serve.isolation`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from a2c.choose import AskToChoose, Choice
from a2c.judges import JUDGES, Judge, JudgeSpec, build_judge
from a2c.judges.presets import judge_options
from a2c.llm import Generator, GeneratorConfig
from a2c.qa.calibration import Calibration
from a2c.qa.config import ExperimentConfig
from a2c.qa.rows import SOURCES, Source
from a2c.serve.config import settings_json
from a2c.serve.isolation import PassGenerator
from a2c.serve.usage import RecordingGenerator, Usage, attribute


@dataclass(frozen=True)
class Ask:
    """One question to answer and the settings to answer it with; `left` is set when its client stops
    waiting (deadline), so its pass stops working for it."""

    question: str
    settings: ExperimentConfig
    left: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    @property
    def settings_key(self) -> str:
        return json.dumps(settings_json(self.settings), sort_keys=True)


@dataclass(frozen=True)
class SourceConsistency:
    """Agreement of one source's candidates: Cons_sem per judge, entropy by the entropy judge's clusters."""

    n: int
    cons_sem: dict[str, float | None]
    entropy: float | None
    clusters: int


@dataclass
class Answered:
    """One question's answer, its evidence, and what it cost."""

    choice: Choice
    consistency: dict[Source, SourceConsistency]
    entropy_judge: str
    failed_paraphrases: list[str]
    usage: Usage
    pass_usage: Usage  # the whole batched pass this question went through
    pass_questions: int
    pass_steps: int  # its generate calls: the upstream round trips of the pass (each a wave of requests)
    pass_seconds: float


def wrapper(generator: Generator, settings: ExperimentConfig,
            calibration: Calibration | None = None) -> AskToChoose:
    """`AskToChoose` with every answer setting of a run config, reply budgets included."""
    return AskToChoose(generator, variation=settings.variation, a2c=settings.ask_to_choose,
                       seed=settings.seed,
                       calibration=calibration)


class Engine:
    """Answers batches on one generator; `recorder.steps` / `recorder.samples` tell how far a pass got."""

    def __init__(self, generator: Generator, generator_config: GeneratorConfig,
                 judges: Sequence[JudgeSpec], calibration: Calibration | None = None) -> None:
        self.calibration = calibration  # checked against the settings of each request before it is queued
        self.recorder = RecordingGenerator(generator)
        self.isolated = PassGenerator(self.recorder)
        self.loaded = {spec.name: self._load(spec, generator_config) for spec in judges}

    def answer(self, asks: Sequence[Ask]) -> list[Answered | Exception]:
        """Every ask answered, or the exception that ended its settings' pass (other passes go on)."""
        groups: dict[str, list[int]] = {}
        for i, ask in enumerate(asks):
            groups.setdefault(ask.settings_key, []).append(i)
        results: list[Answered | Exception] = [RuntimeError("not answered")] * len(asks)
        for members in groups.values():
            try:
                answered: Sequence[Answered | Exception] = self._one_pass([asks[i] for i in members])
            except Exception as exc:  # the pass's failure is the answer of each of its questions
                answered = [exc] * len(members)
            for i, result in zip(members, answered, strict=True):
                results[i] = result
        return results

    def _load(self, spec: JudgeSpec, generator_config: GeneratorConfig) -> Judge:
        """A judge of the server's, its model loaded now (one pair scored): a request only names it, so no
        request ever makes the server load a model. A judge that asks the served model asks it as the pass
        does; judges score into the served generator's cache file unless they name one."""
        options = dict(spec.options)
        on_served = JUDGES.get(spec.name).takes_run_generator and options.get("generator") is None
        if on_served:
            options["generator"] = self.isolated
        if "cache" in judge_options(spec.name):
            options.setdefault("cache", generator_config.cache)
        judge = build_judge(spec.name, **options)
        if not on_served:
            judge.matrices(["Is the judge loaded?"], [["It is.", "Yes."]])
        return judge

    def _one_pass(self, asks: Sequence[Ask]) -> list[Answered | Exception]:
        settings = asks[0].settings
        started = time.monotonic()
        self.recorder.take()  # what an earlier, failed pass left
        self.isolated.begin([a.question for a in asks], [a.left for a in asks])
        judges = {spec.name: self.loaded[spec.name] for spec in settings.judges}
        choices = wrapper(self.isolated, settings, self.calibration).answer_many([a.question for a in asks],
                                                               judges=settings.judges, built=judges)
        failed = self.isolated.failed(choices)
        consistency = [_consistency(settings, choice) for choice in choices]
        calls = self.recorder.take()
        usage, total = attribute(calls, choices)
        techniques = [t.name for t in settings.variation.resolved_techniques()]
        seconds = time.monotonic() - started
        out: list[Answered | Exception] = []
        for choice, sets, spent, error in zip(choices, consistency, usage, failed, strict=True):
            if error is not None:
                out.append(error)
                continue
            answered = {g.slot for g in choice.generations if g.source == "paraphrase"}
            dropped = [name for slot, name in enumerate(techniques) if slot not in answered]
            out.append(Answered(choice, sets, settings.entropy_judge_name, dropped, spent, total, len(asks),
                                len(calls), seconds))
        return out


def _consistency(settings: ExperimentConfig, choice: Choice) -> dict[Source, SourceConsistency]:
    """Per source: Cons_sem of every judge, and the entropy and clusters of the entropy judge."""
    by = choice.judged[settings.entropy_judge_name]
    return {source: SourceConsistency(n=len(by[source].matrix),
                                      cons_sem={name: sets[source].scores.cons_sem
                                                for name, sets in choice.judged.items()},
                                      entropy=by[source].scores.entropy, clusters=by[source].scores.clusters)
            for source in SOURCES}
