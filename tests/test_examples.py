"""The files the docs use are in the repository and do what the docs say: `examples/serve.yaml` is a valid
serve config, `examples/answers.jsonl` scores to the table the scoring how-to shows, and the LICENSE is the
one pyproject names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from a2c.cli import main
from a2c.serve.config import build_serve_config, read_serve_file
from tests.truthfulqa import TRUTHFULQA

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_the_serve_example_is_a_valid_serve_config():
    config = build_serve_config(read_serve_file(EXAMPLES / "serve.yaml"),
                                {"backend": "scripted", "model": "scripted"}, {})
    assert [j.name for j in config.defaults.judges] == ["embedding"]
    assert config.defaults.variation.temperatures == [0.5, 1.0]
    assert config.server.deadline == 300  # what a first request on 2 busy cores needs (118 s measured)


def test_the_answers_example_scores_as_the_docs_show(tmp_path, capsys):
    code = main(["score", str(EXAMPLES / "answers.jsonl"), "--path", str(TRUTHFULQA), "-s", "rouge1",
                 "-s", "bleu", "--out", str(tmp_path / "scores")])
    out = capsys.readouterr().out
    assert code == 0
    assert "scored 6 answers against 3 truthfulqa questions" in out
    assert "rouge1       R1-A        0.5151    0.1209  0.5000" in out
    assert (tmp_path / "scores" / "scores.csv").is_file()


def test_the_license_file_is_the_one_pyproject_names():
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]
    assert declared == {"text": "Apache-2.0"}
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text


def test_the_readme_starts_with_the_set_up_and_its_links_resolve():
    """The README says how to set up before its first section (its size bound is in
    tests/test_release_files.py), and every file it links exists in the repository."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# a2c") and "make setup" in readme.split("\n## ", 1)[0]
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local and [link for link in local if not (ROOT / link).exists()] == []
