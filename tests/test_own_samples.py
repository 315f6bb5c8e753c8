"""Bring your own samples (`dataset: {name: samples}`): both layouts read from JSONL, CSV and parquet into the
same records, every bad row refused at `file:line`, references from TruthfulQA, a run of
`experiments/own-samples.yaml` that asks no model (report, signal table, `main` picks, `a2c calibrate
--label main`), Ask-to-Choose over the given samples with a scripted generator, the R1-A of the A2C authors'
generate-results layout equal through `a2c score` and a samples run, and reruns that reuse or redo stages
as the file says."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from a2c.cli import main
from a2c.common.errors import A2CError
from a2c.data.errors import DatasetError
from a2c.qa.calibration import read_calibration
from a2c.qa.data import QARecord, load_records
from a2c.qa.data.samples import Sample, SampledRecord, UnknownQuestionsWarning
from a2c.run.config_file import load_config
from a2c.run.pipeline import RunResult, run_experiment
from tests.truthfulqa import TRUTHFULQA

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "samples.jsonl"
CONFIG = ROOT / "experiments" / "own-samples.yaml"
AUTHORS = ROOT / "benchmarks" / "authors_generations.py"
FAST_JUDGES = "judges=[exact, rouge1]"  # no model to load: the judges of the reruns and the A2C run


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _load(path: Path, **settings: Any) -> list[SampledRecord]:
    records = load_records("samples", path, **settings)
    assert all(isinstance(r, SampledRecord) for r in records)
    return [r for r in records if isinstance(r, SampledRecord)]


def _given(record: SampledRecord) -> tuple[Any, ...]:
    """A record's question, references and samples (its main answer aside)."""
    return record.id, record.question, tuple(record.correct), tuple(record.incorrect), record.samples


def _at(path: Path, line: int) -> str:
    """The pattern of a message that starts at `file:line`."""
    return "^" + re.escape(f"{path}:{line}: ")


def _calls(result: RunResult) -> int:
    """Model calls of every stage, as benchmarks/authors_generations.py counts them."""
    return sum(s.generated + s.cached for s in result.stages.values())


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- reading both layouts ---------------------------------------------------------------------------------

# two questions as one row each (the `samples` list) and as one row per sample: the same records
QUESTIONS: list[dict[str, Any]] = [
    {"id": "sun", "question": "Which star is closest to Earth?", "correct": ["The Sun"], "incorrect":
     ["Proxima Centauri"], "answer": {"text": "The Sun.", "logprobs": [-0.5, -0.25]},
     "samples": [{"text": "The Sun.", "temperature": 0.5, "logprobs": [-0.1, -0.2]},
                 {"text": "Proxima Centauri.", "temperature": 1.0},
                 {"text": "It is the Sun.", "paraphrase": "Briefly: which star is closest to Earth?"}]},
    {"id": "legs", "question": "How many legs does a spider have?", "correct": ["Eight"],
     "incorrect": ["Six"], "answer": "Eight.", "samples": ["Eight.", "Six."]},
]
EXPECTED = {
    "sun": (Sample("The Sun.", 0.5, None, (-0.1, -0.2)), Sample("Proxima Centauri.", 1.0),
            Sample("It is the Sun.", None, "Briefly: which star is closest to Earth?")),
    "legs": (Sample("Eight."), Sample("Six.")),
}


def _per_sample_rows() -> list[list[Any]]:
    rows = []
    for q in QUESTIONS:
        answer = q["answer"] if isinstance(q["answer"], str) else q["answer"]["text"]  # a CSV cell: text
        for s in q["samples"]:
            s = {"text": s} if isinstance(s, str) else s
            rows.append([q["id"], q["question"], json.dumps(q["correct"]), json.dumps(q["incorrect"]), answer,
                         s["text"], s.get("temperature", ""), s.get("paraphrase", ""),
                         json.dumps(s["logprobs"]) if "logprobs" in s else ""])
    return rows


PER_SAMPLE_HEADER = ["id", "question", "correct", "incorrect", "answer", "sample", "temperature",
                     "paraphrase", "logprobs"]


def test_the_example_file_reads_into_records_with_their_samples_sources_and_logprobs():
    records = _load(EXAMPLE)
    assert len(records) == 12 and len({r.id for r in records}) == 12
    gum = records[0]
    assert gum.id == "gum" and gum.question == "What happens if you swallow chewing gum?"
    assert "It passes through your digestive system" in gum.correct and gum.incorrect
    assert gum.answer == Sample("It passes through your digestive system.",
                                logprobs=(-0.1, -0.05, -0.2, -0.02, -0.3, -0.01))
    assert [s.source for s in gum.samples] == ["temperature"] * 3 + ["paraphrase"] * 2
    assert [s.temperature for s in gum.samples] == [0.25, 0.5, 1.0, None, None]
    assert gum.samples[0].logprobs == (-0.05, -0.1, -0.15, -0.2, -0.25, -0.3)
    assert all(s.logprobs is None for s in gum.samples[1:])
    assert gum.samples[3].paraphrase == "In a few words: What happens if you swallow chewing gum?"
    assert [s.text for s in gum.of_source("paraphrase")] == ["It passes through your body.",
                                                            "It passes through your digestive system."]
    assert records[1].answer == Sample("A goldfish's memory lasts three seconds.")  # a plain text


def test_jsonl_and_csv_in_either_layout_give_the_same_records(tmp_path):
    per_question = _load(_jsonl(tmp_path / "per_question.jsonl", QUESTIONS))
    assert {r.id: r.samples for r in per_question} == EXPECTED
    assert per_question[0].answer == Sample("The Sun.", logprobs=(-0.5, -0.25))
    assert per_question[1].answer == Sample("Eight.")
    # one row per sample in CSV: temperatures and logprobs are cell texts, an empty cell is "not given"
    per_sample = _load(_csv(tmp_path / "per_sample.csv", PER_SAMPLE_HEADER, _per_sample_rows()))
    assert [_given(r) for r in per_sample] == [_given(r) for r in per_question]
    assert [r.answer for r in per_sample] == [Sample("The Sun."), Sample("Eight.")]
    # one row per question in CSV: the `samples` cell holds a JSON list
    cells = [[q["id"], q["question"], json.dumps(q["correct"]), json.dumps(q["incorrect"]),
              q["answer"] if isinstance(q["answer"], str) else "", json.dumps(q["samples"])]
             for q in QUESTIONS]
    listed = _load(_csv(tmp_path / "per_question.csv", ["id", "question", "correct", "incorrect", "answer",
                                                       "samples"], cells))
    assert {r.id: r.samples for r in listed} == EXPECTED
    assert listed[0].answer is None and listed[1].answer == Sample("Eight.")  # an empty cell: no main answer
    # per sample, in JSONL, under other column names, grouped by question text (no id column)
    renamed = [{"prompt": row[1], "output": row[5], "temp": row[6] or None, "asked": row[7] or None}
               for row in _per_sample_rows()]
    mapped = _load(_jsonl(tmp_path / "renamed.jsonl", renamed), columns={"question": "prompt"},
                   sample_columns={"sample": "output", "temperature": "temp", "paraphrase": "asked"})
    assert [r.id for r in mapped] == ["renamed-0", "renamed-1"]
    assert [s.source for s in mapped[0].samples] == ["temperature", "temperature", "paraphrase"]
    assert [s.temperature for s in mapped[0].samples] == [0.5, 1.0, None]


def test_parquet_reads_a_list_of_sample_objects(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{**q, "answer": q["answer"] if isinstance(q["answer"], dict) else {"text": q["answer"]},
             "samples": [s if isinstance(s, dict) else {"text": s} for s in q["samples"]]} for q in QUESTIONS]
    path = tmp_path / "samples.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)  # structs: a key one item lacks is null there
    records = _load(path)
    assert [_given(r) for r in records] == [_given(r) for r in _load(_jsonl(tmp_path / "q.jsonl", QUESTIONS))]
    assert {r.id: r.samples for r in records} == EXPECTED
    assert [r.answer for r in records] == [Sample("The Sun.", logprobs=(-0.5, -0.25)), Sample("Eight.")]


# -- bad rows ---------------------------------------------------------------------------------------------

GOOD = {"id": "ok", "question": "Is water wet?", "samples": ["Yes."]}


@pytest.mark.parametrize(("row", "expected"), [
    ({"id": "q", "question": "Why?", "samples": []}, "no samples (column 'samples' is an empty list)"),
    ({"id": "q", "question": "Why?"}, "column 'samples' must be a list of samples, got null"),
    ({"id": "q", "question": "Why?", "samples": "Because."}, "must be a list of samples, got str"),
    ({"id": "q", "question": "Why?", "samples": ["Because.", 3]}, "samples[1] must be text, got int"),
    ({"id": "q", "question": "Why?", "samples": [None]}, "samples[0] must be text, got null"),
    ({"id": "q", "question": "Why?", "samples": [["Because.", "So."]]}, "samples[0] must be text, got list"),
    ({"id": "q", "question": "Why?", "samples": [{"text": 1.5}]}, "samples[0].text must be text, got float"),
    ({"id": "q", "question": "Why?", "samples": [{"temperature": 0.5}]}, "samples[0] has no 'text'"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "temperature": -0.5}]},
     "samples[0].temperature must be a finite number >= 0, got -0.5"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "temperature": "hot"}]},
     "samples[0].temperature 'hot' is not a number"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "temperature": True}]},
     "samples[0].temperature must be a number, got bool"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "logprobs": [-0.1, 0.5]}]},
     "samples[0].logprobs[1] is 0.5: a log-probability is <= 0"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "logprobs": ["-0.1"]}]},
     "samples[0].logprobs[0] must be a finite number, got str"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "logprobs": "high"}]},
     "samples[0].logprobs is not a valid JSON list of numbers"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "logprobs": {"a": -1}}]},
     "samples[0].logprobs must be a list of numbers"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "temp": 0.5}]},
     "samples[0] has unknown key 'temp'; it takes text, temperature, paraphrase, logprobs"),
    ({"id": "q", "question": "Why?", "samples": [{"text": "A", "paraphrase": 7}]},
     "samples[0].paraphrase must be text (the paraphrased question), got int"),
    ({"id": "q", "question": "Why?", "samples": ["A"], "answer": {"text": "A", "temperature": 0.5}},
     "answer has unknown key 'temperature'; it takes text, logprobs"),
    ({"id": "q", "question": "Why?", "samples": ["A"], "answer": 4}, "answer must be text, got int"),
    ({"id": "ok", "question": "Why?", "samples": ["A"]}, "id 'ok' is used twice (first at "),
])
def test_a_bad_row_is_refused_at_its_file_and_line(tmp_path, row, expected):
    path = _jsonl(tmp_path / "samples.jsonl", [GOOD, row])
    with pytest.raises(DatasetError) as caught:
        _load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: "), message
    assert expected in message, message


@pytest.mark.parametrize(("rows", "line", "expected"), [
    ([["a", "Q1?", "x"], ["b", "Q2?", "y"], ["a", "Q1?", "z"]], 4,
     "id 'a' is used again after other questions (its rows start at {path}:2); keep each question's rows"),
    ([["a", "Q1?", "x"], ["a", "Q-other?", "y"]], 3, "the question differs from that of the question's first "
     "row ({path}:2)"),
])
def test_per_sample_rows_of_one_question_stay_together_and_agree(tmp_path, rows, line, expected):
    path = _csv(tmp_path / "samples.csv", ["id", "question", "sample"], rows)
    with pytest.raises(DatasetError) as caught:
        _load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert expected.format(path=path) in message, message


def test_per_sample_rows_without_id_are_grouped_by_text_and_a_missing_sample_is_refused(tmp_path):
    path = _csv(tmp_path / "samples.csv", ["question", "sample"],
                [["Q1?", "x"], ["Q2?", "y"], ["Q1?", "z"]])
    with pytest.raises(DatasetError, match=_at(path, 4) + r"question 'Q1\?' is used again after other"):
        _load(path)
    path = _jsonl(tmp_path / "samples.jsonl", [{"id": "a", "question": "Q1?", "sample": "x"},
                                               {"id": "a", "question": "Q1?", "sample": None}])
    with pytest.raises(DatasetError, match=_at(path, 2) + r"column 'sample' is empty: each row holds one"):
        _load(path)
    path = _jsonl(tmp_path / "number.jsonl", [{"question": "Q1?", "sample": 12}])
    with pytest.raises(DatasetError, match=_at(path, 1) + r"column 'sample' must be text, got int"):
        _load(path)


def test_per_sample_cells_are_checked_at_their_line(tmp_path):
    header = ["question", "sample", "temperature", "logprobs"]
    path = _csv(tmp_path / "s.csv", header, [["Q?", "A", "0.5", ""], ["Q?", "B", "warm", ""]])
    with pytest.raises(DatasetError, match=_at(path, 3) + r"column 'temperature' 'warm' is not a number"):
        _load(path)
    path = _csv(tmp_path / "l.csv", header, [["Q?", "A", "", "[-0.5, 0.1]"]])
    with pytest.raises(DatasetError, match=_at(path, 2) + r"column 'logprobs'\[1\] is 0.1: a log-prob"):
        _load(path)
    path = _csv(tmp_path / "j.csv", ["question", "samples"], [["Q?", "[\"A\", "]])
    with pytest.raises(DatasetError, match=_at(path, 2) + r"column 'samples' is not a valid JSON list"):
        _load(path)


def test_a_file_without_samples_or_with_both_layouts_is_refused_by_name(tmp_path):
    path = _jsonl(tmp_path / "questions.jsonl", [{"question": "Why?", "answer": "Because."}])
    with pytest.raises(DatasetError, match=r"no samples: give a 'samples' column .* or a 'sample' column"):
        _load(path)
    path = _jsonl(tmp_path / "both.jsonl", [{"question": "Why?", "samples": ["A"], "sample": "A"}])
    with pytest.raises(DatasetError, match="keep one layout"):
        _load(path)
    path = _jsonl(tmp_path / "named.jsonl", [{"question": "Why?", "samples": ["A"]}])
    with pytest.raises(DatasetError, match=r"dataset\.sample_columns\.samples"):  # a named column it lacks
        _load(path, sample_columns={"samples": "outputs"})
    with pytest.raises(DatasetError, match="one-row-per-sample layout"):
        _load(path, sample_columns={"temperature": "samples"})


# -- references from another dataset ----------------------------------------------------------------------

def _truthfulqa(n: int) -> list[QARecord]:
    return load_records("truthfulqa", TRUTHFULQA, limit=n)


def test_references_come_from_truthfulqa_by_id_or_by_text(tmp_path):
    known = _truthfulqa(3)
    rows = [{"id": known[0].id, "question": "Watermelon seeds: what happens if I eat them?",
             "samples": ["Nothing happens."]},  # found by its id: the file's wording is kept
            {"id": "mine-7", "question": "  " + known[2].question.replace(" ", "  ") + " ",
             "samples": ["Blue light."]}]  # an id TruthfulQA lacks: found by its text
    path = _jsonl(tmp_path / "answers.jsonl", rows)
    records = _load(path, references={"name": "truthfulqa", "path": str(TRUTHFULQA)})
    assert [r.id for r in records] == [known[0].id, known[2].id]
    assert records[0].question == "Watermelon seeds: what happens if I eat them?"
    assert [tuple(r.correct) for r in records] == [tuple(known[0].correct), tuple(known[2].correct)]
    assert [tuple(r.incorrect) for r in records] == [tuple(known[0].incorrect), tuple(known[2].incorrect)]
    assert records[1].samples == (Sample("Blue light."),)
    # without an id column only the text finds a question
    path = _jsonl(tmp_path / "no_ids.jsonl", [{k: v for k, v in r.items() if k != "id"} for r in rows])
    with pytest.raises(DatasetError, match=_at(path, 1) + "question 'Watermelon seeds"):
        _load(path, references={"name": "truthfulqa", "path": str(TRUTHFULQA)})


def test_references_in_the_row_and_from_a_dataset_are_refused(tmp_path):
    known = _truthfulqa(1)[0]
    path = _jsonl(tmp_path / "answers.jsonl", [{"question": known.question, "correct": ["Nothing"],
                                                "samples": ["Nothing happens."]}])
    with pytest.raises(DatasetError, match=_at(path, 1) + r"the row gives references and dataset.references "
                                           "names 'truthfulqa' too"):
        _load(path, references={"name": "truthfulqa", "path": str(TRUTHFULQA)})


def test_an_unknown_question_is_refused_or_skipped_with_a_counted_warning(tmp_path):
    known = _truthfulqa(2)
    rows = [{"question": known[0].question, "samples": ["Nothing happens."]},
            {"question": "How tall is the tallest tree on Mars?", "samples": ["There is none."]},
            {"question": known[1].question, "samples": ["China."]},
            {"question": "Who painted the ceiling of my kitchen?", "samples": ["Me."]}]
    path = _jsonl(tmp_path / "answers.jsonl", rows)
    refs = {"name": "truthfulqa", "path": str(TRUTHFULQA)}
    with pytest.raises(DatasetError, match=_at(path, 2) + r"question 'How tall is the tallest tree on "
                                           r"Mars\?' is not a truthfulqa question"):
        _load(path, references=refs)
    skipped = "2 of 4 questions are no truthfulqa question and were skipped: "
    with pytest.warns(UnknownQuestionsWarning, match=skipped + _at(path, 2)[1:] + ".*; " + _at(path, 4)[1:]):
        records = _load(path, references={**refs, "unknown": "skip"})
    assert [r.id for r in records] == [known[0].id, known[1].id]
    nothing = _jsonl(tmp_path / "none.jsonl", rows[1:2])
    with pytest.raises(DatasetError, match="no question of the file is a truthfulqa question"), \
            pytest.warns(UnknownQuestionsWarning):
        _load(nothing, references={**refs, "unknown": "skip"})


def test_references_from_a_samples_file_are_refused_in_the_config(tmp_path):
    with pytest.raises(A2CError, match="references come from a dataset of questions"):
        load_config(CONFIG, overrides=[f"output={tmp_path / 'run'}", "dataset.references={name: samples}"])


# -- the run of experiments/own-samples.yaml --------------------------------------------------------------

@pytest.fixture(scope="module")
def own_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """experiments/own-samples.yaml on examples/samples.jsonl as shipped (embedding and ROUGE-1 judges)."""
    tmp = tmp_path_factory.mktemp("own_samples")
    return run_experiment(load_config(CONFIG, overrides=[f"output={tmp / 'run'}"]), progress=False)


def test_the_run_asks_no_model_and_writes_the_files_answers_as_its_generations(own_run):
    assert _calls(own_run) == 0
    assert "variation" not in own_run.stages and "answers" not in own_run.stages
    assert "ask_to_choose" not in own_run.stages
    assert next(iter(own_run.stages)) == "samples"
    run = own_run.folder
    generations = _rows(run / "generations.jsonl")
    assert len(generations) == 12 * 5
    gum = [g for g in generations if g["id"] == "gum"]
    assert [(g["source"], g["slot"], g["temperature"]) for g in gum] == [
        ("paraphrase", 0, None), ("paraphrase", 1, None),
        ("temperature", 0, 0.25), ("temperature", 1, 0.5), ("temperature", 2, 1.0)]
    assert gum[0]["asked"] == "In a few words: What happens if you swallow chewing gum?"
    assert gum[0]["short"] == gum[0]["long"] == "It passes through your body."
    paraphrases = {p["id"]: p for p in _rows(run / "paraphrases.jsonl")}
    assert [p["technique"] for p in paraphrases["gum"]["paraphrases"]] == ["given", "given"]
    logprobs = {(r["id"], r["source"], r["slot"]): r["logprobs"] for r in _rows(run / "token_logprobs.jsonl")}
    assert logprobs[("gum", "main", 0)] == [-0.1, -0.05, -0.2, -0.02, -0.3, -0.01]
    assert logprobs[("gum", "temperature", 0)] == [-0.05, -0.1, -0.15, -0.2, -0.25, -0.3]
    assert ("gum", "temperature", 1) not in logprobs and len(logprobs) == 12 + 1  # 12 samples, 1 main answer
    assert {m["id"] for m in _rows(run / "metrics.jsonl")} == {r["id"] for r in generations}


def test_the_main_answers_are_the_picks_and_the_report_has_its_signal_table(own_run):
    run = own_run.folder
    main_answers = {r.id: r.answer.text for r in _load(EXAMPLE) if r.answer is not None}
    picks = _rows(run / "selections.jsonl")
    assert {p["method"] for p in picks} == {"main"} and len(picks) == 12 * 2
    assert all(p["text"] == main_answers[p["id"]] and p["calls"] == 0 for p in picks)
    gum = {p["source"]: p["candidate"] for p in picks if p["id"] == "gum"}
    assert gum == {"paraphrase": 1, "temperature": 0}  # the candidate with the main answer's very text
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["questions_with_references"] == 12
    signal = [row for row in summary["signal"] if row["auroc"] is not None]
    assert signal and all(0.0 <= row["auroc"] <= 1.0 for row in signal)
    report = (run / "report.md").read_text()
    assert "Model `the answers of samples.jsonl`, 12 questions." in report
    section = report[report.index("## Consistency as a signal of correctness"):report.index("## Answer or")]
    assert "| metric |" in section and "AUROC" in section
    assert "| in-context paraphrases | Main answer |" in report
    decline = report[report.index("## Answer or decline"):report.index("## Counts")]
    assert "Whether to give the main answer of a source" in decline and "no A2C answers" not in decline
    assert "| signal | source | questions |" in decline


def test_calibrate_labels_the_main_answers(own_run, tmp_path, capsys):
    out = tmp_path / "main.json"
    assert main(["calibrate", str(own_run.folder), "--label", "main", "--bootstrap", "50", "-o",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert "accuracy of the main picks under rouge1" in printed and "fitted on 12 questions" in printed
    made = read_calibration(out)
    assert made.label == "main" and made.run.questions == 12 and made.similarity == "rouge1"
    assert json.loads(out.read_text())["label"] == "main"
    default = tmp_path / "default.json"  # without --label a run without A2C's picks labels its main answers
    assert main(["calibrate", str(own_run.folder), "--bootstrap", "50", "-o", str(default)]) == 0
    assert read_calibration(default).label == "main"
    capsys.readouterr()
    assert main(["calibrate", str(own_run.folder), "--label", "a2c", "--bootstrap", "50", "-o",
                 str(tmp_path / "a2c.json")]) != 0
    err = capsys.readouterr().err
    assert "holds no A2C answers" in err and "--label main" in err
    assert not (tmp_path / "a2c.json").exists()


def test_a2c_without_a_generator_is_refused(tmp_path):
    with pytest.raises(A2CError, match="asks no model unless `generator:` is given"):
        load_config(CONFIG, overrides=[f"output={tmp_path / 'run'}", "selection=[main, a2c]"])
    with pytest.raises(A2CError, match="selection method main picks a samples file's main answer"):
        load_config(ROOT / "experiments" / "quickstart.yaml", overrides=["selection=[main]"])
    # USC asks the generator to pick too: refused with no `generator:` (it would load the embedded model)
    with pytest.raises(A2CError, match="selection lists usc, which asks the generator to pick"):
        load_config(CONFIG, overrides=[f"output={tmp_path / 'run'}", "selection=[main, usc]"])


def test_a_generator_runs_ask_to_choose_over_the_given_samples(tmp_path):
    script = "scripted:1|2|Which one?"
    config = load_config(CONFIG, overrides=[
        f"output={tmp_path / 'run'}", FAST_JUDGES,
        f"generator={{backend: scripted, model: '{script}', cache: {tmp_path / 'cache.sqlite'}}}"])
    assert [s.name for s in config.selection] == ["main", "a2c"] and config.ask_to_choose.enabled
    result = run_experiment(config, progress=False)
    assert "variation" not in result.stages and "answers" not in result.stages
    assert result.stages["samples"].generated == 0 and result.stages["ask_to_choose"].generated > 0
    run = result.folder
    given = {(r.id, s.text) for r in _load(EXAMPLE) for s in r.samples}
    assert {(g["id"], g["short"]) for g in _rows(run / "generations.jsonl")} == given  # nothing regenerated
    picks = _rows(run / "selections.jsonl")
    assert {p["method"] for p in picks} == {"main", "a2c"}
    a2c = [p for p in picks if p["method"] == "a2c" and p["text"] is not None]
    assert a2c and all((p["id"], p["text"]) in given or p["dont_know"] for p in a2c)
    assert _rows(run / "choices.jsonl")
    report = (run / "report.md").read_text()
    assert "| in-context paraphrases | A2C |" in report
    assert "| in-context paraphrases | Main answer |" in report
    phases = {(m["source"], m["phase"]) for m in _rows(run / "metrics.jsonl")}
    assert ("paraphrase", "after") in phases and ("temperature", "after") in phases


# -- parity with `a2c score` on the A2C authors' layout ---------------------------------------------------

def _authors_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("authors_generations", AUTHORS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _authors_csv(path: Path, questions: list[QARecord], unknown: str) -> Path:
    """The authors' generate-results layout for in-context paraphrases: one row per answer, three per
    question, answers drawn from the question's references so that some are accurate and some not."""
    rows = []
    for i, q in enumerate([*questions, None]):
        question = q.question if q is not None else unknown
        right = q.correct[0] if q is not None else "Nobody knows."
        wrong = q.incorrect[0] if q is not None and q.incorrect else "Everybody knows."
        answers = [right, wrong, right] if i % 2 == 0 else [wrong, wrong, right + " indeed"]
        for k, answer in enumerate(answers):
            rows.append([question, f"Variant {k}: {question}", answer, right, q.best_answer if q else right])
    return _csv(path, ["question", "question-paraphrase", "sampled_outputs", "consistent_outputs",
                       "correct_outputs"], rows)


def test_a_samples_run_and_a2c_score_give_the_same_r1a_on_the_authors_layout(tmp_path):
    script = _authors_script()
    questions = _truthfulqa(7)
    answers = _authors_csv(tmp_path / "generated_paraphrase.csv", questions, "Is this one in TruthfulQA?")
    truthfulqa = Path(TRUTHFULQA).resolve()
    scored = script.score_cell(answers, truthfulqa, "sampled_outputs", tmp_path / "score")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.warns(UnknownQuestionsWarning, match="1 of 8 questions are no truthfulqa question"):
        source, ran = script.run_cell(answers, truthfulqa, work)  # refuses itself on any model call
    assert source == "paraphrase"
    assert 0.0 < scored < 1.0  # some answers accurate, some not: the comparison can tell
    assert ran == pytest.approx(scored, abs=script.TOLERANCE)
    summary = json.loads((work / "run" / "summary.json").read_text())
    assert summary["counts"]["questions_with_references"] == 7
    # the benchmark's command line agrees and exits 0
    with pytest.warns(UnknownQuestionsWarning):
        assert script.main_([str(truthfulqa), str(answers)]) == 0


# -- reruns -----------------------------------------------------------------------------------------------

def test_a_rerun_reuses_every_stage_and_a_changed_file_reruns_from_the_samples(tmp_path):
    data = shutil.copy(EXAMPLE, tmp_path / "samples.jsonl")
    config = tmp_path / "own.yaml"
    settings = yaml.safe_load(CONFIG.read_text())
    settings.update(output=str(tmp_path / "run"), judges=["exact", "rouge1"])
    settings["dataset"]["path"] = str(data)
    config.write_text(yaml.safe_dump(settings))
    first = run_experiment(config, progress=False)
    assert not any(s.skipped for s in first.stages.values())
    again = run_experiment(config, progress=False)
    assert set(again.stages) == set(first.stages) and all(s.skipped for s in again.stages.values())
    assert _calls(again) == 0
    # cut short after the selection: the stages it finished are reused, the rest run
    for name in ("metrics", "report"):
        (first.folder / "stages" / f"{name}.json").unlink()
    resumed = run_experiment(config, progress=False)
    assert [n for n, s in resumed.stages.items() if not s.skipped] == ["metrics", "report"]
    # another sample text: the samples stage and every stage that reads its rows run again
    rows = _rows(Path(data))
    rows[0]["samples"][1] = {"text": "It sticks to your intestines.", "temperature": 0.5}
    _jsonl(Path(data), rows)
    changed = run_experiment(config, progress=False)
    assert not changed.stages["samples"].skipped and "dataset" in changed.stages["samples"].why
    assert not changed.stages["judges_before"].skipped and _calls(changed) == 0
    generations = _rows(changed.folder / "generations.jsonl")
    assert any(g["id"] == "gum" and g["short"] == "It sticks to your intestines." for g in generations)
