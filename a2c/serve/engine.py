"""The blocking part of serving: answer a batch of questions by Ask-to-Choose, with evidence and usage.

Runs on the batcher's worker thread. Questions of a batch that share their answer settings go through one
`AskToChoose.answer_many` pass (the run's own stages, one generate call per step for all of them); a batch
holding several settings makes one pass per settings. The judges score every question's answer sets in
one call per judge, as `a2c probe` does, and are built once per judge list and kept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from a2c.choose import AskToChoose, Choice
from a2c.cli.probe import probe_results
from a2c.config import ExperimentConfig
from a2c.judges import Judge
from a2c.llm import Generator, GeneratorConfig
from a2c.records import SOURCES, Source
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
    """`AskToChoose` with every answer setting of a run config, reply budgets included (its constructor
    takes only some of them; `answer_many` reads them all from its `config`)."""
    chooser = AskToChoose(generator)
    chooser.config = settings.model_copy(update={"name": chooser.config.name})
    return chooser


class Engine:
    """Answers batches on one generator; `recorder.steps` / `recorder.samples` tell how far a pass got."""

    def __init__(self, generator: Generator, generator_config: GeneratorConfig) -> None:
        self.recorder = RecordingGenerator(generator)
        self.generator_config = generator_config
        self._judges: dict[str, dict[str, Judge]] = {}

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

    def judges(self, settings: ExperimentConfig) -> dict[str, Judge]:
        """The judges of a settings' judge list, built on first use (an `llm` judge asks the served model)."""
        from a2c.stage import Generators, RunContext
        from a2c.store import MemoryStore

        key = json.dumps(settings_json(settings)["judges"], sort_keys=True)
        if key not in self._judges:
            config = settings.model_copy(update={"generator": self.generator_config})  # its cache, too
            generators = Generators(self.recorder, self.recorder)
            context = RunContext(config, MemoryStore(), [], generators=generators, progress=False)
            self._judges[key] = context.judges()
        return self._judges[key]

    def _one_pass(self, asks: Sequence[Ask]) -> list[Answered]:
        settings = asks[0].settings
        started = time.monotonic()
        self.recorder.take()  # what an earlier, failed pass left
        choices = wrapper(self.recorder, settings).answer_many([a.question for a in asks])
        consistency = self._consistency(settings, [a.question for a in asks], choices)
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

    def _consistency(self, settings: ExperimentConfig, questions: list[str],
                     choices: list[Choice]) -> list[dict[Source, SourceConsistency]]:
        asked = [(f"q{i}", q) for i, q in enumerate(questions)]
        techniques = len(settings.variation.techniques)
        per_judge = {name: probe_results(asked, choices, judge, techniques)
                     for name, judge in self.judges(settings).items()}
        entropy_by = per_judge[settings.entropy_judge_name]
        return [{source: SourceConsistency(
                    n=len(entropy_by[i].sets[source].answers),
                    cons_sem={name: results[i].sets[source].cons_sem for name, results in per_judge.items()},
                    entropy=entropy_by[i].sets[source].entropy,
                    clusters=entropy_by[i].sets[source].clusters)
                 for source in SOURCES}
                for i in range(len(questions))]
