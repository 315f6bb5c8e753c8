"""The `samples` stage: a samples file's answers written as the variation and answer stages write theirs.

With `dataset: {name: samples}` the run's graph swaps those two stages for this one (`QA_STAGES`), so no
model is asked for paraphrases or answers; every stage after it reads `paraphrases.jsonl` and
`generations.jsonl` as in a generated run. Each sample's per-token log-probabilities, where the file gives
them, are kept beside them in `token_logprobs.jsonl`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from a2c.qa.config import ExperimentConfig
from a2c.qa.data.samples import SampledRecord, sampled
from a2c.qa.rows import (
    GENERATIONS,
    PARAPHRASES,
    GenerationRow,
    ParaphraseItem,
    ParaphraseRow,
)
from a2c.qa.stages import A2C, ANSWERS, STAGES, VARIATION, QAContext
from a2c.run.runfiles import Row, RowsFile
from a2c.run.stage import DATASET, Slice, Stage, StageStats

GIVEN = "given"  # the technique of a paraphrase the file gives (no prompt made it)
LAYOUT_VERSION = 2  # how samples become rows: a change re-runs the stage (2: log-probabilities in the rows)


class TokenLogprobsRow(Row):
    """The per-token log-probabilities a samples file gives for one answer: the main answer (`main`,
    slot 0) or sample `slot` of a source, as `generations.jsonl` numbers them."""

    id: str
    source: Literal["main", "paraphrase", "temperature"]
    slot: int
    logprobs: list[float]


TOKEN_LOGPROBS = RowsFile("token_logprobs.jsonl", TokenLogprobsRow)


def own_samples(config: ExperimentConfig) -> bool:
    """Whether the run's answers come from a samples file."""
    return config.dataset.name == "samples"


def _generates(config: ExperimentConfig) -> bool:
    return not own_samples(config)


def _not_generated(config: ExperimentConfig) -> str | None:
    return "the answers come from the samples file: no model is asked" if own_samples(config) else None


def _a2c_off(config: ExperimentConfig) -> str | None:
    if not own_samples(config) or config.ask_to_choose.enabled:
        return None
    return ("Ask-to-Choose asks the generator; a samples run has none unless `generator:` is given "
            "(or ask_to_choose.enabled: true)")


def samples_slice(config: ExperimentConfig) -> Slice:
    """The answers are the dataset's (read through `DATASET`): only how they become rows is a setting."""
    return {"layout": LAYOUT_VERSION}


def _rows(record: SampledRecord) -> tuple[ParaphraseRow, list[GenerationRow], list[TokenLogprobsRow]]:
    """One question's paraphrases, answers (its paraphrase answers, then the others) and log-probabilities."""
    given = record.of_source("paraphrase")
    paraphrases = ParaphraseRow(id=record.id, question=record.question, paraphrases=[
        ParaphraseItem(technique=GIVEN, text=s.paraphrase or "", ok=True, problem=None) for s in given])
    generations: list[GenerationRow] = []
    logprobs: list[TokenLogprobsRow] = []
    if record.answer is not None and record.answer.logprobs is not None:
        logprobs.append(TokenLogprobsRow(id=record.id, source="main", slot=0,
                                         logprobs=list(record.answer.logprobs)))
    for source in ("paraphrase", "temperature"):
        for slot, sample in enumerate(record.of_source(source)):
            generations.append(GenerationRow(id=record.id, source=sample.source, slot=slot, technique=None,
                                             temperature=sample.temperature,
                                             asked=sample.paraphrase or record.question, long=sample.text,
                                             short=sample.text, token_logprobs=None if sample.logprobs is None
                                             else list(sample.logprobs)))
            if sample.logprobs is not None:
                logprobs.append(TokenLogprobsRow(id=record.id, source=sample.source, slot=slot,
                                                 logprobs=list(sample.logprobs)))
    return paraphrases, generations, logprobs


def run_samples(ctx: QAContext, stats: StageStats) -> None:
    """`paraphrases.jsonl`, `generations.jsonl` and `token_logprobs.jsonl` from the samples file."""
    records = sampled([ctx.records[q.id] for q in ctx.questions])
    rows = [_rows(r) for r in records]
    ctx.store.write_rows(PARAPHRASES, (p for p, _, _ in rows))
    ctx.store.write_rows(GENERATIONS, (g for _, gs, _ in rows for g in gs))
    ctx.store.write_rows(TOKEN_LOGPROBS, (lp for _, _, lps in rows for lp in lps))


SAMPLES = Stage("samples", reads=(DATASET,), writes=(PARAPHRASES, GENERATIONS, TOKEN_LOGPROBS),
                config_slice=samples_slice, run=run_samples, enabled=own_samples)

# the QA run's graph: a samples file's answers take the place of the variation and answer stages
QA_STAGES: tuple[Stage, ...] = (
    replace(VARIATION, enabled=_generates, off_line=_not_generated),
    replace(ANSWERS, enabled=_generates, off_line=_not_generated),
    SAMPLES,
    *(replace(stage, off_line=_a2c_off) if stage is A2C else stage for stage in STAGES[2:]),
)

__all__ = ["QA_STAGES", "SAMPLES", "TOKEN_LOGPROBS", "TokenLogprobsRow", "own_samples"]
