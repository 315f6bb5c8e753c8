"""The classification task (`task: classification`): an LLM labels items, and the consistency suites of
papers 000 (relative consistency), 001 (BECEL), 003 (paraphrastic variability) and 004 (CALM) probe it,
as a run of stages sharing the QA task's generators, request cache, resume and run folder."""

from a2c.classification.config import ClassificationConfig
from a2c.classification.stages import STAGES, classification_context, write_classification_report

__all__ = ["STAGES", "ClassificationConfig", "classification_context", "write_classification_report"]
