"""`a2c calibrate RUN_DIR`: answer or decline, fitted on a finished, labelled run (`a2c.qa.calibration`).

Writes `calibration.json` (default: into the run folder) for `AskToChoose(calibration=...)`,
`a2c probe --calibration` and `a2c serve --calibration`, and prints the out-of-sample figures.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from a2c.cli.argtypes import RegistryNames, finite_number, whole_number
from a2c.common.wording import plural


def _share(text: str) -> float:
    """A number strictly between 0 and 1 (a risk, a miscoverage)."""
    value = finite_number(0.0, inclusive=False)(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="fit answer-or-decline on a labelled run: calibrated confidence and a threshold",
        description="Fit P(the A2C answer is accurate | a consistency signal) on a finished run with "
        "reference answers: the unit is a question and a source (paraphrases or temperatures), the signal "
        "a score of that source's candidates before A2C (any set-level score of the report's signal "
        "table), the label whether the answer A2C picks from that source is accurate. The signal with the "
        "lowest cross-validated AURC is used unless --signal names one; the printed figures are "
        "out-of-sample (cross-fitted). With --max-risk R --delta D the decline threshold is chosen by "
        "Learn-then-Test on half of the questions (the signal is chosen and the map fitted on the other "
        "half): with probability >= 1 - D, the share of wrong answers among those answered is <= R for "
        "new questions drawn like the run's, answered by the same model, settings and judges.",
        epilog="Use the file with `a2c serve --calibration FILE`, `a2c probe --calibration FILE` or "
        "AskToChoose(calibration=FILE).")
    parser.add_argument("run_dir", type=Path, help="a finished run folder of `a2c run` (with references)")
    parser.add_argument("-o", "--output", type=Path,
                        help="where to write the calibration (default: RUN_DIR/calibration.json)")
    parser.add_argument("--source", choices=["paraphrase", "temperature"], default="paraphrase",
                        help="whose candidates give the signal and whose A2C answer is labelled (default "
                        "paraphrase)")
    parser.add_argument("--similarity", help="accuracy under this similarity of the run (default rouge1, "
                        "R1-A, when the run scored it)")
    parser.add_argument("--method", choices=RegistryNames("a2c.metrics.calibration_maps:CALIBRATION_METHODS"),
                        default="isotonic", metavar="METHOD",
                        help="calibration map: %(choices)s (default isotonic; platt: a logistic curve)")
    parser.add_argument("--signal", help="the signal to calibrate, as the signal table names it (e.g. "
                        "'Emb Cons_sem'; a registered set metric the run computed is one too); "
                        "default: the lowest cross-validated AURC")
    parser.add_argument("--max-risk", type=_share, metavar="R",
                        help="risk-controlled threshold: at most this share of answered questions wrong")
    parser.add_argument("--delta", type=_share, default=0.1, metavar="D",
                        help="with --max-risk: the bound may fail with probability at most D (default 0.1)")
    parser.add_argument("--min-confidence", type=finite_number(0.0, inclusive=True), default=0.5,
                        metavar="C", help="without --max-risk: decline below this confidence (default 0.5)")
    parser.add_argument("--folds", type=whole_number(2), default=5, help="cross-fitting folds (default 5)")
    parser.add_argument("--bins", type=whole_number(1), default=10, help="equal-mass ECE bins (default 10)")
    parser.add_argument("--bootstrap", type=whole_number(2), default=1000,
                        help="bootstrap resamples for the intervals (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="folds, halves and resamples (default 0)")
    parser.add_argument("--label", metavar="METHOD",
                        help="whose picks' accuracy is the label: a2c (A2C's answer) or main (a samples "
                        "run's main answer); default a2c, or main for a run without A2C's picks")
    parser.set_defaults(handler=_calibrate)


def _interval(item: object) -> str:
    from a2c.qa.calibration import Difference, Interval

    assert isinstance(item, Interval | Difference)
    bracket = f" [{item.low:.3f}, {item.high:.3f}]" if item.low is not None and item.high is not None else ""
    return f"{item.value:.3f}{bracket}"


def _calibrate(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_file
    from a2c.common.errors import A2CError
    from a2c.qa.calibration import calibration_file, default_label, write_calibration
    from a2c.qa.config import ExperimentConfig
    from a2c.run.open_run import stored_run
    from a2c.run.pipeline import CALIBRATION_FILE

    output = args.output or args.run_dir / CALIBRATION_FILE
    check_output_file(output, "--output")
    run = stored_run(args.run_dir)  # a folder holding a run, or one line saying what it holds
    config = run.config
    if not isinstance(config, ExperimentConfig):
        raise A2CError(f"{args.run_dir} is a {config.task} run: calibration is for QA runs (answers)")
    if args.min_confidence > 1:
        raise A2CError(f"--min-confidence {args.min_confidence:g}: a confidence is at most 1")
    made = calibration_file(run.folder, config, source=args.source, similarity=args.similarity,
                            method=args.method, signal=args.signal, max_risk=args.max_risk, delta=args.delta,
                            min_confidence=args.min_confidence, folds=args.folds, bins=args.bins,
                            replicates=args.bootstrap, seed=args.seed,
                            label=args.label or default_label(config))
    write_calibration(made, output)
    oos = made.out_of_sample
    print(f"signal: {made.signal} ({made.source}, {made.method}; accuracy of the {made.label} picks under "
          f"{made.similarity}), "
          f"fitted on {plural(made.units, 'question')} ({made.dropped} left out)")
    print(f"out of sample ({oos.folds}-fold cross-fitting, 95% bootstrap intervals over questions):")
    print(f"  always answering: risk {1 - oos.accuracy:.3f}")
    print(f"  AURC {_interval(oos.aurc)} (raw signal {_interval(oos.aurc_raw)}), excess AURC "
          f"{_interval(oos.excess_aurc)}")
    raw = f", raw signal {_interval(oos.ece_raw)}" if oos.ece_raw is not None else ""
    print(f"  ECE ({oos.bins} equal-mass bins) {_interval(oos.ece)}{raw}")
    print("  coverage at risk " + ", ".join(f"{r}: {_interval(v)}" for r, v in oos.coverage_at_risk.items()))
    control = made.risk_control
    if control is None:
        print(f"decline below confidence {made.decline_below:g}")
    elif control.threshold is None:
        print(f"risk control (max risk {control.max_risk:g}, delta {control.delta:g}): no threshold passed "
              f"on {control.control_questions} held-out questions: every answer is declined")
    else:
        print(f"risk control (max risk {control.max_risk:g}, delta {control.delta:g}): decline below "
              f"{control.threshold:.3f}; on the {control.control_questions} held-out questions it answered "
              f"{control.answered} with {control.errors} wrong")
    print(f"written: {output}")
    return 0
