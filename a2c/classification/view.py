"""What `a2c view` shows of a classification run (`TaskSpec.view`): one row per item for the list, and a
page per item with every input the model labelled (as given and each perturbation), the label read from
each reply with the model's probabilities, and the sentences the auxiliary LLM wrote for it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

from a2c.classification.config import ClassificationConfig
from a2c.classification.data import ClassificationItem
from a2c.classification.rows import INPUTS, LABELS, REWRITES, InputRow, LabelRow, RewriteRow
from a2c.display.reporting import Table
from a2c.display.viewdata import Cell, Column, ItemView, Section, TableBlock, Text, cell_text
from a2c.run.store import Store


def classification_view(store: Store, config: ClassificationConfig,
                        items: list[ClassificationItem] | None) -> ItemView:
    """The list and pages of a classification run; without `items` (the data cannot be read now) an item
    is shown through its inputs alone."""
    inputs: dict[str, list[InputRow]] = defaultdict(list)
    for row in store.read_rows(INPUTS):
        inputs[row.item].append(row)
    labels = {row.key: row for row in store.read_rows(LABELS)}
    rewrites: dict[str, list[RewriteRow]] = defaultdict(list)
    for rewrite in store.read_rows(REWRITES) if store.exists(REWRITES.name) else []:
        rewrites[rewrite.item].append(rewrite)
    known = {item.id: item for item in items or []}
    rows = tuple(_list_row(item, inputs[item], labels, rewrites[item]) for item in inputs)
    columns = (Column("id", "id"), Column("text", "input as given"), Column("gold", "gold label", "choice"),
               Column("predicted", "label given", "choice"), Column("kinds", "perturbations"),
               Column("inputs", "inputs", "number"), Column("accuracy", "accuracy over its inputs", "number"),
               Column("wrong_original", "labelled wrong as given", "flag"),
               Column("wrong_perturbed", "a perturbation labelled wrong", "flag"),
               Column("unparsed", "unparsed replies", "flag"),
               Column("failed_rewrites", "failed rewrites", "flag"))
    pages = {item: _page(known.get(item), inputs[item], labels, rewrites[item], config) for item in inputs}
    notes = () if items is not None else ("The run's data could not be read here: items are shown through "
                                          "their inputs.",)
    return ItemView(noun="item", columns=columns, rows=rows, pages=pages, notes=notes)


def _label(row: LabelRow | None) -> str:
    return "unparsed" if row is None or row.label is None else row.label


def _list_row(item: str, inputs: list[InputRow], labels: dict[str, LabelRow], rewrites: list[RewriteRow]
              ) -> dict[str, Cell]:
    original = next((r for r in inputs if r.kind == "original"), inputs[0])
    given = [(r, labels.get(r.key)) for r in inputs]
    right = {r.key: label is not None and label.label == r.gold for r, label in given}
    predicted = _label(labels.get(original.key))
    return {"id": item, "text": original.text, "gold": original.gold, "predicted": predicted,
            "kinds": ", ".join(dict.fromkeys(r.kind for r in inputs if r.kind != "original")),
            "inputs": len(inputs), "accuracy": sum(right.values()) / len(right),
            "wrong_original": predicted != original.gold,
            "wrong_perturbed": not all(right[r.key] for r in inputs if r.kind != "original"),
            "unparsed": any(label is None or label.label is None for _, label in given),
            "failed_rewrites": any(not r.ok for r in rewrites)}


def _page(item: ClassificationItem | None, inputs: list[InputRow], labels: dict[str, LabelRow],
          rewrites: list[RewriteRow], config: ClassificationConfig) -> tuple[Section, ...]:
    names = config.dataset.labels
    if item is not None:
        fields = [[key, cell_text(value if not isinstance(value, tuple) else ", ".join(value))]
                  for key, value in asdict(item).items() if value not in (None, ())]
        head = Section(f"Item {item.id}", (TableBlock(Table(["field", "value"], fields)),))
    else:
        head = Section(f"Item {inputs[0].item}", (Text(inputs[0].text, pre=True),))
    header = ["input", "kind", "variant", "text", "gold", "label", "read by", *[f"P({n})" for n in names],
              "raw reply"]
    rows, marks = [], []
    for r in inputs:
        label = labels.get(r.key)
        probabilities = label.probabilities if label is not None else {}
        rows.append([f"{r.kind} {r.slot}", r.kind, r.variant or "", r.text, r.gold, _label(label),
                     label.method if label is not None else "not asked",
                     *[cell_text(probabilities.get(n)) if probabilities else "" for n in names],
                     label.reply if label is not None else ""])
        marks.append("failed" if label is None or label.label is None else "" if label.label == r.gold
                     else "wrong")
    calibrated = next((cf for r in inputs if (lab := labels.get(r.key)) and (cf := lab.content_free)), None)
    note = ("Probabilities are the model's own over the labels (read from log-probabilities); a reply read "
            "as text has none.")
    if calibrated is not None:
        note += (" Labels were calibrated against the content-free input(s): "
                 + ", ".join(f"{k} {v:.3f}" for k, v in calibrated.items()) + ".")
    table = TableBlock(Table(header, rows), tuple(marks))
    sections = [head, Section("Inputs and labels", (Text(note), table))]
    if rewrites:
        written = Table(["kind", "slot", "technique", "rewrites", "text", "check"],
                        [[r.kind, str(r.slot), r.technique or "", r.source, r.text,
                          "ok" if r.ok else f"failed: {r.problem}"] for r in rewrites])
        sections.append(Section("Sentences the auxiliary LLM wrote",
                                (TableBlock(written, tuple("" if r.ok else "failed" for r in rewrites)),)))
    return tuple(sections)
