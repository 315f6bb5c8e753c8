"""`a2c models path`: the embedded GGUF a llama.cpp server loads (README "Serve the embedded model")."""

from __future__ import annotations

from pathlib import Path

from a2c.cli import main
from a2c.llm.embedded import DEFAULT_MODEL


def test_models_path_prints_the_embedded_gguf(capsys):
    assert main(["models", "path", DEFAULT_MODEL]) == 0
    printed = capsys.readouterr().out.strip()
    path = Path(printed)
    assert path.is_absolute() and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"  # the file format's magic: a server can load it as it is
    assert main(["models", "path"]) == 0 and capsys.readouterr().out.strip() == printed  # the default model


def test_models_path_of_an_unknown_model_names_the_known_ones(capsys):
    assert main(["models", "path", "gpt-17"]) == 2
    err = capsys.readouterr().err
    assert "'gpt-17' is not an embedded model" in err
    assert f"hint: `a2c models path` knows {DEFAULT_MODEL}" in err
