"""The stage graph of a run: variation → answers → judges (before) → A2C → judges (after) → metrics → report.

Each stage names the files it reads and writes (typed rows, `a2c.records`) and the config slice its
outputs depend on; `a2c.stage.run_stages` runs or reuses them. Every stage is batched over the whole
dataset, in chunks of `chunk_size` questions. `ALGORITHM_1` (variation, answers, A2C) is what the
decoding wrapper `AskToChoose` runs on an in-memory store: one implementation of Algorithm 1.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
from tqdm import tqdm

from a2c.choose import ask_to_choose
from a2c.config import ExperimentConfig
from a2c.metrics import cons_lex
from a2c.records import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    PARAPHRASES,
    PHASES,
    SOURCES,
    SUMMARY,
    Accuracy,
    GenerationRow,
    MatrixKey,
    MatrixSet,
    MetricRow,
    ParaphraseItem,
    ParaphraseRow,
    Phase,
    RunFileError,
    Source,
)
from a2c.report import REPORT_FILES, summarize_metrics, write_report
from a2c.scoring import judge_scores, score_answers
from a2c.seeds import stable_seed
from a2c.stage import DATASET, RunContext, Slice, Stage, StageStats, generator_slice
from a2c.variation import AnswerTask, answer, paraphrase_questions, temperature_tasks

Sets = dict[str, dict[Source, list[str]]]  # question id → source → answer texts


# -- config slices: only what a stage's outputs depend on -------------------------------------------------

def _techniques(config: ExperimentConfig) -> list[Slice]:
    return [asdict(t) for t in config.variation.resolved_techniques()]


def variation_slice(config: ExperimentConfig) -> Slice:
    return {"aux_generator": generator_slice(config.aux_generator or config.generator),
            "seed": config.seed,
            "techniques": _techniques(config),
            "paraphrase_max_tokens": config.variation.paraphrase_max_tokens}


def answers_slice(config: ExperimentConfig) -> Slice:
    return {"generator": generator_slice(config.generator), "seed": config.seed,
            **config.variation.model_dump(include={"paraphrase_temperature", "temperatures", "top_p",
                                                   "samples", "long_max_tokens", "short_max_tokens"})}


# judge options that change no score: where scores are cached, how many go per batch, where they are cut
_NOT_IN_SCORES = frozenset({"cache", "batch_size", "threshold"})


def judges_slice(config: ExperimentConfig) -> Slice:
    judges = [{k: v for k, v in spec.model_dump(mode="json").items() if k not in _NOT_IN_SCORES}
              for spec in config.judges]
    on_run_generator = any(s.name == "llm" and s.options.get("generator") is None for s in config.judges)
    return {"judges": judges,
            "generator": generator_slice(config.generator) if on_run_generator else None}


def judges_before_slice(config: ExperimentConfig) -> Slice:
    return {**judges_slice(config), "answer_field": config.variation.answer_field}


def a2c_slice(config: ExperimentConfig) -> Slice:
    return {"generator": generator_slice(config.generator), "seed": config.seed,
            "techniques": _techniques(config),
            **config.variation.model_dump(include={"top_p", "paraphrase_max_tokens", "answer_field"}),
            "a2c": config.a2c.model_dump(exclude={"enabled"})}


def metrics_slice(config: ExperimentConfig) -> Slice:
    return {"name": config.name, "model": config.generator.model, "a2c": config.a2c.enabled,
            "answer_field": config.variation.answer_field,
            "similarities": [s.model_dump(mode="json") for s in config.accuracy.similarities],
            "thresholds": {s.name: s.options.get("threshold") for s in config.judges},
            "entropy_judge": config.entropy_judge_name}


def _a2c_enabled(config: ExperimentConfig) -> bool:
    return config.a2c.enabled


# -- stages -----------------------------------------------------------------------------------------------

def run_variation(ctx: RunContext, stats: StageStats) -> None:
    """In-context paraphrases of every question, one per technique (AuxLLM)."""
    techniques = ctx.config.variation.resolved_techniques()
    rows = []
    for chunk in ctx.chunks("paraphrases", ctx.questions):
        paraphrases = paraphrase_questions(ctx.aux, [q.question for q in chunk], techniques,
                                           seed=ctx.config.seed,
                                           max_tokens=ctx.config.variation.paraphrase_max_tokens,
                                           references=[ctx.records[q.id].references if q.id in ctx.records
                                                       else () for q in chunk])
        rows += [ParaphraseRow(id=q.id, question=q.question, paraphrases=[
            ParaphraseItem(technique=p.technique, text=p.text, ok=p.ok, problem=p.problem)
            for p in per_question]) for q, per_question in zip(chunk, paraphrases, strict=True)]
    ctx.store.write_rows(PARAPHRASES, rows)


def run_answers(ctx: RunContext, stats: StageStats) -> None:
    """Answers to the paraphrased questions (Y_c) and to q at every temperature (Y_t): long and short."""
    var, seed = ctx.config.variation, ctx.config.seed
    rows: list[GenerationRow] = []
    for chunk in ctx.chunks("answers", ctx.store.read_rows(PARAPHRASES)):
        tasks: list[AnswerTask] = []
        slots: list[tuple[str, Source, int, str | None]] = []  # id, source, slot, technique per task
        for q in chunk:
            for slot, p in enumerate(q.paraphrases):
                if not p.ok:
                    continue  # a paraphrase that failed its checks twice is left out of Y_c (and counted)
                tasks.append(AnswerTask(p.text, var.paraphrase_temperature, var.top_p,
                                        stable_seed(seed, q.question, "paraphrase", slot)))
                slots.append((q.id, "paraphrase", slot, p.technique))
        for q in chunk:
            samples = temperature_tasks([q.question], var.temperatures, top_p=var.top_p, samples=var.samples,
                                        seed=seed)
            tasks += samples
            slots += [(q.id, "temperature", slot, None) for slot in range(len(samples))]
        answers = answer(ctx.generator, tasks, long_max_tokens=var.long_max_tokens,
                         short_max_tokens=var.short_max_tokens)
        rows += [GenerationRow(id=qid, source=source, slot=slot, technique=technique,
                               temperature=task.temperature, asked=task.question, long=a.long, short=a.short)
                 for (qid, source, slot, technique), task, a in zip(slots, tasks, answers, strict=True)]
    ctx.store.write_rows(GENERATIONS, rows)


def _empty_sets(ctx: RunContext) -> Sets:
    return {q.id: {s: [] for s in SOURCES} for q in ctx.questions}


def _before_sets(ctx: RunContext, generations: list[GenerationRow]) -> Sets:
    """Y_c and Y_t per question, as texts of the configured answer field."""
    sets = _empty_sets(ctx)
    for row in generations:
        sets[row.id][row.source].append(row.answer(ctx.config.variation.answer_field))
    return sets


def _after_sets(ctx: RunContext) -> Sets:
    """Ŷ_c and Ŷ_t: the parsed choices only (unparsed replies are counted, not guessed)."""
    sets = _empty_sets(ctx)
    for row in ctx.store.read_rows(CHOICES):
        if row.text is not None:
            sets[row.id][row.source].append(row.text)
    return sets


def _phase_sets(ctx: RunContext, phase: Phase) -> Sets:
    return _before_sets(ctx, ctx.store.read_rows(GENERATIONS)) if phase == "before" else _after_sets(ctx)


def _run_judges(ctx: RunContext, stats: StageStats, phase: Phase) -> None:
    """Every judge over every set of the dataset in one batched pass per judge."""
    sets = _phase_sets(ctx, phase)
    keys = [(q, s) for q in ctx.questions for s in SOURCES]
    matrices: dict[MatrixKey, np.ndarray] = {}
    judges = ctx.judges()
    for name, judge in tqdm(judges.items(), desc=f"judges ({phase})", unit="judge", disable=not ctx.progress):
        per_set = judge.matrices([q.question for q, _ in keys], [sets[q.id][s] for q, s in keys])
        stats.judge_pairs_scored += judge.stats.scored
        stats.judge_pairs_cached += judge.stats.cached
        for (q, s), m in zip(keys, per_set, strict=True):
            matrices[(name, s, q.id)] = m
    ctx.store.write_matrices(MATRICES[phase], MatrixSet(matrices))


def run_judges_before(ctx: RunContext, stats: StageStats) -> None:
    _run_judges(ctx, stats, "before")


def run_judges_after(ctx: RunContext, stats: StageStats) -> None:
    _run_judges(ctx, stats, "after")


def run_a2c(ctx: RunContext, stats: StageStats) -> None:
    """Algorithm 1 steps 3-5: fresh paraphrases, rank prompts over Y_c and Y_t, parsed choices."""
    generations = ctx.store.read_rows(GENERATIONS)
    sets = _before_sets(ctx, generations)
    temperatures: dict[str, list[float]] = {q.id: [] for q in ctx.questions}
    for row in generations:
        if row.source == "temperature":
            temperatures[row.id].append(row.temperature)
    cfg = ctx.config
    rows = []
    for chunk in ctx.chunks("ask-to-choose", ctx.questions):
        choices = ask_to_choose(
            ctx.generator, [q.question for q in chunk], [sets[q.id]["paraphrase"] for q in chunk],
            [sets[q.id]["temperature"] for q in chunk], [temperatures[q.id] for q in chunk],
            techniques=cfg.variation.resolved_techniques(), top_p=cfg.variation.top_p,
            seed=stable_seed(cfg.seed, "a2c"), rank_temperature=cfg.a2c.rank_temperature,
            max_tokens=cfg.a2c.max_tokens, paraphrase_max_tokens=cfg.variation.paraphrase_max_tokens,
            idk_text=cfg.a2c.idk_text)
        rows += [c.row(q.id) for q, per_question in zip(chunk, choices, strict=True) for c in per_question]
    ctx.store.write_rows(CHOICES, rows)


def run_metrics(ctx: RunContext, stats: StageStats) -> None:
    """Per-question metrics for every (source, phase), then dataset means (undefined values skipped)."""
    phases = [p for p in PHASES if p == "before" or ctx.config.a2c.enabled]
    sets = {p: _phase_sets(ctx, p) for p in phases}
    matrices = {p: ctx.store.read_matrices(MATRICES[p]) for p in phases}
    judges = ctx.judges()
    specs = ctx.config.accuracy.similarities
    # accuracy of every answer of the run, one batched call per similarity
    # questions without references have no accuracy: they are left out here, their rows get none
    flat = [(p, q.id, s, k) for p in phases for q in ctx.questions if ctx.records[q.id].has_references
            for s in SOURCES for k in range(len(sets[p][q.id][s]))]
    answers = [sets[p][qid][s][k] for p, qid, s, k in flat]
    refs = [ctx.records[qid] for _, qid, _, _ in flat]
    scores = {spec.name: dict(zip(flat, score_answers(spec.name, answers, refs, **spec.options), strict=True))
              for spec in specs}
    primary = specs[0].name
    rows = []
    for p in phases:
        for q in ctx.questions:
            for s in SOURCES:
                texts = sets[p][q.id][s]
                referenced = ctx.records[q.id].has_references
                accurate = [scores[primary][(p, q.id, s, k)].acc == 1.0 for k in range(len(texts))] \
                    if referenced else None
                per_judge = {}
                for name, judge in judges.items():
                    m = matrices[p][(name, s, q.id)]
                    per_judge[name] = judge_scores(m, judge.equivalent(m), accurate)
                accuracy: dict[str, Accuracy | None] = {}
                for spec in specs if referenced else ():
                    per_answer = [scores[spec.name][(p, q.id, s, k)] for k in range(len(texts))]
                    accuracy[spec.name] = Accuracy(
                        max_true=float(np.mean([a.max_true for a in per_answer])),
                        diff=float(np.mean([a.diff for a in per_answer])),
                        acc=float(np.mean([a.acc for a in per_answer]))) if per_answer else None
                rows.append(MetricRow(id=q.id, source=s, phase=p, n=len(texts),
                                      n_accurate=None if accurate is None else sum(accurate),
                                      cons_lex=cons_lex(texts), judges=per_judge, accuracy=accuracy))
    ctx.store.write_rows(METRICS, rows)
    summary = summarize_metrics(ctx.store, ctx.config, ctx.config.generator.model)
    summary["counts"]["prompts_cut_to_fit_context"] = _prompts_cut(ctx)
    ctx.store.write_json(SUMMARY.name, summary)


def _prompts_cut(ctx: RunContext) -> int:
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


def run_report(ctx: RunContext, stats: StageStats) -> None:
    write_report(ctx.store)


def _no_settings(config: ExperimentConfig) -> Slice:
    return {}


VARIATION = Stage("variation", reads=(DATASET,), writes=(PARAPHRASES,), config_slice=variation_slice,
                  run=run_variation)
ANSWERS = Stage("answers", reads=(PARAPHRASES,), writes=(GENERATIONS,), config_slice=answers_slice,
                run=run_answers)
JUDGES_BEFORE = Stage("judges_before", reads=(DATASET, GENERATIONS), writes=(MATRICES["before"],),
                      config_slice=judges_before_slice, run=run_judges_before)
A2C = Stage("a2c", reads=(DATASET, GENERATIONS), writes=(CHOICES,), config_slice=a2c_slice, run=run_a2c,
            enabled=_a2c_enabled)
JUDGES_AFTER = Stage("judges_after", reads=(DATASET, CHOICES), writes=(MATRICES["after"],),
                     config_slice=judges_slice, run=run_judges_after, enabled=_a2c_enabled)
METRICS_STAGE = Stage("metrics", reads=(DATASET, PARAPHRASES, GENERATIONS, CHOICES, *MATRICES.values()),
                      writes=(METRICS, SUMMARY), config_slice=metrics_slice, run=run_metrics)
REPORT = Stage("report", reads=(METRICS, SUMMARY), writes=REPORT_FILES, config_slice=_no_settings,
               run=run_report)

STAGES: tuple[Stage, ...] = (VARIATION, ANSWERS, JUDGES_BEFORE, A2C, JUDGES_AFTER, METRICS_STAGE, REPORT)
ALGORITHM_1: tuple[Stage, ...] = (VARIATION, ANSWERS, A2C)  # what `AskToChoose` runs
