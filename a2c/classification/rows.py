"""The typed rows of a classification run's files (one pydantic model per JSONL line, as in a2c.records)."""

from __future__ import annotations

from typing import Literal

from a2c.run.runfiles import Row, RowsFile, RunFile

RewriteKind = Literal["paraphrase", "negation"]


class RewriteRow(Row):
    """A sentence the auxiliary LLM wrote for an item: paraphrase `slot` (per technique) or its negation."""

    item: str
    kind: RewriteKind
    slot: int
    technique: str | None
    source: str  # the sentence it rewrites
    text: str
    ok: bool  # passed its checks; a failed one is left out of its suite and counted
    problem: str | None


class InputRow(Row):
    """One input the model labels: an item as given (`original`) or one perturbation of it."""

    key: str  # unique: item|kind|slot
    item: str
    kind: str  # a perturbation name (a2c.classification.perturbations.PERTURBATIONS)
    slot: int
    variant: str | None  # technique, symbol or origin ("data"/"llm") of the perturbation
    text: str  # the input as the model sees it
    gold: str  # the label a correct model gives this input


class LabelRow(Row):
    """The model's reply to one input and the label read from it (None: unparsed, counted)."""

    key: str
    item: str
    kind: str
    slot: int
    reply: str
    label: str | None
    method: Literal["logprobs", "text", "unparsed"]
    probabilities: dict[str, float]  # the model's own, over the labels (logprobs only)
    # the content-free probabilities `label` was calibrated against; None: not calibrated
    content_free: dict[str, float] | None = None


REWRITES = RowsFile("rewrites.jsonl", RewriteRow)
INPUTS = RowsFile("inputs.jsonl", InputRow)
LABELS = RowsFile("labels.jsonl", LabelRow)
SUMMARY = RunFile("summary.json")
REPORT = RunFile("report.md")
