"""The QA task's `a2c compare` (`TaskSpec.compare`): the paper's Table 5 across runs, each change with a
paired bootstrap interval.

Rows are variation method × run (labelled by the run's model, or `--label`); columns are accuracy per
similarity and Cons_sem per judge, before → after Ask-to-Choose, then A2C's don't-know share of picks
(`a2c.qa.dont_know`) and A2C's model calls per question (rank prompts and the fresh paraphrases they show,
from `selections.jsonl`). A second table gives each run's rank-prompt format-following on the same
questions (`a2c.qa.format_following`), the paper's hypothesis being that A2C needs a model that follows the
prompt. Runs that share their candidates and differ only in `ask_to_choose.option_order` or `vote` get a
third, how often A2C's pick differs between two of them (`a2c.qa.order_sensitivity`). A cell's before
and after are means over the questions where both are defined, and its difference after − before comes
with a 95% percentile interval from resampling those questions
(`a2c.metrics.bootstrap.paired_difference_ci` over the rows of `metrics.jsonl`). Runs are compared on the
same questions only: different question sets are refused unless `intersect`, which compares the questions
every run holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from a2c.display.reporting import Table, fmt, png_bytes, pyplot
from a2c.display.viewdata import Image, Section, TableBlock, Text
from a2c.metrics.bootstrap import PairedDifference, paired_difference_ci
from a2c.metrics.set_metrics import SET_METRICS, mean_defined
from a2c.qa.config import ExperimentConfig
from a2c.qa.correctness.accuracy import accuracy_label
from a2c.qa.dont_know import OF_PICKS, heading, share_of_picks
from a2c.qa.format_following import (
    FORMAT_FOLLOWING_NOTE,
    FormatFollowing,
    format_following,
    format_following_table,
    held,
)
from a2c.qa.metric_columns import MetricColumn
from a2c.qa.order_sensitivity import (
    ORDER_SENSITIVITY_TITLE,
    OrderSensitivity,
    candidate_digests,
    order_sensitivity,
)
from a2c.qa.rows import (
    CHOICES,
    GENERATIONS,
    METRICS,
    PARAPHRASES,
    PHASES,
    SELECTIONS,
    SOURCE_LABELS,
    SOURCES,
    MetricRow,
    Phase,
    SelectionRow,
    Source,
)
from a2c.qa.summary import QASummary, judge_label
from a2c.run.runfiles import RunFile
from a2c.run.store import RunFolder
from a2c.run.tasks import CompareError, Comparer, OpenedRun

RESAMPLES = 2000
LEVEL = 0.95
SEED = 0  # fixed, so the same runs always get the same intervals
COMPARE_MD, COMPARE_CSV, COMPARE_PNG = RunFile("compare.md"), RunFile("compare.csv"), RunFile("compare.png")
COMPARE_ORDER_CSV = RunFile("compare_order.csv")  # the order-sensitivity table (header only without one)
COMPARE_FILES = (COMPARE_MD, COMPARE_CSV, COMPARE_PNG, COMPARE_ORDER_CSV)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    kind: Literal["accuracy", "consistency"]
    value: Callable[[MetricRow], float | None]


def _accuracy(similarity: str) -> Metric:
    def value(row: MetricRow) -> float | None:
        scores = row.accuracy.get(similarity)
        return scores.acc if scores else None

    return Metric(f"acc.{similarity}", accuracy_label(similarity).split(" ")[0], "accuracy", value)


def _consistency(judge: str) -> Metric:
    def value(row: MetricRow) -> float | None:
        return row.judges[judge].cons_sem if judge in row.judges else None

    return Metric(f"cons.{judge}", f"{judge_label(judge)} {SET_METRICS.get('cons_sem').label}", "consistency",
                  value)


def _computed(column: MetricColumn) -> Metric:
    def value(row: MetricRow) -> float | None:
        return row.extra.get(column.key)

    return Metric(f"extra.{column.key}", column.label, "consistency", value)


@dataclass(frozen=True)
class ComparedRun:
    label: str
    run: OpenedRun
    summary: QASummary
    rows: dict[tuple[Source, Phase], dict[str, MetricRow]]  # (source, phase) → question id → row
    a2c_picks: dict[Source, list[SelectionRow]]  # A2C's pick per compared question (empty without A2C)
    following: dict[Source, FormatFollowing]  # of its rank replies to the compared questions
    candidates: dict[tuple[str, Source], bytes]  # (question, source) → digest of its candidates' texts

    def dont_know_share(self, source: Source) -> str:
        """A2C's don't-know share of picks on the compared questions, as the table writes it."""
        return fmt(share_of_picks(bool(p.dont_know) for p in self.a2c_picks.get(source, [])
                                  if p.text is not None))

    def calls_per_question(self, source: Source) -> str:
        picks = self.a2c_picks.get(source, [])
        return f"{sum(p.calls for p in picks) / len(picks):.2f}" if picks else "n/a"


@dataclass(frozen=True)
class Cell:
    """One method, run and metric: means over the paired questions and the paired difference (None: the
    run has no after-A2C phase)."""

    before: float | None
    after: float | None
    difference: PairedDifference | None


@dataclass(frozen=True)
class Comparison:
    runs: list[ComparedRun]
    questions: list[str]  # the question ids compared
    dropped: dict[str, int]  # run label → its questions left out by `intersect`
    metrics: list[Metric]
    left_out: list[str]  # metrics some run lacks, so not compared
    cells: dict[tuple[Source, str, str], Cell]  # (method, run label, metric key)
    order: OrderSensitivity  # how often A2C's pick moves with the option order, where runs allow it

    def rows(self) -> list[tuple[Source, ComparedRun]]:
        """Table 5's order: method first, then run; a method a run did not vary is left out."""
        return [(source, run) for source in SOURCES for run in self.runs if (source, "before") in run.rows]

    def table(self) -> Table:
        header = ["method", "run", *[m.label for m in self.metrics], f"{heading(OF_PICKS)} (A2C)",
                  "A2C calls / question"]
        return Table(header, [[SOURCE_LABELS[source].table, run.label,
                               *[_cell_text(self.cells[(source, run.label, m.key)]) for m in self.metrics],
                               run.dont_know_share(source), run.calls_per_question(source)]
                              for source, run in self.rows()])

    def following_table(self) -> Table | None:
        """Each run's rank-prompt format-following per method; None when no run asked rank prompts."""
        rows = [([SOURCE_LABELS[source].table, run.label], ff) for source in SOURCES for run in self.runs
                if (ff := run.following.get(source)) is not None]
        return format_following_table(rows, ["method", "run"]) if rows else None

    def long_table(self) -> Table:
        """One line per method, run and metric, as numbers (compare.csv)."""
        header = ["method", "run", "model", "metric", "kind", "questions", "dropped", "before", "after",
                  "difference", "ci_low", "ci_high"]
        lines = []
        for source, run in self.rows():
            for m in self.metrics:
                cell = self.cells[(source, run.label, m.key)]
                d = cell.difference
                lines.append([source, run.label, run.summary.model, m.label, m.kind,
                              str(d.n) if d else "", str(d.dropped) if d else "", _number(cell.before),
                              _number(cell.after), _number(d.mean_difference if d else None),
                              _number(d.low if d else None), _number(d.high if d else None)])
        return Table(header, lines)

    def scope(self) -> str:
        if not any(self.dropped.values()):
            return f"All {len(self.runs)} runs hold the same {len(self.questions)} questions."
        left = ", ".join(f"{label}: {n}" for label, n in self.dropped.items() if n)
        return (f"Compared on the {len(self.questions)} questions every run holds (--intersect; left out "
                f"per run: {left}).")

    def explanation(self) -> str:
        text = (f"Each cell: before → after Ask-to-Choose over the questions where both are defined, then "
                f"the difference after − before with its {LEVEL:.0%} paired bootstrap interval "
                f"({RESAMPLES:,} resamples of the questions, seed {SEED}); * marks an interval that "
                "excludes 0. Accuracy is TruthfulQA's acc over the questions with references; consistency "
                f"is Cons_sem (Contra: lower = more consistent). The last columns: A2C's {OF_PICKS} (the "
                "share of its picks, one per question, that are the \"don't know\" option), and A2C's "
                "model calls per question.")
        if self.left_out:
            text += f" Not in every run, so not compared: {', '.join(self.left_out)}."
        return text

    def markdown(self) -> str:
        runs = "\n".join(f"- {run.label}: `{run.run.path}` (experiment {run.summary.name})"
                         for run in self.runs)
        following = self.following_table()
        return (f"# a2c compare\n\n{runs}\n\n{self.scope()}\n\n{self.explanation()}\n\n"
                f"{self.table().markdown()}\n\n![after − before]({COMPARE_PNG.name})\n"
                + (f"\n## The rank prompt: does each model follow it?\n\n{FORMAT_FOLLOWING_NOTE}\n\n"
                   f"{following.markdown()}\n" if following else "")
                + (f"\n{self.order.markdown()}" if self.order.shown else ""))

    def plot(self) -> bytes:
        """After − before per run and metric with its interval, one panel per method, one legend below."""
        plt = pyplot()
        sources = [s for s in SOURCES if any(src == s for src, _ in self.rows())]
        size = (len(sources) * (1.6 + 0.8 * len(self.metrics)), 4.2 + 0.2 * len(self.runs))
        fig, axes = plt.subplots(1, len(sources), squeeze=False, layout="constrained", figsize=size)
        width = 0.8 / max(1, len(self.runs))
        for ax, source in zip(axes[0], sources, strict=True):
            for k, run in enumerate(self.runs):
                points = [(x, d) for x, m in enumerate(self.metrics)
                          if (cell := self.cells.get((source, run.label, m.key)))
                          and (d := cell.difference) is not None and d.mean_difference is not None
                          and d.low is not None and d.high is not None]
                means = [float(d.mean_difference or 0.0) for _, d in points]
                lows = [m - float(d.low or 0.0) for m, (_, d) in zip(means, points, strict=True)]
                highs = [float(d.high or 0.0) - m for m, (_, d) in zip(means, points, strict=True)]
                ax.errorbar([x - 0.4 + width * (k + 0.5) for x, _ in points], means, fmt="o", capsize=3,
                            color=f"C{k}", yerr=[lows, highs])
            ax.axhline(0, color="grey", linewidth=0.8)
            ax.set_xticks(range(len(self.metrics)), [m.label for m in self.metrics], rotation=30, ha="right",
                          fontsize=8)
            ax.set_title(SOURCE_LABELS[source].table, fontsize=9)
            ax.set_ylabel(f"after − before A2C ({LEVEL:.0%} paired bootstrap interval)", fontsize=8)
        handles = [plt.Line2D([], [], marker="o", linestyle="", color=f"C{k}") for k in range(len(self.runs))]
        fig.legend(handles, [_short(run.label) for run in self.runs], loc="outside lower center", fontsize=7)
        return png_bytes(fig)

    def sections(self) -> list[Section]:
        """The comparison as the viewer shows it, first when it opens several runs."""
        runs = "; ".join(f"{run.label}: {run.run.path}" for run in self.runs)
        following = self.following_table()
        sections = [Section("Before → after Ask-to-Choose across runs", (
            Text(f"Runs — {runs}. {self.scope()}"), Text(self.explanation()), TableBlock(self.table()),
            Image("after − before per run, with intervals", self.plot()),
            *((Text(FORMAT_FOLLOWING_NOTE), TableBlock(following)) if following else ())))]
        order = self.order.table()
        if self.order.shown:
            sections.append(Section(ORDER_SENSITIVITY_TITLE, (
                *((Text(self.order.note()), TableBlock(order)) if order is not None else ()),
                *((Text(self.order.reason),) if self.order.reason else ()))))
        return sections

    def write(self, out: Path) -> list[Path]:
        """compare.md, compare.csv, compare.png and compare_order.csv in `out` (created if needed); the
        last is written without a table too (its header only), so none is left from an earlier comparison."""
        folder = RunFolder(out)
        folder.write_text(COMPARE_MD.name, self.markdown())
        folder.write_text(COMPARE_CSV.name, self.long_table().csv())
        folder.write_bytes(COMPARE_PNG.name, self.plot())
        folder.write_text(COMPARE_ORDER_CSV.name, self.order.long_table().csv())
        return [folder.file(f.name) for f in COMPARE_FILES]


def _short(label: str, limit: int = 70) -> str:
    return label if len(label) <= limit else label[:limit - 1] + "…"


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def _cell_text(cell: Cell) -> str:
    d = cell.difference
    if d is None:
        return fmt(cell.before)
    if not d.defined:
        return f"{fmt(cell.before)} → {fmt(cell.after)} (n/a: fewer than 2 questions)"
    assert d.mean_difference is not None and d.low is not None and d.high is not None
    star = "*" if d.excludes_zero else ""
    return (f"{fmt(cell.before)} → {fmt(cell.after)} ({d.mean_difference:+.3f} "
            f"[{d.low:+.3f}, {d.high:+.3f}]{star})")


def _labels(runs: Sequence[OpenedRun], summaries: Sequence[QASummary], given: Sequence[str] | None
            ) -> list[str]:
    """`--label`s, else each run's model; runs of one model are told apart by their folder as given."""
    if given:
        if len(given) != len(runs):
            raise CompareError(f"{len(given)} --label for {len(runs)} runs: give one per run, in order")
        if len(set(given)) != len(given):
            raise CompareError(f"--label names a run twice: {', '.join(given)}")
        return list(given)
    models = [" ".join(s.model.split()) for s in summaries]  # one line, whatever the model's name holds
    labels = [m if models.count(m) == 1 else f"{m} ({run.path})" for m, run in zip(models, runs, strict=True)]
    return [label if labels.count(label) == 1 else f"{label} #{k + 1}" for k, label in enumerate(labels)]


def _a2c_figures(run: OpenedRun, questions: set[str]
                 ) -> tuple[dict[Source, list[SelectionRow]], dict[Source, FormatFollowing],
                            dict[tuple[str, Source], bytes]]:
    """A2C's picks, its rank replies' format-following and a digest of the candidates per question and
    source on the compared questions, from the run's rows (so runs summarised by an older a2c, or
    compared with --intersect, get them too)."""
    folder = run.folder
    picks: dict[Source, list[SelectionRow]] = {}
    if folder.exists(SELECTIONS.name):
        for pick in folder.read_rows(SELECTIONS):
            if pick.method == "a2c" and pick.id in questions:
                picks.setdefault(pick.source, []).append(pick)
    if not folder.exists(GENERATIONS.name) or not isinstance(run.config, ExperimentConfig):
        return picks, {}, {}
    answer_field = run.config.variation.answer_field
    generations = [g for g in folder.read_rows(GENERATIONS) if g.id in questions]
    candidates = candidate_digests(generations, answer_field)
    if not folder.exists(CHOICES.name):
        return picks, {}, candidates
    choices = [c for c in folder.read_rows(CHOICES) if c.id in questions]
    return picks, format_following(choices, held(generations), answer_field), candidates


def _questions(run: OpenedRun, rows: Sequence[MetricRow]) -> dict[str, str]:
    """Question id → its text (from the run's paraphrases; empty where the run kept none)."""
    texts = {p.id: p.question for p in run.folder.read_rows(PARAPHRASES)} \
        if run.folder.exists(PARAPHRASES.name) else {}
    return {r.id: texts.get(r.id, "") for r in rows}


def compare_opened(opened: Sequence[OpenedRun], labels: Sequence[str] | None = None, intersect: bool = False
                   ) -> Comparison:
    """Compare open QA runs (see the module's doc); the core has checked they are QA runs."""
    summaries = [r.summary for r in opened if isinstance(r.summary, QASummary)]
    names = _labels(opened, summaries, labels)
    metric_rows = [run.folder.read_rows(METRICS) for run in opened]
    question_sets = [_questions(run, rows) for run, rows in zip(opened, metric_rows, strict=True)]
    keys = [set(q.items()) for q in question_sets]
    shared = set.intersection(*keys)
    for run, own in zip(opened[1:], keys[1:], strict=True):
        if not keys[0] & own:  # --intersect would leave nothing: no hint to use it
            raise CompareError(f"{opened[0].path} and {run.path} share no question (same id and text; "
                               f"{len(keys[0])} and {len(own)} questions), so there is nothing to compare")
        if own != keys[0] and not intersect:
            raise CompareError(
                f"{opened[0].path} and {run.path} hold different question sets ({len(keys[0])} and "
                f"{len(own)} questions, {len(keys[0] & own)} shared): rerun with --intersect to compare the "
                "shared ones")
    if not shared:
        raise CompareError("the runs share no question (same id and text), so there is nothing to compare")
    questions = [q for q in question_sets[0] if (q, question_sets[0][q]) in shared]
    runs = []
    for name, run, summary, rows in zip(names, opened, summaries, metric_rows, strict=True):
        grouped: dict[tuple[Source, Phase], dict[str, MetricRow]] = {}
        for row in rows:
            grouped.setdefault((row.source, row.phase), {})[row.id] = row
        picks, following, candidates = _a2c_figures(run, set(questions))
        runs.append(ComparedRun(name, run, summary, grouped, picks, following, candidates))
    sims = [s for s in summaries[0].similarities if all(s in x.similarities for x in summaries)]
    judges = [j for j in summaries[0].judges if all(j in x.judges for x in summaries)]
    every = dict.fromkeys([*(s for x in summaries for s in x.similarities),
                           *(j for x in summaries for j in x.judges)])
    left_out = [name for name in every if name not in sims and name not in judges]
    referenced = any(x.referenced for x in summaries)
    held = [{c.key for c in x.computed_columns()} for x in summaries]
    computed = [c for c in summaries[0].computed_columns() if all(c.key in keys for keys in held)]
    left_out += [c.label for x in summaries for c in x.computed_columns() if c not in computed]
    metrics = [*(_accuracy(s) for s in sims if referenced), *(_consistency(j) for j in judges),
               *(_computed(c) for c in computed)]
    cells = {(source, run.label, m.key): _cell(run, source, m, questions)
             for run in runs for source in SOURCES if (source, "before") in run.rows for m in metrics}
    order = order_sensitivity(runs, questions, resamples=RESAMPLES, seed=SEED, level=LEVEL)
    return Comparison(runs, questions, {n: len(k) - len(shared) for n, k in zip(names, keys, strict=True)},
                      metrics, left_out, cells, order)


def _cell(run: ComparedRun, source: Source, metric: Metric, questions: Sequence[str]) -> Cell:
    before_rows = run.rows[(source, "before")]
    before = [metric.value(before_rows[q]) if q in before_rows else None for q in questions]
    after_rows = run.rows.get((source, PHASES[1]))
    if after_rows is None:
        return Cell(mean_defined(before)[0], None, None)
    after = [metric.value(after_rows[q]) if q in after_rows else None for q in questions]
    pairs = [(b, a) for b, a in zip(before, after, strict=True) if b is not None and a is not None]
    difference = paired_difference_ci(before, after, resamples=RESAMPLES, seed=SEED, level=LEVEL)
    return Cell(mean_defined([b for b, _ in pairs])[0], mean_defined([a for _, a in pairs])[0], difference)



COMPARER = Comparer(compare_opened, tuple(f.name for f in COMPARE_FILES))  # the QA task's `compare`
