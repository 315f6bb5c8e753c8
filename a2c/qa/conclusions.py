"""The report's "What this run says": a few sentences written from the summary's numbers, so a reader learns
what the run found before reading its tables. Only what the intervals support is stated as a finding; the
rest is said to be indistinguishable from 0."""

from __future__ import annotations

from a2c.qa.correctness.accuracy import accuracy_label
from a2c.qa.dont_know import OF_CHOICES
from a2c.qa.rows import SOURCE_LABELS, SOURCES
from a2c.qa.summary import Difference, QASummary, SelectionSummary, judge_label

VERDICTS = {"up": "better than", "down": "worse than", None: "not distinguishable from"}


def _change(name: str, change: Difference) -> str:
    return f"{name} {change.mean:+.3f} [{change.low:+.3f}, {change.high:+.3f}]"


def _changes(summary: QASummary) -> list[str]:
    """Per source, the before → after changes whose 95% interval excludes 0."""
    found = []
    for source in SOURCES:
        change = summary.change(source)
        if change is None:
            continue
        cells = [(accuracy_label(s), d) for s, d in change.accuracy.items() if summary.referenced]
        cells += [(f"{judge_label(j)} Cons_sem", d) for j, d in change.consistency.items()]
        cells += [(f"entropy ({judge_label(summary.entropy_judge)})", change.entropy)]
        clear = [_change(name, d) for name, d in cells if d.direction is not None and d.mean is not None]
        pairs = max((d.pairs for _, d in cells), default=0)
        found.append(f"**{SOURCE_LABELS[source].prose}**: " + (
            f"after Ask-to-Choose, {'; '.join(clear)} (after − before, 95% interval over {pairs} questions)."
            if clear else f"no before → after change is distinguishable from 0 on {pairs} questions."))
    return found


def _dont_know(summary: QASummary) -> list[str]:
    """The don't-know share of choices (the after-A2C answers), and when it may carry an accuracy rise."""
    found = []
    for source in SOURCES:
        after = summary.group(source, "after")
        if after is None or after.idk_share is None:
            continue
        change = summary.change(source)
        rose = [accuracy_label(s) for s, d in (change.accuracy.items() if change else ())
                if summary.referenced and d.direction == "up"]
        line = (f"On {SOURCE_LABELS[source].prose}, {after.idk_share:.0%} of A2C's choices were the "
                f"don't-know option (the {OF_CHOICES}: among the rank replies that named an option, those "
                "naming that one).")
        if rose and after.idk_share > 0:
            line += (f" The {', '.join(rose)} rise comes with these declines: an answer saying it does not "
                     "know is scored against the references like any other (TruthfulQA counts \"I have no "
                     "comment.\" as true), so part of the rise can be the model declining rather than "
                     "answering better.")
        found.append(line)
    return found


def _best_pickers(summary: QASummary) -> list[str]:
    """Per source, the selection method whose picks score best on the first similarity, against random."""
    if not summary.referenced or not summary.similarities:
        return []
    similarity = summary.similarities[0]
    found = []
    for source in SOURCES:
        rows = [r for r in summary.selection if r.source == source and r.method != "random"
                and r.accuracy.get(similarity) and r.accuracy[similarity].mean is not None]
        if not rows:
            continue
        best: SelectionSummary = max(rows, key=lambda r: r.accuracy[similarity].mean or 0.0)
        versus = best.vs_random.get(similarity)
        label = accuracy_label(similarity)
        if versus is None or versus.mean is None:
            found.append(f"The best picker on {SOURCE_LABELS[source].prose} is {best.label} ({label} "
                         f"{best.accuracy[similarity].mean:.3f}).")
            continue
        verdict = VERDICTS[versus.direction]
        found.append(f"The best picker on {SOURCE_LABELS[source].prose} is {best.label} ({label} "
                     f"{best.accuracy[similarity].mean:.3f}), {verdict} a random candidate: "
                     f"{_change('difference', versus)}.")
    return found


def conclusions(summary: QASummary) -> str:
    """The "What this run says" section of report.md."""
    lines = [*_changes(summary), *_best_pickers(summary), *_dont_know(summary)]
    return "## What this run says\n\n" + "\n".join(f"- {line}" for line in lines) + "\n\n"
