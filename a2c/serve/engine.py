"""The blocking part of serving: answer a batch of questions by Ask-to-Choose, with evidence and usage.

Runs on the batcher's worker thread. Questions of a batch that share their answer settings go through one
`AskToChoose.answer_many` pass (the run's own stages, one generate call per step for all of them); a batch
holding several settings makes one pass per settings. The run's judges stage scores every question's
answer sets in the same pass (one call per judge), as `a2c probe` does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from a2c.choose import AskToChoose, Choice
from a2c.judges import JudgeSpec
from a2c.judges.presets import judge_options
from a2c.llm import Generator, GeneratorConfig
from a2c.qa.config import ExperimentConfig
from a2c.qa.rows import SOURCES, Source
from a2c.serve.config import settings_json
from a2c.serve.usage import RecordingGenerator, Usage, attribute


@dataclass(frozen=True)
class Ask:
    """One question to answer and the settings to answer it with."""

    question: str
    settings: ExperimentConfig

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


def wrapper(generator: Generator, settings: ExperimentConfig) -> AskToChoose:
    """`AskToChoose` with every answer setting of a run config, reply budgets included."""
    return AskToChoose(generator, variation=settings.variation, a2c=settings.a2c, seed=settings.seed)


class Engine:
    """Answers batches on one generator; `recorder.steps` / `recorder.samples` tell how far a pass got."""

    def __init__(self, generator: Generator, generator_config: GeneratorConfig) -> None:
        self.recorder = RecordingGenerator(generator)
        self.generator_config = generator_config

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

    def judges(self, settings: ExperimentConfig) -> list[JudgeSpec]:
        """The settings' judges, scoring into the served generator's cache file unless they name one."""
        cache = {"cache": self.generator_config.cache}
        return [JudgeSpec.of(spec.name, **{**(cache if "cache" in judge_options(spec.name) else {}),
                                           **spec.options}) for spec in settings.judges]

    def _one_pass(self, asks: Sequence[Ask]) -> list[Answered]:
        settings = asks[0].settings
        started = time.monotonic()
        self.recorder.take()  # what an earlier, failed pass left
        choices = wrapper(self.recorder, settings).answer_many([a.question for a in asks],
                                                               judges=self.judges(settings))
        consistency = [_consistency(settings, choice) for choice in choices]
        calls = self.recorder.take()
        usage, total = attribute(calls, choices)
        techniques = [t.name for t in settings.variation.resolved_techniques()]
        seconds = time.monotonic() - started
        out = []
        for choice, sets, spent in zip(choices, consistency, usage, strict=True):
            answered = {g.slot for g in choice.generations if g.source == "paraphrase"}
            failed = [name for slot, name in enumerate(techniques) if slot not in answered]
            out.append(Answered(choice, sets, settings.entropy_judge_name, failed, spent, total, len(asks),
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
