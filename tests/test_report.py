"""Report tables and plots from a hand-written run folder: values, direction marks, counts, human labels."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.metrics import fleiss_kappa, paired_difference_ci, rating_counts, spearman_rho
from a2c.qa.report import ReportError, Table, _arrow, before_after_table, write_report
from a2c.qa.summary import Difference, QASummary, summarize_metrics
from a2c.run.config_file import parse_config
from a2c.run.runfiles import RunFileError
from a2c.run.store import RunFolder

CONFIG = parse_config("name: synthetic\njudges: [embedding, rouge1]\naccuracy:\n  similarities: [rouge1]\n")


def _row(qid: str, source: str, phase: str, n: int, emb: float | None, acc: float | None) -> dict:
    return {"id": qid, "source": source, "phase": phase, "n": n, "n_accurate": 0, "cons_lex": emb,
            "judges": {j: {"cons_sem": emb, "entropy": None if emb is None else 1 - emb, "clusters": 1,
                           "cons_sem_accurate": None} for j in ("embedding", "rouge1")},
            "accuracy": {"rouge1": None if acc is None else {"max_true": acc, "diff": acc - 0.5, "acc": acc}}}


def _write_jsonl(folder: RunFolder, name: str, rows: list[dict]) -> None:
    """Rows as a hand (or an older a2c) would write them: plain JSON lines."""
    folder.write_text(name, "".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def run_dir(tmp_path):
    folder = RunFolder(tmp_path / "run")
    rng = random.Random(0)
    rows = []
    for q in range(6):
        for source in ("paraphrase", "temperature"):
            before = rng.random()
            rows.append(_row(f"q{q}", source, "before", 4, before, rng.random()))
            # one set with a single output after A2C: undefined consistency, skipped and counted
            after = None if (q, source) == (0, "paraphrase") else min(1.0, before + 0.2)
            rows.append(_row(f"q{q}", source, "after", 1 if after is None else 4, after, rng.random()))
    _write_jsonl(folder, "metrics.jsonl", rows)
    _write_jsonl(folder, "paraphrases.jsonl", [{"id": "q0", "question": "?", "paraphrases": [
        {"technique": "synonyms", "text": "?", "ok": False, "problem": "identical"},
        {"technique": "conjunctions", "text": "!", "ok": True, "problem": None}]}])
    shown = {"shown_question": "?", "temperature": 0.0}
    _write_jsonl(folder, "choices.jsonl", [
        {"id": "q0", "source": "paraphrase", "slot": 0, **shown, "options": ["a", "b"], "reply": "2",
         "option": 1, "method": "number", "text": "b"},
        {"id": "q0", "source": "paraphrase", "slot": 1, **shown, "options": ["a", "b"], "reply": "hm",
         "option": None, "method": "unparsed", "text": None},
        {"id": "q0", "source": "temperature", "slot": 0, **shown, "options": ["a", "b"], "reply": "3",
         "option": 2, "method": "number", "text": "I don't know the correct answer"}])
    folder.write_text("summary.json", summarize_metrics(folder, CONFIG).model_dump_json())
    return folder.path, rows


def test_summary_means_skip_undefined_sets_and_count_them(run_dir):
    path, rows = run_dir
    summary = json.loads((path / "summary.json").read_text())
    group = next(g for g in summary["groups"] if g["method"] == "paraphrase" and g["phase"] == "after")
    defined = [r["judges"]["embedding"]["cons_sem"] for r in rows
               if r["source"] == "paraphrase" and r["phase"] == "after" and r["n"] > 1]
    assert group["consistency"]["embedding"]["mean"] == pytest.approx(sum(defined) / len(defined))
    assert group["consistency"]["embedding"]["skipped"] == 1
    counts = summary["counts"]
    assert counts["paraphrases_failed"] == 1 and counts["paraphrases"] == 2
    choices = counts["choices"]
    assert choices["paraphrase"]["unparsed"] == 1 and choices["temperature"]["unparsed"] == 0
    assert choices["temperature"]["idk"] == 1 and choices["paraphrase"]["idk"] == 0
    assert counts["parse_methods"]["number"] == 2


def test_before_after_table_layout_and_marks(run_dir):
    path, rows = run_dir
    summary = QASummary.model_validate_json((path / "summary.json").read_text())
    table = before_after_table(summary)
    assert table.header[:3] == ["method", "model", "R1-A"]
    assert "Emb" in table.header and "R1-C" in table.header
    assert [r[0] for r in table.rows] == ["in-context paraphrases", "cross-temperature"]
    temperature = table.rows[1]
    emb = temperature[table.header.index("Emb")]
    before = [r["judges"]["embedding"]["cons_sem"] for r in rows if r["source"] == "temperature"
              and r["phase"] == "before"]
    after = [r["judges"]["embedding"]["cons_sem"] for r in rows if r["source"] == "temperature"
             and r["phase"] == "after"]
    # every question gained (after = min(1, before + 0.2)): the paired interval lies above 0
    change = paired_difference_ci(before, after, resamples=2000, seed=0)
    assert change.low > 0
    assert emb == (f"{sum(before) / len(before):.3f} → {sum(after) / len(after):.3f} ↑ "
                   f"[{change.low:+.3f}, {change.high:+.3f}]")
    # beside accuracy: the don't-know share of choices, A2C's parsed rank replies (temperature: 1 of 1;
    # paraphrase: 0 of 1 parsed, the unparsed reply does not count)
    idk = table.header.index("Don't-know share of choices (A2C)")
    assert idk == table.header.index("R1-A") + 1
    assert [r[idk] for r in table.rows] == ["0.000", "1.000"]


def test_write_report_files_and_human_labels(run_dir, tmp_path):
    path, rows = run_dir
    labels = tmp_path / "labels.csv"
    rng = random.Random(1)
    lines = ["id,source,phase,ann1,ann2,ann3"]
    ratings = []
    for r in rows:
        votes = [rng.choice("01") for _ in range(3)]
        ratings.append(votes)
        lines.append(f"{r['id']},{r['source']},{r['phase']},{','.join(votes)}")
    labels.write_text("\n".join(lines) + "\n")
    report = write_report(RunFolder(path), labels)
    assert (path / "report.md").read_text() == report
    for name in ("table_before_after.csv", "table_accurate_answers.csv", "counts.csv",
                 "accuracy_vs_consistency.png", "metric_correlations.png"):
        assert (path / name).stat().st_size > 0
    kappa = fleiss_kappa(rating_counts(ratings)[0])
    assert f"Fleiss' κ among annotators: {kappa:.3f}" in report
    human = [sum(map(int, v)) / 3 for v in ratings]
    pairs = [(r["judges"]["embedding"]["cons_sem"], h) for r, h in zip(rows, human, strict=True)
             if r["judges"]["embedding"]["cons_sem"] is not None]
    rho = spearman_rho([p[0] for p in pairs], [p[1] for p in pairs])
    assert f"| Emb | {rho:.3f} |" in report
    assert "Emb-A" not in report  # only the similarities that ran are shown
    csv_text = (path / "table_before_after.csv").read_text()
    assert csv_text.splitlines()[0].startswith("method,model,R1-A")


def test_report_errors(run_dir, tmp_path):
    path, _ = run_dir
    with pytest.raises(ReportError, match="no metrics yet"):
        write_report(RunFolder(tmp_path / "empty"))
    bad = tmp_path / "bad.csv"
    bad.write_text("id,source\nq0,paraphrase\n")
    with pytest.raises(ReportError, match="expected columns id, source, phase"):
        write_report(RunFolder(path), bad)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("id,source,phase,a,b\nq0,paraphrase,before,1\n")
    with pytest.raises(ReportError, match=r"ragged\.csv:2"):
        write_report(RunFolder(path), ragged)
    unmatched = tmp_path / "unmatched.csv"
    unmatched.write_text("id,source,phase,a,b\nzz,paraphrase,before,1,0\n")
    with pytest.raises(ReportError, match="matches no"):
        write_report(RunFolder(path), unmatched)
    words = tmp_path / "words.csv"
    words.write_text("id,source,phase,a,b\nq0,paraphrase,before,yes,no\n")
    with pytest.raises(ReportError, match="must be numbers"):
        write_report(RunFolder(path), words)
    with pytest.raises(ReportError, match="not found"):
        write_report(RunFolder(path), tmp_path / "missing.csv")
    metrics = path / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join([lines[0], '{"id": "q9", "source": "paraphrase"', *lines[2:]]) + "\n")
    with pytest.raises(RunFileError, match=r"metrics\.jsonl:2: not a MetricRow"):
        write_report(RunFolder(path))


@given(st.one_of(st.none(), st.floats(0, 1)), st.one_of(st.none(), st.floats(0, 1)),
       st.one_of(st.none(), st.tuples(st.floats(-1, 1), st.floats(0, 1))))
def test_an_arrow_only_where_the_interval_excludes_zero(before, after, bounds):
    change = None if bounds is None else Difference(mean=bounds[0] + bounds[1] / 2, low=bounds[0],
                                                    high=bounds[0] + bounds[1], pairs=10, dropped=0)
    text = _arrow(before, after, change)
    if before is None or after is None:
        assert "n/a" in text and not any(mark in text for mark in "↑↓~")
    elif change is None:
        assert text == f"{before:.3f} → {after:.3f} ~"  # no interval: no claim
    else:
        low, high = change.low, change.high
        mark = "↑" if low > 0 else "↓" if high < 0 else "~"
        assert text == f"{before:.3f} → {after:.3f} {mark} [{low:+.3f}, {high:+.3f}]"


def test_an_undefined_interval_draws_no_arrow():
    undefined = Difference(mean=None, low=None, high=None, pairs=1, dropped=3)
    assert _arrow(0.2, 0.9, undefined) == "0.200 → 0.900 ~"


def test_table_markdown_and_csv_quote_commas():
    table = Table(["a", "b"], [["1, 2", "x"]])
    assert table.markdown().splitlines()[2] == "| 1, 2 | x |"
    assert table.csv().splitlines()[1] == '"1, 2",x'


def test_signal_without_an_accurate_answer_is_reported_undefined_not_nan(run_dir):
    from a2c.qa.report import signal_table

    path, _ = run_dir
    summary = json.loads((path / "summary.json").read_text())
    assert summary["signal"] and all(s["undefined"] == "no answer is accurate" for s in summary["signal"])
    assert all(s["auroc"] is None and s["prr"] is None for s in summary["signal"])
    table = signal_table(QASummary.model_validate(summary))
    assert table.rows and all(r[-1] == "undefined (no answer is accurate)" for r in table.rows)
    write_report(RunFolder(path))
    assert "undefined (no answer is accurate)" in (path / "report.md").read_text()
    assert "nan" not in (path / "table_signal.csv").read_text().lower()
    assert (path / "accuracy_vs_rejection.png").read_bytes()[:4] == b"\x89PNG"


def test_counts_name_their_rows_and_the_plots_say_what_they_show(run_dir):
    from a2c.qa.report import PARSE_METHOD_ROWS, counts_table

    path, _ = run_dir
    summary = QASummary.model_validate_json((path / "summary.json").read_text())
    names = [row[0] for row in counts_table(summary).rows]
    assert "rank replies read by option number" in names and "rank replies naming no option" in names
    assert not any(name.startswith("replies parsed by") for name in names)
    assert set(PARSE_METHOD_ROWS) == {"number", "letter", "text", "idk", "unparsed"}
    write_report(RunFolder(path))
    assert (path / "metric_correlations.png").read_bytes()[:4] == b"\x89PNG"


def _score(qid: str, method: str, acc: float, calls: int, dont_know: bool | None) -> dict:
    return {"id": qid, "source": "paraphrase", "method": method, "picked": True, "unparsed": False,
            "dont_know": dont_know, "calls": calls,
            "accuracy": {"rouge1": {"max_true": acc, "diff": acc - 0.5, "acc": acc}}}


def test_the_selection_table_shows_a_known_effect_with_its_paired_interval(tmp_path):
    """60 questions where A2C's pick is accurate with probability (random's expected accuracy + 0.3): the
    interval of A2C − random covers 0.3 and excludes 0 (↑ in words: a difference); a method that picks as
    random does gets exactly 0, and its interval does not exclude it."""
    folder = RunFolder(tmp_path / "run")
    rng = np.random.default_rng(21)
    expected = rng.uniform(0.2, 0.6, 60)
    picked = (rng.random(60) < expected + 0.3).astype(float)
    metrics, scores = [], []
    for q, (r, a) in enumerate(zip(expected, picked, strict=True)):
        metrics += [_row(f"q{q}", "paraphrase", phase, 4, 0.5, r) for phase in ("before", "after")]
        scores += [_score(f"q{q}", "a2c", a, 8, False), _score(f"q{q}", "medoid", r, 0, None),
                   _score(f"q{q}", "random", r, 0, None)]
    _write_jsonl(folder, "metrics.jsonl", metrics)
    _write_jsonl(folder, "selection_scores.jsonl", scores)
    folder.write_text("summary.json", summarize_metrics(folder, CONFIG).model_dump_json())
    report = write_report(folder)
    effect = paired_difference_ci(expected, picked, resamples=2000, seed=0)
    assert effect.low > 0 and effect.low < 0.3 < effect.high
    a2c_row = (f"| in-context paraphrases | A2C | {picked.mean():.3f} | 0.000 | 60 / 60 | 0 | 8.00 | "
               f"{effect.mean_difference:+.3f} [{effect.low:+.3f}, {effect.high:+.3f}] | — |")
    assert a2c_row in report.splitlines()
    # medoid picked what random expects: no difference; A2C's is the negated one
    medoid = next(line for line in report.splitlines() if "| Medoid |" in line)
    assert medoid.endswith(f"| n/a | 60 / 60 | 0 | 0.00 | +0.000 [+0.000, +0.000] | "
                           f"{-effect.mean_difference:+.3f} [{-effect.high:+.3f}, {-effect.low:+.3f}] |")
    summary = QASummary.model_validate_json((tmp_path / "run" / "summary.json").read_text())
    medoid_vs_random = next(s for s in summary.selection if s.method == "medoid").vs_random["rouge1"]
    assert medoid_vs_random.direction is None and medoid_vs_random.pairs == 60
    table = (tmp_path / "run" / "table_selection.csv").read_text().splitlines()
    bounds = (effect.mean_difference, effect.low, effect.high)
    assert table[1].split(",")[7:10] == [f"{v:.3f}" for v in bounds]
    # the before → after cells of the same folder: nothing moved (before = after), so `~` everywhere
    before_after = (tmp_path / "run" / "table_before_after.csv").read_text().splitlines()
    assert "↑" not in before_after[1] and "↓" not in before_after[1] and "~" in before_after[1]
    assert before_after[0].endswith("Cons_lex low,Cons_lex high")


def test_the_report_says_what_the_run_found(run_dir, tmp_path):
    """run_dir's consistency after A2C is before + 0.2 (capped at 1): the rise excludes 0 and is stated, its
    accuracy is noise and is not; its one temperature rank prompt chose the don't-know option (a share of
    100%, defined where it is given). Where accuracy rises with declines, the report says they may carry
    it."""
    report = write_report(RunFolder(run_dir[0]))
    section = report.split("## What this run says\n\n", 1)[1].split("\n## ", 1)[0]
    lines = section.strip().splitlines()
    paraphrase = next(line for line in lines if line.startswith("- **in-context paraphrases**"))
    assert paraphrase.startswith("- **in-context paraphrases**: after Ask-to-Choose, Emb Cons_sem +0.19")
    assert "R1-A" not in paraphrase and "(after − before, 95% interval over 6 questions)" in paraphrase
    temperature = next(line for line in lines if line.startswith("- On cross-temperature samples, 100% of "
                                                                 "A2C's choices were the don't-know option"))
    assert "(the don't-know share of choices: among the rank replies that named an option" in temperature
    assert "declining" not in temperature  # accuracy did not rise
    assert "Don't-know share of choices (A2C): among A2C's choices (the rank replies that named" in report
    assert report.index("## What this run says") < report.index("## Before → after Ask-to-Choose")

    rising = RunFolder(tmp_path / "rising")
    rows = [_row(f"q{q}", "temperature", phase, 4, 0.5, 0.2 * (q % 3) + (0.3 if phase == "after" else 0.0))
            for q in range(12) for phase in ("before", "after")]
    _write_jsonl(rising, "metrics.jsonl", rows)
    _write_jsonl(rising, "choices.jsonl", [
        {"id": "q0", "source": "temperature", "slot": 0, "shown_question": "?", "temperature": 0.0,
         "options": ["a", "b"], "reply": "3", "option": 2, "method": "number",
         "text": "I don't know the correct answer"}])
    rising.write_text("summary.json", summarize_metrics(rising, CONFIG).model_dump_json())
    said = write_report(rising).split("## What this run says", 1)[1].split("\n## ", 1)[0]
    assert "after Ask-to-Choose, R1-A +0.300 [+0.300, +0.300]" in said
    assert "The R1-A rise comes with these declines" in said and "the model declining" in said


def test_the_signal_table_is_ranked_best_first(run_dir):
    from a2c.qa.report import signal_table
    from a2c.qa.summary import SignalRow

    summary = QASummary.model_validate_json((run_dir[0] / "summary.json").read_text())
    common = {"source": "paraphrase", "phase": "before", "sets": 6, "answers": 24, "accurate": 12,
              "auroc_ci": None, "prr_ci": None, "bootstrap": 0, "seed": 0}
    signal = [SignalRow(metric="weak", auroc=0.55, prr=0.1, undefined=None, **common),
              SignalRow(metric="none", auroc=None, prr=None, undefined="no answer is accurate", **common),
              SignalRow(metric="strong", auroc=0.81, prr=0.6, undefined=None, **common),
              SignalRow(metric="middle", auroc=0.70, prr=0.3, undefined=None, **common)]
    rows = signal_table(summary.model_copy(update={"signal": signal})).rows
    assert [r[0] for r in rows] == ["strong", "middle", "weak", "none"]
