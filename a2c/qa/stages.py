"""The stage graph of a run: variation → answers → judges (before) → A2C → judges (after) → selection →
metrics → report.

Each stage names the files it reads and writes (typed rows, `a2c.records`) and the config slice its
outputs depend on; `a2c.run.stage.run_stages` runs or reuses them. Every stage is batched over the whole
dataset, in chunks of `chunk_size` questions. `ALGORITHM_1` (variation, answers, A2C) is what the
decoding wrapper `AskToChoose` runs on an in-memory store: one implementation of Algorithm 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache, cached_property
from typing import NamedTuple

import numpy as np

from a2c.common.errors import A2CError
from a2c.common.seeds import stable_seed
from a2c.judges import JUDGES, Judge, JudgeSpec, build_judge
from a2c.judges.presets import judge_options
from a2c.llm.base import Generator
from a2c.llm.config import generator_slice
from a2c.metrics import cons_lex
from a2c.metrics.set_metrics import AnswerSet, computed_metrics
from a2c.metrics.sets import chunk_judge_scores
from a2c.prompting.paraphrase import paraphrase_questions
from a2c.prompting.paraphrase_checks import RULE_VERSION as PARAPHRASE_RULE
from a2c.qa.config import ExperimentConfig
from a2c.qa.correctness.accuracy import accuracy_columns, uses_run_generator
from a2c.qa.data import QARecord
from a2c.qa.data.samples import main_answers
from a2c.qa.meaning import meaning_check
from a2c.qa.measures import TokenSet, chunk_measures
from a2c.qa.metric_columns import compute_columns, computed_columns
from a2c.qa.rank import ask_to_choose
from a2c.qa.report import REPORT_FILES, write_report
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    PARAPHRASES,
    PHASES,
    SELECTION_SCORES,
    SELECTIONS,
    SOURCES,
    SUMMARY,
    UNCERTAINTY,
    Accuracy,
    ChoiceRow,
    GenerationRow,
    MetricRow,
    ParaphraseItem,
    ParaphraseRow,
    Phase,
    Question,
    SelectionRow,
    SelectionScoreRow,
    Source,
    UncertaintyRow,
)
from a2c.qa.scoring import ScoreColumns
from a2c.qa.selection import SelectionInputs, method_judges, method_settings, select
from a2c.qa.selection_accuracy import SelectionAccuracy
from a2c.qa.summary import SCHEMA_VERSION as SUMMARY_SCHEMA
from a2c.qa.summary import summarize_metrics
from a2c.qa.variation import Answer, AnswerTask, answer, temperature_tasks
from a2c.qa.vote import PositionPrior
from a2c.run.itemrows import ItemRows
from a2c.run.runfiles import MatrixKey, MatrixSet, RunFileError
from a2c.run.stage import DATASET, RunContext, Slice, Stage, StageStats, json_digest
from a2c.run.store import Store, append_rows
from a2c.system.progress import status

Sets = dict[str, dict[Source, list[str]]]  # question id → source → answer texts
Tokens = dict[tuple[str, Source], list[np.ndarray]]  # (id, source) → the answers' token log-probabilities


@dataclass
class QAContext(RunContext[ExperimentConfig]):
    """The stages' context of a QA run: the questions, their references and the judges (built once)."""

    questions: list[Question] = field(default_factory=list)
    records: dict[str, QARecord] = field(default_factory=dict)  # references by id, for accuracy
    _judges: dict[str, Judge] = field(default_factory=dict, kw_only=True)
    # whose rank replies the debiased vote's position prior is counted over: the run's questions together,
    # or (the wrapper, the server) each question's own, so no answer depends on the questions asked with it
    pooled_prior: bool = field(default=True, kw_only=True)

    @cached_property
    def dataset_digest(self) -> str:
        return json_digest({"questions": [asdict(q) for q in self.questions],
                            "records": [_digested(r) for r in self.records.values()]})

    def context_of(self, question_id: str) -> str:
        """The text a question is asked with (`QARecord.context`); "" for none or a wrapper input."""
        record = self.records.get(question_id)
        return record.context if record is not None else ""

    def item_texts(self) -> dict[str, str]:
        return {q.id: q.question for q in self.questions}

    def judges(self) -> dict[str, Judge]:
        """Judges by name, built once; a judge that asks a generator gets the main one unless it names one,
        and judges with a score cache share the run's cache file."""
        if not self._judges:
            for spec in self.config.judges:
                self._judges[spec.name] = self._build_judge(spec, self.generator)
        return self._judges

    def _build_judge(self, spec: JudgeSpec, generator: Generator) -> Judge:
        """A judge of the run: one that asks a model gets `generator` unless it names one, and one with a
        score cache shares the run's cache file."""
        options = spec.options
        if JUDGES.get(spec.name).takes_run_generator and options.get("generator") is None:
            options["generator"] = generator
        if "cache" in judge_options(spec.name):
            options.setdefault("cache", self.config.generator.cache)  # one cache file per run
        return build_judge(spec.name, **options)

    @cached_property
    def meaning_judge(self) -> Judge:
        """The paraphrase meaning check's judge (`variation.meaning_check.judge`), built once; a run judge
        of the same name and options is reused rather than loaded twice."""
        check = self.config.variation.meaning_check
        assert check is not None, "no meaning check configured"
        same = next((spec for spec in self.config.judges
                     if (spec.name, spec.options) == (check.judge.name, check.judge.options)), None)
        if same is not None:
            return self.judges()[same.name]
        return self._build_judge(check.judge, self.aux)


def _digested(record: QARecord) -> dict[str, object]:
    """A record's fields as the dataset digest reads them: an empty `context` is left out, so standalone
    questions key their stages as they did before records could hold one (no run folder reruns)."""
    fields = asdict(record)
    if not fields.get("context"):
        fields.pop("context", None)
    return fields


def qa_context(config: ExperimentConfig, store: Store, records: list[QARecord]) -> QAContext:
    """The stages' context for a config's records in a run folder (generators built from the config)."""
    return QAContext(config, store, [Question(r.id, r.question) for r in records], {r.id: r for r in records})


# -- config slices: only what a stage's outputs depend on -------------------------------------------------

def _techniques(config: ExperimentConfig) -> list[Slice]:
    return [asdict(t) for t in config.variation.resolved_techniques()]


def variation_slice(config: ExperimentConfig) -> Slice:
    return {"aux_generator": generator_slice(config.aux_generator or config.generator),
            "seed": config.seed,
            "techniques": _techniques(config),
            "paraphrase_max_tokens": config.variation.paraphrase_max_tokens,
            "paraphrase_checks": PARAPHRASE_RULE,
            # only when set, so runs without a meaning check keep their keys
            **({"meaning_check": config.variation.meaning_check.model_dump(mode="json")}
               if config.variation.meaning_check is not None else {})}


def answers_slice(config: ExperimentConfig) -> Slice:
    return {"generator": generator_slice(config.generator), "seed": config.seed,
            **config.variation.model_dump(include={"paraphrase_temperature", "temperatures", "top_p",
                                                   "samples", "long_max_tokens", "short_max_tokens"}),
            # only when asked for, so runs without log-probabilities keep their keys
            **({"logprobs": config.variation.logprobs} if config.variation.logprobs is not None else {})}


# judge options that change no score: where scores are cached, how many go per batch, where they are cut,
# and the device (a model judge scores the same on a GPU and the CPU to 1e-4, and its score cache key
# leaves the device out too)
_NOT_IN_SCORES = frozenset({"cache", "batch_size", "threshold", "device"})


def _scoring_spec(spec: JudgeSpec) -> Slice:
    return {k: v for k, v in spec.model_dump(mode="json").items() if k not in _NOT_IN_SCORES}


def _on_run_generator(spec: JudgeSpec) -> bool:
    return JUDGES.get(spec.name).takes_run_generator and spec.options.get("generator") is None


def judges_slice(config: ExperimentConfig) -> Slice:
    judges = [_scoring_spec(spec) for spec in config.judges]
    on_run_generator = any(_on_run_generator(s) for s in config.judges)
    return {"judges": judges,
            "generator": generator_slice(config.generator) if on_run_generator else None}


def judges_before_slice(config: ExperimentConfig) -> Slice:
    return {**judges_slice(config), "answer_field": config.variation.answer_field}


def a2c_slice(config: ExperimentConfig) -> Slice:
    return {"generator": generator_slice(config.generator), "seed": config.seed,
            "techniques": _techniques(config),
            **config.variation.model_dump(include={"top_p", "paraphrase_max_tokens", "answer_field"}),
            # "a2c": the section's earlier name, kept so folders written before keep their rank prompts
            "a2c": _a2c_settings(config), "paraphrase_checks": PARAPHRASE_RULE}


def _a2c_settings(config: ExperimentConfig) -> Slice:
    """The rank prompts' settings; `option_order: fixed` (the prompts made before the key existed) is
    left out, so folders written before it keep their choices. The vote is not a prompt setting: it counts
    the choices afterwards, in the selection stage, so changing it asks no rank prompt again."""
    a2c = config.ask_to_choose
    return a2c.model_dump(exclude={"enabled", "vote",
                                   *(["option_order"] if a2c.option_order == "fixed" else [])})


def selection_slice(config: ExperimentConfig) -> Slice:
    """The methods with their options and settings, and the judges whose matrices they read as the judges
    stage scored them (not the matrices file itself: a judge no method reads changes nothing here)."""
    judges = {spec.name: spec for spec in config.judges}

    def judge(name: str) -> Slice:
        spec = judges[name]
        return {**_scoring_spec(spec),
                "generator": generator_slice(config.generator) if _on_run_generator(spec) else None}

    return {"answer_field": config.variation.answer_field,
            "methods": [{"name": spec.name, **method_settings(spec, config),
                         "judges": [judge(name) for name in method_judges(spec, config)]}
                        for spec in config.selection_methods]}


def metrics_slice(config: ExperimentConfig) -> Slice:
    # the summary's schema too: a run folder of an older a2c gets its metrics recomputed, with no model call
    settings: Slice = {"summary_schema": SUMMARY_SCHEMA, "name": config.name, "model": config.generator.model,
                       "a2c": config.ask_to_choose.enabled,
                       "answer_field": config.variation.answer_field,
                       "similarities": [s.model_dump(mode="json") for s in config.accuracy.similarities],
                       "thresholds": {s.name: s.options.get("threshold") for s in config.judges},
                       "entropy_judge": config.entropy_judge_name}
    rule = config.accuracy.rule
    if rule.name != "truthfulqa" or rule.options:  # the default rule leaves older runs' keys as they were
        settings["correctness_rule"] = rule.model_dump(mode="json")
    if uses_run_generator(rule.name, rule.options):  # a grader on the run's model grades with its settings
        settings["grader_generator"] = generator_slice(config.generator)
    if computed := [name for name, _, _ in computed_metrics()]:  # a newly registered metric recomputes
        settings["computed_metrics"] = computed
    return settings


def _a2c_enabled(config: ExperimentConfig) -> bool:
    return config.ask_to_choose.enabled


# -- stages -----------------------------------------------------------------------------------------------

def run_variation(ctx: QAContext, stats: StageStats) -> None:
    """In-context paraphrases of every question, one per technique (AuxLLM)."""
    ctx.store.write_rows(PARAPHRASES, _paraphrase_rows(ctx))


def _paraphrase_rows(ctx: QAContext) -> Iterator[ParaphraseRow]:
    techniques = ctx.config.variation.resolved_techniques()
    check = ctx.config.variation.meaning_check
    meaning = None if check is None else meaning_check(ctx.meaning_judge, check.threshold)
    for chunk in ctx.chunks("paraphrases", ctx.questions):
        paraphrases = paraphrase_questions(ctx.aux, [q.question for q in chunk], techniques,
                                           seed=ctx.config.seed,
                                           max_tokens=ctx.config.variation.paraphrase_max_tokens,
                                           references=[ctx.records[q.id].references if q.id in ctx.records
                                                       else () for q in chunk], meaning=meaning)
        # the first draw's problem and the meaning score are written only under a meaning check, so the
        # paraphrases of a run without one stay byte for byte as they were
        yield from (ParaphraseRow(id=q.id, question=q.question, paraphrases=[
            ParaphraseItem(technique=p.technique, text=p.text, ok=p.ok, problem=p.problem,
                           **({"first_problem": p.first_problem, "meaning": p.meaning} if meaning else {}))
            for p in per_question]) for q, per_question in zip(chunk, paraphrases, strict=True))


def run_answers(ctx: QAContext, stats: StageStats) -> None:
    """Answers to the paraphrased questions (Y_c) and to q at every temperature (Y_t): long and short."""
    ctx.store.write_rows(GENERATIONS, _answer_rows(ctx))


def _answer_rows(ctx: QAContext) -> Iterator[GenerationRow]:
    var, seed = ctx.config.variation, ctx.config.seed
    paraphrased = ctx.store.iter_rows(PARAPHRASES)  # one row per question, in order: read as chunks go
    for chunk in ctx.chunks("answers", paraphrased, total=len(ctx.questions)):
        tasks: list[AnswerTask] = []
        slots: list[tuple[str, Source, int, str | None]] = []  # id, source, slot, technique per task
        for q in chunk:
            for slot, p in enumerate(q.paraphrases):
                if not p.ok:
                    continue  # a paraphrase that failed its checks twice is left out of Y_c (and counted)
                tasks.append(AnswerTask(p.text, var.paraphrase_temperature, var.top_p,
                                        stable_seed(seed, q.question, "paraphrase", slot),
                                        context=ctx.context_of(q.id)))
                slots.append((q.id, "paraphrase", slot, p.technique))
        for q in chunk:
            samples = temperature_tasks([q.question], var.temperatures, top_p=var.top_p, samples=var.samples,
                                        seed=seed, context=ctx.context_of(q.id))
            tasks += samples
            slots += [(q.id, "temperature", slot, None) for slot in range(len(samples))]
        answers = answer(ctx.generator, tasks, long_max_tokens=var.long_max_tokens,
                         short_max_tokens=var.short_max_tokens, logprobs=var.logprobs)
        if var.logprobs is not None:
            _check_logprobs_given(ctx, answers)
        yield from (GenerationRow(id=qid, source=source, slot=slot, technique=technique,
                                  temperature=task.temperature, asked=task.question, long=a.long,
                                  short=a.short, token_logprobs=None if a.token_logprobs is None
                                  else list(a.token_logprobs))
                    for (qid, source, slot, technique), task, a in zip(slots, tasks, answers, strict=True))


class LogprobsNotGivenError(A2CError):
    """`variation.logprobs` asked for token log-probabilities and the generator gave none."""


def _check_logprobs_given(ctx: QAContext, answers: list[Answer]) -> None:
    """A run that asks for log-probabilities stops, in one line, at the first chunk whose answers came back
    without them: its white-box measures would be missing from every table without a word."""
    missing = sum(a.token_logprobs is None for a in answers)
    if missing:
        where = ", ".join(getattr(ctx.config.generator, "base_urls", ())) or ctx.config.generator.backend
        raise LogprobsNotGivenError(
            f"the {ctx.generator.backend} generator ({ctx.generator.model} at {where}) returned no token "
            f"log-probabilities for {missing} of {len(answers)} answers; variation.logprobs asks for them "
            "for the white-box measures (MSP, PPL)",
            hint="use a server or backend that returns log-probabilities, or drop variation.logprobs")


def _empty_sets(chunk: list[Question]) -> Sets:
    return {q.id: {s: [] for s in SOURCES} for q in chunk}


def _ids(questions: Iterable[Question]) -> list[str]:
    return [q.id for q in questions]


def _before_sets(ctx: QAContext, chunk: list[Question], generations: ItemRows[GenerationRow]) -> Sets:
    """Y_c and Y_t of a chunk of questions, as texts of the configured answer field."""
    return _before_sets_and_tokens(ctx, chunk, generations)[0]


def _before_sets_and_tokens(ctx: QAContext, chunk: list[Question], generations: ItemRows[GenerationRow]
                            ) -> tuple[Sets, Tokens]:
    """Y_c and Y_t of a chunk of questions, with each set's answers' chosen-token log-probabilities where
    every answer of the set has them (the white-box measures' input; absent otherwise)."""
    sets = _empty_sets(chunk)
    given: dict[tuple[str, Source], list[list[float] | None]] = {}
    for row in generations.rows(_ids(chunk)):
        sets[row.id][row.source].append(row.answer(ctx.config.variation.answer_field))
        given.setdefault((row.id, row.source), []).append(row.token_logprobs)
    tokens = {key: [np.asarray(lp, dtype=np.float64) for lp in lps if lp is not None]
              for key, lps in given.items() if all(lp is not None for lp in lps)}
    return sets, tokens


def _after_sets(chunk: list[Question], choices: ItemRows[ChoiceRow]) -> Sets:
    """Ŷ_c and Ŷ_t of a chunk of questions: the parsed choices only (unparsed replies are counted, not
    guessed)."""
    sets = _empty_sets(chunk)
    for row in choices.rows(_ids(chunk)):
        if row.text is not None:
            sets[row.id][row.source].append(row.text)
    return sets


@contextmanager
def _phase_sets(ctx: QAContext, phase: Phase) -> Iterator[Callable[[list[Question]], tuple[Sets, Tokens]]]:
    """The sets of a phase, a chunk of questions at a time: the run's answers are never all held. Only the
    answers before A2C have token log-probabilities (A2C's choices are rank replies)."""
    if phase == "before":
        with ctx.store.item_rows(GENERATIONS, _ids(ctx.questions)) as generations:
            yield lambda chunk: _before_sets_and_tokens(ctx, chunk, generations)
    else:
        with ctx.store.item_rows(CHOICES, _ids(ctx.questions)) as choices:
            yield lambda chunk: (_after_sets(chunk, choices), {})


def _run_judges(ctx: QAContext, stats: StageStats, phase: Phase) -> None:
    """Every judge over every set of the dataset in one batched pass per judge and chunk."""
    judges = ctx.judges()
    with ctx.store.matrix_writer(MATRICES[phase]) as write, _phase_sets(ctx, phase) as sets_of:
        for chunk in ctx.chunks(f"judges ({phase})", ctx.questions):
            sets, _ = sets_of(chunk)
            keys = [(q, s) for q in chunk for s in SOURCES]
            matrices: dict[MatrixKey, np.ndarray] = {}
            for name, judge in judges.items():
                with status(f"judges ({phase}): {name}"):  # a model judge loads on first use, then scores
                    per_set = judge.matrices([q.question for q, _ in keys], [sets[q.id][s] for q, s in keys])
                stats.judge_pairs_scored += judge.stats.scored
                stats.judge_pairs_cached += judge.stats.cached
                for (q, s), m in zip(keys, per_set, strict=True):
                    matrices[(name, s, q.id)] = m
            write(MatrixSet(matrices))


def run_judges_before(ctx: QAContext, stats: StageStats) -> None:
    _run_judges(ctx, stats, "before")


def run_judges_after(ctx: QAContext, stats: StageStats) -> None:
    _run_judges(ctx, stats, "after")


def run_a2c(ctx: QAContext, stats: StageStats) -> None:
    """Algorithm 1 steps 3-5: fresh paraphrases, rank prompts over Y_c and Y_t, parsed choices."""
    ctx.store.write_rows(CHOICES, _choice_rows(ctx))


def _choice_rows(ctx: QAContext) -> Iterator[ChoiceRow]:
    cfg = ctx.config
    with ctx.store.item_rows(GENERATIONS, _ids(ctx.questions)) as generations:
        for chunk in ctx.chunks("ask-to-choose", ctx.questions):
            sets = _empty_sets(chunk)
            temperatures: dict[str, list[float]] = {q.id: [] for q in chunk}
            for row in generations.rows(_ids(chunk)):
                sets[row.id][row.source].append(row.answer(cfg.variation.answer_field))
                if row.source == "temperature":  # a given answer of no said temperature: the rank one
                    temperatures[row.id].append(cfg.ask_to_choose.rank_temperature if row.temperature is None
                                                else row.temperature)
            choices = ask_to_choose(
                ctx.generator, [q.question for q in chunk], [sets[q.id]["paraphrase"] for q in chunk],
                [sets[q.id]["temperature"] for q in chunk], [temperatures[q.id] for q in chunk],
                techniques=cfg.variation.resolved_techniques(), top_p=cfg.variation.top_p,
                seed=stable_seed(cfg.seed, "a2c"), rank_temperature=cfg.ask_to_choose.rank_temperature,
                max_tokens=cfg.ask_to_choose.max_tokens,
                paraphrase_max_tokens=cfg.variation.paraphrase_max_tokens,
                idk_text=cfg.ask_to_choose.idk_text, option_order=cfg.ask_to_choose.option_order,
                passages=[ctx.context_of(q.id) for q in chunk])
            yield from (c.row(q.id) for q, per_question in zip(chunk, choices, strict=True)
                        for c in per_question)


def run_selection(ctx: QAContext, stats: StageStats) -> None:
    """Every configured method's pick per question and source, method by method, a chunk of questions at a
    time (USC: one generate call per chunk); the matrices and judges only where a method reads them."""
    ctx.store.write_rows(SELECTIONS, _selection_rows(ctx))


def _selection_rows(ctx: QAContext) -> Iterator[SelectionRow]:
    with ExitStack() as stack:  # the npz is opened only if a method reads matrices, and read as they do
        matrices = cache(lambda: stack.enter_context(ctx.store.matrix_reader(MATRICES["before"])))
        generations = stack.enter_context(ctx.store.item_rows(GENERATIONS, _ids(ctx.questions)))
        choice_rows = stack.enter_context(ctx.store.item_rows(CHOICES, _ids(ctx.questions))) \
            if ctx.config.ask_to_choose.enabled else None
        # the run's rank replies counted once, on first use (a vote that reads them), the file read as it goes
        run_prior = cache(lambda: PositionPrior.of_rows(ctx.store.iter_rows(CHOICES))) \
            if ctx.pooled_prior and choice_rows is not None else None

        def inputs(method: str) -> Iterator[SelectionInputs]:
            for chunk in ctx.chunks(f"selection ({method})", ctx.questions):
                choices: dict[tuple[str, Source], list[ChoiceRow]] = {}
                for row in choice_rows.rows(_ids(chunk)) if choice_rows is not None else ():
                    choices.setdefault((row.id, row.source), []).append(row)
                yield SelectionInputs(ctx.config, chunk, _before_sets(ctx, chunk, generations), choices,
                                      matrices, lambda name: ctx.judges()[name], lambda: ctx.generator,
                                      run_prior, main_answers(ctx.records, _ids(chunk)))

        yield from select(inputs, ctx.config.selection_methods)


def _set_means(per_answer: ScoreColumns, sizes: np.ndarray) -> list[Accuracy | None]:
    """Each set's mean accuracy fields (None: an empty set, or one with an answer a grader left ungraded,
    whose mean is NaN), for the sets laid end to end in `per_answer`."""
    return [None if n == 0 or math.isnan(acc) else Accuracy(max_true=max_true, diff=diff, acc=acc)
            for n, (max_true, diff, acc) in zip(sizes.tolist(), per_answer.set_means(sizes).tolist(),
                                                strict=True)]


def _scores(ctx: QAContext, answers: list[str], refs: list[QARecord]) -> dict[str, ScoreColumns]:
    """Every accuracy column's scores of the answers against their records (the run's similarities under
    TruthfulQA's protocol, or its gold-answer rule), in one batched call."""
    accuracy = ctx.config.accuracy
    with status("accuracy: " + ", ".join(accuracy.columns)):
        return accuracy_columns(accuracy.rule.name, accuracy.rule.options,
                                [(spec.name, spec.options) for spec in accuracy.similarities], answers, refs,
                                run_generator=lambda: ctx.generator)


class _SetFields(NamedTuple):
    """What a set's rows hold besides its stacked measures, gathered while the chunk's sets are read."""

    id: str
    source: Source
    n: int
    accurate: list[bool] | None
    cons_lex: float | None
    accuracy: dict[str, Accuracy | None]
    extra: dict[str, float | None]


def _metric_rows(ctx: QAContext, phase: Phase, chunk: list[Question], sets: Sets, matrices: MatrixSet,
                 selection: SelectionAccuracy, picks: list[SelectionRow], tokens: Tokens | None = None
                 ) -> tuple[list[MetricRow], list[UncertaintyRow]]:
    """The metric and uncertainty rows of one phase for a chunk of questions; before A2C, also the accuracy of
    the chunk's `picks` and what a random pick from each set would be (into `selection`)."""
    judges = ctx.judges()
    extra = computed_columns(list(judges))
    sims = ctx.config.accuracy.columns
    # questions without references have no accuracy: they are left out here, their rows get none; the
    # referenced sets' answers are scored laid end to end, each set starting where the one before ends
    referenced_sets = [(q.id, s) for q in chunk if ctx.records[q.id].has_references for s in SOURCES]
    sizes = np.array([len(sets[qid][s]) for qid, s in referenced_sets], dtype=np.int64)
    starts = dict(zip(referenced_sets, (np.cumsum(sizes) - sizes).tolist(), strict=True))
    flat = [(qid, s, k) for qid, s in referenced_sets for k in range(len(sets[qid][s]))]
    scored_picks = [p for p in picks if p.text is not None and ctx.records[p.id].has_references]
    answer_picks = [_is_answer(p, sets) for p in scored_picks]
    # a pick that is one of its set's answers takes that answer's scores; the others (the "don't know"
    # option's text) are scored in the same batch, after the answers
    others = [p for p, is_answer in zip(scored_picks, answer_picks, strict=True) if not is_answer]
    found = _scores(ctx, [sets[qid][s][k] for qid, s, k in flat] + [p.text or "" for p in others],
                    [ctx.records[qid] for qid, _, _ in flat] + [ctx.records[p.id] for p in others])
    means = {sim: iter(_set_means(found[sim], sizes)) for sim in sims}
    # a chunk's set scores and uncertainty measures are computed for all its sets at once
    # (`chunk_judge_scores`, `chunk_measures`): each set's matrices and decisions are gathered first
    judged_sets: list[tuple[np.ndarray, np.ndarray, list[bool] | None]] = []
    measured: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = []
    token_sets: list[TokenSet] = []
    rows: list[_SetFields] = []
    for q in chunk:
        for s in SOURCES:
            texts = sets[q.id][s]
            at = starts.get((q.id, s))  # None: a question without references
            per_sim = {} if at is None else {sim: found[sim].take(slice(at, at + len(texts))) for sim in sims}
            # a set with an answer a grader left ungraded (NaN) has no accuracy: left out, not counted wrong
            graded = at is not None and not np.isnan(per_sim[sims[0]].acc).any()
            accurate = (per_sim[sims[0]].acc == 1.0).tolist() if graded else None
            set_matrices = {name: matrices[(name, s, q.id)] for name in judges}
            decisions = {name: judge.equivalent(set_matrices[name]) for name, judge in judges.items()}
            judged = {name: AnswerSet(texts, set_matrices[name], decisions[name]) for name in judges}
            judged_sets.extend((set_matrices[name], decisions[name], accurate) for name in judges)
            measured.append((set_matrices, decisions))
            token_sets.append((tokens or {}).get((q.id, s)))
            rows.append(_SetFields(q.id, s, len(texts), accurate, cons_lex(texts),
                                   {sim: next(means[sim]) for sim in per_sim},
                                   compute_columns(extra, texts, judged)))
            if phase == "before":
                selection.put_set(q.id, s, bool(texts), per_sim if graded else {})
    others_at = iter(range(len(flat), len(flat) + len(others)))
    pick_at = np.array([starts[(p.id, p.source)] + (p.candidate or 0) if is_answer else next(others_at)
                        for p, is_answer in zip(scored_picks, answer_picks, strict=True)], dtype=np.int64)
    selection.put_picks(scored_picks, {sim: found[sim].take(pick_at) for sim in sims})
    set_scores = iter(chunk_judge_scores(judged_sets))
    metric_rows = [MetricRow(id=row.id, source=row.source, phase=phase, n=row.n,
                             n_accurate=None if row.accurate is None else sum(row.accurate),
                             cons_lex=row.cons_lex, judges={name: next(set_scores) for name in judges},
                             accuracy=row.accuracy, extra=row.extra) for row in rows]
    uncertainty = [UncertaintyRow(id=row.id, source=row.source, phase=phase, accurate=row.accurate,
                                  sets=per_set, answers=per_answer)
                   for row, (per_set, per_answer) in zip(rows, chunk_measures(measured, judges, token_sets),
                                                         strict=True)]
    return metric_rows, uncertainty


def _is_answer(pick: SelectionRow, sets: Sets) -> bool:
    """Whether the pick's text is that of the answer it names (`candidate`), whose scores are then its."""
    answers = sets[pick.id][pick.source]
    k = pick.candidate
    return k is not None and k < len(answers) and answers[k] == pick.text


def _selection_scores(ctx: QAContext, selection: SelectionAccuracy) -> Iterator[SelectionScoreRow]:
    """Each pick's accuracy per similarity (scored in the before phase), in the order of the picks' file, then
    `random`: the exact expectation over the scores of the source's candidates."""
    yield from (selection.pick_row(pick, ctx.records[pick.id].has_references)
                for pick in ctx.store.iter_rows(SELECTIONS))
    yield from (selection.random_row(q.id, s, ctx.records[q.id].has_references)
                for q in ctx.questions for s in SOURCES)


def run_metrics(ctx: QAContext, stats: StageStats) -> None:
    """Per-question metrics for every (source, phase), the uncertainty measures of every set, the accuracy
    of every selection method's picks, then dataset means (undefined values skipped). Chunk by chunk of
    questions, each written as it is done, with only that chunk's answers and matrices read: what is held
    for the whole run is a few numbers per set for the `random` rows."""
    phases = [p for p in PHASES if p == "before" or ctx.config.ask_to_choose.enabled]
    selection = SelectionAccuracy(ctx.questions, [m.name for m in ctx.config.selection_methods],
                                  ctx.config.accuracy.columns)
    with ctx.store.streams(METRICS.name, UNCERTAINTY.name) as (metrics_out, uncertainty_out), \
            ctx.store.item_rows(SELECTIONS, _ids(ctx.questions)) as picks:
        for p in phases:
            with ctx.store.matrix_reader(MATRICES[p]) as reader, _phase_sets(ctx, p) as sets_of:
                for chunk in ctx.chunks(f"metrics ({p})", ctx.questions):
                    matrices = reader.read({q.id for q in chunk})
                    sets, tokens = sets_of(chunk)
                    rows, uncertainty = _metric_rows(ctx, p, chunk, sets, matrices, selection,
                                                     picks.rows(_ids(chunk)) if p == "before" else [], tokens)
                    append_rows(METRICS, metrics_out, rows)
                    append_rows(UNCERTAINTY, uncertainty_out, uncertainty)
    ctx.store.write_rows(SELECTION_SCORES, _selection_scores(ctx, selection))
    del selection
    summary = summarize_metrics(ctx.store, ctx.config, _prompts_cut(ctx))
    ctx.store.write_text(SUMMARY.name, summary.model_dump_json(indent=2) + "\n")


def _prompts_cut(ctx: QAContext) -> int:
    """Samples answered from a prompt cut to fit the model's context (`context_policy: truncate`), over the
    generating stages, as their markers recorded them (a reused stage's count is that of its outputs)."""
    total = 0
    for stage in STAGES[:STAGES.index(METRICS_STAGE)]:
        try:
            marker = ctx.store.read_json(stage.marker) if ctx.store.exists(stage.marker) else {}
        except RunFileError:
            marker = {}  # damaged: the stage runs again before metrics do, so this is never the last word
        total += int(marker.get("stats", {}).get("truncated", 0)) if isinstance(marker, dict) else 0
    return total


def run_report(ctx: QAContext, stats: StageStats) -> None:
    with status("report: tables and figures"):
        write_report(ctx.store)


def _no_settings(config: ExperimentConfig) -> Slice:
    return {}


VARIATION = Stage("variation", reads=(DATASET,), writes=(PARAPHRASES,), config_slice=variation_slice,
                  run=run_variation)
ANSWERS = Stage("answers", reads=(PARAPHRASES,), writes=(GENERATIONS,), config_slice=answers_slice,
                run=run_answers)
JUDGES_BEFORE = Stage("judges_before", reads=(DATASET, GENERATIONS), writes=(MATRICES["before"],),
                      config_slice=judges_before_slice, run=run_judges_before)
# "a2c" in earlier versions (the package's name): a folder they wrote keeps its rank prompts
A2C = Stage("ask_to_choose", reads=(DATASET, GENERATIONS), writes=(CHOICES,), config_slice=a2c_slice,
            run=run_a2c, enabled=_a2c_enabled, former_names=("a2c",))
JUDGES_AFTER = Stage("judges_after", reads=(DATASET, CHOICES), writes=(MATRICES["after"],),
                     config_slice=judges_slice, run=run_judges_after, enabled=_a2c_enabled)
# reads the matrices through the slice of the judges its methods use (`selection_slice`), not the file
SELECTION = Stage("selection", reads=(DATASET, GENERATIONS, CHOICES), writes=(SELECTIONS,),
                  config_slice=selection_slice, run=run_selection)
METRICS_STAGE = Stage("metrics", reads=(DATASET, PARAPHRASES, GENERATIONS, CHOICES, *MATRICES.values(),
                                        SELECTIONS),
                      writes=(METRICS, UNCERTAINTY, SELECTION_SCORES, SUMMARY), config_slice=metrics_slice,
                      run=run_metrics)
REPORT = Stage("report", reads=(METRICS, SUMMARY), writes=REPORT_FILES, config_slice=_no_settings,
               run=run_report)

STAGES: tuple[Stage, ...] = (VARIATION, ANSWERS, JUDGES_BEFORE, A2C, JUDGES_AFTER, SELECTION, METRICS_STAGE,
                             REPORT)
ALGORITHM_1: tuple[Stage, ...] = (VARIATION, ANSWERS, A2C)  # what `AskToChoose` runs
