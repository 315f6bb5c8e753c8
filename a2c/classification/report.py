"""report.md of a classification run, from its summary.json alone: one table per suite, laid out as in
its paper (rates in %, as the papers print them), then the counts of unparsed replies and failed rewrites."""

from __future__ import annotations

from a2c.classification.suites import (
    BecelSuite,
    CalmSuite,
    ConditionalScore,
    ContrastSuite,
    PairedScore,
    ParaphrasticSuite,
    Summary,
)
from a2c.common.wording import plural
from a2c.display.reporting import Table, fmt


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [*Table(header, rows).markdown().splitlines(), ""]


def _contrast(s: ContrastSuite | None, model: str) -> list[str]:
    out = ["## Relative consistency on contrast bundles (paper 000, Table 2 layout)", ""]
    if s is None:
        return [*out, "No item carries a `bundle` of two or more items.", ""]
    rows = [[model, "all (mixed sizes)" if r.bundle_size is None else str(r.bundle_size),
             str(r.bundles), _pct(r.accuracy), _pct(r.consistency), _pct(r.relative_consistency)]
            for r in s.rows]
    out += _table(["model", "bundle size b", "bundles", "accuracy", "consistency", "RC"], rows)
    mixed = any(r.bundle_size is None for r in s.rows)
    out.append(f"Unparsed replies (scored as not correct): {s.unparsed}; bundles of one item left out: "
               f"{s.single_bundles}." + (" RC needs bundles of one size, so it is n/a over mixed sizes."
                                         if mixed else ""))
    return [*out, ""]


def _paraphrastic(s: ParaphrasticSuite | None, model: str) -> list[str]:
    out = ["## Paraphrastic consistency (paper 003, Table 4 layout)", ""]
    if s is None:
        return [*out, "No bucket holds two phrasings (paraphrases failed or suite disabled).", ""]
    out += _table(["model", "A_O", "A_bucket", "P_C", "min P_C (1−2A(1−A))", "VAP", "PVAP", "buckets",
                   "phrasings"],
                  [[model, _pct(s.accuracy_original), _pct(s.accuracy_buckets), _pct(s.consistency),
                    _pct(s.min_consistency), fmt(s.vap), fmt(s.pvap), str(s.buckets),
                    str(s.phrasings)]])
    out.append(f"A bucket is an item as given plus its LLM paraphrases (items sharing a `group` form one "
               f"bucket). Unparsed phrasings (scored as not correct): {s.unparsed}; buckets with one "
               f"phrasing left out: {s.small_buckets}.")
    return [*out, ""]


def _paired(score: PairedScore) -> str:
    return f"{_pct(score.value)} (n={score.pairs})"


def _conditional(score: ConditionalScore) -> str:
    return f"{_pct(score.value)} (C: {score.conditioned} of {score.derived})"


def _becel(s: BecelSuite | None, model: str) -> list[str]:
    out = ["## BECEL inconsistencies τ (paper 001, Table 2 layout; lower is better)", ""]
    if s is None:
        return [*out, "Suite disabled.", ""]
    out += _table(["model", "τsem", "τneg", "τsym", "τtrn", "τadd"],
                  [[model, _paired(s.semantic), _paired(s.negational), _paired(s.symmetric),
                    _conditional(s.transitive), _conditional(s.additive)]])
    left = ", ".join(f"{k} {getattr(s, k).unparsed}" for k in ("semantic", "negational", "symmetric"))
    origins = ", ".join(f"{k}: {v}" for k, v in s.negation_origins.items()) or "none"
    out.append(f"τsem pairs each item with each of its paraphrases, τneg with its negation (origin — "
               f"{origins}), τsym with its premise/hypothesis swap (symmetric labels only); τtrn/τadd count "
               f"only derived items whose two sources were predicted right (C). Pairs left out for an "
               f"unparsed reply: {left}.")
    return [*out, ""]


def _calm(s: CalmSuite | None, model: str) -> list[str]:
    out = ["## CALM consistency (paper 004, Table 1 layout)", ""]
    if s is None:
        return [*out, "Suite disabled, or the inputs are single texts (REVERSE and SIGNAL need pairs).", ""]
    out += _table(["model", "Acc", "C_R", f"C_S (k={s.k}, θ={s.threshold:g})"],
                  [[model, _pct(s.accuracy), _paired(s.reverse), _paired(s.signal)]])
    out.append(f"Items left out for an unparsed original or reversed reply: {s.reverse.unparsed} "
               f"(REVERSE), {s.signal.unparsed} (SIGNAL); unparsed SIGNAL variants left out of "
               f"pass rates: {s.signal_unparsed_variants}.")
    return [*out, ""]


CONSTANT_SHARE = 0.95  # a labeller that gives one label this often is treated as constant


def constant_labeller_warning(label_counts: dict[str, int]) -> str | None:
    """A warning when one label is (nearly) all the model gives: a constant labeller is trivially
    consistent, so the suites' consistency says nothing about the model's understanding."""
    given = {label: n for label, n in label_counts.items() if label != "unparsed"}
    total = sum(given.values())
    if not total:
        return None
    label, n = max(given.items(), key=lambda item: item[1])
    if n / total < CONSTANT_SHARE:
        return None
    return (f"**Warning: the model labels {n / total:.0%} of the inputs `{label}`.** A (nearly) "
            "constant labeller is consistent by construction: C_R, C_S and P_C come out near 100 and "
            "τsem, τsym near 0 whatever the inputs mean; τneg is near 100 when negation should flip "
            f"`{label}` (near 0 when it should keep it); accuracy and RC reflect only how often the gold "
            f"label is `{label}`. Read these numbers as a property of the prompt and model size, not as "
            "consistency (a larger model, or `labeling.calibration: content_free`, may help).")


def render_report(summary: Summary) -> str:
    model = summary.model
    lines = [f"# {summary.name}: consistency suites", "",
             f"{plural(summary.items, 'item')} (+{summary.derived_items} derived), model `{model}`.", ""]
    warning = constant_labeller_warning(summary.label_counts)
    if warning is not None:
        lines += [warning, ""]
    lines += _contrast(summary.contrast, model)
    lines += _paraphrastic(summary.paraphrastic, model)
    lines += _becel(summary.becel, model)
    lines += _calm(summary.calm, model)
    lines += ["## Inputs, unparsed replies, failed rewrites", ""]
    lines += _table(["input kind", "inputs", "unparsed", "accuracy"],
                    [[kind, str(c.inputs), str(c.unparsed), _pct(c.accuracy)]
                     for kind, c in summary.kinds.items()])
    methods = ", ".join(f"{k}: {v}" for k, v in summary.read_methods.items())
    lines.append(f"Labels read from — {methods}. An unparsed reply named no label; it is counted, never "
                 "guessed.")
    given = ", ".join(f"{label}: {n}" for label, n in summary.label_counts.items())
    lines += ["", f"Labels given — {given}."]
    cf = summary.content_free
    lines.append("Calibration: none." if cf is None else
                 "Calibration: contextual (Zhao et al. 2021), label probabilities divided by those of "
                 "the content-free input(s): " + ", ".join(f"{k} {v:.3f}" for k, v in cf.items()) + ".")
    lines.append("")
    for kind, counts in summary.rewrites.items():
        problems = ", ".join(f"{k}: {v}" for k, v in counts.items() if k not in ("written", "failed"))
        lines.append(f"- LLM-written {kind}s: {counts['written']}, failed their checks: {counts['failed']}"
                     + (f" ({problems})" if problems else ""))
    return "\n".join(lines).rstrip() + "\n"
