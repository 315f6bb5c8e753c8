"""Answer or decline, measured out of sample on a finished labelled run: two halves of its questions,
each calibrated on one and judged on the other (then swapped).

Run: `.venv/bin/python benchmarks/bench_decline.py RUN_DIR` from the repository root (`--help`).

Per source and direction (fit half → held-out half), exactly what `a2c calibrate --max-risk R --delta D`
does on the fit half (signal by cross-validated AURC, isotonic map, Learn-then-Test threshold on a half of
it), then on the held-out half: AURC of the calibrated signal and of raw Embedding Cons_sem, ECE of raw
Cons_sem read as a probability and after calibration, the largest coverage with ≤ R risk, and the
coverage and realised risk of four ways to decide: always answering, a raw Cons_sem threshold (the
loosest whose risk on the fit half is ≤ R, no guarantee), the risk-controlled threshold, and declining at
random at the risk-controlled coverage (its expected risk is the overall risk). Prints a markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from a2c.metrics.calibration_maps import fit_map
from a2c.metrics.selective import aurc, coverage_at_risk, expected_calibration_error
from a2c.qa.calibration import (
    CalibrationError,
    RunColumns,
    Units,
    choose_signal,
    default_similarity,
    fold_of,
    risk_controlled_map,
    signal_aurcs,
    split_halves,
    units_of,
)
from a2c.qa.config import ExperimentConfig
from a2c.qa.rows import SOURCES
from a2c.qa.summary import judge_label
from a2c.run.config_file import load_config
from a2c.run.pipeline import RunFolder

METHOD = "isotonic"


def raw_threshold(scores: np.ndarray, correct: np.ndarray, max_risk: float) -> float:
    """The loosest raw-score threshold whose selective risk on these units is ≤ max_risk (+inf: none)."""
    order = np.argsort(-scores, kind="stable")
    errors = np.cumsum(1 - correct[order])
    answered = np.arange(1, len(order) + 1)
    ok = [k for k in range(len(order)) if errors[k] / answered[k] <= max_risk
          and (k == len(order) - 1 or scores[order[k]] != scores[order[k + 1]])]  # whole ties only
    return float(scores[order[ok[-1]]]) if ok else np.inf


def answered_risk(answer: np.ndarray, correct: np.ndarray) -> tuple[float, float | None]:
    """(coverage, risk of the answered; None when nothing is answered)."""
    n = int(answer.sum())
    return n / len(answer), (float(1 - correct[answer].mean()) if n else None)


def direction(fit: Units, held: Units, cons: str, max_risk: float, delta: float, seed: int
              ) -> dict[str, Any]:
    # as `a2c calibrate --max-risk` does: the signal chosen on the fitting half of the fit questions only
    chosen = choose_signal(signal_aurcs(fit.subset(~split_halves(fit.ids, seed)), METHOD, seed=seed))
    fitted, control = risk_controlled_map(fit, chosen, METHOD, max_risk=max_risk, delta=delta, seed=seed)
    y = held.correct
    score = held.signals[chosen]
    defined = np.isfinite(score)
    conf = np.where(defined, fitted.predict(np.nan_to_num(score)), 0.0)
    full = fit_map(METHOD, fit.defined(chosen).signals[chosen], fit.defined(chosen).correct)
    conf_full = np.where(defined, full.predict(np.nan_to_num(score)), 0.0)
    raw = np.nan_to_num(held.signals[cons], nan=-1.0)
    cons_fit = fit.defined(cons)
    cons_map = fit_map(METHOD, cons_fit.signals[cons], cons_fit.correct)
    threshold = raw_threshold(cons_fit.signals[cons], cons_fit.correct, max_risk)
    controlled = defined & (conf >= control.threshold) if control.threshold is not None \
        else np.zeros_like(defined)
    coverage, risk = answered_risk(controlled, y)
    return {
        "signal": chosen, "units": len(y), "threshold": control.threshold,
        "aurc": aurc(conf_full, y), "aurc_cons": aurc(raw, y), "aurc_oracle": aurc(y.astype(float), y),
        "ece_before": expected_calibration_error(np.clip(raw, 0, 1), y),
        "ece_after_cons": expected_calibration_error(cons_map.predict(raw), y),
        "ece_after": expected_calibration_error(conf_full, y),
        "coverage_at_risk": coverage_at_risk(conf_full, y, max_risk),
        "always": answered_risk(np.ones(len(y), dtype=bool), y),
        "raw_threshold": answered_risk(raw >= threshold, y),
        "controlled": (coverage, risk),
        "random": (coverage, float(1 - y.mean()) if coverage else None),
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--max-risk", type=float, default=0.2)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = load_config(args.run_dir / "config.yaml", paths_from_file=False)
    assert isinstance(config, ExperimentConfig)
    sims = [s.name for s in config.accuracy.similarities]
    judges = [j.name for j in config.judges]
    cons = f"{judge_label('embedding' if 'embedding' in judges else judges[0])} Cons_sem"
    rows: list[tuple[str, str, dict[str, Any]]] = []
    skipped: list[str] = []
    run = RunColumns.read(RunFolder(args.run_dir))  # read once for both sources
    for source in SOURCES:
        units = units_of(run, source, default_similarity(sims), judges=judges,
                         entropy_judge=config.entropy_judge_name)
        half = fold_of(units.ids, 2, args.seed) == 1
        for name, fit, held in (("A→B", units.subset(~half), units.subset(half)),
                                ("B→A", units.subset(half), units.subset(~half))):
            try:
                rows.append((source, name, direction(fit, held, cons, args.max_risk, args.delta, args.seed)))
            except CalibrationError as exc:
                skipped.append(f"{source} {name}: {exc}")
    print(f"run {args.run_dir.name}: {config.generator.model}, accuracy under {default_similarity(sims)}, "
          f"max risk {args.max_risk}, delta {args.delta}; raw signal {cons}\n")
    print("| source | fit → held out | held-out questions | signal chosen | AURC calibrated "
          "| AURC raw Cons_sem | AURC oracle | ECE raw Cons_sem | ECE Cons_sem calibrated "
          "| ECE signal calibrated "
          f"| coverage at {args.max_risk:.0%} risk | always: risk | raw Cons_sem threshold: coverage / risk "
          "| risk-controlled: threshold / coverage / risk | random at that coverage: risk |")
    print("|" + "---|" * 15)
    for side, name, r in rows:
        always, raw, ctl, rnd = r["always"], r["raw_threshold"], r["controlled"], r["random"]
        thr = "declines all" if r["threshold"] is None else f"{r['threshold']:.3f}"
        print(f"| {side} | {name} | {r['units']} | {r['signal']} | {r['aurc']:.3f} | {r['aurc_cons']:.3f} "
              f"| {r['aurc_oracle']:.3f} | {r['ece_before']:.3f} | {r['ece_after_cons']:.3f} "
              f"| {r['ece_after']:.3f} | {r['coverage_at_risk']:.3f} | {_pct(always[1])} "
              f"| {raw[0]:.3f} / {_pct(raw[1])} | {thr} / {ctl[0]:.3f} / {_pct(ctl[1])} | {_pct(rnd[1])} |")
    for line in skipped:
        print(f"\nskipped: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
