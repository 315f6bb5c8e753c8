"""The report's answer-or-decline section: per source and signal, how well deciding by it would do.

Units and labels are `a2c calibrate`'s (`a2c.qa.calibration.units_of`: a question's A2C answer from one
source, accurate or not; the signal a score of the source's candidates before A2C), and so is the map
(isotonic, cross-fitted: each question's confidence from a map fitted on the other folds), so the table
says what calibrating on this run would give, out of sample. Read from the run's stored rows only.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from a2c.display.reporting import Table, fmt, png_bytes, pyplot, thinned
from a2c.metrics.selective import (
    RISKS,
    Estimate,
    aurc,
    coverage_at_risk,
    estimate,
    expected_calibration_error,
)
from a2c.metrics.selective import risk_coverage as curve
from a2c.qa.calibration import (
    A2C_LABEL,
    CalibrationError,
    RunColumns,
    Units,
    cross_fitted,
    default_similarity,
    label_of,
    units_of,
)
from a2c.qa.columns import MetricColumns, UncertaintyColumns
from a2c.qa.rows import SOURCES, Source
from a2c.qa.summary import QASummary
from a2c.run.runfiles import RunFile
from a2c.run.store import Store

TABLE_DECLINE = RunFile("table_answer_or_decline.csv")
PLOT_RISK_COVERAGE = RunFile("risk_coverage.png")
METHOD = "isotonic"
BOOTSTRAP = 1000
PLOTTED = 5  # signals drawn per source: the lowest AURCs (every one is in the table)


@dataclass(frozen=True)
class SignalDecline:
    """One signal of one source, cross-fitted: AURC with its interval, ECE, coverage at each risk."""

    signal: str
    source: Source
    units: int
    accuracy: float
    aurc: Estimate
    ece: float
    coverage: dict[float, float]
    calibrated: np.ndarray  # per unit, out of sample (for the plot)
    correct: np.ndarray


def run_label(run: RunColumns | str) -> str:
    """Whose picks the section labels: A2C's, or a samples run's main answers where A2C picked none (as
    `a2c calibrate` defaults)."""
    return A2C_LABEL if isinstance(run, str) else label_of(run.picks.methods)


def source_units(run: RunColumns | str, summary: QASummary, label: str = A2C_LABEL
                 ) -> dict[Source, Units | str]:
    """Each source's labelled units (the picks of `label`), or why there are none (no references, no such
    picks); `run` is the run's columns, or why they cannot be read."""
    if isinstance(run, str):
        return dict.fromkeys(SOURCES, run)
    out: dict[Source, Units | str] = {}
    for source in SOURCES:
        try:
            out[source] = units_of(run, source, default_similarity(summary.similarities),
                                   judges=summary.judges, entropy_judge=summary.entropy_judge, label=label)
        except CalibrationError as exc:
            out[source] = str(exc)
    return out


def signal_declines(units: Units, source: Source, *, seed: int = 0) -> list[SignalDecline]:
    """Every signal defined on at least ten questions and not constant, with both labels present."""
    out = []
    for name in units.signals:
        part = units.defined(name)
        values = part.signals[name]
        if len(values) < 10 or len(np.unique(values)) < 2 or len(np.unique(part.correct)) < 2:
            continue
        calibrated = cross_fitted(METHOD, values, part.correct, part.ids, seed=seed)
        out.append(SignalDecline(
            name, source, len(values), float(part.correct.mean()),
            estimate(aurc, calibrated, part.correct, replicates=BOOTSTRAP, seed=seed),
            expected_calibration_error(calibrated, part.correct),
            {r: coverage_at_risk(calibrated, part.correct, r) for r in RISKS}, calibrated, part.correct))
    return sorted(out, key=lambda d: (d.aurc.value, d.signal))


def decline_table(declines: list[SignalDecline]) -> Table:
    rows = []
    for d in declines:
        ci = f" [{d.aurc.low:.3f}, {d.aurc.high:.3f}]" if d.aurc.low is not None and d.aurc.high is not None \
            else ""
        rows.append([d.signal, d.source, str(d.units), fmt(1 - d.accuracy), f"{d.aurc.value:.3f}{ci}",
                     fmt(d.ece), *[fmt(d.coverage[r]) for r in RISKS]])
    return Table(["signal", "source", "questions", "risk answering all", "AURC [95% CI]",
                  "ECE (calibrated)", *[f"coverage at {r:.0%} risk" for r in RISKS]], rows)


def plot_risk_coverage(declines: list[SignalDecline], why: dict[Source, str], whose: str = "A2C answers"
                       ) -> bytes:
    """Selective risk against coverage per source: the best signals (calibrated, out of sample), the oracle
    ordering and answering at random (the overall risk at every coverage)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(SOURCES), figsize=(6.5 * len(SOURCES), 5), squeeze=False)
    for ax, source in zip(axes[0], SOURCES, strict=True):
        ax.set_title(f"{source}: risk of the {whose} kept", fontsize=9)
        ax.set_xlabel("coverage (share of questions answered, most confident first)")
        ax.set_ylabel("selective risk (share of answered that are wrong)")
        mine = [d for d in declines if d.source == source][:PLOTTED]
        if not mine:
            ax.text(0.5, 0.5, textwrap.fill(f"undefined: {why.get(source, 'no signal varies')}", 60),
                    ha="center", va="center", transform=ax.transAxes, fontsize=7)
            continue
        for d in mine:
            ax.plot(*thinned(*curve(d.calibrated, d.correct)), label=f"{d.signal} (AURC {d.aurc.value:.3f})",
                    linewidth=1.2)
        best = mine[0]
        ax.plot(*thinned(*curve(best.correct.astype(np.float64), best.correct)), linestyle="--",
                color="black", label="oracle")
        ax.axhline(1 - best.accuracy, linestyle=":", color="grey", label="random / always answering")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return png_bytes(fig)


def decline_section(store: Store, summary: QASummary, metrics: MetricColumns,
                    uncertainty: UncertaintyColumns | None) -> str:
    """The report's section (markdown), writing its CSV table and plot into the run folder; `metrics` and
    `uncertainty` are the run's columns, as the report has read them."""
    try:
        run: RunColumns | str = RunColumns.read(store, metrics, uncertainty)
    except CalibrationError as exc:
        run = str(exc)
    label = run_label(run)
    whose = "A2C answer" if label == A2C_LABEL else "main answer"
    units = source_units(run, summary, label)
    why = {source: u for source, u in units.items() if isinstance(u, str)}
    declines = [d for source, u in units.items() if not isinstance(u, str)
                for d in signal_declines(u, source, seed=summary.seed)]
    for source in SOURCES:
        if source not in why and not any(d.source == source for d in declines):
            why[source] = ("no signal is defined on ten questions or more, varies, and meets both accurate "
                           f"and inaccurate {whose}s")
    table = decline_table(declines)
    store.write_text(TABLE_DECLINE.name, table.csv())
    store.write_bytes(PLOT_RISK_COVERAGE.name, plot_risk_coverage(declines, why, f"{whose}s"))
    intro = (f"Whether to give the {whose} of a source or decline, decided by a consistency signal of that "
             f"source's answers before A2C (`a2c calibrate`). Each signal is calibrated to P(the {whose} "
             f"is accurate) by isotonic regression, cross-fitted (5 folds: every question scored by a map "
             f"fitted without it); accuracy under {default_similarity(summary.similarities)}. AURC: mean "
             "risk over all coverages (lower is better; 95% bootstrap interval over questions); ECE: 10 "
             "equal-mass bins; coverage at r% risk: the largest share of questions that can be answered "
             "with at most r% of them wrong. Best signals first.\n\n")
    undefined = "".join(f"- {source}: undefined ({reason})\n" for source, reason in why.items())
    return ("\n## Answer or decline\n\n" + intro + (table.markdown() + "\n" if declines else "")
            + ("\n" + undefined if undefined else "") + f"\n![risk vs coverage]({PLOT_RISK_COVERAGE.name})\n")
