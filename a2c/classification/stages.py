"""The stage graph of a classification run: rewrite → perturb → label → metrics → report.

Same machinery as the QA task (`a2c.run.stage`): each stage declares what it reads and writes and the config
slice its outputs depend on, so a rerun reuses what is unchanged (new CALM symbols re-run perturb, label —
only the new inputs reach the model, the rest come from the request cache — metrics and report; a new
threshold re-runs only metrics and report), and an interrupted run resumes from the request cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

from a2c.classification.config import ClassificationConfig
from a2c.classification.data import ClassificationItem
from a2c.classification.labeling import content_free_probabilities, label_inputs
from a2c.classification.perturbations import build_inputs, content_free_input
from a2c.classification.report import render_report
from a2c.classification.rewrite import negate_sentences, paraphrase_sentences
from a2c.classification.rows import INPUTS, LABELS, REPORT, REWRITES, SUMMARY, InputRow, LabelRow, RewriteRow
from a2c.classification.suites import SCHEMA_VERSION, Summary, summarize
from a2c.display.reporting import ReportError
from a2c.llm.config import generator_slice
from a2c.prompting.prompts import load_template
from a2c.run.runfiles import RunFileError
from a2c.run.stage import DATASET, RunContext, Slice, Stage, StageStats, json_digest
from a2c.run.store import Store


@dataclass
class ClassificationContext(RunContext[ClassificationConfig]):
    """The stages' context of a classification run: the items are the dataset (their digest keys it)."""

    items: list[ClassificationItem] = field(default_factory=list)

    @cached_property
    def dataset_digest(self) -> str:
        return json_digest([asdict(i) for i in self.items])

    @property
    def originals(self) -> list[ClassificationItem]:
        return [i for i in self.items if not i.derived]


# -- config slices ------------------------------------------------------------------------------------------

def rewrite_slice(config: ClassificationConfig) -> Slice:
    p, b = config.suites.paraphrastic, config.suites.becel
    return {"aux_generator": generator_slice(config.aux_generator or config.generator),
            "seed": config.seed,
            "paraphrase": p.model_dump() | {"field": config.paraphrase_field} if p.enabled else None,
            "negation": b.model_dump(include={"negation_labels", "negation_max_tokens"})
            if b.enabled and b.write_negations else None}


def perturb_slice(config: ClassificationConfig) -> Slice:
    s = config.suites
    return {"input": config.dataset.input,
            "labeling": config.labeling.model_dump(include={"indicators", "separator", "text_indicator"}),
            "paraphrase": [s.paraphrastic.enabled, config.paraphrase_field],
            "becel": s.becel.model_dump(include={"enabled", "symmetric_labels", "negation_labels"}),
            "calm": [s.calm.enabled, s.calm.used_symbols]}


def label_slice(config: ClassificationConfig) -> Slice:
    t = load_template(config.labeling.template)
    return {"generator": generator_slice(config.generator),
            "template": [t.system, [list(e) for e in t.examples], t.user],
            "words": [config.dataset.word(label) for label in config.dataset.labels],
            **config.labeling.model_dump(include={"max_tokens", "logprobs"}),
            # only when on, so runs made before calibration existed keep their key
            **({"calibration": config.labeling.model_dump(include={"calibration", "content_free_inputs"})}
               if config.labeling.calibration != "none" else {})}


def metrics_slice(config: ClassificationConfig) -> Slice:
    s = config.suites
    return {"name": config.name, "model": config.generator.model,
            "enabled": [s.contrast.enabled, s.paraphrastic.enabled, s.becel.enabled, s.calm.enabled],
            "threshold": s.calm.threshold, "k": len(s.calm.used_symbols)}


def _nothing(config: ClassificationConfig) -> Slice:
    return {}


# -- stages -------------------------------------------------------------------------------------------------

def run_rewrite(ctx: ClassificationContext, stats: StageStats) -> None:
    """Paraphrases (003) of every original's target field and negations (001) the data does not give."""
    config, rows = ctx.config, []
    para, becel = config.suites.paraphrastic, config.suites.becel
    for chunk in ctx.chunks("rewrite", ctx.originals):
        if para.enabled:
            sources = [item.field(config.paraphrase_field) for item in chunk]
            written = paraphrase_sentences(ctx.aux, sources, para.techniques, seed=config.seed,
                                           temperature=para.temperature, max_tokens=para.max_tokens)
            rows += [RewriteRow(item=item.id, kind="paraphrase", slot=slot, technique=p.technique,
                                source=source, text=p.text, ok=p.ok, problem=p.problem)
                     for item, source, per_item in zip(chunk, sources, written, strict=True)
                     for slot, p in enumerate(per_item)]
        if becel.enabled and becel.write_negations:
            todo = [item for item in chunk if item.negated_hypothesis is None
                    and item.label in becel.negation_labels]
            field_name = "hypothesis" if config.dataset.input == "pair" else "text"
            sources = [item.field(field_name) for item in todo]
            negations = negate_sentences(ctx.aux, sources, max_tokens=becel.negation_max_tokens) \
                if todo else []
            rows += [RewriteRow(item=item.id, kind="negation", slot=0, technique=None, source=source,
                                text=n.text, ok=n.ok, problem=n.problem)
                     for item, source, n in zip(todo, sources, negations, strict=True)]
    ctx.store.write_rows(REWRITES, rows)


def run_perturb(ctx: ClassificationContext, stats: StageStats) -> None:
    """Every input to label: the items as given and each registered perturbation of them."""
    rewrites: dict[tuple[str, str], list[RewriteRow]] = {}
    for row in ctx.store.read_rows(REWRITES):
        rewrites.setdefault((row.item, row.kind), []).append(row)
    ctx.store.write_rows(INPUTS, build_inputs(ctx.items, ctx.config, rewrites))


def run_label(ctx: ClassificationContext, stats: StageStats) -> None:
    """The model's label for every input: greedy, one batched call per chunk of items. Calibrated labels
    first take one call for the content-free inputs: every input shares the one labelling prompt."""
    config, lab = ctx.config, ctx.config.labeling
    by_item: dict[str, list[InputRow]] = {}
    for row in ctx.store.read_rows(INPUTS):
        by_item.setdefault(row.item, []).append(row)
    words = {label: config.dataset.word(label) for label in config.dataset.labels}
    content_free = None
    if lab.calibration == "content_free":
        content_free = content_free_probabilities(
            ctx.generator, [content_free_input(filler, config) for filler in lab.content_free_inputs], words,
            template=lab.template, max_tokens=lab.max_tokens, logprobs=lab.logprobs)
    rows: list[LabelRow] = []
    for chunk in ctx.chunks("label", list(by_item.values())):
        inputs = [row for per_item in chunk for row in per_item]
        labeled = label_inputs(ctx.generator, [row.text for row in inputs], words, template=lab.template,
                               max_tokens=lab.max_tokens, logprobs=lab.logprobs, content_free=content_free)
        rows += [LabelRow(key=row.key, item=row.item, kind=row.kind, slot=row.slot, reply=done.reply,
                          label=done.reading.label, method=done.reading.method,
                          probabilities=done.reading.probabilities,
                          content_free=content_free if done.reading.method == "logprobs" else None)
                 for row, done in zip(inputs, labeled, strict=True)]
    ctx.store.write_rows(LABELS, rows)


def run_metrics(ctx: ClassificationContext, stats: StageStats) -> None:
    summary = summarize(ctx.config, ctx.items, ctx.store.read_rows(INPUTS), ctx.store.read_rows(LABELS),
                        ctx.store.read_rows(REWRITES))
    ctx.store.write_text(SUMMARY.name, summary.model_dump_json(indent=2) + "\n")


def write_classification_report(store: Store, human_labels: Path | None = None) -> str:
    """report.md from summary.json (what `a2c report` redraws); human labels belong to the QA task."""
    if human_labels is not None:
        raise ReportError("--human-labels applies to QA runs (per-question consistency); this run is a "
                          "classification run")
    text = render_report(read_classification_summary(store))
    store.write_text(REPORT.name, text)
    return text


def read_classification_summary(store: Store) -> Summary:
    """The run's typed summary; one of an older a2c (no schema_version) is refused with the command that
    recomputes it."""
    data = store.read_json(SUMMARY.name)
    if isinstance(data, dict) and data.get("schema_version") != SCHEMA_VERSION:
        raise RunFileError(f"{store.where(SUMMARY.name)} was written by an older a2c (no schema_version)",
                           hint=f"recompute it from the stored outputs: a2c report {store.where('')}")
    return Summary.model_validate(data)


def run_report(ctx: ClassificationContext, stats: StageStats) -> None:
    write_classification_report(ctx.store)


REWRITE = Stage("rewrite", reads=(DATASET,), writes=(REWRITES,), config_slice=rewrite_slice,
                run=run_rewrite)
PERTURB = Stage("perturb", reads=(DATASET, REWRITES), writes=(INPUTS,), config_slice=perturb_slice,
                run=run_perturb)
LABEL = Stage("label", reads=(INPUTS,), writes=(LABELS,), config_slice=label_slice, run=run_label)
METRICS = Stage("metrics", reads=(DATASET, REWRITES, INPUTS, LABELS), writes=(SUMMARY,),
                config_slice=metrics_slice, run=run_metrics)
REPORT_STAGE = Stage("report", reads=(SUMMARY,), writes=(REPORT,), config_slice=_nothing,
                     run=run_report)
STAGES: tuple[Stage[ClassificationContext], ...] = (REWRITE, PERTURB, LABEL, METRICS, REPORT_STAGE)


def classification_context(config: ClassificationConfig, store: Store, items: list[ClassificationItem]
                           ) -> ClassificationContext:
    return ClassificationContext(config, store, items)
