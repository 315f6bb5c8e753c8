"""Tables and plots of a run: the paper-layout before/after table, all vs accurate answers, plots.

Everything here reads the run's typed rows only (`metrics.jsonl`, `choices.jsonl`, `paraphrases.jsonl`,
`summary.json`, through a `Store`), so `a2c report RUN_DIR` regenerates the report without any model. The
per-set rows are read as columns (`a2c.qa.columns`), so a run of 100,000 questions is drawn from a few
float arrays, not from its rows' objects.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from a2c.common.files import read_text
from a2c.data.tables import csv_rows
from a2c.display.reporting import (
    CURVE_POINTS,
    SCATTER_POINTS,
    ReportError,
    Table,
    fmt,
    png_bytes,
    pyplot,
    sampled,
    thinned,
)
from a2c.metrics import fleiss_kappa, rating_counts, spearman_rho
from a2c.metrics.set_metrics import SET_METRICS, SetMetric
from a2c.metrics.signal import oracle_curve, rejection_curve
from a2c.prompting.paraphrase import CHANGED_MEANING
from a2c.qa.columns import MetricColumns, UncertaintyColumns
from a2c.qa.conclusions import conclusions
from a2c.qa.correctness.accuracy import accuracy_label
from a2c.qa.dont_know import OF_CHOICES, OF_PICKS, heading
from a2c.qa.format_following import FORMAT_FOLLOWING_NOTE, format_following_table
from a2c.qa.risk_coverage import PLOT_RISK_COVERAGE, TABLE_DECLINE, decline_section
from a2c.qa.rows import METRICS, PARAPHRASES, PHASES, SOURCE_LABELS, SOURCES, SUMMARY, UNCERTAINTY, Source
from a2c.qa.summary import (
    TRUTHFULQA_RULE,
    BeforeAfter,
    Difference,
    GroupSummary,
    QASummary,
    SelectionSummary,
    answer_groups,
    judge_label,
    read_summary,
    signal_groups,
)
from a2c.qa.vote import DEFAULT_VOTE
from a2c.run.runfiles import RunFile
from a2c.run.store import Store

REPORT = RunFile("report.md")
TABLE_BEFORE_AFTER = RunFile("table_before_after.csv")
TABLE_ACCURATE = RunFile("table_accurate_answers.csv")
COUNTS = RunFile("counts.csv")
PLOT_ACCURACY = RunFile("accuracy_vs_consistency.png")
PLOT_CORRELATIONS = RunFile("metric_correlations.png")
TABLE_SIGNAL = RunFile("table_signal.csv")
PLOT_REJECTION = RunFile("accuracy_vs_rejection.png")
TABLE_SELECTION = RunFile("table_selection.csv")
REPORT_FILES = (REPORT, TABLE_BEFORE_AFTER, TABLE_ACCURATE, COUNTS, PLOT_ACCURACY, PLOT_CORRELATIONS,
                TABLE_SIGNAL, PLOT_REJECTION, TABLE_SELECTION, TABLE_DECLINE, PLOT_RISK_COVERAGE)
# how a rank reply was read (`ParseMethod`), as the counts table names it
PARSE_METHOD_ROWS = {"number": "rank replies read by option number",
                     "letter": "rank replies read by option letter",
                     "text": "rank replies read by an option's text",
                     "idk": "rank replies read by \"don't know\" wording (not by number)",
                     "unparsed": "rank replies naming no option"}


# -- tables -----------------------------------------------------------------------------------------------

ARROWS = {"up": "↑", "down": "↓", None: "~"}


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def interval(change: Difference) -> str:
    """`[low, high]` of a paired difference, signed; empty when undefined (fewer than two pairs)."""
    if change.low is None or change.high is None:
        return ""
    return f"[{_signed(change.low)}, {_signed(change.high)}]"


def _arrow(before: float | None, after: float | None, change: Difference | None = None) -> str:
    """`before → after`, then ↑/↓ only where the paired interval of after − before excludes 0, `~` where it
    does not (or is undefined), and the interval."""
    if before is None or after is None:
        return f"{fmt(before)} → {fmt(after)}"
    direction = None if change is None else change.direction
    bracket = "" if change is None else interval(change)
    return f"{fmt(before)} → {fmt(after)} {ARROWS[direction]}" + (f" {bracket}" if bracket else "")


def _direction(metric: SetMetric) -> str:
    return "" if metric.higher_is_better else ", lower = more consistent"


def before_after_table(summary: QASummary, *, bounds: bool = False) -> Table:
    """The paper's Table 2/5 layout: rows = method × model; accuracy and consistency, before → after A2C,
    each change with its 95% paired bootstrap interval over questions. Without any references the
    accuracy columns are left out (not shown as zeros). `bounds` adds the interval's bounds as numeric
    columns (`<column> low`, `<column> high`) for the CSV."""
    sims = summary.similarities if summary.referenced else []
    judges, ent = summary.judges, summary.entropy_judge
    entropy, cons_lex = SET_METRICS.get("entropy"), SET_METRICS.get("cons_lex")
    columns: list[tuple[str, Callable[[GroupSummary], float | None], Callable[[BeforeAfter], Difference]]] = [
        *[(accuracy_label(s), lambda g, s=s: g.accuracy[s].acc.mean, lambda c, s=s: c.accuracy[s])
          for s in sims],
        *[(judge_label(j), lambda g, j=j: g.consistency[j].mean, lambda c, j=j: c.consistency[j])
          for j in judges],
        (f"{entropy.label} ({judge_label(ent)}{_direction(entropy)})", lambda g: g.entropy[ent].mean,
         lambda c: c.entropy),
        (f"{cons_lex.label}{_direction(cons_lex)}", lambda g: g.cons_lex.mean, lambda c: c.cons_lex),
        *[(c.heading, lambda g, k=c.key: g.extra[k].mean, lambda ch, k=c.key: ch.extra[k])
          for c in summary.computed_columns()]]
    idk_at = len(sims)  # the don't-know share of choices sits right after the accuracy columns
    names = [name for name, _, _ in columns]
    header = ["method", "model", *names[:idk_at], f"{heading(OF_CHOICES)} (A2C)", *names[idk_at:]]
    if bounds:
        header += [f"{name} {end}" for name in names for end in ("low", "high")]
    rows = []
    for method in SOURCES:
        before, after = summary.group(method, "before"), summary.group(method, "after")
        if before is None:
            continue
        change = summary.change(method) if after is not None else None
        cells = [_arrow(get(before), get(after), diff(change) if change else None) if after is not None
                 else fmt(get(before)) for _, get, diff in columns]
        row = [SOURCE_LABELS[method].table, summary.model, *cells[:idk_at],
               fmt(after.idk_share) if after is not None else "n/a", *cells[idk_at:]]
        if bounds:
            row += [fmt(getattr(diff(change), end)) if change else "n/a"
                    for _, _, diff in columns for end in ("low", "high")]
        rows.append(row)
    return Table(header, rows)


def _versus(change: Difference | None) -> str:
    if change is None:
        return "—"
    if change.mean is None:
        return "n/a"
    return f"{_signed(change.mean)} {interval(change)}".strip()


def selection_table(summary: QASummary, *, bounds: bool = False) -> Table:
    """One row per source × selection method: accuracy of its picks per similarity, the don't-know share of
    picks, model calls per question, and its difference to `random` and to `a2c` per similarity, each with
    a 95% paired bootstrap interval over questions. `bounds` writes the differences as numeric columns
    (mean, low, high) for the CSV."""
    sims = summary.similarities if summary.referenced else []
    with_a2c = any(r.method == "a2c" for r in summary.selection)
    comparisons: list[tuple[str, Callable[[SelectionSummary], dict[str, Difference]]]] = [
        ("random", lambda r: r.vs_random), *([("A2C", lambda r: r.vs_a2c)] if with_a2c else [])]
    header = ["method", "selection", *[accuracy_label(s) for s in sims], heading(OF_PICKS), "picked",
              "unparsed", "model calls / question"]
    for who, _ in comparisons:
        for s in sims:
            name = f"{accuracy_label(s).split(' ')[0]} − {who}"
            header += [f"{name}", f"{name} low", f"{name} high"] if bounds else [f"{name} [95% CI]"]
    rows = []
    for r in summary.selection:
        row = [SOURCE_LABELS[r.source].table, r.label, *[fmt(r.accuracy[s].mean) for s in sims],
               fmt(r.dont_know_share), f"{r.picked} / {r.questions}", str(r.unparsed),
               f"{r.calls / r.questions:.2f}" if r.questions else "n/a"]
        for _, versus in comparisons:
            for s in sims:
                change = versus(r).get(s)
                row += [_versus(change)] if not bounds else \
                    [fmt(value) for value in (change.mean, change.low, change.high)] if change else ["—"] * 3
        rows.append(row)
    return Table(header, rows)


def accurate_answers_table(summary: QASummary) -> Table:
    """Table 1/3 analogue: consistency over all answers vs over the accurate answers only."""
    judges = summary.judges
    header = ["method", "model", "phase"] + [f"{judge_label(j)} all / accurate" for j in judges]
    rows = []
    for g in summary.groups:
        rows.append([SOURCE_LABELS[g.method].table, g.model, g.phase]
                    + [f"{fmt(g.consistency[j].mean)} / {fmt(g.consistency_accurate[j].mean)}"
                       for j in judges])
    return Table(header, rows)


def counts_table(summary: QASummary) -> Table:
    counts = summary.counts
    rows = [["questions", str(counts.questions)],
            ["questions with references", str(counts.questions_with_references)]]
    if counts.ungraded_sets is not None:
        rows.append(["sets left ungraded (grader replies unread)", str(counts.ungraded_sets)])
    if counts.paraphrases is not None:
        rows += [["paraphrases", str(counts.paraphrases)],
                 ["paraphrases failed", str(counts.paraphrases_failed)]]
    if counts.paraphrases_changed_meaning is not None:
        rows += [["first draws that changed the meaning", str(counts.paraphrases_first_changed_meaning)],
                 ["… retried into a passing paraphrase", str(counts.paraphrases_retried_into_passing)],
                 ["paraphrases failed as changed meaning", str(counts.paraphrases_changed_meaning)]]
    for source, c in counts.choices.items():
        rows += [[f"rank prompts ({source})", str(c.rank_prompts)],
                 [f"rank replies naming no option ({source})", str(c.unparsed)],
                 [f"rank replies choosing \"don't know\" ({source}; any way of naming it)", str(c.idk)]]
    rows.append(["prompts cut to fit context", str(counts.prompts_cut_to_fit_context)])
    rows += [[PARSE_METHOD_ROWS[m], str(n)] for m, n in counts.parse_methods.items()]
    rows += [[f"sets with < 2 outputs ({g.method}, {g.phase})", str(g.cons_lex.skipped)]
             for g in summary.groups]
    return Table(["count", "value"], rows)


# -- human labels and metric correlations -----------------------------------------------------------------

def read_human_labels(path: Path) -> dict[tuple[str, str, str], list[str]]:
    """CSV with columns id, source, phase, then one column per annotator (labels of any kind)."""
    # read as data files are: strict quoting, so a quote left open fails at its line, not rows later
    lines = csv_rows(path, read_text(path, ReportError, what="human labels file", encoding="utf-8"))
    _, header = next(lines, (1, []))
    if header[:3] != ["id", "source", "phase"] or len(header) < 5:
        raise ReportError(f"{path}: expected columns id, source, phase and at least two annotators")
    labels = {}
    for line, row in lines:
        if len(row) != len(header) or any(not v.strip() for v in row):
            raise ReportError(f"{path}:{line}: expected {len(header)} non-empty values")
        labels[(row[0], row[1], row[2])] = [v.strip() for v in row[3:]]
    return labels


def metric_columns(metrics: MetricColumns, summary: QASummary) -> dict[str, np.ndarray]:
    """One value per (question, method, phase) set for every metric the run computed (NaN: undefined)."""
    entropy, cons_lex = SET_METRICS.get("entropy"), SET_METRICS.get("cons_lex")
    columns: dict[str, np.ndarray] = {cons_lex.signed_label: cons_lex.as_confidences(metrics.cons_lex)}
    for j in summary.judges:
        columns[judge_label(j)] = metrics.judge("cons_sem", j)
    # oriented, so that for every column higher means more consistent
    entropy_values = metrics.judge("entropy", summary.entropy_judge)
    columns[entropy.signed_label] = entropy.as_confidences(entropy_values)
    for c in summary.computed_columns():
        columns[c.signed_label] = c.metric.as_confidences(metrics.extra(c.key))
    for s in summary.similarities if summary.referenced else []:
        columns[accuracy_label(s).split(" ")[0]] = metrics.accuracy(s)
    return columns


def _rho(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman ρ over the rows where both are defined (None: no such row, or undefined)."""
    both = ~np.isnan(x) & ~np.isnan(y)
    return spearman_rho(x[both], y[both]) if both.any() else None


def correlations(columns: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """Spearman ρ between every pair of metric columns over the sets where both are defined."""
    names = list(columns)
    matrix = np.full((len(names), len(names)), np.nan)
    for a, first in enumerate(names):
        for b, second in enumerate(names):
            rho = _rho(columns[first], columns[second])
            matrix[a, b] = np.nan if rho is None else rho
    return names, matrix


def _set_labels(metrics: MetricColumns, labels: dict[tuple[str, str, str], list[str]]
                ) -> list[list[str] | None]:
    """Each set's human labels (None: the file has none for it)."""
    keys = zip(metrics.question.tolist(), metrics.source.tolist(), metrics.phase.tolist(), strict=True)
    return [labels.get((metrics.ids[q], SOURCES[s], PHASES[p])) for q, s, p in keys]


def human_column(per_set: list[list[str] | None]) -> np.ndarray:
    """The mean human label of each set (NaN: the set has no labels)."""
    try:
        return np.array([np.mean([float(v) for v in lab]) if lab else np.nan for lab in per_set],
                        dtype=np.float64)
    except ValueError:
        raise ReportError("human labels must be numbers (e.g. 0/1 or a 1-5 scale)") from None


def human_agreement(columns: dict[str, np.ndarray], per_set: list[list[str] | None]
                    ) -> tuple[dict[str, float | None], float | None]:
    """Spearman ρ of each metric with the mean human label per set, and Fleiss' κ among the annotators."""
    keyed = [lab for lab in per_set if lab is not None]
    if not keyed:
        raise ReportError("the human labels file matches no (id, source, phase) set of this run")
    human = human_column(per_set)
    rhos = {name: _rho(values, human) for name, values in columns.items()}
    counts, _ = rating_counts(keyed)
    return rhos, fleiss_kappa(counts)


# -- plots ------------------------------------------------------------------------------------------------

Curve = tuple[np.ndarray, np.ndarray]  # (x, y) of a line


def plot_accuracy_vs_consistency(metrics: MetricColumns, summary: QASummary) -> bytes:
    """Figure 3 analogue (PNG): per-set consistency (first judge) against accuracy, per method and phase.
    Without references there is no accuracy axis: the per-set consistency histograms instead."""
    if not summary.referenced:
        return plot_consistency(metrics, summary)
    plt = pyplot()
    judge, sim = summary.judges[0], summary.similarities[0]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    markers = {"before": "o", "after": "^"}
    colours = {"paraphrase": "tab:blue", "temperature": "tab:orange"}
    largest = 0  # sets with both values in the largest group: above SCATTER_POINTS a sample is drawn
    for g in summary.groups:
        mine = metrics.where(g.method, g.phase)
        cons, accuracy = metrics.judge("cons_sem", judge)[mine], metrics.accuracy(sim)[mine]
        both = np.flatnonzero(~np.isnan(cons) & ~np.isnan(accuracy))
        largest = max(largest, len(both))
        drawn = sampled(both, SCATTER_POINTS)
        label = f"{SOURCE_LABELS[g.method].table}, {g.phase} A2C"
        ax.scatter(cons[drawn], accuracy[drawn], s=12, alpha=0.35,
                   marker=markers[g.phase], color=colours[g.method])
        x, y = g.consistency[judge].mean, g.accuracy[sim].acc.mean
        if x is not None and y is not None:
            ax.scatter([x], [y], s=140, marker=markers[g.phase], color=colours[g.method],
                       edgecolor="black", label=label)
    ax.set_xlabel(f"consistency ({judge_label(judge)} Cons_sem)")
    counted = "closer to a correct reference" if summary.accuracy_rule == TRUTHFULQA_RULE \
        else f"correct under {summary.accuracy_rule}"
    ax.set_ylabel(f"accuracy ({accuracy_label(sim).split(' ')[0]}: share of answers {counted})", fontsize=8)
    sample = (f"\n(each group: a seeded sample of {SCATTER_POINTS:,} sets drawn, of up to {largest:,})"
              if largest > SCATTER_POINTS else "")
    ax.set_title(f"{summary.name}: {summary.model}{sample}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def plot_consistency(metrics: MetricColumns, summary: QASummary) -> bytes:
    """Histograms of per-set consistency (first judge) per method and phase: a dataset without references."""
    plt = pyplot()
    judge = summary.judges[0]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for g in summary.groups:
        values = metrics.judge("cons_sem", judge)[metrics.where(g.method, g.phase)]
        values = values[~np.isnan(values)]
        ax.hist(values, bins=10, range=(0, 1), alpha=0.4,
                label=f"{SOURCE_LABELS[g.method].table}, {g.phase} A2C")
    ax.set_xlabel(f"consistency ({judge_label(judge)} Cons_sem)")
    ax.set_ylabel("questions")
    ax.set_title(f"{summary.name}: {summary.model} (no reference answers: no accuracy)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def plot_rejection(metrics: MetricColumns, summary: QASummary,
                   uncertainty: UncertaintyColumns | None = None) -> bytes:
    """Accuracy of the answers kept when the least consistent are rejected first, per metric (the
    uncertainty measures and per-answer confidences too), before A2C; with the oracle and random baselines
    (what PRR compares). One metric's groups at a time, each curve thinned to what a figure shows."""
    plt = pyplot()
    groups = itertools.chain(signal_groups(metrics, summary.judges, summary.entropy_judge, uncertainty,
                                           summary.computed_columns()),
                             ((key, g) for key, (g, _) in answer_groups(uncertainty)))
    # per source: the curves (metrics that rank the answers alike draw the same curve: one line, labelled
    # with all of them), the oracle and random baselines of its first defined metric, or why none is defined
    curves: dict[Source, dict[bytes, tuple[list[str], Curve]]] = {s: {} for s in SOURCES}
    baselines: dict[Source, tuple[Curve, float]] = {}
    why: dict[Source, str] = {}
    for (name, source, phase), g in groups:
        if phase != "before":
            continue
        if g.undefined:
            why.setdefault(source, g.undefined)
            continue
        x, y = rejection_curve(g)
        same = hashlib.sha256(np.round(y, 9).tobytes()).digest()
        curves[source].setdefault(same, ([], thinned(x, y, CURVE_POINTS)))[0].append(name)
        if source not in baselines:
            baselines[source] = (thinned(*oracle_curve(g), CURVE_POINTS), g.accurate.sum() / g.answers.sum())
    fig, axes = plt.subplots(1, len(SOURCES), figsize=(6.5 * len(SOURCES), 5.5), squeeze=False)
    for ax, source in zip(axes[0], SOURCES, strict=True):
        ax.set_title(f"{SOURCE_LABELS[source].table}, before A2C", fontsize=9)
        ax.set_xlabel("share of answers rejected (least consistent first)")
        ax.set_ylabel("accuracy of the answers kept")
        if source not in baselines:
            ax.text(0.5, 0.5, f"undefined: {why.get(source, 'no reference answers')}", ha="center",
                    va="center", transform=ax.transAxes)
            continue
        for k, (names, (x, y)) in enumerate(curves[source].values()):
            ax.plot(x, y, label=" = ".join(names), linewidth=1.2, linestyle=("-", "--", "-.", ":")[k % 4])
        oracle, random = baselines[source]
        ax.plot(*oracle, linestyle="--", color="black", label="oracle")
        ax.axhline(random, linestyle=":", color="grey", label="random")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=5, ncol=2)
    fig.tight_layout()
    return png_bytes(fig)


def _with_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def signal_table(summary: QASummary) -> Table:
    """AUROC and PRR of every consistency metric and uncertainty measure for predicting per-answer
    accuracy, with 95% intervals (a per-answer confidence is named `... per answer`), ranked by AUROC."""
    rows = []
    # best signal first: by AUROC, then PRR; undefined rows last
    ranked = sorted(summary.signal, key=lambda item: (item.auroc is None, -(item.auroc or 0.0),
                                                      -(item.prr or 0.0)))
    for item in ranked:
        undefined = f"undefined ({item.undefined})" if item.undefined else None
        auroc = undefined or _with_ci(item.auroc, item.auroc_ci)
        prr = undefined or _with_ci(item.prr, item.prr_ci)
        rows.append([item.metric, SOURCE_LABELS[item.source].table, item.phase,
                     f"{item.accurate} / {item.answers}", str(item.sets), auroc, prr])
    return Table(["metric", "method", "phase", "accurate / answers", "sets", "AUROC [95% CI]",
                  "PRR [95% CI]"], rows)


def plot_correlations(names: list[str], matrix: np.ndarray, sets: int) -> bytes:
    """Figure 4 analogue (PNG): Spearman ρ between the metrics (and human labels when given)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(names), 1.0 + 0.6 * len(names)))
    ax.set_title(f"Spearman ρ between metrics, n = {sets} answer sets (question × source × phase)",
                 fontsize=8)
    image = ax.imshow(np.nan_to_num(matrix), vmin=-1, vmax=1, cmap="coolwarm")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for a in range(len(names)):
        for b in range(len(names)):
            text = "–" if np.isnan(matrix[a, b]) else f"{matrix[a, b]:.2f}"
            ax.text(b, a, text, ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="Spearman ρ")
    fig.tight_layout()
    return png_bytes(fig)


# -- the report -------------------------------------------------------------------------------------------

def format_following_section(summary: QASummary) -> str:
    """The report's section on the rank prompt's format-following (empty without A2C)."""
    if not summary.format_following:
        return ""
    table = format_following_table([([SOURCE_LABELS[source].table], ff)
                                    for source, ff in summary.format_following.items()], ["method"])
    return ("\n\n## The rank prompt: does the model follow it?\n\n"
            f"{FORMAT_FOLLOWING_NOTE}\n\n{table.markdown()}")


def selection_section(summary: QASummary, table: Table) -> str:
    """The report's section on picking one answer per question: A2C against the baselines."""
    if not summary.selection:
        return ""
    intervals = ("; the last columns are its accuracy minus that of `random` (the exact expectation of a "
                 "uniformly drawn candidate) and of A2C, with 95% paired bootstrap intervals over questions"
                 if summary.referenced else "; no question has references, so there is no accuracy")
    return ("\n\n## Picking one answer: Ask-to-Choose against the baselines\n\n"
            "One answer per question and source of variation, picked from the same candidates: A2C's "
            "majority over its rank choices, USC (the model names the most consistent candidate), the "
            "medoid under a judge, the first member of the largest cluster. Accuracy of the pick per "
            f"similarity, model calls the method spent per question{intervals}. {heading(OF_PICKS)}: the "
            "share of a method's picks that are the don't-know option (A2C's majority choice).\n\n"
            + table.markdown())



SHOWN_CHANGED = 10  # paraphrases failed as "changed meaning" the report lists (all are counted)


def changed_meaning_section(store: Store, summary: QASummary) -> str:
    """The paraphrases the meaning check left failed, the first few with their scores; "" for a run without
    the check (or with none failed)."""
    if not summary.counts.paraphrases_changed_meaning:
        return ""
    rows = [[p_row.question, p.text, fmt(p.meaning)] for p_row in store.iter_rows(PARAPHRASES)
            for p in p_row.paraphrases if p.problem == CHANGED_MEANING]
    made = summary.counts.paraphrases or 0
    return ("\n## Paraphrases that changed the meaning\n\n"
            f"{len(rows)} of {made} paraphrases scored below the meaning check's threshold after their "
            "retry and were left out of the in-context paraphrases"
            + (f"; the first {SHOWN_CHANGED}" if len(rows) > SHOWN_CHANGED else "") + ":\n\n"
            + Table(["question", "paraphrase", "meaning score"], rows[:SHOWN_CHANGED]).markdown() + "\n")


def _accuracy_phrase(summary: QASummary) -> str:
    """What the accuracy columns count, by the run's correctness rule; and how A2C asked, where not the
    paper's way (the default rule and order leave the sentence as it always read)."""
    if summary.accuracy_rule == TRUTHFULQA_RULE:
        text = ("Accuracy columns are the share of answers closer to a correct than to an incorrect "
                "reference; ")
    else:
        text = (f"Accuracy columns are the share of answers correct under the `{summary.accuracy_rule}` rule "
                "(the best over the gold answers, against its threshold); ")
    if summary.option_order != "fixed" or summary.vote != DEFAULT_VOTE:
        text = (f"Ask-to-Choose listed the options in `{summary.option_order}` order and elected by the "
                f"`{summary.vote}` vote. " + text)
    return text


def write_report(store: Store, human_labels: Path | None = None) -> str:
    """(Re)write the tables (markdown + CSV), plots and report.md of a run; returns report.md's text."""
    if not store.exists(SUMMARY.name) or not store.exists(METRICS.name):
        raise ReportError(f"{store.where('')} has no metrics yet (summary.json, metrics.jsonl); "
                          "run `a2c run` to the end first")
    summary = read_summary(store, SUMMARY.name, hint=f"recompute it from the stored outputs: a2c report "
                           f"{store.where('')} (or `a2c run CONFIG` again)")
    metrics = MetricColumns.read(store.iter_rows(METRICS))
    uncertainty = UncertaintyColumns.read(store.iter_rows(UNCERTAINTY)) if store.exists(UNCERTAINTY.name) \
        else None
    with_refs, questions = summary.referenced, summary.counts.questions
    main, accurate = before_after_table(summary), accurate_answers_table(summary)
    if not with_refs:  # "accurate" means nothing without references: header only, no rows of n/a
        accurate = Table(accurate.header, [])
    counts, signal_rows = counts_table(summary), signal_table(summary)
    selection = selection_table(summary)
    store.write_text(TABLE_BEFORE_AFTER.name, before_after_table(summary, bounds=True).csv())
    store.write_text(TABLE_SELECTION.name, selection_table(summary, bounds=True).csv())
    store.write_text(TABLE_ACCURATE.name, accurate.csv())
    store.write_text(COUNTS.name, counts.csv())
    store.write_text(TABLE_SIGNAL.name, signal_rows.csv())

    columns = metric_columns(metrics, summary)
    human_section = ""
    if human_labels is not None:
        per_set = _set_labels(metrics, read_human_labels(human_labels))
        rhos, kappa = human_agreement(columns, per_set)
        human_section = ("\n## Agreement with human labels\n\n"
                         + Table(["metric", "Spearman ρ with mean human label"],
                                 [[k, fmt(v)] for k, v in rhos.items()]).markdown()
                         + f"\n\nFleiss' κ among annotators: {fmt(kappa)}\n")
        columns["Human"] = human_column(per_set)
    names, matrix = correlations(columns)
    store.write_bytes(PLOT_ACCURACY.name, plot_accuracy_vs_consistency(metrics, summary))
    store.write_bytes(PLOT_CORRELATIONS.name, plot_correlations(names, matrix, len(metrics)))
    store.write_bytes(PLOT_REJECTION.name, plot_rejection(metrics, summary, uncertainty))

    if not with_refs:
        scope = "No question has reference answers, so there is no accuracy: consistency only.\n\n"
    elif with_refs < questions:
        scope = (f"Accuracy is scored on the {with_refs} of {questions} questions that have reference "
                 "answers (the others have none: consistency and Ask-to-Choose only).\n\n")
    else:
        scope = ""
    signal_section = (
        "\n## Consistency as a signal of correctness\n\n"
        + ("How well each consistency metric and uncertainty measure of a question's answers predicts "
           "whether an answer is accurate: AUROC, and the prediction-rejection ratio (PRR; 1 = ranks like an "
           "oracle, 0 = chance), with seeded bootstrap 95% intervals over questions. Every score is oriented "
           "so that higher = more confident (uncertainties are negated: `-U_EigV`); a `per answer` "
           "confidence scores each answer on its own, the others give every answer its set's score. Ranked "
           "by AUROC, the best signal first.\n\n"
           f"{signal_rows.markdown()}\n"
           f"\n![accuracy vs rejection]({PLOT_REJECTION.name})\n"
           if with_refs else "Undefined: no question has reference answers.\n"))
    # nothing here changes unless the run's outputs do (no wall time), so a rerun finds it as it wrote it
    text = (f"# a2c report: {summary.name}\n\n"
            f"Model `{summary.model}`, {questions} questions.\n\n"
            + conclusions(summary)
            + "## Before → after Ask-to-Choose\n\n" + scope
            + (_accuracy_phrase(summary) if with_refs else "")
            + "consistency columns are mean Cons_sem per judge (Contra: lower = more consistent). Brackets: "
              f"the 95% interval of after − before, paired over questions (bootstrap, "
              f"{summary.paired_resamples:,} resamples, seeded); ↑/↓ only where it excludes 0, `~` where it "
              f"does not. {heading(OF_CHOICES)} (A2C): among A2C's choices (the rank replies that named an "
              "option: the answers after A2C), the share naming the don't-know option.\n\n"
            + main.markdown()
            + selection_section(summary, selection)
            + format_following_section(summary)
            + ("\n\n## Consistency over all answers vs accurate answers\n\n" + accurate.markdown()
               if with_refs else "")
            + "\n" + signal_section
            + (decline_section(store, summary, metrics, uncertainty) if with_refs else "")
            + "\n## Counts\n\n" + counts.markdown() + "\n" + changed_meaning_section(store, summary)
            + human_section
            + f"\n![accuracy vs consistency]({PLOT_ACCURACY.name})\n"
            + f"\n![metric correlations]({PLOT_CORRELATIONS.name})\n")
    store.write_text(REPORT.name, text)
    return text
