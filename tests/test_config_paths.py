"""Paths in a config are read from the config file's folder, whatever folder a2c runs in; absolute ones,
defaults and command-line paths are left alone; a missing file names the config line and the absolute path
searched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from a2c.qa.task import load_data
from a2c.run.config_file import load_config, parse_config
from a2c.settings.config import ConfigError, dump_config
from a2c.system.cache import DEFAULT_CACHE_PATH

QUESTIONS = [{"qid": "a", "prompt": "Where is the Eiffel Tower?"},
             {"qid": "b", "prompt": "Why is the sky blue?"}]


def _experiment(folder: Path, **extra: str) -> Path:
    """`folder/exp/own.yaml` reading `folder/exp/data/q.jsonl` by a path relative to the config."""
    exp = folder / "exp"
    (exp / "data").mkdir(parents=True)
    (exp / "data" / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    lines = ["name: own",
             "dataset: {name: file, path: data/q.jsonl, columns: {id: qid, question: prompt}}",
             "generator: {backend: scripted, model: 'scripted:1|2|Which one?', cache: cache/requests.sqlite}",
             "judges: [exact]", "accuracy: {similarities: [rouge1]}",
             *[f"{k}: {v}" for k, v in extra.items()]]
    (exp / "own.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return exp / "own.yaml"


def test_relative_paths_are_read_from_the_config_folder(tmp_path, monkeypatch):
    config_file = _experiment(tmp_path, output="../runs/own")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(Path("..") / "exp" / "own.yaml")  # loads: the data file is found beside the config
    exp = config_file.parent
    assert config.dataset.path == str(exp / "data" / "q.jsonl")
    assert config.generator.cache == exp / "cache" / "requests.sqlite"
    assert config.output == str(tmp_path / "runs" / "own")  # `..` normalised away
    assert [r.id for r in load_data(config)] == ["a", "b"]


def test_absolute_paths_defaults_and_hub_names_are_kept(tmp_path):
    data = tmp_path / "q.jsonl"
    data.write_text('{"question": "Why?"}\n', encoding="utf-8")
    config = parse_config(f"name: x\ndataset: {{name: file, path: {data}}}\n", "x.yaml", tmp_path / "sub")
    assert config.dataset.path == str(data)
    assert config.generator.cache == DEFAULT_CACHE_PATH and config.output is None  # defaults: working folder
    assert config.generator.model == "SmolLM2-135M-Instruct"  # a name, not a path beside the config
    hub = parse_config("name: x\ndataset: {name: hf, path: someone/questions}\n", "x.yaml", tmp_path)
    assert hub.dataset.path == "someone/questions"
    # the default cache written out, as a run folder's config.yaml holds it, stays the default
    written = parse_config(f"name: x\ngenerator: {{cache: {DEFAULT_CACHE_PATH}}}\n", "x.yaml", tmp_path)
    assert written.generator.cache == DEFAULT_CACHE_PATH
    # without a folder (text, not a file) paths stay as written: relative to the working folder
    assert parse_config("name: x\noutput: runs/x\n").output == "runs/x"


def test_a_missing_file_names_the_config_line_and_the_absolute_path(tmp_path, monkeypatch):
    config_file = _experiment(tmp_path)
    text = config_file.read_text(encoding="utf-8").replace("path: data/q.jsonl", "path: q.jsonl")
    config_file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(config_file)
    assert str(caught.value) == (f"{config_file}:2: dataset.path: no such file or folder: "
                                 f"{config_file.parent / 'q.jsonl'} (read relative to the config's folder "
                                 f"{config_file.parent})")
    assert caught.value.hint == "a relative path in a config is read from the config's folder"
    # written relative to the working folder (the old rule): the hint says what to write instead
    monkeypatch.chdir(config_file.parent / "data")
    with pytest.raises(ConfigError) as caught:
        load_config(config_file)
    assert caught.value.hint == ("q.jsonl is relative to the working folder: write `data/q.jsonl` (relative "
                                 "to the config's folder) or an absolute path")


def test_every_kind_of_path_key(tmp_path):
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "mine.yaml").write_text("judges:\n  - name: exact\n", encoding="utf-8")
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    preset = parse_config("name: x\njudges: presets/mine.yaml\n", "x.yaml", tmp_path)
    assert [j.name for j in preset.judges] == ["exact"]
    config = parse_config(
        "name: x\n"
        "aux_generator: {model: models/tiny, cache: aux.sqlite}\n"
        "judges:\n  - {name: exact, cache: judges.sqlite}\n", "x.yaml", tmp_path)
    assert config.aux_generator.model == str(tmp_path / "models" / "tiny")  # a folder beside the config
    assert config.aux_generator.cache == tmp_path / "aux.sqlite"
    assert config.judges[0].options["cache"] == tmp_path / "judges.sqlite"
    with pytest.raises(ConfigError, match=r"x\.yaml:2: generator\.model: no such file or folder: "
                                          rf"{tmp_path}/m\.gguf"):
        parse_config("name: x\ngenerator: {model: m.gguf}\n", "x.yaml", tmp_path)
    with pytest.raises(ConfigError, match=r"x\.yaml:3: judges\.0\.template: no such file or folder"):
        parse_config("name: x\njudges:\n  - {name: llm, template: mine.yaml}\n", "x.yaml", tmp_path)


def test_classification_paths(tmp_path):
    (tmp_path / "items.jsonl").write_text('{"text": "Good film.", "label": "positive"}\n'
                                          '{"text": "Bad film.", "label": "negative"}\n', encoding="utf-8")
    text = "task: classification\nname: c\ndataset: {path: items.jsonl, input: single, labels: [positive, " \
           "negative]}\nlabeling: {template: label.yaml}\n"
    with pytest.raises(ConfigError, match=r"c\.yaml:4: labeling\.template: no such file or folder: "
                                          rf"{tmp_path}/label\.yaml"):
        parse_config(text, "c.yaml", tmp_path)
    config = parse_config(text.replace("labeling: {template: label.yaml}\n", ""), "c.yaml", tmp_path)
    assert config.dataset.path == str(tmp_path / "items.jsonl")


def test_a_run_from_another_folder_finds_its_data_and_keeps_command_line_paths(tmp_path):
    config_file = _experiment(tmp_path, output="runs/own")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*flags: str) -> None:
        command = [sys.executable, "-m", "a2c", "run", str(Path("..") / "exp" / "own.yaml"), "--no-progress",
                   *flags]
        done = subprocess.run(command, cwd=elsewhere, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-3000:]

    run()
    exp = config_file.parent
    assert (exp / "runs" / "own" / "report.md").is_file() and (exp / "cache" / "requests.sqlite").is_file()
    stored = load_config(exp / "runs" / "own" / "config.yaml", paths_from_file=False)
    assert stored.dataset.path == str(exp / "data" / "q.jsonl")  # the stored config holds resolved paths
    assert stored == load_config(exp / "runs" / "own" / "config.yaml")  # and means the same from its folder
    run("--output", "here")  # a command-line path: relative to the working folder
    assert (elsewhere / "here" / "report.md").is_file() and not (exp / "here").exists()


def test_dump_and_parse_round_trip_with_resolved_paths(tmp_path):
    config_file = _experiment(tmp_path)
    config = load_config(config_file)
    assert parse_config(dump_config(config)) == config
