"""Ask-to-Choose as a decoding wrapper: the QA wing's Algorithm 1 for questions asked in code.

`AskToChoose(generator).answer(question)` returns the chosen answer with its candidates, every rank prompt
and simple consistency figures. It runs the wing's own variation, answers and A2C stages on an in-memory
store, so for the same question, seed and settings it asks exactly the prompts `a2c run` asks. Users
import it from `a2c.choose`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from a2c.common.errors import A2CError
from a2c.common.wording import plural
from a2c.judges import Judge, JudgeSpec
from a2c.llm.base import Generator
from a2c.metrics.sets import judge_scores
from a2c.prompting.paraphrase import Technique
from a2c.qa.calibration import Calibration, read_calibration
from a2c.qa.choice import Choice, JudgedSet, summarize
from a2c.qa.config import (
    A2CConfig,
    ExperimentConfig,
    SelectionConfig,
    TechniqueConfig,
    VariationConfig,
    selection_problems,
)
from a2c.qa.decide import decide, needed_judges, settings_mismatch
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    PARAPHRASES,
    SELECTIONS,
    SOURCES,
    AnswerField,
    ChoiceRow,
    GenerationRow,
    Question,
)
from a2c.qa.selection import RANDOM, SelectionError, method_judges
from a2c.qa.stages import ALGORITHM_1, JUDGES_BEFORE, SELECTION, QAContext
from a2c.run.stage import Generators, run_stages
from a2c.run.store import MemoryStore
from a2c.system.progress import generation_progress


class AskToChoose:
    """A2C as a decoding wrapper: answer each question by letting the model choose among its own answers.

    `answer_many` runs the QA wing's variation, answers and A2C stages (`a2c.qa.stages.ALGORITHM_1`) on an
    in-memory store, batched over all questions: paraphrase (aux model), answer the paraphrases and sample
    q at each temperature (main model), then rank (main model). It decodes with the settings a run's
    config holds: pass `variation=` (a `VariationConfig`, every budget included) and `a2c=` (an
    `A2CConfig`), or the keyword shortcuts, which override single fields of those. So for the same question,
    seed and settings it asks exactly the prompts `a2c run` asks. Works with any `Generator`, e.g. one
    bound to a remote vLLM server.

    `selection=` (names or `{name, <options>}` as a config's `selection:`; `random` picks nothing, so it is
    refused) also runs the run's selection stage: each method's pick per source is in `Choice.selections`.
    Methods that read a judge's matrix (`medoid`, `majority_cluster`) get the judges stage too.

    `calibration=` (a `Calibration` or the path of a `calibration.json` from `a2c calibrate`) adds answer
    or decline: each `Choice` gets `confidence` and `declined` (`Choice.decision` says about which answer).
    The calibration must come from answers made as these are (model, variation, A2C settings); a mismatch
    raises `CalibrationMismatch` naming it. The judges its signal reads are run on the candidates.
    """

    def __init__(self, generator: Generator, aux: Generator | None = None, *,
                 variation: VariationConfig | None = None, a2c: A2CConfig | None = None, seed: int = 0,
                 techniques: Sequence[Technique] | None = None, temperatures: Sequence[float] | None = None,
                 top_p: float | None = None, samples: int | None = None,
                 paraphrase_temperature: float | None = None, rank_temperature: float | None = None,
                 answer_field: AnswerField | None = None, idk_text: str | None = None,
                 selection: Sequence[str | Mapping[str, Any] | SelectionConfig] = (),
                 calibration: Calibration | str | Path | None = None) -> None:
        self.generator = generator
        self.aux = aux or generator
        shortcuts: dict[str, Any] = {
            "techniques": None if techniques is None else [TechniqueConfig(**asdict(t)) for t in techniques],
            "temperatures": None if temperatures is None else list(temperatures),
            "top_p": top_p, "samples": samples, "paraphrase_temperature": paraphrase_temperature,
            "answer_field": answer_field}
        a2c_shortcuts = {"rank_temperature": rank_temperature, "idk_text": idk_text}
        # through validation, so a shortcut is checked exactly as the same key in a config file
        variation = VariationConfig.model_validate(
            {**(variation or VariationConfig()).model_dump(), **_given(shortcuts)})
        a2c = A2CConfig.model_validate({**(a2c or A2CConfig()).model_dump(), **_given(a2c_shortcuts)})
        # checked against the judges when they are known (`answer_many`)
        methods = [_selection_spec(s) for s in selection]
        self.config = ExperimentConfig(name="ask-to-choose", seed=seed, variation=variation,
                                       ask_to_choose=a2c).model_copy(update={"selection": methods})
        if any(s.name == RANDOM for s in methods):
            raise SelectionError("selection method 'random' picks no answer: it is the expected accuracy "
                                 "of a uniformly drawn candidate, which a run reports")
        if isinstance(calibration, str | Path):
            calibration = read_calibration(Path(calibration))
        self.calibration = calibration
        if calibration is not None:
            mismatch = settings_mismatch(calibration, generator.model, self.config.model_copy(
                update={"judges": needed_judges(calibration, [])}))
            if mismatch is not None:
                raise CalibrationMismatch(f"the calibration does not fit this wrapper: {mismatch}")

    def answer(self, question: str, *, progress: bool = False) -> Choice:
        """One question. `progress`: a line on stderr as each stage starts and ends, and a bar per generate
        call (a question takes minutes on a small CPU; without it nothing is printed).

        Args:
            question: the question asked.
            progress: whether to report each stage and generate call on stderr.

        Returns:
            The chosen answer with its candidates, rank choices and consistency figures.

        Raises:
            CalibrationMismatch: the wrapper's calibration does not fit its model or settings.
            SelectionError: a selection method cannot run here.
        """
        log = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
        return self.answer_many([question], log=log, progress=progress)[0]

    def answer_many(self, questions: Sequence[str], *, judges: Sequence[JudgeSpec] = (),
                    built: Mapping[str, Judge] | None = None, log: Callable[[str], None] | None = None,
                    progress: bool = False) -> list[Choice]:
        """Every question in one batched pass per step. With `judges`, the run's judges stage also scores
        the candidates of each source (one batched pass per judge), as `Choice.judged`; `built` gives those
        judges already built, by name (a server builds its judges once, not per pass). `log` gets a line as
        each stage starts and ends; `progress` shows a bar per generate call.

        Args:
            questions: the questions asked; none returns an empty list.
            judges: the judges to score each source's candidates with (`Choice.judged`).
            built: those judges already built, by name (the same names as `judges`).
            log: called with a line as each stage starts and ends; None says nothing.
            progress: whether to show a bar per generate call.

        Returns:
            One `Choice` per question, in order.

        Raises:
            CalibrationMismatch: the wrapper's calibration does not fit its model, settings or these judges.
            SelectionError: a selection method needs a judge not given, or A2C turned off.
        """
        asked = [Question(f"q{i}", q) for i, q in enumerate(questions)]
        if not asked:
            return []
        update: dict[str, Any] = {"chunk_size": len(asked)}  # one batched call per step
        if self.calibration is not None:
            judges = needed_judges(self.calibration, judges)
            mismatch = settings_mismatch(self.calibration, self.generator.model,
                                         self.config.model_copy(update={"judges": list(judges)}))
            if mismatch is not None:
                raise CalibrationMismatch(f"the calibration does not fit these judges: {mismatch}")
        if judges:
            update["judges"] = list(judges)
        config = self.config.model_copy(update=update)
        problems = selection_problems(config.selection, [j.name for j in config.judges],
                                      config.ask_to_choose.enabled)
        if problems:
            raise SelectionError("; ".join(problems))
        methods = config.selection_methods
        judged = bool(judges) or any(method_judges(m, config) for m in methods)
        store = MemoryStore()
        if built is not None and set(built) != {j.name for j in judges}:
            raise ValueError(f"built judges {sorted(built)} are not the judges {[j.name for j in judges]}")
        # each question's vote counts its own rank replies: no answer depends on the call's other questions
        ctx = QAContext(config, store, asked, generators=Generators(self.generator, self.aux), progress=False,
                        _judges=dict(built or {}), pooled_prior=False)
        stages = (*ALGORITHM_1, *([JUDGES_BEFORE] if judged else []), *([SELECTION] if methods else []))
        say = log or (lambda _line: None)
        for number, stage in enumerate(stages, 1):
            step = f"[{number}/{len(stages)}] {stage.name}"
            say(f"{step}: started")
            with generation_progress(f"{stage.name}: generate", enabled=progress):
                stats = run_stages(ctx, [stage])[stage.name]
            say(f"{step}: done in {stats.seconds:.1f} s ({plural(stats.generated, 'prompt')} generated, "
                f"{stats.cached} from the cache)")
        generations: dict[str, list[GenerationRow]] = {q.id: [] for q in asked}
        for g in store.read_rows(GENERATIONS):
            generations[g.id].append(g)
        choices: dict[str, list[ChoiceRow]] = {q.id: [] for q in asked}
        for c in store.read_rows(CHOICES):
            choices[c.id].append(c)
        out = [summarize(q.question, generations[q.id], choices[q.id], config.variation.answer_field,
                         config.ask_to_choose.vote) for q in asked]
        by_id = {q.id: choice for q, choice in zip(asked, out, strict=True)}
        for paraphrased in store.read_rows(PARAPHRASES):
            by_id[paraphrased.id].paraphrases = list(paraphrased.paraphrases)
        for row in store.read_rows(SELECTIONS) if methods else ():
            by_id[row.id].selections.setdefault(row.method, {})[row.source] = row
        if judges:
            matrices = store.read_matrices(MATRICES["before"])
            for q, choice in zip(asked, out, strict=True):
                for name, judge in ctx.judges().items():
                    choice.judged[name] = {
                        source: JudgedSet(m.tolist(), judge_scores(m, judge.equivalent(m)))
                        for source in SOURCES for m in [matrices[(name, source, q.id)]]}
        if self.calibration is not None:
            for choice in out:
                choice.decision = decide(self.calibration, choice, ctx.judges() if judges else {}, config)
        return out


class CalibrationMismatch(A2CError):
    """A calibration fitted on answers made otherwise than the wrapper's (model, settings or judges)."""


def _selection_spec(given: str | Mapping[str, Any] | SelectionConfig) -> SelectionConfig:
    """A name, `{name, <options>}` or a `SelectionConfig`, checked as the same entry of a config file."""
    if isinstance(given, SelectionConfig):
        return given
    return SelectionConfig.model_validate({"name": given} if isinstance(given, str) else dict(given))


def _given(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}

