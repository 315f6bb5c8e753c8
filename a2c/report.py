"""Tables and plots of a run: the paper-layout before/after table, all vs accurate answers, plots.

Everything here reads the run's typed rows only (`metrics.jsonl`, `choices.jsonl`, `paraphrases.jsonl`,
`summary.json`, through a `Store`), so `a2c report RUN_DIR` regenerates the report without any model.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from a2c.errors import A2CError
from a2c.metrics import fleiss_kappa, mean_defined, rating_counts, spearman_rho
from a2c.metrics.signal import Groups, Signal, oracle_curve, rejection_curve, signal
from a2c.records import (
    CHOICES,
    METRICS,
    PARAPHRASES,
    PARSE_METHODS,
    PHASES,
    SOURCES,
    SUMMARY,
    TIMINGS,
    Accuracy,
    MetricRow,
    RunFile,
)
from a2c.scoring import SIMILARITY_LABELS
from a2c.store import Store

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from a2c.config import ExperimentConfig

REPORT = RunFile("report.md")
TABLE_BEFORE_AFTER = RunFile("table_before_after.csv")
TABLE_ACCURATE = RunFile("table_accurate_answers.csv")
COUNTS = RunFile("counts.csv")
PLOT_ACCURACY = RunFile("accuracy_vs_consistency.png")
PLOT_CORRELATIONS = RunFile("metric_correlations.png")
TABLE_SIGNAL = RunFile("table_signal.csv")
PLOT_REJECTION = RunFile("accuracy_vs_rejection.png")
REPORT_FILES = (REPORT, TABLE_BEFORE_AFTER, TABLE_ACCURATE, COUNTS, PLOT_ACCURACY, PLOT_CORRELATIONS,
                TABLE_SIGNAL, PLOT_REJECTION)
METHOD_LABELS = {"paraphrase": "in-context paraphrases", "temperature": "cross-temperature"}
JUDGE_LABELS = {"pp": "PP", "entail": "Entail", "contra": "Contra", "rouge1": "R1-C", "ner": "NER",
                "llm": "LLM", "embedding": "Emb", "exact": "Exact"}


class ReportError(A2CError):
    """A folder that is not a finished run (no metrics yet), or a malformed human labels file."""


def _mean(values: Sequence[float | None]) -> dict[str, float | int | None]:
    mean, skipped = mean_defined(values)
    return {"mean": mean, "skipped": skipped}


def summarize_metrics(store: Store, config: ExperimentConfig, model: str) -> dict[str, Any]:
    """Dataset means per (method, phase) from `metrics.jsonl`, plus the skipped/unparsed counts."""
    rows = store.read_rows(METRICS)
    judges = [j.name for j in config.judges]
    sims = [spec.name for spec in config.accuracy.similarities]
    entropy_judge = config.entropy_judge_name
    groups: list[dict[str, Any]] = []
    for source in SOURCES:
        for phase in PHASES:
            part = [r for r in rows if r.source == source and r.phase == phase]
            if not part:
                continue
            groups.append({
                "method": source, "model": model, "phase": phase, "sets": len(part),
                "outputs": sum(r.n for r in part),
                "cons_lex": _mean([r.cons_lex for r in part]),
                "consistency": {j: _mean([r.judges[j].cons_sem for r in part]) for j in judges},
                "consistency_accurate": {j: _mean([r.judges[j].cons_sem_accurate for r in part])
                                         for j in judges},
                "entropy": {j: _mean([r.judges[j].entropy for r in part]) for j in judges},
                "clusters": {j: _mean([r.judges[j].clusters if r.n else None for r in part]) for j in judges},
                # over the questions with references only: the others have no accuracy, not a zero one
                "accuracy": {s: {k: _mean([getattr(a, k) if (a := r.accuracy.get(s)) else None
                                           for r in part if r.referenced])
                                 for k in Accuracy.model_fields} for s in sims},
            })
    counts: dict[str, Any] = {"questions": len({r.id for r in rows}),
                              "questions_with_references": len({r.id for r in rows if r.referenced})}
    if store.exists(PARAPHRASES.name):
        paraphrases = store.read_rows(PARAPHRASES)
        counts["paraphrases"] = sum(len(p.paraphrases) for p in paraphrases)
        counts["paraphrases_failed"] = sum(not x.ok for p in paraphrases for x in p.paraphrases)
    if store.exists(CHOICES.name):
        choices = store.read_rows(CHOICES)
        for source in SOURCES:
            mine = [c for c in choices if c.source == source]
            counts[f"rank_prompts_{source}"] = len(mine)
            counts[f"unparsed_{source}"] = sum(not c.parsed for c in mine)
            counts[f"idk_{source}"] = sum(c.dont_know for c in mine)
        counts["parse_methods"] = {m: sum(c.method == m for c in choices) for m in PARSE_METHODS}
        # the share of parsed choices that took the "don't know" option: it counts as an answer, and its
        # wording moves accuracy under TruthfulQA's scoring, so the table shows it beside accuracy
        for g in groups:
            if g["phase"] == "after":
                parsed = counts[f"rank_prompts_{g['method']}"] - counts[f"unparsed_{g['method']}"]
                g["idk_share"] = counts[f"idk_{g['method']}"] / parsed if parsed else None
    return {"name": config.name, "model": model, "judges": judges, "similarities": sims,
            "entropy_judge": entropy_judge, "groups": groups, "counts": counts,
            "signal": [{"metric": name, "source": source, "phase": phase, **asdict(result)}
                       for (name, source, phase), result in
                       consistency_signal(rows, judges, entropy_judge, seed=config.seed).items()]}


# -- consistency as a signal of correctness ---------------------------------------------------------------

def _judge_sign(judge: str) -> float:
    """+1 where a higher score means more consistent, −1 for judges like `contra` (so every score ranks
    answers the same way round: higher = more confident)."""
    from a2c.judges import JUDGES

    cls = JUDGES.get(judge) if judge in JUDGES else None
    return 1.0 if getattr(cls, "higher_is_consistent", True) else -1.0


def signal_scores(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str
                  ) -> dict[str, list[float | None]]:
    """Per set, every consistency metric as a confidence (higher = more consistent): Cons_sem per judge,
    the negated clustering entropy and Cons_lex."""
    columns: dict[str, list[float | None]] = {}
    for j in judges:
        sign = _judge_sign(j)
        columns[f"{JUDGE_LABELS.get(j, j)} Cons_sem"] = [
            None if (v := r.judges[j].cons_sem) is None else sign * v for r in rows]
    columns[f"-Entropy ({JUDGE_LABELS.get(entropy_judge, entropy_judge)})"] = [
        None if (e := r.judges[entropy_judge].entropy) is None else -e for r in rows]
    columns["Cons_lex"] = [r.cons_lex for r in rows]
    return columns


def signal_groups(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str
                  ) -> dict[tuple[str, str, str], Groups]:
    """(metric, source, phase) → the sets with references and a defined score, as `Groups` for
    `a2c.metrics.signal`: every answer of a set carries the set's score, its accuracy is the target."""
    out: dict[tuple[str, str, str], Groups] = {}
    for name, values in signal_scores(rows, judges, entropy_judge).items():
        for source in SOURCES:
            for phase in PHASES:
                part = [(v, r) for v, r in zip(values, rows, strict=True)
                        if r.source == source and r.phase == phase and r.referenced and v is not None]
                if any(r.source == source and r.phase == phase and r.referenced for r in rows):
                    out[(name, source, phase)] = Groups.of([v for v, _ in part], [r.n for _, r in part],
                                                           [r.n_accurate or 0 for _, r in part])
    return out


def consistency_signal(rows: Sequence[MetricRow], judges: Sequence[str], entropy_judge: str, *,
                       seed: int = 0) -> dict[tuple[str, str, str], Signal]:
    """AUROC and PRR (with seeded bootstrap intervals) of every metric, source and phase; empty without
    references."""
    groups = signal_groups(rows, judges, entropy_judge)
    return {key: signal(g, seed=seed) for key, g in groups.items()}


# -- tables -----------------------------------------------------------------------------------------------

def fmt(value: float | None) -> str:
    """A metric as tables print it: 3 decimals, `n/a` when undefined."""
    return "n/a" if value is None else f"{value:.3f}"


def _arrow(before: float | None, after: float | None) -> str:
    if before is None or after is None:
        return f"{fmt(before)} → {fmt(after)}"
    mark = "↑" if after > before else "↓" if after < before else "="
    return f"{fmt(before)} → {fmt(after)} {mark}"


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        # a `|` inside a cell (a label, a CALM symbol) would end the cell
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in self.rows]
        return "\n".join(lines)

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(self.header)
        writer.writerows(self.rows)
        return out.getvalue()


def _group(summary: dict[str, Any], method: str, phase: str) -> dict[str, Any] | None:
    return next((g for g in summary["groups"] if g["method"] == method and g["phase"] == phase), None)


def referenced(summary: dict[str, Any]) -> int:
    """How many questions have references (a summary of an older a2c: all of them)."""
    counts = summary["counts"]
    return int(counts.get("questions_with_references", counts["questions"]))


def before_after_table(summary: dict[str, Any]) -> Table:
    """The paper's Table 2/5 layout: rows = method × model; accuracy and consistency, before → after A2C.
    Without any references the accuracy columns are left out (not shown as zeros)."""
    sims = summary["similarities"] if referenced(summary) else []
    judges, ent = summary["judges"], summary["entropy_judge"]
    header = ["method", "model"] + [SIMILARITY_LABELS[s] for s in sims] + ["Don't-know share (A2C)"] \
        + [JUDGE_LABELS.get(j, j) for j in judges] + [f"Entropy ({JUDGE_LABELS.get(ent, ent)}, lower = more "
                                                      "consistent)", "Cons_lex"]
    rows = []
    for method in SOURCES:
        before, after = _group(summary, method, "before"), _group(summary, method, "after")
        if before is None:
            continue

        def cell(get: Any, before: dict[str, Any] = before, after: dict[str, Any] | None = after) -> str:
            return _arrow(get(before), get(after)) if after is not None else fmt(get(before))

        row = [METHOD_LABELS[method], summary["model"]]
        row += [cell(lambda g, s=s: g["accuracy"][s]["acc"]["mean"]) for s in sims]
        row.append(fmt(after.get("idk_share")) if after is not None else "n/a")
        row += [cell(lambda g, j=j: g["consistency"][j]["mean"]) for j in judges]
        row += [cell(lambda g: g["entropy"][ent]["mean"]), cell(lambda g: g["cons_lex"]["mean"])]
        rows.append(row)
    return Table(header, rows)


def accurate_answers_table(summary: dict[str, Any]) -> Table:
    """Table 1/3 analogue: consistency over all answers vs over the accurate answers only."""
    judges = summary["judges"]
    header = ["method", "model", "phase"] + [f"{JUDGE_LABELS.get(j, j)} all / accurate" for j in judges]
    rows = []
    for g in summary["groups"]:
        rows.append([METHOD_LABELS[g["method"]], g["model"], g["phase"]]
                    + [f"{fmt(g['consistency'][j]['mean'])} / {fmt(g['consistency_accurate'][j]['mean'])}"
                       for j in judges])
    return Table(header, rows)


def counts_table(summary: dict[str, Any]) -> Table:
    counts = summary["counts"]
    rows = [[k, str(v)] for k, v in counts.items() if not isinstance(v, dict)]
    rows += [[f"replies parsed by {m}", str(n)] for m, n in counts.get("parse_methods", {}).items()]
    rows += [[f"sets with < 2 outputs ({g['method']}, {g['phase']})", str(g["cons_lex"]["skipped"])]
             for g in summary["groups"]]
    return Table(["count", "value"], rows)


# -- human labels and metric correlations -----------------------------------------------------------------

def read_human_labels(path: Path) -> dict[tuple[str, str, str], list[str]]:
    """CSV with columns id, source, phase, then one column per annotator (labels of any kind)."""
    if not path.is_file():
        raise ReportError(f"human labels file not found: {path}")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header or header[:3] != ["id", "source", "phase"] or len(header) < 5:
            raise ReportError(f"{path}: expected columns id, source, phase and at least two annotators")
        labels = {}
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header) or any(not v.strip() for v in row):
                raise ReportError(f"{path}:{line}: expected {len(header)} non-empty values")
            labels[(row[0], row[1], row[2])] = [v.strip() for v in row[3:]]
    return labels


def metric_columns(rows: Sequence[MetricRow], summary: dict[str, Any]) -> dict[str, list[float | None]]:
    """One value per (question, method, phase) set for every metric the run computed."""
    columns: dict[str, list[float | None]] = {"Cons_lex": [r.cons_lex for r in rows]}
    for j in summary["judges"]:
        columns[JUDGE_LABELS.get(j, j)] = [r.judges[j].cons_sem for r in rows]
    ent = summary["entropy_judge"]
    # negated, so that for every column higher means more consistent
    columns["-Entropy"] = [None if (e := r.judges[ent].entropy) is None else -e for r in rows]
    for s in summary["similarities"] if referenced(summary) else []:
        columns[SIMILARITY_LABELS[s].split(" ")[0]] = [a.acc if (a := r.accuracy.get(s)) else None
                                                       for r in rows]
    return columns


def correlations(columns: dict[str, list[float | None]]) -> tuple[list[str], np.ndarray]:
    """Spearman ρ between every pair of metric columns over the sets where both are defined."""
    names = list(columns)
    matrix = np.full((len(names), len(names)), np.nan)
    for a, first in enumerate(names):
        for b, second in enumerate(names):
            pairs = [(x, y) for x, y in zip(columns[first], columns[second], strict=True)
                     if x is not None and y is not None]
            rho = spearman_rho([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else None
            matrix[a, b] = np.nan if rho is None else rho
    return names, matrix


def human_agreement(rows: Sequence[MetricRow], columns: dict[str, list[float | None]],
                    labels: dict[tuple[str, str, str], list[str]]
                    ) -> tuple[dict[str, float | None], float | None]:
    """Spearman ρ of each metric with the mean human label per set, and Fleiss' κ among the annotators."""
    keyed = [(i, labels.get((r.id, r.source, r.phase))) for i, r in enumerate(rows)]
    keyed = [(i, lab) for i, lab in keyed if lab is not None]
    if not keyed:
        raise ReportError("the human labels file matches no (id, source, phase) set of this run")
    try:
        human = [float(np.mean([float(v) for v in lab])) for _, lab in keyed]
    except ValueError:
        raise ReportError("human labels must be numbers (e.g. 0/1 or a 1-5 scale)") from None
    rhos = {}
    for name, values in columns.items():
        pairs = [(values[i], h) for (i, _), h in zip(keyed, human, strict=True) if values[i] is not None]
        rhos[name] = spearman_rho([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else None
    counts, _ = rating_counts([lab for _, lab in keyed])
    return rhos, fleiss_kappa(counts)


# -- plots ------------------------------------------------------------------------------------------------

def _png(fig: Figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy_vs_consistency(rows: Sequence[MetricRow], summary: dict[str, Any]) -> bytes:
    """Figure 3 analogue (PNG): per-set consistency (first judge) against accuracy, per method and phase.
    Without references there is no accuracy axis: the per-set consistency histograms instead."""
    if not referenced(summary):
        return plot_consistency(rows, summary)
    plt = _pyplot()
    judge, sim = summary["judges"][0], summary["similarities"][0]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    markers = {"before": "o", "after": "^"}
    colours = {"paraphrase": "tab:blue", "temperature": "tab:orange"}
    for g in summary["groups"]:
        part = [(cons, accuracy.max_true) for r in rows if r.source == g["method"] and r.phase == g["phase"]
                and (cons := r.judges[judge].cons_sem) is not None and (accuracy := r.accuracy.get(sim))]
        label = f"{METHOD_LABELS[g['method']]}, {g['phase']} A2C"
        ax.scatter([x for x, _ in part], [y for _, y in part], s=12, alpha=0.35,
                   marker=markers[g["phase"]], color=colours[g["method"]])
        x, y = g["consistency"][judge]["mean"], g["accuracy"][sim]["max_true"]["mean"]
        if x is not None and y is not None:
            ax.scatter([x], [y], s=140, marker=markers[g["phase"]], color=colours[g["method"]],
                       edgecolor="black", label=label)
    ax.set_xlabel(f"consistency ({JUDGE_LABELS.get(judge, judge)} Cons_sem)")
    ax.set_ylabel(f"accuracy ({SIMILARITY_LABELS[sim].split(' ')[0]} max_true)")
    ax.set_title(f"{summary['name']}: {summary['model']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def plot_consistency(rows: Sequence[MetricRow], summary: dict[str, Any]) -> bytes:
    """Histograms of per-set consistency (first judge) per method and phase: a dataset without references."""
    plt = _pyplot()
    judge = summary["judges"][0]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for g in summary["groups"]:
        values = [c for r in rows if r.source == g["method"] and r.phase == g["phase"]
                  and (c := r.judges[judge].cons_sem) is not None]
        ax.hist(values, bins=10, range=(0, 1), alpha=0.4,
                label=f"{METHOD_LABELS[g['method']]}, {g['phase']} A2C")
    ax.set_xlabel(f"consistency ({JUDGE_LABELS.get(judge, judge)} Cons_sem)")
    ax.set_ylabel("questions")
    ax.set_title(f"{summary['name']}: {summary['model']} (no reference answers: no accuracy)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def plot_rejection(rows: Sequence[MetricRow], summary: dict[str, Any]) -> bytes:
    """Accuracy of the answers kept when the least consistent are rejected first, per metric, before A2C;
    with the oracle and random baselines (what PRR compares)."""
    plt = _pyplot()
    groups = signal_groups(rows, summary["judges"], summary["entropy_judge"])
    fig, axes = plt.subplots(1, len(SOURCES), figsize=(5.5 * len(SOURCES), 4.2), squeeze=False)
    for ax, source in zip(axes[0], SOURCES, strict=True):
        ax.set_title(f"{METHOD_LABELS[source]}, before A2C", fontsize=9)
        ax.set_xlabel("share of answers rejected (least consistent first)")
        ax.set_ylabel("accuracy of the answers kept")
        mine = {name: g for (name, s, phase), g in groups.items() if s == source and phase == "before"}
        defined = {name: g for name, g in mine.items() if not g.undefined}
        if not defined:
            why = next((g.undefined for g in mine.values()), "no reference answers")
            ax.text(0.5, 0.5, f"undefined: {why}", ha="center", va="center", transform=ax.transAxes)
            continue
        for name, g in defined.items():
            ax.plot(*rejection_curve(g), label=name, linewidth=1.2)
        first = next(iter(defined.values()))
        ax.plot(*oracle_curve(first), linestyle="--", color="black", label="oracle")
        ax.axhline(first.accurate.sum() / first.answers.sum(), linestyle=":", color="grey", label="random")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _with_ci(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def signal_table(summary: dict[str, Any]) -> Table:
    """AUROC and PRR of every consistency metric for predicting per-answer accuracy, with 95% intervals."""
    rows = []
    for item in summary.get("signal", []):
        undefined = f"undefined ({item['undefined']})" if item["undefined"] else None
        auroc = undefined or _with_ci(item["auroc"], item["auroc_ci"])
        prr = undefined or _with_ci(item["prr"], item["prr_ci"])
        rows.append([item["metric"], METHOD_LABELS[item["source"]], item["phase"],
                     f"{item['accurate']} / {item['answers']}", str(item["sets"]), auroc, prr])
    return Table(["metric", "method", "phase", "accurate / answers", "sets", "AUROC [95% CI]",
                  "PRR [95% CI]"], rows)


def plot_correlations(names: list[str], matrix: np.ndarray) -> bytes:
    """Figure 4 analogue (PNG): Spearman ρ between the metrics (and human labels when given)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(names), 0.6 + 0.6 * len(names)))
    image = ax.imshow(np.nan_to_num(matrix), vmin=-1, vmax=1, cmap="coolwarm")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for a in range(len(names)):
        for b in range(len(names)):
            text = "–" if np.isnan(matrix[a, b]) else f"{matrix[a, b]:.2f}"
            ax.text(b, a, text, ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="Spearman ρ")
    fig.tight_layout()
    return _png(fig)


# -- the report -------------------------------------------------------------------------------------------

def write_report(store: Store, human_labels: Path | None = None) -> str:
    """(Re)write the tables (markdown + CSV), plots and report.md of a run; returns report.md's text."""
    if not store.exists(SUMMARY.name) or not store.exists(METRICS.name):
        raise ReportError(f"{store.where('')} has no metrics yet (summary.json, metrics.jsonl); "
                          "run `a2c run` to the end first")
    summary = store.read_json(SUMMARY.name)
    rows = store.read_rows(METRICS)
    with_refs, questions = referenced(summary), summary["counts"]["questions"]
    main, accurate = before_after_table(summary), accurate_answers_table(summary)
    if not with_refs:  # "accurate" means nothing without references: header only, no rows of n/a
        accurate = Table(accurate.header, [])
    counts, signal_rows = counts_table(summary), signal_table(summary)
    store.write_text(TABLE_BEFORE_AFTER.name, main.csv())
    store.write_text(TABLE_ACCURATE.name, accurate.csv())
    store.write_text(COUNTS.name, counts.csv())
    store.write_text(TABLE_SIGNAL.name, signal_rows.csv())

    columns = metric_columns(rows, summary)
    human_section = ""
    if human_labels is not None:
        labels = read_human_labels(human_labels)
        rhos, kappa = human_agreement(rows, columns, labels)
        human_section = ("\n## Agreement with human labels\n\n"
                         + Table(["metric", "Spearman ρ with mean human label"],
                                 [[k, fmt(v)] for k, v in rhos.items()]).markdown()
                         + f"\n\nFleiss' κ among annotators: {fmt(kappa)}\n")
        columns["Human"] = [float(np.mean([float(v) for v in lab])) if lab else None
                            for lab in (labels.get((r.id, r.source, r.phase)) for r in rows)]
    names, matrix = correlations(columns)
    store.write_bytes(PLOT_ACCURACY.name, plot_accuracy_vs_consistency(rows, summary))
    store.write_bytes(PLOT_CORRELATIONS.name, plot_correlations(names, matrix))
    store.write_bytes(PLOT_REJECTION.name, plot_rejection(rows, summary))

    if not with_refs:
        scope = "No question has reference answers, so there is no accuracy: consistency only.\n\n"
    elif with_refs < questions:
        scope = (f"Accuracy is scored on the {with_refs} of {questions} questions that have reference "
                 "answers (the others have none: consistency and Ask-to-Choose only).\n\n")
    else:
        scope = ""
    signal_section = (
        "\n## Consistency as a signal of correctness\n\n"
        + ("How well each consistency metric of a question's answers predicts whether an answer is accurate: "
           "AUROC, and the prediction-rejection ratio (PRR; 1 = ranks like an oracle, 0 = chance), with "
           f"seeded bootstrap 95% intervals over questions.\n\n{signal_rows.markdown()}\n"
           f"\n![accuracy vs rejection]({PLOT_REJECTION.name})\n"
           if with_refs else "Undefined: no question has reference answers.\n"))
    wall = store.read_json(TIMINGS.name)["seconds"] if store.exists(TIMINGS.name) else None
    text = (f"# a2c report: {summary['name']}\n\n"
            f"Model `{summary['model']}`, {questions} questions"
            + (f", last invocation {wall:.0f} s" if wall is not None else "") + ".\n\n"
            "## Before → after Ask-to-Choose\n\n" + scope
            + ("Accuracy columns are the share of answers closer to a correct than to an incorrect "
               "reference; " if with_refs else "")
            + "consistency columns are mean Cons_sem per judge (Contra: lower = more consistent).\n\n"
            + main.markdown()
            + ("\n\n## Consistency over all answers vs accurate answers\n\n" + accurate.markdown()
               if with_refs else "")
            + "\n" + signal_section
            + "\n## Counts\n\n" + counts.markdown() + "\n" + human_section
            + f"\n![accuracy vs consistency]({PLOT_ACCURACY.name})\n"
            + f"\n![metric correlations]({PLOT_CORRELATIONS.name})\n")
    store.write_text(REPORT.name, text)
    return text
