"""The QA task's entry in the task registry (`a2c.run.tasks`): the paper's pipeline, the default task."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from a2c.judges.base import ModelOptions
from a2c.judges.embedding import DEFAULT_EMBEDDING_MODEL
from a2c.judges.presets import validate_options
from a2c.models.embedded import encoder_location
from a2c.qa.compare import COMPARER
from a2c.qa.config import ExperimentConfig
from a2c.qa.correctness.accuracy import check_references
from a2c.qa.data import QARecord, load_records
from a2c.qa.headline import headline
from a2c.qa.report import write_report
from a2c.qa.rows import METRICS, SUMMARY, Accuracy, MetricRow
from a2c.qa.samples_stage import QA_STAGES
from a2c.qa.scoring import similarity_options
from a2c.qa.selection import SELECTION_METHODS
from a2c.qa.stages import METRICS_STAGE, SELECTION, qa_context
from a2c.qa.summary import QASummary, read_summary
from a2c.qa.view import qa_view
from a2c.run.store import Store
from a2c.run.tasks import TaskSpec
from a2c.settings.config import ConfigError
from a2c.system.hub import check_available


def load_data(config: ExperimentConfig) -> list[QARecord]:
    """The config's questions (the first `limit`), every row read and checked (columns, references, and
    that the correctness rule can score them)."""
    data = config.dataset
    records = load_records(data.name, data.path, config.limit, encoding=data.encoding, **data.settings())
    check_references(config.accuracy.rule.name, records)
    return records


def check_data(config: ExperimentConfig) -> None:
    """A local dataset file read through (columns and every row), so a bad one fails at load; hub datasets
    are left to the run (loading them needs the network). A samples run without a `generator:` section
    may not list a selection method that asks one (it would load the embedded model unasked)."""
    if config.dataset.name == "samples" and "generator" not in config.model_fields_set:
        asking = [s.name for s in config.selection_methods if SELECTION_METHODS.get(s.name).asks_generator]
        if asking:
            raise ConfigError(f"selection lists {', '.join(asking)}, which asks the generator to pick; a "
                              "samples run asks no model unless `generator:` is given (add one, or drop "
                              f"{', '.join(asking)})")
    if config.dataset.path is not None:
        load_data(config)


def check_models(config: ExperimentConfig) -> None:
    """Every judge and accuracy-similarity model of the config is on disk or downloadable
    (`a2c.system.hub`)."""
    for spec in config.judges:
        options = validate_options(spec.name, spec.options)
        if isinstance(options, ModelOptions):  # a transformers model (NER's spaCy package is no hub model)
            check_available(options.model, encoder_location(options.model), "judge", offline=options.offline)
    for similarity in config.accuracy.similarities:
        model = getattr(similarity_options(similarity.name, similarity.options), "model",
                        DEFAULT_EMBEDDING_MODEL if similarity.name == "embedding" else None)
        if isinstance(model, str):
            check_available(model, encoder_location(model), "accuracy similarity")


def _summary(store: Store) -> QASummary:
    return read_summary(store, SUMMARY.name, hint=f"recompute it from the stored outputs: a2c report "
                        f"{store.where('')}")


def flatten(row: MetricRow, questions: dict[str, str]) -> dict[str, Any]:
    """A metric row as one flat dict (`<judge>_cons_sem`, `<similarity>_acc`, a computed metric's column
    key, ...); a question without references has no accuracy keys (absent, not zero)."""
    flat: dict[str, Any] = {"id": row.id, "question": questions.get(row.id), "source": row.source,
                            "phase": row.phase, "n": row.n, "n_accurate": row.n_accurate,
                            "cons_lex": row.cons_lex}
    for judge, scores in row.judges.items():
        flat.update({f"{judge}_{k}": v for k, v in asdict(scores).items()})
    for sim, acc in row.accuracy.items():
        flat.update({f"{sim}_{k}": getattr(acc, k) if acc else None for k in Accuracy.model_fields})
    flat.update(row.extra)  # the registered metrics the run computed, by column key
    return flat


TASK = TaskSpec(name="qa", config=ExperimentConfig, load_data=load_data, check_data=check_data,
                context=qa_context, stages=QA_STAGES, rescore=(SELECTION, METRICS_STAGE), summary=SUMMARY,
                read_summary=_summary, write_report=write_report, metrics=METRICS, flatten=flatten,
                headline=headline, view=qa_view, check_models=check_models,
                compare=COMPARER, serves=True)
