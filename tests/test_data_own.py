"""Your own questions: JSONL, CSV and parquet files with renamed columns, list cells, malformed rows, and
hub datasets on a machine without the hub — every failure names the file (or dataset) and the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a2c.qa.data import DatasetError, QARecord, load_records
from a2c.qa.task import load_data
from a2c.run.config_file import load_config, parse_config
from a2c.settings.config import ConfigError

# the same three questions in every format, under names that are not a2c's
ROWS = [
    {"qid": "cap-fr", "prompt": "What is the capital of France?", "gold": "Paris",
     "also_right": ["Paris, France"], "wrong": ["Lyon", "Marseille"], "topic": "geography"},
    {"qid": "legs", "prompt": "How many legs does a spider have?", "gold": None, "also_right": [],
     "wrong": [], "topic": "biology"},  # no references: consistency only
    {"qid": "boil", "prompt": "At what temperature does water boil at sea level?", "gold": "100 °C",
     "also_right": ["212 °F"], "wrong": ["90 °C"], "topic": ""},
]
COLUMNS = {"id": "qid", "question": "prompt", "best_answer": "gold", "correct": "also_right",
           "incorrect": "wrong", "category": "topic"}
EXPECTED = [
    QARecord("cap-fr", "What is the capital of France?", "Paris", ("Paris", "Paris, France"),
             ("Lyon", "Marseille"), "geography"),
    QARecord("legs", "How many legs does a spider have?", category="biology"),
    QARecord("boil", "At what temperature does water boil at sea level?", "100 °C", ("100 °C", "212 °F"),
             ("90 °C",)),
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _csv(path: Path, rows: list[dict], separator: str = ";") -> Path:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: separator.join(v) if isinstance(v, list) else (v or "")
                             for k, v in r.items()})
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("write", [_jsonl, _csv, _parquet], ids=["jsonl", "csv", "parquet"])
def test_every_format_with_renamed_columns_gives_the_same_records(tmp_path, write):
    path = write(tmp_path / f"questions.{write.__name__[1:]}", ROWS)
    assert load_records("file", path, columns=COLUMNS) == EXPECTED
    config = tmp_path / "exp.yaml"
    config.write_text(f"name: own\ndataset:\n  name: file\n  path: {path}\n"
                      f"  columns: {json.dumps(COLUMNS)}\n")
    assert load_data(load_config(config).model_copy(update={"limit": 2})) == EXPECTED[:2]


def test_list_cells_as_json_lists_or_a_configurable_separator(tmp_path):
    as_json = [{**r, "also_right": json.dumps(r["also_right"]), "wrong": json.dumps(r["wrong"])}
               for r in ROWS]
    assert load_records("file", _csv(tmp_path / "json.csv", as_json), columns=COLUMNS) == EXPECTED
    piped = _csv(tmp_path / "piped.csv", ROWS, separator="|")
    assert load_records("file", piped, columns=COLUMNS, separator="|") == EXPECTED
    # with the default separator a `|`-joined cell stays one reference
    assert load_records("file", piped, columns=COLUMNS)[0].incorrect == ("Lyon|Marseille",)


def test_default_columns_and_generated_ids(tmp_path):
    path = _jsonl(tmp_path / "mine.jsonl", [{"question": "Why is the sky blue?", "correct": ["Scattering"],
                                             "incorrect": "It reflects the sea"}, {"question": "Who?"}])
    records = load_records("file", path)
    assert [r.id for r in records] == ["mine-0", "mine-1"]
    assert records[0].correct == ("Scattering",) and records[0].incorrect == ("It reflects the sea",)
    assert records[0].has_references and not records[1].has_references


def test_a_misnamed_column_fails_at_config_load_naming_file_column_and_columns(tmp_path):
    path = _csv(tmp_path / "questions.csv", ROWS)
    config = tmp_path / "exp.yaml"
    config.write_text(f"name: own\ndataset:\n  name: file\n  path: {path}\n"
                      "  columns: {question: prompt, correct: right_answers}\n")
    with pytest.raises(DatasetError) as info:
        load_config(config)
    message = str(info.value)
    assert str(path) in message and "'right_answers' (dataset.columns.correct)" in message
    assert "the file has 'qid', 'prompt', 'gold', 'also_right', 'wrong', 'topic'" in message
    # the required question column, unmapped: the default name `question` is missing
    with pytest.raises(DatasetError, match=r"no column 'question' \(dataset.columns.question\)"):
        load_records("file", path)


@pytest.mark.parametrize(("rows", "message"), [
    ([{"q": "Fine?"}, {"q": "  "}], r"bad.jsonl:2: empty question \(column 'q'\)"),
    ([{"q": "Fine?"}, {"q": "Half?", "i": ["no"]}],
     r"bad.jsonl:2: the row has incorrect references but no correct ones \(no `correct` column is mapped"),
    ([{"q": "Half?", "c": "", "i": "no"}], r"bad.jsonl:1: the row has incorrect .* \(column 'c' is empty\)"),
    ([{"q": "A?", "id": "a"}, {"q": "B?"}], r"bad.jsonl:2: empty id \(column 'id'\)"),
    ([{"q": "Fine?", "c": [], "i": ["no"]}], r"bad.jsonl:1: the row has incorrect references but no correct"),
    ([{"q": ["a", "list"]}], r"bad.jsonl:1: column 'q' holds list"),
    ([{"q": "A?", "c": ["ok", 3], "i": ["x"]}], r"bad.jsonl:1: column 'c' lists int 3"),
    ([{"q": "A?", "c": '["unclosed", ]', "i": "x"}], r"bad.jsonl:1: column 'c' looks like a JSON list"),
    ([{"q": "A?", "id": 7}, {"q": "B?", "id": "x"}, {"q": "C?", "id": "7"}],
     r"bad.jsonl:3: id '7' is used twice \(first at .*bad.jsonl:1\)"),
])
def test_a_malformed_row_fails_with_its_line(tmp_path, rows, message):
    path = _jsonl(tmp_path / "bad.jsonl", rows)
    columns = {"question": "q", "correct": "c", "incorrect": "i", "id": "id"}
    names = {k: v for k, v in columns.items() if any(v in r for r in rows)}
    with pytest.raises(DatasetError, match=message):
        load_records("file", path, columns=names)


def test_gold_answers_without_incorrect_references_load(tmp_path):
    """A gold-answer set (TriviaQA-like): the correct answers alone, for the gold-answer correctness rules;
    a run under TruthfulQA's protocol refuses it (tests/test_correctness_run.py)."""
    path = _jsonl(tmp_path / "gold.jsonl", [{"q": "Where?", "c": ["Paris", "in Paris"]}, {"q": "Why?"}])
    first, second = load_records("file", path, columns={"question": "q", "correct": "c"})
    assert first.correct == ("Paris", "in Paris") and first.incorrect == () and first.has_references
    assert not second.has_references


def test_a_malformed_csv_and_parquet_row_name_their_row(tmp_path):
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("question,correct,incorrect\nFine?,,\nHalf?,,no\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.csv:3: the row has incorrect references"):
        load_records("file", csv_path)
    parquet = _parquet(tmp_path / "bad.parquet", [{"question": "Fine?"}, {"question": None}])
    with pytest.raises(DatasetError, match=r"bad.parquet:row 2: empty question"):
        load_records("file", parquet)


def test_a_dataset_refuses_settings_it_does_not_read():
    with pytest.raises(ConfigError, match="dataset 'quickstart' takes no columns"):
        parse_config("name: x\ndataset:\n  name: quickstart\n  columns: {question: q}\n")
    with pytest.raises(ConfigError, match="dataset 'file' takes no split"):
        parse_config("name: x\ndataset:\n  name: file\n  path: q.csv\n  split: train\n")
    with pytest.raises(ConfigError, match="dataset 'file' needs `path`"):
        parse_config("name: x\ndataset:\n  name: file\n")
    with pytest.raises(ConfigError, match=r"dataset\.columns\.answer: unknown key"):
        parse_config("name: x\ndataset:\n  name: file\n  path: q.csv\n  columns: {answer: a}\n")
    # a resolved config (every key written out, defaults included) loads again
    config = parse_config("name: x\ndataset:\n  name: file\n  path: q.csv\n  columns: {question: q}\n")
    from a2c.settings.config import dump_config

    assert parse_config(dump_config(config)).dataset == config.dataset


def test_a_hub_dataset_without_the_hub_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError) as info:
        load_records("hf", "someone/questions", split="test", columns={"question": "prompt"})
    assert "cannot load the hub dataset 'someone/questions': HF_HUB_OFFLINE is set" in str(info.value)
    assert "name: file" in info.value.hint
    config = tmp_path / "exp.yaml"
    config.write_text("name: own\ndataset:\n  name: hf\n  path: someone/questions\n  config: main\n")
    with pytest.raises(DatasetError, match=r"'someone/questions' \(config 'main'\)"):
        load_config(config)
    with pytest.raises(DatasetError, match="HF_HUB_OFFLINE is set") as info:
        load_records("truthfulqa")
    assert info.value.hint == "set `dataset.path` to a local copy of the benchmark's TruthfulQA.csv"


def test_a_hub_dataset_on_an_unreachable_hub_fails_fast(monkeypatch):
    import a2c.system.hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(a2c.system.hub, "hub_unreachable",
                        lambda: "the hub at https://hf.co cannot be reached")
    with pytest.raises(DatasetError, match="cannot be reached"):
        load_records("hf", "someone/questions")
