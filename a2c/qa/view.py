"""What `a2c view` shows of a QA run (`TaskSpec.view`): one row per question for the list, and a page per
question with everything the run kept of it: the paraphrases and their checks, every answer with its
accuracy, an agreement heatmap per judge and source with the clusters, every rank prompt with the raw
reply, its parse and the option chosen, and the question's metrics before and after Ask-to-Choose.

Everything comes from the run's typed files; per-answer accuracy, which the run folds into per-set means,
is scored again under the run's correctness rule (`accuracy_columns`, the function the metrics stage
calls), and clusters come from the stored matrices and each judge's threshold, as the metrics stage forms
them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from a2c.common.text import normalize
from a2c.common.wording import plural
from a2c.display.reporting import Table
from a2c.display.viewdata import (
    Cell,
    Column,
    Heatmap,
    ItemView,
    Section,
    TableBlock,
    Text,
    cell_text,
    flatten,
)
from a2c.judges import Judge, build_judge
from a2c.llm.base import Generator
from a2c.metrics import TruthfulQAScores
from a2c.metrics.consistency import semantic_clusters
from a2c.metrics.set_metrics import SET_METRICS
from a2c.qa.config import ExperimentConfig
from a2c.qa.correctness.accuracy import accuracy_columns, accuracy_label
from a2c.qa.data import QARecord
from a2c.qa.metric_columns import computed_columns, judge_label
from a2c.qa.rank import majority_vote
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    MATRICES,
    METRICS,
    PARAPHRASES,
    PHASES,
    SOURCE_LABELS,
    SOURCES,
    AnswerField,
    ChoiceRow,
    GenerationRow,
    MetricRow,
    ParaphraseItem,
    ParaphraseRow,
    Phase,
    Source,
)
from a2c.qa.vote import DEFAULT_VOTE, ballots, elect, question_prior
from a2c.run.runfiles import MatrixSet, R, RowsFile
from a2c.run.store import Store

# the most questions a view shows: a page each, inlined in one HTML file that a browser must still open
MAX_QUESTIONS = 2000

PREFIX: dict[Source, str] = {"paraphrase": "P", "temperature": "T"}  # answer labels: P1 = paraphrase 1
Scores = dict[str, dict[tuple[str, str], TruthfulQAScores]]  # similarity → (question id, answer) → scores


def _label(source: Source, slot: int) -> str:
    return f"{PREFIX[source]}{slot + 1}"


def _similarity(name: str) -> str:
    """A similarity's short column name, as the report's plots call it (R1-A, Emb-A)."""
    return accuracy_label(name).split(" ")[0]


def _rows(store: Store, file: RowsFile[R], shown: set[str]) -> list[R]:
    """The file's rows of the questions shown (read as they stream by: the others are never held)."""
    rows = store.iter_rows(file) if store.exists(file.name) else iter(())
    return [r for r in rows if getattr(r, "id", None) in shown]


def shown_questions(ids: Sequence[str], most: int) -> list[str]:
    """Every question, or for a run of more than `most` an evenly spaced sample of `most` of them (the
    first is always in): a page per question of a very large run would make an HTML file no browser
    opens, and the run's report covers all of them anyway."""
    if len(ids) <= most:
        return list(ids)
    return [ids[k * len(ids) // most] for k in range(most)]


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


Keyed = TypeVar("Keyed", bound=_HasId)


def _by_id(rows: Sequence[Keyed]) -> dict[str, list[Keyed]]:
    out: dict[str, list[Keyed]] = defaultdict(list)
    for row in rows:
        out[row.id].append(row)
    return out


@dataclass(frozen=True)
class _Run:
    """The run's files, read once and grouped by question."""

    config: ExperimentConfig
    records: dict[str, QARecord]
    metrics: dict[str, list[MetricRow]]
    paraphrases: dict[str, ParaphraseRow]
    generations: dict[str, list[GenerationRow]]
    choices: dict[str, list[ChoiceRow]]
    matrices: dict[Phase, MatrixSet]
    judges: dict[str, Judge]
    scores: Scores

    @property
    def field(self) -> AnswerField:
        return self.config.variation.answer_field

    def before(self, qid: str, source: Source) -> list[GenerationRow]:
        return [g for g in self.generations.get(qid, []) if g.source == source]

    def after(self, qid: str, source: Source) -> list[ChoiceRow]:
        """The parsed choices of one source: the set the judges scored after A2C, in its order."""
        return [c for c in self.choices.get(qid, []) if c.source == source and c.text is not None]


def _judges(config: ExperimentConfig) -> dict[str, Judge]:
    """Each judge with the run's threshold and nothing else: only its decisions are needed (no model, no
    generator is loaded by building one)."""
    return {spec.name: build_judge(spec.name, **{k: v for k, v in spec.options.items() if k == "threshold"})
            for spec in config.judges}


def _run_generator(config: ExperimentConfig) -> Generator:
    """The run's generator for a grader rule; its request cache answers what the run asked already."""
    from a2c.llm import build_generator

    return build_generator(config.generator)


def answer_scores(config: ExperimentConfig, records: dict[str, QARecord],
                  generations: dict[str, list[GenerationRow]], choices: dict[str, list[ChoiceRow]]) -> Scores:
    """The accuracy scores of every distinct answer and chosen text of each referenced question, in every
    accuracy column of the run (its similarities, or its gold-answer rule), on the answer field it scored."""
    field = config.variation.answer_field
    pairs = list(dict.fromkeys(
        [(g.id, g.answer(field)) for rows in generations.values() for g in rows]
        + [(c.id, c.text) for rows in choices.values() for c in rows if c.text is not None]))
    pairs = [(qid, text) for qid, text in pairs if qid in records and records[qid].has_references]
    if not pairs:
        return {}
    accuracy = config.accuracy
    columns = accuracy_columns(accuracy.rule.name, accuracy.rule.options,
                               [(spec.name, spec.options) for spec in accuracy.similarities],
                               [t for _, t in pairs], [records[q] for q, _ in pairs],
                               run_generator=lambda: _run_generator(config))
    return {name: dict(zip(pairs, found.rows(), strict=True)) for name, found in columns.items()}


def qa_view(store: Store, config: ExperimentConfig, records: list[QARecord] | None) -> ItemView:
    """The list and pages of a QA run; `records` None (the dataset cannot be read now) leaves out the
    references and per-answer accuracy, and says so."""
    every = list(dict.fromkeys(r.id for r in store.iter_rows(METRICS)))
    ids = shown_questions(every, MAX_QUESTIONS)
    shown = set(ids)
    metrics = _by_id(_rows(store, METRICS, shown))
    by_id = {r.id: r for r in records or [] if r.id in shown}
    generations, choices = _by_id(_rows(store, GENERATIONS, shown)), _by_id(_rows(store, CHOICES, shown))
    run = _Run(config, by_id, metrics, {p.id: p for p in _rows(store, PARAPHRASES, shown)}, generations,
               choices, {phase: store.read_matrices(MATRICES[phase], items=shown) for phase in PHASES
                         if store.exists(MATRICES[phase].name)},
               _judges(config), answer_scores(config, by_id, generations, choices))
    rows = tuple(_list_row(run, qid) for qid in ids)
    notes: tuple[str, ...] = () if records is not None else (
        "The run's dataset could not be read here, so references and per-answer accuracy are left out.",)
    if len(ids) < len(every):
        notes += (f"The run has {len(every):,} questions: this view lists an evenly spaced sample of "
                  f"{len(ids):,} of them (about one in {len(every) / len(ids):.0f}; the report's tables and "
                  "plots cover them all).",)
    return ItemView(noun="question", columns=_columns(run, rows), rows=rows,
                    pages={qid: _page(run, qid) for qid in ids},
                    groups=tuple(SOURCE_LABELS[s].table for s in SOURCES), notes=notes)


# -- the list ---------------------------------------------------------------------------------------------

def _question_text(run: _Run, qid: str) -> str:
    if qid in run.records:
        return run.records[qid].question
    return run.paraphrases[qid].question if qid in run.paraphrases else qid


def _a2c_vote(run: _Run, qid: str) -> tuple[str | None, float | None]:
    """A2C's answer and its vote share over the question's parsed choices, as `AskToChoose` answers: the
    run's `ask_to_choose.vote` (the majority; `debiased`: the question's own position prior divided out)."""
    vote, chosen = run.config.ask_to_choose.vote, run.choices.get(qid, [])
    return elect(vote, ballots(chosen), question_prior(vote, chosen))


def _answers(run: _Run, qid: str) -> tuple[str | None, str | None]:
    """(the majority answer before A2C over every answer of the question, A2C's answer: `_a2c_vote`)."""
    before, _ = majority_vote([g.answer(run.field) for g in run.generations.get(qid, [])])
    after, _ = _a2c_vote(run, qid)
    return before, after


def _list_row(run: _Run, qid: str) -> dict[str, Cell]:
    before, after = _answers(run, qid)
    chosen = run.choices.get(qid, [])
    row: dict[str, Cell] = {
        "id": qid, "question": _question_text(run, qid),
        "category": run.records[qid].category if qid in run.records else "",
        "a2c_answer": after,
        "changed": after is not None and before is not None and normalize(after) != normalize(before),
        "idk": any(c.dont_know for c in chosen), "unparsed": any(not c.parsed for c in chosen),
        "failed_paraphrase": any(not p.ok for p in run.paraphrases[qid].paraphrases)
        if qid in run.paraphrases else False}
    entropy_judge = run.config.entropy_judge_name
    for m in run.metrics[qid]:
        at = f"{m.source}.{m.phase}"
        row.update({f"{at}.acc.{s}": a.acc if (a := m.accuracy.get(s)) else None for s in m.accuracy})
        row.update({f"{at}.cons_sem.{j}": scores.cons_sem for j, scores in m.judges.items()})
        row[f"{at}.entropy"] = m.judges[entropy_judge].entropy if entropy_judge in m.judges else None
        row.update({f"{at}.extra.{key}": value for key, value in m.extra.items()})
    return row


def _columns(run: _Run, rows: Sequence[dict[str, Cell]]) -> tuple[Column, ...]:
    """Fixed columns, then per source the metrics before and after A2C that some question has."""
    present = {key for row in rows for key in row}
    columns = [Column("id", "id"), Column("question", "question")]
    if any(row["category"] for row in rows):
        columns.append(Column("category", "category", "choice"))
    if run.choices:
        columns += [Column("a2c_answer", "A2C's answer"),
                    Column("changed", "A2C changed the answer", "flag"),
                    Column("idk", "chose \"don't know\"", "flag"),
                    Column("unparsed", "unparsed replies", "flag")]
    if run.paraphrases:
        columns.append(Column("failed_paraphrase", "failed paraphrases", "flag"))
    metrics = [(f"acc.{name}", _similarity(name)) for name in run.config.accuracy.columns]
    cons_sem, entropy = SET_METRICS.get("cons_sem"), SET_METRICS.get("entropy")
    metrics += [(f"cons_sem.{j.name}", f"{judge_label(j.name)} {cons_sem.label}") for j in run.config.judges]
    metrics.append(("entropy", f"{entropy.label} ({judge_label(run.config.entropy_judge_name)})"))
    metrics += [(f"extra.{c.key}", c.label) for c in computed_columns([j.name for j in run.config.judges])]
    for source in SOURCES:
        group = SOURCE_LABELS[source].table
        columns += [Column(f"{source}.{phase}.{key}", f"{label} {phase}", "number", group)
                    for key, label in metrics for phase in PHASES if f"{source}.{phase}.{key}" in present]
    return tuple(columns)


# -- a question's page ------------------------------------------------------------------------------------

def _page(run: _Run, qid: str) -> tuple[Section, ...]:
    return (_question(run, qid), *_paraphrases(run, qid), _answers_section(run, qid), *_agreement(run, qid),
            *_rank_prompts(run, qid), _metrics(run, qid))


def _question(run: _Run, qid: str) -> Section:
    blocks: list[Text | TableBlock] = [Text(_question_text(run, qid))]
    record = run.records.get(qid)
    if record is None:
        blocks.append(Text("References: not available (the run's dataset could not be read here)."))
    elif not record.has_references:
        blocks.append(Text("This question has no reference answers: no accuracy."))
    else:
        blocks.append(TableBlock(Table(["reference", "text"], [
            ["best answer", record.best_answer or "n/a"],
            *[["correct", text] for text in record.correct],
            *[["incorrect", text] for text in record.incorrect]])))
    if record is not None and record.category:
        blocks.append(Text(f"Category: {record.category}"))
    return Section(f"Question {qid}", tuple(blocks))


def _metrics(run: _Run, qid: str) -> Section:
    """Every field of the question's metric rows (one column per source and phase), as the rows hold them."""
    rows = run.metrics[qid]
    flat = [flatten(m.model_dump(mode="json", exclude={"id", "source", "phase"})) for m in rows]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    table = Table(["metric", *[f"{SOURCE_LABELS[m.source].table}, {m.phase} A2C" for m in rows]],
                  [[key, *[cell_text(f.get(key)) for f in flat]] for key in keys])
    return Section("Metrics before → after Ask-to-Choose", (TableBlock(table),))


def _check(item: ParaphraseItem) -> str:
    """The check's verdict, with the meaning score and a retried first draw's problem where the run had a
    meaning check."""
    text = "ok" if item.ok else f"failed: {item.problem}"
    if item.meaning is not None:
        text += f" (meaning {item.meaning:.2f})"
    if item.first_problem is not None and item.ok:
        text += f"; first draw: {item.first_problem}"
    return text


def _paraphrases(run: _Run, qid: str) -> tuple[Section, ...]:
    if qid not in run.paraphrases:
        return ()
    items = run.paraphrases[qid].paraphrases
    table = Table(["#", "technique", "paraphrase", "check"],
                  [[_label("paraphrase", k), p.technique, p.text, _check(p)] for k, p in enumerate(items)])
    return (Section("Paraphrases", (TableBlock(table, tuple("" if p.ok else "failed" for p in items)),)),)


def _score_text(run: _Run, qid: str, similarity: str, text: str | None) -> str:
    scores = run.scores.get(similarity, {}).get((qid, text or ""))
    return "n/a" if scores is None else f"acc {scores.acc:.0f} · max_true {scores.max_true:.3f} · " \
                                        f"diff {scores.diff:+.3f}"


def _answers_section(run: _Run, qid: str) -> Section:
    sims = run.config.accuracy.columns if run.scores else []
    header = ["answer", "source", "technique", "temperature", "asked", "long", "short",
              *[_similarity(s) for s in sims]]
    rows = [[_label(g.source, g.slot), SOURCE_LABELS[g.source].table, g.technique or "",
             "" if g.temperature is None else f"{g.temperature:g}",
             g.asked, g.long, g.short, *[_score_text(run, qid, s, g.answer(run.field)) for s in sims]]
            for source in SOURCES for g in run.before(qid, source)]
    note = f"Accuracy (TruthfulQA's protocol) is scored on the {run.field} answer, as the run scored it."
    return Section("Answers", (Text(note), TableBlock(Table(header, rows))) if sims
                   else (TableBlock(Table(header, rows)),))


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _agreement(run: _Run, qid: str) -> tuple[Section, ...]:
    """One heatmap per judge, source and phase, answers as labels, with the clusters the entropy counts."""
    sections = []
    for phase in PHASES:
        if phase not in run.matrices:
            continue
        maps = []
        for source in SOURCES:
            if phase == "before":
                labels = [f"{_label(source, g.slot)}: {_short(g.answer(run.field))}"
                          for g in run.before(qid, source)]
            else:
                labels = [f"{_label(source, c.slot)}: {_short(c.text or '')}"
                          for c in run.after(qid, source)]
            for name, judge in run.judges.items():
                key = (name, source, qid)
                if key not in run.matrices[phase]:
                    continue
                m = np.asarray(run.matrices[phase][key], dtype=np.float64)
                clusters = semantic_clusters(judge.equivalent(m)) if m.shape[0] else []
                maps.append(Heatmap(f"{judge_label(name)} · {SOURCE_LABELS[source].table}", tuple(labels),
                                    tuple(tuple(float(v) for v in row) for row in m), tuple(clusters)))
        title = "Agreement and clusters, " + (
            "before Ask-to-Choose" if phase == "before"
            else "after Ask-to-Choose (the choice of each rank prompt that parsed)")
        note = Text("Each cell is the judge's score for a pair of answers; the numbers beside the labels are "
                    "the clusters the entropy counts (answers the judge finds equivalent both ways, at its "
                    "threshold).")
        sections.append(Section(title, (note, *maps)))
    return tuple(sections)


def _rank_prompts(run: _Run, qid: str) -> tuple[Section, ...]:
    chosen = run.choices.get(qid, [])
    if not chosen:
        return ()
    before, after = _answers(run, qid)
    parsed = [c for c in chosen if c.text is not None]
    _, share = _a2c_vote(run, qid)
    vote = run.config.ask_to_choose.vote
    rule = "majority" if vote == DEFAULT_VOTE else f"{vote} vote"
    summary = (f"A2C's answer (the {rule} over {len(parsed)} parsed of {plural(len(chosen), 'choice')}"
               + (f", vote share {share:.2f}" if share is not None else "") + f"): {after or 'none'}. "
               f"The majority over the answers before A2C: {before or 'none'}.")
    idk = run.config.ask_to_choose.idk_text
    first = run.config.accuracy.columns[0] if run.scores else None
    header = ["prompt", "question shown", "temperature", "options", "raw reply", "read as", "chosen",
              *([_similarity(first)] if first else [])]
    rows, marks = [], []
    for c in chosen:
        options = "\n".join(f"{k + 1}. {text}" for k, text in enumerate([*c.options, idk]))
        read = c.method if c.option is None else f"{c.method}: option {c.option + 1}"
        rows.append([_label(c.source, c.slot), c.shown_question, f"{c.temperature:g}", options, c.reply,
                     read, c.text if c.text is not None else "(unparsed)",
                     *([_score_text(run, qid, first, c.text)] if first else [])])
        marks.append("failed" if not c.parsed else "idk" if c.dont_know else "")
    return (Section("Ask-to-Choose: every rank prompt", (Text(summary), TableBlock(Table(header, rows),
                                                                                      tuple(marks)))),)
