"""The classification task's entry in the task registry (`a2c.run.tasks`)."""

from __future__ import annotations

from a2c.classification.config import ClassificationConfig
from a2c.classification.data import load_items
from a2c.classification.rows import SUMMARY
from a2c.classification.stages import (
    METRICS,
    STAGES,
    classification_context,
    read_classification_summary,
    write_classification_report,
)
from a2c.classification.view import classification_view
from a2c.run.tasks import TaskSpec


def check_items(config: ClassificationConfig) -> None:
    """The data file read through (columns, labels, derived items' sources): a bad one fails at load."""
    load_items(config)


TASK = TaskSpec(name="classification", config=ClassificationConfig, load_data=load_items,
                check_data=check_items, context=classification_context, stages=STAGES, rescore=(METRICS,),
                summary=SUMMARY, read_summary=read_classification_summary,
                write_report=write_classification_report, view=classification_view)
